package gemm

import (
	"errors"
	"fmt"
	"github.com/detgemm/detgemm/gemm/internal/entries"
	"sync"

	"github.com/detgemm/detgemm/cudaload"
	"github.com/detgemm/detgemm/kernels"
)

// engineFamilies lists the kernel families an engine on arch can dispatch:
// the others (triad, util, and the sm_90a-only families elsewhere) are
// neither built nor loaded.
func engineFamilies(arch kernels.Arch) []string {
	fams := []string{simtFamily, slabsFamily, rowsFamily, rowsFusedFamily, foldFamily, streamFamily, tcFamily, tcRowsFamily, tcDWFamily, matmulFamily, gatedFamily, sp24Family, sp24FormatFamily}
	if wgArch(arch) {
		fams = append(fams, wgFamily, wgSlabsFamily, tcRowsTMAFamily, rowsTMAFamily, wgMatmulFamily, fp8Family, fp8QuantFamily, sp24WGFamily, sp24RowsFamily)
	}
	return fams
}

// shareKey identifies the engines that may share loaded modules: one
// context, one kernels mode. private, when set, makes the key unique (an
// engine with build options the key cannot compare).
type shareKey struct {
	ctx     *cudaload.Context
	mode    kernels.Mode
	private *byte
}

// loaded is one context's modules and resolved functions, shared by the
// engines holding a reference. The functions are only read after New.
type loaded struct {
	mu     sync.Mutex // held while the first engine builds and loads
	refs   int        // guarded by registry.mu
	ready  bool       // guarded by mu
	mods   []*cudaload.Module
	fns    functions
	arch   kernels.Arch
	report BuildReport
}

var registry struct {
	mu sync.Mutex
	m  map[shareKey]*loaded
}

// acquire returns key's modules, taking a reference: loaded by an earlier
// engine (reused is true), or by build now. Engines on other contexts are
// not held up while one builds.
func acquire(key shareKey, build func() (*loaded, error)) (l *loaded, reused bool, err error) {
	registry.mu.Lock()
	if registry.m == nil {
		registry.m = map[shareKey]*loaded{}
	}
	slot := registry.m[key]
	if slot == nil {
		slot = &loaded{}
		registry.m[key] = slot
	}
	slot.refs++
	registry.mu.Unlock()

	slot.mu.Lock()
	defer slot.mu.Unlock()
	if slot.ready {
		return slot, true, nil
	}
	got, err := build()
	if err != nil {
		registry.mu.Lock()
		slot.refs--
		if slot.refs == 0 && registry.m[key] == slot {
			delete(registry.m, key)
		}
		registry.mu.Unlock()
		return nil, false, err
	}
	slot.mods, slot.fns, slot.arch, slot.report = got.mods, got.fns, got.arch, got.report
	slot.ready = true
	return slot, false, nil
}

// release drops a reference; the last one unloads the modules.
func release(key shareKey, l *loaded) error {
	if l == nil {
		return nil
	}
	registry.mu.Lock()
	l.refs--
	last := l.refs == 0
	if last && registry.m[key] == l {
		delete(registry.m, key)
	}
	registry.mu.Unlock()
	if !last {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	err := closeAll(l.mods)
	l.mods, l.ready = nil, false
	return err
}

// sharedEngines counts the contexts' module sets still loaded (tests).
func sharedEngines() int {
	registry.mu.Lock()
	defer registry.mu.Unlock()
	return len(registry.m)
}

// loadModules loads every family of the bundle the engine uses
// (engineFamilies) and resolves its entry points into a table indexed by
// kernelID. On error, the modules loaded so far are returned too, for the
// caller to close.
//
// The tiled kernels may take up to lone bytes of dynamic shared memory (the
// tail launches of tiles.go), at least what they need.
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
// them there). lone is the tiled kernels' tail launches' (tiles.go).
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
	case "tcacc":
		s := tcSharedBytesRC(tileOf(k.Tile), k.Layout[0] == 'n', k.Layout[1] == 'n')
		return s, s <= limit
	case "tcrows":
		s := tcRowsSharedBytes(tileOf(k.Tile), l)
		return s, s <= limit
	case "tcdw":
		s := tcDWSharedBytes(tileOf(k.Tile))
		return s, s <= limit
	case "tmarows", "tmarows_one":
		return tcRowsSharedBytes(tileOf(k.Tile), l), true
	case "wg", "wgmm":
		return wgSharedBytes(tileOf(k.Tile)), true
	case "fp8":
		return fp8SharedBytes(fp8TileWidth(k.Tile)), true
	case "sp24":
		s := sp24Shared(k.Tile)
		return s, s <= limit
	case "sp24wg", "sp24rows":
		return sp24Shared(k.Tile), true
	}
	return 0, true // slabs, fold: static shared memory only
}

// closeAll closes every module, joining the errors.
func closeAll(mods []*cudaload.Module) error {
	var errs []error
	for _, m := range mods {
		errs = append(errs, m.Close())
	}
	return errors.Join(errs...)
}
