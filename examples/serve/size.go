package main

import (
	"errors"
	"fmt"
	"math/big"
	"regexp"
	"strings"
)

// sizeUnits are the units a size may carry, case aside: the decimal ones (kB = 1000 B)
// and the binary ones (KiB = 1024 B).
var sizeUnits = []struct {
	name string
	mult int64
}{
	{"B", 1},
	{"kB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"TB", 1e12},
	{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"TiB", 1 << 40},
}

var sizeRE = regexp.MustCompile(`^([0-9]+(?:\.[0-9]+)?)([A-Za-z]*)$`)

var errSize = errors.New("want a size such as 2GiB, 512MiB, 1.5GB or 0")

// parseSize reads a size in bytes: a number, whole or decimal, then a unit (B, kB, MB,
// GB, TB, KiB, MiB, GiB or TiB, in any case; none means bytes). The size must be a
// whole number of bytes and fit an int64.
func parseSize(s string) (int64, error) {
	m := sizeRE.FindStringSubmatch(s)
	if m == nil {
		return 0, fmt.Errorf("%q: %w", s, errSize)
	}
	mult := int64(1)
	if m[2] != "" {
		mult = 0
		for _, u := range sizeUnits {
			if strings.EqualFold(m[2], u.name) {
				mult = u.mult
			}
		}
		if mult == 0 {
			return 0, fmt.Errorf("%q: unknown unit %q: want B, kB, MB, GB, TB, KiB, MiB, GiB or TiB", s, m[2])
		}
	}
	if len(m[1]) > 40 {
		return 0, fmt.Errorf("%q: too large", s)
	}
	r, ok := new(big.Rat).SetString(m[1])
	if !ok {
		return 0, fmt.Errorf("%q: %w", s, errSize)
	}
	r.Mul(r, new(big.Rat).SetInt64(mult))
	switch {
	case !r.IsInt():
		return 0, fmt.Errorf("%q is not a whole number of bytes", s)
	case !r.Num().IsInt64():
		return 0, fmt.Errorf("%q: too large", s)
	}
	return r.Num().Int64(), nil
}

// formatSize writes n in the largest binary unit that divides it ("2GiB", "1536B", "0"),
// which parseSize reads back as n.
func formatSize(n int64) string {
	if n == 0 {
		return "0"
	}
	for i := len(sizeUnits) - 1; i >= 0; i-- {
		u := sizeUnits[i]
		if strings.HasSuffix(u.name, "iB") && n%u.mult == 0 {
			return fmt.Sprintf("%d%s", n/u.mult, u.name)
		}
	}
	return fmt.Sprintf("%dB", n)
}

// sizeFlag is a flag.Value of a size in bytes.
type sizeFlag struct{ n *int64 }

func (f sizeFlag) String() string {
	if f.n == nil {
		return "0"
	}
	return formatSize(*f.n)
}

func (f sizeFlag) Set(s string) error {
	n, err := parseSize(s)
	if err != nil {
		return err
	}
	*f.n = n
	return nil
}
