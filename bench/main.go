// Command bench is detgemm's measuring stick: it times GEMMs on one GPU,
// cuBLAS now and the engine's tiers beside it later, and prints each
// against the ceilings measured or known for that GPU.
//
//	go run ./bench                      # the standard shapes, every type and mode
//	go run ./bench --quick --shapes 4096x4096x4096 --dtypes bf16
//	go run ./bench --help               # flags and what each column means
//
// It needs an NVIDIA GPU with its driver, and cuBLAS; without them it says
// which library was not found and exits with status 1.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"
)

// config is the parsed command line.
type config struct {
	shapes     string
	shapesFile string
	dtypes     []DType
	modes      []string
	repeats    int
	minTime    time.Duration
	jsonPath   string
	device     int
	seed       uint64
	quick      bool
	startup    bool
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

Flags:
`

const usageColumns = `
Columns:
  shape MxKxN  the GEMM's dimensions
  dtype        element type of A, B and C (bf16, f16, f32)
  backend      the implementation measured (cuBLAS through cublasGemmEx;
               detgemm; copy: floors at the problem's roofline bytes,
               math copy: one device-to-device copy moving them, math
               read: one kernel reading them once)
  math         default: the library's default math (tensor cores for
               bf16/f16, IEEE FMA for f32); pedantic: no reduced-precision
               shortcut anywhere (CUBLAS_PEDANTIC_MATH, COMPUTE_32F_PEDANTIC);
               tf32: f32 inputs on TF32 tensor cores (COMPUTE_32F_FAST_TF32)
  µs           median time of one GEMM, in microseconds
  TFLOP/s      2·M·N·K / median time
  %roof        floor / median time, where floor = max(2·M·N·K / peak,
               bytes / copy bandwidth): bytes = A and B read once plus C
               written once; copy bandwidth = device-to-device copy measured
               in this run (bytes read + written per second); peak = the
               datasheet dense peak for the type (bf16/f16 tensor, tf32
               tensor, f32 FMA), only for GPUs in the bench's table
  bound        which floor is larger: memory, or the peak that applies
  vs-cuBLAS    cuBLAS default-math median / this row's median (above 1 is
               faster than cuBLAS); "-" on cuBLAS's own rows

Every figure, with min, max and each sample, goes to the --json file.
`

// parseFlags reads the command line; flag.ErrHelp means usage was printed.
func parseFlags(args []string, stderr io.Writer) (*config, error) {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	c := &config{}
	var dtypes, modes string
	fs.StringVar(&c.shapes, "shapes", "", "comma-separated `MxKxN` shapes; overrides --shapes-file")
	fs.StringVar(&c.shapesFile, "shapes-file", "", "file of \"M K N\" lines (default: testdata/bench_shapes.txt under the module root, else a built-in copy)")
	fs.StringVar(&dtypes, "dtypes", "bf16,f16,f32", "element types to measure")
	fs.StringVar(&modes, "modes", strings.Join(allModes, ","), "modes to measure: cuBLAS default, pedantic, tf32 (f32 only); the engine's fwd, dx, dw (its f32 tier for f32, typed tier for bf16/f16) and tc-fwd, tc-dx, tc-dw (its tensor-core tier, bf16/f16); copy, read: a device copy moving the problem's bytes, a kernel reading them once (its memory floors)")
	fs.IntVar(&c.repeats, "repeats", 15, "timed measurements per row; the median is reported")
	fs.DurationVar(&c.minTime, "min-time", 2*time.Millisecond, "least GPU time of one measurement")
	fs.StringVar(&c.jsonPath, "json", "bench-results.json", "write every figure to this JSON `file` (\"\" for none)")
	fs.IntVar(&c.device, "device", 0, "CUDA device ordinal")
	fs.Uint64Var(&c.seed, "seed", 1, "seed of the random inputs")
	fs.BoolVar(&c.quick, "quick", false, "smoke test: 3 repeats of at least 0.5 ms")
	fs.BoolVar(&c.startup, "startup", true, "time a cold kernel build (empty cache) and a warm start; false: build from the usual cache, untimed")
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
	if err := run(cfg, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", oneLine(err.Error()))
		os.Exit(1)
	}
}
