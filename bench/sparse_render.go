package main

import (
	"fmt"
	"io"
	"slices"
)

// decodeMaxM is the largest M the sparse table counts as decode-like
// (issue 24: M = 1, 16, 128), where it adds each row's bytes per second.
const decodeMaxM = 128

// sparseProduct reports whether mode runs a 2:4-sparse product: the
// engine's sp24 or cuSPARSELt's.
func sparseProduct(mode string) bool { return mode == modeSP24 || mode == modeCuSPARSELt }

// sparseMovedBytes is movedBytes for the sparse modes: a sparse product's
// least traffic (sp24Bytes: cuSPARSELt's compressed weight is its own
// layout of about the same size, so the figure is nominal there), the
// prune + compress pass's (sp24PruneBytes).
func sparseMovedBytes(s shape, dt dtype, mode string) (int64, bool) {
	switch {
	case sparseProduct(mode):
		return sp24Bytes(s, dt), true
	case mode == modeSP24Prune:
		return sp24PruneBytes(s, dt), true
	}
	return 0, false
}

// fillSparse replaces the dense roofline the sweep gave a measured sparse
// product row: its memory floor is its own bytes (sp24Bytes) at the run's
// copy bandwidth copyBW, its compute floor 2·M·N·K at twice the dense
// datasheet peak (what 2:4 sparse tensor cores promise), so %roof stays a
// fraction of what the sparse hardware allows. TFLOPS stays
// dense-equivalent: 2·M·N·K over the median, comparable with the dense
// rows'.
func fillSparse(r *row, copyBW float64) {
	if !sparseProduct(r.Mode) || r.Error != "" || r.MedianUS <= 0 {
		return
	}
	if r.PeakTFLOPS > 0 {
		r.PeakTFLOPS *= 2
		r.PeakName += " 2:4 sparse"
	}
	var rf roofline
	if copyBW > 0 {
		rf.MemoryUS = float64(sp24Bytes(r.Shape, r.DType)) / copyBW * 1e6
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

// denseBandwidth is a dense product row's bytes per second: gemmBytes
// (A and B read once, the output written once) over its median; 0 for a
// row not measured.
func denseBandwidth(r *row) float64 {
	if r == nil || r.Error != "" || r.MedianUS <= 0 {
		return 0
	}
	return float64(gemmBytes(r.Shape, r.DType)) / (r.MedianUS * 1e-6)
}

// rateCell writes a product row's time and, in brackets, its TFLOP/s
// (dense-equivalent for the sparse rows); "—" for a row not measured,
// "error" for one that failed.
func rateCell(r *row) string {
	switch {
	case r == nil:
		return "—"
	case r.Error != "":
		return "error"
	}
	return fmt.Sprintf("%s (%.1f)", mdUS(r.MedianUS), r.TFLOPS)
}

// sparseColumn is one product column of the sparse table.
type sparseColumn struct {
	mode, title string
}

// sparseTable is the sparse forward's table: per problem with an sp24
// row, the sparse forward, the dense products and cuSPARSELt (the columns
// of modes the report has), the sparse forward's speed-ups, and on
// decode-like problems (M ≤ decodeMaxM) the bytes per second of the
// sparse and the dense forward beside the copy floor's. cell writes a
// product row.
func sparseTable(ix *rowIndex, cell func(*row) string) (head []string, rows [][]string) {
	var withSP24 []problemKey
	for _, pk := range ix.problems {
		if ix.get(pk, modeSP24) != nil {
			withSP24 = append(withSP24, pk)
		}
	}
	if len(withSP24) == 0 {
		return nil, nil
	}
	present := func(mode string) bool {
		return slices.ContainsFunc(withSP24, func(pk problemKey) bool { return ix.get(pk, mode) != nil })
	}
	cols := []sparseColumn{{modeSP24, "detgemm sp24"}}
	for _, c := range []sparseColumn{{modeTCFwd, "detgemm tc-fwd (dense)"}, {modeDefault, "cuBLAS (dense)"},
		{modeLt, "cuBLASLt (dense)"}, {modeCuSPARSELt, "cuSPARSELt (2:4)"}} {
		if present(c.mode) {
			cols = append(cols, c)
		}
	}
	vs := []sparseColumn{{modeTCFwd, "sp24 vs tc-fwd"}, {modeDefault, "sp24 vs cuBLAS"}, {modeCuSPARSELt, "sp24 vs cuSPARSELt"}}
	head = []string{"M×K×N", "dtype"}
	for _, c := range cols {
		head = append(head, c.title)
	}
	for _, c := range vs {
		if present(c.mode) {
			head = append(head, c.title)
		}
	}
	head = append(head, "sp24 GB/s", "tc-fwd GB/s", "copy GB/s")
	for _, pk := range withSP24 {
		sp := ix.get(pk, modeSP24)
		line := []string{mdShape(pk.s), string(pk.d)}
		for _, c := range cols {
			line = append(line, cell(ix.get(pk, c.mode)))
		}
		for _, c := range vs {
			if present(c.mode) {
				line = append(line, mdRatio(ratio(ix.get(pk, c.mode), sp)))
			}
		}
		if pk.s.M <= decodeMaxM {
			line = append(line, mdGBps(rowBandwidth(sp)), mdGBps(denseBandwidth(ix.get(pk, modeTCFwd))), mdGBps(rowBandwidth(ix.get(pk, modeCopy))))
		} else {
			line = append(line, "—", "—", "—")
		}
		rows = append(rows, line)
	}
	return head, rows
}

// pruneTable is the prune + compress pass's table: each K×N weight and
// type once (the first problem that measured it), its time and
// bandwidth beside the copy floor's on the same problem.
func pruneTable(ix *rowIndex, cell func(*row) string) (head []string, rows [][]string) {
	head = []string{"K×N weight", "dtype", "µs", "GB/s", "copy GB/s", "GB/s / copy's"}
	type weight struct {
		k, n int
		d    dtype
	}
	var seen []weight
	for _, pk := range ix.problems {
		r := ix.get(pk, modeSP24Prune)
		w := weight{pk.s.K, pk.s.N, pk.d}
		if r == nil || slices.Contains(seen, w) {
			continue
		}
		seen = append(seen, w)
		bw, cbw := rowBandwidth(r), rowBandwidth(ix.get(pk, modeCopy))
		frac := "—"
		if bw > 0 && cbw > 0 {
			frac = fmt.Sprintf("%.0f %%", 100*bw/cbw)
		}
		rows = append(rows, []string{fmt.Sprintf("%d×%d", w.k, w.n), string(w.d), cell(r), mdGBps(bw), mdGBps(cbw), frac})
	}
	return head, rows
}

// writeSparseMarkdown writes the sparse tables, if the report has sparse
// rows.
func writeSparseMarkdown(w io.Writer, ix *rowIndex) {
	head, rows := sparseTable(ix, rateCell)
	if len(rows) > 0 {
		fmt.Fprintln(w, "\n**2:4 sparse forward** (issue 24: Sparse24Plan once, Run per launch; Y = X·W with W pruned to 2:4")
		fmt.Fprintln(w, "along K by PruneCompress24 from random dense weights, values and metadata rotated past the L2) beside")
		fmt.Fprintln(w, "the dense products of the same shape and run. µs, and in brackets dense-equivalent TFLOP/s: 2·M·N·K")
		fmt.Fprintln(w, "over the median for every column, so a sparse product's figure is comparable with a dense one's.")
		fmt.Fprintf(w, "Speed-ups are the other row's median over sp24's. GB/s (M ≤ %d): sp24 reads X, the values and the\n", decodeMaxM)
		fmt.Fprintln(w, "metadata and writes Y; tc-fwd reads X and the dense W and writes Y; the copy floor moves tc-fwd's bytes:")
		fmt.Fprintln(w)
		mdTable(w, head, rows)
	}
	head, rows = pruneTable(ix, func(r *row) string { return mdCell(r, false) })
	if len(rows) > 0 {
		fmt.Fprintln(w, "\n**2:4 prune + compress** (PruneCompress24 of a K×N weight on the GPU: reads W once, writes the")
		fmt.Fprintln(w, "values and the metadata; issue 24's target is ≤ 100 µs at 4096×11008), beside the copy floor's bandwidth:")
		fmt.Fprintln(w)
		mdTable(w, head, rows)
	}
}

// printSparseTables writes the sparse tables under the main table of
// --format table.
func printSparseTables(w io.Writer, ix *rowIndex) {
	head, rows := sparseTable(ix, func(r *row) string {
		switch {
		case r == nil:
			return "-"
		case r.Error != "":
			return "error"
		}
		return fmt.Sprintf("%s (%.1f)", formatUS(r.MedianUS), r.TFLOPS)
	})
	printTitledTable(w, fmt.Sprintf("2:4 sparse forward (µs, dense-equivalent TFLOP/s in brackets; speed-up: other / sp24; GB/s for M ≤ %d)", decodeMaxM), head, rows)
	head, rows = pruneTable(ix, func(r *row) string {
		if r.Error != "" {
			return "error"
		}
		return formatUS(r.MedianUS)
	})
	printTitledTable(w, "2:4 prune + compress (PruneCompress24; GB/s read + written, beside the copy floor's)", head, rows)
}
