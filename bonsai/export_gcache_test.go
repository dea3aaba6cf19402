package bonsai

import "github.com/bonsai-go/sdk/bonsai/grammar"

// PromptGrammar returns the grammar that constrains p's answer, or nil.
func PromptGrammar(p *Prompt) *grammar.Grammar { return p.grammar }

// GrammarCacheLen returns the number of grammars m keeps (see WithGrammarCache).
func GrammarCacheLen(m *Model) int { return m.grammars.len() }
