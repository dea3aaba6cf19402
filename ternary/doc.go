// Package ternary implements the ternary block formats of PrismML's Ternary
// Bonsai models: PQ2_0 (GGUF type 142) and PTQ1_0 (GGUF type 143).
//
// # Formats
//
// Both formats store weights in blocks of [BlockSize] = 128 elements with one
// IEEE binary16 (fp16) scale d per block. Every element holds a code q, and
// its value is (q−1)·d, so codes 0, 1 and 2 mean −d, 0 and +d. The two
// formats carry the same information and transcode losslessly into each
// other; they differ only in how densely the codes are packed:
//
//	PQ2_0   34 bytes: fp16 d, then qs[32]. Element j is the two bits at
//	        offset 2·(j%4) of qs[j/4], so bytes qs[4i..4i+3] read as a
//	        little-endian uint32 hold elements 16i..16i+15 at bits 2j. A
//	        fourth code, 3, decodes as +2d; the quantiser never writes it.
//	PTQ1_0  28 bytes: qs[24], qh[2], then fp16 d. Bytes hold five (qs) or
//	        four (qh) base-3 digits ("trits"), first trit most significant.
//	        Elements 0–79 are trit n of qs[m] at 16n+m, elements 80–119 are
//	        trit n of qs[16+m] at 80+8n+m, elements 120–127 are trit n of
//	        qh[h] at 120+2n+h.
//
// A PTQ1_0 byte for trits t0..t4 is ceil(256·(81t0+27t1+9t2+3t3+t4)/243); the
// scaling by 256/243 lets a decoder recover trit n with one 8-bit multiply:
// t = (uint8(b·3ⁿ)·3) >> 8, the product b·3ⁿ truncated to 8 bits first. A qh
// byte holds four trits as if a fifth, zero, trit followed. The fp16 scale is
// little endian in both formats.
//
// # Use
//
// The main entry points are methods of [Format]: [Format.Decode] turns blocks
// into float32 values, [Format.Quantize] turns float32 values into blocks
// with the vendor's quantiser (d = max|w| per block), and [Format.Unpack] and
// [Format.Pack] convert between blocks and raw codes and scale bits.
// [Transcode] converts between the formats, [Scan] gathers the statistics
// worth checking on a downloaded file, and [DotRef] and [MatVecRef] are the
// plain float64 references that faster kernels are tested against. The
// block-level functions ([UnpackPQ2_0], [PackPTQ1_0], ...) work on one block
// without allocating.
//
// # Kernels
//
// The integer kernels ([MatVecQ8Range] for decode, [MatMulQ8Range] for prefill, with
// activations quantised in a [Q8] or [Q8Batch]) read both formats where they lie, on
// SIMD kernels chosen by CPU feature at start-up ([Q8Kernel]: AVX-512 VNNI with or
// without GFNI, AVX2, NEON with or without SDOT) and on a pure-Go twin elsewhere and
// under the purego build tag. PTQ1_0 trits are decoded in registers by repeated
// multiplication by 3 (3·xₙ = 256·tₙ + xₙ₊₁, the formula above run forward), against a
// copy of the activations kept in trit order; the prefill kernels decode the trits into
// the PQ2_0 code planes their inner loop consumes. Either way a PTQ1_0 matrix gives
// bit for bit the result of its PQ2_0 transcode on the same kernel family. The prefill
// kernels repack each pass's weights into their own layout first; a matrix's [Tiles],
// made once, hold that layout ahead, and [MatMulQ8TilesRange] reads them instead, with
// the same bits: for batches of a few vectors, where the repacking is a large share.
// For decode, an [Interleaved] matrix holds a PQ2_0 matrix's bytes rearranged at load into
// 64-row tiles whose code bytes each carry four rows' codes of one column, so that on
// AVX-512 VNNI four VPDPBUSD, on the bytes and on them masked three ways, multiply 256
// weights without unpacking a code; [MatVecInterleavedRange] over it gives the bits of
// [MatVecQ8Range], and [MatMulInterleavedRange], which multiplies each loaded step with
// up to six vectors (five with SDOT, three with plain NEON), those of [MatMulQ8Range]
// with no repacking (AVX-512 VNNI, AVX2 and both NEON families: [InterleavedBatchNative]).
// Where the CPU has AVX-VNNI without AVX-512 (Intel's client and E-core parts since
// Alder Lake), the AVX2 family's interleaved kernels take VPDPBUSD on 256-bit vectors,
// with the AVX2 kernels' bits ([InterleavedKernel] names the kernels in use).
// An [Interleaved3] matrix does the same for PTQ1_0 at the file's size, five rows'
// trits a byte in 80-row tiles: [MatVecInterleaved3Range] and [MatMulInterleaved3Range]
// (which decodes each block pair of a tile once for up to 32 vectors) give the bits of
// MatVecQ8Range and MatMulQ8Range over the PTQ1_0 file ([Interleaved3Native],
// [Interleaved3BatchNative]) on AVX-512 VNNI, and on AVX-VNNI, where the AVX2 family's
// base-3 kernels take two vectors at a time in batches, and on arm64 with SDOT (flipping
// each code byte's top bit once makes the tripled bytes signed, which SDOT multiplies,
// and cancels the block's Sum); an AVX2 CPU without AVX-VNNI and an arm64 core without
// SDOT have no base-3 kernel, and PTQ1_0 keeps the file's layout there.
// On Linux on Intel CPUs with AMX-INT8 (Sapphire Rapids and later Xeons), both batched
// products take batches of 32 vectors or more through the tile unit: a tile × block's
// code bytes are, row group by row group, TDPBSSD's weight operand after a shift, a mask
// and a subtraction, and each block's integers are folded as the AVX-512 VNNI kernels
// fold them, so the outputs keep their bits ([InterleavedBatchAMX], [SetAMX]).
//
// # Decoded values
//
// Decoded values are IEEE float32 products float32(q−1)·d, exactly as the
// vendor's C computes them. For the finite scales a file should hold they
// are exact; a scale of ±Inf decodes code 1 as NaN (0·Inf) and other codes
// as ±Inf, and a NaN scale decodes every element as NaN. [Scan] counts such
// scales so that a loader can refuse them. IEEE signed zeros carry through as
// well: code 0 under a zero scale, and code 1 under a negative one, decode
// as −0.
package ternary
