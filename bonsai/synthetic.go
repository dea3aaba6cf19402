package bonsai

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
	"math/rand/v2"
)

// FillSynthetic replaces the session's contents with n positions of synthetic state —
// random keys and values in every attention layer's cache, random GDN states — without
// running the model, so that the next Step runs at position n. A decode step's cost does
// not depend on what the state holds, so this measures a long context's decode speed in
// the seconds it takes to write the state instead of the minutes or hours of a prefill;
// the logits it produces mean nothing. The state goes through the snapshot format (see
// Session.Save), so every backend accepts it. The tokens are all 0.
func (s *Session) FillSynthetic(n int, seed uint64) error {
	if n < 0 || n > s.m.opts.ctxSize {
		return fmt.Errorf("bonsai: FillSynthetic(%d): the context holds %d tokens", n, s.m.opts.ctxSize)
	}
	pr, pw := io.Pipe()
	go func() { pw.CloseWithError(writeSyntheticSnapshot(pw, s.m, n, seed)) }()
	err := s.Load(pr)
	pr.CloseWithError(io.ErrClosedPipe) // stops the writer if Load gave up early
	return err
}

// writeSyntheticSnapshot writes a snapshot of n tokens of random state at the model's
// KV precision.
func writeSyntheticSnapshot(w io.Writer, m *Model, n int, seed uint64) error {
	c := &m.weights.Config
	bw := bufio.NewWriterSize(w, 1<<20)
	crc := crc32.New(castagnoli)
	out := io.MultiWriter(bw, crc)
	var b []byte
	b = append(b, snapshotMagic...)
	b = binary.LittleEndian.AppendUint32(b, snapshotVersion)
	fp := m.Fingerprint()
	b = append(b, fp[:]...)
	b = binary.LittleEndian.AppendUint32(b, uint32(c.Vocab))
	b = binary.LittleEndian.AppendUint32(b, uint32(n))
	b = append(b, make([]byte, 4*n)...) // tokens: all 0
	b = append(b, 0)                    // no logits
	b = binary.LittleEndian.AppendUint32(b, uint32(n))
	if _, err := out.Write(b); err != nil {
		return err
	}
	rng := rand.New(rand.NewPCG(seed, 1))
	codec := newStateCodec(c)
	random := func(x []float32, scale float64) {
		for i := range x {
			x[i] = float32(rng.NormFloat64() * scale)
		}
	}
	// A few distinct rows, encoded once, repeated: writing is not what is measured.
	const variants = 64
	var rows [variants][]byte
	p := m.opts.kv
	for i := range rows {
		random(codec.k, 1)
		var enc rowBuffer
		if err := codec.writeRow(&enc, p, codec.k); err != nil {
			return err
		}
		rows[i] = enc
	}
	conv := make([]float32, (c.ConvKernel-1)*c.QKVWidth())
	state := make([]float32, c.VHeads*c.StateSize*c.StateSize)
	for i := 0; i < c.Layers; i++ {
		if !c.IsAttention(i) {
			random(conv, 1)
			random(state, 0.02)
			if err := codec.writeF32(out, conv); err != nil {
				return err
			}
			if err := codec.writeF32(out, state); err != nil {
				return err
			}
			continue
		}
		var hdr [5]byte
		hdr[0] = byte(p)
		binary.LittleEndian.PutUint32(hdr[1:], uint32(n))
		if _, err := out.Write(hdr[:]); err != nil {
			return err
		}
		for pos := 0; pos < n; pos++ {
			if _, err := out.Write(rows[rng.IntN(variants)]); err != nil {
				return err
			}
			if _, err := out.Write(rows[rng.IntN(variants)]); err != nil {
				return err
			}
		}
	}
	if _, err := out.Write([]byte{0}); err != nil { // no checkpoint
		return err
	}
	if err := binary.Write(bw, binary.LittleEndian, crc.Sum32()); err != nil {
		return err
	}
	return bw.Flush()
}

// rowBuffer collects one encoded row.
type rowBuffer []byte

func (r *rowBuffer) Write(p []byte) (int, error) {
	*r = append(*r, p...)
	return len(p), nil
}
