// Package prepcount counts the work of preparing generations — chat renderings,
// tokenizations, grammar compilations — so that tests can check that a request is
// prepared once, however many layers it passes through. The counters only ever grow;
// a test reads them before and after the request it sends.
package prepcount

import "sync/atomic"

var (
	// Renders counts renderings of a conversation with the chat template
	// (bonsai.Model.RenderChat, and Prepare's rendering of a chat prompt).
	Renders atomic.Int64
	// BoundaryRenders counts the renderings Prepare makes of a conversation's first
	// messages, without the generation prompt, to find where the prompt ends a message:
	// the session's checkpoint and the prefix cache's boundaries.
	BoundaryRenders atomic.Int64
	// Tokenizations counts the texts bonsai tokenizes to make a prompt.
	Tokenizations atomic.Int64
	// Compilations counts the grammars bonsai compiles: a GBNF grammar, a JSON schema,
	// a tool-call grammar.
	Compilations atomic.Int64
	// GrammarCacheHits counts the grammars Prepare takes from the model's cache of
	// compiled grammars (or from another Prepare compiling the same one at the same
	// time) rather than compiling them: each grammar a request needs is one compilation
	// or one hit.
	GrammarCacheHits atomic.Int64
)

// Counts is a reading of the counters.
type Counts struct {
	Renders, BoundaryRenders, Tokenizations, Compilations, GrammarCacheHits int64
}

// Read returns the counters' values now.
func Read() Counts {
	return Counts{Renders.Load(), BoundaryRenders.Load(), Tokenizations.Load(), Compilations.Load(), GrammarCacheHits.Load()}
}

// Sub returns the work done between an earlier reading and c.
func (c Counts) Sub(earlier Counts) Counts {
	return Counts{c.Renders - earlier.Renders, c.BoundaryRenders - earlier.BoundaryRenders,
		c.Tokenizations - earlier.Tokenizations, c.Compilations - earlier.Compilations,
		c.GrammarCacheHits - earlier.GrammarCacheHits}
}
