package hadamard

// The pure-Go transform: the float64 path, the float32 path on machines without a
// SIMD implementation, and the reference every SIMD implementation is tested against
// bit for bit.

// transform sets x to post ⊙ (H·(pre ⊙ x)); a nil pre or post stands for all
// ones. len(x) must be a power of two and pre and post, when present, as long
// as x.
//
// The diagonal factors ride along with the first and last butterfly passes, so
// a rotation touches its block five times (n = 1024) instead of seven. The
// passes are radix-4: each one fuses two radix-2 stages into a single read and
// write of the block, with the same additions in the same order, so results
// are bit-identical to the textbook radix-2 loop.
func transform[F float](x, pre, post []F) {
	n := len(x)
	if n <= 2 {
		// Too short for a 4-point pass; write the 1- and 2-point cases out.
		if pre != nil {
			for i := range x {
				x[i] *= pre[i]
			}
		}
		if n == 2 {
			x[0], x[1] = x[0]+x[1], x[0]-x[1]
		}
		if post != nil {
			for i := range x {
				x[i] *= post[i]
			}
		}
		return
	}

	if pre != nil {
		quadPre(x, pre)
	} else {
		quad(x)
	}
	if n == 4 {
		if post != nil {
			for i := range x {
				x[i] *= post[i]
			}
		}
		return
	}

	// Stages h = 1, 2 are done; the loop leaves n/h ∈ {2, 4, 8} for the last
	// one or two passes, whichever also applies post.
	h := 4
	for ; 16*h <= n; h *= 4 {
		radix4(x, h)
	}
	switch n / h {
	case 2:
		radix2Post(x, h, post)
	case 4:
		radix4Post(x, h, post)
	case 8:
		radix4(x, h)
		radix2Post(x, 4*h, post)
	}
}

// quad applies H₄ to each contiguous group of four.
func quad[F float](x []F) {
	for ; len(x) >= 4; x = x[4:] {
		q := x[:4]
		s0, d0 := q[0]+q[1], q[0]-q[1]
		s1, d1 := q[2]+q[3], q[2]-q[3]
		q[0], q[1], q[2], q[3] = s0+s1, d0+d1, s0-s1, d0-d1
	}
}

// quadPre is quad on pre ⊙ x.
func quadPre[F float](x, pre []F) {
	pre = pre[:len(x)]
	for ; len(x) >= 4; x, pre = x[4:], pre[4:] {
		q, p := x[:4], pre[:4]
		a, b, c, d := q[0]*p[0], q[1]*p[1], q[2]*p[2], q[3]*p[3]
		s0, d0 := a+b, a-b
		s1, d1 := c+d, c-d
		q[0], q[1], q[2], q[3] = s0+s1, d0+d1, s0-s1, d0-d1
	}
}

// radix4 runs the butterfly stages of spans h and 2h.
func radix4[F float](x []F, h int) {
	for ; len(x) >= 4*h; x = x[4*h:] {
		a := x[:h]
		b := x[h:][:h]
		c := x[2*h:][:h]
		d := x[3*h:][:h]
		for j := range a {
			s0, d0 := a[j]+b[j], a[j]-b[j]
			s1, d1 := c[j]+d[j], c[j]-d[j]
			a[j], b[j], c[j], d[j] = s0+s1, d0+d1, s0-s1, d0-d1
		}
	}
}

// radix4Post is radix4 followed by multiplication by post (nil: none).
func radix4Post[F float](x []F, h int, post []F) {
	if post == nil {
		radix4(x, h)
		return
	}
	post = post[:len(x)]
	for ; len(x) >= 4*h; x, post = x[4*h:], post[4*h:] {
		a, pa := x[:h], post[:h]
		b, pb := x[h:][:h], post[h:][:h]
		c, pc := x[2*h:][:h], post[2*h:][:h]
		d, pd := x[3*h:][:h], post[3*h:][:h]
		for j := range a {
			s0, d0 := a[j]+b[j], a[j]-b[j]
			s1, d1 := c[j]+d[j], c[j]-d[j]
			a[j], b[j], c[j], d[j] = (s0+s1)*pa[j], (d0+d1)*pb[j], (s0-s1)*pc[j], (d0-d1)*pd[j]
		}
	}
}

// radix2Post runs the butterfly stage of span h, then multiplies by post
// (nil: none).
func radix2Post[F float](x []F, h int, post []F) {
	if post == nil {
		for ; len(x) >= 2*h; x = x[2*h:] {
			a, b := x[:h], x[h:][:h]
			for j := range a {
				a[j], b[j] = a[j]+b[j], a[j]-b[j]
			}
		}
		return
	}
	post = post[:len(x)]
	for ; len(x) >= 2*h; x, post = x[2*h:], post[2*h:] {
		a, pa := x[:h], post[:h]
		b, pb := x[h:][:h], post[h:][:h]
		for j := range a {
			a[j], b[j] = (a[j]+b[j])*pa[j], (a[j]-b[j])*pb[j]
		}
	}
}
