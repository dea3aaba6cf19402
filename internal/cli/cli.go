// Package cli holds what the example programs share: the progress bar of a model's
// load, the loading boilerplate (a synthetic model when no file is given, the options
// every program offers, the line saying what runs where), one-line error reports, and
// the rules of the flags several programs have (CheckFlags), so that a flag accepts the
// same values everywhere and a bad one is refused before anything is loaded.
package cli

import (
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
)

// Fatal prints err on one line, prefixed with the program's name, to standard error
// and exits with status 1.
func Fatal(prog string, err error) {
	fmt.Fprintf(os.Stderr, "%s: %s\n", prog, OneLine(err))
	os.Exit(1)
}

// OneLine returns err's message on one line.
func OneLine(err error) string {
	msg := strings.TrimSpace(err.Error())
	msg = strings.ReplaceAll(msg, "\r\n", "\n")
	return strings.Join(strings.FieldsFunc(msg, func(r rune) bool { return r == '\n' }), "; ")
}

// IsTerminal reports whether w is a terminal (a character device), where a bar can
// redraw itself.
func IsTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0 && os.Getenv("TERM") != "dumb"
}

// Bytes formats a byte count: "512 B", "3.4 MB", "7.21 GB".
func Bytes(n int64) string {
	switch {
	case n >= 1e9:
		return fmt.Sprintf("%.2f GB", float64(n)/1e9)
	case n >= 1e6:
		return fmt.Sprintf("%.1f MB", float64(n)/1e6)
	case n >= 1e3:
		return fmt.Sprintf("%.1f kB", float64(n)/1e3)
	}
	return fmt.Sprintf("%d B", n)
}

// ParseFlags parses args into fs and refuses positional arguments: an unexpected one is
// reported with the usage, and returned as the error.
func ParseFlags(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		err := fmt.Errorf("unexpected argument %q", fs.Arg(0))
		fmt.Fprintln(fs.Output(), err)
		fs.Usage()
		return err
	}
	return nil
}
