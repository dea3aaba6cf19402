package vulkan

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"testing"
)

// Weights go to the device in pieces, through the staging buffer where the memory is
// not host-visible, reporting the bytes copied after each piece and stopping when the
// context is cancelled, with nothing left behind.
func TestUpload(t *testing.T) {
	for _, staging := range []bool{false, true} {
		d, err := newGPUDevice(open(t))
		if err != nil {
			t.Fatal(err)
		}
		d.piece, d.staging = 1<<20, staging
		mem := make([]byte, 5<<20+3)
		for i := range mem {
			mem[i] = byte(i*7 + i>>11)
		}
		var got []int64
		b, err := d.Upload(context.Background(), mem, func(n int64) { got = append(got, n) })
		if err != nil {
			t.Fatal(err)
		}
		want := []int64{1 << 20, 2 << 20, 3 << 20, 4 << 20, 5 << 20, 5<<20 + 3}
		if !slices.Equal(got, want) {
			t.Errorf("staging %v: progress %v, want %v", staging, got, want)
		}
		if c := b.Contents(); c == nil || !bytes.Equal(c[:len(mem)], mem) {
			t.Errorf("staging %v: the device's copy differs from the bytes uploaded", staging)
		}
		b.Release()

		ctx, cancel := context.WithCancel(context.Background())
		pieces := 0
		_, err = d.Upload(ctx, mem, func(int64) {
			if pieces++; pieces == 2 {
				cancel()
			}
		})
		if !errors.Is(err, context.Canceled) || pieces != 2 {
			t.Errorf("staging %v: cancelled after 2 pieces: %d pieces, error %v", staging, pieces, err)
		}
		d.Close()
		if live := d.c.live(); len(live) != 0 {
			t.Errorf("staging %v: after a cancelled upload and Close: live objects %v", staging, live)
		}
	}
}

// The device's streaming read rate comes out positive and below any memory's (lavapipe
// reads the host's memory: a few GB/s on two cores).
func TestBandwidth(t *testing.T) {
	bw, err := Bandwidth(context.Background(), Options{Device: testDevice(t)}, 64<<20, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%.2f GB/s", bw/1e9)
	if bw < 1e7 || bw > 1e13 {
		t.Errorf("bandwidth %.3g B/s", bw)
	}
}
