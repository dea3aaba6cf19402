package clitest

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// ChildArgs returns the arguments RunChild passed in env, and whether the process is
// such a child: a test binary's TestMain then runs the program's main with them.
func ChildArgs(env string) ([]string, bool) {
	v, ok := os.LookupEnv(env)
	if !ok {
		return nil, false
	}
	if v == "" {
		return nil, true
	}
	return strings.Split(v, "\n"), true
}

// RunChild runs the test binary again as the program (its TestMain calls main when
// ChildArgs(env) says so) with args, and returns what it wrote and its exit status: the
// real command, exit status included.
func RunChild(t testing.TB, env string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), env+"="+strings.Join(args, "\n"))
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err = cmd.Run()
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		code = exit.ExitCode()
	case err != nil:
		t.Fatal(err)
	}
	return out.String(), errOut.String(), code
}
