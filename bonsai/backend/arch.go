package backend

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/bonsai-go/sdk/gguf"
)

// Architecture is a model family the SDK can load, keyed by the GGUF
// general.architecture its files carry. A family registers itself from its package's
// init, as image formats do with image.RegisterFormat, so that a program that imports
// the package (bonsai imports qwen35) can open its files.
type Architecture struct {
	// Name is the general.architecture value ("qwen35").
	Name string
	// Bind checks a file of the family and binds its tensors, calling progress (when not
	// nil) after each tensor with the number bound and the number in all.
	Bind func(f *gguf.File, progress func(done, total int)) (Model, error)
}

var (
	// ErrUnsupported is wrapped by the errors of a file that is a GGUF but not a model
	// the SDK runs: an unknown architecture, or a file of a known family that lacks what
	// the SDK needs (an unrotated qwen35 model, say).
	ErrUnsupported = errors.New("not a model this SDK runs")
	// ErrUnknownArchitecture is wrapped, beside ErrUnsupported, by Lookup's error for an
	// architecture no package registered.
	ErrUnknownArchitecture = errors.New("unknown architecture")
)

var (
	archMu sync.RWMutex
	archs  = map[string]Architecture{}
)

// Register makes an architecture available to Lookup. Registering a name twice, or an
// architecture without a name or a Bind, panics: it is a programming error of the
// registering package.
func Register(a Architecture) {
	if a.Name == "" || a.Bind == nil {
		panic("backend: Register of an architecture without a name or a Bind")
	}
	archMu.Lock()
	defer archMu.Unlock()
	if _, dup := archs[a.Name]; dup {
		panic("backend: architecture " + a.Name + " registered twice")
	}
	archs[a.Name] = a
}

// Lookup returns the architecture registered under name, or an error wrapping
// ErrUnsupported and ErrUnknownArchitecture that lists the registered ones.
func Lookup(name string) (Architecture, error) {
	archMu.RLock()
	a, ok := archs[name]
	archMu.RUnlock()
	if !ok {
		return Architecture{}, fmt.Errorf("%w: %w %q (registered: %s)", ErrUnsupported, ErrUnknownArchitecture, name, strings.Join(Architectures(), ", "))
	}
	return a, nil
}

// Architectures returns the registered names, sorted.
func Architectures() []string {
	archMu.RLock()
	defer archMu.RUnlock()
	names := make([]string, 0, len(archs))
	for n := range archs {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}
