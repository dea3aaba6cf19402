package backendtest_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/bonsai-go/sdk/bonsai/backend"
	"github.com/bonsai-go/sdk/bonsai/backend/backendtest"
	"github.com/bonsai-go/sdk/bonsai/cpu"
	"github.com/bonsai-go/sdk/internal/selfexec"
	"github.com/bonsai-go/sdk/internal/synth/synthtest"
	"github.com/bonsai-go/sdk/ternary"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A fault is what a broken backend gets wrong.
type fault string

const (
	noFault fault = ""
	// batchFault: Forward nudges the logits of a batch's second sequence, as an engine
	// would whose batched arithmetic mixes up the sequences' rows.
	batchFault fault = "batch"
	// copyFault: CopyFrom does nothing and says it succeeded.
	copyFault fault = "copy"
)

// faulty wraps a backend, its engines and its states, passing every call through but
// for its fault.
type faulty struct {
	backend.Backend
	fault fault
}

type faultyEngine struct {
	backend.Engine
	fault fault
}

type faultyState struct {
	backend.State
	fault fault
}

func (b faulty) Load(ctx context.Context, m backend.Model, opt backend.LoadOptions) (backend.Engine, error) {
	e, err := b.Backend.Load(ctx, m, opt)
	if err != nil {
		return nil, err
	}
	return &faultyEngine{e, b.fault}, nil
}

func (e *faultyEngine) NewState(opt backend.StateOptions) (backend.State, error) {
	st, err := e.Engine.NewState(opt)
	if err != nil {
		return nil, err
	}
	return &faultyState{st, e.fault}, nil
}

func unwrap(st backend.State) backend.State {
	if f, ok := st.(*faultyState); ok {
		return f.State
	}
	return st
}

func (e *faultyEngine) Forward(ctx context.Context, batch []backend.Sequence) error {
	inner := make([]backend.Sequence, len(batch))
	for i, s := range batch {
		s.State = unwrap(s.State)
		inner[i] = s
	}
	if err := e.Engine.Forward(ctx, inner); err != nil {
		return err
	}
	if e.fault == batchFault && len(batch) > 1 && len(batch[1].Out) > 0 {
		batch[1].Out[0] += 0.5
	}
	return nil
}

func (st *faultyState) CopyFrom(src backend.State) error {
	if st.fault == copyFault {
		return nil
	}
	c, ok := st.State.(backend.StateCopier)
	if !ok {
		return errors.New("the wrapped state cannot copy")
	}
	return c.CopyFrom(unwrap(src))
}

// The suite passes the CPU backend, and the CPU backend wrapped without a fault: the
// faults below are what makes the suite fail, not the wrapping.
func TestRunPasses(t *testing.T) {
	m := synthtest.Weights(t, "tiny", 5, ternary.PQ2_0)
	t.Run("cpu", func(t *testing.T) { backendtest.Run(t, cpu.New(), m, backendtest.Options{}) })
	t.Run("wrapped", func(t *testing.T) { backendtest.Run(t, faulty{cpu.New(), noFault}, m, backendtest.Options{}) })
}

// faultEnv selects the fault TestHelperBroken runs the suite on.
const faultEnv = "BACKENDTEST_FAULT"

// TestHelperBroken is not a test of its own: TestRunFails runs it in a child process,
// where it runs the suite on a broken backend and must fail.
func TestHelperBroken(t *testing.T) {
	f := fault(os.Getenv(faultEnv))
	if f == noFault {
		return
	}
	backendtest.Run(t, faulty{cpu.New(), f}, synthtest.Weights(t, "tiny", 5, ternary.PQ2_0), backendtest.Options{})
}

// The suite fails a broken backend, in the check that covers what it breaks and in no
// other.
func TestRunFails(t *testing.T) {
	checks := []string{"BatchMatchesAlone", "Snapshot", "Copy", "Reset", "Cancel", "ClosedAndForeign"}
	for _, c := range []struct {
		fault   fault
		check   string
		message string
	}{
		{batchFault, "BatchMatchesAlone", "sequence 1 (9 tokens, logits 1) in a batch: |Δlogit| 0.5"},
		{copyFault, "Copy", "a CopyFrom copy's next steps"},
	} {
		t.Run(string(c.fault), func(t *testing.T) {
			out, err := selfexec.CombinedOutput([]string{faultEnv + "=" + string(c.fault)}, "-test.run=^TestHelperBroken$", "-test.count=1", "-test.v")
			var exit *exec.ExitError
			require.Truef(t, errors.As(err, &exit) && exit.ExitCode() != 0,
				"the suite on a backend with the %s fault: %v, want a failing exit\n%s", c.fault, err, out)
			for _, check := range checks {
				want := "--- PASS: TestHelperBroken/" + check + " "
				if check == c.check {
					want = "--- FAIL: TestHelperBroken/" + check + " "
				}
				assert.Truef(t, bytes.Contains(out, []byte(want)), "the output does not say %q", strings.TrimSpace(want))
			}
			assert.Truef(t, bytes.Contains(out, []byte(c.message)), "the output does not say %q", c.message)
			if t.Failed() {
				t.Logf("the child's output:\n%s", out)
			}
		})
	}
}
