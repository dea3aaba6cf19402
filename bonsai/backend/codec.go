package backend

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
)

// The state encoding, which WriteState writes and ReadState reads for every backend, so
// that a snapshot moves between backends. All numbers are little-endian. First the number
// of tokens the state holds (uint32), then layer by layer, in order:
//
//   - a recurrent layer: each of its arrays (Layer.Recurrent) as float32, in order;
//   - an attention layer: the KV precision (one byte, a KVPrecision), the number of
//     positions n (uint32), then n positions, each its key row and its value row
//     encoded at that precision (KVPrecision.RowBytes).
//
// Every attention layer holds as many positions as the state holds tokens.

// ErrSnapshot is wrapped by ReadState's errors about the encoding itself (as opposed to
// a reader's error or a state too small for it).
var ErrSnapshot = errors.New("invalid state snapshot")

// WriteState writes st in the state encoding.
func WriteState(w io.Writer, st State) error {
	var hdr [5]byte
	binary.LittleEndian.PutUint32(hdr[:4], uint32(st.Len()))
	if _, err := w.Write(hdr[:4]); err != nil {
		return err
	}
	buf := make([]byte, 1<<16)
	for i := range st.Layers() {
		l := st.Layer(i)
		if l.KV == nil {
			for _, a := range l.Recurrent {
				if err := writeFloats(w, buf, a); err != nil {
					return err
				}
			}
			continue
		}
		kv := l.KV
		hdr[0] = byte(kv.Precision())
		binary.LittleEndian.PutUint32(hdr[1:], uint32(kv.Len()))
		if _, err := w.Write(hdr[:]); err != nil {
			return err
		}
		rb := kv.Precision().RowBytes(kv.Heads(), kv.HeadDim())
		if len(buf) < 2*rb {
			buf = make([]byte, 2*rb)
		}
		row := buf[:2*rb]
		for pos := range kv.Len() {
			kv.ReadRow(pos, row[:rb], row[rb:])
			if _, err := w.Write(row); err != nil {
				return err
			}
		}
	}
	return nil
}

// ReadState replaces st's contents with a snapshot WriteState wrote for the same model.
// Each attention layer's positions are stored at the state's own precision: the same
// bytes when it is the snapshot's, converted otherwise. It allocates nothing beyond a
// row's scratch whatever the encoding claims, and on error leaves the state empty.
func ReadState(r io.Reader, st State) error {
	st.Reset()
	if err := readState(r, st); err != nil {
		st.Reset()
		return err
	}
	return nil
}

func readState(r io.Reader, st State) error {
	var lh [4]byte
	if _, err := io.ReadFull(r, lh[:]); err != nil {
		return snapshotErr("the token count", err)
	}
	length := int(binary.LittleEndian.Uint32(lh[:]))
	buf := make([]byte, 1<<16)
	for i := range st.Layers() {
		l := st.Layer(i)
		if l.KV == nil {
			for j, a := range l.Recurrent {
				if err := readFloats(r, buf, a); err != nil {
					return snapshotErr(fmt.Sprintf("layer %d array %d", i, j), err)
				}
			}
			continue
		}
		kv := l.KV
		var hdr [5]byte
		if _, err := io.ReadFull(r, hdr[:]); err != nil {
			return snapshotErr(fmt.Sprintf("layer %d", i), err)
		}
		p := KVPrecision(hdr[0])
		if !p.Valid() {
			return fmt.Errorf("%w: layer %d: unknown KV precision %d", ErrSnapshot, i, hdr[0])
		}
		n := int(binary.LittleEndian.Uint32(hdr[1:]))
		if n != length {
			return fmt.Errorf("%w: layer %d holds %d positions, the state %d tokens", ErrSnapshot, i, n, length)
		}
		if n > kv.MaxLen() {
			return fmt.Errorf("layer %d: %w: the snapshot holds %d positions, the state's context %d", i, ErrContextFull, n, kv.MaxLen())
		}
		heads, dim := kv.Heads(), kv.HeadDim()
		in := p.RowBytes(heads, dim)
		out := kv.Precision().RowBytes(heads, dim)
		var conv *KVRowCodec
		var k, v []float32
		if p != kv.Precision() {
			conv = NewKVRowCodec(heads, dim)
			k, v = make([]float32, heads*dim), make([]float32, heads*dim)
		}
		if len(buf) < 2*(in+out) {
			buf = make([]byte, 2*(in+out))
		}
		row, enc := buf[:2*in], buf[2*in:2*(in+out)]
		for pos := range n {
			if _, err := io.ReadFull(r, row); err != nil {
				return snapshotErr(fmt.Sprintf("layer %d position %d", i, pos), err)
			}
			kr, vr := row[:in], row[in:]
			if conv != nil {
				if err := conv.Decode(p, k, kr); err != nil {
					return fmt.Errorf("%w: layer %d position %d key: %w", ErrSnapshot, i, pos, err)
				}
				if err := conv.Decode(p, v, vr); err != nil {
					return fmt.Errorf("%w: layer %d position %d value: %w", ErrSnapshot, i, pos, err)
				}
				conv.Encode(kv.Precision(), enc[:out], k)
				conv.Encode(kv.Precision(), enc[out:], v)
				kr, vr = enc[:out], enc[out:]
			} else if err := checkRow(p, kr, heads, dim); err != nil {
				return fmt.Errorf("%w: layer %d position %d key: %w", ErrSnapshot, i, pos, err)
			} else if err := checkRow(p, vr, heads, dim); err != nil {
				return fmt.Errorf("%w: layer %d position %d value: %w", ErrSnapshot, i, pos, err)
			}
			if err := kv.AppendRow(kr, vr); err != nil {
				return fmt.Errorf("layer %d: %w", i, err)
			}
		}
	}
	return st.SetLen(length)
}

// checkRow refuses a row no quantiser writes, so that a stored row is one the cache could
// have produced.
func checkRow(p KVPrecision, row []byte, heads, dim int) error {
	n, nb := heads*dim, heads*kvBlocks(dim)
	switch p {
	case KVInt8:
		for j, c := range row[:n] {
			if int8(c) == -128 {
				return fmt.Errorf("%w: int8 code −128 at value %d", ErrKVRow, j)
			}
		}
		for b := range nb {
			s := math.Float32frombits(binary.LittleEndian.Uint32(row[n+4*b:]))
			if s < 0 || math.IsNaN(float64(s)) || math.IsInf(float64(s), 0) {
				return fmt.Errorf("%w: int8 scale %v of block %d", ErrKVRow, s, b)
			}
		}
	case KVQ4:
		for b := range nb {
			if s := binary.LittleEndian.Uint16(row[16*nb+2*b:]); s&0x7c00 == 0x7c00 {
				return fmt.Errorf("%w: q4 scale of block %d is not finite", ErrKVRow, b)
			}
		}
	}
	return nil
}

func snapshotErr(what string, err error) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return fmt.Errorf("%w: %s: truncated", ErrSnapshot, what)
	}
	return fmt.Errorf("%s: %w", what, err)
}

// CopyState makes dst a copy of src, two states of one model (on one backend or two),
// through their Layer views: the recurrent arrays copied, the KV rows moved encoded (and
// converted when the precisions differ). A StateCopier's CopyFrom is faster where it
// applies; this works for any pair.
func CopyState(dst, src State) error {
	if dst.Layers() != src.Layers() {
		return fmt.Errorf("states of %d and %d layers", dst.Layers(), src.Layers())
	}
	dst.Reset()
	var buf []byte
	for i := range src.Layers() {
		d, s := dst.Layer(i), src.Layer(i)
		if (d.KV == nil) != (s.KV == nil) || len(d.Recurrent) != len(s.Recurrent) {
			dst.Reset()
			return fmt.Errorf("layer %d: states of different models", i)
		}
		if s.KV == nil {
			for j := range s.Recurrent {
				if len(d.Recurrent[j]) != len(s.Recurrent[j]) {
					dst.Reset()
					return fmt.Errorf("layer %d: states of different models", i)
				}
				copy(d.Recurrent[j], s.Recurrent[j])
			}
			continue
		}
		sk, dk := s.KV, d.KV
		if sk.Heads() != dk.Heads() || sk.HeadDim() != dk.HeadDim() {
			dst.Reset()
			return fmt.Errorf("layer %d: states of different models", i)
		}
		if sk.Len() > dk.MaxLen() {
			dst.Reset()
			return fmt.Errorf("layer %d: %w: %d positions, the destination's context %d", i, ErrContextFull, sk.Len(), dk.MaxLen())
		}
		heads, dim := sk.Heads(), sk.HeadDim()
		in, out := sk.Precision().RowBytes(heads, dim), dk.Precision().RowBytes(heads, dim)
		if len(buf) < 2*(in+out) {
			buf = make([]byte, 2*(in+out))
		}
		var conv *KVRowCodec
		var k, v []float32
		if sk.Precision() != dk.Precision() {
			conv = NewKVRowCodec(heads, dim)
			k, v = make([]float32, heads*dim), make([]float32, heads*dim)
		}
		row, enc := buf[:2*in], buf[2*in:2*(in+out)]
		for pos := range sk.Len() {
			sk.ReadRow(pos, row[:in], row[in:])
			kr, vr := row[:in], row[in:]
			if conv != nil {
				if err := conv.Decode(sk.Precision(), k, kr); err != nil {
					dst.Reset()
					return fmt.Errorf("layer %d position %d: %w", i, pos, err)
				}
				if err := conv.Decode(sk.Precision(), v, vr); err != nil {
					dst.Reset()
					return fmt.Errorf("layer %d position %d: %w", i, pos, err)
				}
				conv.Encode(dk.Precision(), enc[:out], k)
				conv.Encode(dk.Precision(), enc[out:], v)
				kr, vr = enc[:out], enc[out:]
			}
			if err := dk.AppendRow(kr, vr); err != nil {
				dst.Reset()
				return fmt.Errorf("layer %d: %w", i, err)
			}
		}
	}
	if err := dst.SetLen(src.Len()); err != nil {
		dst.Reset()
		return err
	}
	return nil
}

func writeFloats(w io.Writer, buf []byte, x []float32) error {
	for len(x) > 0 {
		n := min(len(x), len(buf)/4)
		b := buf[:4*n]
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

func readFloats(r io.Reader, buf []byte, x []float32) error {
	for len(x) > 0 {
		n := min(len(x), len(buf)/4)
		b := buf[:4*n]
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
