// Command train is the triad's demo: it trains a small MLP on a synthetic
// regression task made from a seed and shows what the determinism contract
// buys, on the GPU or, without one, on the CPU backend with the same bits:
//
//   - two runs from one seed end with bit-identical weights (SHA-256 of each);
//   - a sample's outputs are the same bits at batch 1 as inside a large batch;
//   - a training step captured once as a CUDA graph and replayed gives the
//     bits of the step run directly (GPU only).
//
// Usage:
//
//	go run ./triad/cmd/train [--tier f32|typed|tc] [--dtype f32|bf16|f16] [--act relu|gelu|swiglu|geglu|glu|reglu] [--sparse24|--fp8] [--cpu] [--quiet] ...
//
// train -h says what it does and lists every flag. A progress bar is drawn
// on stderr only when stderr is a terminal; in a pipe or a log the output is
// plain lines, and --quiet leaves out the bar and the loss lines.
//
// The digests printed for the f32 and typed tiers are the same on the GPU
// and on the CPU backend; for the tensor-core tier (--tier tc) the CPU
// backend reproduces an sm_90 (Hopper) GPU's digests. The exit status is 1
// when a check fails, 2 on a bad command line or an error.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/detgemm/detgemm/gemm"
	"github.com/detgemm/detgemm/triad"
)

type options struct {
	tier, dtype, act         string
	in, hidden, out          int
	batch, steps, epochs     int
	seed                     uint64
	lr, momentum             float64
	cpu, quiet, sparse24     bool
	fp8                      bool
	device, workers, compare int
	// bar draws a progress bar on stderr, rewriting its line; only when
	// stderr is a terminal, so a pipe or a log gets no carriage returns or
	// escape codes.
	bar bool
}

// about is the help text's description of the program.
const about = `Usage: train [flags]

train trains a small MLP (in → hidden → hidden → out, ReLU, GELU or a gated
block between the layers, mean squared error, SGD with momentum) on a
synthetic regression task made from a seed, twice, and checks what the
determinism contract promises:

  - the two runs end with bit-identical weights (a SHA-256 of each);
  - a sample's outputs are the same bits at batch 1 as inside one large batch;
  - a training step captured once as a CUDA graph and replayed gives the bits
    of the step run directly (GPU only).

Without a usable GPU (or with --cpu) it runs on the CPU backend, which gives
the same bits: for the tiers f32 and typed on every GPU, for the tier tc those
of an sm_90 (Hopper) GPU.

Tiers (--tier) and their activation dtypes (--dtype):
  f32    IEEE f32 products, f32 activations (--dtype f32)
  typed  bf16 or f16 activations upcast exactly to f32, the f32 products, one
         rounding at the store (--dtype bf16, the default, or f16)
  tc     tensor cores, bf16 or f16 activations, f32 accumulation
         (--dtype bf16, the default, or f16)

Activations (--act), each fused into the hidden layers' products (the
Matmul epilogues ReluAuxBias/GeluAuxBias forward, DReluBgrad/DGeluBgrad
backward, which also sum the bias gradient):
  relu   x for x > 0, NaN for NaN, else +0 (the default)
  gelu   GELU's tanh form, a fixed sequence of f32 operations, so the GPU
         and the CPU backend give the same bits
Gated activations make each hidden layer a gated block: its Linear projects
to 2·hidden columns, a linear half a and a gate half b (blocks of 8 columns
each, alternating), and the block's output is a·act(b), hidden wide
(--hidden a multiple of 8). Matmul epilogues Gated…AuxBias forward, DGated…
backward; the bias gradient is a separate pass:
  swiglu a·silu(b) = a·b·σ(b)
  geglu  a·gelu(b), GELU's tanh form
  glu    a·σ(b)
  reglu  a·relu(b)

--sparse24 makes every layer's weight 2:4 sparse along its input: in every
group of 4 consecutive input rows of a column at most 2 weights are nonzero.
The dense f32 master is pruned by magnitude at initialisation, that pattern is
fixed for the run and re-applied after every optimizer step (the pruned
weights stay exactly +0), the forward runs on the sparse tensor cores, and dX
and dW stay dense with the masked weight. It needs --tier tc, --in and
--hidden multiples of 16, and --act relu or gelu.

--fp8 runs every layer's forward and dX on Hopper's fp8 tensor cores
(Transformer Engine's recipe with a scale per row, so batch invariance
holds): the forward quantizes each row of x to E4M3 with its own scale and
the weight to E4M3 with a scale per output column; dX quantizes each row of
the gradient to E5M2 and the weight to E4M3 with a scale per input row; both
products add tensor-core chains of 128 inputs in f32 and store bf16 or f16.
dW, the bias gradients and the f32 master weights stay as without --fp8; the
quantized weights are refreshed after every step. It needs --tier tc, --in,
--hidden and --out multiples of 16 (e.g. --out 16), --act relu or gelu, not
--sparse24, and on a GPU an sm_90 (Hopper); the CPU backend gives the bits of
an sm_90 GPU.

Exit status: 0 when every check passes, 1 when a check fails, 2 on bad flags
or an error.

Flags:
`

// parseFlags reads the command line. Help, and what was wrong with a bad
// command line, go to errOut.
func parseFlags(args []string, errOut io.Writer) (options, error) {
	var o options
	fs := flag.NewFlagSet("train", flag.ContinueOnError)
	fs.SetOutput(errOut)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), about)
		fs.PrintDefaults()
	}
	fs.StringVar(&o.tier, "tier", "f32", "numerical tier: f32, typed or tc (tensor cores)")
	fs.StringVar(&o.dtype, "dtype", "", "activation dtype: f32 (tier f32), bf16 or f16 (tiers typed and tc; default bf16)")
	fs.StringVar(&o.act, "act", "relu", "hidden layers' activation: relu, gelu, or gated: swiglu, geglu, glu, reglu")
	fs.IntVar(&o.in, "in", 32, "input width")
	fs.IntVar(&o.hidden, "hidden", 64, "hidden width (two hidden layers)")
	fs.IntVar(&o.out, "out", 8, "output width (16 with --fp8)")
	fs.IntVar(&o.batch, "batch", 256, "rows per training step")
	fs.IntVar(&o.steps, "steps", 32, "steps per epoch (the data set has steps·batch samples)")
	fs.IntVar(&o.epochs, "epochs", 10, "epochs")
	fs.Uint64Var(&o.seed, "seed", 1, "seed of the task, the teacher and the initial weights")
	fs.Float64Var(&o.lr, "lr", 0.05, "learning rate")
	fs.Float64Var(&o.momentum, "momentum", 0.9, "momentum")
	fs.BoolVar(&o.sparse24, "sparse24", false, "2:4 sparse weights along each layer's input, forward on the sparse tensor cores (--tier tc; --in and --hidden multiples of 16; --act relu or gelu)")
	fs.BoolVar(&o.fp8, "fp8", false, "fp8 forward and dX (E4M3 activations and weights, E5M2 gradients, a scale per row) on Hopper's fp8 tensor cores (--tier tc; --in, --hidden and --out multiples of 16; --act relu or gelu)")
	fs.BoolVar(&o.cpu, "cpu", false, "use the CPU backend even when a GPU is present")
	fs.BoolVar(&o.quiet, "quiet", false, "print the results only: no progress bar, no loss line per epoch")
	fs.IntVar(&o.device, "device", 0, "CUDA device ordinal")
	fs.IntVar(&o.workers, "workers", 0, "CPU backend goroutines (0: GOMAXPROCS); never changes a bit")
	fs.IntVar(&o.compare, "compare", 1024, "rows compared at batch 1 against the whole data set in one batch")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	// --fp8 needs every width a multiple of 16: its output width defaults to
	// 16 rather than 8 unless --out is given.
	outSet := false
	fs.Visit(func(f *flag.Flag) { outSet = outSet || f.Name == "out" })
	if o.fp8 && !outSet {
		o.out = 16
	}
	if fs.NArg() > 0 {
		err := fmt.Errorf("unexpected arguments %q: train takes flags only (train -h lists them)", fs.Args())
		fmt.Fprintln(errOut, "train:", err)
		return o, err
	}
	return o, nil
}

func main() {
	o, err := parseFlags(os.Args[1:], os.Stderr)
	switch {
	case errors.Is(err, flag.ErrHelp):
		os.Exit(0)
	case err != nil:
		os.Exit(2) // parseFlags said why
	}
	o.bar = !o.quiet && isTerminal(os.Stderr)
	ok, err := run(o, os.Stdout, os.Stderr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "train:", err)
		os.Exit(2)
	}
	if !ok {
		os.Exit(1)
	}
}

// isTerminal reports whether f is a character device (a terminal) rather
// than a pipe or a file.
func isTerminal(f *os.File) bool {
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// config turns the flags into a TrainConfig.
func (o options) config() (triad.TrainConfig, error) {
	cfg := triad.TrainConfig{In: o.in, Hidden: o.hidden, Out: o.out, Batch: o.batch, Steps: o.steps, Seed: o.seed,
		Opt: triad.SGD{LR: float32(o.lr), Momentum: float32(o.momentum)}}
	switch o.tier {
	case "f32":
		cfg.Tier, cfg.DType = gemm.TierF32, triad.F32
		if o.dtype != "" && o.dtype != "f32" {
			return cfg, fmt.Errorf("--tier f32 runs f32 activations; use --tier typed for --dtype %s", o.dtype)
		}
	case "typed", "tc":
		cfg.Tier = gemm.TierTyped
		if o.tier == "tc" {
			cfg.Tier = gemm.TierTensorCore
		}
		switch o.dtype {
		case "", "bf16":
			cfg.DType = triad.BF16
		case "f16":
			cfg.DType = triad.F16
		default:
			return cfg, fmt.Errorf("--tier %s runs bf16 or f16 activations, not %q", o.tier, o.dtype)
		}
	default:
		return cfg, fmt.Errorf("--tier %q: want f32, typed or tc", o.tier)
	}
	act, err := triad.ParseAct(o.act)
	if o.act == "" {
		act, err = triad.ActReLU, nil
	}
	if err != nil {
		return cfg, fmt.Errorf("--act %q: want relu, gelu, swiglu, geglu, glu or reglu", o.act)
	}
	if act.Gated() && o.hidden%8 != 0 {
		return cfg, fmt.Errorf("--hidden %d: --act %s makes gated blocks, which need a multiple of 8", o.hidden, act)
	}
	cfg.Act = act
	if o.sparse24 {
		switch {
		case cfg.Tier != gemm.TierTensorCore:
			return cfg, fmt.Errorf("--sparse24 runs on the sparse tensor cores: use --tier tc, not %s", o.tier)
		case act.Gated():
			return cfg, fmt.Errorf("--sparse24 takes --act relu or gelu, not %s (the sparse forward has no gated epilogues)", act)
		case o.in%16 != 0 || o.hidden%16 != 0:
			return cfg, fmt.Errorf("--sparse24 needs --in and --hidden multiples of 16 (the compressed rows are whole 16-byte chunks), not %d and %d", o.in, o.hidden)
		}
		cfg.Sparse24 = true
	}
	if o.fp8 {
		switch {
		case cfg.Tier != gemm.TierTensorCore:
			return cfg, fmt.Errorf("--fp8 runs on the fp8 tensor cores: use --tier tc, not %s", o.tier)
		case o.sparse24:
			return cfg, fmt.Errorf("--fp8 and --sparse24 do not combine (the fp8 product is dense): choose one")
		case act != triad.ActReLU && act != triad.ActGELU:
			return cfg, fmt.Errorf("--fp8 takes --act relu or gelu, not %s (the fp8 product has no gated epilogues)", act)
		case o.in%16 != 0 || o.hidden%16 != 0 || o.out%16 != 0:
			return cfg, fmt.Errorf("--fp8 needs --in, --hidden and --out multiples of 16 (each is the K of an fp8 product, read in whole 16-byte rows), not %d, %d and %d: try --out 16",
				o.in, o.hidden, o.out)
		}
		cfg.FP8 = true
	}
	if o.epochs <= 0 {
		return cfg, fmt.Errorf("--epochs %d: want at least 1", o.epochs)
	}
	return cfg, nil
}

// backend opens the GPU unless --cpu, and falls back to the CPU, saying
// why.
func backend(o options, stdout io.Writer) (triad.Backend, string) {
	cpu := func() (triad.Backend, string) {
		return triad.NewCPU(o.workers), fmt.Sprintf("cpu (gemm/ref, %d workers)", workers(o.workers))
	}
	if o.cpu {
		return cpu()
	}
	g, err := triad.OpenGPU(o.device)
	if err != nil {
		fmt.Fprint(stdout, fallbackNote(err))
		return cpu()
	}
	dev := g.Context().Device()
	return g, fmt.Sprintf("gpu %d (%s, %s)", dev.Ordinal(), dev.Name(), g.Engine().Arch())
}

// fallbackNote says that the CPU backend runs and why: the loader's whole
// error, each of its lines (the candidates tried, the hint) indented on a
// line of its own.
func fallbackNote(err error) string {
	var b strings.Builder
	b.WriteString("no usable GPU; running on the CPU backend. The reason:\n")
	for _, line := range strings.Split(strings.TrimRight(err.Error(), "\n"), "\n") {
		b.WriteString("  " + strings.TrimRight(line, " \t\r") + "\n")
	}
	return b.String()
}

func run(o options, stdout, stderr io.Writer) (bool, error) {
	cfg, err := o.config()
	if err != nil {
		return false, err
	}
	fmt.Fprintf(stdout, "triad demo: MLP %d→%d→%d→%d (%v), tier %v (%v), batch %d, %d steps × %d epochs, seed %d, lr %g, momentum %g\n",
		cfg.In, cfg.Hidden, cfg.Hidden, cfg.Out, cfg.Act, cfg.Tier, cfg.DType, cfg.Batch, cfg.Steps, o.epochs, cfg.Seed, o.lr, o.momentum)
	if cfg.Act.Gated() {
		fmt.Fprintf(stdout, "gated blocks: each hidden layer projects to %d columns (a and b, alternating blocks of 8) and outputs a·%s(b), %d wide\n",
			2*cfg.Hidden, gateName(cfg.Act), cfg.Hidden)
	}
	if cfg.Sparse24 {
		fmt.Fprintf(stdout, "2:4 sparse: every layer keeps 2 of every 4 weights along its input (magnitude-pruned at initialisation, the pattern fixed and re-applied after every step); forward on the sparse tensor cores, dX and dW dense\n")
	}
	if cfg.FP8 {
		fmt.Fprintf(stdout, "fp8: every layer's forward (x E4M3 a scale per row, W E4M3 a scale per output column) and dX (dy E5M2 a scale per row, W E4M3 a scale per input row) on the fp8 tensor cores, f32 accumulation; dW and the bias gradients in %v\n", cfg.DType)
	}
	be, name := backend(o, stdout)
	defer be.Close()
	fmt.Fprintf(stdout, "backend: %s\n", name)
	start := time.Now()
	allOK := true

	digests := make([]string, 2)
	var run1 *triad.Run
	for i := range digests {
		r, d, err := train(be, cfg, o, i+1, stdout, stderr)
		if err != nil {
			return false, err
		}
		digests[i] = d
		if i == 0 {
			run1 = r
			defer r.Close()
		} else if err := r.Close(); err != nil {
			return false, err
		}
	}
	same := digests[0] == digests[1]
	allOK = allOK && same
	fmt.Fprintf(stdout, "final weights, run 1: sha256 %s\n", digests[0])
	fmt.Fprintf(stdout, "final weights, run 2: sha256 %s  (%s)\n", digests[1], verdict(same, "bit-identical", "DIFFERENT"))

	cmp, diff, err := triad.BatchInvariance(run1.Model, run1.X, o.compare)
	if err != nil {
		return false, err
	}
	allOK = allOK && diff == 0
	fmt.Fprintf(stdout, "batch invariance: %d rows computed at batch 1 vs inside one batch of %d: %d differ\n", cmp, run1.X.Rows(), diff)

	direct, replay, err := triad.GraphReplay(be, cfg, 3)
	switch {
	case errors.Is(err, triad.ErrNoGraphs):
		fmt.Fprintf(stdout, "graph replay: skipped (the %s backend runs each operation at once; CUDA graphs need a GPU)\n", be.Name())
	case err != nil:
		return false, err
	default:
		same := direct == replay
		allOK = allOK && same
		fmt.Fprintf(stdout, "graph replay (3 steps): direct sha256 %s\n", direct)
		fmt.Fprintf(stdout, "                        replay sha256 %s  (%s)\n", replay, verdict(same, "bit-identical", "DIFFERENT"))
	}
	fmt.Fprintf(stdout, "summary: %s backend, %d epochs × %d steps twice, %.1fs in all; checks %s\n",
		be.Name(), o.epochs, cfg.Steps, time.Since(start).Seconds(), verdict(allOK, "passed", "FAILED"))
	return allOK, nil
}

func verdict(ok bool, yes, no string) string {
	if ok {
		return yes
	}
	return no
}

// train runs one training run, with a progress bar when o.bar and a loss
// line per epoch unless o.quiet, and returns the run (open) and its final
// weights' digest.
func train(be triad.Backend, cfg triad.TrainConfig, o options, id int, stdout, stderr io.Writer) (*triad.Run, string, error) {
	r, err := triad.NewRun(be, cfg)
	if err != nil {
		return nil, "", err
	}
	epochs := o.epochs
	start, total := time.Now(), epochs*cfg.Steps
	var loss float64
	for e := range epochs {
		var onStep func(int)
		if o.bar {
			onStep = func(s int) {
				if done := e*cfg.Steps + s + 1; done*100/total != (done-1)*100/total {
					progress(stderr, id, done, total) // redraw when the percentage moves
				}
			}
		}
		loss, err = r.Epoch(onStep)
		if err != nil {
			return nil, "", errors.Join(err, r.Close())
		}
		if o.bar {
			fmt.Fprintf(stderr, "\r\033[K")
		}
		if !o.quiet {
			fmt.Fprintf(stdout, "run %d  epoch %3d/%d  loss %.6g\n", id, e+1, epochs, loss)
		}
	}
	d, err := r.Model.Digest()
	if err != nil {
		return nil, "", errors.Join(err, r.Close())
	}
	fmt.Fprintf(stdout, "run %d  done in %.2fs, final epoch loss %.6g\n", id, time.Since(start).Seconds(), loss)
	return r, d, nil
}

// progress draws a bar on stderr, rewriting its line.
func progress(w io.Writer, id, done, total int) {
	const width = 30
	n := done * width / total
	fmt.Fprintf(w, "\rrun %d [%s%s] %3d%%  step %d/%d", id, strings.Repeat("=", n), strings.Repeat(" ", width-n), done*100/total, done, total)
}

// gateName is the function a gated act applies to the gate half.
func gateName(a triad.Act) string {
	switch a {
	case triad.ActGLU:
		return "σ"
	case triad.ActReGLU:
		return "relu"
	case triad.ActSwiGLU:
		return "silu"
	case triad.ActGeGLU:
		return "gelu"
	}
	return a.String()
}
