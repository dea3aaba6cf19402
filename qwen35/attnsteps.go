package qwen35

// ForwardAsSteps is Forward computing each of the T tokens as a decode step of its own
// would: its output and the cache it leaves are bit for bit those of T calls of one
// token. A speculative verification pass needs that, so that its logits, and the state
// a rewind keeps, are those of decoding the accepted tokens one at a time.
//
// A step cuts its positions into spans by its own length (attnSplitOf), so tokens of a
// pass whose steps would cut alike are attended together, up to attnSplitT at a time:
// each tile of the cache is read once for all of them and folded into each token's sum
// in the step's order. A pass of a few drafted tokens reads the cache once or twice,
// not once per token. Below two spans' length a step does not cut, and one Forward
// call is already the same arithmetic.
func (a *Attention) ForwardAsSteps(out, qg, k, v []float32, T, pos0 int, l *Layer, cache *KVCache, sc *AttentionScratch) error {
	if T <= 1 || pos0+T < 2*attnSplitLen {
		return a.Forward(out, qg, k, v, T, pos0, l, cache, sc)
	}
	if err := a.prepare(out, qg, k, v, T, pos0, l, cache, sc); err != nil {
		return err
	}
	for t0 := 0; t0 < T; {
		sp := attnSplitOf(pos0 + t0 + 1)
		t1 := t0 + 1
		for t1 < T && t1-t0 < attnSplitT && attnSplitOf(pos0+t1+1) == sp {
			t1++
		}
		a.attendSplit(out, qg, t0, t1, T, pos0, sp, cache, sc)
		t0 = t1
	}
	sc.body = attnBody{} // drop the references to the caller's buffers
	return nil
}
