// Command tokenize prints the token ids of the text on its standard input.
//
// Usage:
//
//	tokenize [-model FILE] [-special] < TEXT
//
// It reads all of standard input and prints the ids, separated by spaces, on one line:
// the format other tools read. No BOS token is added. With -special the text of special
// tokens such as <|im_start|> is read as those tokens, as llama.cpp's parse_special does
// (user-defined tokens such as <think> are always read as tokens).
//
// Without -model it uses the vocabulary of a synthetic tiny Bonsai model
// (internal/synth), and says so on standard error.
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/bonsai-go/sdk/bonsai/tokenizer"
	"github.com/bonsai-go/sdk/gguf"
	"github.com/bonsai-go/sdk/internal/cli"
	"github.com/bonsai-go/sdk/internal/synth"
)

func main() {
	err := run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	switch {
	case errors.Is(err, flag.ErrHelp):
		os.Exit(0)
	case errors.Is(err, errUsage):
		os.Exit(2)
	case err != nil:
		cli.Fatal("tokenize", err)
	}
}

// errUsage marks a command line that was wrong; the usage has been printed.
var errUsage = errors.New("usage")

func run(args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("tokenize", flag.ContinueOnError)
	fs.SetOutput(stderr)
	model := fs.String("model", "", "GGUF `file` whose tokenizer to use: a model or a vocabulary-only file, or\nhf:ORG/NAME/FILE to pull from the Hugging Face Hub (default: the vocabulary of a\nsynthetic tiny model)")
	special := fs.Bool("special", false, "read the text of control tokens such as <|im_start|> as those tokens")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), "usage: tokenize [-model FILE] [-special] < TEXT\n\n"+
			"Reads all of standard input and prints its token ids, space-separated, on one\n"+
			"line. No BOS token is added.\n\nflags:\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return fmt.Errorf("%w: %w", errUsage, err) // printed with the usage: exit status 2
	}
	if fs.NArg() != 0 {
		fs.Usage()
		return errUsage
	}

	var tok *tokenizer.Tokenizer
	var err error
	if *model == "" {
		fmt.Fprintln(stderr, "tokenize: no -model given: using the vocabulary of a synthetic tiny model (internal/synth)")
		tok, err = syntheticTokenizer()
	} else {
		var path string
		if path, err = cli.ModelPath(context.Background(), stderr, "tokenize", *model); err == nil {
			tok, err = openTokenizer(path)
		}
	}
	if err != nil {
		return err
	}

	text, err := io.ReadAll(stdin)
	if err != nil {
		return fmt.Errorf("reading standard input: %w", err)
	}
	ids := tok.Encode(string(text), *special)
	b := make([]byte, 0, 8*len(ids)+1)
	for i, id := range ids {
		if i > 0 {
			b = append(b, ' ')
		}
		b = strconv.AppendInt(b, int64(id), 10)
	}
	b = append(b, '\n')
	_, err = stdout.Write(b)
	return err
}

// openTokenizer reads the tokenizer of a GGUF file.
func openTokenizer(path string) (*tokenizer.Tokenizer, error) {
	f, err := gguf.Open(path)
	if err != nil {
		return nil, cli.Explain(path, err)
	}
	defer f.Close()
	tok, err := tokenizer.FromGGUF(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %s", path, strings.TrimPrefix(err.Error(), "tokenizer: "))
	}
	return tok, nil
}

// syntheticTokenizer returns the tokenizer of the synthetic tiny model.
func syntheticTokenizer() (*tokenizer.Tokenizer, error) {
	cfg, err := synth.Preset("tiny")
	if err != nil {
		return nil, err
	}
	kv, err := synth.Metadata(synth.Options{Config: cfg, Seed: 1})
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	w, err := gguf.NewWriter(&buf, kv, nil)
	if err != nil {
		return nil, err
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	f, err := gguf.Parse(buf.Bytes())
	if err != nil {
		return nil, err
	}
	return tokenizer.FromGGUF(f)
}
