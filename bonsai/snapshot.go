package bonsai

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"hash/crc32"
	"io"
	"math"
	"strings"

	"github.com/bonsai-go/sdk/bonsai/backend"
)

// A session snapshot is a versioned binary file, little-endian throughout:
//
//	magic        8 bytes  "BONSAISN"
//	version      uint32   1
//	fingerprint  32 bytes the model's Fingerprint
//	vocab        uint32   the logits' length
//	sequence     the session's: its tokens, logits and state (below)
//	checkpoint   uint8 (0 or 1), then, if 1, the sequence of the chat checkpoint
//	checksum     uint32   CRC-32C of everything before it
//
// where a sequence is
//
//	tokens       uint32 n, then n × int32
//	logits       uint8 (0 or 1), then, if 1, vocab × float32: the last token's logits
//	state        the seam's state encoding (backend.WriteState), of n tokens
//
// The checkpoint (see Generate) is kept so that a loaded chat session resumes the next
// turn as the saved one would have; it doubles the size of a chat session's snapshot.
//
// Everything is checked against the loading model before it is used: the fingerprint,
// the vocabulary, every token id, the token count against the context size (which
// bounds every allocation), and the state's length against the token count. The checksum
// catches damage the structure does not show.

const (
	snapshotMagic   = "BONSAISN"
	snapshotVersion = 1
)

// ErrSnapshot is wrapped by the errors of a snapshot that cannot be loaded.
var ErrSnapshot = errors.New("bonsai: bad session snapshot")

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Save writes a snapshot of the session: its tokens, the logits of the last one, the
// backend state and the chat checkpoint, which LoadSession (or Load) turns back into a
// session that continues exactly as this one would.
func (s *Session) Save(w io.Writer) error {
	unlock, err := s.lockOpen()
	if err != nil {
		return err
	}
	defer unlock()
	bw := bufio.NewWriterSize(w, 1<<16)
	crc := crc32.New(castagnoli)
	out := io.MultiWriter(bw, crc)
	var b []byte
	b = append(b, snapshotMagic...)
	b = binary.LittleEndian.AppendUint32(b, snapshotVersion)
	fp := s.m.Fingerprint()
	b = append(b, fp[:]...)
	b = binary.LittleEndian.AppendUint32(b, uint32(len(s.logits)))
	if _, err := out.Write(b); err != nil {
		return fmt.Errorf("bonsai: save: %w", err)
	}
	if err := writeSequence(out, s.tokens, s.hasLogits, s.logits, s.st); err != nil {
		return err
	}
	flag := []byte{0}
	if s.ckpt != nil {
		flag[0] = 1
	}
	if _, err := out.Write(flag); err != nil {
		return fmt.Errorf("bonsai: save: %w", err)
	}
	if c := s.ckpt; c != nil {
		if err := writeSequence(out, c.tokens, c.hasLogits, c.logits, c.st); err != nil {
			return err
		}
	}
	if err := binary.Write(bw, binary.LittleEndian, crc.Sum32()); err != nil {
		return fmt.Errorf("bonsai: save: %w", err)
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("bonsai: save: %w", err)
	}
	return nil
}

// writeSequence writes the tokens, the logits and the state of one sequence.
func writeSequence(w io.Writer, tokens []int32, hasLogits bool, logits []float32, st backend.State) error {
	if len(tokens) != st.Len() {
		return fmt.Errorf("bonsai: save: the state holds %d tokens, the session knows of %d", st.Len(), len(tokens))
	}
	b := make([]byte, 0, 4+4*len(tokens)+1+4*len(logits))
	b = binary.LittleEndian.AppendUint32(b, uint32(len(tokens)))
	for _, t := range tokens {
		b = binary.LittleEndian.AppendUint32(b, uint32(t))
	}
	if hasLogits {
		b = append(b, 1)
		for _, v := range logits {
			b = binary.LittleEndian.AppendUint32(b, math.Float32bits(v))
		}
	} else {
		b = append(b, 0)
	}
	if _, err := w.Write(b); err != nil {
		return fmt.Errorf("bonsai: save: %w", err)
	}
	if err := backend.WriteState(w, st); err != nil {
		return fmt.Errorf("bonsai: save: %w", err)
	}
	return nil
}

// LoadSession reads a snapshot that Session.Save wrote for this model into a new
// session. A snapshot of another model is refused (its fingerprint differs), as is a
// damaged or truncated one.
func (m *Model) LoadSession(r io.Reader) (*Session, error) {
	s, err := m.NewSession()
	if err != nil {
		return nil, err
	}
	if err := s.Load(r); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// Load replaces the session's contents with a snapshot (see LoadSession). On error the
// session is left empty.
func (s *Session) Load(r io.Reader) error {
	unlock, err := s.lockOpen()
	if err != nil {
		return err
	}
	defer unlock()
	s.dropCheckpoint()
	err = s.load(r)
	if err != nil {
		s.clear()
		switch {
		case errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF):
			err = fmt.Errorf("%w: truncated", ErrSnapshot)
		case !strings.HasPrefix(err.Error(), "bonsai: "): // the reader's own error
			err = fmt.Errorf("bonsai: load: %w", err)
		}
		return err
	}
	return nil
}

// crcReader checksums what it reads.
type crcReader struct {
	r   io.Reader
	crc hash.Hash32
}

func (c *crcReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.crc.Write(p[:n])
	return n, err
}

func (s *Session) load(r io.Reader) error {
	br := bufio.NewReaderSize(r, 1<<16)
	cr := &crcReader{r: br, crc: crc32.New(castagnoli)}
	var hdr [8 + 4 + 32 + 4]byte
	if _, err := io.ReadFull(cr, hdr[:]); err != nil {
		return err
	}
	if string(hdr[:8]) != snapshotMagic {
		return fmt.Errorf("%w: not a session snapshot (magic %q)", ErrSnapshot, hdr[:8])
	}
	if v := binary.LittleEndian.Uint32(hdr[8:]); v != snapshotVersion {
		return fmt.Errorf("%w: version %d, this SDK reads version %d", ErrSnapshot, v, snapshotVersion)
	}
	fp := s.m.Fingerprint()
	if !bytes.Equal(hdr[12:44], fp[:]) {
		return fmt.Errorf("%w: it was saved from another model (fingerprint %s…, this model's %s…)",
			ErrSnapshot, hex.EncodeToString(hdr[12:20]), hex.EncodeToString(fp[:8]))
	}
	vocab := s.m.weights.Vocab()
	if v := binary.LittleEndian.Uint32(hdr[44:]); int64(v) != int64(vocab) {
		return fmt.Errorf("%w: vocabulary of %d, the model's %d", ErrSnapshot, v, vocab)
	}
	tokens, hasLogits, err := s.readSequence(cr, s.tokens[:0], s.logits, s.st)
	s.tokens, s.hasLogits = tokens, hasLogits
	if err != nil {
		return err
	}
	var b [4]byte
	if _, err := io.ReadFull(cr, b[:1]); err != nil {
		return err
	}
	switch b[0] {
	case 0:
	case 1:
		st, err := s.m.newState()
		if err != nil {
			return err
		}
		c := &checkpoint{st: st, logits: make([]float32, vocab)}
		s.ckpt = c // dropped on error
		if c.tokens, c.hasLogits, err = s.readSequence(cr, nil, c.logits, st); err != nil {
			return err
		}
	default:
		return fmt.Errorf("%w: checkpoint flag %d", ErrSnapshot, b[0])
	}
	want := cr.crc.Sum32()
	if _, err := io.ReadFull(br, b[:]); err != nil {
		return err
	}
	if got := binary.LittleEndian.Uint32(b[:]); got != want {
		return fmt.Errorf("%w: checksum mismatch (damaged)", ErrSnapshot)
	}
	return nil
}

// readSequence reads one sequence's tokens (appended to tokens), logits and state.
func (s *Session) readSequence(r io.Reader, tokens []int32, logits []float32, st backend.State) ([]int32, bool, error) {
	var b [4]byte
	if _, err := io.ReadFull(r, b[:]); err != nil {
		return tokens, false, err
	}
	n := int64(binary.LittleEndian.Uint32(b[:]))
	if ctx := int64(s.m.opts.ctxSize); n > ctx {
		return tokens, false, fmt.Errorf("%w: %w: it holds %d tokens, the context size is %d", ErrSnapshot, ErrContextFull, n, ctx)
	}
	vocab := len(logits)
	for i := int64(0); i < n; i++ {
		if _, err := io.ReadFull(r, b[:]); err != nil {
			return tokens, false, err
		}
		t := int32(binary.LittleEndian.Uint32(b[:]))
		if t < 0 || int(t) >= vocab {
			return tokens, false, fmt.Errorf("%w: token %d at index %d out of range [0, %d)", ErrSnapshot, t, i, vocab)
		}
		tokens = append(tokens, t)
	}
	if _, err := io.ReadFull(r, b[:1]); err != nil {
		return tokens, false, err
	}
	hasLogits := false
	switch b[0] {
	case 0:
	case 1:
		b := make([]byte, 4*len(logits))
		if _, err := io.ReadFull(r, b); err != nil {
			return tokens, false, err
		}
		for i := range logits {
			logits[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
		}
		hasLogits = true
	default:
		return tokens, false, fmt.Errorf("%w: logits flag %d", ErrSnapshot, b[0])
	}
	if err := backend.ReadState(r, st); err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return tokens, false, err
		}
		return tokens, false, fmt.Errorf("%w: state: %w", ErrSnapshot, err)
	}
	if st.Len() != len(tokens) {
		return tokens, false, fmt.Errorf("%w: the state holds %d tokens, the sequence lists %d", ErrSnapshot, st.Len(), len(tokens))
	}
	return tokens, hasLogits, nil
}

// Fingerprint identifies the model a snapshot belongs to: a SHA-256 of its
// configuration, its tensor table (names, types, shapes, offsets), its Hadamard contract
// (block size and signs) and 4 KiB sampled across its weights. Two files with the same
// fingerprint run the same computation for all a snapshot can tell; it is computed once,
// reading a few pages of the file.
func (m *Model) Fingerprint() [32]byte {
	m.fpOnce.Do(func() { m.fingerprint = fingerprint(m) })
	return m.fingerprint
}

func fingerprint(m *Model) [32]byte {
	h := sha256.New()
	u64 := func(v uint64) { h.Write(binary.LittleEndian.AppendUint64(nil, v)) }
	str := func(s string) { u64(uint64(len(s))); h.Write([]byte(s)) }
	str("bonsai model fingerprint v1")
	if fp, ok := m.weights.(interface{ WriteFingerprint(io.Writer) }); ok {
		fp.WriteFingerprint(h)
	}
	f := m.file
	u64(uint64(len(f.Tensors)))
	for _, t := range f.Tensors {
		str(t.Name)
		u64(uint64(t.Type))
		u64(uint64(len(t.Shape)))
		for _, d := range t.Shape {
			u64(uint64(d))
		}
		u64(t.Offset)
	}
	// 64 samples of 64 bytes: the head and the middle of 64 tensors spread over the file.
	const samples = 64
	if n := len(f.Tensors); n > 0 {
		for i := 0; i < min(samples, n); i++ {
			t := f.Tensors[i*n/min(samples, n)]
			data, err := f.TensorData(t.Name)
			if err != nil {
				str("unreadable " + t.Name)
				continue
			}
			h.Write(data[:min(32, len(data))])
			mid := len(data) / 2
			h.Write(data[mid:min(mid+32, len(data))])
		}
	}
	var out [32]byte
	h.Sum(out[:0])
	return out
}
