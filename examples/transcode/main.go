// Command transcode rewrites every ternary tensor of a GGUF file in the other ternary
// format (PQ2_0 ↔ PTQ1_0), losslessly, and copies everything else byte for byte. It
// streams: neither file is ever held in memory.
//
// Only the tensors' types and data change. The metadata are copied byte for byte, in
// their order, with the file's GGUF version and alignment, so keys that describe the
// quantisation keep their original values: general.file_type and general.name still say
// what the input was (a PTQ1_0 file made from a PQ2_0 one still has the PQ2_0 file type,
// 141, and a name that may say PQ2_0). Loaders in this SDK go by the tensors' types; to
// relabel a file, edit those keys with the gguf package.
//
// Usage:
//
//	transcode -in A.gguf -out B.gguf -to pq2_0|ptq1_0
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"strings"

	"github.com/bonsai-go/sdk/gguf"
	"github.com/bonsai-go/sdk/internal/cli"
	"github.com/bonsai-go/sdk/ternary"
)

func main() {
	cfg, err := parseFlags(flag.CommandLine, os.Args[1:])
	if errors.Is(err, flag.ErrHelp) {
		os.Exit(0)
	}
	if err != nil {
		os.Exit(2) // the error is printed: by the flag package with the usage, or on one line
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	var progress func(done, total int64)
	if !cfg.quiet {
		progress = bar
	}
	n, err := transcodeFile(ctx, cfg.in, cfg.out, cfg.to, progress)
	if progress != nil {
		fmt.Fprintln(os.Stderr)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "transcode:", err)
		os.Exit(1)
	}
	fmt.Printf("wrote %s: %d ternary tensors as %s\n", cfg.out, n, cfg.to)
}

type config struct {
	in, out string
	to      ternary.Format
	quiet   bool
}

// parseFlags parses args into fs and checks them before any file is opened.
func parseFlags(fs *flag.FlagSet, args []string) (config, error) {
	var cfg config
	fs.StringVar(&cfg.in, "in", "", "input GGUF file")
	fs.StringVar(&cfg.out, "out", "", "output GGUF file (must differ from -in)")
	to := fs.String("to", "", "target ternary format: pq2_0 or ptq1_0")
	fs.BoolVar(&cfg.quiet, "q", false, "no progress bar")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: transcode -in A.gguf -out B.gguf -to pq2_0|ptq1_0\n\n"+
			"Rewrites every ternary tensor in the other format, losslessly; everything else is\n"+
			"copied byte for byte.\n\nflags:\n")
		fs.PrintDefaults()
	}
	if err := cli.ParseFlags(fs, args); err != nil {
		return cfg, err
	}
	if cfg.in == "" || cfg.out == "" || *to == "" {
		err := errors.New("-in, -out and -to are required")
		fmt.Fprintln(fs.Output(), err)
		fs.Usage()
		return cfg, err
	}
	var err error
	cfg.to, err = ternary.ParseFormat(*to)
	if err != nil {
		err = &cli.FlagError{Flag: "to", Value: strconv.Quote(*to), Want: "must be pq2_0 or ptq1_0"}
	}
	return cfg, cli.CheckFlags(fs, "transcode", err)
}

func bar(done, total int64) {
	const width = 40
	frac := float64(done) / float64(max(total, 1))
	fill := int(frac * width)
	fmt.Fprintf(os.Stderr, "\r[%s%s] %5.1f%%", strings.Repeat("=", fill), strings.Repeat(" ", width-fill), 100*frac)
}

// transcodeFile returns the number of ternary tensors converted.
func transcodeFile(ctx context.Context, inPath, outPath string, to ternary.Format, progress func(done, total int64)) (n int, err error) {
	if same, _ := sameFile(inPath, outPath); same {
		return 0, errors.New("-in and -out name the same file")
	}
	src, err := gguf.Open(inPath)
	if err != nil {
		return 0, err
	}
	defer src.Close()

	infos := make([]gguf.TensorInfo, len(src.Tensors))
	var total int64
	for i, t := range src.Tensors {
		infos[i] = t
		infos[i].Shape = append([]int64(nil), t.Shape...)
		if _, ok := ternary.FormatOf(t.Type); ok {
			infos[i].Type = to.TensorType()
		}
		size, err := t.Size()
		if err != nil {
			return 0, fmt.Errorf("tensor %q: %w", t.Name, err)
		}
		total += size
	}

	f, err := os.Create(outPath)
	if err != nil {
		return 0, err
	}
	defer func() {
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			os.Remove(outPath)
		}
	}()
	bw := bufio.NewWriterSize(f, 4<<20)
	w, err := gguf.NewWriter(bw, src.KV, infos, gguf.WithVersion(src.Version))
	if err != nil {
		return 0, err
	}
	var done int64
	for i, t := range src.Tensors {
		if err := ctx.Err(); err != nil {
			return n, err
		}
		data, err := src.TensorData(t.Name)
		if err != nil {
			return n, err
		}
		from, ok := ternary.FormatOf(t.Type)
		if !ok || from == to {
			if err := w.WriteTensor(t.Name, data); err != nil {
				return n, err
			}
		} else {
			if err := transcodeTensor(w, infos[i], data, from, to); err != nil {
				return n, fmt.Errorf("tensor %q: %w", t.Name, err)
			}
			n++
		}
		done += int64(len(data))
		if progress != nil {
			progress(done, total)
		}
	}
	if err := w.Close(); err != nil {
		return n, err
	}
	return n, bw.Flush()
}

// transcodeTensor converts in chunks of whole blocks, so memory stays small.
func transcodeTensor(w *gguf.Writer, info gguf.TensorInfo, data []byte, from, to ternary.Format) error {
	tw, err := w.BeginTensor(info.Name)
	if err != nil {
		return err
	}
	const chunkBlocks = 1 << 15
	blocks := len(data) / from.BlockBytes()
	buf := make([]byte, chunkBlocks*to.BlockBytes())
	for b := 0; b < blocks; b += chunkBlocks {
		nb := min(chunkBlocks, blocks-b)
		dst := buf[:nb*to.BlockBytes()]
		if err := ternary.Transcode(dst, to, data[b*from.BlockBytes():(b+nb)*from.BlockBytes()], from); err != nil {
			return err
		}
		if _, err := tw.Write(dst); err != nil {
			return err
		}
	}
	return nil
}

func sameFile(a, b string) (bool, error) {
	sa, err := os.Stat(a)
	if err != nil {
		return false, err
	}
	sb, err := os.Stat(b)
	if err != nil {
		return false, err
	}
	return os.SameFile(sa, sb), nil
}
