package bonsai

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"

	"github.com/bonsai-go/sdk/qwen35"
	"github.com/x448/float16"
)

// The state encoding, which every backend's State.Save writes and State.Load reads, so
// that a snapshot moves between backends. All numbers are little-endian. First the number
// of tokens the state holds (uint32), then layer by layer, in order:
//
//   - a GDN layer: its convolution state, (ConvKernel−1)×QKVWidth float32, then its
//     recurrent state, VHeads×StateSize×StateSize float32, both laid out as
//     qwen35.GDNState holds them;
//   - an attention layer: the KV precision (one byte, a qwen35.KVPrecision), the number
//     of positions n (uint32), then n positions, each its key row and its value row
//     (KVHeads×HeadDim values, head-major) at that precision: float32, IEEE half,
//     int8 codes followed by one float32 scale per block of 32 values of a head, or for
//     q4 16 bytes of 4-bit codes per block of 32 values of a head (value j of a block
//     the low nibble of byte j for j < 16, the high nibble of byte j−16 otherwise; a
//     short last block padded with code 8) followed by one IEEE half scale per block,
//     a value being (code − 8)·scale.
//
// Every attention layer holds as many positions as the state holds tokens.

// stateCodec reads and writes the state encoding for one model configuration.
type stateCodec struct {
	cfg    *qwen35.Config
	buf    []byte
	k, v   []float32 // one position's keys and values
	k8     []int8
	scales []float32
	q4     []byte
	q4s    []uint16
}

func newStateCodec(c *qwen35.Config) *stateCodec {
	row := c.KVHeads * c.HeadDim
	blocks := c.KVHeads * ((c.HeadDim + kvBlock - 1) / kvBlock)
	return &stateCodec{cfg: c, buf: make([]byte, 0, 1<<16), k: make([]float32, row), v: make([]float32, row),
		k8: make([]int8, row), scales: make([]float32, blocks), q4: make([]byte, 16*blocks), q4s: make([]uint16, blocks)}
}

// kvBlock is the int8 KV cache's block length (values per scale), as qwen35 stores it.
const kvBlock = 32

func (c *stateCodec) writeF32(w io.Writer, x []float32) error {
	for len(x) > 0 {
		n := min(len(x), cap(c.buf)/4)
		b := c.buf[:4*n]
		for i, v := range x[:n] {
			binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(v))
		}
		if _, err := w.Write(b); err != nil {
			return err
		}
		x = x[n:]
	}
	return nil
}

func (c *stateCodec) readF32(r io.Reader, x []float32) error {
	for len(x) > 0 {
		n := min(len(x), cap(c.buf)/4)
		b := c.buf[:4*n]
		if _, err := io.ReadFull(r, b); err != nil {
			return err
		}
		for i := range x[:n] {
			x[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
		}
		x = x[n:]
	}
	return nil
}

// writeRow writes one key or value row at precision p.
func (c *stateCodec) writeRow(w io.Writer, p qwen35.KVPrecision, x []float32) error {
	switch p {
	case qwen35.KVFloat32:
		return c.writeF32(w, x)
	case qwen35.KVFloat16:
		b := c.buf[:2*len(x)]
		for i, v := range x {
			// The row was decoded from halves, so this is exact.
			binary.LittleEndian.PutUint16(b[2*i:], float16.Fromfloat32(v).Bits())
		}
		_, err := w.Write(b)
		return err
	case qwen35.KVInt8:
		// The row was decoded from codes and scales; quantizing it again yields them
		// back (the scale absmax/127 of a decoded block is the stored one).
		quantizeRow(c.k8[:len(x)], c.scales, x, c.cfg.HeadDim)
		b := c.buf[:len(x)]
		for i, q := range c.k8[:len(x)] {
			b[i] = byte(q)
		}
		if _, err := w.Write(b); err != nil {
			return err
		}
		return c.writeF32(w, c.scales)
	case qwen35.KVQ4:
		// As for int8: the decoded row quantizes back to its codes and scales (the
		// block's largest magnitude is −8·scale, code 0, and every other value an
		// integer multiple of the scale).
		quantizeRowQ4(c.q4, c.q4s, x, c.cfg.HeadDim)
		if _, err := w.Write(c.q4); err != nil {
			return err
		}
		b := c.buf[:2*len(c.q4s)]
		for i, s := range c.q4s {
			binary.LittleEndian.PutUint16(b[2*i:], s)
		}
		_, err := w.Write(b)
		return err
	}
	return fmt.Errorf("unknown KV precision %v", p)
}

// readRow reads one key or value row at precision p into x.
func (c *stateCodec) readRow(r io.Reader, p qwen35.KVPrecision, x []float32) error {
	switch p {
	case qwen35.KVFloat32:
		return c.readF32(r, x)
	case qwen35.KVFloat16:
		b := c.buf[:2*len(x)]
		if _, err := io.ReadFull(r, b); err != nil {
			return err
		}
		for i := range x {
			x[i] = float16.Frombits(binary.LittleEndian.Uint16(b[2*i:])).Float32()
		}
		return nil
	case qwen35.KVInt8:
		b := c.buf[:len(x)]
		if _, err := io.ReadFull(r, b); err != nil {
			return err
		}
		for i := range x {
			c.k8[i] = int8(b[i])
		}
		if err := c.readF32(r, c.scales); err != nil {
			return err
		}
		d := c.cfg.HeadDim
		per := (d + kvBlock - 1) / kvBlock
		for i := range x {
			h, j := i/d, i%d
			s := c.scales[h*per+j/kvBlock]
			if c.k8[i] == -128 || math.IsNaN(float64(s)) || math.IsInf(float64(s), 0) || s < 0 {
				return errors.New("invalid int8 KV block")
			}
			x[i] = float32(c.k8[i]) * s
		}
		return nil
	case qwen35.KVQ4:
		if _, err := io.ReadFull(r, c.q4); err != nil {
			return err
		}
		b := c.buf[:2*len(c.q4s)]
		if _, err := io.ReadFull(r, b); err != nil {
			return err
		}
		for i := range c.q4s {
			c.q4s[i] = binary.LittleEndian.Uint16(b[2*i:])
			if c.q4s[i]&0x7c00 == 0x7c00 {
				return errors.New("invalid q4 KV block scale (Inf or NaN)")
			}
		}
		d := c.cfg.HeadDim
		per := (d + kvBlock - 1) / kvBlock
		for i := range x {
			h, j := i/d, i%d
			blk := h*per + j/kvBlock
			k := j % kvBlock
			code := c.q4[16*blk+k%16]
			if k >= 16 {
				code >>= 4
			}
			x[i] = float32(int(code&15)-8) * float16.Frombits(c.q4s[blk]).Float32()
		}
		return nil
	}
	return fmt.Errorf("unknown KV precision %v", p)
}

// quantizeRowQ4 is the q4 KV cache's quantizer (qwen35's): per block of 32 values of each
// head, the value m of largest magnitude gives the scale, the half nearest m/−8, and each
// value the code round(x/scale) + 8 within [0, 15].
func quantizeRowQ4(codes []byte, scales []uint16, src []float32, headDim int) {
	per := (headDim + kvBlock - 1) / kvBlock
	for h := 0; h < len(src)/headDim; h++ {
		for b := 0; b < per; b++ {
			lo, hi := h*headDim+b*kvBlock, h*headDim+min((b+1)*kvBlock, headDim)
			var m float32
			for _, x := range src[lo:hi] {
				if math.Abs(float64(x)) > math.Abs(float64(m)) {
					m = x
				}
			}
			half := float16.Fromfloat32(m / -8)
			d := half.Float32()
			scales[h*per+b] = half.Bits()
			var q [kvBlock]byte
			for j := range q {
				q[j] = 8
				if i := lo + j; i < hi && d != 0 {
					q[j] = byte(max(0, min(15, math.Round(float64(src[i]/d))+8)))
				}
			}
			out := codes[16*(h*per+b) : 16*(h*per+b)+16]
			for j := range out {
				out[j] = q[j] | q[j+16]<<4
			}
		}
	}
}

// quantizeRow is the int8 KV cache's quantizer (qwen35's): blocks of 32 values of each
// head, scale absmax/127.
func quantizeRow(dst []int8, scales []float32, src []float32, headDim int) {
	per := (headDim + kvBlock - 1) / kvBlock
	for h := 0; h < len(src)/headDim; h++ {
		for b := 0; b < per; b++ {
			lo, hi := h*headDim+b*kvBlock, h*headDim+min((b+1)*kvBlock, headDim)
			var amax float32
			for _, x := range src[lo:hi] {
				amax = max(amax, float32(math.Abs(float64(x))))
			}
			scales[h*per+b] = amax / 127
			if amax == 0 {
				clear(dst[lo:hi])
				continue
			}
			inv := 127 / amax
			for i := lo; i < hi; i++ {
				q := math.Round(float64(src[i] * inv))
				dst[i] = int8(max(-127, min(127, q)))
			}
		}
	}
}

// save writes the state encoding of a state of length tokens with per-layer GDN states
// and KV caches.
func (c *stateCodec) save(w io.Writer, length int, gdn []*qwen35.GDNState, kv []*qwen35.KVCache) error {
	var hdr [4]byte
	binary.LittleEndian.PutUint32(hdr[:], uint32(length))
	if _, err := w.Write(hdr[:]); err != nil {
		return err
	}
	for i := 0; i < c.cfg.Layers; i++ {
		if kv[i] != nil {
			cache := kv[i]
			var hdr [5]byte
			hdr[0] = byte(cache.Precision())
			binary.LittleEndian.PutUint32(hdr[1:], uint32(cache.Len()))
			if _, err := w.Write(hdr[:]); err != nil {
				return err
			}
			for pos := 0; pos < cache.Len(); pos++ {
				cache.Row(pos, c.k, c.v)
				if err := c.writeRow(w, cache.Precision(), c.k); err != nil {
					return err
				}
				if err := c.writeRow(w, cache.Precision(), c.v); err != nil {
					return err
				}
			}
			continue
		}
		if err := c.writeF32(w, gdn[i].Conv); err != nil {
			return err
		}
		if err := c.writeF32(w, gdn[i].S); err != nil {
			return err
		}
	}
	return nil
}

// load reads the state encoding into per-layer states of a context of maxLen tokens.
// Each attention layer's positions are appended at the cache's own precision (the same
// values when it is the snapshot's, a conversion otherwise). It returns the number of
// tokens. Nothing is allocated beyond what the context size allows.
func (c *stateCodec) load(r io.Reader, maxLen int, gdn []*qwen35.GDNState, kv []*qwen35.KVCache) (int, error) {
	var lh [4]byte
	if _, err := io.ReadFull(r, lh[:]); err != nil {
		return 0, err
	}
	length := int(binary.LittleEndian.Uint32(lh[:]))
	if length > maxLen {
		return 0, fmt.Errorf("%w: the state holds %d tokens, the context %d", ErrContextFull, length, maxLen)
	}
	for i := 0; i < c.cfg.Layers; i++ {
		if kv[i] == nil {
			if err := c.readF32(r, gdn[i].Conv); err != nil {
				return 0, fmt.Errorf("layer %d: %w", i, err)
			}
			if err := c.readF32(r, gdn[i].S); err != nil {
				return 0, fmt.Errorf("layer %d: %w", i, err)
			}
			continue
		}
		cache := kv[i]
		cache.Reset()
		var hdr [5]byte
		if _, err := io.ReadFull(r, hdr[:]); err != nil {
			return 0, fmt.Errorf("layer %d: %w", i, err)
		}
		p := qwen35.KVPrecision(hdr[0])
		if p > qwen35.KVQ4 {
			return 0, fmt.Errorf("layer %d: unknown KV precision %d", i, hdr[0])
		}
		n := int(binary.LittleEndian.Uint32(hdr[1:]))
		if n > cache.MaxLen() {
			return 0, fmt.Errorf("layer %d: %w: %d positions, the context holds %d", i, ErrContextFull, n, cache.MaxLen())
		}
		if n != length {
			return 0, fmt.Errorf("layer %d holds %d positions, the state %d tokens", i, n, length)
		}
		for pos := 0; pos < n; pos++ {
			if err := c.readRow(r, p, c.k); err != nil {
				return 0, fmt.Errorf("layer %d position %d: %w", i, pos, err)
			}
			if err := c.readRow(r, p, c.v); err != nil {
				return 0, fmt.Errorf("layer %d position %d: %w", i, pos, err)
			}
			if err := cache.Append(c.k, c.v); err != nil {
				return 0, fmt.Errorf("layer %d: %w", i, err)
			}
		}
	}
	return length, nil
}
