//go:build linux && (amd64 || arm64)

package mslemu

import (
	"encoding/binary"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/require"

	"github.com/bonsai-go/sdk/internal/gpu"
)

var testCacheDir string

// TestMain uses the default library cache (so reruns do not recompile), or a fresh
// temporary one with MSLEMU_TEST_FRESH_CACHE=1.
func TestMain(m *testing.M) {
	dir := defaultCacheDir()
	cleanup := false
	if os.Getenv("MSLEMU_TEST_FRESH_CACHE") != "" {
		var err error
		dir, err = os.MkdirTemp("", "mslemu-test-cache-")
		if err != nil {
			panic(err)
		}
		cleanup = true
	}
	testCacheDir = dir
	code := m.Run()
	if cleanup {
		os.RemoveAll(dir)
	}
	os.Exit(code)
}

// testSources reads testdata/*.metal and *.h.
func testSources(t testing.TB) map[string]string {
	t.Helper()
	src := map[string]string{}
	for _, pat := range []string{"testdata/*.metal", "testdata/*.h"} {
		files, err := filepath.Glob(pat)
		require.NoError(t, err)
		for _, f := range files {
			data, err := os.ReadFile(f)
			require.NoError(t, err)
			src[filepath.Base(f)] = string(data)
		}
	}
	return src
}

var allKernels = []string{
	"vadd", "apply_params", "reduce_tg", "reduce_dyn", "race", "race_fixed", "deadlock_return", "deadlock_split",
	"atomics", "builtins", "oob_read", "int_div", "stack_hog", "matvec", "scale_f32", "scale_f16", "limited",
	"simd_ops", "simd_diverged", "half_convert", "half_arith", "unpack", "literals", "vectors", "ns_fill", "anon_fill", "coverage", "add_one_f32", "add_one_i32",
	"tg_float4_into_float", "tg_float2_into_float", "device_uint_at_odd", "tg_float_view_of_float4", "tg_placement",
}

// newDevice returns an emulator device; the test is skipped when there is no clang++
// (unless MSLEMU_REQUIRE is set, as CI should).
func newDevice(t testing.TB, opts ...Option) gpu.Device {
	t.Helper()
	opts = append([]Option{WithCacheDir(testCacheDir)}, opts...)
	d, err := New(opts...)
	if errors.Is(err, ErrNoCompiler) && os.Getenv("MSLEMU_REQUIRE") == "" {
		t.Skip("no clang++: install clang to run the MSL emulator tests")
	}
	require.NoError(t, err)
	t.Cleanup(func() { d.Close() })
	return d
}

var compileMu sync.Mutex

// pipelines compiles the test kernels on d (the library is built once per test binary,
// then found in the cache).
func pipelines(t testing.TB, d gpu.Device) map[string]gpu.Pipeline {
	t.Helper()
	compileMu.Lock()
	defer compileMu.Unlock()
	ps, err := d.Compile(testSources(t), map[string]string{"MSLEMU_TEST": "1"}, allKernels)
	require.NoError(t, err)
	return ps
}

func bufF32(t testing.TB, d gpu.Device, vals []float32) gpu.Buffer {
	t.Helper()
	b, err := d.NewBuffer(4 * len(vals))
	require.NoError(t, err)
	copy(b.Contents(), unsafe.Slice((*byte)(unsafe.Pointer(&vals[0])), 4*len(vals)))
	t.Cleanup(b.Release)
	return b
}

func bufBytes(t testing.TB, d gpu.Device, n int) gpu.Buffer {
	t.Helper()
	b, err := d.NewBuffer(n)
	require.NoError(t, err)
	t.Cleanup(b.Release)
	return b
}

func f32s(b gpu.Buffer) []float32 {
	c := b.Contents()
	return unsafe.Slice((*float32)(unsafe.Pointer(&c[0])), len(c)/4)
}

func u32s(b gpu.Buffer) []uint32 {
	c := b.Contents()
	return unsafe.Slice((*uint32)(unsafe.Pointer(&c[0])), len(c)/4)
}

func u16s(b gpu.Buffer) []uint16 {
	c := b.Contents()
	return unsafe.Slice((*uint16)(unsafe.Pointer(&c[0])), len(c)/2)
}

func u32bytes(v uint32) []byte {
	b := make([]byte, 4)
	binary.LittleEndian.PutUint32(b, v)
	return b
}

// run dispatches one kernel and waits.
func run(t testing.TB, d gpu.Device, p gpu.Pipeline, grid, threads gpu.Size, args ...gpu.Arg) error {
	t.Helper()
	cb, err := d.NewCommandBuffer()
	require.NoError(t, err)
	cb.Dispatch(p, grid, threads, args...)
	cb.Commit()
	return cb.Wait()
}

func sameBits(a, b float32) bool {
	if a != a && b != b {
		return true
	}
	return math.Float32bits(a) == math.Float32bits(b)
}

func contains(t testing.TB, err error, parts ...string) {
	t.Helper()
	require.Error(t, err)
	for _, p := range parts {
		require.True(t, strings.Contains(err.Error(), p), "error %q does not contain %q", err.Error(), p)
	}
}

func uintptrOf(b []byte) uintptr { return uintptr(unsafe.Pointer(&b[0])) }

func nowNano() int64 { return time.Now().UnixNano() }
