// Package mslemu runs Metal Shading Language compute kernels on the CPU, so that the
// Metal backend's kernels and host logic can be tested on Linux, where there is no GPU.
//
// It compiles the very MSL sources the Metal backend ships, as C++14 with clang, against
// a shim header that provides Metal's types and functions (shim/metal_stdlib.h), links
// them with a small runtime (runtime/runtime.cpp) into a shared library, loads it with
// purego (no cgo) and runs dispatches with Metal's execution semantics. It implements
// gpu.Device, the interface the Metal backend's host logic is written against:
//
//	dev, err := mslemu.New() // or New(mslemu.WithOrder(mslemu.Reverse), ...)
//	pipes, err := dev.Compile(map[string]string{"k.metal": src}, nil, []string{"vadd"})
//	buf, _ := dev.NewBuffer(n * 4)
//	cb, _ := dev.NewCommandBuffer()
//	cb.Dispatch(pipes["vadd"], gpu.Size{n / 256, 1, 1}, gpu.Size{256, 1, 1}, gpu.Arg{Index: 0, Buf: buf}, ...)
//	cb.Commit()
//	err = cb.Wait() // kernel faults, deadlocks and bad bindings come back here
//
// New fails with an error wrapping gpu.ErrUnavailable and ErrNoCompiler when clang++ is
// missing (Debian: apt-get install clang), and with gpu.ErrUnavailable on platforms
// other than linux/amd64 and linux/arm64. CompileCheck type-checks MSL sources against
// the shim without running anything (for CI).
//
// # Checks of what the C++ build cannot see
//
// Apple's compiler refuses things clang compiling MSL as C++ accepts. Two checks close
// the gap, each with negative tests: the parser's attribute linter (lint.go: matching
// widths of the position/size attributes, uint/ushort index attributes, unique
// [[buffer(n)]] ≤ 30, no double, static threadgroup memory ≤ 32 KiB after the macros),
// run by every Compile and CompileCheck and refusing with ErrRule; and
// AddressSpaceCheck, which compiles the sources as C++ for OpenCL 2021 with MSL's
// address spaces mapped onto OpenCL's and the generic address space disabled, so that
// any conversion between address spaces is an error.
//
// # Compilation
//
// Sources are a map of file name to text. Files named *.h (or *.hpp) are headers, found
// by #include "name"; all other files are compiled as one translation unit in name order,
// as if concatenated into one Metal library source. <metal_stdlib> and the other
// <metal_*> headers all mean the shim. Macros become -D flags. The Go side rewrites what
// C++ cannot express, keeping line numbers, so clang's diagnostics name MSL files and
// lines: attributes are read and removed, threadgroup variables in kernel bodies become
// per-threadgroup storage, unsuffixed floating literals get an f (they are float in MSL),
// and 1.0h becomes half(1.0f). Entry points are generated per kernel that bind each
// parameter from the dispatch. Compiler flags: -std=c++14 (MSL 3 is based on C++14)
// -Wall -Wextra -Werror -O2 -fno-fast-math -ffp-contract=off -fno-strict-aliasing, and
// in the strict alignment mode (the default) -fsanitize=alignment (below).
// Libraries are cached by a hash of the sources, shim, runtime,
// macros, flags and compiler version in os.UserCacheDir()/bonsai-mslemu ($MSLEMU_CACHE,
// WithCacheDir), so an unchanged source set compiles once.
//
// Kernels are functions `kernel void name(...)` (in any namespace), or explicit
// instantiations of kernel templates with [[host_name("name")]], with or without a
// parameter list (`template [[host_name("k_f32")]] kernel k_t k<float>;` with k_t a
// typedef of decltype(k<float>) works too). Parameters must carry [[buffer(i)]] (a pointer
// or reference), [[threadgroup(i)]] (threadgroup memory of the length set by
// gpu.Arg.Threadgroup) or one of the compute builtins: thread_position_in_grid,
// threadgroup_position_in_grid, thread_position_in_threadgroup, threads_per_threadgroup,
// threadgroups_per_grid, threads_per_grid, thread_index_in_threadgroup,
// thread_index_in_simdgroup, simdgroup_index_in_threadgroup, simdgroups_per_threadgroup,
// thread_execution_width, threads_per_simdgroup, quadgroup_index_in_threadgroup,
// thread_index_in_quadgroup (as uint, ushort or their 2- and 3-vectors).
// [[max_total_threads_per_threadgroup(n)]] sets the pipeline's MaxThreadsPerThreadgroup.
//
// # What the shim models
//
//   - Types: bool, char, uchar, short, ushort, int, uint, long, ulong, float, half,
//     bfloat; vec<T,N> and the typedefs float2..4, half2..4, int2..4 and so on, with
//     Metal's sizes and alignments (float3 and float4 are 16 bytes), swizzles (.xy, .zyx,
//     .rgba; assignable when no component repeats), Metal's constructors and
//     element-wise operators; packed_float3 and the other packed vectors; metal::array;
//     atomic<T> (atomic_int, atomic_uint, atomic_float, atomic_bool).
//   - half and bfloat are 16-bit types converted with round-to-nearest-even in software
//     (bit-exact with F16C over all 65,536 halves); arithmetic is done in float and
//     rounded per operation, which is correctly rounded. half op float is float, half op
//     int is half, as in MSL.
//   - Address spaces device, constant, thread, threadgroup (on variables: one instance
//     per threadgroup, filled with 0xFF bytes when the threadgroup starts, so reading it
//     before writing it shows up as NaN or -1).
//   - Math: exp, exp2, exp10, log, log2, log10, pow, powr, sqrt, rsqrt, cbrt, sin, cos,
//     tan and their inverses and hyperbolics, sinpi, cospi, floor, ceil, round, rint,
//     trunc, fract, fmod, fabs, abs, min, max, fmin, fmax, clamp, saturate, mix, step,
//     smoothstep, sign, fma, mad, copysign, fdim, hypot, ldexp, frexp, modf, divide,
//     isnan, isinf, isfinite, isnormal, signbit, select, all, any; precise:: and fast::
//     are the same precise functions. Geometric: dot, length, length_squared, distance,
//     normalize, cross. Integer: popcount, clz, ctz, reverse_bits, extract_bits,
//     insert_bits, mulhi, rotate, absdiff.
//   - Conversions: as_type<T>, static_cast and constructors between scalar and vector
//     types, unpack_unorm4x8/snorm4x8/unorm2x16/snorm2x16 _to_float and _to_half, and
//     the pack_float_to_* and pack_half_to_* inverses.
//   - Atomics: atomic_load/store/exchange/compare_exchange_weak/strong and
//     atomic_fetch_add/sub/and/or/xor/min/max _explicit on device and threadgroup
//     atomics; every memory order is executed as sequentially consistent.
//   - Barriers: threadgroup_barrier (any mem_flags) and simdgroup_barrier.
//   - SIMD-group functions (32 lanes): simd_sum, simd_product, simd_min, simd_max,
//     simd_and, simd_or, simd_xor, simd_prefix_inclusive/exclusive_sum and _product,
//     simd_shuffle, simd_shuffle_up/down/xor, simd_shuffle_rotate_up/down,
//     simd_broadcast, simd_broadcast_first, simd_all, simd_any, simd_ballot,
//     simd_active_threads_mask, simd_is_first; the quad_ equivalents (4 lanes).
//   - SIMD-group matrices: simdgroup_float8x8, simdgroup_half8x8, simdgroup_bfloat8x8,
//     the diagonal constructor, make_filled_simdgroup_matrix, simdgroup_load and
//     simdgroup_store (elements per row, origin, transpose; device or threadgroup
//     memory), simdgroup_multiply and simdgroup_multiply_accumulate (mixed element types,
//     as llama.cpp's kernel_mul_mm uses them). Each is a collective that every lane of a
//     full SIMD group must execute together with the same arguments, else the dispatch
//     fails; a default-constructed matrix is NaN. Element (r, c) of a load from src with
//     e elements per row at origin (x, y) is src[(y+r)·e + x+c] (transposed: src[(y+c)·e +
//     x+r]); products sum k in order with one FMA per term in float.
//
// Not modelled: thread_elements() of a SIMD-group matrix, other matrix types (floatNxM), textures, samplers,
// function constants, argument buffers, imageblocks, raster order groups, ray tracing,
// dynamic library linking, and kernels whose declaration comes out of a macro (the
// driver finds kernels in the source text). These fail at compile time, or with
// "kernel not found". Precision: math functions are glibc's, not
// Apple's (which are less precise under Metal's default fast math); simd_sum adds in
// lane order; dot sums in component order without FMA. Compare with tolerances.
//
// # Execution
//
// A dispatch (dispatchThreadgroups: grid threadgroups of threads threads) runs its
// threadgroups one after another. Every thread of a threadgroup is a fiber with its own
// 128 KiB stack above 128 KiB of guard (hand-written context switches on x86-64 and
// arm64, tested under qemu-aarch64; a ucontext fallback elsewhere, or with
// MSLEMU_CXXFLAGS=-DMSLEMU_UCONTEXT). In each pass the runnable threads run in the
// selected order, each until it blocks at a barrier or SIMD-group function or returns
// (a blocking thread switches straight to the next one). When all are blocked:
//
//   - SIMD groups are 32 consecutive threads by thread_index_in_threadgroup; the last
//     is partial when the threadgroup size is not a multiple of 32 (its missing lanes
//     are inactive). A SIMD-group function completes when every live lane of the group
//     is blocked: the lanes waiting at the earliest call site (by source line) execute
//     it together, and lanes at a later call site keep waiting, as diverged lanes wait
//     at the reconvergence point on a GPU; lanes that returned are inactive. Reading an
//     inactive or missing lane (simd_shuffle from it) gives all-ones bits (NaN), Metal's
//     "undefined"; simd_shuffle_down/up leave lanes whose source is outside the SIMD
//     group unchanged, as Metal specifies.
//   - A threadgroup_barrier completes when every thread of the threadgroup is waiting at
//     it. Threads that returned without reaching it, or threads waiting at different
//     barriers, are reported as a deadlock (ErrDeadlock), naming the kernel, the
//     threadgroup, the barrier's source line and the threads (WithLenientBarriers lets
//     returned threads count as arrived).
//   - The order of threads in each pass and of threadgroups is Forward, Reverse or
//     Random (WithOrder, $MSLEMU_ORDER=forward|reverse|random[:seed]). Kernels with a
//     missing barrier or another race (between threads, or between threadgroups writing
//     the same place) give different results in different orders: run tests in
//     several orders. The call sites of SIMD-group functions are ordered by file name,
//     line and column (clang's __builtin_FILE/LINE/COLUMN at the call, so a helper
//     function has one site for all its callers).
//   - Threadgroup memory ([[threadgroup(i)]] and threadgroup variables) is limited to
//     Metal's 32 KiB and filled with 0xFF before each threadgroup. [[threadgroup(i)]]
//     arguments start at multiples of 16 bytes; a threadgroup variable is aligned to its
//     own type only, as Apple's compiler aligns it (a float array to 4 bytes).
//   - Alignment (WithStrictAlignment, on by default, $MSLEMU_STRICT_ALIGN=0 turns it
//     off): each threadgroup variable of alignment a < 16 is placed at an offset ≡ a
//     (mod 2a), aligned for its type and for nothing wider, and the library is built
//     with clang's alignment sanitizer, so that a load or store through a pointer
//     misaligned for its type (a float4 stored into `threadgroup float x[]` through a
//     cast, a uint read at an odd device address) fails the dispatch with ErrMisaligned,
//     naming the MSL file and line, the type, and the threadgroup variable or buffer and
//     the offset in it. The sanitizer checks scalar accesses, member accesses and
//     reference bindings; in this mode vectors, half and bfloat copy through
//     user-provided copy operations so that whole-vector copies are checked too. It
//     costs 15–25% on plain kernels, more on SIMD-group functions, about 10% on the
//     engine's kernel checks.
//   - Buffers from NewBuffer have guard pages before and after (the data ends at the
//     upper guard, within 16 bytes); inline bytes (setBytes) have one after. A kernel
//     that reads or writes past them faults; the fault is caught and reported as
//     ErrFault naming the kernel, threadgroup, thread and the buffer binding. So are
//     null pointers, fiber stack overflows (x86-64 builds probe large frames; on arm64,
//     clang 14 does not, and a frame over 256 KiB can skip the guard) and, on x86-64,
//     integer division by zero (SIGFPE; arm64 and GPUs return a value).
//     Wrapped buffers (WrapNoCopy) have no guards. Accesses that stay inside mapped
//     memory (a few bytes past a buffer whose length is not a multiple of 16, or into
//     another live mapping) are not detected.
//   - Dispatch checks: every buffer and threadgroup parameter must be bound; offsets
//     must lie inside the buffer and be aligned for the pointee; a reference parameter
//     (constant Params& p) needs at least sizeof(Params) bytes; inline bytes at most 4
//     KiB; threadgroup lengths multiples of 16; at most MaxThreadsPerThreadgroup (1024)
//     threads. Violations are ErrBadDispatch errors naming the kernel and index.
//   - Command buffers run in commit order on one queue per device, in the background;
//     Wait returns the first error and the dispatches after it do not run.
//   - WithWorkers(n) runs threadgroups on n OS threads; atomics are real atomics.
//
// Not modelled: the memory model beyond that (all threads of a threadgroup run on one OS
// thread, so everything is sequentially consistent and a missing mem_flags is not
// detected), forward progress between threads (a thread that spins waiting for another
// thread hangs the emulator), dispatchThreads with non-uniform threadgroups, and the
// GPU's timing.
package mslemu
