package cli

import (
	"flag"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/bonsai-go/sdk/bonsai"
	"github.com/bonsai-go/sdk/bonsai/cpu"
	"github.com/bonsai-go/sdk/internal/synth"
	"github.com/bonsai-go/sdk/ternary"
)

// A FlagError is a flag whose value is outside what the flag accepts. Its message is
// the one line every program prints: "-max-tokens -1: must be ≥ 0".
type FlagError struct {
	Flag  string // without the dash
	Value string // as given
	Want  string // the rule: "must be ≥ 0", "must be one of f16, f32, int8 (alias q8), q4"
}

func (e *FlagError) Error() string { return "-" + e.Flag + " " + e.Value + ": " + e.Want }

// number is what the range checks compare.
type number interface {
	~int | ~int64 | ~float64
}

// checkRange reports v as out of range when ok(v) is false, or when it is a float
// that is not finite (flag parses "NaN" and "Inf").
func checkRange[T number](name string, v T, want string, ok func(T) bool) error {
	f := float64(v)
	if math.IsNaN(f) || math.IsInf(f, 0) || !ok(v) {
		return &FlagError{Flag: name, Value: fmt.Sprint(v), Want: "must be " + want}
	}
	return nil
}

// AtLeast checks min ≤ v.
func AtLeast[T number](name string, v, min T) error {
	return checkRange(name, v, fmt.Sprintf("≥ %v", min), func(v T) bool { return v >= min })
}

// Above checks min < v.
func Above[T number](name string, v, min T) error {
	return checkRange(name, v, fmt.Sprintf("> %v", min), func(v T) bool { return v > min })
}

// Within checks lo ≤ v ≤ hi.
func Within[T number](name string, v, lo, hi T) error {
	return checkRange(name, v, fmt.Sprintf("in [%v, %v]", lo, hi), func(v T) bool { return lo <= v && v <= hi })
}

// OneOf checks that v is one of values.
func OneOf(name, v string, values ...string) error {
	for _, a := range values {
		if v == a {
			return nil
		}
	}
	return &FlagError{Flag: name, Value: fmt.Sprintf("%q", v), Want: "must be one of " + strings.Join(values, ", ")}
}

// KVNames are the values of -kv, in every program: int8's alias q8 is llama.cpp's name.
const KVNames = "f16, f32, int8 (alias q8), q4"

// KVUsage is the help of -kv.
const KVUsage = "KV cache precision: " + KVNames + " (f16: 64 KiB per token for the 27B model; int8 about half of it, q4 about 28%, f32 twice)"

// ParseKV returns the KV cache precision -kv names (KVNames).
func ParseKV(name string) (bonsai.KVPrecision, error) {
	switch name {
	case "f16":
		return bonsai.KVFloat16, nil
	case "f32":
		return bonsai.KVFloat32, nil
	case "int8", "q8":
		return bonsai.KVInt8, nil
	case "q4":
		return bonsai.KVQ4, nil
	}
	return 0, &FlagError{Flag: "kv", Value: fmt.Sprintf("%q", name), Want: "must be one of " + KVNames}
}

// ParseActivations returns the activations -activations names: int8 or float32.
func ParseActivations(name string) (bonsai.Activations, error) {
	switch name {
	case "int8":
		return bonsai.ActivationsInt8, nil
	case "float32":
		return bonsai.ActivationsFloat32, nil
	}
	return 0, OneOf("activations", name, "int8", "float32")
}

// rules are the accepted values of the flags several programs share, by name: a flag
// means the same, and accepts the same, in every program that has it. A rule sees the
// flag's value (flag.Getter) and skips a flag of another type.
var rules = map[string]func(name string, v any) error{
	"threads":           intRule(func(n string, v int) error { return AtLeast(n, v, 0) }),
	"context":           intRule(func(n string, v int) error { return AtLeast(n, v, 0) }),
	"max-tokens":        intRule(func(n string, v int) error { return AtLeast(n, v, 0) }),
	"thinking-budget":   intRule(func(n string, v int) error { return AtLeast(n, v, 0) }),
	"top-k":             intRule(func(n string, v int) error { return AtLeast(n, v, 0) }),
	"batch-tokens":      intRule(func(n string, v int) error { return AtLeast(n, v, 1) }),
	"prompt-tokens":     intRule(func(n string, v int) error { return AtLeast(n, v, 0) }),
	"gen-tokens":        intRule(func(n string, v int) error { return AtLeast(n, v, 1) }),
	"seed":              int64Rule(func(n string, v int64) error { return AtLeast(n, v, -1) }),
	"temperature":       floatRule(func(n string, v float64) error { return AtLeast(n, v, 0) }),
	"top-p":             floatRule(topP),
	"min-p":             floatRule(func(n string, v float64) error { return Within(n, v, 0, 1) }),
	"repeat-penalty":    floatRule(func(n string, v float64) error { return Above(n, v, 0) }),
	"presence-penalty":  floatRule(func(n string, v float64) error { return Within(n, v, -2, 2) }),
	"frequency-penalty": floatRule(func(n string, v float64) error { return Within(n, v, -2, 2) }),
	"kv":                stringRule(func(_, v string) error { _, err := ParseKV(v); return err }),
	"activations":       stringRule(func(_, v string) error { _, err := ParseActivations(v); return err }),
	"backend":           stringRule(func(n, v string) error { return OneOf(n, v, Backends...) }),
	"layout":            stringRule(func(n, v string) error { return OneOf(n, v, Layouts...) }),
	"weight-format":     stringRule(weightFormat),
	"preset": stringRule(func(n, v string) error {
		if v == "" {
			return nil
		}
		return OneOf(n, v, synth.Presets()...)
	}),
	"bandwidth-time": func(n string, v any) error {
		if d, ok := v.(time.Duration); ok && d <= 0 {
			return &FlagError{Flag: n, Value: d.String(), Want: "must be > 0"}
		}
		return nil
	},
}

func weightFormat(n, v string) error {
	if _, err := ternary.ParseFormat(v); v != "" && err != nil {
		return &FlagError{Flag: n, Value: strconv.Quote(v), Want: "must be pq2_0 or ptq1_0"}
	}
	return nil
}

func topP(n string, v float64) error {
	return checkRange(n, v, "in (0, 1]", func(v float64) bool { return 0 < v && v <= 1 })
}

// Layouts are the values of -layout (cpu.ParseLayout).
var Layouts = []string{cpu.LayoutAuto.String(), cpu.LayoutFile.String(), cpu.LayoutInterleaved.String()}

func intRule(f func(string, int) error) func(string, any) error {
	return func(n string, v any) error {
		if i, ok := v.(int); ok {
			return f(n, i)
		}
		return nil
	}
}

func int64Rule(f func(string, int64) error) func(string, any) error {
	return func(n string, v any) error {
		if i, ok := v.(int64); ok {
			return f(n, i)
		}
		return nil
	}
}

func floatRule(f func(string, float64) error) func(string, any) error {
	return func(n string, v any) error {
		if x, ok := v.(float64); ok {
			return f(n, x)
		}
		return nil
	}
}

func stringRule(f func(string, string) error) func(string, any) error {
	return func(n string, v any) error {
		if s, ok := v.(string); ok {
			return f(n, s)
		}
		return nil
	}
}

// OwnRule is a program's check of a flag that shares its name with a ruled one but
// accepts more (logits' -backend also takes metal-emulator): given to CheckFlags, it
// replaces the shared rule of that flag. err is the check's result, nil when the value
// is good.
func OwnRule(name string, err error) error { return &ownRule{name, err} }

type ownRule struct {
	name string
	err  error
}

func (o *ownRule) Error() string {
	if o.err == nil {
		return "-" + o.name + ": checked by the program"
	}
	return o.err.Error()
}

func (o *ownRule) Unwrap() error { return o.err }

// CheckFlags checks, once fs has parsed its arguments, every flag of fs that several
// programs share (-threads, -context, -max-tokens, -temperature, -top-p, -kv, …: each
// its default or the value given) against its one rule, then the program's own checks,
// in order (OwnRule replaces a shared rule). The first error is printed to fs.Output()
// on one line, "prog: -top-p 2: must be in (0, 1]", and returned: the caller exits with
// status 2, as for the flag package's own errors, before it loads anything.
func CheckFlags(fs *flag.FlagSet, prog string, checks ...error) error {
	own := map[string]bool{}
	for i, err := range checks {
		if o, ok := err.(*ownRule); ok {
			own[o.name] = true
			checks[i] = o.err
		}
	}
	var first error
	fs.VisitAll(func(f *flag.Flag) {
		if first != nil || own[f.Name] {
			return
		}
		rule, ok := rules[f.Name]
		g, isGetter := f.Value.(flag.Getter)
		if !ok || !isGetter {
			return
		}
		first = rule(f.Name, g.Get())
	})
	if first == nil {
		for _, err := range checks {
			if err != nil {
				first = err
				break
			}
		}
	}
	if first != nil {
		fmt.Fprintf(fs.Output(), "%s: %s\n", prog, OneLine(first))
	}
	return first
}
