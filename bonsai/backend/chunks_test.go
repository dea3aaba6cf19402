package backend_test

import (
	"fmt"
	"slices"
	"testing"

	"github.com/bonsai-go/sdk/bonsai/backend"
)

// chunksOf renders the chunks of a batch of sequences of the given token counts as
// "seq:first+n@row" per part, chunks separated by " | ".
func chunksOf(lens []int, rows int) string {
	batch := make([]backend.Sequence, len(lens))
	for i, n := range lens {
		batch[i].Tokens = make([]int32, n)
	}
	s := ""
	for c := range backend.Chunks(batch, rows) {
		if s != "" {
			s += " | "
		}
		sum := 0
		k := 0
		for p := range c.Parts() {
			if k > 0 {
				s += " "
			}
			s += fmt.Sprintf("%d:%d+%d@%d", p.Seq, p.First, p.N, p.Row)
			if p.Last(batch) {
				s += "."
			}
			if p.Row != sum {
				s += "(gap)"
			}
			sum += p.N
			k++
		}
		if sum != c.Rows {
			s += fmt.Sprintf("(Rows %d, parts hold %d)", c.Rows, sum)
		}
	}
	return s
}

func TestChunks(t *testing.T) {
	for _, c := range []struct {
		lens []int
		rows int
		want string // "." marks a part holding its sequence's last token
	}{
		{nil, 64, ""},
		{[]int{0, 0}, 64, ""},
		{[]int{5}, 64, "0:0+5@0."},
		// a prompt longer than a chunk continues in the next, at its new position
		{[]int{150}, 64, "0:0+64@0 | 0:64+64@0 | 0:128+22@0."},
		{[]int{128}, 64, "0:0+64@0 | 0:64+64@0."},
		// decode steps of several sequences share one chunk; empty ones have no part
		{[]int{1, 0, 1, 1}, 64, "0:0+1@0. 2:0+1@1. 3:0+1@2."},
		// a prompt beside decode steps, cut where the chunk is full
		{[]int{1, 10, 1}, 8, "0:0+1@0. 1:0+7@1 | 1:7+3@0. 2:0+1@3."},
		{[]int{3, 5, 0, 4}, 4, "0:0+3@0. 1:0+1@3 | 1:1+4@0. | 3:0+4@0."},
		// trailing empty sequences end the last chunk without another
		{[]int{4, 0, 0}, 4, "0:0+4@0."},
		{[]int{2, 2}, 1, "0:0+1@0 | 0:1+1@0. | 1:0+1@0 | 1:1+1@0."},
	} {
		if got := chunksOf(c.lens, c.rows); got != c.want {
			t.Errorf("Chunks(%v, %d):\n got %s\nwant %s", c.lens, c.rows, got, c.want)
		}
	}
}

// Breaking out of the loop stops the chunking, as an engine does when its context is
// cancelled between chunks: the parts run are whole, and no further chunk is laid out.
func TestChunksStop(t *testing.T) {
	batch := []backend.Sequence{{Tokens: make([]int32, 100)}, {Tokens: make([]int32, 3)}}
	var seen []backend.Part
	for c := range backend.Chunks(batch, 64) {
		seen = slices.AppendSeq(seen, c.Parts())
		break
	}
	if want := []backend.Part{{Seq: 0, First: 0, N: 64, Row: 0}}; !slices.Equal(seen, want) {
		t.Errorf("first chunk %v, want %v", seen, want)
	}
}

func TestChunksRefusesNoRows(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("Chunks with 0 rows did not panic")
		}
	}()
	backend.Chunks(nil, 0)
}

// The engines lay out every Forward with Chunks: it must not cost a decode step an
// allocation.
func TestChunksAllocateNothing(t *testing.T) {
	batch := []backend.Sequence{{Tokens: make([]int32, 70)}, {Tokens: make([]int32, 1)}, {}, {Tokens: make([]int32, 1)}}
	rows := 0
	allocs := testing.AllocsPerRun(10, func() {
		for c := range backend.Chunks(batch, backend.ChunkRows) {
			for p := range c.Parts() {
				rows += p.N
			}
		}
	})
	if allocs != 0 || rows != 11*72 {
		t.Errorf("%v allocations, %d rows; want none, %d", allocs, rows, 11*72)
	}
}
