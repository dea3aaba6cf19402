package backend_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/bonsai-go/sdk/bonsai/backend"
	"github.com/bonsai-go/sdk/gguf"
)

// The registry is global: these names are the test's own, registered once per process
// (a test registering them would panic on its second run under -count).
const (
	testArchB = "backend-test-arch-b"
	testArchA = "backend-test-arch-a"
)

// errTestBind is what the test architectures' Bind returns, so that Lookup can be seen
// to return the registered function.
var errTestBind = errors.New("test architecture bound")

func init() {
	for _, name := range []string{testArchB, testArchA} {
		backend.Register(backend.Architecture{Name: name, Bind: func(*gguf.File, func(int, int)) (backend.Model, error) {
			return nil, errTestBind
		}})
	}
}

func TestLookup(t *testing.T) {
	a, err := backend.Lookup(testArchA)
	if err != nil {
		t.Fatalf("Lookup(%q): %v", testArchA, err)
	}
	if a.Name != testArchA {
		t.Fatalf("Lookup(%q) returned %q", testArchA, a.Name)
	}
	if _, err := a.Bind(nil, nil); !errors.Is(err, errTestBind) {
		t.Fatalf("the looked-up Bind returned %v, want the registered one's error", err)
	}

	_, err = backend.Lookup("no-such-architecture")
	if !errors.Is(err, backend.ErrUnsupported) || !errors.Is(err, backend.ErrUnknownArchitecture) {
		t.Fatalf("Lookup of an unknown name: %v, want ErrUnsupported and ErrUnknownArchitecture", err)
	}
	msg := err.Error()
	for _, want := range []string{`"no-such-architecture"`, testArchA, testArchB} {
		if !strings.Contains(msg, want) {
			t.Errorf("%q does not name %s", msg, want)
		}
	}
	for _, name := range backend.Architectures() { // every registered one, the test's or not
		if !strings.Contains(msg, name) {
			t.Errorf("%q does not list the registered %q", msg, name)
		}
	}
}

func TestArchitectures(t *testing.T) {
	names := backend.Architectures()
	if !slices.IsSorted(names) {
		t.Errorf("Architectures() = %q, not sorted", names)
	}
	a, b := slices.Index(names, testArchA), slices.Index(names, testArchB)
	if a < 0 || b < 0 || a > b {
		t.Errorf("Architectures() = %q, want %q and %q in that order", names, testArchA, testArchB)
	}
	if len(slices.Compact(slices.Clone(names))) != len(names) {
		t.Errorf("Architectures() = %q lists a name twice", names)
	}
}

func TestRegisterPanics(t *testing.T) {
	bind := func(*gguf.File, func(int, int)) (backend.Model, error) { return nil, nil }
	for _, c := range []struct {
		name string
		a    backend.Architecture
	}{
		{"a duplicate name", backend.Architecture{Name: testArchA, Bind: bind}},
		{"an empty name", backend.Architecture{Bind: bind}},
		{"a nil Bind", backend.Architecture{Name: "backend-test-arch-nil-bind"}},
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("Register of %s did not panic", c.name)
				}
			}()
			backend.Register(c.a)
		}()
	}
	// The refused registrations left no trace.
	if _, err := backend.Lookup("backend-test-arch-nil-bind"); err == nil {
		t.Error("an architecture without a Bind was registered")
	}
	if _, err := backend.Lookup(""); err == nil {
		t.Error("an architecture without a name was registered")
	}
	if a, _ := backend.Lookup(testArchA); a.Bind == nil {
		t.Error("the duplicate replaced the registered architecture")
	} else if _, err := a.Bind(nil, nil); !errors.Is(err, errTestBind) {
		t.Error("the duplicate replaced the registered architecture")
	}
}
