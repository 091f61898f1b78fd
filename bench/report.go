package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
)

// reportSchema names the JSON layout; bump its number when a field changes
// meaning or one is added. Version 2 added command, commit, go_version and
// startup's embedded_* figures; its startup cold build and warm start are
// NVRTC's (version 1 predates the embedded kernel set).
// Version 3 added rows' bytes_per_sec (the copy floors and the standalone
// gated activations). Version 4 added cusparselt (the library of the
// cuSPARSELt rows) and the 2:4 sparse rows (sp24, sp24-prune, cusparselt:
// bytes_per_sec, and a roofline of their own bytes at twice the dense
// peak). Version 5 added datasheet_peaks' fp8_tflops and the fp8 rows
// (fp8-*, lt-fp8, lt-fp8-fast: bytes_per_sec, a roofline of their own
// bytes at the fp8 peak; input_sets and bytes_per_set their own copies and
// one launch's traffic). readReport takes every version (see load.go).
const reportSchema = schemaPrefix + "5"

// report is everything one run measured; it is written as JSON (--json).
type report struct {
	Schema string `json:"schema"`
	Date   string `json:"date"` // UTC, RFC 3339
	// Command is the bench's command line (the program as "go run ./bench"
	// when it ran from go run's build cache); absent before version 2.
	Command []string `json:"command,omitempty"`
	// Commit is the source revision the bench was built from ("-dirty"
	// appended for uncommitted changes), when it could be known.
	Commit    string      `json:"commit,omitempty"`
	GoVersion string      `json:"go_version,omitempty"`
	GPU       gpuInfo     `json:"gpu"`
	Driver    libraryInfo `json:"driver"`
	CUBLAS    libraryInfo `json:"cublas"`
	// CUBLASLt is the cuBLASLt of the cuBLASLt rows; absent when the run
	// had none (every run before the cuBLASLt modes existed).
	CUBLASLt *libraryInfo `json:"cublaslt,omitempty"`
	// CuSPARSELt is the cuSPARSELt of the cuSPARSELt rows; absent when the
	// run had none or the library did not load (its rows then say why).
	CuSPARSELt *libraryInfo  `json:"cusparselt,omitempty"`
	Config     runConfig     `json:"config"`
	Inputs     string        `json:"inputs"` // how the operands were made
	Copy       copyBandwidth `json:"copy_bandwidth"`
	Peaks      *peaks        `json:"datasheet_peaks,omitempty"` // absent for GPUs not in the table
	Startup    startup       `json:"startup"`
	Rows       []row         `json:"rows"`
}

// gpuInfo describes the device measured.
type gpuInfo struct {
	Name              string `json:"name"`
	Ordinal           int    `json:"ordinal"`
	ComputeCapability string `json:"compute_capability"` // "9.0"
	SMs               int    `json:"sms"`
	L2Bytes           int    `json:"l2_bytes"`
	MemoryBytes       uint64 `json:"memory_bytes"`
}

// libraryInfo names a loaded library and its version.
type libraryInfo struct {
	Version string `json:"version"`           // "13.0" (driver API), "13.1.0" (cuBLAS)
	Code    int    `json:"version_code"`      // as the library reports it: 13000, 130100
	Release string `json:"release,omitempty"` // driver only: the NVIDIA driver release, e.g. "580.159" (Linux)
	Path    string `json:"path,omitempty"`    // the file or soname that loaded
	Comment string `json:"comment,omitempty"` // anything else worth knowing
}

// runConfig records the settings the figures depend on.
type runConfig struct {
	Shapes       []shape  `json:"shapes"`
	ShapesSource string   `json:"shapes_source"`
	DTypes       []dtype  `json:"dtypes"`
	Modes        []string `json:"modes"`
	Repeats      int      `json:"repeats"`
	MinTimeUS    float64  `json:"min_time_per_measurement_us"`
	Seed         uint64   `json:"seed"`
	MemoryBudget int64    `json:"input_memory_budget_bytes"`
}

// row is one measured problem on one backend.
type row struct {
	Shape     shape     `json:"shape"`
	DType     dtype     `json:"dtype"`
	Backend   string    `json:"backend"`
	Mode      string    `json:"mode"`
	MedianUS  float64   `json:"median_us"`
	MinUS     float64   `json:"min_us"`
	MaxUS     float64   `json:"max_us"`
	SamplesUS []float64 `json:"samples_us"` // per launch, one per repeat
	TFLOPS    float64   `json:"tflops"`     // 2·M·N·K / median
	// PeakName and PeakTFLOPS are the datasheet ceiling applied (empty, 0
	// when the GPU has none in the table).
	PeakName   string   `json:"peak_name,omitempty"`
	PeakTFLOPS float64  `json:"peak_tflops,omitempty"`
	Roofline   roofline `json:"roofline"`
	// BytesPerSec is the bytes the row reads and writes per second at its
	// median (movedBytes over it), as copy_bandwidth's bytes_per_sec
	// counts them: set on the rows that only move data (copy, read, the
	// standalone gated activations, the 2:4 prune + compress) and on the
	// 2:4 sparse products (X, the compressed weight and Y); absent on
	// dense GEMM rows and before version 3.
	BytesPerSec float64 `json:"bytes_per_sec,omitempty"`
	// VsCUBLAS is cuBLAS's median (same shape and type, default math)
	// divided by this row's: above 1 is faster than cuBLAS. Absent on
	// cuBLAS's own rows.
	VsCUBLAS float64 `json:"vs_cublas,omitempty"`
	Launches int     `json:"launches_per_measurement"`
	// Sets is how many input sets the row's launches rotate over, and
	// SetBytes one launch's traffic (setBytes); a row with buffers of its
	// own (rotator: the fp8 rows) gives its copies and its own traffic.
	Sets     int    `json:"input_sets"`
	SetBytes int64  `json:"bytes_per_set"`
	Error    string `json:"error,omitempty"` // the row could not be measured
}

// fillRatios sets VsCUBLAS on every row of another backend that has a
// measured cuBLAS default-math row for the same shape and type.
func fillRatios(rows []row) {
	type key struct {
		s shape
		d dtype
	}
	ref := map[key]float64{}
	for _, r := range rows {
		if r.Backend == referenceBackend && r.Mode == modeDefault && r.Error == "" && r.MedianUS > 0 {
			ref[key{r.Shape, r.DType}] = r.MedianUS
		}
	}
	for i := range rows {
		r := &rows[i]
		if m, ok := ref[key{r.Shape, r.DType}]; ok && r.Backend != referenceBackend && r.Error == "" && r.MedianUS > 0 {
			r.VsCUBLAS = m / r.MedianUS
		}
	}
}

// writeJSON writes the report to path, indented.
func writeJSON(path string, rep *report) error {
	b, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

// printReport writes the header and the table.
func printReport(w io.Writer, rep *report) {
	g := rep.GPU
	fmt.Fprintf(w, "detgemm bench  %s\n", rep.Date)
	if len(rep.Command) > 0 || rep.Commit != "" {
		fmt.Fprintf(w, "run      %s (commit %s)\n", shellJoin(rep.Command), orUnknown(rep.Commit))
	}
	fmt.Fprintf(w, "gpu      %s (device %d, CC %s, %d SMs, L2 %.0f MiB, %.0f GiB)\n",
		g.Name, g.Ordinal, g.ComputeCapability, g.SMs, float64(g.L2Bytes)/(1<<20), float64(g.MemoryBytes)/(1<<30))
	fmt.Fprintf(w, "driver   CUDA %s", rep.Driver.Version)
	if rep.Driver.Release != "" {
		fmt.Fprintf(w, ", release %s", rep.Driver.Release)
	}
	fmt.Fprintf(w, " (%s)\n", rep.Driver.Path)
	fmt.Fprintf(w, "cuBLAS   %s (%s)\n", rep.CUBLAS.Version, rep.CUBLAS.Path)
	if lt := rep.CUBLASLt; lt != nil {
		fmt.Fprintf(w, "cuBLASLt %s (%s)\n", lt.Version, lt.Path)
	}
	if sl := rep.CuSPARSELt; sl != nil {
		fmt.Fprintf(w, "cuSPARSELt %s (%s)\n", sl.Version, sl.Path)
	}
	c := rep.Copy
	fmt.Fprintf(w, "memory   %.2f TB/s device-to-device copy, read + written (median of %d; %.0f MiB copies, %d per measurement)\n",
		c.BytesPerSec/1e12, c.TimeUS.N, float64(c.Bytes)/(1<<20), c.Launches)
	if p := rep.Peaks; p != nil {
		fp8 := ""
		if p.FP8 > 0 {
			fp8 = fmt.Sprintf(", fp8 %g", p.FP8)
		}
		fmt.Fprintf(w, "peaks    datasheet %s, dense: bf16 %g, f16 %g, tf32 %g%s, f32 FMA %g TFLOP/s\n", p.GPU, p.BF16, p.F16, p.TF32, fp8, p.F32)
	} else {
		fmt.Fprintf(w, "peaks    none on file for this GPU: %%roof uses the memory roofline only\n")
	}
	printStartup(w, &rep.Startup)
	fmt.Fprintf(w, "inputs   %s\n", rep.Inputs)
	fmt.Fprintf(w, "timing   median of %d measurements, each ≥ %.1f ms of back-to-back launches over rotating input sets; the rows of a shape and type in turns\n",
		rep.Config.Repeats, rep.Config.MinTimeUS/1e3)
	fmt.Fprintf(w, "shapes   %s\n\n", rep.Config.ShapesSource)

	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "shape MxKxN\tdtype\tbackend\tmath\tµs\tTFLOP/s\t%roof\tbound\tvs-cuBLAS\t")
	for _, r := range rep.Rows {
		if r.Error != "" {
			// The message trails the last cell, so it does not widen a column.
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t-\t-\t-\t-\t-\t  error: %s\n", r.Shape, r.DType, r.Backend, r.Mode, r.Error)
			continue
		}
		vs := "-"
		if r.VsCUBLAS > 0 {
			vs = fmt.Sprintf("%.2f×", r.VsCUBLAS)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%.1f\t%.0f%%\t%s\t%s\t\n", r.Shape, r.DType, r.Backend, r.Mode,
			formatUS(r.MedianUS), r.TFLOPS, 100*r.Roofline.Fraction, r.Roofline.Bound, vs)
	}
	_ = tw.Flush()
	printMatmulTables(w, indexRows(rep.Rows))
	printGatedTable(w, indexRows(rep.Rows))
	printSparseTables(w, indexRows(rep.Rows))
	printFP8Tables(w, indexRows(rep.Rows))
}

func printStartup(w io.Writer, st *startup) {
	if st.BuildError != "" {
		fmt.Fprintf(w, "kernels  build failed: %s\n", st.BuildError)
		return
	}
	if st.Skipped {
		fmt.Fprintf(w, "kernels  %d families for %s (NVRTC %s), start-up not timed (--startup=false)\n", st.Families, st.Arch, st.NVRTC)
		return
	}
	fmt.Fprintf(w, "kernels  cold build %.0f ms (%d families for %s, NVRTC %s)", st.ColdBuildMS, st.Families, st.Arch, st.NVRTC)
	if ws := st.Warm; ws != nil {
		fmt.Fprintf(w, "; warm start %.0f ms in a %s: driver %.1f, context %.1f, build from cache %.1f (%d hits), module load %.1f ms",
			ws.TotalMS, st.WarmMethod, ws.DriverMS, ws.ContextMS, ws.BuildMS, ws.Hits, ws.LoadMS)
	} else if st.WarmError != "" {
		fmt.Fprintf(w, "; warm start not measured: %s", st.WarmError)
	}
	switch {
	case st.EmbeddedError != "":
		fmt.Fprintf(w, "; embedded set: %s", st.EmbeddedError)
	case st.EmbeddedModules > 0:
		fmt.Fprintf(w, "; from the embedded set %.1f ms (%d modules, in-process)", st.EmbeddedBuildMS, st.EmbeddedModules)
	}
	fmt.Fprintln(w)
}

// formatUS prints times with about four significant digits.
func formatUS(us float64) string {
	switch {
	case us >= 1000:
		return fmt.Sprintf("%.0f", us)
	case us >= 100:
		return fmt.Sprintf("%.1f", us)
	default:
		return fmt.Sprintf("%.2f", us)
	}
}

// progress reports the stages of a run on stderr. On a terminal it keeps
// one status line, rewritten in place; elsewhere (a pipe, a log file) it
// writes each stage as a plain line, with no carriage return or escape
// code; quiet writes nothing.
type progress struct {
	w     io.Writer
	tty   bool // w is a terminal: rewrite the status line in place
	quiet bool
	total int
	done  int
	width int // length of the status line on screen (tty only)
}

// newProgress reports to w, rewriting lines only when w is a terminal.
func newProgress(w io.Writer, quiet bool) *progress {
	return &progress{w: w, tty: isTerminal(w), quiet: quiet}
}

// isTerminal reports whether w is a character device (a terminal), by
// os.File.Stat alone.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// note writes one line about a stage that is not counted ("measuring the
// copy bandwidth..."), ending any status line first.
func (p *progress) note(format string, args ...any) {
	if p == nil || p.quiet {
		return
	}
	p.clear()
	fmt.Fprintf(p.w, format+"\n", args...)
}

// step announces the next counted item.
func (p *progress) step(label string) {
	if p == nil || p.quiet {
		return
	}
	p.done++
	s := fmt.Sprintf("[%d/%d] %s", p.done, p.total, label)
	if !p.tty {
		fmt.Fprintln(p.w, s)
		return
	}
	pad := ""
	if n := p.width - len(s); n > 0 {
		pad = strings.Repeat(" ", n)
	}
	p.width = len(s)
	fmt.Fprintf(p.w, "\r%s%s", s, pad)
}

// clear ends a status line on a terminal, so the next output starts on a
// line of its own.
func (p *progress) clear() {
	if p.tty && p.width > 0 {
		fmt.Fprintln(p.w)
		p.width = 0
	}
}

// finish ends the status line.
func (p *progress) finish() {
	if p == nil || p.quiet {
		return
	}
	p.clear()
}
