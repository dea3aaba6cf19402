package qwen35

// The GDN V-head order rule, in one place.
//
// The vendor's converter stores the V heads of a Gated DeltaNet layer TILED: head index
// r·KHeads + k for K group k and repeat r, so that V head h reads q/k head h % KHeads.
// That order holds for the V rows of attn_qkv, all rows of attn_gate, ssm_alpha,
// ssm_beta, ssm_a, ssm_dt.bias and the V channels of ssm_conv1d. The input columns of
// ssm_out stay GROUPED — head index k·Repeat + r — because the Hadamard fold cannot
// carry a column permutation, so the mixer output must be permuted tiled → grouped
// before its rotation.

// TiledHead returns the tiled index of the V head at grouped index g.
func (c *Config) TiledHead(g int) int {
	rep := c.HeadRepeat()
	k, r := g/rep, g%rep
	return r*c.KHeads + k
}

// GroupedHead returns the grouped index of the V head at tiled index t.
func (c *Config) GroupedHead(t int) int {
	k, r := t%c.KHeads, t/c.KHeads
	return k*c.HeadRepeat() + r
}

// KeyHead returns the q/k head that V head t (tiled index) reads.
func (c *Config) KeyHead(t int) int { return t % c.KHeads }

// PermuteTiledToGrouped writes src, VHeads blocks of StateSize values in tiled order, to
// dst in grouped order: grouped position (k, r, d) reads tiled index
// d + StateSize·(k + KHeads·r). dst and src must not overlap.
func (c *Config) PermuteTiledToGrouped(dst, src []float32) {
	d := c.StateSize
	_ = dst[c.VHeads*d-1]
	_ = src[c.VHeads*d-1]
	for g := 0; g < c.VHeads; g++ {
		t := c.TiledHead(g)
		copy(dst[g*d:(g+1)*d], src[t*d:(t+1)*d])
	}
}
