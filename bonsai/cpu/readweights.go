package cpu

import (
	"context"
	"sync/atomic"

	"github.com/bonsai-go/sdk/bonsai/backend"
	"github.com/bonsai-go/sdk/qwen35"
	"github.com/bonsai-go/sdk/ternary"
)

var _ backend.WeightReader = (*cpuEngine)(nil)

// readPiece is the most one worker reads at a claim in ReadWeights: small enough for
// two workers to share a 5120×1024 product (3.4 MB), large enough that claiming is
// noise against reading.
const readPiece = 1 << 20

// decodeMemory returns the memory a decode step's products stream, cut into pieces of
// at most readPiece bytes: each matrix of the sites once, its interleaved copy where it
// has one (what the decode kernels read), else its rows as the products read them
// (the file's, or a transcoded copy's).
func (e *cpuEngine) decodeMemory(sites []*qwen35.Site) [][]byte {
	var pieces [][]byte
	seen := map[*qwen35.Matrix]bool{}
	for _, site := range sites {
		for _, p := range site.Products {
			m := e.mat(p)
			if seen[m] {
				continue
			}
			seen[m] = true
			mem := m.Data
			if pk := e.packed[m]; pk != nil {
				mem = pk.mem
			}
			for len(mem) > 0 {
				n := min(len(mem), readPiece)
				pieces = append(pieces, mem[:n])
				mem = mem[n:]
			}
		}
	}
	return pieces
}

// ReadWeights reads the memory of the products a decode step runs, once, on the
// engine's workers (backend.WeightReader).
func (e *cpuEngine) ReadWeights(ctx context.Context) (int64, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	e.mu.Lock()
	closed, pieces := e.closed, e.decodeMem
	e.mu.Unlock()
	if closed {
		return 0, backend.ErrClosed
	}
	r := &weightRead{pieces: pieces}
	e.pool.For(len(r.pieces), 1, r)
	var n int64
	for _, p := range r.pieces {
		n += int64(len(p))
	}
	return n, nil
}

// weightRead is ReadWeights's loop body; sink keeps the reads from being optimised
// away.
type weightRead struct {
	pieces [][]byte
	sink   atomic.Uint64
}

func (r *weightRead) Run(lo, hi int) {
	var x uint64
	for _, p := range r.pieces[lo:hi] {
		x ^= ternary.ReadMemory(p)
	}
	r.sink.Add(x)
}
