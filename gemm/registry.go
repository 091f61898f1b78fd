package gemm

import (
	"fmt"

	"github.com/detgemm/detgemm/cudaload"
	"github.com/detgemm/detgemm/gemm/internal/entries"
)

// kernelID names one CUDA entry point: an index into kernelEntries, 0 for
// none. The engine's function table is indexed by it.
type kernelID int32

// kernelEntries is every entry point the engine may load, from the
// descriptions in internal/entries (which also generate the .cu files'
// ENTRY lists); index 0 is a placeholder for "none".
var kernelEntries = append([]entries.Entry{{}}, entries.All()...)

// entry is the description of id.
func (id kernelID) entry() entries.Entry { return kernelEntries[id] }

// kernelIndex finds the entry point of a family's typed key. Every table
// is derived from kernelEntries, never written by hand.
var kernelIndex = buildIndex()

type indexTables struct {
	simt, simt64   map[kernelKey]kernelID
	slabs, slabs64 map[slabsKey]kernelID
	rows           map[rowsKey]kernelID
	rowsf          map[rowsFusedKey]kernelID
	rowsTMA        map[rowsTMAKey]kernelID
	fold           map[foldKey]kernelID
	stream         map[streamKey]kernelID
	// tc is every tensor-core entry point (gemm_tc, gemm_tc_rows,
	// gemm_tc_rows_tma, gemm_tc_dw_stream, gemm_wgmma, gemm_wgmma_slabs);
	// tcOne the one-slab twins of gemm_tc_rows_tma's.
	tc, tcOne map[tcKey]kernelID
}

func buildIndex() indexTables {
	x := indexTables{
		simt: map[kernelKey]kernelID{}, simt64: map[kernelKey]kernelID{},
		slabs: map[slabsKey]kernelID{}, slabs64: map[slabsKey]kernelID{},
		rows: map[rowsKey]kernelID{}, rowsf: map[rowsFusedKey]kernelID{}, rowsTMA: map[rowsTMAKey]kernelID{},
		fold: map[foldKey]kernelID{}, stream: map[streamKey]kernelID{},
		tc: map[tcKey]kernelID{}, tcOne: map[tcKey]kernelID{},
	}
	for i, en := range kernelEntries[1:] {
		id, k := kernelID(i+1), en.Key
		l, in, out := layoutOf(k.Layout), dtypeOf(k.In), dtypeOf(k.Out)
		switch k.Kind {
		case "simt":
			x.simt[kernelKey{l, in, out}] = id
		case "simt64":
			x.simt64[kernelKey{l, in, out}] = id
		case "slabs":
			x.slabs[slabsKey{l, in}] = id
		case "slabs64":
			x.slabs64[slabsKey{l, in}] = id
		case "rows":
			x.rows[rowsKey{l, in, k.MR}] = id
		case "rowsf":
			x.rowsf[rowsFusedKey{l, in, out, k.MR}] = id
		case "rowst":
			x.rowsTMA[rowsTMAKey{l, in, out, k.MR, k.Waves}] = id
		case "fold":
			x.fold[foldKey{out, k.Acc}] = id
		case "dwstream":
			x.stream[streamKey{in, int64(k.SR)}] = id
		case "tc", "tcrows", "tmarows", "tcdw", "wg":
			x.tc[tcKey{tileOf(k.Tile), l, in, out, k.Vec}] = id
		case "tmarows_one":
			x.tcOne[tcKey{tileOf(k.Tile), l, in, out, k.Vec}] = id
		default:
			panic("gemm: entry " + en.Name + " of an unknown kind " + k.Kind)
		}
	}
	return x
}

func layoutOf(s string) layout {
	switch s {
	case "nt":
		return layoutNT
	case "tn":
		return layoutTN
	}
	return layoutNN
}

func dtypeOf(s string) DType {
	for _, d := range []DType{F32, BF16, F16} {
		if d.String() == s {
			return d
		}
	}
	return 0
}

// tileOf is the tensor-core tile a description names.
func tileOf(name string) tcTile {
	for _, geoms := range []map[tcTile]string{tileNames(tcGeometries), tileNames(wgGeometries), tileNames(tcRowsGeometries), tileNames(tcDWGeometries)} {
		for t, n := range geoms {
			if n == name {
				return t
			}
		}
	}
	panic("gemm: unknown tensor-core tile " + name)
}

// tileNames is the names of a family's tiles.
func tileNames[G interface{ tileName() string }](m map[tcTile]G) map[tcTile]string {
	out := make(map[tcTile]string, len(m))
	for t, g := range m {
		out[t] = g.tileName()
	}
	return out
}

// functions is the loaded entry points, indexed by kernelID; nil where the
// engine did not load one (a family its GPU lacks, a tile too big for its
// blocks).
type functions []*cudaload.Function

// launcher enqueues the kernels of a plan on its engine, or, for Explain,
// records them (rec set) without launching, encoding or allocating: one
// launch code for both, so Explain says exactly what a call runs.
type launcher struct {
	e      *Engine
	serial bool         // launch plainly, without overlap (tests)
	rec    *Explanation // record instead of launching
}

// need reports a kernel the engine lacks before anything is prepared for
// it; validation admits only combinations that have one, so this is a bug,
// not a user error.
func (l launcher) need(p problem, id kernelID) error {
	if l.rec != nil || (id != 0 && int(id) < len(l.e.fns) && l.e.fns[id] != nil) {
		return nil
	}
	name := "(none)"
	if id != 0 {
		name = id.entry().Name
	}
	return fmt.Errorf("gemm.%s: no kernel %s for %v %v→%v", p.op, name, p.layout, p.in, p.out)
}

// launch enqueues kernel id on the engine's stream with the arguments in
// e.args, or records it; tm, tn is the block's tile of outputs (Explain's
// Tile is the first launch's). Every engine kernel waits for the kernel
// ahead of it in the stream before it touches global memory (prelude.cuh's
// dg_grid_dependency_wait), so on sm_90 and newer it is launched
// overlapped (programmatic dependent launch): the grid may be scheduled
// while that kernel's last blocks still run, and the launch latency and
// the kernel's set-up hide behind them. Stream order and every bit are
// unchanged.
func (l launcher) launch(p problem, id kernelID, grid cudaload.Dim3, threads, shared uint32, tm, tn int64) error {
	if l.rec != nil {
		if len(l.rec.Launches) == 0 {
			l.rec.Tile = tileName(tm, tn)
		}
		en := id.entry()
		l.rec.Launches = append(l.rec.Launches, Launch{en.Name, en.Family, grid, threads, shared})
		return nil
	}
	if err := l.need(p, id); err != nil {
		return err
	}
	e := l.e
	cfg := cudaload.LaunchConfig{Grid: grid, Block: cudaload.Dim3{X: threads, Y: 1, Z: 1}, SharedMemBytes: shared, Stream: e.stream,
		Overlap: !l.serial && e.arch.Major >= 9}
	if err := e.fns[id].Launch(cfg, &e.args); err != nil {
		return fmt.Errorf("gemm.%s: %w", p.op, err)
	}
	return nil
}

// variant is one registered way to compute a call: a kernel family in one
// configuration, and the filter that makes the planner take it. Every
// variant computes the plan's bits; the contract suite
// (contract_gpu_test.go) proves it for each variant usable on its GPU, on
// every shape of its list the variant fits, so a new variant is verified
// by adding its line here.
type variant struct {
	name string
	kind string // the entries Kind of the plan's first launch
	tc   bool   // the tensor-core tier (else the IEEE tiers)
	f    filter
	// fits, where set, narrows the plans that are this variant (a tiled grid
	// with a split tail or a cut); nil: any plan whose first launch is kind.
	fits func(plan) bool
	// on, where set, says on which engines the variant can occur at all
	// beyond having its kernels (the tail cut needs a block to be able to
	// hold an SM alone); nil: wherever its kernels are loaded.
	on func(*Engine) bool
}

// variants is every registered variant.
var variants = []variant{
	{name: "tiled", kind: "simt", f: filter{strategy: StrategyTiled, width: squareWidth}},
	{name: "tiled-narrow", kind: "simt64", f: filter{strategy: StrategyTiled, width: narrowWidth}},
	{name: "tiled-cut", kind: "simt", f: filter{strategy: StrategyTiled, width: squareWidth, tailSMs: 2},
		fits: func(pl plan) bool { return pl.cut != cutNone }, on: func(e *Engine) bool { return e.loneShared > simtSharedBytes }},
	{name: "tiled-narrow-cut", kind: "simt64", f: filter{strategy: StrategyTiled, width: narrowWidth, tailSMs: 2},
		fits: func(pl plan) bool { return pl.cut != cutNone }, on: func(e *Engine) bool { return e.loneShared > simt64SharedBytes }},
	{name: "tiled-split-tail", kind: "simt", f: filter{strategy: StrategyTiled, splitTail: true, tailSMs: 2},
		fits: func(pl plan) bool { return pl.tailRow > 0 }},
	{name: "split-slab", kind: "slabs", f: filter{strategy: StrategySplitSlab, width: squareWidth}},
	{name: "split-slab-G1", kind: "slabs", f: filter{strategy: StrategySplitSlab, width: squareWidth, perBlock: 1}},
	{name: "split-slab-G3", kind: "slabs", f: filter{strategy: StrategySplitSlab, width: squareWidth, perBlock: 3}},
	{name: "split-slab-narrow", kind: "slabs64", f: filter{strategy: StrategySplitSlab, width: narrowWidth}},
	{name: "split-slab-narrow-G1", kind: "slabs64", f: filter{strategy: StrategySplitSlab, width: narrowWidth, perBlock: 1}},
	{name: "rows-two-launch", kind: "rows", f: filter{strategy: StrategyRows, rowsPath: rowsPathTwo}},
	{name: "rows-one-launch", kind: "rowsf", f: filter{strategy: StrategyRows, rowsPath: rowsPathOne}},
	{name: "rows-tma", kind: "rowst", f: filter{strategy: StrategyRows, rowsPath: rowsPathTMA}},
	{name: "stream-tall", kind: "dwstream", f: filter{strategy: StrategyStream, streamRows: streamTall}},
	{name: "stream-short", kind: "dwstream", f: filter{strategy: StrategyStream, streamRows: streamShort}},

	{name: "tc256-vec", kind: "tc", tc: true, f: filter{tc: tcForce{tcTile256, tcPathVec}}},
	{name: "tc128-vec", kind: "tc", tc: true, f: filter{tc: tcForce{tcTile128, tcPathVec}}},
	{name: "tc128-any", kind: "tc", tc: true, f: filter{tc: tcForce{tcTile128, tcPathAny}}},
	{name: "tc64-vec", kind: "tc", tc: true, f: filter{tc: tcForce{tcTile64, tcPathVec}}},
	{name: "tc64-any", kind: "tc", tc: true, f: filter{tc: tcForce{tcTile64, tcPathAny}}},
	{name: "tc-planes", kind: "tc", tc: true, f: filter{tc: tcForce{tcTile64, tcPathVec}},
		fits: func(pl plan) bool { return pl.tc.planes }},
	{name: "wg128x256", kind: "wg", tc: true, f: filter{tc: tcForce{tcTileWG128x256, tcPathVec}}},
	{name: "wg128x192", kind: "wg", tc: true, f: filter{tc: tcForce{tcTileWG128x192, tcPathVec}}},
	{name: "wg128x128", kind: "wg", tc: true, f: filter{tc: tcForce{tcTileWG128x128, tcPathVec}}},
	{name: "wg192x192", kind: "wg", tc: true, f: filter{tc: tcForce{tcTileWG192x192, tcPathVec}}},
	{name: "wg128x128s", kind: "wg", tc: true, f: filter{tc: tcForce{tcTileWG128x128S, tcPathVec}}},
	{name: "wg128x192s", kind: "wg", tc: true, f: filter{tc: tcForce{tcTileWG128x192S, tcPathVec}}},
	{name: "wg128x256s", kind: "wg", tc: true, f: filter{tc: tcForce{tcTileWG128x256S, tcPathVec}}},
	{name: "wg-runsum", kind: "wg", tc: true, f: filter{tc: tcForce{tcTileWG128x128S, tcPathVec}},
		fits: func(pl plan) bool { return pl.tc.runsum }},
	{name: "tcrows8", kind: "tcrows", tc: true, f: filter{tc: tcForce{tcTileRows8, tcPathVec}}},
	{name: "tcrows16", kind: "tcrows", tc: true, f: filter{tc: tcForce{tcTileRows16, tcPathVec}}},
	{name: "tmarows8", kind: "tmarows", tc: true, f: filter{tc: tcForce{tcTileRowsTMA8, tcPathVec}}},
	{name: "tmarows16", kind: "tmarows", tc: true, f: filter{tc: tcForce{tcTileRowsTMA16, tcPathVec}}},
	{name: "tmarows8-one", kind: "tmarows_one", tc: true, f: filter{tc: tcForce{tcTileRowsTMA8, tcPathVec}}},
	{name: "tmarows16-one", kind: "tmarows_one", tc: true, f: filter{tc: tcForce{tcTileRowsTMA16, tcPathVec}}},
	{name: "tcdw64-vec", kind: "tcdw", tc: true, f: filter{tc: tcForce{tcTileDW64, tcPathVec}}},
	{name: "tcdw64-any", kind: "tcdw", tc: true, f: filter{tc: tcForce{tcTileDW64, tcPathAny}}},
}
