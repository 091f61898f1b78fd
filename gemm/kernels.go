package gemm

import (
	"fmt"

	"github.com/detgemm/detgemm/cudaload"
	"github.com/detgemm/detgemm/kernels"
)

// The kernel families the engine loads (kernels/cuda/<family>.cu).
const (
	simtFamily  = "gemm_simt"  // StrategyTiled
	slabsFamily = "gemm_slabs" // StrategySplitSlab partials
	rowsFamily  = "gemm_rows"  // StrategyRows partials
	foldFamily  = "gemm_fold"  // the ordered fold of both
	// streamFamily is StrategyStream's (dW with a short reduction).
	streamFamily = "gemm_dw_stream"
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

// simtKernels is every SIMT entry point.
var simtKernels = []kernelKey{
	{layoutNN, F32, F32}, {layoutNN, BF16, BF16}, {layoutNN, BF16, F32}, {layoutNN, F16, F16}, {layoutNN, F16, F32},
	{layoutNT, F32, F32}, {layoutNT, BF16, BF16}, {layoutNT, BF16, F32}, {layoutNT, F16, F16}, {layoutNT, F16, F32},
	{layoutTN, F32, F32}, {layoutTN, BF16, F32}, {layoutTN, F16, F32},
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

// streamKernels is every stream entry point.
var streamKernels = []streamKey{
	{F32, streamTall}, {BF16, streamTall}, {F16, streamTall},
	{F32, streamShort}, {BF16, streamShort}, {F16, streamShort},
}

// The entry points of the partial-writing families, listed so tests can
// check them against the CUDA sources.
var (
	slabsKernels = func() (out []slabsKey) {
		for _, l := range []layout{layoutNN, layoutNT, layoutTN} {
			for _, in := range []DType{F32, BF16, F16} {
				out = append(out, slabsKey{l, in})
			}
		}
		return out
	}()
	rowsKernels = func() (out []rowsKey) {
		for _, l := range []layout{layoutNN, layoutNT} {
			for _, in := range []DType{F32, BF16, F16} {
				for _, mr := range []int{4, 16, 32} {
					out = append(out, rowsKey{l, in, mr})
				}
			}
		}
		return out
	}()
	rowsFusedKernels = func() (out []rowsFusedKey) {
		for _, l := range []layout{layoutNN, layoutNT} {
			for _, io := range [][2]DType{{F32, F32}, {BF16, BF16}, {BF16, F32}, {F16, F16}, {F16, F32}} {
				for _, mr := range []int{4, 16, 32} {
					out = append(out, rowsFusedKey{l, io[0], io[1], mr})
				}
			}
		}
		return out
	}()
	foldKernels = []foldKey{{F32, false}, {BF16, false}, {F16, false}, {F32, true}}
)

// functions is every kernel the engine launches, resolved once at New.
type functions struct {
	simt    map[kernelKey]*cudaload.Function
	simt64  map[kernelKey]*cudaload.Function // 128×64 tiles
	slabs   map[slabsKey]*cudaload.Function
	slabs64 map[slabsKey]*cudaload.Function // 128×64 tiles
	rows    map[rowsKey]*cudaload.Function
	rowsf   map[rowsFusedKey]*cudaload.Function
	rowsTMA map[rowsTMAKey]*cudaload.Function // sm_90a only
	fold    map[foldKey]*cudaload.Function
	stream  map[streamKey]*cudaload.Function
	tc      map[tcKey]*cudaload.Function
	// tcRowsOne is gemm_tc_rows_tma's one-slab twins (name + "_one"),
	// built without the slab fold (sm_90a only).
	tcRowsOne map[tcKey]*cudaload.Function
}

// loadModules loads every family of the bundle the engine uses and
// resolves its entry points. On error, the modules loaded so far are
// returned too, for the caller to close.
//
// The tiled kernels may take up to lone bytes of dynamic shared memory (the
// tail launches of launch.go), at least what they need.
func loadModules(ctx *cudaload.Context, bundle *kernels.Bundle, lone uint32) ([]*cudaload.Module, functions, error) {
	fns := functions{
		simt:    map[kernelKey]*cudaload.Function{},
		simt64:  map[kernelKey]*cudaload.Function{},
		slabs:   map[slabsKey]*cudaload.Function{},
		slabs64: map[slabsKey]*cudaload.Function{},
		rows:    map[rowsKey]*cudaload.Function{},
		rowsf:   map[rowsFusedKey]*cudaload.Function{},
		rowsTMA: map[rowsTMAKey]*cudaload.Function{},
		fold:    map[foldKey]*cudaload.Function{},
		stream:  map[streamKey]*cudaload.Function{},
		tc:      map[tcKey]*cudaload.Function{},

		tcRowsOne: map[tcKey]*cudaload.Function{},
	}
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
	get := func(mod *cudaload.Module, name string, shared uint32) (*cudaload.Function, error) {
		fn, err := mod.Function(name)
		if err != nil {
			return nil, fmt.Errorf("gemm.New: %w", err)
		}
		if shared > 48<<10 {
			if err := fn.SetMaxDynamicSharedMemory(int(shared)); err != nil {
				return nil, fmt.Errorf("gemm.New: %s needs %d bytes of shared memory per block: %w", name, shared, err)
			}
		}
		return fn, nil
	}

	mod, err := load(simtFamily)
	if err != nil {
		return mods, fns, err
	}
	for _, k := range simtKernels {
		if fns.simt[k], err = get(mod, k.simtName(), max(simtSharedBytes, lone)); err != nil {
			return mods, fns, err
		}
		if fns.simt64[k], err = get(mod, k.simt64Name(), max(simt64SharedBytes, lone)); err != nil {
			return mods, fns, err
		}
	}
	if mod, err = load(slabsFamily); err != nil {
		return mods, fns, err
	}
	for _, k := range slabsKernels {
		if fns.slabs[k], err = get(mod, k.name(), 0); err != nil {
			return mods, fns, err
		}
		if fns.slabs64[k], err = get(mod, k.name64(), 0); err != nil {
			return mods, fns, err
		}
	}
	if mod, err = load(rowsFamily); err != nil {
		return mods, fns, err
	}
	for _, k := range rowsKernels {
		if fns.rows[k], err = get(mod, k.name(), rowsSharedBytes(k.in, k.mr, rowsCN(k.mr))); err != nil {
			return mods, fns, err
		}
	}
	for _, k := range rowsFusedKernels {
		if fns.rowsf[k], err = get(mod, k.name(), rowsFusedSharedBytes(k.in, k.mr, k.layout == layoutNT)); err != nil {
			return mods, fns, err
		}
	}
	if mod, err = load(foldFamily); err != nil {
		return mods, fns, err
	}
	for _, k := range foldKernels {
		if fns.fold[k], err = get(mod, k.name(), 0); err != nil {
			return mods, fns, err
		}
	}
	if mod, err = load(streamFamily); err != nil {
		return mods, fns, err
	}
	for _, k := range streamKernels {
		if fns.stream[k], err = get(mod, k.name(), k.sharedBytes()); err != nil {
			return mods, fns, err
		}
	}
	if mod, err = load(tcFamily); err != nil {
		return mods, fns, err
	}
	limit := tcSharedLimit(ctx.Device().MaxSharedMemoryPerBlockOptin())
	for _, k := range tcKernels {
		if tcSharedBytes(k.tile, k.layout) > limit {
			continue // this GPU's blocks are too small for the tile; chooseTC skips it too
		}
		if fns.tc[k], err = get(mod, k.name(), tcSharedBytes(k.tile, k.layout)); err != nil {
			return mods, fns, err
		}
	}
	if mod, err = load(tcRowsFamily); err != nil {
		return mods, fns, err
	}
	for _, k := range tcRowsKernels {
		if tcRowsSharedBytes(k.tile, k.layout) > limit {
			continue // as above
		}
		if fns.tc[k], err = get(mod, k.name(), tcRowsSharedBytes(k.tile, k.layout)); err != nil {
			return mods, fns, err
		}
	}
	if mod, err = load(tcDWFamily); err != nil {
		return mods, fns, err
	}
	for _, k := range tcDWKernels {
		if tcDWSharedBytes(k.tile) > limit {
			continue // as above (tcDWUsable skips it too)
		}
		if fns.tc[k], err = get(mod, k.name(), tcDWSharedBytes(k.tile)); err != nil {
			return mods, fns, err
		}
	}
	if wgArch(bundle.Arch) {
		if mod, err = load(wgFamily); err != nil {
			return mods, fns, err
		}
		if err = loadWG(mod, wgKernels, &fns, get); err != nil {
			return mods, fns, err
		}
		if mod, err = load(wgSlabsFamily); err != nil {
			return mods, fns, err
		}
		if err = loadWG(mod, wgSlabKernels, &fns, get); err != nil {
			return mods, fns, err
		}
		if mod, err = load(tcRowsTMAFamily); err != nil {
			return mods, fns, err
		}
		for _, k := range tcRowsTMAKernels {
			if fns.tc[k], err = get(mod, k.name(), tcRowsSharedBytes(k.tile, k.layout)); err != nil {
				return mods, fns, err
			}
			if fns.tcRowsOne[k], err = get(mod, k.oneSlabName(), tcRowsSharedBytes(k.tile, k.layout)); err != nil {
				return mods, fns, err
			}
		}
		if mod, err = load(rowsTMAFamily); err != nil {
			return mods, fns, err
		}
		for _, k := range rowsTMAKernels {
			if fns.rowsTMA[k], err = get(mod, k.name(), rowsTMASharedBytes(k.in, k.mr, k.waves)); err != nil {
				return mods, fns, err
			}
		}
	}
	return mods, fns, nil
}
