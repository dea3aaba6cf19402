// Command hfvocab writes a vocabulary-only GGUF file from a Hugging Face byte-level
// BPE tokenizer, or rewrites the pre-tokenizer name of an existing one.
//
// Usage:
//
//	hfvocab -tokenizer tokenizer.json -config tokenizer_config.json -pre NAME -o FILE
//	        [-arch qwen3] [-name NAME] [-vocab-size N] [-bos TEXT]
//	hfvocab -from FILE -pre NAME -o FILE
//
// A FILE ending in .gz is read or written gzip-compressed.
package main

import (
	"bytes"
	"compress/gzip"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/bonsai-go/sdk/gguf"
	"github.com/bonsai-go/sdk/internal/hfvocab"
)

func main() {
	err := run(os.Args[1:], os.Stderr)
	switch {
	case errors.Is(err, flag.ErrHelp):
		os.Exit(0)
	case errors.Is(err, errUsage):
		os.Exit(2)
	case err != nil:
		fmt.Fprintln(os.Stderr, "hfvocab:", strings.TrimPrefix(err.Error(), "hfvocab: "))
		os.Exit(1)
	}
}

var errUsage = errors.New("usage")

func run(args []string, stderr io.Writer) error {
	fs := flag.NewFlagSet("hfvocab", flag.ContinueOnError)
	fs.SetOutput(stderr)
	tok := fs.String("tokenizer", "", "tokenizer.json to convert")
	cfg := fs.String("config", "", "tokenizer_config.json to convert")
	from := fs.String("from", "", "an existing vocabulary GGUF to rewrite with another -pre (instead of -tokenizer and -config)")
	pre := fs.String("pre", "", "tokenizer.ggml.pre, the pre-tokenizer name (required)")
	arch := fs.String("arch", "qwen3", "general.architecture")
	name := fs.String("name", "", "general.name")
	vocabSize := fs.Int("vocab-size", 0, "pad the vocabulary to this many tokens with [PADi] unused tokens (0: none)")
	bos := fs.String("bos", "", "text of the BOS token when tokenizer_config.json names none")
	out := fs.String("o", "", "the GGUF file to write (required; .gz to compress)")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), "usage: hfvocab -tokenizer FILE -config FILE -pre NAME -o FILE [flags]\n"+
			"       hfvocab -from FILE -pre NAME -o FILE\n\n"+
			"Writes a vocabulary-only GGUF file (tokenizer metadata, no tensors) from a\n"+
			"Hugging Face byte-level BPE tokenizer, as llama.cpp's converter would.\n\nflags:\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	converting := *tok != "" || *cfg != ""
	if *pre == "" || *out == "" || fs.NArg() != 0 || converting == (*from != "") || converting && (*tok == "" || *cfg == "") {
		fs.Usage()
		return errUsage
	}

	var kv []gguf.KV
	if *from != "" {
		data, err := readFile(*from)
		if err != nil {
			return err
		}
		f, err := gguf.Parse(data)
		if err != nil {
			return err
		}
		kv = hfvocab.SetPre(f.KV, *pre)
	} else {
		tj, err := readFile(*tok)
		if err != nil {
			return err
		}
		cj, err := readFile(*cfg)
		if err != nil {
			return err
		}
		kv, err = hfvocab.Convert(tj, cj, hfvocab.Options{
			Pre: *pre, Architecture: *arch, Name: *name, VocabSize: *vocabSize, BOS: *bos,
		})
		if err != nil {
			return err
		}
	}
	var buf bytes.Buffer
	if err := hfvocab.Write(&buf, kv); err != nil {
		return err
	}
	data := buf.Bytes()
	if strings.HasSuffix(*out, ".gz") {
		var z bytes.Buffer
		zw, _ := gzip.NewWriterLevel(&z, gzip.BestCompression)
		zw.Write(data)
		if err := zw.Close(); err != nil {
			return err
		}
		data = z.Bytes()
	}
	return os.WriteFile(*out, data, 0o644)
}

// readFile reads a file, decompressing it when its name ends in .gz.
func readFile(path string) ([]byte, error) {
	data, err := os.ReadFile(path)
	if err != nil || !strings.HasSuffix(path, ".gz") {
		return data, err
	}
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return io.ReadAll(zr)
}
