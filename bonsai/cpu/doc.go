// Package cpu is the pure-Go backend (a backend.Backend): it runs on any platform Go
// supports, reads the ternary weights in place from the mapped file, and spreads the
// large matrix products over a pool of worker goroutines started once per model. It is
// bonsai's default; pass New() to bonsai.WithBackend to say so explicitly.
//
// A forward pass follows qwen35's plan (qwen35.Weights.Plan) a chunk of up to 64 tokens
// at a time: each activation site is normalised, rotated and quantised to int8 once, and
// all the products that read it run as one parallel loop over their concatenated rows,
// so that each chunk reads the weights once. The mixers are qwen35's Gated DeltaNet and
// attention blocks, spread over the same pool by head.
package cpu
