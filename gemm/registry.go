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
