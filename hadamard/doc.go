// Package hadamard implements the blockwise Walsh–Hadamard rotation of
// PrismML's Ternary Bonsai models and the prism.hadamard metadata contract
// that describes it.
//
// # Rotation
//
// Bonsai models are quantised after an orthogonal rotation of each weight's
// input dimension, which spreads outliers evenly across a block. For an input
// of width K the rotation is
//
//	R = (1/√n)·Hₙ·S
//
// where S = diag(signs) holds one ±1 per input entry, and Hₙ is the n×n
// Sylvester Walsh–Hadamard matrix in natural order, Hₙ[r][c] = (−1)^popcount(r&c),
// applied to each of the K/n consecutive blocks independently (n = 1024 in
// the released models; K = 5120, 6144 and 17408 have 5, 6 and 17 blocks).
// The file stores folded weights W′ = W·Rᵀ, so W·x = W′·(R·x): at run time the
// activation is rotated forward — signs first, then the transform — before
// the product. The token embedding stores R·e per row and is rotated back
// after the lookup with Rᵀ = S·(1/√n)·Hₙ — transform first, then signs. The
// same inverse unfolds a folded weight row. R is orthogonal, so either order
// undoes the other. Per folded linear, then:
//
//	x′ = signs_K ⊙ x;  x′ = FWHT_n(x′, per block)/√n;  y = W′·x′
//
// and per embedding row z = dequant(row′): e = signs ⊙ FWHT_n(z)/√n.
//
// # Contract
//
// A rotated file says so in its prism.hadamard.* keys: version 1; block_size
// n (1024); transform "normalized-sylvester-walsh-hadamard", axis
// "input-last-dimension" and sign_mode "explicit", the only values accepted;
// sign_widths, the input widths K, with sign_values holding one ±1 per input
// entry, the vectors concatenated in width order; weight_names, the folded
// tensors (every ternary linear, output.weight included); inverse_weight_names,
// the tensors stored rotated ("token_embd.weight"); and gdn_v_grouped, true when
// the Gated DeltaNet output projection was folded over grouped V heads. Writers
// differ in integer types, so any integer type is accepted for the integer keys
// and any integer or float element type for sign_values. A contract this
// package does not implement is refused with an error naming the key.
//
// # Use
//
// [FWHT] and [FWHT64] are the unnormalised in-place transforms. A [Rotation]
// applies R or Rᵀ for one width ([Rotation.Forward], [Rotation.Inverse]). The
// float32 transform runs on AVX2, AVX-512 or NEON where the CPU has them (chosen
// once, at start-up; fwht_simd.go), with results identical bit for bit to the
// portable Go code's.
// [ParseContract] reads and validates the prism.hadamard.* keys from a
// model's [Metadata], and [Contract.Rotation] returns the rotation for a
// width; [Contract.KeyValues] gives the keys back for writing a file.
package hadamard
