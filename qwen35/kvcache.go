package qwen35

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/bonsai-go/sdk/bonsai/backend"
	"github.com/x448/float16"
)

// ErrContextFull is returned (wrapped, with the size) when a sequence would grow past the
// cache's maximum length.
var ErrContextFull = backend.ErrContextFull

// kvBlock is the int8 and q4 quantisation block length (values per scale).
const kvBlock = backend.KVBlock

// Page lengths: the first page is small so that a short sequence costs little, and each
// next page doubles up to kvMaxPage, so that a long one costs few allocations and no
// copying. Pages are never moved once allocated.
const (
	kvFirstPage = 16
	kvMaxPage   = 1024
)

// kvPage holds positions [start, start+n) of one layer, laid out per KV head:
// [head][position][HeadDim], so that attention streams one head's keys contiguously.
type kvPage struct {
	start, n int
	k32, v32 []float32
	k16, v16 []uint16
	k8, v8   []int8
	ks, vs   []float32 // int8 scales: [head][position][block]
	k4, v4   []byte    // q4 codes: [head][position][block][16 bytes]
	k4s, v4s []uint16  // q4 scales (IEEE halves): [head][position][block]
}

// KVCache is the key/value cache of one attention layer for one sequence. Memory grows
// in pages as positions are appended; nothing is reserved for MaxLen up front but the
// page table (pageCount(MaxLen) page headers, about 6 KB at 32768 positions). A page
// growth is therefore one allocation (two for an int8 cache: codes and scales), and
// every other Append allocates nothing.
//
// Attention scores an int8 or q4 cache's keys as they lie, in integers, against the
// query quantised to int8 per block (attnint.go): the query is rounded as the int8
// cache rounds the keys. The values are widened to float32.
type KVCache struct {
	heads, dim, blocks int
	prec               backend.KVPrecision
	maxLen             int
	n                  int
	pages              []kvPage // capacity pageCount(maxLen): appending never moves it
	capacity           int
}

// pageCount returns the number of pages that hold maxLen positions.
func pageCount(maxLen int) int {
	n, capacity, size := 0, 0, kvFirstPage
	for capacity < maxLen {
		capacity += min(size, maxLen-capacity)
		size = min(2*size, kvMaxPage)
		n++
	}
	return n
}

// NewKVCache returns an empty cache of kvHeads heads of headDim values per position
// holding at most maxLen positions.
func NewKVCache(kvHeads, headDim int, p backend.KVPrecision, maxLen int) *KVCache {
	if kvHeads <= 0 || headDim <= 0 || maxLen <= 0 {
		panic(fmt.Sprintf("qwen35: NewKVCache(%d, %d, %v, %d): sizes must be positive", kvHeads, headDim, p, maxLen))
	}
	if p > backend.KVQ4 {
		panic(fmt.Sprintf("qwen35: NewKVCache: unknown precision %v", p))
	}
	return &KVCache{heads: kvHeads, dim: headDim, blocks: (headDim + kvBlock - 1) / kvBlock, prec: p, maxLen: maxLen,
		pages: make([]kvPage, 0, pageCount(maxLen))}
}

// Len returns the number of positions held.
func (c *KVCache) Len() int { return c.n }

// MaxLen returns the most positions the cache may hold.
func (c *KVCache) MaxLen() int { return c.maxLen }

// Precision returns how the cache stores values.
func (c *KVCache) Precision() backend.KVPrecision { return c.prec }

// Cap returns the positions the allocated pages can hold.
func (c *KVCache) Cap() int { return c.capacity }

// Bytes returns the bytes of key/value storage allocated.
func (c *KVCache) Bytes() int64 {
	var b int64
	for i := range c.pages {
		p := &c.pages[i]
		b += int64(len(p.k32)+len(p.v32)+len(p.ks)+len(p.vs))*4 + int64(len(p.k16)+len(p.v16)+len(p.k4s)+len(p.v4s))*2 +
			int64(len(p.k8)+len(p.v8)+len(p.k4)+len(p.v4))
	}
	return b
}

// Reset empties the cache and keeps its pages for the next sequence.
func (c *KVCache) Reset() { c.n = 0 }

// Truncate drops the positions from n on (keeping the memory), so that a sequence can
// roll back to a shared prefix or undo rejected draft tokens. n must be in [0, Len()].
func (c *KVCache) Truncate(n int) {
	if n < 0 || n > c.n {
		panic(fmt.Sprintf("qwen35: KVCache.Truncate(%d) with %d positions", n, c.n))
	}
	c.n = n
}

// CopyFrom makes c a deep copy of o (sizes, precision and contents), reusing c's pages
// where they fit, so that forking a sequence copies only what o holds.
func (c *KVCache) CopyFrom(o *KVCache) {
	if c.heads != o.heads || c.dim != o.dim || c.prec != o.prec || c.maxLen != o.maxLen {
		// Page lengths follow from the sizes alone, so pages are reusable exactly
		// when the sizes agree.
		c.heads, c.dim, c.blocks, c.prec, c.maxLen = o.heads, o.dim, o.blocks, o.prec, o.maxLen
		c.pages, c.capacity = make([]kvPage, 0, pageCount(c.maxLen)), 0
	}
	c.n = 0
	c.Reserve(o.n)
	for i := range o.pages {
		op := &o.pages[i]
		if op.start >= o.n {
			break
		}
		cp := &c.pages[i]
		used := min(op.n, o.n-op.start)
		for h := 0; h < c.heads; h++ {
			a, b := h*op.n*c.dim, (h*op.n+used)*c.dim
			switch c.prec {
			case backend.KVFloat32:
				copy(cp.k32[a:b], op.k32[a:b])
				copy(cp.v32[a:b], op.v32[a:b])
			case backend.KVFloat16:
				copy(cp.k16[a:b], op.k16[a:b])
				copy(cp.v16[a:b], op.v16[a:b])
			case backend.KVInt8:
				copy(cp.k8[a:b], op.k8[a:b])
				copy(cp.v8[a:b], op.v8[a:b])
				a, b = h*op.n*c.blocks, (h*op.n+used)*c.blocks
				copy(cp.ks[a:b], op.ks[a:b])
				copy(cp.vs[a:b], op.vs[a:b])
			case backend.KVQ4:
				a, b := h*op.n*c.blocks, (h*op.n+used)*c.blocks
				copy(cp.k4[16*a:16*b], op.k4[16*a:16*b])
				copy(cp.v4[16*a:16*b], op.v4[16*a:16*b])
				copy(cp.k4s[a:b], op.k4s[a:b])
				copy(cp.v4s[a:b], op.v4s[a:b])
			}
		}
	}
	c.n = o.n
}

// newPage allocates a page for positions [start, start+n): keys and values share one
// allocation (codes and scales one each for int8).
func (c *KVCache) newPage(start, n int) kvPage {
	p := kvPage{start: start, n: n}
	size := c.heads * n * c.dim
	switch c.prec {
	case backend.KVFloat32:
		b := make([]float32, 2*size)
		p.k32, p.v32 = b[:size:size], b[size:]
	case backend.KVFloat16:
		b := make([]uint16, 2*size)
		p.k16, p.v16 = b[:size:size], b[size:]
	case backend.KVInt8:
		b := make([]int8, 2*size)
		p.k8, p.v8 = b[:size:size], b[size:]
		ns := c.heads * n * c.blocks
		s := make([]float32, 2*ns)
		p.ks, p.vs = s[:ns:ns], s[ns:]
	case backend.KVQ4:
		ns := c.heads * n * c.blocks
		b := make([]byte, 2*16*ns)
		p.k4, p.v4 = b[:16*ns:16*ns], b[16*ns:]
		s := make([]uint16, 2*ns)
		p.k4s, p.v4s = s[:ns:ns], s[ns:]
	}
	return p
}

// Reserve allocates pages until at least n positions (at most MaxLen) fit, so that the
// Appends up to there allocate nothing.
func (c *KVCache) Reserve(n int) {
	n = min(n, c.maxLen)
	for c.capacity < n {
		size := kvFirstPage
		if k := len(c.pages); k > 0 {
			size = min(2*c.pages[k-1].n, kvMaxPage)
		}
		size = min(size, c.maxLen-c.capacity)
		c.pages = append(c.pages, c.newPage(c.capacity, size))
		c.capacity += size
	}
}

// page returns the page holding position pos and pos's index within it.
func (c *KVCache) page(pos int) (*kvPage, int) {
	lo, hi := 0, len(c.pages)
	for hi-lo > 1 {
		m := (lo + hi) / 2
		if c.pages[m].start <= pos {
			lo = m
		} else {
			hi = m
		}
	}
	p := &c.pages[lo]
	return p, pos - p.start
}

// Append adds one position: k and v hold KVHeads×HeadDim values each, head-major.
func (c *KVCache) Append(k, v []float32) error {
	row := c.heads * c.dim
	if len(k) < row || len(v) < row {
		return fmt.Errorf("qwen35: KVCache.Append: got %d keys and %d values, want %d each", len(k), len(v), row)
	}
	if c.n >= c.maxLen {
		return fmt.Errorf("%w: all %d positions used", ErrContextFull, c.maxLen)
	}
	c.Reserve(c.n + 1)
	p, i := c.page(c.n)
	d := c.dim
	for h := 0; h < c.heads; h++ {
		src := h * d
		dst := (h*p.n + i) * d
		switch c.prec {
		case backend.KVFloat32:
			copy(p.k32[dst:dst+d], k[src:src+d])
			copy(p.v32[dst:dst+d], v[src:src+d])
		case backend.KVFloat16:
			encodeF16(p.k16[dst:dst+d], k[src:src+d])
			encodeF16(p.v16[dst:dst+d], v[src:src+d])
		case backend.KVInt8:
			sc := (h*p.n + i) * c.blocks
			quantizeInt8(p.k8[dst:dst+d], p.ks[sc:sc+c.blocks], k[src:src+d])
			quantizeInt8(p.v8[dst:dst+d], p.vs[sc:sc+c.blocks], v[src:src+d])
		case backend.KVQ4:
			sc := (h*p.n + i) * c.blocks
			quantizeQ4(p.k4[16*sc:16*(sc+c.blocks)], p.k4s[sc:sc+c.blocks], k[src:src+d])
			quantizeQ4(p.v4[16*sc:16*(sc+c.blocks)], p.v4s[sc:sc+c.blocks], v[src:src+d])
		}
	}
	c.n++
	return nil
}

// Row decodes position pos into k and v (KVHeads×HeadDim each, head-major).
func (c *KVCache) Row(pos int, k, v []float32) {
	if pos < 0 || pos >= c.n {
		panic(fmt.Sprintf("qwen35: KVCache.Row(%d) with %d positions", pos, c.n))
	}
	p, i := c.page(pos)
	for h := 0; h < c.heads; h++ {
		c.decode(p, h, i, 1, k[h*c.dim:(h+1)*c.dim], v[h*c.dim:(h+1)*c.dim])
	}
}

// block returns positions [i, i+n) of head h of page p as float32, n×HeadDim each: a view
// of the page for a float32 cache, or decoded into kbuf/vbuf otherwise.
func (c *KVCache) block(p *kvPage, h, i, n int, kbuf, vbuf []float32) (k, v []float32) {
	a, b := (h*p.n+i)*c.dim, (h*p.n+i+n)*c.dim
	if c.prec == backend.KVFloat32 {
		return p.k32[a:b], p.v32[a:b]
	}
	k, v = kbuf[:n*c.dim], vbuf[:n*c.dim]
	c.decode(p, h, i, n, k, v)
	return k, v
}

// rows16 returns the halves of the keys and values of positions [i, i+n) of head h of
// page p, an fp16 cache's, n×HeadDim each.
func (c *KVCache) rows16(p *kvPage, h, i, n int) (k, v []uint16) {
	a, b := (h*p.n+i)*c.dim, (h*p.n+i+n)*c.dim
	return p.k16[a:b], p.v16[a:b]
}

// decode writes positions [i, i+n) of head h of page p as float32 to k and v.
func (c *KVCache) decode(p *kvPage, h, i, n int, k, v []float32) {
	a, b := (h*p.n+i)*c.dim, (h*p.n+i+n)*c.dim
	switch c.prec {
	case backend.KVFloat32:
		copy(k, p.k32[a:b])
		copy(v, p.v32[a:b])
	case backend.KVFloat16:
		decodeF16(k, p.k16[a:b])
		decodeF16(v, p.v16[a:b])
	case backend.KVInt8:
		// The n rows' codes and scales lie one after another: one call each for the
		// whole tile, whose kernel streams (and prefetches) them in order.
		s, e := (h*p.n+i)*c.blocks, (h*p.n+i+n)*c.blocks
		dequantizeInt8(k[:n*c.dim], p.k8[a:b], p.ks[s:e])
		dequantizeInt8(v[:n*c.dim], p.v8[a:b], p.vs[s:e])
	case backend.KVQ4:
		s, e := (h*p.n+i)*c.blocks, (h*p.n+i+n)*c.blocks
		dequantQ4(k[:n*c.dim], p.k4[16*s:16*e], p.k4s[s:e])
		dequantQ4(v[:n*c.dim], p.v4[16*s:16*e], p.v4s[s:e])
	}
}

func encodeF16(dst []uint16, src []float32) {
	src = src[:len(dst)]
	for i := range dst {
		dst[i] = float16.Fromfloat32(src[i]).Bits()
	}
}

func decodeF16(dst []float32, src []uint16) { f16ToF32s(dst, src) }

// f16ToF32 widens an IEEE half exactly. Normal numbers, the common case, take one
// predictable branch: the exponent is rebiased by adding (127−15)<<23 to the shifted
// bits; subnormals renormalise through a float subtraction, and Inf/NaN keep an all-ones
// exponent.
func f16ToF32(h uint16) float32 {
	const magic = 113 << 23 // 2^(−14) as float32 bits, once rebiased
	o := uint32(h&0x7fff) << 13
	exp := o & (0x7c00 << 13)
	o += (127 - 15) << 23
	switch exp {
	case 0x7c00 << 13: // Inf or NaN
		o += (128 - 16) << 23
	case 0: // zero or subnormal
		o += 1 << 23
		o = math.Float32bits(math.Float32frombits(o) - math.Float32frombits(magic))
	}
	return math.Float32frombits(o | uint32(h&0x8000)<<16)
}

// The cache's quantisers are the seam's, so that a row read through the KVCache view
// and quantised again yields its codes back.
var (
	quantizeInt8 = backend.QuantizeInt8
	quantizeQ4   = backend.QuantizeQ4
)

func dequantizeInt8(dst []float32, src []int8, scales []float32) { dequantInt8(dst, src, scales) }

func abs32(x float32) float32 { return math.Float32frombits(math.Float32bits(x) &^ (1 << 31)) }

// Heads returns the KV heads of a position's row.
func (c *KVCache) Heads() int { return c.heads }

// HeadDim returns the values per head.
func (c *KVCache) HeadDim() int { return c.dim }

// ReadRow copies position pos's key and value rows into k and v, encoded at the cache's
// precision (backend.KVPrecision.RowBytes): the cache's own codes and scales, unchanged.
func (c *KVCache) ReadRow(pos int, k, v []byte) {
	if pos < 0 || pos >= c.n {
		panic(fmt.Sprintf("qwen35: KVCache.ReadRow(%d) with %d positions", pos, c.n))
	}
	p, i := c.page(pos)
	c.rowBytes(p, i, k, v, false)
}

// AppendRow adds one position from rows encoded at the cache's precision.
func (c *KVCache) AppendRow(k, v []byte) error {
	if n := c.prec.RowBytes(c.heads, c.dim); len(k) < n || len(v) < n {
		return fmt.Errorf("qwen35: KVCache.AppendRow: rows of %d and %d bytes, want %d", len(k), len(v), n)
	}
	if c.n >= c.maxLen {
		return fmt.Errorf("%w: all %d positions used", ErrContextFull, c.maxLen)
	}
	c.Reserve(c.n + 1)
	p, i := c.page(c.n)
	c.rowBytes(p, i, k, v, true)
	c.n++
	return nil
}

// rowBytes moves position i of page p between the page and the encoded rows k and v:
// into the page when in is set, out of it otherwise.
func (c *KVCache) rowBytes(p *kvPage, i int, k, v []byte, in bool) {
	d, nb, n := c.dim, c.blocks, c.heads*c.dim
	le := binary.LittleEndian
	for h := 0; h < c.heads; h++ {
		at := (h*p.n + i) * d // the head's first value in the page
		sc := (h*p.n + i) * nb
		for j := 0; j < d; j++ {
			e := h*d + j // the value's index in the row
			switch c.prec {
			case backend.KVFloat32:
				if in {
					p.k32[at+j], p.v32[at+j] = math.Float32frombits(le.Uint32(k[4*e:])), math.Float32frombits(le.Uint32(v[4*e:]))
				} else {
					le.PutUint32(k[4*e:], math.Float32bits(p.k32[at+j]))
					le.PutUint32(v[4*e:], math.Float32bits(p.v32[at+j]))
				}
			case backend.KVFloat16:
				if in {
					p.k16[at+j], p.v16[at+j] = le.Uint16(k[2*e:]), le.Uint16(v[2*e:])
				} else {
					le.PutUint16(k[2*e:], p.k16[at+j])
					le.PutUint16(v[2*e:], p.v16[at+j])
				}
			case backend.KVInt8:
				if in {
					p.k8[at+j], p.v8[at+j] = int8(k[e]), int8(v[e])
				} else {
					k[e], v[e] = byte(p.k8[at+j]), byte(p.v8[at+j])
				}
			}
		}
		for b := 0; b < nb; b++ {
			e := h*nb + b // the block's index in the row
			switch c.prec {
			case backend.KVInt8:
				if in {
					p.ks[sc+b], p.vs[sc+b] = math.Float32frombits(le.Uint32(k[n+4*e:])), math.Float32frombits(le.Uint32(v[n+4*e:]))
				} else {
					le.PutUint32(k[n+4*e:], math.Float32bits(p.ks[sc+b]))
					le.PutUint32(v[n+4*e:], math.Float32bits(p.vs[sc+b]))
				}
			case backend.KVQ4:
				codes := 16 * c.heads * nb
				if in {
					copy(p.k4[16*(sc+b):16*(sc+b+1)], k[16*e:16*(e+1)])
					copy(p.v4[16*(sc+b):16*(sc+b+1)], v[16*e:16*(e+1)])
					p.k4s[sc+b], p.v4s[sc+b] = le.Uint16(k[codes+2*e:]), le.Uint16(v[codes+2*e:])
				} else {
					copy(k[16*e:16*(e+1)], p.k4[16*(sc+b):16*(sc+b+1)])
					copy(v[16*e:16*(e+1)], p.v4[16*(sc+b):16*(sc+b+1)])
					le.PutUint16(k[codes+2*e:], p.k4s[sc+b])
					le.PutUint16(v[codes+2*e:], p.v4s[sc+b])
				}
			}
		}
	}
}

var _ backend.KVCache = (*KVCache)(nil)

// integer reports whether attention scores the cache's keys in integers (attnint.go).
func (c *KVCache) integer() bool {
	return integerScores && (c.prec == backend.KVInt8 || c.prec == backend.KVQ4)
}

// integerScores is cleared by tests and benchmarks only, to run the float scoring of
// the int8 and q4 caches (their keys widened, then float dot products) for comparison.
var integerScores = true

// codeTile is the codes and scales of a run of keys and values of one head of an int8
// (k8, ks, v8, vs) or q4 (k4, k4s, v4, v4s) cache, as the page holds them.
type codeTile struct {
	k8, v8   []int8
	ks, vs   []float32
	k4, v4   []byte
	k4s, v4s []uint16
}

// codes returns the codes and scales of positions [i, i+n) of head h of page p.
func (c *KVCache) codes(p *kvPage, h, i, n int) codeTile {
	s, e := (h*p.n+i)*c.blocks, (h*p.n+i+n)*c.blocks
	if c.prec == backend.KVQ4 {
		return codeTile{k4: p.k4[16*s : 16*e], k4s: p.k4s[s:e], v4: p.v4[16*s : 16*e], v4s: p.v4s[s:e]}
	}
	a, b := (h*p.n+i)*c.dim, (h*p.n+i+n)*c.dim
	return codeTile{k8: p.k8[a:b], ks: p.ks[s:e], v8: p.v8[a:b], vs: p.vs[s:e]}
}

// values decodes the values of positions [i, i+n) of head h of page p, an int8 or q4
// cache's, into vbuf and returns them.
func (c *KVCache) values(p *kvPage, h, i, n int, vbuf []float32) []float32 {
	v := vbuf[:n*c.dim]
	s, e := (h*p.n+i)*c.blocks, (h*p.n+i+n)*c.blocks
	if c.prec == backend.KVQ4 {
		dequantQ4(v, p.v4[16*s:16*e], p.v4s[s:e])
		return v
	}
	a, b := (h*p.n+i)*c.dim, (h*p.n+i+n)*c.dim
	dequantizeInt8(v, p.v8[a:b], p.vs[s:e])
	return v
}
