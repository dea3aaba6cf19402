package cpu_test

import (
	"context"
	"math"
	"os"
	"testing"
	"unsafe"

	"github.com/bonsai-go/sdk/bonsai/backend"
	"github.com/bonsai-go/sdk/bonsai/cpu"
	"github.com/bonsai-go/sdk/gguf"
	"github.com/bonsai-go/sdk/internal/alloctest"
	"github.com/bonsai-go/sdk/internal/synth/synthtest"
	"github.com/bonsai-go/sdk/qwen35"
	"github.com/bonsai-go/sdk/ternary"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// residentAfterLoad touches every byte of w's products (so that the file's pages are
// resident), loads w with b, and returns the mapping's resident bytes before and after,
// as the kernel counts them, with the engine still open.
func residentAfterLoad(t *testing.T, b backend.Backend, w *qwen35.Weights) (before, after int64) {
	return countAfterLoad(t, b, w, alloctest.MappingResident)
}

// countAfterLoad is residentAfterLoad counting the bytes count says, of the memory that
// holds w's tensors.
func countAfterLoad(t *testing.T, b backend.Backend, w *qwen35.Weights, count func([]byte) (int64, error)) (before, after int64) {
	t.Helper()
	data := w.Output.Data
	var sum byte
	p := w.Plan()
	for _, site := range p.Sites() {
		for _, m := range site.Products {
			for i := 0; i < len(m.Data); i += os.Getpagesize() {
				sum += m.Data[i]
			}
		}
	}
	_ = sum
	before, err := count(data)
	require.NoError(t, err)
	e, err := b.Load(context.Background(), w, backend.LoadOptions{Threads: 2, Activations: backend.ActivationsInt8})
	require.NoError(t, err)
	t.Cleanup(func() { e.Close() })
	after, err = count(data)
	require.NoError(t, err)
	return before, after
}

// Where the interleaved copy serves decode steps and batches alike, the load hands the
// file's rows of every interleaved matrix back to the OS as it copies them: the mapped
// file's resident pages fall by (nearly) the products' bytes (TestPackReleases checks
// that they stay where batches still read them).
func TestLayoutReleasesFilePages(t *testing.T) {
	if !ternary.InterleavedBatchNative() {
		t.Skip("no native batched interleaved kernel on this CPU (AVX-512 VNNI): the file's rows stay in use")
	}
	page := int64(os.Getpagesize())
	w := synthtest.Weights(t, "small", 4, ternary.PQ2_0)
	products := productBytes(w)
	before, after := residentAfterLoad(t, cpu.New(), w)
	t.Logf("PQ2_0, auto: the mapping's resident bytes %d → %d (products %d)", before, after, products)
	// Each matrix may keep its two edge pages (shared with its neighbours).
	edges := 2 * page * int64(productCount(w))
	if before < products-edges {
		// Every product page was just read: a count short of them is not this mapping's
		// (qemu-user reports the host's smaps, whose addresses are not the guest's).
		t.Skipf("no /proc/self/smaps of this process (under qemu-user it is the host's): its count of the mapping (%d) misses the %d bytes of products just read", before, products)
	}
	assert.LessOrEqual(t, after, before-products+edges, "the products' file pages left resident memory")
}

// productCount returns the number of w's distinct product matrices.
func productCount(w *qwen35.Weights) int {
	p := w.Plan()
	seen := map[*qwen35.Matrix]bool{}
	for _, site := range p.Sites() {
		for _, m := range site.Products {
			seen[m] = true
		}
	}
	return len(seen)
}

// The same for a file read into memory (gguf.WithMmap(false)): the products' pages stop
// being the process's anonymous memory, so the copy takes their place there too.
func TestLayoutReleasesReadMemory(t *testing.T) {
	if !ternary.InterleavedBatchNative() {
		t.Skip("no native batched interleaved kernel on this CPU (AVX-512 VNNI): the file's rows stay in use")
	}
	page := int64(os.Getpagesize())
	f, err := gguf.Open(synthtest.Path(t, "small", 4, ternary.PQ2_0), gguf.WithMmap(false))
	require.NoError(t, err)
	t.Cleanup(func() { f.Close() })
	w, err := qwen35.Bind(f)
	require.NoError(t, err)
	products := productBytes(w)
	before, after := countAfterLoad(t, cpu.New(), w, func([]byte) (int64, error) {
		return alloctest.Anonymous(productSpan(w))
	})
	t.Logf("PQ2_0 read into memory, auto: the file's anonymous bytes %d → %d (products %d)", before, after, products)
	if before < products {
		t.Skipf("no /proc/self/pagemap of this process (under qemu-user it is the host's): its count of the file's memory (%d) misses the %d bytes of products just read", before, products)
	}
	edges := 2 * page * int64(productCount(w))
	assert.LessOrEqual(t, after, before-products+edges, "the products' pages left anonymous memory")
}

// productSpan returns the bytes from the first of w's products and output matrix to the
// end of the last: the part of the file that holds them.
func productSpan(w *qwen35.Weights) []byte {
	var first *byte
	lo, hi := uintptr(math.MaxUint), uintptr(0)
	add := func(b []byte) {
		p := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
		if p < lo {
			first, lo = unsafe.SliceData(b), p
		}
		hi = max(hi, p+uintptr(len(b)))
	}
	add(w.Output.Data)
	for _, site := range w.Plan().Sites() {
		for _, m := range site.Products {
			add(m.Data)
		}
	}
	return unsafe.Slice(first, hi-lo)
}
