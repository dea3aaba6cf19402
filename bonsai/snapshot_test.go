package bonsai_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"testing"

	"github.com/bonsai-go/sdk/bonsai"
	"github.com/bonsai-go/sdk/internal/synth/synthtest"
	"github.com/bonsai-go/sdk/ternary"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// snapshotOf generates into a fresh session of m and returns it with its snapshot.
func snapshotOf(t *testing.T, m *bonsai.Model) (*bonsai.Session, []byte) {
	t.Helper()
	s := session(t, m)
	// Longer than a prefill chunk and than the KV cache's first pages.
	res := generate(t, s, bonsai.TokenIDs(tokens(70, 512, 21)...), bonsai.GenerateOptions{MaxTokens: 12, SamplerOptions: bonsai.SamplerOptions{Temperature: 1, Seed: 5}})
	require.NotEmpty(t, res.Tokens)
	var buf bytes.Buffer
	require.NoError(t, s.Save(&buf))
	return s, buf.Bytes()
}

// A loaded session continues bit-identically to the one saved, at every KV precision.
func TestSnapshotContinuesIdentically(t *testing.T) {
	path := synthtest.Path(t, "tiny", 11, ternary.PQ2_0)
	ctx := context.Background()
	for _, kv := range []bonsai.KVPrecision{bonsai.KVFloat16, bonsai.KVFloat32, bonsai.KVInt8, bonsai.KVQ4} {
		t.Run(kv.String(), func(t *testing.T) {
			m := open(t, path, bonsai.WithKVCache(kv), bonsai.WithThreads(2))
			s, snap := snapshotOf(t, m)
			l, err := m.LoadSession(bytes.NewReader(snap))
			require.NoError(t, err)
			defer l.Close()
			assert.Equal(t, s.Tokens(), l.Tokens())
			assert.Equal(t, s.Len(), l.Len())
			assert.Equal(t, s.Logits(), l.Logits())
			t.Logf("%s: %d tokens, snapshot %d bytes", kv, s.Len(), len(snap))

			// Step both through the same tokens: the logits agree to the bit.
			for i, id := range tokens(20, 512, 22) {
				require.NoError(t, s.Step(ctx, id))
				require.NoError(t, l.Step(ctx, id))
				require.Equal(t, s.Logits(), l.Logits(), "step %d", i)
			}
			// And a sampled generation extending the history is the same.
			next := append(s.Tokens(), tokens(5, 512, 23)...)
			opt := bonsai.GenerateOptions{MaxTokens: 15, SamplerOptions: bonsai.SamplerOptions{Temperature: 0.9, TopP: 0.9, Seed: 77}}
			a := generate(t, s, bonsai.TokenIDs(next...), opt)
			b := generate(t, l, bonsai.TokenIDs(next...), opt)
			assert.Equal(t, a.Tokens, b.Tokens)
			assert.Equal(t, a.Usage.CachedTokens, b.Usage.CachedTokens)
			assert.Equal(t, len(next)-5, b.Usage.CachedTokens)
		})
	}
}

// A snapshot loads into a model whose KV cache has another precision (converted), and
// into an existing session, replacing what it held.
func TestSnapshotAcrossPrecisionAndIntoSession(t *testing.T) {
	path := synthtest.Path(t, "tiny", 11, ternary.PQ2_0)
	m16 := open(t, path, bonsai.WithThreads(2))
	s, snap := snapshotOf(t, m16)
	m32 := open(t, path, bonsai.WithThreads(2), bonsai.WithKVCache(bonsai.KVFloat32))
	l, err := m32.LoadSession(bytes.NewReader(snap))
	require.NoError(t, err)
	defer l.Close()
	assert.Equal(t, s.Tokens(), l.Tokens())
	// The held f16 values are exact in f32; only the new position is stored otherwise.
	require.NoError(t, s.Step(context.Background(), 3))
	require.NoError(t, l.Step(context.Background(), 3))
	assert.InDeltaSlice(t, s.Logits(), l.Logits(), 1e-2)

	other := session(t, m16)
	require.NoError(t, other.Prefill(context.Background(), tokens(5, 512, 1)))
	require.NoError(t, other.Load(bytes.NewReader(snap)))
	assert.Equal(t, 70+11, other.Len())
}

// A chat session's snapshot keeps its checkpoint, so that the loaded session resumes the
// next turn as the saved one would.
func TestSnapshotChatCheckpoint(t *testing.T) {
	m := tiny(t)
	s := session(t, m)
	off := false
	opt := bonsai.GenerateOptions{MaxTokens: 6, Thinking: &off, SamplerOptions: bonsai.SamplerOptions{Temperature: 1, Seed: 3}}
	msgs := []bonsai.Message{{Role: bonsai.RoleUser, Content: "First question"}}
	res := generate(t, s, bonsai.Chat(msgs...), opt)
	var buf bytes.Buffer
	require.NoError(t, s.Save(&buf))
	l, err := m.LoadSession(&buf)
	require.NoError(t, err)
	defer l.Close()

	msgs = append(msgs, bonsai.Message{Role: bonsai.RoleAssistant, Content: res.Text}, bonsai.Message{Role: bonsai.RoleUser, Content: "Second"})
	a := generate(t, s, bonsai.Chat(msgs...), opt)
	b := generate(t, l, bonsai.Chat(msgs...), opt)
	assert.Positive(t, a.Usage.CachedTokens)
	assert.Equal(t, a.Usage.CachedTokens, b.Usage.CachedTokens)
	assert.Equal(t, a.Tokens, b.Tokens)
}

func TestSnapshotRefusesAnotherModel(t *testing.T) {
	a := open(t, synthtest.Path(t, "tiny", 11, ternary.PQ2_0), bonsai.WithThreads(2))
	b := open(t, synthtest.Path(t, "tiny", 12, ternary.PQ2_0), bonsai.WithThreads(2))
	assert.NotEqual(t, a.Fingerprint(), b.Fingerprint())
	_, snap := snapshotOf(t, a)
	_, err := b.LoadSession(bytes.NewReader(snap))
	require.ErrorIs(t, err, bonsai.ErrSnapshot)
	assert.Contains(t, err.Error(), "saved from another model")

	// The same file opened again has the same fingerprint.
	path := synthtest.Path(t, "tiny", 13, ternary.PQ2_0)
	assert.Equal(t, open(t, path).Fingerprint(), open(t, path, bonsai.WithKVCache(bonsai.KVInt8)).Fingerprint())

	// A smaller context cannot hold the snapshot.
	small := open(t, synthtest.Path(t, "tiny", 11, ternary.PQ2_0), bonsai.WithContextSize(50))
	_, err = small.LoadSession(bytes.NewReader(snap))
	require.ErrorIs(t, err, bonsai.ErrContextFull)
}

// Damaged and truncated snapshots are refused with an error, never a panic.
func TestSnapshotDamage(t *testing.T) {
	m := open(t, synthtest.Path(t, "tiny", 11, ternary.PQ2_0), bonsai.WithThreads(2))
	_, snap := snapshotOf(t, m)
	s := session(t, m)
	load := func(data []byte) error {
		err := s.Load(bytes.NewReader(data))
		if err != nil {
			assert.Zero(t, s.Len(), "a failed load leaves the session empty")
		}
		return err
	}
	require.NoError(t, load(snap))

	// Every byte of the header and the token list, and bytes spread over the rest.
	var at []int
	for i := 0; i < 60+4*81; i++ {
		at = append(at, i)
	}
	for i := 60 + 4*81; i < len(snap); i += len(snap) / 300 {
		at = append(at, i)
	}
	at = append(at, len(snap)-1)
	for _, i := range at {
		bad := bytes.Clone(snap)
		bad[i] ^= 0x5a
		err := load(bad)
		require.Error(t, err, "byte %d flipped", i)
		require.True(t, errors.Is(err, bonsai.ErrSnapshot) || errors.Is(err, bonsai.ErrContextFull), "byte %d: %v", i, err)
	}
	for _, n := range []int{0, 1, 7, 8, 12, 44, 51, 100, 400, 2000, len(snap) / 2, len(snap) - 5, len(snap) - 1} {
		err := load(snap[:n])
		require.ErrorIs(t, err, bonsai.ErrSnapshot, "truncated to %d bytes", n)
		assert.Contains(t, err.Error(), "truncated")
	}
	require.ErrorContains(t, load([]byte("GGUF and some more bytes of another file format......................")), "not a session snapshot")

	// A header claiming 4 billion tokens is refused before anything is read for them.
	bad := bytes.Clone(snap)
	binary.LittleEndian.PutUint32(bad[48:], 0xffffffff)
	err := load(bad)
	require.ErrorIs(t, err, bonsai.ErrContextFull)
	bad = bytes.Clone(snap)
	binary.LittleEndian.PutUint32(bad[8:], 99)
	require.ErrorContains(t, load(bad), "version 99")

	// A reader that fails.
	err = s.Load(io.MultiReader(bytes.NewReader(snap[:100]), errReader{}))
	require.ErrorContains(t, err, "disk on fire")
	require.NoError(t, load(snap), "the session is still usable")
}

type errReader struct{}

func (errReader) Read([]byte) (int, error) { return 0, errors.New("disk on fire") }

func TestSnapshotClosed(t *testing.T) {
	m := open(t, synthtest.Path(t, "tiny", 11, ternary.PQ2_0))
	s := session(t, m)
	require.NoError(t, s.Close())
	require.ErrorIs(t, s.Save(io.Discard), bonsai.ErrClosed)
	require.ErrorIs(t, s.Load(bytes.NewReader(nil)), bonsai.ErrClosed)
}
