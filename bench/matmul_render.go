package main

import (
	"fmt"
	"io"
)

// mmCompare is one Matmul mode's row beside the rows it is judged
// against on the same problem: its cuBLASLt pair (tensor-core tier), its
// own plain product (the engine's cost of the epilogue or layout), and
// the cuBLASLt pair's plain product (cuBLASLt's cost of the same).
type mmCompare struct {
	pk                      problemKey
	mode, ltMode, plainMode string
	eng, lt, plain, ltPlain *row
	unfusedMode             string
	unfused                 *row
	unfusedIsStandIn        bool // the separate pass is a ReLU standing in for a GELU
}

// matmulComparisons lists every Matmul row of a report with its pairs, by
// problem, in mode order.
func matmulComparisons(ix *rowIndex) []mmCompare {
	var out []mmCompare
	for _, pk := range ix.problems {
		for _, name := range mmModeNames() {
			r := ix.get(pk, name)
			if r == nil {
				continue
			}
			c := mmCompare{pk: pk, mode: name, eng: r,
				ltMode: mmPair(name, ltOf), plainMode: mmPair(name, plainOf), unfusedMode: mmPair(name, unfusedOf)}
			if c.ltMode != "" {
				c.lt = ix.get(pk, c.ltMode)
			}
			if c.plainMode != "" {
				c.plain = ix.get(pk, c.plainMode)
				// A pair that is cuBLASLt's plain product itself (the
				// gated modes': cuBLASLt has no gated epilogue) has no
				// cost over plain.
				if lp := mmPair(c.plainMode, ltOf); lp != "" && c.ltMode != "" && lp != c.ltMode {
					c.ltPlain = ix.get(pk, lp)
				}
			}
			if c.unfusedMode != "" {
				c.unfused = ix.get(pk, c.unfusedMode)
				m, _, _ := lookupMM(name)
				c.unfusedIsStandIn = m.standIn
			}
			out = append(out, c)
		}
	}
	return out
}

// plainModeOf is the mode whose time a row's extra cost is measured
// against: a Matmul mode's plain product (mmPair), or for a cuBLASLt mode
// paired with a Matmul mode, the cuBLASLt pair of that mode's plain
// product. "" for every other mode.
func plainModeOf(mode string) string {
	if _, _, ok := lookupMM(mode); ok {
		return mmPair(mode, plainOf)
	}
	for _, m := range mmModes {
		if m.lt == mode && m.plain != "" {
			if p, _, _ := lookupMM(m.plain); p.lt != mode {
				return p.lt
			}
		}
	}
	return ""
}

// overPlainValue is r's median over plain's, minus 1 (0.021: 2.1 %
// slower than plain), and whether both were measured.
func overPlainValue(r, plain *row) (float64, bool) {
	v := ratio(r, plain) // r's median over plain's
	if v <= 0 {
		return 0, false
	}
	return v - 1, true
}

// overPlain is overPlainValue as a signed percentage ("+2.1 %"), "—" when
// unknown.
func overPlain(r, plain *row) string {
	v, ok := overPlainValue(r, plain)
	if !ok {
		return "—"
	}
	return fmt.Sprintf("%+.1f %%", v*100)
}

// matmulTables are the Matmul comparison's two tables: every Matmul row
// beside cuBLASLt and its plain product, and the fused epilogues beside a
// product followed by a separate pass. cell writes a row's time.
func matmulTables(ix *rowIndex, cell func(*row) string) (head []string, rows [][]string, fhead []string, frows [][]string) {
	head = []string{"M×K×N", "dtype", "mode", "detgemm", "cuBLASLt mode", "cuBLASLt", "cuBLASLt / detgemm",
		"plain", "detgemm over plain", "cuBLASLt over plain"}
	fhead = []string{"M×K×N", "dtype", "fused", "µs", "product + separate pass", "µs", "separate / fused", "pass"}
	for _, c := range matmulComparisons(ix) {
		lt, plain := "—", "—"
		if c.ltMode != "" {
			lt = c.ltMode
		}
		if c.plainMode != "" {
			plain = c.plainMode
		}
		rows = append(rows, []string{mdShape(c.pk.s), string(c.pk.d), c.mode, cell(c.eng), lt, cellOrDash(c.lt, c.ltMode, cell),
			mdRatio(ratio(c.lt, c.eng)), plain, overPlain(c.eng, c.plain), overPlainOrDash(c)})
		if c.unfusedMode != "" {
			pass := "ReLU: the same result"
			switch um, _, _ := lookupMM(c.unfusedMode); {
			case c.unfusedIsStandIn:
				pass = "ReLU for GELU: a lower bound"
			case um.gatePass != 0:
				pass = um.gatePass.String() + ": the same gate, from D rounded"
			}
			frows = append(frows, []string{mdShape(c.pk.s), string(c.pk.d), c.mode, cell(c.eng), c.unfusedMode, cell(c.unfused),
				mdRatio(ratio(c.unfused, c.eng)), pass})
		}
	}
	return head, rows, fhead, frows
}

func cellOrDash(r *row, mode string, cell func(*row) string) string {
	if mode == "" {
		return "—"
	}
	return cell(r)
}

func overPlainOrDash(c mmCompare) string {
	if c.ltMode == "" || c.plainMode == "" || mmPair(c.plainMode, ltOf) == c.ltMode {
		return "—"
	}
	return overPlain(c.lt, c.ltPlain)
}

// writeMatmulMarkdown writes the Matmul tables, if the report has Matmul
// rows.
func writeMatmulMarkdown(w io.Writer, ix *rowIndex) {
	head, rows, fhead, frows := matmulTables(ix, func(r *row) string { return mdCell(r, false) })
	if len(rows) == 0 {
		return
	}
	fmt.Fprintln(w, "\n**Matmul** (issue 21: Plan once, Run per launch; alpha 1, beta 0) beside cuBLASLt with the same")
	fmt.Fprintln(w, "epilogue and layout (tensor-core tier; its heuristic's first algorithm), times in µs. \"over plain\": the")
	fmt.Fprintln(w, "time over the plain product of the same library and run (mm, or the mode named), the epilogue's or")
	fmt.Fprintln(w, "layout's cost:")
	fmt.Fprintln(w)
	mdTable(w, head, rows)
	if len(frows) == 0 {
		return
	}
	fmt.Fprintln(w, "\n**Fused epilogue against the product and a separate pass** (mm-bias-then-relu: the Bias product,")
	fmt.Fprintln(w, "then the triad's ReLU kernel from D into another M×N buffer; the engine has no standalone GELU")
	fmt.Fprintln(w, "kernel, so for GELU the ReLU pass stands in: same bytes, less arithmetic, a lower bound;")
	fmt.Fprintln(w, "mm-then-swiglu: the plain product, then the engine's GatedForward, SwiGLU on D's 8-column blocks,")
	fmt.Fprintln(w, "into an M×N/2 buffer):")
	fmt.Fprintln(w)
	mdTable(w, fhead, frows)
}

// printMatmulTables writes the Matmul tables under the main table of
// --format table.
func printMatmulTables(w io.Writer, ix *rowIndex) {
	head, rows, fhead, frows := matmulTables(ix, func(r *row) string {
		switch {
		case r == nil:
			return "-"
		case r.Error != "":
			return "error"
		}
		return formatUS(r.MedianUS)
	})
	if len(rows) == 0 {
		return
	}
	printTitledTable(w, "Matmul beside cuBLASLt (µs; over plain: time over the same library's plain product)", head, rows)
	printTitledTable(w, "Fused epilogue against the product and a separate pass (µs)", fhead, frows)
}
