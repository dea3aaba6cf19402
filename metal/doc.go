// Package metal runs Ternary Bonsai models on Apple GPUs: a backend.Backend (the seam of
// package bonsai/backend) whose forward passes are Metal compute kernels, written in MSL
// (internal/gpu/engine/shaders/*.metal, embedded) and driven by host code in Go
// without cgo. The host code is the engine, internal/gpu/engine; this package is its
// public face: New, the options, the errors, and the system's Metal device.
//
//	m, err := bonsai.Open(path, bonsai.WithBackend(metal.New()))
//
// Where there is no Metal (anything but macOS on Apple silicon) Load — and so Open —
// fails with an error wrapping ErrUnavailable; a program can fall back to bonsai.CPU().
// Package metal/emulator is the same backend over an MSL-on-CPU emulator
// (internal/gpu/mslemu): the same kernels and host logic, run by the CPU on Linux, for
// tests; it is a package of its own so that Metal programs do not carry the emulator.
// Package metal/kernelcheck runs every kernel against the Go code that owns its math,
// through the engine's own dispatch helpers. The emulator imports this package and
// kernelcheck the engine; this package imports neither, nor bonsai: only the seam below
// it, and the engine, which holds the kernel checks but runs them only for kernelcheck.
//
// # The seam
//
// Load runs the qwen35 architecture (the *qwen35.Weights a backend.Model holds) and
// refuses any other with an error naming both. The engine takes batches (Forward) and
// offers backend.Greedy (ForwardGreedy: the argmax on the device); it runs a batch's
// sequences together (see Batches). It relies on backend.Check having been run by the
// caller (bonsai does): it checks only that a state is its own and open. A state offers
// backend.StateCopier (CopyFrom, on the device's memory) and the per-layer views the
// snapshot codec of bonsai/backend reads and writes: a GDN layer's convolution and
// recurrent states as float32 views of the device buffers (their layouts are
// qwen35.GDNState's), an attention layer's KV cache as a backend.KVCache whose rows are
// gathered from and scattered to the device's [head][position][dim] layout.
//
// Errors: no error of the Backend, the Engine or a State starts with "metal:" — bonsai
// names the backend when it wraps them, as "bonsai: metal: …" — and the sentinels callers
// test come from the seam (backend.ErrClosed, backend.ErrContextFull) or this package
// (ErrUnavailable, ErrWorkingSet), wrapped once. Where an error must say which backend
// refused (Load, for another architecture), its sentence names it.
//
// # Following the plan
//
// The host follows the model's layer plan (qwen35.Weights.Plan), which states the sites,
// the products that read each, their widths and the mixer: Load places every tensor by
// walking it, and each decode step and prefill chunk is encoded by walking it — rows from
// each product's N, rotations and sign vectors from each site's Width, the kernels of a
// layer from its Mixer. The MSL kernels keep their own layouts: a mixer's kernels bind
// its operands by role, in the plan's order (a GDN layer's In products qkv then z, its
// unrotated alpha then beta; an attention layer's q|gate, k, v), and the fused kernels
// take the In and FFNIn sites at the embedding's width. Load checks that the plan is one
// these kernels run (planSizes) and refuses another with an error naming the site.
//
// # What runs where
//
// Load compiles the kernels for the model's sizes (macros for the embedding width, the
// GDN head size and heads per group, the attention head size) and wraps the memory-mapped
// weights without copying them (newBufferWithBytesNoCopy): the span of the file holding
// the tensors, in whole pages, as one buffer, or as overlapping views when it exceeds
// the device's largest buffer, placed so that every tensor lies wholly inside one view;
// each tensor is bound as (buffer, offset). NewState allocates a sequence's device
// memory once: the KV caches of the attention layers for the whole context (fp16, fp32
// or int8 with a float scale per 32 values, quantised as the CPU backend does), the GDN
// recurrent and convolution states (in the CPU backend's layouts), and the activations
// of a 64-token chunk. Snapshots move between backends in either direction and across KV
// precisions through the per-layer views (see The seam).
//
// A decode step is 339 dispatches for the 27B model (64 layers), in as many command
// buffers as the cost model cuts it into (split.go; one at short contexts), read back as
// one integer (the greedy token, through backend.Greedy) or as the logits row (338
// dispatches):
//
//	embed        gather + dequantise a token_embd row, inverse rotation (FWHT, signs)
//	per GDN layer (48):
//	  mv_norm      residual add + RMSNorm (attn_norm) + signed FWHT in the prologue;
//	               attn_qkv + attn_gate (paired), each attn_qkv channel through its causal
//	               convolution and SiLU as it is written; the un-rotated normed vector kept
//	  gdn_decode   one threadgroup per V head (48): its BF16 ssm_alpha / ssm_beta rows on
//	               the normed vector, q/k L2 norms, gates, the delta rule on the fp32
//	               state, gated RMSNorm, written in grouped head order
//	  mv_fwht      signed FWHT (6144) in the prologue, ssm_out
//	  mv_norm      residual add + RMSNorm + signed FWHT, ffn_gate + ffn_up (paired)
//	  mv_swiglu    SwiGLU + signed FWHT (17408, streamed in chunks), ffn_down
//	per attention layer (16):
//	  mv_norm      the norm site, attn_q + attn_k + attn_v (tripled)
//	  attn         the positions cut into blocks (at least 256 positions, at most 64
//	               blocks), a threadgroup per KV head and block: q RMSNorm, partial NeoX
//	               RoPE (the host's table, qwen35's angles) for the group's query heads,
//	               an online softmax over the block, each cache row read once for them
//	               all; the block holding the new position also forms, appends and
//	               attends its key and value (k RMSNorm, RoPE)
//	  attn_merge   the blocks' partial softmaxes merged exactly, sigmoid gate
//	  mv_fwht      signed FWHT (6144), attn_output
//	  mv_norm, mv_swiglu as above
//	mv_norm      final norm site, output (the head)
//	argmax       the greedy token, lowest index among equal logits
//
// The published Core AI port of this model needed about 900 dispatches per token. The
// matrix-vector kernels convert four 2-bit codes per instruction with
// unpack_unorm4x8_to_float((w >> 2j) & 0x03030303) and fold the ternary map's −1 into
// one subtraction per 16 codes, Σx·(c−1) = 255·Σx·(c/255) − Σx; they run over up to
// three weight sets that share an input, and every activation site (norm + rotation,
// SwiGLU + rotation, plain rotation) is computed in the prologue of the product that
// reads it, by each threadgroup for itself: a few more cached reads and butterflies per
// threadgroup, in exchange for no site dispatches (the host caps the threadgroups of
// such a product, WithMaxThreadgroups). Everything is float32 inside the kernels, whatever
// LoadOptions.Activations asks (int8 activations are the CPU backend's); only the KV
// cache is stored at a lower precision.
//
// Two other decode plans are options, for measuring on a Mac which is faster:
// WithSplitGDNDecode runs each GDN layer's products as a paired mv_norm over all rows of
// the GPU and the recurrence as gdn_seq (323 dispatches for the 27B model; the logits
// are bit-identical to the fused plan's), and WithUnfusedDecode runs the prefill kernels
// for one token.
//
// Prefill runs a chunk of up to 64 tokens, split into command buffers of whole layers
// (see "Command buffers, memory and dispatch" below): site kernels (site_norm,
// site_fwht, site_swiglu), a tiled ternary GEMM per matrix (gemm: each code converted
// once per threadgroup and used for 32 tokens), the chunked GDN (gdn_chunk, 32-token
// chunks; WithStepGDN for the step form, gdn_seq), attn_append + attn; 738 dispatches per
// 64 tokens for the 27B model.
// The GEMM (gemm.metal) runs on SIMD-group
// matrices, organised as llama.cpp's kernel_mul_mm and MLX's GEMMs are: a threadgroup of
// 4 SIMD groups owns 64 weight rows × 64 tokens — the whole chunk, so every code is
// decoded once per chunk — and per 32 inputs decodes its rows' codes, (c−1)·d, into
// threadgroup memory (k-major: the weights are the right operand without a transposed
// load) beside the tokens' slice; each SIMD group accumulates a 32 × 32 quarter in 16
// simdgroup_float8x8 (16 simdgroup_multiply_accumulate per 8 inputs) and stores it once,
// straight to the output where the quarter lies inside it, through an 8 × 8 staging tile
// at the edges. Everything stays float32, as in the scalar kernel it replaced: (c−1)·d is
// exact in float, only the order of the sums differs.
//
// # Batches
//
// A batch of several sequences (bonsai's batcher sends one decode token of each running
// stream and the chunks of new prompts) runs together: the rows of all of them, in batch
// order and each sequence's contiguous, are packed into command buffers of up to 64
// rows, a sequence that does not fit continuing in the next, and each command buffer
// runs the prefill kernels over all its rows — the site kernels and one GEMM per product
// over every row, so the weights are read once per command buffer whatever the batch —
// and the mixers per sequence, on its rows (buffer offsets) with its own state at its own
// position: attn_append + attn with each row's RoPE angles, gdn_chunk or gdn_seq. The
// head's GEMM runs over the rows whose logits were asked for; a greedy sequence's argmax
// goes to a slot of its own. The rows live in the engine's batch activations, allocated
// at the first batch (64 rows, counted against the working set; if they do not fit,
// batches run their sequences one after another). A command buffer that holds one
// sequence's rows only, and a batch of one sequence, run that sequence's own path (one
// decode token: the fused kernels). Watchdog splitting applies to batched command buffers
// as to prefill chunks.
//
// A sequence in a batch computes as it would alone through the same kernels: the GEMM
// makes each output row by itself and the other kernels work row by row or sequence by
// sequence. So a batch is bit-identical to its sequences run alone with
// WithUnfusedDecode and WithStepGDN, their logits asked for all rows; run alone with the
// default kernels, a decode token's logits (mv kernels rather than the GEMM), a last
// row's head (mv_norm rather than the GEMM) and a prompt cut at other points (the
// chunked GDN over other spans) agree to float32 rounding.
//
// # PTQ1_0
//
// A PTQ1_0 file runs as it is stored: the base-3 bytes are read where they lie (28 bytes
// per 128 weights, 18% fewer than PQ2_0's 34) by twins of the ternary kernels —
// mv_plain_t1, mv_fwht_t1, mv_norm_t1, mv_swiglu_t1, gemm_t1, and embed
// with SITE_PTQ1 — chosen per matrix at bind time, so a decode step has the same 339
// dispatches. The matrix-vector kernels give each lane one 32-bit word of a block: word u
// < 6 holds four qs bytes whose trit n are four consecutive elements (16n + 4u + i for u
// < 4; 80 + 8n + 4(u−4) + i for u = 4, 5), decoded two bytes per 16-bit lane — trit n of b
// is (uint8(b·3ⁿ)·3) >> 8, reached by ×3 (shift and add) and truncation — and dotted as a
// float4 with the activations in natural order; word 6 holds qh and the scale. The GEMM
// decodes once per chunk, eight elements at a time: one trit of eight consecutive bytes
// (or the four trits of qh), with the same two-lane arithmetic.
//
// # Command buffers, memory and dispatch
//
// The GPU watchdog: macOS stops a command buffer that occupies a GPU driving a display
// for too long (kIOGPUCommandBufferCallbackErrorImpactingInteractivity, or
// MTLCommandBufferErrorTimeout). A 64-token prefill chunk of the 27B model is about 3.3
// TFLOP, seconds on a small GPU, and attention at a long context grows with the
// position, so a chunk is cut into command buffers, each committed as soon as it is
// encoded (the GPU runs one while the host encodes the next; one queue runs them in
// order, with Metal tracking the hazards between them). A cost model charges every
// dispatch its bytes and FLOPs at the sequence's position and times them on the slowest
// Apple GPU (an M1 with 7 GPU cores, taken as 60 GB/s and 1 TFLOPS: assumptions, not
// measurements); a command buffer ends before it would pass half of
// WithCommandBufferTime (50 ms), inside a layer where needed: attention is split over
// blocks of positions (flash-decoding, attn_* and attn_merge) and recorded as several
// dispatches at a long context, and a GEMM too large for one command buffer (the head
// over 64 rows) as several over ranges of rows. The engine's TestCommandBufferCost27B
// holds every command buffer of the 27B model's decode step and prefill chunks, at the
// largest context a 16 GB Mac's working set allows (108K positions with an int8 cache,
// 61K with f16), to that bound. Prefill command buffers are also sized from the
// measured time per layer and token, aiming at WithCommandBufferTime (100 ms); a decode
// step of the 27B model (about 35 ms of weight reads on an M4 Pro, 0.26 s as modelled
// on the M1) is cut by the model only. If the watchdog still fires, the error wraps
// gpu.ErrTimeout, says where it happened and that the sequence must be reset or
// restored, and the engine halves both bounds by itself; lowering
// WithCommandBufferTime lowers them further.
//
// The working set: Load reads the device's recommendedMaxWorkingSetSize and refuses,
// before wrapping or allocating anything, a model whose weights and smallest sequence
// exceed it; NewState refuses a sequence that does not fit beside the weights, the
// open sequences and the batch activations, with the sizes and the largest context per KV precision that would
// (errors wrap ErrWorkingSet). A command buffer the GPU still cannot make resident
// (status 5, out of memory) comes back saying to lower the context or the KV precision.
// Weights read into memory rather than mapped (bonsai.WithMmap(false)) are copied into
// device buffers tensor by tensor: only a file mapping may be wrapped page by page.
//
// Of what mature Metal code does (llama.cpp's ggml-metal, MLX), the backend takes:
//
//   - command buffers with unretained references (commandBufferWithUnretainedReferences,
//     as ggml-metal): no retain and release by Metal for every buffer a dispatch binds
//     (339 dispatches of a few buffers each per 27B decode step), the Go side keeping
//     the buffers alive instead;
//   - residency sets where the OS has them (macOS 15, looked up at run time): the weights
//     and states are made resident once for the queue instead of per command buffer,
//     which for 7.2 GB of wrapped file is a walk of the driver's allocation list that a
//     decode step no longer pays, and the weights are asked to stay resident between
//     requests (requestResidency).
//
// It does not take concurrent dispatch (MTLDispatchTypeConcurrent with
// memoryBarrierWithScope: between dependent kernels). Every kernel of a decode step reads
// what the one before wrote — 338 barriers for 339 dispatches, the serial encoder's
// semantics at a higher encoding cost — and in prefill the only independent neighbours
// (the Q, K and V products; gate and up; attn_qkv and attn_gate) each fill the GPU on
// their own, so overlapping them gains at most their tails. ggml-metal overlaps graph
// nodes for the same reason it splits a graph over several command buffers encoded in
// parallel: many small dispatches per token, which the fused kernels here avoid.
//
// # Verification
//
// No Mac was available while this package was written. Everything below ran on Linux
// through the emulator (go test ./metal/...), which compiles the very MSL sources with clang
// against a shim and runs them with Metal's threadgroup, barrier and SIMD-group semantics:
//
//   - every source passes the emulator's CompileCheck, joined and file by file, compiled
//     as C++14 (MSL 3's base language) with -Wall -Wextra -Werror;
//   - the checks for what that C++ build cannot see, each with a negative test that
//     proves it fails: the attribute linter of the emulator's parser (one vector width
//     for a kernel's position and size attributes, uint/ushort index attributes, unique
//     [[buffer(n)]] ≤ 30, no double, static threadgroup memory ≤ 32 KiB at the 27B
//     model's macros); the address-space check (the joined library compiled again as
//     C++ for OpenCL 2021 with device, threadgroup, constant and thread mapped onto
//     OpenCL's spaces and no generic space, so any cross-space conversion is an error);
//     and the Objective-C check (device_prototypes.go: every selector's declaration from
//     Apple's headers; every send site of the darwin code, parsed with go/parser,
//     matches it in arity, register kinds, structs over 16 bytes by pointer to a Go
//     mirror of their size, BOOL results masked to a byte);
//   - compile refuses a GPU whose SIMD-groups are not 32 wide (threadExecutionWidth);
//   - the emulator models SIMD-group matrices (load/store with stride, origin and
//     transpose, multiply-accumulate, fill) as collectives of a full SIMD group, checked
//     against a float64 reference (exact on small integers, ≤ 1e-6 on random floats);
//   - the GEMM at every input width of the model, a 64-token chunk: K 5120 with N 1024
//     (attn_k/v, whole) and 256 of ffn_gate's 17408 rows, K 6144 (attn_output, ssm_out)
//     and K 17408 (ffn_down) with 256 of 5120 rows, in PQ2_0 and PTQ1_0: within 3e-7 of
//     Σ|w·x| of the float64 product (allowed 2e-5);
//   - the PTQ1_0 kernels (matvec in every prologue mode, streamed, at K 5120/6144/17408;
//     the GDN decode after mv_norm_t1 at d = 128; the embedding) against the same values
//     decoded by the Go code: products ≤ 7e-8 of Σ|w·x|, gdn_decode ≤ 1e-6;
//   - kernelcheck.Run runs every kernel against the Go code that owns its math, at odd small
//     shapes and at the 27B model's (inputs of 5120, 6144 and 17408; a 17408-row product;
//     the GDN group at d = 128; 24 × 256 attention heads): products within 2e-5 of Σ|w·x|
//     per row (measured ≤ 3e-7), transforms and the embedding bit-exact or within 1e-6,
//     the GDN and attention cores within 1e-4 of their outputs (measured ≤ 3e-6), the
//     argmax exact with ties and NaNs;
//   - the tiny synthetic model end to end against the CPU backend with float32
//     activations: logits of every position of a 70-token prefill and of a step walk
//     agree to 2e-4 (fp16 KV cache), 5e-5 (fp32) and 1e-3 (int8) on logits up to 20; greedy
//     generation is identical, snapshots saved on one backend continue on the other, the
//     fused decode kernels agree with the prefill kernels, thread orders (forward,
//     reverse, random) give bit-identical results, and the weights split into 64 KiB
//     views give the same logits;
//   - a tiny PTQ1_0 model end to end against the CPU backend on the same file (fp32 KV):
//     logits of a 70-token prefill within 3.5e-5 and of a step walk within 4e-5 (logits
//     up to 20); its prefill is bit-identical to the PQ2_0 file of the same values; and
//     through examples/logits -backend metal-emulator (≤ 5e-5 in both modes);
//   - the 339 dispatches of a 27B decode step are counted by encoding a step against the
//     7.2 GB synthetic 27B file on a counting device (dispatch_test.go), for the file as
//     PQ2_0 and as PTQ1_0 (every product on a _t1 kernel).
//
// examples/metalcheck is the program a Mac user runs: the kernel checks on the real GPU,
// a synthetic (or given) model through both backends with the parity printed, and the
// speed in tokens per second and GB/s of weights.
//
// # What only a Mac can show
//
//   - that Apple's compiler accepts the MSL: the Linux checks cover the attribute rules,
//     the address spaces, the C++14 language level and warnings, but not Apple's own
//     diagnostics (implicit conversions it rejects, MSL-only builtins declared
//     differently from the check's prelude), nor what each pipeline's
//     MaxThreadsPerThreadgroup and threadExecutionWidth come out as (the host adapts to
//     the first and requires 32 for the second);
//   - the watchdog in practice: how long a prefill command buffer of a few layers takes,
//     whether 100 ms keeps a display-driving GPU clear of
//     kIOGPUCommandBufferCallbackErrorImpactingInteractivity, and the cost of the extra
//     commits; and the exact NSError code and text that error arrives with;
//   - the working set: recommendedMaxWorkingSetSize on 8, 16 and larger Macs, and
//     whether weights, state and the rest of the system fit in it as counted;
//   - that unretained references and residency sets behave as documented (the darwin
//     tests release a buffer in flight), and whether residency sets measure faster;
//   - that the committed residency set drops a freed buffer at once, before it is
//     released, with no command buffer after (TestDeviceResidencyOnFree reads its
//     allocationCount; on Linux TestResidencyOrder checks the order of the messages
//     against a model of the set as Apple documents it, not against Metal); what Metal
//     does with a buffer released while a committed set still names it (undocumented:
//     why the removal is committed first); and what a commit per freed buffer costs
//     when a model's buffers are freed one by one at Close;
//   - metalcheck's default model on each Mac: the working set and free disk it is chosen
//     from (TestChoosePreset takes 8, 10.7 and 24 GiB by hand), whether half the working
//     set leaves a 24 GB Mac's 27B run out of swap, and the parity bound (1e-3 of the
//     logits' size) at the 27B model's 64 layers: the emulator checks it on tiny only;
//   - real GPU numerics: fast-math is off on the device, but exp, the fp16 conversions and
//     FMA contraction are the GPU's — metalcheck reports the parity;
//   - speed: whether the matrix-vector kernels reach the read bandwidth (metalcheck
//     times each of the 27B's product shapes against the stream_read kernel reading as
//     many bytes, the same way; on the emulator those times mean nothing), the cost of the
//     prologue sites repeated per threadgroup, the right WithMaxThreadgroups, whether the
//     GDN decode's two dispatches (mv_norm over every core, gdn_decode's 48 threadgroups,
//     two a core by the occupancy test's model) hold the bandwidth target,
//     the GEMM's and chunked GDN's prefill speed (threadgroup-memory bank conflicts of
//     the GEMM's k-major weight tile; how many 17 KiB threadgroups a core keeps resident),
//     the PTQ1_0 kernels' decode cost against PQ2_0's, and the host's encode time per
//     step;
//   - that Apple's compiler takes simdgroup_load/store of threadgroup float tiles with a
//     32-bit stride as the emulator does (the emulator's origin/transpose convention is
//     written down in internal/gpu/mslemu; the kernels use neither).
//   - what supportsFamily: (Apple7–Apple9, Mac2) and operatingSystemVersionString
//     answer on each Mac, which metalcheck's report carries (System);
//   - wrapping the mapped file with newBufferWithBytesNoCopy (page alignment, the views
//     when the file exceeds the largest buffer) on the real driver;
//   - the cost model's figures (split.go): whether a 7-core M1 streams 60 GB/s and runs
//     1.0 TFLOPS on these kernels, the real time of the command buffers it cuts against
//     the modelled 50 ms (TestCommandBufferCost27B checks the model, at 108,346 positions
//     with int8 KV on a 16 GB Mac's working set, not the GPU), what some six commits a
//     long-context decode step cost, and that the watchdog no longer fires at 100K
//     positions on a base M1 or M2;
//   - the split attention's speed and register pressure (the block kernel holds up to 4
//     queries a SIMD-group in registers), and that the head GEMM split into overlapping
//     row ranges comes out identical on the SIMD-group matrix hardware;
//   - where Apple's compiler places threadgroup arrays and what a misaligned vector store
//     does there: the emulator's strict alignment mode places each at its own type's
//     alignment and deliberately not at a wider one, so such a store fails TestKernels
//     (it found gemm.metal's float4 stores into a float array), but it cannot observe the
//     real placement;
//   - occupancy: real register use and threadgroups per core (the occupancy test models
//     ~60 KiB of threadgroup memory and 3072 threads a core for M1/M2 and takes them as a
//     floor for M3/M4), and the load-time cost of the matrix-vector variants per input
//     width.
//
// # Targets
//
// On paper, from the bytes a token reads and the FLOPs it needs.
//
// Decode is a read of the weights: a step reads every ternary matrix but the embedding
// table, 6.80 GB in PQ2_0, plus 0.06 GB of BF16 and F32 tensors: 6.86 GB per token. The
// target is ≥ 85% of the device's read bandwidth. On an M4 Pro (273 GB/s nominal) that is
// ≥ 232 GB/s, ≥ 33.8 tok/s (the ceiling is 273/6.86 = 39.8 tok/s). For comparison, the
// vendor's llama.cpp fork measures 20.5 tok/s there (141 GB/s, 52% of nominal) and MLX
// 18.9 tok/s (130 GB/s, 47%); on an M3 Max (400 GB/s) the fork's 24.3 tok/s is 167 GB/s,
// 42%, where 85% would be 49.6 tok/s. One command buffer and 339 dispatches per token
// (at short contexts) leave the host little to do: the published Core AI port reached 24.3 tok/s with about
// 900 dispatches and a 4 ms host gap per token.
//
// PTQ1_0 decode reads 5.60 + 0.06 = 5.66 GB per token, 82.5% of PQ2_0's: at the same
// bandwidth it would run 1.21× faster (41 tok/s on the M4 Pro at 232 GB/s). The target,
// ≥ 90% of PQ2_0's decode (≥ 30.4 tok/s on the M4 Pro), needs only 30.4 × 5.66 = 172 GB/s
// (63% of nominal): the slack pays for decoding base 3, ALU time that PQ2_0's
// four-codes-per-instruction unpack does not spend. The estimate: per four weights of a
// row the PTQ1_0 dot spends about 15 instructions — two ×3 as shift and add (a 32-bit
// multiply is slow on Apple GPUs), shifts and masks putting the four trits back into
// their bytes, one unorm unpack, four FMAs, the −1 folded into one subtraction per 20
// weights as PQ2_0 folds it per 16 — against PQ2_0's ≈ 7. The 25.6e9 weights of a token
// then cost ≈ 96e9 instructions, ≈ 24 ms on the M4 Pro's 20 cores × 128 lanes × ≈ 1.58
// GHz (≈ 4.0e12 a second): an ALU ceiling of ≈ 42 tok/s beside the read ceiling of 41 at
// 232 GB/s (29 tok/s if the unpack is four conversions rather than one instruction, still
// near the target). Reaching ≥ 30.4 tok/s needs the two to overlap — enough
// SIMD-groups in flight per core — which only a Mac can show. (An earlier form, with
// four conversions and the −1 per weight, came to ≈ 24 instructions and ≈ 26 tok/s.) The
// vendor's runtime runs PTQ1_0 at 84–90% of its PQ2_0 decode.
//
// Prefill is compute: the 27B model's matrices hold 25.6e9 weights, 24.3e9 without the
// head (run for the chunk's last token only), so a token costs 2 × 24.3e9 ≈ 49 GFLOP in
// the GEMMs (the attention and GDN cores of a short prompt add a few per cent). An M3
// Max's 40-core GPU issues 40 × 128 FP32 FMAs per cycle at ≈ 1.4 GHz, ≈ 14 TFLOPS; Apple's
// GPUs run fp16 FMAs at the same rate, so simdgroup_float8x8 costs no more than half8x8
// in arithmetic, and published simdgroup_matrix GEMMs reach 80–90% of that peak. The
// target, ≥ 200 tok/s, needs 200 × 49e9 = 9.8 TFLOPS, 69% of peak (the vendor's 162 tok/s
// is 7.9 TFLOPS, 56%). What the tile spends beside the multiply-accumulates: each code is
// decoded once per 64-token chunk, ≈ 8 instructions for a PQ2_0 code (shift, mask,
// convert, −1, ×d, the threadgroup store, addressing) on the same ALUs as the 64 FMAs
// the chunk's tokens spend on it — ≈ 12% on top, so the target asks ≈ 77% of peak in
// all; PTQ1_0's decode (the ×3 steps to reach trit n, masks, convert, −1, ×d, store: ≈ 10
// a code on average) adds ≈ 15%.
// The weights stream from memory once per chunk (6.8 GB / 64 ≈ 106 MB a token, 21 GB/s
// at 200 tok/s), and every 64-row tile
// re-reads its tokens' activations in float32 — 25.6e9 × 4 / 64 ≈ 1.6 GB a token, 320
// GB/s at 200 tok/s, mostly from the caches. That last stream is the GEMM's main cost
// beyond the arithmetic; halving it (half activations in threadgroup memory, as llama.cpp
// does, at the price of rounding the activations, or 128-row tiles) is the first thing
// to try if a Mac shows the GEMM short of the target.
package metal
