package grammar_test

import (
	"fmt"

	"github.com/bonsai-go/sdk/bonsai/grammar"
)

func ExampleCompileJSONSchema() {
	g, err := grammar.CompileJSONSchema([]byte(`{"type":"object","properties":{"ok":{"type":"boolean"}},"required":["ok"],"additionalProperties":false}`), grammar.SchemaOptions{})
	if err != nil {
		panic(err)
	}
	// A vocabulary of five tokens; a model would give its own.
	pieces := []string{`{"ok": `, "true", "false", "}", "maybe"}
	v := grammar.NewVocab(len(pieces), func(id int32) ([]byte, bool) { return []byte(pieces[id]), true })
	m := grammar.NewMatcher(g)
	mask := make([]uint64, 1)
	for _, id := range []int32{0, 1, 3} {
		m.Mask(v, mask)
		fmt.Printf("allowed %05b, taking %q\n", mask[0], pieces[id])
		if err := m.AcceptToken(v, id); err != nil {
			panic(err)
		}
	}
	fmt.Println("complete:", m.Done())
	// Output:
	// allowed 00001, taking "{\"ok\": "
	// allowed 00110, taking "true"
	// allowed 01000, taking "}"
	// complete: true
}

func ExampleCompileJSONSchema_error() {
	_, err := grammar.CompileJSONSchema([]byte(`{"type":"object","properties":{"n":{"type":"string","pattern":"^(?=a)[a-z]+$"}}}`), grammar.SchemaOptions{})
	fmt.Println(err)
	// Output: invalid schema: pattern at /properties/n/pattern: at offset 2: lookaround is not supported
}
