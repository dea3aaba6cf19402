// Command pull downloads a model from the Hugging Face Hub into huggingface_hub's cache
// and prints its path.
//
// Usage:
//
//	pull [-revision REV] [-endpoint URL] [-offline] REPO FILE
//	pull hf:ORG/NAME/FILE
//
// For example:
//
//	go run ./examples/pull prism-ml/Ternary-Bonsai-2-27B-GGUF Ternary-Bonsai-2-27B-PQ2_0.gguf
//
// A progress bar with the rate and the time left goes to standard error, the path of the
// file (a link in the cache's snapshot) to standard output, so that
//
//	go run ./examples/chat -model "$(go run ./examples/pull REPO FILE)"
//
// works; every example's -model also takes hf:ORG/NAME/FILE itself. The cache is
// huggingface-cli's, read from the same environment: HF_HOME (default
// ~/.cache/huggingface), HF_HUB_CACHE, HF_ENDPOINT, HF_TOKEN (or the token `hf auth
// login` saved) for gated and private repositories, HF_HUB_OFFLINE. A file already
// there, downloaded by either, is not downloaded again. An interrupted download
// (a dropped connection, Ctrl-C) resumes where it stopped, and the file is checked
// against the sha256 the Hub gives before it is kept.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/signal"
	"strconv"
	"syscall"

	"github.com/bonsai-go/sdk/bonsai"
	"github.com/bonsai-go/sdk/internal/cli"
	"github.com/bonsai-go/sdk/internal/hub"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	switch {
	case errors.Is(err, flag.ErrHelp):
		os.Exit(0)
	case errors.Is(err, errUsage):
		os.Exit(2)
	case err != nil:
		cli.Fatal("pull", err)
	}
}

// checkEndpoint refuses an -endpoint that is not an http or https URL with a host, before
// anything is asked of it.
func checkEndpoint(endpoint string) error {
	if endpoint == "" {
		return nil
	}
	u, err := url.Parse(endpoint)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return &cli.FlagError{Flag: "endpoint", Value: strconv.Quote(endpoint), Want: "must be an http or https URL, as https://huggingface.co"}
	}
	return nil
}

// errUsage marks a command line that was wrong; the usage has been printed.
var errUsage = errors.New("usage")

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("pull", flag.ContinueOnError)
	fs.SetOutput(stderr)
	revision := fs.String("revision", "", "branch, tag or commit (default main)")
	endpoint := fs.String("endpoint", "", "the Hub's `URL` (default HF_ENDPOINT, else https://huggingface.co)")
	offline := fs.Bool("offline", false, "use the cache only (as HF_HUB_OFFLINE=1)")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), "usage: pull [flags] REPO FILE\n       pull [flags] hf:ORG/NAME/FILE\n\n"+
			"Downloads FILE of the Hugging Face Hub repository REPO into huggingface_hub's cache\n"+
			"(resuming an interrupted download, checking its sha256) and prints its path.\n"+
			"HF_TOKEN (or `hf auth login`) for gated repositories; HF_HOME for the cache.\n\nflags:\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return fmt.Errorf("%w: %w", errUsage, err) // printed with the usage: exit status 2
	}
	if err := cli.CheckFlags(fs, "pull", checkEndpoint(*endpoint)); err != nil {
		return fmt.Errorf("%w: %w", errUsage, err) // printed on one line
	}
	var ref hub.Ref
	switch fs.NArg() {
	case 1:
		r, err := hub.ParseRef(fs.Arg(0))
		if err != nil {
			fmt.Fprintln(stderr, "pull:", err)
			fs.Usage()
			return errUsage
		}
		ref = r
	case 2:
		ref = hub.Ref{Repo: fs.Arg(0), File: fs.Arg(1)}
	default:
		fs.Usage()
		return errUsage
	}
	opts := []bonsai.PullOption{}
	if ref.Revision != "" {
		opts = append(opts, bonsai.WithPullRevision(ref.Revision))
	}
	if *revision != "" {
		opts = append(opts, bonsai.WithPullRevision(*revision))
	}
	if *endpoint != "" {
		opts = append(opts, bonsai.WithPullEndpoint(*endpoint))
	}
	if *offline {
		opts = append(opts, bonsai.WithPullOffline())
	}
	bar := cli.NewPullBar(stderr, "pull", ref.File)
	path, err := bonsai.Pull(ctx, ref.Repo, ref.File, append(opts, bonsai.WithPullProgress(bar.Progress))...)
	bar.Done()
	if err != nil {
		return cli.ExplainPull(err)
	}
	fmt.Fprintln(stdout, path)
	return nil
}
