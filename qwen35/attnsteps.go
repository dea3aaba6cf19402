package qwen35

// ForwardAsSteps is Forward computing each of the T tokens as a decode step of its own
// would: its output and the cache it leaves are bit for bit those of T calls of one
// token. A speculative verification pass needs that, so that its logits, and the state
// a rewind keeps, are those of decoding the accepted tokens one at a time. A call of
// several tokens sums a token's attention in another order than a step once the
// context is long enough for a step to split its positions (two spans of
// attnSplitLen), so from there it runs the tokens one call each, reading the cache once
// per token as the steps would; below, one call is the same arithmetic.
func (a *Attention) ForwardAsSteps(out, qg, k, v []float32, T, pos0 int, l *Layer, cache *KVCache, sc *AttentionScratch) error {
	if T <= 1 || pos0+T < 2*attnSplitLen {
		return a.Forward(out, qg, k, v, T, pos0, l, cache, sc)
	}
	H, KV, D := a.heads, a.kvHeads, a.dim
	for t := 0; t < T; t++ {
		err := a.Forward(out[t*H*D:(t+1)*H*D], qg[t*H*2*D:(t+1)*H*2*D], k[t*KV*D:(t+1)*KV*D], v[t*KV*D:(t+1)*KV*D], 1, pos0+t, l, cache, sc)
		if err != nil {
			return err
		}
	}
	return nil
}
