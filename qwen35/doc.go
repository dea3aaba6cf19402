// Package qwen35 describes the Qwen3.5 hybrid decoder that Ternary Bonsai 2 is built on
// (GGUF general.architecture "qwen35"): its configuration, read and checked from the
// qwen35.* keys of a file, and the tensor inventory and storage conventions of a Bonsai
// file — which tensors exist, their shapes, which are ternary and folded with the
// Hadamard rotation.
//
// Layer i is full attention when (i+1) is a multiple of full_attention_interval, and
// Gated DeltaNet otherwise. Every size is read from the file; ReadConfig names the key at
// fault when the sizes do not fit together.
//
//	cfg, err := qwen35.ReadConfig(file, vocab)
//	for _, t := range cfg.Tensors() { ... }
//
// # Tensors
//
// [Config.Tensors] lists the tensors of a Bonsai file in the order the vendor's converter
// writes them, and [Bind] binds each to a field of [Weights] or [Layer]. Shapes are in
// GGUF ne order, the input width K first, here with the 27B sizes; "ternary" is PQ2_0 or
// PTQ1_0 (package ternary), and every ternary tensor is folded with the rotation of its
// input width (package hadamard) except the embedding, whose rows are stored rotated:
//
//	token_embd.weight                         ternary  5120 × 248320  rows rotated
//	output.weight                             ternary  5120 × 248320  not tied to the embedding
//	output_norm.weight                        F32      5120
//	every layer, under "blk.N.":
//	  attn_norm.weight                        F32      5120
//	  post_attention_norm.weight              F32      5120
//	  ffn_gate.weight, ffn_up.weight          ternary  5120 × 17408
//	  ffn_down.weight                         ternary  17408 × 5120
//	Gated DeltaNet layers:
//	  attn_qkv.weight                         ternary  5120 × 10240   q 2048, k 2048, v 6144
//	  attn_gate.weight                        ternary  5120 × 6144    z
//	  ssm_conv1d.weight                       F32      4 × 10240      depthwise, tap 0 oldest
//	  ssm_dt.bias, ssm_a                      F32      48             one per V head
//	  ssm_beta.weight, ssm_alpha.weight       BF16     5120 × 48      read unrotated
//	  ssm_norm.weight                         F32      128
//	  ssm_out.weight                          ternary  6144 × 5120
//	full-attention layers:
//	  attn_q.weight                           ternary  5120 × 12288   per head: query 256, gate 256
//	  attn_k.weight, attn_v.weight            ternary  5120 × 1024
//	  attn_output.weight                      ternary  6144 × 5120
//	  attn_q_norm.weight, attn_k_norm.weight  F32      256
//
// The 27B model has 851 tensors: 402 ternary (401 folded, the embedding inverse), 96
// BF16, the rest F32.
//
// # Stored values
//
// The converter stores some values otherwise than the model defines them:
//   - every norm gain but ssm_norm is stored as w+1, so RMSNorm multiplies by the stored
//     value as is; ssm_norm is stored as w;
//   - ssm_a holds −exp(A_log), the decay rate ready to multiply;
//   - the V heads of a Gated DeltaNet layer are stored tiled: head r·KHeads + k for K
//     group k and repeat r < VHeads/KHeads, so V head h reads q/k head h mod KHeads. This
//     holds for the V rows of attn_qkv, the rows of attn_gate, ssm_alpha and ssm_beta,
//     ssm_a, ssm_dt.bias and the V channels of ssm_conv1d. The input columns of ssm_out
//     stay grouped, head k·(VHeads/KHeads) + r, because the rotation folded into them
//     cannot carry a column permutation: the mixer output is permuted tiled → grouped
//     before its rotation, grouped position (k, r, d) reading tiled index
//     d + StateSize·(k + KHeads·r). [Config.TiledHead], [Config.GroupedHead] and
//     [Config.PermuteTiledToGrouped] implement that order.
//
// # Forward pass
//
// Per token, with rmsnorm(x) = x/√(mean(x²) + ε) and W·x the product with a linear's
// weights (computed as W′·(R·x) over the folded ones; [Plan] says where each rotation
// is taken):
//
//	x = embedding row of the token
//	each layer:  h = rmsnorm(x)·attn_norm;            x += mixer(h)
//	             h = rmsnorm(x)·post_attention_norm;  x += ffn_down·(silu(ffn_gate·h) ⊙ ffn_up·h)
//	logits = output·(rmsnorm(x)·output_norm)
//
// The Gated DeltaNet mixer, with d = StateSize and softplus(x) = log(1 + eˣ), taken as x
// above 20:
//
//	qkv = attn_qkv·h;  z = attn_gate·h;  β = sigmoid(ssm_beta·h)
//	g = softplus(ssm_alpha·h + ssm_dt.bias)·ssm_a     the log decay, ≤ 0
//	qkv = silu(depthwise causal conv of the current qkv and the ConvKernel−1 before it)
//	split qkv into q, k (KHeads heads of d) and v (VHeads heads of d)
//	q, k = x/max(‖x‖, ε) per head
//	each V head, reading its q/k head, with state S (d × d, zero at the start):
//	    S = S·eᵍ;  δ = (v − Sᵀk)·β;  S = S + k·δᵀ;  o = Sᵀq/√d
//	o = rmsnorm(o per head)·ssm_norm ⊙ silu(z per head)
//	mixer = ssm_out·o                                 o permuted to grouped order
//
// The gated attention mixer, with D = HeadDim:
//
//	per head, [q | gate] = attn_q·h;  q = rmsnorm(q)·attn_q_norm
//	per KV head, k = rmsnorm(attn_k·h)·attn_k_norm;  v = attn_v·h
//	RoPE on the first RopeDims of each q and k head, NeoX pairs (i, i + RopeDims/2),
//	    angle pos·RopeBase^(−2i/RopeDims) (text gives every rope section the same pos)
//	query head j reads KV head j/(Heads/KVHeads):  a = softmax(q·kᵀ/√D)·v over positions ≤ pos
//	mixer = attn_output·(a ⊙ sigmoid(gate))
//
// With an int8 or q4 KV cache the scores q·kᵀ are computed in integers: each query head
// is quantised to int8 per block of 32 values (scale max|q|/127, as the cache quantises
// k), and a score is the sum over blocks of the two scales times the integer dot product
// of the codes. This rounds q as the int8 cache rounds k: a logit moves by at most
// Σ_b max_b|q|/254·Σ_{i∈b}|k_i|, of both signs, a change the size of the int8 cache's
// own and small beside q4's (attnint.go has the derivation and measurements). The values
// are weighted in float32. The f32 and fp16 caches keep float scores.
//
// ε is attention.layer_norm_rms_epsilon throughout. The chunked form of the GDN
// recurrence that prefill may use computes the same function.
package qwen35
