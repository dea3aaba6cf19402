package cpu

import (
	"context"
	"fmt"
	"sync"

	"github.com/bonsai-go/sdk/internal/hugemem"
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

// loadChunk is the most bytes of a matrix one worker transcodes or tiles between checks
// of the context and reports of progress.
const loadChunk = 8 << 20

// rowJob is rows r0 ≤ r < r1 of a matrix, prepared at Load by one worker at a time.
type rowJob struct {
	m      *qwen35.Matrix
	r0, r1 int
}

// rowJobs splits m into jobs of whole rows of at most loadChunk bytes (or align rows),
// each starting at a multiple of align.
func rowJobs(jobs []rowJob, m *qwen35.Matrix, align int) []rowJob {
	step := max(align, loadChunk/m.Format.RowBytes(m.K)/align*align)
	for r := 0; r < m.N; r += step {
		jobs = append(jobs, rowJob{m, r, min(r+step, m.N)})
	}
	return jobs
}

// runRowJobs runs do on every job, on threads workers; it stops at the first error or
// when ctx is done. progress, when set, receives the source bytes done out of all the
// jobs'.
func runRowJobs(ctx context.Context, jobs []rowJob, threads int, progress func(done, total int64), do func(rowJob) error) error {
	size := func(j rowJob) int64 { return int64((j.r1 - j.r0) * j.m.Format.RowBytes(j.m.K)) }
	var total int64
	for _, j := range jobs {
		total += size(j)
	}
	if progress != nil && len(jobs) > 0 {
		progress(0, total)
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
				err := do(j)
				mu.Lock()
				if err != nil && ferr == nil {
					ferr = err
				}
				done += size(j)
				if progress != nil && ferr == nil {
					progress(done, total)
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return ferr
}

// transcodeMatrices returns a copy in format f of every ternary product of the sites that
// is stored in another format, keyed by the plan's matrix, each in an allocation of huge
// pages of its own (freed by the function returned with it under the same key),
// transcoded by threads workers a chunk of whole rows at a time; progress, when set,
// receives the source bytes done out of those to do. Every product reads the copy from
// then on, so the source rows are handed to release a chunk at a time once transcoded:
// a mapped file's pages leave memory as the copies fill it.
func transcodeMatrices(ctx context.Context, sites []*qwen35.Site, f ternary.Format, release func([]byte) error, threads int, progress func(done, total int64)) (map[*qwen35.Matrix]*qwen35.Matrix, map[*qwen35.Matrix]func() error, error) {
	var (
		jobs  []rowJob
		order []*qwen35.Matrix
	)
	subst := map[*qwen35.Matrix]*qwen35.Matrix{}
	frees := map[*qwen35.Matrix]func() error{}
	for _, site := range sites {
		for _, m := range site.Products {
			if m.Format == f || subst[m] != nil {
				continue
			}
			data, free := hugemem.Alloc(m.N * f.RowBytes(m.K))
			t := &qwen35.Matrix{Name: m.Name, Format: f, K: m.K, N: m.N, Data: data}
			subst[m], frees[t] = t, free
			order = append(order, m)
			jobs = rowJobs(jobs, m, 2)
		}
	}
	if len(jobs) == 0 {
		return nil, nil, nil
	}
	if release == nil {
		release = func([]byte) error { return nil }
	}
	err := runRowJobs(ctx, jobs, threads, progress, func(j rowJob) error {
		dst := subst[j.m]
		sb, db := j.m.Format.RowBytes(j.m.K), f.RowBytes(j.m.K)
		src := j.m.Data[j.r0*sb : j.r1*sb]
		if err := ternary.Transcode(dst.Data[j.r0*db:j.r1*db], f, src, j.m.Format); err != nil {
			return fmt.Errorf("tensor %q rows %d…%d to %s: %w", j.m.Name, j.r0, j.r1-1, f, err)
		}
		if err := release(src); err != nil {
			return fmt.Errorf("tensor %q: %w", j.m.Name, err)
		}
		return nil
	})
	for _, m := range order {
		if err != nil {
			break
		}
		// The pages that straddle two chunks.
		if err = release(m.Data); err != nil {
			err = fmt.Errorf("tensor %q: %w", m.Name, err)
		}
	}
	if err != nil {
		freeAll(frees)
		return nil, nil, err
	}
	return subst, frees, nil
}

// transcodePlan returns, for every ternary product of the sites stored in a format other
// than f, a matrix in format f with no data, keyed by the plan's matrix (subst), and the
// other way round (from): packMatrices transcodes the file's rows straight into their
// interleaved copies, a tile at a time, with no copy of the whole matrix in between.
func transcodePlan(sites []*qwen35.Site, f ternary.Format) (subst, from map[*qwen35.Matrix]*qwen35.Matrix) {
	subst, from = map[*qwen35.Matrix]*qwen35.Matrix{}, map[*qwen35.Matrix]*qwen35.Matrix{}
	for _, site := range sites {
		for _, m := range site.Products {
			if m.Format == f || subst[m] != nil {
				continue
			}
			t := &qwen35.Matrix{Name: m.Name, Format: f, K: m.K, N: m.N}
			subst[m], from[t] = t, m
		}
	}
	return subst, from
}

// freeAll calls every function of frees and empties it; it returns the first error.
func freeAll(frees map[*qwen35.Matrix]func() error) error {
	var first error
	for m, free := range frees {
		if err := free(); err != nil && first == nil {
			first = err
		}
		delete(frees, m)
	}
	return first
}

// tileMatrices returns the tiles of every ternary product of the sites (as mat has them)
// whose width the batched kernels take, but those skip names, keyed by the matrix the
// products read, filled by threads workers; progress as for transcodeMatrices.
func tileMatrices(ctx context.Context, sites []*qwen35.Site, mat func(*qwen35.Matrix) *qwen35.Matrix, skip func(*qwen35.Matrix) bool, threads int, progress func(done, total int64)) (map[*qwen35.Matrix]*ternary.Tiles, error) {
	var jobs []rowJob
	tiles := map[*qwen35.Matrix]*ternary.Tiles{}
	for _, site := range sites {
		for _, p := range site.Products {
			m := mat(p)
			if tiles[m] != nil || !ternary.Tiled(m.K) || skip(m) {
				continue
			}
			tl, err := ternary.NewTiles(m.Format, m.K, m.N)
			if err != nil {
				return nil, fmt.Errorf("tensor %q: %w", m.Name, err)
			}
			tiles[m] = tl
			jobs = rowJobs(jobs, m, 2)
		}
	}
	err := runRowJobs(ctx, jobs, threads, progress, func(j rowJob) error {
		tiles[j.m].Fill(j.m.Data, j.r0, j.r1)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return tiles, nil
}

// packMatrices returns the interleaved copies that layout asks for of the sites'
// products (as mat has them; see WithLayout), keyed by the matrix the products read,
// filled by threads workers a chunk of whole tiles at a time in one allocation of huge
// pages (returned with the function that frees it); progress as for transcodeMatrices.
// The rows of a matrix whose batches will read its copy too are handed to release a
// chunk at a time once copied, so that the file's pages leave memory as the copy fills it.
// A matrix of from (transcodePlan's) has no data: its copy is filled by transcoding the
// rows of the matrix from names, a tile at a time, which are then released.
func packMatrices(ctx context.Context, sites []*qwen35.Site, mat func(*qwen35.Matrix) *qwen35.Matrix, layout Layout, release func([]byte) error, threads int, progress func(done, total int64), from map[*qwen35.Matrix]*qwen35.Matrix) (map[*qwen35.Matrix]*packed, func() error, error) {
	var (
		jobs  []rowJob
		order []*qwen35.Matrix
		sizes = map[*qwen35.Matrix]int{}
		total int
	)
	for _, site := range sites {
		for _, p := range site.Products {
			m := mat(p)
			if _, ok := sizes[m]; ok {
				continue
			}
			if layout.Resolve(m.Format) != LayoutInterleaved {
				continue
			}
			size, err := packSize(m.Format, m.K, m.N)
			if err != nil {
				return nil, nil, fmt.Errorf("tensor %q: %w", m.Name, err)
			}
			sizes[m] = size
			order = append(order, m)
			total += size
			jobs = rowJobs(jobs, m, packTile(m.Format))
		}
	}
	if len(order) == 0 {
		return nil, nil, nil
	}
	arena, free := hugemem.Alloc(total)
	pk := make(map[*qwen35.Matrix]*packed, len(order))
	off := 0
	for _, m := range order {
		v, err := newPacked(m.Format, arena[off:off+sizes[m]], m.K, m.N)
		if err != nil {
			free()
			return nil, nil, fmt.Errorf("tensor %q: %w", m.Name, err)
		}
		pk[m] = v
		off += sizes[m]
	}
	if release == nil {
		release = func([]byte) error { return nil }
	}
	// src returns the rows the copy of m is made from: the file's, for a matrix of from.
	src := func(m *qwen35.Matrix) *qwen35.Matrix {
		if s := from[m]; s != nil {
			return s
		}
		return m
	}
	releases := func(m *qwen35.Matrix) bool { return from[m] != nil || pk[m].batchNative() }
	var scratch sync.Pool // a tile's transcoded rows
	err := runRowJobs(ctx, jobs, threads, progress, func(j rowJob) error {
		s := src(j.m)
		if s == j.m {
			pk[j.m].fill(j.m.Data, j.r0, j.r1)
		} else if err := transcodeTiles(pk[j.m], j, s, &scratch); err != nil {
			return err
		}
		if !releases(j.m) {
			return nil
		}
		rb := s.Format.RowBytes(s.K)
		if err := release(s.Data[j.r0*rb : j.r1*rb]); err != nil {
			return fmt.Errorf("tensor %q: %w", s.Name, err)
		}
		return nil
	})
	for _, m := range order {
		if err != nil {
			break
		}
		if releases(m) {
			// The pages that straddle two chunks.
			s := src(m)
			if err = release(s.Data); err != nil {
				err = fmt.Errorf("tensor %q: %w", s.Name, err)
			}
		}
	}
	if err != nil {
		free()
		return nil, nil, err
	}
	return pk, free, nil
}

// transcodeTiles fills rows j.r0 ≤ r < j.r1 of p, the interleaved copy of j.m, from the
// same rows of s, j.m's matrix in another format, transcoding a tile of rows at a time
// into a buffer of scratch's (which stays in the core's cache for the fill).
func transcodeTiles(p *packed, j rowJob, s *qwen35.Matrix, scratch *sync.Pool) error {
	f, tile := j.m.Format, p.tile()
	sb, db := s.Format.RowBytes(s.K), f.RowBytes(j.m.K)
	buf, _ := scratch.Get().(*[]byte)
	if buf == nil || len(*buf) < tile*db {
		b := make([]byte, tile*db)
		buf = &b
	}
	defer scratch.Put(buf)
	for r := j.r0; r < j.r1; r += tile {
		n := min(tile, j.r1-r)
		rows := (*buf)[:n*db]
		if err := ternary.Transcode(rows, f, s.Data[r*sb:(r+n)*sb], s.Format); err != nil {
			return fmt.Errorf("tensor %q rows %d…%d to %s: %w", s.Name, r, r+n-1, f, err)
		}
		p.fillRows(rows, r, r+n)
	}
	return nil
}
