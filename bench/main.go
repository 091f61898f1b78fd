// Command bench is detgemm's measuring stick: it times GEMMs on one GPU,
// cuBLAS now and the engine's tiers beside it later, and prints each
// against the ceilings measured or known for that GPU.
//
//	go run ./bench                      # the standard shapes, every type and mode
//	go run ./bench --quick --shapes 4096x4096x4096 --dtypes bf16
//	go run ./bench --help               # flags and what each column means
//	go run ./bench --from bench-results.json --format md   # a saved run as the README's tables
//	go run ./bench --from bench-results.json --plot run.svg # a saved run drawn (no GPU needed)
//
// Measuring needs an NVIDIA GPU with its driver, and cuBLAS; without them it
// says which library was not found and exits with status 1. Rendering a
// saved run (--from) needs neither: it loads no driver.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"
)

// config is the parsed command line.
type config struct {
	shapes     string
	shapesFile string
	shapesSet  string // --shapes-set: a named built-in list, "" for the standard one
	dtypes     []dtype
	modes      []string
	repeats    int
	minTime    time.Duration
	jsonPath   string
	device     int
	seed       uint64
	quick      bool
	startup    bool

	from     string   // render this saved report instead of measuring
	format   string   // what stdout gets: table, json, md, csv
	plotPath string   // write an SVG of the run here
	quiet    bool     // no progress on stderr
	commit   string   // --commit: the source revision to record
	args     []string // the command line as recorded (commandLine)
	explicit []string // names of the flags given on the command line
}

const usageHead = `usage: go run ./bench [flags]

Times GEMMs C[M,N] = A[M,K]·B[K,N] (row-major, f32 accumulation, output in
the input type) on one GPU. Each figure is the median of --repeats
measurements; each measurement records a CUDA event, launches the GEMM R
times back to back over rotating input sets (together at least 3× the L2
cache, so operands come from memory), records a second event and divides
by R, with R chosen so one measurement lasts at least --min-time. The
rows of one shape and type are measured in turns (one measurement of each
row per round), so drift of clocks or temperature falls on all alike.
Forward writes its own output buffers and dX its own, so every row reads
the same random inputs.

With --from FILE it measures nothing and loads no driver: it reads a
report that --json wrote (any schema version; fields it does not know are
ignored) and writes it again as --format and --plot ask. --dtypes then
picks the element types to show.

Progress goes to stderr: one line rewritten in place on a terminal, a
plain line per stage otherwise, nothing with --quiet.

Flags:
`

const usageColumns = `
Columns:
  shape MxKxN  the GEMM's dimensions
  dtype        element type of A, B and C (bf16, f16, f32)
  backend      the implementation measured (cuBLAS through cublasGemmEx;
               cuBLASLt through cublasLtMatmul; detgemm; copy: floors at
               the problem's roofline bytes, math copy: one
               device-to-device copy moving them, math read: one kernel
               reading them once)
  math         default: the library's default math (tensor cores for
               bf16/f16, IEEE FMA for f32); pedantic: no reduced-precision
               shortcut anywhere (CUBLAS_PEDANTIC_MATH, COMPUTE_32F_PEDANTIC);
               tf32: f32 inputs on TF32 tensor cores (COMPUTE_32F_FAST_TF32)
               The cuBLASLt modes (opt-in: --modes lt,lt-gelu-bias,...;
               bf16/f16; COMPUTE_32F, output in the input type, the
               heuristic's first algorithm with a 32 MiB workspace, chosen
               once per shape and epilogue) run Y = A·B with one fused
               epilogue; bias has N values, added to every row of Y:
                 lt                DEFAULT: Y = A·B
                 lt-bias           BIAS: Y = A·B + bias
                 lt-gelu-bias      GELU_BIAS: Y = gelu(A·B + bias)
                 lt-gelu-aux-bias  GELU_AUX_BIAS: as lt-gelu-bias, and also
                                   writes aux[M,N] = A·B + bias
                 lt-relu-bias      RELU_BIAS: Y = max(A·B + bias, 0)
                 lt-dgelu-bgrad    DGELU_BGRAD: Y = A·B ⊙ gelu'(C) (C read
                                   as the pre-activation), bias = Y's
                                   column sums
                 lt-bgrada         BGRADA: Y = A·B, bias = B's row sums
                                   (cuBLASLt's A is our B)
                 lt-bgradb         BGRADB: Y = A·B, bias = A's row sums
                 lt-relu-aux-bias  RELU_AUX_BIAS: as lt-relu-bias, and its
                                   bit-mask to aux
                 lt-drelu-bgrad    DRELU_BGRAD: Y = A·B where the mask (from
                                   a RELU_AUX_BIAS run) passes, bias = Y's
                                   column sums
                 lt-nt, lt-tn, lt-tt  DEFAULT with B stored N×K, A stored
                                   K×M, or both (the sets' own A and B)
                 lt-tn-bgrada      BGRADA on the TN product (a weight
                                   gradient's bias gradient)
                 lt-strided, lt-gelu-bias-strided  DEFAULT, GELU_BIAS with
                                   rows of A, B and Y 64 elements longer
               The engine's Matmul modes (opt-in; Plan once, Run per
               launch, alpha 1, beta 0; bias and bias gradients f32, aux
               per input set; every buffer random): mm-* in the IEEE tier
               of fwd (f32 for f32, typed for bf16/f16), tc-mm-* in the
               tensor-core tier (bf16/f16), each paired with the cuBLASLt
               mode above of the same epilogue and layout:
                 mm                Default, NN (runs Forward's kernels)
                 mm-bias, mm-gelu-bias, mm-gelu-aux-bias, mm-relu-bias,
                 mm-relu-aux-bias  the forward epilogues (ReLU's aux is a
                                   byte mask)
                 mm-dgelu-bgrad, mm-drelu-bgrad  the backward ones, reading
                                   an aux a GeluAuxBias / ReluAuxBias run
                                   wrote first
                 mm-bgradb         BgradB on Aᵀ·B, ReduceOverBatch
                 mm-nt, mm-tn, mm-tt  the layouts (mm-nt runs DX's kernels)
                 mm-strided, mm-gelu-bias-strided  ld = row length + 64
                 mm-bias-then-relu mm-bias, then the triad's ReLU kernel
                                   as a second launch: the unfused pair of
                                   mm-relu-bias (and a lower bound for an
                                   unfused mm-gelu-bias)
               The gated ones (issue 23; the product is N wide, a and b in
               8-column blocks; N a multiple of 16):
                 mm-swiglu         GatedSwiGLU: D[M,N/2] = a·silu(b); its
                                   cuBLASLt pair is lt (cuBLASLt has no
                                   gated epilogue)
                 mm-swiglu-aux, mm-geglu-aux  GatedSwiGLUAux, GatedGeGLUAux:
                                   and aux[M,N] = the product
                 mm-dswiglu        DGatedSwiGLU: D[M,2N] from dy = A·B and
                                   a random aux[M,2N]
                 mm-then-swiglu    mm, then GatedForward (SwiGLU,
                                   GatedBlocks8) D → another [M,N/2]: the
                                   unfused pair of mm-swiglu
               The standalone gated activations (every type; on MxKxN:
               rows M, n = N/2, K unused; GatedHalves; inputs the sets' C):
                 gated-{glu,reglu,swiglu,geglu}-fwd  GatedForward:
                                   reads [M,N], writes y[M,N/2]
                 gated-{glu,reglu,swiglu,geglu}-bwd  GatedBackward:
                                   reads h[M,N] and dy[M,N/2], writes
                                   dh[M,N]
               their rows' GB/s (bytes read + written over the median; also
               the copy and read floors') go to the JSON (bytes_per_sec) and
               the csv (gb_per_s); table and md add a table of them beside
               the copy floor's, and %roof is the fraction of the run's
               copy bandwidth.
               --modes matmul names cuBLAS default, every tc-mm mode but
               the gated ones and its cuBLASLt pair; table and md then add
               a Matmul table (detgemm, cuBLASLt, their ratio, each one's
               cost over its own plain product) and a
               fused-against-separate-pass table. --modes gated names
               default, copy, tc-mm, the gated tc-mm modes, lt and the
               standalone gated modes.
               The 2:4 sparse modes (issue 24; bf16/f16; --modes sparse
               names them with cuBLAS default, lt, tc-fwd and copy):
                 sp24              the engine's sparse forward Y = X·W, W
                                   2:4 along K, given compressed (values
                                   N×K/2, metadata N×K/32 words): the
                                   sets' random B pruned and compressed by
                                   PruneCompress24 before timing, more
                                   compressed copies than sets so they
                                   rotate past the L2
                 sp24-prune        PruneCompress24 of the K×N weight (M
                                   unused): no FLOPs, GB/s of W read plus
                                   values and metadata written
                 cusparselt        cuSPARSELt's 2:4 product of the same
                                   shape (its own prune, compression and
                                   default algorithm; TN layout); rows
                                   say why when the library is missing
               A sparse product's TFLOP/s is dense-equivalent (2·M·N·K over
               its median); its %roof uses its own bytes (X, values,
               metadata, Y) and twice the dense datasheet peak. table and
               md add a sparse table (speed-ups over tc-fwd, cuBLAS and
               cuSPARSELt, GB/s for M ≤ 128) and a prune table.
               --shapes-set sparse: issue 24's shapes.
               The fp8 modes (bf16 rows only: their D is bf16 and the
               quantizer reads bf16; --modes fp8 names them with cuBLAS
               default, lt-fp8 and lt-fp8-fast): D[M,N] = A[M,K]·B[N,K]ᵀ
               with A and B random E4M3 codes (never NaN; magnitudes
               1/16 to 15) stored K-major, f32 scales random in
               [0.5, 1.5); FP8Plan once, Run per launch; each row rotates
               over copies of its own past the L2:
                 fp8-fast          ScaleTensor, AccumFast (one
                                   tensor-core chain over K), bf16 out
                 fp8-prom          ScaleTensor, AccumPromoted (a chain per
                                   128 of K, added in f32), bf16 out
                 fp8-row           ScaleRow (M and N scales), promoted
                 fp8-block         ScaleBlock (1×128 of A, 128×128 of B:
                                   DeepSeek-V3's, DeepGEMM's), promoted
                 fp8-out8          as fp8-prom with an E4M3 D, ScaleD
                                   1/√K, amax written
                 fp8-quant         QuantizeFP8 of the bf16 M×K activation
                                   to E4M3, 1×128 groups (N unused): no
                                   FLOPs, GB/s of M·K·2 read plus M·K and
                                   the scales written
                 lt-fp8            cuBLASLt's fp8 product: E4M3 × E4M3 →
                                   bf16, COMPUTE_32F, one scale per tensor
                                   (A_SCALE_POINTER, B_SCALE_POINTER), TN
                                   (TRANSA = T, TRANSB = N: our A M×K and
                                   B N×K), the heuristic's first algorithm
                 lt-fp8-fast       lt-fp8 with CUBLASLT_MATMUL_DESC_FAST_ACCUM
               An fp8 product's %roof uses its own bytes (A and B one byte
               an element, the scales, D) and the fp8 datasheet peak;
               vs_reference pairs fp8-fast with lt-fp8-fast and the
               promoted modes with lt-fp8. table and md add an fp8 table
               (times, TFLOP/s, speed-ups over cuBLASLt and cuBLAS bf16,
               GB/s for M ≤ 128) and a quantization table.
               --shapes-set fp8: 4096³, 8192³, DeepGEMM's 4096×16384×7168
               and M = 64, 128 over K = 7168 into N = 4096, 7168, 24576.
               %roof and bound count A, B and Y only, not the bias or aux.
  µs           median time of one GEMM, in microseconds
  TFLOP/s      2·M·N·K / median time
  %roof        floor / median time, where floor = max(2·M·N·K / peak,
               bytes / copy bandwidth): bytes = A and B read once plus C
               written once; copy bandwidth = device-to-device copy measured
               in this run (bytes read + written per second); peak = the
               datasheet dense peak for the type (bf16/f16 tensor, tf32
               tensor, fp8 tensor for the fp8 products, f32 FMA), only
               for GPUs in the bench's table
  bound        which floor is larger: memory, or the peak that applies
  vs-cuBLAS    cuBLAS default-math median / this row's median (above 1 is
               faster than cuBLAS); "-" on cuBLAS's own rows

Every figure, with min, max and each sample, goes to the --json file,
with the run's date (UTC), GPU, driver, CUDA and cuBLAS versions, command
line and source commit.

--format md writes the README's "How fast" tables: a header naming the run
(GPU, driver, libraries, date, commit, command), the IEEE tiers (fwd, dx,
dw) against cuBLAS pedantic, the tensor-core tier (tc-fwd, tc-dx, tc-dw)
against cuBLAS default, and the memory floors of the memory-bound problems;
times in µs, TFLOP/s in brackets on compute-bound rows. --format csv writes
one line per row, with "reference" (the cuBLAS mode the row is fairly judged
against: pedantic for the IEEE tiers, default for the tensor-core tier) and
"vs_reference" (a tc-mm row's reference is its cuBLASLt pair), and for
the Matmul rows and their cuBLASLt pairs "plain" (the same library's plain
product) and "over_plain" (median / plain's - 1). --plot draws, per element type, each engine row's speed
against the same reference and every GEMM row's %roof.
`

// parseFlags reads the command line; flag.ErrHelp means usage was printed.
func parseFlags(args []string, stderr io.Writer) (*config, error) {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	c := &config{}
	var dtypes, modes string
	fs.StringVar(&c.shapes, "shapes", "", "comma-separated `MxKxN` shapes; overrides --shapes-file")
	fs.StringVar(&c.shapesSet, "shapes-set", "", "a named built-in shape list instead of the standard one: "+shapeSetNames()+" (not with --shapes or --shapes-file)")
	fs.StringVar(&c.shapesFile, "shapes-file", "", "file of \"M K N\" lines (default: testdata/bench_shapes.txt under the module root, else a built-in copy)")
	fs.StringVar(&dtypes, "dtypes", "bf16,f16,f32", "element types to measure")
	fs.StringVar(&modes, "modes", strings.Join(defaultModes, ","), "modes to measure: cuBLAS default, pedantic, tf32 (f32 only); the engine's fwd, dx, dw (its f32 tier for f32, typed tier for bf16/f16) and tc-fwd, tc-dx, tc-dw (its tensor-core tier, bf16/f16); copy, read: a device copy moving the problem's bytes, a kernel reading them once (its memory floors); opt-in, bf16/f16 only: "+strings.Join(ltModes, ", ")+" (cuBLASLt with a fused epilogue; see Columns); the engine's Matmul modes mm-*, tc-mm-* (see Columns); the standalone gated activations gated-* (see Columns); the 2:4 sparse modes sp24, sp24-prune, cusparselt (see Columns); bf16 only: the fp8 modes fp8-fast, fp8-prom, fp8-row, fp8-block, fp8-out8, fp8-quant, lt-fp8, lt-fp8-fast (see Columns); the groups fp8, gated, matmul, sparse")
	fs.IntVar(&c.repeats, "repeats", 15, "timed measurements per row; the median is reported")
	fs.DurationVar(&c.minTime, "min-time", 2*time.Millisecond, "least GPU time of one measurement")
	fs.StringVar(&c.jsonPath, "json", "bench-results.json", "write every figure to this JSON `file` (\"\" for none)")
	fs.IntVar(&c.device, "device", 0, "CUDA device ordinal")
	fs.Uint64Var(&c.seed, "seed", 1, "seed of the random inputs")
	fs.BoolVar(&c.quick, "quick", false, "smoke test: 3 repeats of at least 0.5 ms")
	fs.BoolVar(&c.startup, "startup", true, "time a cold kernel build (empty cache) and a warm start; false: build from the usual cache, untimed")
	fs.StringVar(&c.from, "from", "", "render the saved report `FILE.json` (written by --json) instead of measuring; needs no GPU")
	fs.StringVar(&c.format, "format", formatTable, "what stdout gets: table, json (the report), md (the README's tables), csv (one line per row)")
	fs.StringVar(&c.plotPath, "plot", "", "also draw the run as an SVG `file`: speed against cuBLAS and %roof per shape and type")
	fs.BoolVar(&c.quiet, "quiet", false, "no progress on stderr (errors still go there)")
	fs.StringVar(&c.commit, "commit", "", "source `revision` to record in the report (default: the build's stamp, else git's HEAD)")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), usageHead)
		fs.PrintDefaults()
		fmt.Fprint(fs.Output(), usageColumns)
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil, err
		}
		return nil, errPrinted{err} // the flag package has said what is wrong
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected arguments: %s", strings.Join(fs.Args(), " "))
	}
	fs.Visit(func(f *flag.Flag) { c.explicit = append(c.explicit, f.Name) })
	if !slices.Contains(formats, c.format) {
		return nil, fmt.Errorf("--format %q: want one of %s", c.format, strings.Join(formats, ", "))
	}
	if c.plotPath != "" && !plotBuilt {
		return nil, errNoPlot
	}
	if c.from != "" {
		for _, name := range c.explicit {
			if !slices.Contains(renderFlags, name) {
				return nil, fmt.Errorf("--%s measures or records a run; with --from only %s apply", name, "--"+strings.Join(renderFlags, ", --"))
			}
		}
	}
	if c.shapesSet != "" {
		if _, ok := shapeSets[c.shapesSet]; !ok {
			return nil, fmt.Errorf("--shapes-set %q: want one of %s", c.shapesSet, shapeSetNames())
		}
		if c.shapes != "" || c.shapesFile != "" {
			return nil, fmt.Errorf("--shapes-set names the shapes; it does not go with --shapes or --shapes-file")
		}
	}
	var err error
	if c.dtypes, err = parseDTypes(dtypes); err != nil {
		return nil, err
	}
	if c.modes, err = parseModes(modes); err != nil {
		return nil, err
	}
	if c.quick {
		c.repeats, c.minTime = min(c.repeats, 3), min(c.minTime, 500*time.Microsecond)
	}
	if c.repeats < 1 {
		return nil, fmt.Errorf("--repeats must be at least 1")
	}
	if c.minTime <= 0 {
		return nil, fmt.Errorf("--min-time must be positive")
	}
	if c.device < 0 {
		return nil, fmt.Errorf("--device must be 0 or more")
	}
	return c, nil
}

// renderFlags are the flags that apply with --from.
var renderFlags = []string{"from", "format", "plot", "quiet", "dtypes"}

// errPrinted wraps an error that has already been shown to the user.
type errPrinted struct{ error }

func main() {
	if os.Getenv(envProbe) == probeWarmStart {
		os.Exit(runProbe())
	}
	cfg, err := parseFlags(os.Args[1:], os.Stderr)
	if errors.Is(err, flag.ErrHelp) {
		return
	}
	if err != nil {
		if !errors.As(err, new(errPrinted)) {
			fmt.Fprintln(os.Stderr, "bench:", err)
		}
		os.Exit(2)
	}
	cfg.args = commandLine(os.Args)
	if cfg.from != "" {
		err = renderSaved(cfg, os.Stdout, os.Stderr)
	} else {
		err = run(cfg, os.Stdout, os.Stderr)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", oneLine(err.Error()))
		os.Exit(1)
	}
}
