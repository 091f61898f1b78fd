package gemm

import (
	"fmt"

	"github.com/detgemm/detgemm/cudaload"
	"github.com/detgemm/detgemm/gemm/internal/entries"
	"github.com/detgemm/detgemm/kernels"
)

// The kernel families the engine loads (kernels/cuda/<family>.cu).
const (
	simtFamily  = entries.SimtFamily  // StrategyTiled
	slabsFamily = entries.SlabsFamily // StrategySplitSlab partials
	rowsFamily  = entries.RowsFamily  // StrategyRows partials
	foldFamily  = entries.FoldFamily  // the ordered fold of both
	// streamFamily is StrategyStream's (dW with a short reduction).
	streamFamily = entries.DWStreamFamily
	// rowsFusedFamily holds the one-launch rows kernels.
	rowsFusedFamily = entries.RowsFusedFamily
	// tcFamily (tc.go) is TierTensorCore's.
)

// simtSharedBytes is gemm_simt's dynamic shared memory per block of square
// tiles (two staged k-tiles plus the slab totals; gemm_simt.cu asserts the
// same number), simt64SharedBytes its narrow tiles'. The split-slab kernels
// use 33 KiB (square) or 25 KiB (narrow) of static shared memory, the fold
// kernel none; the rows kernels' is rowsSharedBytes.
const (
	simtThreads       = 256
	simtSharedBytes   = 99328
	simt64SharedBytes = 58368
	slabsThreads      = 256
	foldThreads       = 256
)

// kernelKey names a tiled (gemm_simt) entry point: layout, input, output.
type kernelKey struct {
	layout  layout
	in, out DType
}

func (k kernelKey) simtName() string {
	return fmt.Sprintf("detgemm_simt_%v_%v_%v", k.layout, k.in, k.out)
}

// simt64Name is the entry point of the same kernel with 128×64 tiles.
func (k kernelKey) simt64Name() string {
	return fmt.Sprintf("detgemm_simt64_%v_%v_%v", k.layout, k.in, k.out)
}

// slabsKey names a split-slab partials kernel; partials are f32 whatever
// the output type.
type slabsKey struct {
	layout layout
	in     DType
}

func (k slabsKey) name() string { return fmt.Sprintf("detgemm_slabs_%v_%v", k.layout, k.in) }

// name64 is the entry point of the same kernel with 128×64 tiles.
func (k slabsKey) name64() string { return fmt.Sprintf("detgemm_slabs64_%v_%v", k.layout, k.in) }

// rowsKey names a rows partials kernel: nn or nt, input type, rows per
// block.
type rowsKey struct {
	layout layout
	in     DType
	mr     int
}

func (k rowsKey) name() string { return fmt.Sprintf("detgemm_rows_%v_%v_m%d", k.layout, k.in, k.mr) }

// rowsFusedKey names a one-launch rows kernel: nn or nt, input and output
// type (it stores the folded output itself), rows per block.
type rowsFusedKey struct {
	layout  layout
	in, out DType
	mr      int
}

func (k rowsFusedKey) name() string {
	return fmt.Sprintf("detgemm_rowsf_%v_%v_%v_m%d", k.layout, k.in, k.out, k.mr)
}

// foldKey names a fold kernel: output type, and whether it accumulates
// onto the output (dW) or stores (Forward, DX).
type foldKey struct {
	out        DType
	accumulate bool
}

func (k foldKey) name() string {
	if k.accumulate {
		return fmt.Sprintf("detgemm_fold_accumulate_%v", k.out)
	}
	return fmt.Sprintf("detgemm_fold_store_%v", k.out)
}

// streamKey names a stream kernel: input type and the rows of dW a block
// owns (streamTall or streamShort).
type streamKey struct {
	in DType
	sr int64
}

func (k streamKey) name() string {
	if k.sr == streamShort {
		return fmt.Sprintf("detgemm_dwstream32_%v", k.in)
	}
	return fmt.Sprintf("detgemm_dwstream_%v", k.in)
}

// sharedBytes is the kernel's dynamic shared memory (gemm_dw_stream.cu's
// SM_BYTES): the master tile and two stages of X and dY rows.
func (k streamKey) sharedBytes() uint32 {
	if k.sr == streamShort {
		return 36864
	}
	return 57344
}

// loadModules loads every family of the bundle the engine uses
// (engineFamilies) and resolves its entry points into a table indexed by
// kernelID. On error, the modules loaded so far are returned too, for the
// caller to close.
//
// The tiled kernels may take up to lone bytes of dynamic shared memory (the
// tail launches of launch.go), at least what they need.
func loadModules(ctx *cudaload.Context, bundle *kernels.Bundle, lone uint32) ([]*cudaload.Module, functions, error) {
	fns := make(functions, len(kernelEntries))
	var mods []*cudaload.Module
	load := func(family string) (*cudaload.Module, error) {
		m, ok := bundle.Modules[family]
		if !ok {
			return nil, fmt.Errorf("gemm.New: kernel family %s missing from the build", family)
		}
		mod, err := ctx.LoadModule(m.CUBIN)
		// A driver may refuse an embedded CUBIN (a variant newer than it
		// really loads): the bundle falls back to an older variant, then
		// NVRTC (ModeAuto), or says what to do (ModeEmbedded).
		for err != nil && m.Origin == kernels.OriginEmbedded {
			if m, err = bundle.Fallback(family, err); err != nil {
				return nil, fmt.Errorf("gemm.New: loading %s: %w", family, err)
			}
			mod, err = ctx.LoadModule(m.CUBIN)
		}
		if err != nil {
			return nil, fmt.Errorf("gemm.New: loading %s: %w", family, err)
		}
		mods = append(mods, mod)
		return mod, nil
	}
	limit := tcSharedLimit(ctx.Device().MaxSharedMemoryPerBlockOptin())
	for _, family := range engineFamilies(bundle.Arch) {
		mod, err := load(family)
		if err != nil {
			return mods, fns, err
		}
		for id := range kernelEntries {
			en := kernelEntries[id]
			if en.Family != family {
				continue
			}
			shared, ok := entryShared(en, lone, limit)
			if !ok {
				continue // this GPU's blocks are too small for the tile; the planner skips it too
			}
			fn, err := mod.Function(en.Name)
			if err != nil {
				return mods, fns, fmt.Errorf("gemm.New: %w", err)
			}
			if shared > 48<<10 {
				if err := fn.SetMaxDynamicSharedMemory(int(shared)); err != nil {
					return mods, fns, fmt.Errorf("gemm.New: %s needs %d bytes of shared memory per block: %w", en.Name, shared, err)
				}
			}
			fns[id] = fn
		}
	}
	return mods, fns, nil
}

// entryShared is the most dynamic shared memory entry point en is launched
// with, and whether a GPU whose blocks may take limit bytes loads it (the
// tensor-core tiles that do not fit are skipped; the planner never picks
// them there). lone is the tiled kernels' tail launches' (launch.go).
func entryShared(en entries.Entry, lone, limit uint32) (uint32, bool) {
	k := en.Key
	l, in := layoutOf(k.Layout), dtypeOf(k.In)
	switch k.Kind {
	case "simt":
		return max(simtSharedBytes, lone), true
	case "simt64":
		return max(simt64SharedBytes, lone), true
	case "rows":
		return rowsSharedBytes(in, k.MR, rowsCN(k.MR)), true
	case "rowsf":
		return rowsFusedSharedBytes(in, k.MR, l == layoutNT), true
	case "rowst":
		return rowsTMASharedBytes(in, k.MR, k.Waves), true
	case "dwstream":
		return streamKey{in, int64(k.SR)}.sharedBytes(), true
	case "tc":
		s := tcSharedBytes(tileOf(k.Tile), l)
		return s, s <= limit
	case "tcrows":
		s := tcRowsSharedBytes(tileOf(k.Tile), l)
		return s, s <= limit
	case "tcdw":
		s := tcDWSharedBytes(tileOf(k.Tile))
		return s, s <= limit
	case "tmarows", "tmarows_one":
		return tcRowsSharedBytes(tileOf(k.Tile), l), true
	case "wg":
		return wgSharedBytes(tileOf(k.Tile)), true
	}
	return 0, true // slabs, fold: static shared memory only
}
