package main

import (
	"fmt"
	"io"
	"slices"
)

// fillFP8 replaces the dense roofline the sweep gave a measured fp8
// product row (the engine's or cuBLASLt's): its memory floor is its own
// bytes (fp8MovedBytes: one byte an operand element, the scales, D) at
// the run's copy bandwidth copyBW, its compute floor 2·M·N·K at the fp8
// tensor peak peakFor gave it. The quantization's row is fillBandwidth's
// (noProduct).
func fillFP8(r *row, copyBW float64) {
	if !isFP8Product(r.Mode) || r.Error != "" || r.MedianUS <= 0 {
		return
	}
	b, _ := fp8MovedBytes(r.Shape, r.Mode)
	var rf roofline
	if copyBW > 0 {
		rf.MemoryUS = float64(b) / copyBW * 1e6
	}
	rf.FloorUS, rf.Bound = rf.MemoryUS, "memory"
	if r.PeakTFLOPS > 0 {
		rf.ComputeUS = r.Shape.FLOPs() / (r.PeakTFLOPS * 1e12) * 1e6
		if rf.ComputeUS > rf.FloorUS {
			rf.FloorUS, rf.Bound = rf.ComputeUS, r.PeakName
		}
	}
	rf.Fraction = rf.FloorUS / r.MedianUS
	rf.MemoryFraction = rf.MemoryUS / r.MedianUS
	rf.PeakFraction = rf.ComputeUS / r.MedianUS
	r.Roofline = rf
}

// fp8Column is one column of the fp8 table: a mode's row, or a ratio of
// two rows (num's median over den's: above 1, den is faster).
type fp8Column struct {
	title    string
	mode     string // a product column
	num, den string // a ratio column
}

// fp8ProductColumns are the fp8 table's product columns in order: the
// references, then the engine's modes.
var fp8ProductColumns = []fp8Column{
	{title: "cuBLAS bf16", mode: modeDefault},
	{title: "cuBLASLt fp8", mode: modeLtFP8},
	{title: "cuBLASLt fp8 fast", mode: modeLtFP8Fast},
	{title: "fp8-fast", mode: modeFP8Fast},
	{title: "fp8-prom", mode: modeFP8Prom},
	{title: "fp8-row", mode: modeFP8Row},
	{title: "fp8-block", mode: modeFP8Block},
	{title: "fp8-out8", mode: modeFP8Out8},
}

// fp8RatioColumns are its speed-ups: each engine mode against cuBLASLt's
// product of the same accumulation, and the block-scaled product (the
// DeepSeek-V3 configuration) against cuBLAS's bf16 one.
var fp8RatioColumns = []fp8Column{
	{title: "fast vs Lt fast", num: modeLtFP8Fast, den: modeFP8Fast},
	{title: "prom vs Lt", num: modeLtFP8, den: modeFP8Prom},
	{title: "row vs Lt", num: modeLtFP8, den: modeFP8Row},
	{title: "block vs Lt", num: modeLtFP8, den: modeFP8Block},
	{title: "block vs cuBLAS bf16", num: modeDefault, den: modeFP8Block},
}

// fp8BandwidthColumns are the bytes per second shown on decode-like
// problems (M ≤ decodeMaxM), where the products read their weight B at
// memory speed: the engine's promoted product, cuBLASLt's, the copy floor.
var fp8BandwidthColumns = []fp8Column{
	{title: "fp8-prom GB/s", mode: modeFP8Prom},
	{title: "Lt fp8 GB/s", mode: modeLtFP8},
	{title: "copy GB/s", mode: modeCopy},
}

// fp8Table is the fp8 products' table: per problem with an fp8 product
// row, the products (the columns of modes the report has), the speed-ups
// (where both rows exist in the report) and, on decode-like problems, the
// bandwidths. cell writes a product row.
func fp8Table(ix *rowIndex, cell func(*row) string) (head []string, rows [][]string) {
	var with []problemKey
	for _, pk := range ix.problems {
		if slices.ContainsFunc(append(fp8ProductNames(), ltFP8Modes...), func(m string) bool { return ix.get(pk, m) != nil }) {
			with = append(with, pk)
		}
	}
	if len(with) == 0 {
		return nil, nil
	}
	present := func(mode string) bool {
		return slices.ContainsFunc(with, func(pk problemKey) bool { return ix.get(pk, mode) != nil })
	}
	var cols, ratios, bws []fp8Column
	for _, c := range fp8ProductColumns {
		if present(c.mode) {
			cols = append(cols, c)
		}
	}
	for _, c := range fp8RatioColumns {
		if present(c.num) && present(c.den) {
			ratios = append(ratios, c)
		}
	}
	if slices.ContainsFunc(with, func(pk problemKey) bool { return pk.s.M <= decodeMaxM }) {
		for _, c := range fp8BandwidthColumns {
			if present(c.mode) {
				bws = append(bws, c)
			}
		}
	}
	head = []string{"M×K×N"}
	for _, group := range [][]fp8Column{cols, ratios, bws} {
		for _, c := range group {
			head = append(head, c.title)
		}
	}
	for _, pk := range with {
		line := []string{mdShape(pk.s)}
		for _, c := range cols {
			line = append(line, cell(ix.get(pk, c.mode)))
		}
		for _, c := range ratios {
			line = append(line, mdRatio(ratio(ix.get(pk, c.num), ix.get(pk, c.den))))
		}
		for _, c := range bws {
			v := "—"
			if pk.s.M <= decodeMaxM {
				v = mdGBps(rowBandwidth(ix.get(pk, c.mode)))
			}
			line = append(line, v)
		}
		rows = append(rows, line)
	}
	return head, rows
}

// fp8QuantTable is the quantization's table: each M×K activation once
// (the first problem that measured it; N does not enter), its time and
// bandwidth, beside the copy floor's on the same problem when the report
// has copy rows.
func fp8QuantTable(ix *rowIndex, cell func(*row) string) (head []string, rows [][]string) {
	type act struct{ m, k int }
	var seen []act
	withCopy := false
	for _, pk := range ix.problems {
		if ix.get(pk, modeFP8Quant) != nil && ix.get(pk, modeCopy) != nil {
			withCopy = true
		}
	}
	head = []string{"M×K activation", "µs", "GB/s"}
	if withCopy {
		head = append(head, "copy GB/s", "GB/s / copy's")
	}
	for _, pk := range ix.problems {
		r := ix.get(pk, modeFP8Quant)
		a := act{pk.s.M, pk.s.K}
		if r == nil || slices.Contains(seen, a) {
			continue
		}
		seen = append(seen, a)
		bw := rowBandwidth(r)
		line := []string{fmt.Sprintf("%d×%d", a.m, a.k), cell(r), mdGBps(bw)}
		if withCopy {
			cbw := rowBandwidth(ix.get(pk, modeCopy))
			frac := "—"
			if bw > 0 && cbw > 0 {
				frac = fmt.Sprintf("%.0f %%", 100*bw/cbw)
			}
			line = append(line, mdGBps(cbw), frac)
		}
		rows = append(rows, line)
	}
	return head, rows
}

// writeFP8Markdown writes the fp8 tables, if the report has fp8 rows.
func writeFP8Markdown(w io.Writer, ix *rowIndex) {
	head, rows := fp8Table(ix, rateCell)
	if len(rows) > 0 {
		fmt.Fprintln(w, "\n**fp8 products** (FP8Plan once, Run per launch: D[M,N] = A[M,K]·B[N,K]ᵀ, A and B random E4M3 codes")
		fmt.Fprintln(w, "stored K-major, f32 scales around 1, rotated past the L2; fast: one tensor-core chain over K; prom:")
		fmt.Fprintln(w, "a chain per 128 of K added in f32; row, block: per-row and DeepSeek-V3's 1×128 / 128×128 scales; out8:")
		fmt.Fprintln(w, "E4M3 D with ScaleD and amax; bf16 D otherwise) beside cuBLASLt's fp8 product (TN, one scale per tensor,")
		fmt.Fprintln(w, "bf16 D; fast: CUBLASLT_MATMUL_DESC_FAST_ACCUM) and cuBLAS's bf16 product of the same shape. µs, and in")
		fmt.Fprintln(w, "brackets TFLOP/s (2·M·N·K over the median). Speed-ups are the other row's median over the fp8 mode's")
		fmt.Fprintf(w, "(above 1: the fp8 mode is faster). GB/s (M ≤ %d): A, B, the scales and D over the median:\n", decodeMaxM)
		fmt.Fprintln(w)
		mdTable(w, head, rows)
	}
	head, rows = fp8QuantTable(ix, func(r *row) string { return mdCell(r, false) })
	if len(rows) > 0 {
		fmt.Fprintln(w, "\n**fp8 quantization** (QuantizeFP8 of a bf16 M×K activation into E4M3, a scale per 1×128 group: reads")
		fmt.Fprintln(w, "X twice (the group maxima, then the codes), writes Q and the scales; three launches):")
		fmt.Fprintln(w)
		mdTable(w, head, rows)
	}
}

// printFP8Tables writes the fp8 tables under the main table of --format
// table.
func printFP8Tables(w io.Writer, ix *rowIndex) {
	head, rows := fp8Table(ix, func(r *row) string {
		switch {
		case r == nil:
			return "-"
		case r.Error != "":
			return "error"
		}
		return fmt.Sprintf("%s (%.1f)", formatUS(r.MedianUS), r.TFLOPS)
	})
	printTitledTable(w, fmt.Sprintf("fp8 products (µs, TFLOP/s in brackets; speed-up: other / fp8 mode; GB/s for M ≤ %d)", decodeMaxM), head, rows)
	head, rows = fp8QuantTable(ix, func(r *row) string {
		if r.Error != "" {
			return "error"
		}
		return formatUS(r.MedianUS)
	})
	printTitledTable(w, "fp8 quantization (QuantizeFP8 bf16 → E4M3, 1×128 groups; GB/s read + written)", head, rows)
}
