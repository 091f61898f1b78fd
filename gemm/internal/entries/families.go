package entries

import (
	"fmt"
	"slices"
	"strings"
)

// The kernel families (kernels/cuda/<name>.cu).
const (
	SimtFamily      = "gemm_simt"
	SlabsFamily     = "gemm_slabs"
	RowsFamily      = "gemm_rows"
	FoldFamily      = "gemm_fold"
	DWStreamFamily  = "gemm_dw_stream"
	RowsTMAFamily   = "gemm_rows_tma"
	TCFamily        = "gemm_tc"
	TCRowsFamily    = "gemm_tc_rows"
	TCRowsTMAFamily = "gemm_tc_rows_tma"
	TCDWFamily      = "gemm_tc_dw_stream"
	WGFamily        = "gemm_wgmma"
	WGSlabsFamily   = "gemm_wgmma_slabs"
	// RowsFusedFamily holds the one-launch rows kernels (detgemm_rowsf_*).
	RowsFusedFamily = "gemm_rows_fused"
	// MatmulFamily holds Matmul's elementwise kernels: the start values,
	// the epilogue over slab planes and the bias gradients.
	MatmulFamily = "gemm_matmul"
	// WGMatmulFamily holds Matmul's wgmma kernels with the fused epilogue.
	WGMatmulFamily = "gemm_wgmma_matmul"
	// GatedFamily holds the gated activations' elementwise kernels.
	GatedFamily = "gated"
)

// The layouts and the (input, output) pairs of the IEEE tiers: Forward and
// dX write the input type or f32, dW writes its f32 master.
var (
	layouts   = []string{"nn", "nt", "tn"}
	fwdLayout = []string{"nn", "nt"}
	ieeeIn    = []string{"f32", "bf16", "f16"}
	halfIn    = []string{"bf16", "f16"}
)

func ieeeIO(l string) [][2]string {
	if l == "tn" {
		return [][2]string{{"f32", "f32"}, {"bf16", "f32"}, {"f16", "f32"}}
	}
	return [][2]string{{"f32", "f32"}, {"bf16", "bf16"}, {"bf16", "f32"}, {"f16", "f16"}, {"f16", "f32"}}
}

// halfIO is the (input, output) pairs of the 16-bit kernels: the input
// type or f32, f32 only for dW (tn).
func halfIO(l string) [][2]string {
	var out [][2]string
	for _, in := range halfIn {
		if l != "tn" {
			out = append(out, [2]string{in, in})
		}
		out = append(out, [2]string{in, "f32"})
	}
	return out
}

// up is a dtype as the CUDA sources spell it in namespace ns.
func up(ns, d string) string {
	switch d {
	case "f32":
		return ns + "::F32"
	case "bf16":
		return ns + "::BF16"
	}
	return ns + "::F16"
}

func boolArg(b bool) string { return fmt.Sprint(b) }

// arc and bjc are the kernels' A_RC (A read row by row: every layout but
// dW's) and B_JC (B read along its columns: every layout but dX's).
func arc(l string) bool { return l != "tn" }
func bjc(l string) bool { return l != "nt" }

// tcInit is a tensor-core kernel's accumulator start: the bias (Forward),
// zero (dX) or the master's old value (dW).
func tcInit(ns, l string) string {
	switch l {
	case "nn":
		return ns + "::INIT_BIAS"
	case "nt":
		return ns + "::INIT_ZERO"
	}
	return ns + "::INIT_OLD"
}

// simt: gemm_simt's tiled kernels, 128×128 and 128×64 tiles × layout ×
// (input, output).
func simt() (out []Entry) {
	for _, w := range []struct{ kind, macro string }{{"simt", "DETGEMM_SIMT_ENTRY"}, {"simt64", "DETGEMM_SIMT64_ENTRY"}} {
		for _, l := range layouts {
			fold := "simt::FOLD_STORE"
			if l == "tn" {
				fold = "simt::FOLD_ACCUMULATE"
			}
			for _, io := range ieeeIO(l) {
				out = append(out, Entry{Key: Key{Kind: w.kind, Layout: l, In: io[0], Out: io[1]},
					Family: SimtFamily, Header: HeaderFor(SimtFamily), Macro: w.macro,
					Name: fmt.Sprintf("detgemm_%s_%s_%s_%s", w.kind, l, io[0], io[1]),
					Args: []string{up("dgtile", io[0]), up("dgtile", io[1]), boolArg(arc(l)), boolArg(bjc(l)), fold}})
			}
		}
	}
	return out
}

// slabs: gemm_slabs's split-slab partials (f32 whatever the output), 128×128
// and 128×64 tiles × layout × input.
func slabs() (out []Entry) {
	for _, w := range []struct{ kind, macro string }{{"slabs", "DETGEMM_SLABS_ENTRY"}, {"slabs64", "DETGEMM_SLABS64_ENTRY"}} {
		for _, l := range layouts {
			for _, in := range ieeeIn {
				out = append(out, Entry{Key: Key{Kind: w.kind, Layout: l, In: in},
					Family: SlabsFamily, Header: HeaderFor(SlabsFamily), Macro: w.macro,
					Name: fmt.Sprintf("detgemm_%s_%s_%s", w.kind, l, in),
					Args: []string{up("dgtile", in), boolArg(arc(l)), boolArg(bjc(l))}})
			}
		}
	}
	// Matmul's TT layout (A and B both transposed), 128×128 tiles only:
	// a kind of its own, since the triad's tables know three layouts.
	for _, in := range ieeeIn {
		out = append(out, Entry{Key: Key{Kind: "slabstt", Layout: "tt", In: in},
			Family: SlabsFamily, Header: HeaderFor(SlabsFamily), Macro: "DETGEMM_SLABS_ENTRY",
			Name: fmt.Sprintf("detgemm_slabs_tt_%s", in),
			Args: []string{up("dgtile", in), "false", "false"}})
	}
	return out
}

// rows: gemm_rows's partials for few rows: layout (Forward, dX) × input ×
// rows a block, one column a thread.
func rows() (out []Entry) {
	for _, l := range fwdLayout {
		for _, in := range ieeeIn {
			for _, mr := range []int{4, 16, 32} {
				out = append(out, Entry{Key: Key{Kind: "rows", Layout: l, In: in, MR: mr},
					Family: RowsFamily, Header: HeaderFor(RowsFamily), Macro: "DETGEMM_ROWS_ENTRY",
					Name: fmt.Sprintf("detgemm_rows_%s_%s_m%d", l, in, mr),
					Args: []string{up("rowsk", in), fmt.Sprint(mr), "1", boolArg(l == "nt")}})
			}
		}
	}
	return out
}

// rowsFused: the one-launch rows kernels (partials and fold in one
// launch): layout × (input, output) × rows a block.
func rowsFused() (out []Entry) {
	for _, l := range fwdLayout {
		for _, io := range ieeeIO(l) {
			for _, mr := range []int{4, 16, 32} {
				out = append(out, Entry{Key: Key{Kind: "rowsf", Layout: l, In: io[0], Out: io[1], MR: mr},
					Family: RowsFusedFamily, Header: HeaderFor("gemm_rows_fused"), Macro: "DETGEMM_ROWSF_ENTRY",
					Name: fmt.Sprintf("detgemm_rowsf_%s_%s_%s_m%d", l, io[0], io[1], mr),
					Args: []string{up("rowsk", io[0]), up("rowsk", io[1]), fmt.Sprint(mr), boolArg(l == "nt")}})
			}
		}
	}
	return out
}

// rowsTMA: gemm_rows_tma (sm_90a): layout × rows a block (1, 4, 16) ×
// (input, output), and the many-wave ring of one row for 16-bit inputs.
func rowsTMA() (out []Entry) {
	add := func(l string, mr int, io [2]string, waves bool) {
		e := Entry{Key: Key{Kind: "rowst", Layout: l, In: io[0], Out: io[1], MR: mr, Waves: waves},
			Family: RowsTMAFamily, Header: HeaderFor(RowsTMAFamily), Macro: "DETGEMM_ROWST_ENTRY",
			Name: fmt.Sprintf("detgemm_rowst_%s_%s_%s_m%d", l, io[0], io[1], mr),
			Args: []string{up("rowst", io[0]), up("rowst", io[1]), fmt.Sprint(mr), boolArg(l == "nt")}}
		if waves {
			e.Macro, e.Name, e.Args = "DETGEMM_ROWSTW_ENTRY", e.Name+"w", append(e.Args, "true")
		}
		out = append(out, e)
	}
	for _, mrs := range [][]int{{1, 4}, {16}} {
		for _, l := range fwdLayout {
			for _, mr := range mrs {
				for _, io := range ieeeIO(l) {
					add(l, mr, io, false)
				}
			}
		}
	}
	for _, l := range fwdLayout {
		for _, io := range halfIO(l) {
			add(l, 1, io, true)
		}
	}
	return out
}

// fold: gemm_fold, storing each output type, or accumulating onto dW's f32.
func fold() (out []Entry) {
	for _, k := range []struct {
		out string
		acc bool
	}{{"f32", false}, {"bf16", false}, {"f16", false}, {"f32", true}} {
		verb := "store"
		if k.acc {
			verb = "accumulate"
		}
		out = append(out, Entry{Key: Key{Kind: "fold", Out: k.out, Acc: k.acc},
			Family: FoldFamily, Header: HeaderFor(FoldFamily), Macro: "DETGEMM_FOLD_ENTRY",
			Name: fmt.Sprintf("detgemm_fold_%s_%s", verb, k.out),
			Args: []string{up("fold", k.out), boolArg(k.acc)}})
	}
	return out
}

// dwStream: gemm_dw_stream, 64-row blocks (8 rows a thread, 3 blocks an
// SM) and 32-row ones (4 rows, 5 blocks) × input.
func dwStream() (out []Entry) {
	for _, s := range []struct {
		sr           int
		prefix       string
		rows, blocks string
	}{{64, "detgemm_dwstream", "8", "3"}, {32, "detgemm_dwstream32", "4", "5"}} {
		for _, in := range ieeeIn {
			out = append(out, Entry{Key: Key{Kind: "dwstream", Layout: "tn", In: in, Out: "f32", SR: s.sr},
				Family: DWStreamFamily, Header: HeaderFor(DWStreamFamily), Macro: "DETGEMM_DWSTREAM_ENTRY",
				Name: fmt.Sprintf("%s_%s", s.prefix, in),
				Args: []string{up("dws", in), s.rows, s.blocks}})
		}
	}
	return out
}

// tcName is the tensor-core kernels' entry name.
func tcName(tile, l string, io [2]string, vec bool) string {
	path := "any"
	if vec {
		path = "vec"
	}
	return fmt.Sprintf("detgemm_%s_%s_%s_%s_%s", tile, l, io[0], io[1], path)
}

// tc: gemm_tc's mma.sync tiles × layout × (input, output) × load path
// (128×256 has the 16-byte path only).
func tc() (out []Entry) {
	for _, t := range []struct {
		tile, arg string
		any       bool
	}{{"tc256", "T256", false}, {"tc128", "T128", true}, {"tc64", "T64", true}} {
		for _, l := range layouts {
			for _, io := range halfIO(l) {
				for _, vec := range []bool{true, false} {
					if !vec && !t.any {
						continue
					}
					out = append(out, Entry{Key: Key{Kind: "tc", Layout: l, In: io[0], Out: io[1], Tile: t.tile, Vec: vec},
						Family: TCFamily, Header: HeaderFor(TCFamily), Macro: "DETGEMM_TC_ENTRY",
						Name: tcName(t.tile, l, io, vec),
						Args: []string{t.arg, up("tc", io[0]), up("tc", io[1]), boolArg(arc(l)), boolArg(bjc(l)), tcInit("tc", l), boolArg(vec)}})
				}
			}
		}
	}
	// Matmul's product onto f32 planes (kind "tcacc"): every chain starts
	// at the plane's value, as dW's does at its master. The tn ones are
	// dW's own entries above; the other layouts get their own, on the
	// tiles that cut slabs in any layout (tc128 does not with A
	// transposed).
	for _, t := range []struct {
		tile, arg string
		any       bool
	}{{"tc256", "T256", false}, {"tc64", "T64", true}} {
		for _, l := range []string{"nn", "nt", "tt"} {
			for _, in := range halfIn {
				for _, vec := range []bool{true, false} {
					if !vec && !t.any {
						continue
					}
					io := [2]string{in, "f32"}
					out = append(out, Entry{Key: Key{Kind: "tcacc", Layout: l, In: in, Out: "f32", Tile: t.tile, Vec: vec},
						Family: TCFamily, Header: HeaderFor(TCFamily), Macro: "DETGEMM_TC_ENTRY",
						Name: tcName(t.tile+"acc", l, io, vec),
						Args: []string{t.arg, up("tc", in), "tc::F32", boolArg(l[0] == 'n'), boolArg(l[1] == 'n'), "tc::INIT_OLD", boolArg(vec)}})
				}
			}
		}
	}
	return out
}

// matmul: gemm_matmul's elementwise kernels, one per type each: the
// tensor-core start values (C's type), the epilogue over the slab planes
// (D's type) and the bias-gradient sums (the summed matrix's type).
func matmul() (out []Entry) {
	for _, k := range []struct{ kind, macro, name string }{
		{"mmstart", "DETGEMM_MM_START_ENTRY", "start"},
		{"mmepi", "DETGEMM_MM_EPILOGUE_ENTRY", "epilogue"},
		{"mmbgrad", "DETGEMM_MM_BGRAD_ENTRY", "bgrad"},
	} {
		for _, d := range ieeeIn {
			out = append(out, Entry{Key: Key{Kind: k.kind, Out: d},
				Family: MatmulFamily, Header: HeaderFor(MatmulFamily), Macro: k.macro,
				Name: fmt.Sprintf("detgemm_mm_%s_%s", k.name, d),
				Args: []string{up("epi", d)}})
		}
	}
	out = append(out, Entry{Key: Key{Kind: "mmbfold"}, Family: MatmulFamily, Header: HeaderFor(MatmulFamily),
		Macro: "DETGEMM_MM_BGRAD_FOLD_ENTRY", Name: "detgemm_mm_bgrad_fold"})
	return out
}

// tcRows: gemm_tc_rows, 8 and 16 rows a block × layout (Forward, dX) ×
// (input, output), 16-byte path.
func tcRows() (out []Entry) {
	for _, t := range [][2]string{{"tcrows8", "R8"}, {"tcrows16", "R16"}} {
		for _, l := range fwdLayout {
			for _, io := range halfIO(l) {
				out = append(out, Entry{Key: Key{Kind: "tcrows", Layout: l, In: io[0], Out: io[1], Tile: t[0], Vec: true},
					Family: TCRowsFamily, Header: HeaderFor(TCRowsFamily), Macro: "DETGEMM_TCROWS_ENTRY",
					Name: tcName(t[0], l, io, true),
					Args: []string{t[1], up("tc", io[0]), up("tc", io[1]), boolArg(l == "nn"), tcInit("tc", l)}})
			}
		}
	}
	return out
}

// tcRowsTMA: gemm_tc_rows_tma (sm_90a), as tcRows; each macro call also
// defines the entry's one-slab twin, NAME_one (Kind "tmarows_one", no
// macro call of its own).
func tcRowsTMA() (out []Entry) {
	for _, t := range [][2]string{{"tmarows8", "T8"}, {"tmarows16", "T16"}} {
		for _, l := range fwdLayout {
			for _, io := range halfIO(l) {
				e := Entry{Key: Key{Kind: "tmarows", Layout: l, In: io[0], Out: io[1], Tile: t[0], Vec: true},
					Family: TCRowsTMAFamily, Header: HeaderFor(TCRowsTMAFamily), Macro: "DETGEMM_TMAROWS_ENTRY",
					Name: tcName(t[0], l, io, true),
					Args: []string{t[1], up("tc", io[0]), up("tc", io[1]), boolArg(l == "nn"), tcInit("tc", l)}}
				one := e
				one.Kind, one.Macro, one.Name, one.Args = "tmarows_one", "", e.Name+"_one", nil
				out = append(out, e, one)
			}
		}
	}
	return out
}

// tcDW: gemm_tc_dw_stream, 64×128 tiles of dW × input × load path.
func tcDW() (out []Entry) {
	for _, in := range halfIn {
		for _, vec := range []bool{true, false} {
			io := [2]string{in, "f32"}
			out = append(out, Entry{Key: Key{Kind: "tcdw", Layout: "tn", In: in, Out: "f32", Tile: "tcdw64", Vec: vec},
				Family: TCDWFamily, Header: HeaderFor(TCDWFamily), Macro: "DETGEMM_TCDW_ENTRY",
				Name: tcName("tcdw64", "tn", io, vec),
				Args: []string{"S64", up("tc", in), boolArg(vec)}})
		}
	}
	return out
}

// wgTile is a wgmma tile's entry name, its CUDA type and the layouts it
// has entries for (nil: all three).
type wgTile struct {
	name, typ string
	layouts   []string
}

// wgEntries is the entries of one family's wgmma tiles.
func wgEntries(family string, tiles []wgTile, f32Only bool) (out []Entry) {
	for _, wt := range tiles {
		t, ls := [2]string{wt.name, wt.typ}, wt.layouts
		if ls == nil {
			ls = layouts
		}
		for _, l := range ls {
			for _, io := range halfIO(l) {
				if f32Only && io[1] != "f32" {
					continue
				}
				out = append(out, Entry{Key: Key{Kind: "wg", Layout: l, In: io[0], Out: io[1], Tile: t[0], Vec: true},
					Family: family, Header: HeaderFor(family), Macro: "DETGEMM_WG_ENTRY",
					Name: fmt.Sprintf("detgemm_%s_%s_%s_%s", t[0], l, io[0], io[1]),
					Args: []string{t[1], up("wg", io[0]), up("wg", io[1]), boolArg(arc(l)), boolArg(bjc(l)), tcInit("wg", l)}})
			}
		}
	}
	return out
}

// wgmma: gemm_wgmma (sm_90a), the one-slab tiles × layout × (input, output).
func wgmma() []Entry {
	// 128×96 reads B along the reduction only (64-column boxes cannot
	// make 96): dX's layout.
	return wgEntries(WGFamily, []wgTile{{"wg128x256", "T128x256", nil}, {"wg128x192", "T128x192", nil},
		{"wg128x128", "T128x128", nil}, {"wg192x192", "T192x192", nil},
		{"wg128x96", "T128x96", []string{"nt"}}, {"wg128x64", "T128x64", nil}}, false)
}

// wgmmaSlabs: gemm_wgmma_slabs (sm_90a), the slab variants, f32 out only,
// and the register running-sum variant 128×192 (any output; nn and nt:
// Forward and dX, the cuts that keep running sums).
func wgmmaSlabs() []Entry {
	return append(wgEntries(WGSlabsFamily, []wgTile{{"wg128x128s", "T128x128S", nil}, {"wg128x192s", "T128x192S", nil}, {"wg128x256s", "T128x256S", nil}}, true),
		wgEntries(WGSlabsFamily, []wgTile{{"wg128x192r", "T128x192R", []string{"nn", "nt"}}}, false)...)
}

// MatmulActs are the activations of Matmul's fused kernels, in the order
// of epilogue.cuh's ACT codes (gemm's mmAct constants).
var MatmulActs = []string{"none", "relu", "gelu", "drelu", "dgelu"}

// MatmulGates are the gated activations of Matmul's fused kernels in the
// order of their codes (1 + index: activation.cuh's and ref.Gate's); the
// kernels' Act is the name (forward) or "d" + the name (backward).
var MatmulGates = []string{"glu", "reglu", "swiglu", "geglu"}

// The activation codes of the fused kernels' gated epilogues: forward gate
// g at ActGate + g, backward at ActDGate + g (epilogue.cuh's ACT_GATE and
// ACT_DGATE).
const (
	ActGate  = 8
	ActDGate = 16
)

// ActCode is the fused kernels' activation code of act (a MatmulActs or
// gated name), or -1.
func ActCode(act string) int {
	if i := slices.Index(MatmulActs, act); i >= 0 {
		return i
	}
	if i := slices.Index(MatmulGates, act); i >= 0 {
		return ActGate + 1 + i
	}
	if d, ok := strings.CutPrefix(act, "d"); ok {
		if i := slices.Index(MatmulGates, d); i >= 0 {
			return ActDGate + 1 + i
		}
	}
	return -1
}

// wgmmaMatmul: gemm_wgmma_matmul (sm_90a), Matmul's fused tiles × the
// activations × the four layouts × the 16-bit types: 128×256, 128×192
// for grids that 128×256 tiles would leave a short last round (2048×3072
// outputs: 192 tiles of 128×256 on 132 SMs, 256 of 128×192), and the
// ping-pong 128×128 (wgp's, in clusters of two), whose warpgroups take
// tiles in turn so that one's epilogue runs under the other's steps; the
// gated epilogues on 128×256 and the ping-pong tile.
func wgmmaMatmul() (out []Entry) {
	// One kernel per activation, each holding only its own code (a kernel
	// with every activation behind a run-time switch, inlined at every
	// accumulator, was too large for the instruction caches). f32 outputs
	// take the general path.
	for _, t := range [][3]string{{"wg128x256", "T128x256", "DETGEMM_WGMM_ENTRY"}, {"wg128x192", "T128x192", "DETGEMM_WGMM_ENTRY"},
		{"wg128x128p", "TP128x128", "DETGEMM_WGMP_ENTRY"}} {
		for _, act := range MatmulActs {
			for _, l := range []string{"nn", "nt", "tn", "tt"} {
				for _, io := range [][2]string{{"bf16", "bf16"}, {"f16", "f16"}} {
					out = append(out, Entry{Key: Key{Kind: "wgmm", Layout: l, In: io[0], Out: io[1], Tile: t[0], Vec: true, Act: act},
						Family: WGMatmulFamily, Header: HeaderFor(WGMatmulFamily), Macro: t[2],
						Name: fmt.Sprintf("detgemm_wgmm%s_%s_%s_%s_%s", t[0][2:], act, l, io[0], io[1]),
						Args: []string{t[1], up("wg", io[0]), up("wg", io[1]), boolArg(l[0] == 'n'), boolArg(l[1] == 'n'), "epi::ACT_" + strings.ToUpper(act)}})
				}
			}
		}
		// The gated epilogues: NN and NT (the projections of a gated MLP
		// and the products that flow back into them; the other layouts
		// take the general path, same bits), on 128×256 (gatedFusedMinRounds'
		// grids).
		if t[0] == "wg128x192" {
			continue
		}
		for _, g := range MatmulGates {
			for _, act := range []string{g, "d" + g} {
				for _, l := range []string{"nn", "nt"} {
					for _, io := range [][2]string{{"bf16", "bf16"}, {"f16", "f16"}} {
						out = append(out, Entry{Key: Key{Kind: "wgmm", Layout: l, In: io[0], Out: io[1], Tile: t[0], Vec: true, Act: act},
							Family: WGMatmulFamily, Header: HeaderFor(WGMatmulFamily), Macro: t[2],
							Name: fmt.Sprintf("detgemm_wgmm%s_%s_%s_%s_%s", t[0][2:], act, l, io[0], io[1]),
							Args: []string{t[1], up("wg", io[0]), up("wg", io[1]), boolArg(l[0] == 'n'), boolArg(l[1] == 'n'), fmt.Sprint(ActCode(act))}})
					}
				}
			}
		}
	}
	return out
}

// gated: the gated activations' elementwise kernels (gated.cu). Forward:
// (h, out) of one type, or an f32 pre-activation (Matmul's plane) to a
// 16-bit output. Backward: dy of the output's type (kind "gatedbwd"), or
// f32 (kind "gatedbwdf": Matmul's plane) with a 16-bit h and output. Each
// macro call also defines the twin NAME_v4 for 4-aligned operands (Vec set, no
// macro call of its own).
func gated() (out []Entry) {
	twin := func(e Entry) []Entry {
		v := e
		v.Vec, v.Macro, v.Name, v.Args = true, "", e.Name+"_v4", nil
		return []Entry{e, v}
	}
	for _, io := range [][2]string{{"f32", "f32"}, {"bf16", "bf16"}, {"f16", "f16"}, {"f32", "bf16"}, {"f32", "f16"}} {
		out = append(out, twin(Entry{Key: Key{Kind: "gatedfwd", In: io[0], Out: io[1]},
			Family: GatedFamily, Header: HeaderFor(GatedFamily), Macro: "DETGEMM_GATED_FWD_ENTRY",
			Name: fmt.Sprintf("detgemm_gated_fwd_%s_%s", io[0], io[1]),
			Args: []string{up("epi", io[0]), up("epi", io[1])}})...)
	}
	// GeGLU's forward into bf16 has a vector kernel of its own (the gate
	// compiled in, fast16.cuh's rounding test): in the shared kernel its
	// registers cost the other gates a block an SM.
	for _, h := range []string{"bf16", "f32"} {
		out = append(out, Entry{Key: Key{Kind: "gatedfwdgeglu", In: h, Out: "bf16", Vec: true},
			Family: GatedFamily, Header: HeaderFor(GatedFamily), Macro: "DETGEMM_GATED_GEGLU_FWD_ENTRY",
			Name: fmt.Sprintf("detgemm_gated_geglu_fwd_%s_bf16_v4", h),
			Args: []string{up("epi", h), "epi::BF16"}})
	}
	for _, d := range ieeeIn {
		out = append(out, twin(Entry{Key: Key{Kind: "gatedbwd", In: d, Out: d},
			Family: GatedFamily, Header: HeaderFor(GatedFamily), Macro: "DETGEMM_GATED_BWD_ENTRY",
			Name: fmt.Sprintf("detgemm_gated_bwd_%s_%s", d, d),
			Args: []string{up("epi", d), up("epi", d), up("epi", d)}})...)
	}
	for _, d := range halfIn {
		out = append(out, twin(Entry{Key: Key{Kind: "gatedbwdf", In: d, Out: d},
			Family: GatedFamily, Header: HeaderFor(GatedFamily), Macro: "DETGEMM_GATED_BWD_ENTRY",
			Name: fmt.Sprintf("detgemm_gated_bwd_%s_f32dy", d),
			Args: []string{up("epi", d), "epi::F32", up("epi", d)}})...)
	}
	return out
}
