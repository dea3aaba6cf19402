package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/bonsai-go/sdk/internal/mslemu"
)

// TestEmulator runs the whole program on the emulated device with the tiny model.
func TestEmulator(t *testing.T) {
	d, err := mslemu.New()
	if err != nil {
		t.Skipf("emulator unavailable: %v", err)
	}
	d.Close()
	var out bytes.Buffer
	ok, err := run(context.Background(), &out, config{device: "emulator", preset: "tiny", kv: "f16", cpu: true, prompt: 8, gen: 6, seed: 3, ptq1: true})
	t.Log(out.String())
	if err != nil {
		t.Fatal(err)
	}
	if !ok {
		t.Fatal("a check failed")
	}
	for _, want := range []string{"0 failed", "max |Δlogit|", "tokens identical", "tok/s", "gemm_t1", "mv_norm_t1", "PTQ1_0 model", "of the PQ2_0 model's decode"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the report has no %q", want)
		}
	}
}

func TestFlags(t *testing.T) {
	var out bytes.Buffer
	if _, err := run(context.Background(), &out, config{device: "gpu"}); err == nil {
		t.Error("-device gpu accepted")
	}
	if _, err := run(context.Background(), &out, config{device: "emulator", kv: "q4"}); err == nil {
		t.Error("-kv q4 accepted")
	}
}
