package main

import (
	"fmt"
	"io"
)

// movedBytes is what one launch of a data-movement row reads and writes,
// counted as copy_bandwidth counts a copy's (every byte read and every
// byte written): the copy floor's copy (copyHalf each way), the read
// floor's read (2·copyHalf), a standalone gated activation's gatedBytes.
// false for every other mode (a GEMM's bytes are the roofline's).
func movedBytes(s shape, dt dtype, mode string) (int64, bool) {
	switch mode {
	case modeCopy, modeRead:
		return int64(2 * copyHalf(s, dt)), true
	}
	if m, ok := lookupGated(mode); ok {
		return gatedBytes(m, s, dt), true
	}
	if b, ok := fp8MovedBytes(s, mode); ok {
		return b, true
	}
	return sparseMovedBytes(s, dt, mode)
}

// noProduct reports whether a data-movement mode computes no product (a
// standalone gated activation, the 2:4 prune + compress pass, the fp8
// quantization): its row has no FLOPs and its roofline is its own
// bytes'.
func noProduct(mode string) bool {
	_, gated := lookupGated(mode)
	return gated || mode == modeSP24Prune || mode == modeFP8Quant
}

// fillBandwidth sets a measured data-movement row's BytesPerSec (and a
// sparse product's: sparseMovedBytes); on a standalone gated row or a
// prune + compress row (noProduct) it also replaces the GEMM figures the sweep filled
// in (there is no product: no FLOPs, no compute peak) with the memory
// floor of its own bytes at the run's copy bandwidth copyBW, so %roof is
// the fraction of that bandwidth it reached.
func fillBandwidth(r *row, copyBW float64) {
	b, ok := movedBytes(r.Shape, r.DType, r.Mode)
	if !ok || r.Error != "" || r.MedianUS <= 0 {
		return
	}
	r.BytesPerSec = float64(b) / (r.MedianUS * 1e-6)
	if !noProduct(r.Mode) {
		return
	}
	r.TFLOPS, r.PeakName, r.PeakTFLOPS = 0, "", 0
	r.Roofline = roofline{Bound: "memory"}
	if copyBW > 0 {
		r.Roofline.MemoryUS = float64(b) / copyBW * 1e6
		r.Roofline.FloorUS = r.Roofline.MemoryUS
		r.Roofline.Fraction = r.Roofline.FloorUS / r.MedianUS
		r.Roofline.MemoryFraction = r.Roofline.Fraction
	}
}

// rowBandwidth is a row's bytes per second: its BytesPerSec, or for a
// data-movement row of a report older than version 3, movedBytes over its
// median; 0 for a GEMM row or a row not measured.
func rowBandwidth(r *row) float64 {
	switch {
	case r == nil || r.Error != "" || r.MedianUS <= 0:
		return 0
	case r.BytesPerSec > 0:
		return r.BytesPerSec
	}
	if b, ok := movedBytes(r.Shape, r.DType, r.Mode); ok {
		return float64(b) / (r.MedianUS * 1e-6)
	}
	return 0
}

// mdGBps writes a bandwidth in GB/s (10⁹ bytes), "—" when unknown.
func mdGBps(bps float64) string {
	if bps <= 0 {
		return "—"
	}
	return fmt.Sprintf("%.0f", bps/1e9)
}

// gatedTable is the standalone gated activations' table: per problem and
// mode, the time, the bandwidth reached and the copy floor's bandwidth on
// the same problem and run. cell writes a row's time.
func gatedTable(ix *rowIndex, cell func(*row) string) (head []string, rows [][]string) {
	head = []string{"M×K×N", "dtype", "mode", "rows × n", "µs", "GB/s", "copy GB/s", "GB/s / copy's"}
	for _, pk := range ix.problems {
		cp := ix.get(pk, modeCopy)
		for _, m := range gatedModes {
			r := ix.get(pk, m.name)
			if r == nil {
				continue
			}
			bw, cbw := rowBandwidth(r), rowBandwidth(cp)
			frac := "—"
			if bw > 0 && cbw > 0 {
				frac = fmt.Sprintf("%.0f %%", 100*bw/cbw)
			}
			rows = append(rows, []string{mdShape(pk.s), string(pk.d), m.name, fmt.Sprintf("%d × %d", pk.s.M, pk.s.N/2),
				cell(r), mdGBps(bw), mdGBps(cbw), frac})
		}
	}
	return head, rows
}

// writeGatedMarkdown writes the gated table, if the report has standalone
// gated rows.
func writeGatedMarkdown(w io.Writer, ix *rowIndex) {
	head, rows := gatedTable(ix, func(r *row) string { return mdCell(r, false) })
	if len(rows) == 0 {
		return
	}
	fmt.Fprintln(w, "\n**Gated activations, standalone** (issue 23: GatedForward / GatedBackward alone, GatedHalves; on")
	fmt.Fprintln(w, "M×K×N, rows = M and n = N/2, K unused). GB/s: bytes read and written over the median (forward")
	fmt.Fprintln(w, "3n, backward 5n elements a row), beside the copy floor's (backend `copy`) on the same problem and run:")
	fmt.Fprintln(w)
	mdTable(w, head, rows)
}

// printGatedTable writes the gated table under the main table of --format
// table.
func printGatedTable(w io.Writer, ix *rowIndex) {
	head, rows := gatedTable(ix, func(r *row) string {
		switch {
		case r == nil:
			return "-"
		case r.Error != "":
			return "error"
		}
		return formatUS(r.MedianUS)
	})
	printTitledTable(w, "Gated activations, standalone (rows = M, n = N/2; GB/s read + written, beside the copy floor's)", head, rows)
}
