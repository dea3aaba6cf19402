//go:build unix

// Command mtptime times qwen35.MTPRunner.Step, the MTP head's step, on a model file with a
// head (synth -mtp): float32 and int8 products on a 2-worker pool, alternately, wall and
// CPU time per step. It is the measurement behind NOTES-mtp.md's figures:
//
//	go run ./examples/synth -preset real-widths -mtp -q -out /tmp/rw-mtp.gguf
//	go run ./internal/mtptime /tmp/rw-mtp.gguf
package main

import (
	"fmt"
	"os"
	"syscall"
	"time"

	"github.com/bonsai-go/sdk/bonsai/backend"
	"github.com/bonsai-go/sdk/gguf"
	"github.com/bonsai-go/sdk/internal/parallel"
	"github.com/bonsai-go/sdk/qwen35"
)

// cpu returns the process's CPU time so far (user and system).
func cpu() time.Duration {
	var r syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &r)
	return time.Duration(r.Utime.Nano() + r.Stime.Nano())
}

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: mtptime MODEL.gguf")
		os.Exit(2)
	}
	f, err := gguf.Open(os.Args[1])
	if err != nil {
		panic(err)
	}
	w, err := qwen35.Bind(f)
	if err != nil {
		panic(err)
	}
	pool := parallel.NewPool(2)
	c := w.Config
	modes := []struct {
		name string
		o    qwen35.MTPOptions
	}{{"float32 products, 2-worker pool", qwen35.MTPOptions{Float32: true, Runner: pool}}, {"int8 on a 2-worker pool", qwen35.MTPOptions{Runner: pool}}}
	h := make([]float32, c.Embedding)
	for i := range h {
		h[i] = float32(i%7) - 3
	}
	logits := make([]float32, c.Vocab)
	out := make([]float32, c.Embedding)
	const N = 8
	wall := make([]time.Duration, len(modes))
	cpus := make([]time.Duration, len(modes))
	runs := make([]*qwen35.MTPRunner, len(modes))
	for i, m := range modes {
		runs[i], _ = qwen35.NewMTPRunner(w, m.o)
	}
	for round := 0; round < 4; round++ {
		for i := range modes {
			cache := runs[i].NewKVCache(backend.KVFloat16, 64)
			runs[i].Step(logits, out, h, 5, 0, cache) // warm
			t0, c0 := time.Now(), cpu()
			for p := 1; p <= N; p++ {
				runs[i].Step(logits, out, h, 5+p, p, cache)
			}
			if round > 0 {
				wall[i] += time.Since(t0)
				cpus[i] += cpu() - c0
			}
		}
	}
	for i, m := range modes {
		fmt.Printf("%s: %.1f ms wall, %.1f ms CPU per step\n", m.name, float64(wall[i].Microseconds())/1000/(3*N), float64(cpus[i].Microseconds())/1000/(3*N))
	}
}
