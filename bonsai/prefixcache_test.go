package bonsai_test

import (
	"strings"
	"testing"

	"github.com/bonsai-go/sdk/bonsai"
	"github.com/bonsai-go/sdk/internal/synth/synthtest"
	"github.com/bonsai-go/sdk/ternary"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A chat request whose system prompt another session already fed starts from the cached
// state at the end of it, and generates exactly what it generates with no cache.
func TestPrefixCacheSharesSystemPrompt(t *testing.T) {
	path := synthtest.Path(t, "tiny", 9, ternary.PQ2_0)
	cached := open(t, path, bonsai.WithThreads(2), bonsai.WithPrefixCache(256<<20))
	plain := open(t, path, bonsai.WithThreads(2))
	system := bonsai.Message{Role: bonsai.RoleSystem, Content: strings.Repeat("You are a careful assistant who answers briefly. ", 12)}
	opt := bonsai.GenerateOptions{MaxTokens: 12}
	first := bonsai.Chat(system, bonsai.Message{Role: bonsai.RoleUser, Content: "Name a colour."})
	second := bonsai.Chat(system, bonsai.Message{Role: bonsai.RoleUser, Content: "Name a fruit."})

	generate(t, session(t, cached), first, opt)
	st := cached.Stats().PrefixCache
	require.GreaterOrEqual(t, st.Entries, 1, "the first request's boundaries are cached")
	require.Zero(t, st.Hits)

	got := generate(t, session(t, cached), second, opt) // a different, fresh session
	want := generate(t, session(t, plain), second, opt)
	require.Equal(t, want.Tokens, got.Tokens, "a cached prefix changes nothing in what is generated")
	st = cached.Stats().PrefixCache
	require.EqualValues(t, 1, st.Hits)
	sysTokens := len(tokensOf(t, cached, bonsai.Chat(system))) // the system prompt alone, rendered
	assert.GreaterOrEqual(t, got.Usage.CachedTokens, sysTokens-2, "the system prompt came from the cache")
	assert.Less(t, got.Usage.CachedTokens, got.Usage.PromptTokens)
	assert.EqualValues(t, got.Usage.CachedTokens, st.HitTokens)
	t.Logf("second request: %d of %d prompt tokens from the cache; cache %d entries, %d bytes", got.Usage.CachedTokens, got.Usage.PromptTokens, st.Entries, st.Bytes)
}

// A conversation continued on another session resumes from the cached end of its last
// user turn.
func TestPrefixCacheResumesConversation(t *testing.T) {
	path := synthtest.Path(t, "tiny", 9, ternary.PQ2_0)
	m := open(t, path, bonsai.WithThreads(2), bonsai.WithPrefixCache(256<<20))
	plain := open(t, path, bonsai.WithThreads(2))
	opt := bonsai.GenerateOptions{MaxTokens: 8}
	msgs := []bonsai.Message{{Role: bonsai.RoleSystem, Content: "Be brief."}, {Role: bonsai.RoleUser, Content: "Hello there, how are you today?"}}
	r1 := generate(t, session(t, m), bonsai.Chat(msgs...), opt)
	msgs = append(msgs, bonsai.Message{Role: bonsai.RoleAssistant, Content: r1.Text}, bonsai.Message{Role: bonsai.RoleUser, Content: "And tomorrow?"})
	got := generate(t, session(t, m), bonsai.Chat(msgs...), opt)
	want := generate(t, session(t, plain), bonsai.Chat(msgs...), opt)
	require.Equal(t, want.Tokens, got.Tokens)
	first := len(tokensOf(t, m, bonsai.Chat(msgs[:2]...)))
	assert.GreaterOrEqual(t, got.Usage.CachedTokens, first-2, "resumed at the end of the first user turn at least")
}

// The cache holds at most its limit, evicting the least recently used state.
func TestPrefixCacheBounded(t *testing.T) {
	path := synthtest.Path(t, "tiny", 9, ternary.PQ2_0)
	probe := open(t, path, bonsai.WithThreads(2), bonsai.WithPrefixCache(1<<30))
	generate(t, session(t, probe), bonsai.Chat(bonsai.Message{Role: bonsai.RoleSystem, Content: "A."}, bonsai.Message{Role: bonsai.RoleUser, Content: "B"}), bonsai.GenerateOptions{MaxTokens: 1})
	one := probe.Stats().PrefixCache.Bytes / int64(probe.Stats().PrefixCache.Entries) // about one entry's size

	limit := 3*one + one/2
	m := open(t, path, bonsai.WithThreads(2), bonsai.WithPrefixCache(limit))
	for i := range 8 {
		sys := bonsai.Message{Role: bonsai.RoleSystem, Content: strings.Repeat("x", i+1)}
		generate(t, session(t, m), bonsai.Chat(sys, bonsai.Message{Role: bonsai.RoleUser, Content: "hi"}), bonsai.GenerateOptions{MaxTokens: 1})
		st := m.Stats().PrefixCache
		require.LessOrEqual(t, st.Bytes, st.Limit, "after request %d", i)
	}
	st := m.Stats().PrefixCache
	t.Logf("limit %d bytes (~%d per entry): %d entries, %d inserts, %d evictions", limit, one, st.Entries, st.Inserts, st.Evictions)
	require.Positive(t, st.Evictions)
	require.EqualValues(t, st.Inserts-st.Evictions, st.Entries)
	// The most recent system prompt is still there: a request with it hits.
	sys := bonsai.Message{Role: bonsai.RoleSystem, Content: strings.Repeat("x", 8)}
	res := generate(t, session(t, m), bonsai.Chat(sys, bonsai.Message{Role: bonsai.RoleUser, Content: "other"}), bonsai.GenerateOptions{MaxTokens: 1})
	require.Positive(t, res.Usage.CachedTokens)
}
