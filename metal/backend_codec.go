package metal

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"

	"github.com/bonsai-go/sdk/bonsai"
	"github.com/bonsai-go/sdk/metal/internal/gpu"
	"github.com/bonsai-go/sdk/qwen35"
	"github.com/x448/float16"
)

// The snapshot encoding every backend shares (bonsai/statecodec.go documents it): the
// token count (uint32), then per layer either the GDN conv and recurrent states as
// float32, or the KV precision (one byte), the number of positions (uint32) and each
// position's key row and value row (KVHeads × HeadDim, head-major) at that precision:
// float32, IEEE half, or int8 codes followed by one float32 scale per block of 32
// values of a head. The device layouts of the GDN states are the CPU's, so they are
// written as they lie; the KV caches are gathered from [head][position][dim].

// kvBlock is the int8 KV encoding's block (values per scale).
const kvBlock = 32

type codec struct {
	st  *state
	c   *qwen35.Config
	buf []byte
}

func newCodec(st *state) *codec { return &codec{st: st, c: st.e.cfg} }

func (k *codec) grow(n int) []byte {
	if cap(k.buf) < n {
		k.buf = make([]byte, n)
	}
	return k.buf[:n]
}

func (k *codec) save(w io.Writer) error {
	st, c := k.st, k.c
	var hdr [5]byte
	binary.LittleEndian.PutUint32(hdr[:4], uint32(st.pos))
	if _, err := w.Write(hdr[:4]); err != nil {
		return err
	}
	for i := 0; i < c.Layers; i++ {
		if st.kc[i] == nil {
			if err := writeChunked(w, st.conv[i].bytes(4*(c.ConvKernel-1)*c.QKVWidth())); err != nil {
				return err
			}
			if err := writeChunked(w, st.ssm[i].bytes(4*c.VHeads*c.StateSize*c.StateSize)); err != nil {
				return err
			}
			continue
		}
		hdr[0] = byte(st.opt.KVCache)
		binary.LittleEndian.PutUint32(hdr[1:], uint32(st.pos))
		if _, err := w.Write(hdr[:]); err != nil {
			return err
		}
		rb := k.rowBytes()
		b := k.grow(2 * rb)
		for p := 0; p < st.pos; p++ {
			k.gather(b[:rb], st.kc[i], st.ks[i], p)
			k.gather(b[rb:], st.vc[i], st.vs[i], p)
			if _, err := w.Write(b); err != nil {
				return err
			}
		}
	}
	return nil
}

// rowBytes is the encoded size of one key or value row at the cache's precision.
func (k *codec) rowBytes() int {
	c, st := k.c, k.st
	n := c.KVHeads * c.HeadDim * st.kvElem
	if st.kvElem == 1 {
		n += 4 * c.KVHeads * c.HeadDim / kvBlock
	}
	return n
}

// gather writes position p of a cache (values or codes, then an int8 cache's scales)
// into b in the encoding's head-major row order.
func (k *codec) gather(b []byte, vals, scales gpu.Buffer, p int) {
	c, st := k.c, k.st
	hb := c.HeadDim * st.kvElem
	m := vals.Contents()
	for g := 0; g < c.KVHeads; g++ {
		src := (g*st.opt.ContextSize + p) * hb
		copy(b[g*hb:(g+1)*hb], m[src:src+hb])
	}
	if scales == nil {
		return
	}
	sb := 4 * c.HeadDim / kvBlock
	m, b = scales.Contents(), b[c.KVHeads*hb:]
	for g := 0; g < c.KVHeads; g++ {
		src := (g*st.opt.ContextSize + p) * sb
		copy(b[g*sb:(g+1)*sb], m[src:src+sb])
	}
}

// scatter is gather's inverse.
func (k *codec) scatter(b []byte, vals, scales gpu.Buffer, p int) {
	c, st := k.c, k.st
	hb := c.HeadDim * st.kvElem
	m := vals.Contents()
	for g := 0; g < c.KVHeads; g++ {
		dst := (g*st.opt.ContextSize + p) * hb
		copy(m[dst:dst+hb], b[g*hb:(g+1)*hb])
	}
	if scales == nil {
		return
	}
	sb := 4 * c.HeadDim / kvBlock
	m, b = scales.Contents(), b[c.KVHeads*hb:]
	for g := 0; g < c.KVHeads; g++ {
		dst := (g*st.opt.ContextSize + p) * sb
		copy(m[dst:dst+sb], b[g*sb:(g+1)*sb])
	}
}

// writeChunked writes b in pieces of at most 1 MiB (a device buffer's memory handed to
// a writer in one piece could be large).
func writeChunked(w io.Writer, b []byte) error {
	for len(b) > 0 {
		n := min(len(b), 1<<20)
		if _, err := w.Write(b[:n]); err != nil {
			return err
		}
		b = b[n:]
	}
	return nil
}

// bytes returns n bytes of the buffer from the reference's offset.
func (r ref) bytes(n int) []byte { return r.buf.Contents()[r.off : r.off+n] }

func (k *codec) load(r io.Reader) (int, error) {
	st, c := k.st, k.c
	var lh [4]byte
	if _, err := io.ReadFull(r, lh[:]); err != nil {
		return 0, err
	}
	length := int(binary.LittleEndian.Uint32(lh[:]))
	if length > st.opt.ContextSize {
		return 0, fmt.Errorf("%w: the state holds %d tokens, the context %d", bonsai.ErrContextFull, length, st.opt.ContextSize)
	}
	row := c.KVHeads * c.HeadDim
	kf, vf := make([]float32, row), make([]float32, row)
	for i := 0; i < c.Layers; i++ {
		if st.kc[i] == nil {
			if _, err := io.ReadFull(r, st.conv[i].bytes(4*(c.ConvKernel-1)*c.QKVWidth())); err != nil {
				return 0, fmt.Errorf("layer %d: %w", i, err)
			}
			if _, err := io.ReadFull(r, st.ssm[i].bytes(4*c.VHeads*c.StateSize*c.StateSize)); err != nil {
				return 0, fmt.Errorf("layer %d: %w", i, err)
			}
			continue
		}
		var hdr [5]byte
		if _, err := io.ReadFull(r, hdr[:]); err != nil {
			return 0, fmt.Errorf("layer %d: %w", i, err)
		}
		p := qwen35.KVPrecision(hdr[0])
		if p == qwen35.KVQ4 {
			return 0, fmt.Errorf("layer %d: a %v KV cache, which the Metal backend does not hold (load the snapshot on the CPU backend)", i, p)
		}
		if p > qwen35.KVInt8 {
			return 0, fmt.Errorf("layer %d: unknown KV precision %d", i, hdr[0])
		}
		n := int(binary.LittleEndian.Uint32(hdr[1:]))
		if n > st.opt.ContextSize {
			return 0, fmt.Errorf("layer %d: %w: %d positions, the context holds %d", i, bonsai.ErrContextFull, n, st.opt.ContextSize)
		}
		if n != length {
			return 0, fmt.Errorf("layer %d holds %d positions, the state %d tokens", i, n, length)
		}
		same := p == st.opt.KVCache
		for pos := 0; pos < n; pos++ {
			if same {
				// The snapshot's bytes are the cache's: scatter them as they are.
				rb := k.rowBytes()
				b := k.grow(2 * rb)
				if _, err := io.ReadFull(r, b); err != nil {
					return 0, fmt.Errorf("layer %d position %d: %w", i, pos, err)
				}
				if p == qwen35.KVInt8 {
					if err := k.checkInt8(b[:rb]); err != nil {
						return 0, fmt.Errorf("layer %d position %d: %w", i, pos, err)
					}
					if err := k.checkInt8(b[rb:]); err != nil {
						return 0, fmt.Errorf("layer %d position %d: %w", i, pos, err)
					}
				}
				k.scatter(b[:rb], st.kc[i], st.ks[i], pos)
				k.scatter(b[rb:], st.vc[i], st.vs[i], pos)
				continue
			}
			if err := k.readRow(r, p, kf); err != nil {
				return 0, fmt.Errorf("layer %d position %d: %w", i, pos, err)
			}
			if err := k.readRow(r, p, vf); err != nil {
				return 0, fmt.Errorf("layer %d position %d: %w", i, pos, err)
			}
			k.store(i, pos, kf, vf)
		}
	}
	return length, nil
}

// readRow reads one key or value row at precision p into x.
func (k *codec) readRow(r io.Reader, p qwen35.KVPrecision, x []float32) error {
	switch p {
	case qwen35.KVFloat32:
		b := k.grow(4 * len(x))
		if _, err := io.ReadFull(r, b); err != nil {
			return err
		}
		for i := range x {
			x[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
		}
	case qwen35.KVFloat16:
		b := k.grow(2 * len(x))
		if _, err := io.ReadFull(r, b); err != nil {
			return err
		}
		for i := range x {
			x[i] = float16.Frombits(binary.LittleEndian.Uint16(b[2*i:])).Float32()
		}
	case qwen35.KVInt8:
		d := k.c.HeadDim
		per := (d + kvBlock - 1) / kvBlock
		nScales := k.c.KVHeads * per
		b := k.grow(len(x) + 4*nScales)
		if _, err := io.ReadFull(r, b); err != nil {
			return err
		}
		codes, sc := b[:len(x)], b[len(x):]
		for i := range x {
			h, j := i/d, i%d
			s := math.Float32frombits(binary.LittleEndian.Uint32(sc[4*(h*per+j/kvBlock):]))
			q := int8(codes[i])
			if q == -128 || math.IsNaN(float64(s)) || math.IsInf(float64(s), 0) || s < 0 {
				return errors.New("invalid int8 KV block")
			}
			x[i] = float32(q) * s
		}
	}
	return nil
}

// checkInt8 validates an int8 row as bonsai's codec does: no code −128, scales finite
// and not negative.
func (k *codec) checkInt8(b []byte) error {
	n := k.c.KVHeads * k.c.HeadDim
	for _, q := range b[:n] {
		if int8(q) == -128 {
			return errors.New("invalid int8 KV block")
		}
	}
	for i := n; i+4 <= len(b); i += 4 {
		s := math.Float32frombits(binary.LittleEndian.Uint32(b[i:]))
		if math.IsNaN(float64(s)) || math.IsInf(float64(s), 0) || s < 0 {
			return errors.New("invalid int8 KV block")
		}
	}
	return nil
}

// store writes one position's key and value rows into layer i's cache at the cache's
// precision.
func (k *codec) store(i, pos int, kf, vf []float32) {
	st, c := k.st, k.c
	d := c.HeadDim
	if st.kvElem == 1 {
		rb := k.rowBytes()
		b := k.grow(rb)
		for _, x := range []struct {
			f            []float32
			vals, scales gpu.Buffer
		}{{kf, st.kc[i], st.ks[i]}, {vf, st.vc[i], st.vs[i]}} {
			n := c.KVHeads * d
			for blk := 0; blk < n/kvBlock; blk++ {
				s := quantize32(b[blk*kvBlock:(blk+1)*kvBlock], x.f[blk*kvBlock:(blk+1)*kvBlock])
				binary.LittleEndian.PutUint32(b[n+4*blk:], math.Float32bits(s))
			}
			k.scatter(b, x.vals, x.scales, pos)
		}
		return
	}
	kc, vc := st.kc[i].Contents(), st.vc[i].Contents()
	for g := 0; g < c.KVHeads; g++ {
		base := (g*st.opt.ContextSize + pos) * d
		for j := 0; j < d; j++ {
			kv, vv := kf[g*d+j], vf[g*d+j]
			if st.kvElem == 2 {
				binary.LittleEndian.PutUint16(kc[2*(base+j):], float16.Fromfloat32(kv).Bits())
				binary.LittleEndian.PutUint16(vc[2*(base+j):], float16.Fromfloat32(vv).Bits())
			} else {
				binary.LittleEndian.PutUint32(kc[4*(base+j):], math.Float32bits(kv))
				binary.LittleEndian.PutUint32(vc[4*(base+j):], math.Float32bits(vv))
			}
		}
	}
}

// quantize32 stores one block of 32 values as int8 codes (in dst, as bytes) and returns
// its scale: qwen35's KV quantiser, absmax/127 and round(x·127/absmax).
func quantize32(dst []byte, x []float32) float32 {
	var amax float32
	for _, v := range x {
		amax = max(amax, float32(math.Abs(float64(v))))
	}
	if amax == 0 {
		clear(dst[:len(x)])
		return 0
	}
	inv := 127 / amax
	for i, v := range x {
		q := math.Round(float64(v * inv))
		dst[i] = byte(int8(max(-127, min(127, q))))
	}
	return amax / 127
}
