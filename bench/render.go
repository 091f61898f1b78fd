package main

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
)

// The output formats of --format.
const (
	formatTable = "table"
	formatJSON  = "json"
	formatMD    = "md"
	formatCSV   = "csv"
)

// formats lists --format's values.
var formats = []string{formatTable, formatJSON, formatMD, formatCSV}

// fairReference names the cuBLAS math mode an engine mode is judged
// against: the IEEE tiers (fwd, dx, dw: f32 FMAs on CUDA cores) against
// pedantic cuBLAS (no TF32 or reduced-precision tensor cores), the
// tensor-core tier against cuBLAS's default math. "" for other modes.
//
// The Matmul modes: the IEEE tier's against cuBLAS pedantic, the
// tensor-core tier's against the cuBLASLt mode of the same epilogue and
// layout (the separate-pass mode, which has none, against cuBLAS
// default). The 2:4 sparse products (sp24, cuSPARSELt's) against cuBLAS
// default: the dense product they replace. The engine's fp8 products
// against cuBLASLt's fp8 product of the same accumulation (lt-fp8-fast for
// fp8-fast, lt-fp8 for the promoted ones).
func fairReference(mode string) string {
	if m, ok := lookupFP8(mode); ok {
		return m.lt
	}
	switch mode {
	case modeFwd, modeDX, modeDW:
		return modePedantic
	case modeTCFwd, modeTCDX, modeTCDW, modeSP24, modeCuSPARSELt:
		return modeDefault
	}
	if _, tc, ok := lookupMM(mode); ok {
		if !tc {
			return modePedantic
		}
		if lt := mmPair(mode, ltOf); lt != "" {
			return lt
		}
		return modeDefault
	}
	return ""
}

// rowKey finds a row by problem and mode (modes are unique across backends).
type rowKey struct {
	s    shape
	d    dtype
	mode string
}

// rowIndex holds the measured rows of a report, and the problems in the
// order they were measured.
type rowIndex struct {
	rows     map[rowKey]*row
	problems []problemKey
}

// problemKey is one shape and type.
type problemKey struct {
	s shape
	d dtype
}

func indexRows(rows []row) *rowIndex {
	ix := &rowIndex{rows: map[rowKey]*row{}}
	for i := range rows {
		r := &rows[i]
		pk := problemKey{r.Shape, r.DType}
		if !slices.Contains(ix.problems, pk) {
			ix.problems = append(ix.problems, pk)
		}
		ix.rows[rowKey{r.Shape, r.DType, r.Mode}] = r
	}
	return ix
}

// get is the row of a mode for a problem, nil if not measured.
func (ix *rowIndex) get(pk problemKey, mode string) *row {
	return ix.rows[rowKey{pk.s, pk.d, mode}]
}

// has reports whether the problem has a row of any of modes.
func (ix *rowIndex) has(pk problemKey, modes ...string) bool {
	for _, m := range modes {
		if ix.get(pk, m) != nil {
			return true
		}
	}
	return false
}

// ratio is ref's median over r's (above 1: r is faster); 0 when either is
// missing or failed.
func ratio(ref, r *row) float64 {
	if ref == nil || r == nil || ref.Error != "" || r.Error != "" || ref.MedianUS <= 0 || r.MedianUS <= 0 {
		return 0
	}
	return ref.MedianUS / r.MedianUS
}

// vsReference is a row's ratio to its fair cuBLAS row (fairReference).
func (ix *rowIndex) vsReference(r *row) (float64, string) {
	ref := fairReference(r.Mode)
	if ref == "" {
		return 0, ""
	}
	return ratio(ix.get(problemKey{r.Shape, r.DType}, ref), r), ref
}

// mdShape writes a shape the way the README does: 1×4096×4096.
func mdShape(s shape) string { return fmt.Sprintf("%d×%d×%d", s.M, s.K, s.N) }

// mdUS writes a median in µs: one decimal below a millisecond.
func mdUS(us float64) string {
	if us >= 1000 {
		return fmt.Sprintf("%.0f", us)
	}
	return fmt.Sprintf("%.1f", us)
}

// mdCell is a row's time; with TFLOP/s in brackets when withRate and the
// row is bound by compute (a datasheet peak), not memory. "—" for a row
// not measured, "error" for one that failed.
func mdCell(r *row, withRate bool) string {
	switch {
	case r == nil:
		return "—"
	case r.Error != "":
		return "error"
	}
	s := mdUS(r.MedianUS)
	if withRate && r.Roofline.Bound != "" && r.Roofline.Bound != "memory" {
		s += fmt.Sprintf(" (%.1f)", r.TFLOPS)
	}
	return s
}

// mdRatio writes a speed ratio, "—" when unknown.
func mdRatio(v float64) string {
	if v <= 0 {
		return "—"
	}
	return fmt.Sprintf("%.2f×", v)
}

// mdDate writes an RFC 3339 date as "2006-01-02 15:04 UTC".
func mdDate(d string) string {
	t, err := time.Parse(time.RFC3339, d)
	if err != nil {
		return d
	}
	return t.UTC().Format("2006-01-02 15:04 UTC")
}

// runHeader is the provenance of a report in words: GPU, driver and
// libraries, date, commit, command.
func runHeader(rep *report) string {
	var libs []string
	if rep.Driver.Release != "" {
		libs = append(libs, "driver "+rep.Driver.Release)
	}
	if rep.Driver.Version != "" {
		libs = append(libs, "CUDA "+rep.Driver.Version)
	}
	if rep.CUBLAS.Version != "" {
		libs = append(libs, "cuBLAS "+rep.CUBLAS.Version)
	}
	if rep.Startup.NVRTC != "" {
		libs = append(libs, "NVRTC "+rep.Startup.NVRTC)
	}
	if rep.Startup.Arch != "" {
		libs = append(libs, rep.Startup.Arch)
	}
	gpu := rep.GPU.Name
	if gpu == "" {
		gpu = "an unnamed GPU"
	}
	commit := "commit not recorded"
	if rep.Commit != "" {
		commit = "commit " + rep.Commit
	}
	cmd := "a command not recorded (schema " + rep.Schema + ")"
	if len(rep.Command) > 0 {
		cmd = "`" + shellJoin(rep.Command) + "`"
	}
	return fmt.Sprintf("Measured on %s (%s) on %s (%s) by %s.", gpu, strings.Join(libs, ", "), mdDate(rep.Date), commit, cmd)
}

// orUnknown is s, or "unknown" when empty.
func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}

// mdTable writes a Markdown table.
func mdTable(w io.Writer, head []string, rows [][]string) {
	fmt.Fprintf(w, "| %s |\n", strings.Join(head, " | "))
	fmt.Fprintf(w, "|%s\n", strings.Repeat("---|", len(head)))
	for _, r := range rows {
		fmt.Fprintf(w, "| %s |\n", strings.Join(r, " | "))
	}
}

// printTitledTable writes a titled table for --format table under the main
// one: a blank line, the title, then the columns aligned (tabwriter). A
// table without rows writes nothing.
func printTitledTable(w io.Writer, title string, head []string, rows [][]string) {
	if len(rows) == 0 {
		return
	}
	fmt.Fprintf(w, "\n%s\n", title)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, strings.Join(head, "\t")+"\t")
	for _, r := range rows {
		fmt.Fprintln(tw, strings.Join(r, "\t")+"\t")
	}
	_ = tw.Flush()
}

// writeMarkdown writes a report as the README's "How fast" section: a
// header naming the run (GPU, driver, libraries, date, commit, command),
// then the IEEE tiers against cuBLAS pedantic, the tensor-core tier
// against cuBLAS default, and the memory floors of the memory-bound
// problems. render is the command that produced this text; it goes in a
// comment at the top, so the section says how to regenerate it.
func writeMarkdown(w io.Writer, rep *report, render string) error {
	ix := indexRows(rep.Rows)
	fmt.Fprintf(w, "<!-- Generated by `%s` (detgemm bench); regenerate it rather than edit it. -->\n\n", render)
	fmt.Fprintln(w, runHeader(rep))
	l2 := ""
	if rep.GPU.L2Bytes > 0 {
		l2 = fmt.Sprintf(" past the %.0f MiB L2", float64(rep.GPU.L2Bytes)/(1<<20))
	}
	fmt.Fprintf(w, "Medians of %d measurements of back-to-back launches over input sets rotated%s;\n", rep.Config.Repeats, l2)
	fmt.Fprintln(w, "the rows of one shape and type measured in turns (round-robin), so clock and power drift")
	fmt.Fprintf(w, "falls on all of them alike; cuBLAS and a device-to-device copy (%.2f TB/s) in the same run.\n", rep.Copy.BytesPerSec/1e12)
	fmt.Fprintln(w, "Times in µs; TFLOP/s in brackets where the row is bound by the datasheet compute peak rather than by memory.")

	var ieee, tc, floors [][]string
	for _, pk := range ix.problems {
		if ix.has(pk, modeFwd, modeDX, modeDW) {
			ped, fwd := ix.get(pk, modePedantic), ix.get(pk, modeFwd)
			ieee = append(ieee, []string{mdShape(pk.s), string(pk.d), mdCell(ped, true), mdCell(fwd, true),
				mdCell(ix.get(pk, modeDX), false), mdCell(ix.get(pk, modeDW), false), mdRatio(ratio(ped, fwd))})
		}
		if ix.has(pk, modeTCFwd, modeTCDX, modeTCDW) {
			def, fwd := ix.get(pk, modeDefault), ix.get(pk, modeTCFwd)
			tc = append(tc, []string{mdShape(pk.s), string(pk.d), mdCell(def, true), mdCell(fwd, true),
				mdCell(ix.get(pk, modeTCDX), false), mdCell(ix.get(pk, modeTCDW), false), mdRatio(ratio(def, fwd))})
		}
		if memoryBound(ix, pk) {
			floors = append(floors, []string{mdShape(pk.s), string(pk.d), mdCell(ix.get(pk, modeRead), false), mdCell(ix.get(pk, modeCopy), false),
				mdCell(ix.get(pk, modeFwd), false), mdCell(ix.get(pk, modeDX), false), mdCell(ix.get(pk, modeTCFwd), false),
				mdCell(ix.get(pk, modeTCDX), false), mdCell(ix.get(pk, modeDefault), false)})
		}
	}
	if len(ieee) > 0 {
		fmt.Fprintln(w, "\n**IEEE tiers** — detgemm's f32 tier (f32 rows) and typed tier (bf16, f16 rows) run f32 FMAs")
		fmt.Fprintln(w, "on CUDA cores, so the fair comparison is cuBLAS with pedantic math (no TF32, no")
		fmt.Fprintln(w, "reduced-precision tensor cores):")
		fmt.Fprintln(w)
		mdTable(w, []string{"M×K×N", "dtype", "cuBLAS pedantic", "detgemm fwd", "dX", "dW", "fwd vs cuBLAS pedantic"}, ieee)
	}
	if len(tc) > 0 {
		fmt.Fprintln(w, "\n**Tensor-core tier** (cuBLAS with default math, which may change bits with M):")
		fmt.Fprintln(w)
		mdTable(w, []string{"M×K×N", "dtype", "cuBLAS default", "detgemm tc-fwd", "tc-dX", "tc-dW", "tc-fwd vs cuBLAS default"}, tc)
	}
	writeMatmulMarkdown(w, ix)
	writeGatedMarkdown(w, ix)
	writeSparseMarkdown(w, ix)
	writeFP8Markdown(w, ix)
	if len(floors) > 0 {
		fmt.Fprintln(w, "\n**Memory floors** of the memory-bound problems (memory floor above the compute floor), from the")
		fmt.Fprintln(w, "same run (backend `copy`: a device copy moving the problem's bytes — inputs read once, output")
		fmt.Fprintln(w, "written once — and a kernel that only reads them):")
		fmt.Fprintln(w)
		mdTable(w, []string{"M×K×N", "dtype", "read floor", "copy floor", "detgemm fwd (IEEE)", "dX (IEEE)", "tc-fwd", "tc-dX", "cuBLAS default"}, floors)
	}
	var failed []string
	for _, r := range rep.Rows {
		if r.Error != "" {
			failed = append(failed, fmt.Sprintf("- %s %s %s %s: %s", mdShape(r.Shape), r.DType, r.Backend, r.Mode, r.Error))
		}
	}
	if len(failed) > 0 {
		fmt.Fprintln(w, "\nRows that could not be measured:")
		fmt.Fprintln(w)
		fmt.Fprintln(w, strings.Join(failed, "\n"))
	}
	return nil
}

// memoryBound reports whether a problem has floor rows (copy, read) and
// its memory floor is above its compute floor (the copy row's roofline
// says which; with no datasheet peak every problem is memory-bound).
func memoryBound(ix *rowIndex, pk problemKey) bool {
	for _, m := range []string{modeCopy, modeRead} {
		if r := ix.get(pk, m); r != nil && r.Error == "" {
			return r.Roofline.Bound == "memory"
		}
	}
	return false
}

// csvHeader names the columns of --format csv.
var csvHeader = []string{"date", "gpu", "commit", "shape", "m", "k", "n", "dtype", "backend", "mode",
	"median_us", "min_us", "max_us", "tflops", "roofline_fraction", "bound", "vs_cublas_default",
	"reference", "vs_reference", "plain", "over_plain", "gb_per_s", "error"}

// writeCSV writes one line per row, with the run's date, GPU and commit
// on each so that files of several runs can be concatenated. Ratios are
// cuBLAS's median over the row's (above 1: faster than cuBLAS); reference
// is the cuBLAS mode the row is fairly judged against (fairReference).
func writeCSV(w io.Writer, rep *report) error {
	ix := indexRows(rep.Rows)
	cw := csv.NewWriter(w)
	if err := cw.Write(csvHeader); err != nil {
		return err
	}
	num := func(v float64) string {
		if v == 0 {
			return ""
		}
		return strconv.FormatFloat(v, 'f', -1, 64)
	}
	for i := range rep.Rows {
		r := &rep.Rows[i]
		vs, ref := ix.vsReference(r)
		plain := plainModeOf(r.Mode)
		over := ""
		if v, ok := overPlainValue(r, ix.get(problemKey{r.Shape, r.DType}, plain)); ok && plain != "" {
			over = strconv.FormatFloat(v, 'f', -1, 64)
		}
		rec := []string{rep.Date, rep.GPU.Name, rep.Commit, r.Shape.String(),
			strconv.Itoa(r.Shape.M), strconv.Itoa(r.Shape.K), strconv.Itoa(r.Shape.N), string(r.DType), r.Backend, r.Mode,
			num(r.MedianUS), num(r.MinUS), num(r.MaxUS), num(r.TFLOPS), num(r.Roofline.Fraction), r.Roofline.Bound,
			num(r.VsCUBLAS), ref, num(vs), plain, over, num(rowBandwidth(r) / 1e9), r.Error}
		if err := cw.Write(rec); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

// writeReportJSON writes the report indented, as --json does.
func writeReportJSON(w io.Writer, rep *report) error {
	b, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

// renderReport writes rep to w in format; render is the command line that
// asked, quoted in the Markdown's header comment.
func renderReport(w io.Writer, rep *report, format, render string) error {
	switch format {
	case formatTable, "":
		printReport(w, rep)
		return nil
	case formatJSON:
		return writeReportJSON(w, rep)
	case formatMD:
		return writeMarkdown(w, rep, render)
	case formatCSV:
		return writeCSV(w, rep)
	}
	return fmt.Errorf("--format %q: want one of %s", format, strings.Join(formats, ", "))
}
