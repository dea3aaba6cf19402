package cpu

import (
	"context"
	"fmt"
	"sync"

	"github.com/bonsai-go/sdk/qwen35"
	"github.com/bonsai-go/sdk/ternary"
)

// mat returns the matrix the products of m read: its transcoded copy, or m.
func (e *cpuEngine) mat(m *qwen35.Matrix) *qwen35.Matrix {
	if t := e.subst[m]; t != nil {
		return t
	}
	return m
}

// transcodeChunk is the most bytes of a matrix one worker transcodes between checks
// of the context and reports of progress.
const transcodeChunk = 8 << 20

// transcodeMatrices returns a copy in format f of every ternary product of the sites that
// is stored in another format, keyed by the plan's matrix, transcoded by threads
// workers a chunk of whole rows at a time; progress, when set, receives the source
// bytes done out of those to do.
func transcodeMatrices(ctx context.Context, sites []*qwen35.Site, f ternary.Format, threads int, progress func(done, total int64)) (map[*qwen35.Matrix]*qwen35.Matrix, error) {
	type job struct {
		src, dst *qwen35.Matrix
		r0, r1   int
	}
	var jobs []job
	var total int64
	subst := map[*qwen35.Matrix]*qwen35.Matrix{}
	for _, site := range sites {
		for _, m := range site.Products {
			if m.Format == f || subst[m] != nil {
				continue
			}
			t := &qwen35.Matrix{Name: m.Name, Format: f, K: m.K, N: m.N, Data: make([]byte, m.N*f.RowBytes(m.K))}
			subst[m] = t
			step := max(1, transcodeChunk/m.Format.RowBytes(m.K))
			for r := 0; r < m.N; r += step {
				jobs = append(jobs, job{m, t, r, min(r+step, m.N)})
			}
			total += int64(len(m.Data))
		}
	}
	if len(jobs) == 0 {
		return nil, nil
	}
	var (
		mu   sync.Mutex
		next int
		done int64
		ferr error
		wg   sync.WaitGroup
	)
	for range min(threads, len(jobs)) {
		wg.Go(func() {
			for {
				mu.Lock()
				if ferr == nil {
					ferr = ctx.Err()
				}
				if ferr != nil || next == len(jobs) {
					mu.Unlock()
					return
				}
				j := jobs[next]
				next++
				mu.Unlock()
				sb, db := j.src.Format.RowBytes(j.src.K), f.RowBytes(j.src.K)
				err := ternary.Transcode(j.dst.Data[j.r0*db:j.r1*db], f, j.src.Data[j.r0*sb:j.r1*sb], j.src.Format)
				mu.Lock()
				if err != nil && ferr == nil {
					ferr = fmt.Errorf("tensor %q rows %d…%d to %s: %w", j.src.Name, j.r0, j.r1-1, f, err)
				}
				done += int64((j.r1 - j.r0) * sb)
				if progress != nil && ferr == nil {
					progress(done, total)
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if ferr != nil {
		return nil, ferr
	}
	return subst, nil
}
