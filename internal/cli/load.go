package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/bonsai-go/sdk/bonsai"
	"github.com/bonsai-go/sdk/bonsai/cpu"
	"github.com/bonsai-go/sdk/bonsai/vulkan"
	"github.com/bonsai-go/sdk/gguf"
	"github.com/bonsai-go/sdk/hadamard"
	"github.com/bonsai-go/sdk/internal/synth"
	"github.com/bonsai-go/sdk/metal"
	"github.com/bonsai-go/sdk/qwen35"
	"github.com/bonsai-go/sdk/ternary"
)

// ModelFlags are the loading options every program that runs a model offers.
type ModelFlags struct {
	// Model is the GGUF file, or a model reference hf:ORG/NAME/FILE to pull from the
	// Hugging Face Hub (ModelPath); "" for the synthetic tiny model.
	Model   string
	Threads int  // 0 for every core (bonsai.WithThreads)
	Context int  // tokens; 0 for the model's, capped by bonsai
	Verify  bool // scan every ternary tensor at load
	Warmup  bool // read every weight page at load
	// BatchTiles keeps the batched kernels' copy of the weights (cpu.WithBatchTiles).
	BatchTiles bool
	// Layout is how the CPU backend keeps the ternary weights (cpu.ParseLayout; "" or
	// "auto" for its default).
	Layout string
	// WeightFormat is the format the CPU backend transcodes the ternary weights to at
	// load (ternary.ParseFormat; "" to keep the file's).
	WeightFormat string
	// Backend is auto (the default when empty), cpu, metal or vulkan.
	Backend string
	// CPU are further options of the CPU backend.
	CPU []cpu.Option
}

// Backends are the values of -backend.
var Backends = []string{"auto", "cpu", "metal", "vulkan"}

// Register adds -model, -threads, -context, -verify, -warmup, -backend, -batch-tiles,
// -layout and -weight-format to fs.
func (f *ModelFlags) Register(fs *flag.FlagSet) {
	fs.StringVar(&f.Model, "model", "", ModelUsage)
	fs.IntVar(&f.Threads, "threads", 0, ThreadsUsage)
	fs.IntVar(&f.Context, "context", 0, "context size in tokens, ≥ 0 (0: the model's, at most 32768)")
	fs.BoolVar(&f.Verify, "verify", false, "scan every ternary weight at load and refuse a damaged file (about 1 s per 2 GB)")
	fs.BoolVar(&f.Warmup, "warmup", false, "read every weight page at load, so that the first token does not wait for the disk")
	fs.BoolVar(&f.BatchTiles, "batch-tiles", false, "CPU: keep a second copy of the weights kept as in the file in the batched kernels' layout, made at load (cpu.WithBatchTiles): batches of a few sequences run faster, for 1.06× the weights' memory (nothing for interleaved weights, whose batches read their copy as fast)")
	fs.StringVar(&f.Backend, "backend", "auto", "where the model runs: auto (Metal on Apple silicon, else a Vulkan GPU if there is one, else the CPU), cpu, metal or vulkan (a GPU, or Mesa's lavapipe when it is the only Vulkan device; BONSAI_VULKAN_DEVICE picks one by index or name)")
	fs.StringVar(&f.Layout, "layout", "auto", LayoutUsage)
	fs.StringVar(&f.WeightFormat, "weight-format", "", WeightFormatUsage)
}

// WeightFormatUsage is the help of -weight-format.
const WeightFormatUsage = "CPU: transcode the ternary weights to `format` pq2_0 or ptq1_0 at load (cpu.WithWeightFormat; default: as the file has them). A PTQ1_0 file as pq2_0 runs in PQ2_0's interleaved layout where this CPU has none of PTQ1_0's (AVX2, NEON): on AVX2 about twice the decode speed, for 16% more memory"

// ThreadsUsage is the help of -threads.
var ThreadsUsage = fmt.Sprintf("CPU threads, ≥ 0 (0: every core, %d here)", runtime.NumCPU())

// ModelUsage is the help of -model.
const ModelUsage = "GGUF model `file`, or hf:ORG/NAME/FILE (hf:ORG/NAME@REVISION/FILE) to pull it from the Hugging Face Hub into its cache on first use (HF_TOKEN, HF_HOME, HF_ENDPOINT as huggingface-cli) (default: a tiny synthetic model with random weights)"

// LayoutUsage is the help of -layout.
const LayoutUsage = "CPU: how to keep the ternary weights: auto (interleaved in row tiles at load where this CPU's kernels read them for decode steps and batches alike: PQ2_0 on AVX-512 VNNI, AVX-VNNI, AVX2 and NEON, PTQ1_0 on AVX-512 VNNI and AVX-VNNI; the file's pages then leave memory; else as the file has them), file, or interleaved (also where only decode steps would read the copy, which then comes on top of the file's pages)"

// LayoutNote says how the CPU backend keeps w's ternary matrices under -layout name:
// "interleaved (K kernels)", K the kernels of the matrices' format, or "as in the file".
func LayoutNote(name string, w any) string {
	q, ok := w.(*qwen35.Weights)
	if !ok {
		return fileNote
	}
	return LayoutNoteFormat(name, q.Output.Format)
}

// LayoutNoteFormat is LayoutNote for ternary matrices of format f (those of a
// -weight-format transcode, say).
func LayoutNoteFormat(name string, f ternary.Format) string {
	l, err := cpu.ParseLayout(name)
	if name == "" || err != nil {
		l = cpu.LayoutAuto
	}
	if l.Resolve(f) == cpu.LayoutInterleaved {
		kernels := ternary.InterleavedKernel()
		if f == ternary.PTQ1_0 {
			kernels = ternary.Interleaved3Kernel()
		}
		return "interleaved (" + kernels + " kernels)"
	}
	return fileNote
}

// WeightsNote says how the CPU backend keeps w's ternary matrices under -layout layout and
// -weight-format format: LayoutNote's, of the format transcoded to where there is one
// ("… as PQ2_0 (transcoded at load)"); for a PTQ1_0 model kept as in the file where
// PQ2_0 would be interleaved, with what -weight-format pq2_0 would do.
func WeightsNote(layout, format string, w any) string {
	q, ok := w.(*qwen35.Weights)
	if !ok {
		return fileNote
	}
	own := q.Output.Format
	if to, err := ternary.ParseFormat(format); err == nil && to != own {
		return LayoutNoteFormat(layout, to) + " as " + to.String() + " (transcoded at load)"
	}
	note := LayoutNoteFormat(layout, own)
	if own == ternary.PTQ1_0 && note == fileNote && LayoutNoteFormat(layout, ternary.PQ2_0) != fileNote {
		note += " (no interleaved PTQ1_0 kernels on this CPU: -weight-format pq2_0 runs it in PQ2_0's, on AVX2 about twice as fast, for 16% more memory)"
	}
	return note
}

// fileNote is LayoutNote's word for the file's layout.
const fileNote = "as in the file"

// Loaded is an open model, and the temporary directory of a synthetic one.
type Loaded struct {
	Model     *bonsai.Model
	Path      string
	Synthetic bool
	dir       string
}

// Close closes the model and removes a synthetic model's file.
func (l *Loaded) Close() error {
	err := l.Model.Close()
	if l.dir != "" {
		os.RemoveAll(l.dir)
	}
	return err
}

// Load opens the model flags name, with a progress bar on stderr, and prints what runs
// where: "prog: model FILE (…); backend cpu, N threads, context N tokens". Without a
// file it writes the tiny synthetic model to a temporary directory and says that its
// weights are random (what tells the user that the output is gibberish). Errors are
// one line, naming the file and what is wrong with it: missing, not a Bonsai model,
// damaged. A model reference, hf:ORG/NAME/FILE, is pulled from the Hub first (ModelPath).
// opts are passed on to bonsai.Open after the flags' own.
func Load(ctx context.Context, stderr io.Writer, prog string, f ModelFlags, opts ...bonsai.Option) (*Loaded, error) {
	cpuOpts := f.CPU
	if f.BatchTiles {
		cpuOpts = append(cpuOpts, cpu.WithBatchTiles())
	}
	if f.Layout != "" && f.Layout != "auto" {
		l, err := cpu.ParseLayout(f.Layout)
		if err != nil {
			return nil, fmt.Errorf("-layout: %w", err)
		}
		cpuOpts = append(cpuOpts, cpu.WithLayout(l))
	}
	if f.WeightFormat != "" {
		if err := weightFormat("weight-format", f.WeightFormat); err != nil {
			return nil, err
		}
		wf, _ := ternary.ParseFormat(f.WeightFormat)
		cpuOpts = append(cpuOpts, cpu.WithWeightFormat(wf))
	}
	path, err := ModelPath(ctx, stderr, prog, f.Model)
	if err != nil {
		return nil, err
	}
	l := &Loaded{Path: path}
	if l.Path == "" {
		dir, err := os.MkdirTemp("", "bonsai-"+prog+"-")
		if err != nil {
			return nil, err
		}
		c, err := synth.Preset("tiny")
		if err == nil {
			l.Path = filepath.Join(dir, "tiny.gguf")
			err = synth.WriteFile(ctx, l.Path, synth.Options{Config: c, Seed: 1}, nil)
		}
		if err != nil {
			os.RemoveAll(dir)
			return nil, fmt.Errorf("writing the synthetic model: %w", err)
		}
		l.dir, l.Synthetic = dir, true
		fmt.Fprintf(stderr, "%s: no -model given: using a tiny synthetic model whose weights are RANDOM, so its text is gibberish\n", prog)
	}
	bar := NewBar(stderr, prog)
	all := []bonsai.Option{bonsai.WithThreads(f.Threads), bonsai.WithLoadContext(ctx), bonsai.WithProgress(bar.Progress),
		bonsai.WithVerify(f.Verify), bonsai.WithWarmup(f.Warmup)}
	be, why, err := ChooseBackend(f.Backend, cpuOpts)
	if err != nil {
		if l.dir != "" {
			os.RemoveAll(l.dir)
		}
		return nil, err
	}
	all = append(all, bonsai.WithBackend(be))
	if f.Context > 0 {
		all = append(all, bonsai.WithContextSize(f.Context))
	}
	start := time.Now()
	m, err := bonsai.Open(l.Path, append(all, opts...)...)
	bar.Done()
	if err != nil {
		err = Explain(l.Path, err) // before the synthetic file is removed: it reads the file
		if l.dir != "" {
			os.RemoveAll(l.dir)
		}
		return nil, err
	}
	l.Model = m
	size := int64(0)
	if st, err := os.Stat(l.Path); err == nil {
		size = st.Size()
	}
	fmt.Fprintf(stderr, "%s: model %s: %v, %s; loaded in %.2f s\n",
		prog, filepath.Base(l.Path), m.Driver().Weights(), Bytes(size), time.Since(start).Seconds())
	weights := ""
	if m.Backend() == "cpu" {
		weights = "; weights " + WeightsNote(f.Layout, f.WeightFormat, m.Driver().Weights())
		if f.BatchTiles {
			weights += ", batch tiles"
		}
	}
	fmt.Fprintf(stderr, "%s: backend %s, %d threads, context %d tokens (%s)%s\n", prog, m.Backend(), m.Threads(), m.ContextSize(), why(), weights)
	return l, nil
}

// Explain rewrites an error of bonsai.Open on path as one line that says what is wrong
// with the file: that it does not exist or cannot be read, that it is not a GGUF file,
// not a Ternary Bonsai model, or damaged. It wraps err.
func Explain(path string, err error) error {
	detail := trimPrefixes(OneLine(err), path)
	switch {
	case errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded):
		return fmt.Errorf("loading %s: interrupted: %w", path, err)
	}
	if be := (*bonsai.BackendError)(nil); errors.As(err, &be) {
		// The file was fine: say what the backend lacks, not what the file is.
		detail := strings.TrimPrefix(OneLine(be.Err), be.Backend+": ")
		return &explained{fmt.Sprintf("backend %s cannot run %s: %s", be.Backend, path, detail), err}
	}
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return &explained{fmt.Sprintf("model file %s does not exist", path), err}
	case errors.Is(err, fs.ErrPermission):
		return &explained{fmt.Sprintf("model file %s cannot be read: permission denied", path), err}
	case errors.Is(err, bonsai.ErrNotBonsai):
		return &explained{fmt.Sprintf("%s is a GGUF file but not a Ternary Bonsai model (%s)", path, strings.TrimPrefix(strings.TrimPrefix(detail, "general.architecture: "), bonsai.ErrNotBonsai.Error()+": ")), err}
	case errors.Is(err, syscall.EISDIR):
		return &explained{fmt.Sprintf("%s is a directory, not a model file", path), err}
	case errors.Is(err, gguf.ErrVersion):
		return &explained{fmt.Sprintf("%s is a GGUF file of a version this program does not read (%s)", path, detail), err}
	}
	if st, serr := os.Stat(path); serr == nil && st.IsDir() {
		return &explained{fmt.Sprintf("%s is a directory, not a model file", path), err}
	}
	if !hasMagic(path) {
		return &explained{fmt.Sprintf("%s is not a GGUF file (it does not start with \"GGUF\")", path), err}
	}
	for _, damaged := range []error{gguf.ErrFormat, gguf.ErrUnknownType, qwen35.ErrWeights, qwen35.ErrConfig, hadamard.ErrInvalid,
		hadamard.ErrUnsupported, ternary.ErrCode3, ternary.ErrSize, ternary.ErrFormat} {
		if errors.Is(err, damaged) {
			return &explained{fmt.Sprintf("%s is damaged (truncated or corrupt): %s", path, detail), err}
		}
	}
	if strings.Contains(detail, "tokenizer") || strings.Contains(detail, "non-finite scale") {
		return &explained{fmt.Sprintf("%s is damaged (truncated or corrupt): %s", path, detail), err}
	}
	return &explained{fmt.Sprintf("cannot load %s: %s", path, detail), err}
}

type explained struct {
	msg string
	err error
}

func (e *explained) Error() string { return e.msg }
func (e *explained) Unwrap() error { return e.err }

// hasMagic reports whether the file starts with GGUF's magic.
func hasMagic(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	var b [4]byte
	_, err = io.ReadFull(f, b[:])
	return err == nil && string(b[:]) == "GGUF"
}

// trimPrefixes drops the package prefixes and the file name that lead a nested error
// message ("bonsai: gguf: /x/m.gguf: offset 12: …").
func trimPrefixes(msg, path string) string {
	for {
		before := msg
		for _, p := range []string{"bonsai: ", "gguf: ", "qwen35: ", path + ": "} {
			msg = strings.TrimPrefix(msg, p)
		}
		if msg == before {
			return msg
		}
	}
}

// ChooseBackend returns the backend -backend names, with the CPU backend's options, and
// a function that says, once the model is loaded, what was chosen and why: auto picks
// Metal on Apple silicon, else the first Vulkan GPU (never Mesa's lavapipe, which is
// slower than the CPU backend), else the CPU. The CPU options with another backend
// are an error.
func ChooseBackend(name string, cpuOpts []cpu.Option) (bonsai.Backend, func() string, error) {
	return chooseBackend(name, cpuOpts, platform{runtime.GOOS, runtime.GOARCH, vulkan.Probe})
}

// platform is what the automatic choice looks at: the system, and the Vulkan GPUs.
type platform struct {
	goos, goarch string
	probe        func(vulkan.Options) (vulkan.Choice, error)
}

func chooseBackend(name string, cpuOpts []cpu.Option, p platform) (bonsai.Backend, func() string, error) {
	fixed := func(s string) func() string { return func() string { return s } }
	if name == "" {
		name = "auto"
	}
	if name != "cpu" && name != "auto" && len(cpuOpts) > 0 {
		return nil, nil, fmt.Errorf("-batch-tiles, -layout and -weight-format are options of the CPU backend, not of -backend %s", name)
	}
	vulkanOn := func(o vulkan.Options, why string) (bonsai.Backend, func() string) {
		var got vulkan.Choice
		b := vulkan.New(vulkan.WithDevice(o.Device), vulkan.WithChoice(func(c vulkan.Choice) { got = c }))
		return b, func() string { return fmt.Sprintf("%s: %s, a %s device: %s", why, got.Name, got.Type, got.Reason) }
	}
	switch name {
	case "cpu":
		return bonsai.CPU(cpuOpts...), fixed("asked for"), nil
	case "metal":
		return metal.New(), fixed("asked for"), nil
	case "vulkan":
		b, why := vulkanOn(vulkan.Options{}, "asked for")
		return b, why, nil
	case "auto":
		if p.goos == "darwin" && p.goarch == "arm64" && len(cpuOpts) == 0 {
			return metal.New(), fixed("auto: Apple silicon"), nil
		}
		if len(cpuOpts) > 0 {
			return bonsai.CPU(cpuOpts...), fixed("auto: CPU options given"), nil
		}
		c, err := p.probe(vulkan.Options{GPUOnly: true})
		if errors.Is(err, vulkan.ErrNoDevice) {
			return bonsai.CPU(), fixed("auto: no Vulkan GPU"), nil
		} else if err != nil {
			return bonsai.CPU(), fixed("auto: no Vulkan GPU: " + OneLine(err)), nil
		}
		b, why := vulkanOn(vulkan.Options{Device: strconv.Itoa(c.Index)}, "auto")
		return b, why, nil
	}
	return nil, nil, fmt.Errorf("-backend %q: unknown (have: %s)", name, strings.Join(Backends, ", "))
}
