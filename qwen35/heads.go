package qwen35

// The GDN V-head order rule (the package doc, § Stored values), in one place: V heads
// are stored tiled, the input columns of ssm_out grouped.

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
