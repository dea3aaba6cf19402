// Package selfexec re-runs the current test binary in a child process, the way tests
// prove that a check fails (the child runs it on broken input and must exit non-zero).
//
// Under qemu-user (go test -exec qemu-aarch64) the binary is for another architecture
// and the host kernel cannot exec it directly; the child is then run through the same
// emulator, found on PATH, so such tests run on every platform CI covers instead of
// being skipped there.
package selfexec

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"syscall"
)

// CombinedOutput runs the test binary with args and env appended to the environment,
// and returns what it wrote to stdout and stderr together. A non-zero exit is returned
// as an *exec.ExitError, as exec.Cmd.CombinedOutput does.
func CombinedOutput(env []string, args ...string) ([]byte, error) {
	out, err := run(os.Args[0], env, args)
	if err == nil || !errors.Is(err, syscall.ENOEXEC) {
		return out, err
	}
	emu, lerr := exec.LookPath("qemu-" + qemuArch(runtime.GOARCH))
	if lerr != nil {
		return out, fmt.Errorf("selfexec: %s cannot be executed here (%w) and no emulator for %s is on PATH", os.Args[0], err, runtime.GOARCH)
	}
	return run(emu, env, append([]string{os.Args[0]}, args...))
}

// Start starts the test binary with args and env appended to the environment, as
// CombinedOutput runs it, for a test that talks to the child while it runs (a server it
// sends a signal to, say). setup, when not nil, is called on the command before it
// starts, to set its pipes; it may be called twice, the second time for the emulator's
// command.
func Start(env []string, setup func(*exec.Cmd) error, args ...string) (*exec.Cmd, error) {
	start := func(name string, args []string) (*exec.Cmd, error) {
		cmd := exec.Command(name, args...)
		cmd.Env = append(os.Environ(), env...)
		if setup != nil {
			if err := setup(cmd); err != nil {
				return nil, err
			}
		}
		return cmd, cmd.Start()
	}
	cmd, err := start(os.Args[0], args)
	if err == nil || !errors.Is(err, syscall.ENOEXEC) {
		return cmd, err
	}
	emu, lerr := exec.LookPath("qemu-" + qemuArch(runtime.GOARCH))
	if lerr != nil {
		return nil, fmt.Errorf("selfexec: %s cannot be executed here (%w) and no emulator for %s is on PATH", os.Args[0], err, runtime.GOARCH)
	}
	return start(emu, append([]string{os.Args[0]}, args...))
}

func run(name string, env, args []string) ([]byte, error) {
	cmd := exec.Command(name, args...)
	cmd.Env = append(os.Environ(), env...)
	return cmd.CombinedOutput()
}

// qemuArch names GOARCH the way qemu-user's binaries do.
func qemuArch(goarch string) string {
	switch goarch {
	case "arm64":
		return "aarch64"
	case "amd64":
		return "x86_64"
	case "386":
		return "i386"
	case "ppc64le":
		return "ppc64le"
	case "loong64":
		return "loongarch64"
	}
	return goarch
}
