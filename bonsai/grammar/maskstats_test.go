package grammar

import "testing"

// MaskStats counts every mask its matchers make, and as cold those walked: a state's
// first mask, not one the shared automaton remembers.
func TestMaskStats(t *testing.T) {
	v := fuzzVocab
	g, err := ParseGBNF(`root ::= "true" | "false"`)
	if err != nil {
		t.Fatal(err)
	}
	mask := make([]uint64, (v.Size()+63)/64)
	check := func(what string, masks, cold int64) {
		t.Helper()
		if gm, gc := g.MaskStats(); gm != masks || gc != cold {
			t.Errorf("%s: MaskStats %d masks, %d cold; want %d, %d", what, gm, gc, masks, cold)
		}
	}
	check("new", 0, 0)
	m := NewMatcher(g)
	m.Mask(v, mask) // the start state: walked
	m.Mask(v, mask) // again: remembered
	check("one matcher", 2, 1)
	if err := m.Accept([]byte("t")); err != nil {
		t.Fatal(err)
	}
	m.Mask(v, mask) // after "t": a new state
	check("one matcher, one byte on", 3, 2)
	// A second matcher of the grammar shares the automaton: its start and its state
	// after "t" are remembered, its state after "f" is not.
	n := NewMatcher(g)
	n.Mask(v, mask)
	if err := n.Accept([]byte("t")); err != nil {
		t.Fatal(err)
	}
	n.Mask(v, mask)
	check("second matcher, same path", 5, 2)
	o := NewMatcher(g)
	if err := o.Accept([]byte("f")); err != nil {
		t.Fatal(err)
	}
	o.Mask(v, mask)
	check("third matcher, another path", 6, 3)
}
