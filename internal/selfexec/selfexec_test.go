package selfexec

import (
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
)

const childEnv = "SELFEXEC_CHILD"

// TestHelperChild is the child's side of TestCombinedOutput.
func TestHelperChild(t *testing.T) {
	switch os.Getenv(childEnv) {
	case "ok":
		os.Stdout.WriteString("child ran with ok\n")
	case "fail":
		t.Fatal("the child fails as asked")
	}
}

// The child sees the extra environment, its output comes back, and its failure is an
// exit error the caller can test, on amd64 and under qemu-user alike.
func TestCombinedOutput(t *testing.T) {
	out, err := CombinedOutput([]string{childEnv + "=ok"}, "-test.run=^TestHelperChild$", "-test.count=1")
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "child ran with ok") {
		t.Errorf("child output %q lacks its line", out)
	}
	out, err = CombinedOutput([]string{childEnv + "=fail"}, "-test.run=^TestHelperChild$", "-test.count=1")
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() == 0 {
		t.Fatalf("failing child: %v, want a non-zero exit\n%s", err, out)
	}
	if !strings.Contains(string(out), "the child fails as asked") {
		t.Errorf("failing child's output %q lacks its message", out)
	}
}

// Start runs the child while the caller reads its pipes, and Wait reports its exit.
func TestStart(t *testing.T) {
	for _, c := range []struct {
		env, line string
		fails     bool
	}{{"ok", "child ran with ok", false}, {"fail", "the child fails as asked", true}} {
		var out strings.Builder
		cmd, err := Start([]string{childEnv + "=" + c.env}, func(cmd *exec.Cmd) error {
			out.Reset()
			cmd.Stdout, cmd.Stderr = &out, &out
			return nil
		}, "-test.run=^TestHelperChild$", "-test.count=1")
		if err != nil {
			t.Fatalf("%s: Start: %v", c.env, err)
		}
		err = cmd.Wait()
		var exit *exec.ExitError
		if failed := errors.As(err, &exit) && exit.ExitCode() != 0; failed != c.fails || !c.fails && err != nil {
			t.Errorf("%s: Wait: %v, want a failure: %v\n%s", c.env, err, c.fails, out.String())
		}
		if !strings.Contains(out.String(), c.line) {
			t.Errorf("%s: output %q lacks %q", c.env, out.String(), c.line)
		}
	}
}

func TestQemuArch(t *testing.T) {
	for goarch, want := range map[string]string{"arm64": "aarch64", "amd64": "x86_64", "riscv64": "riscv64"} {
		if got := qemuArch(goarch); got != want {
			t.Errorf("qemuArch(%q) = %q, want %q", goarch, got, want)
		}
	}
}
