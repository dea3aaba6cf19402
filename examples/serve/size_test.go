package main

import (
	"math"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseSize(t *testing.T) {
	for in, want := range map[string]int64{
		"0": 0, "0B": 0, "1": 1, "512": 512, "1536B": 1536,
		"1kB": 1000, "1KB": 1000, "2MB": 2000000, "1.5GB": 1500000000, "3TB": 3000000000000,
		"1KiB": 1024, "512MiB": 512 * 1024 * 1024, "2GiB": 2 * 1024 * 1024 * 1024, "2gib": 2 * 1024 * 1024 * 1024,
		"1.5GiB": 1610612736, "0.5KiB": 512, "1TiB": 1099511627776,
		"8589934591GiB":       8589934591 * 1073741824, // just below 2⁶³
		"9223372036854775807": math.MaxInt64,
	} {
		got, err := parseSize(in)
		if assert.NoError(t, err, in) {
			assert.Equal(t, want, got, in)
		}
	}
	for in, msg := range map[string]string{
		"":                    "want a size such as",
		"-1":                  "want a size such as",
		"2 GiB":               "want a size such as",
		"GiB":                 "want a size such as",
		"1.GiB":               "want a size such as",
		".5GiB":               "want a size such as",
		"1e9":                 "want a size such as",
		"2G":                  `unknown unit "G": want B, kB, MB, GB, TB, KiB, MiB, GiB or TiB`,
		"2PiB":                `unknown unit "PiB"`,
		"0x10":                "want a size such as",
		"1.5e":                `unknown unit "e"`,
		"0.3B":                "not a whole number of bytes",
		"0.1KiB":              "not a whole number of bytes",
		"8589934592GiB":       "too large", // 2⁶³
		"9223372036854775808": "too large",
		"99999999999999999999999999999999999999999999": "too large",
	} {
		_, err := parseSize(in)
		if assert.Error(t, err, in) {
			assert.Contains(t, err.Error(), msg, in)
			assert.Contains(t, err.Error(), strconv.Quote(in), "the error names the input")
		}
	}
}

func TestFormatSize(t *testing.T) {
	for n, want := range map[int64]string{0: "0", 1: "1B", 1000: "1000B", 1024: "1KiB", 1536: "1536B", 2 << 30: "2GiB",
		512 << 20: "512MiB", 3 << 40: "3TiB", 5 << 50: "5120TiB"} {
		assert.Equal(t, want, formatSize(n), "%d", n)
		back, err := parseSize(want)
		require.NoError(t, err)
		assert.Equal(t, n, back)
	}
}

// FuzzParseSize: any input gives a size or an error, never a panic; a size is not
// negative, and written by formatSize it reads back the same.
func FuzzParseSize(f *testing.F) {
	for _, s := range []string{"0", "2GiB", "512MiB", "1.5GB", "0.5KiB", "1e9", "-1", "", "9223372036854775807",
		"8589934592GiB", "1.000000000000000000001TiB", "2 GiB", "kib", "00000000000000000000001B"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, err := parseSize(s)
		if err != nil {
			return
		}
		if n < 0 {
			t.Fatalf("%q: %d", s, n)
		}
		back, err := parseSize(formatSize(n))
		if err != nil || back != n {
			t.Fatalf("%q: %d written %q reads back %d, %v", s, n, formatSize(n), back, err)
		}
	})
}
