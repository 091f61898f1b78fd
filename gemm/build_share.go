package gemm

import (
	"sync"

	"github.com/detgemm/detgemm/cudaload"
	"github.com/detgemm/detgemm/kernels"
)

// engineFamilies lists the kernel families an engine on arch can dispatch:
// the others (triad, util, and the sm_90a-only families elsewhere) are
// neither built nor loaded.
func engineFamilies(arch kernels.Arch) []string {
	fams := []string{simtFamily, slabsFamily, rowsFamily, foldFamily, streamFamily, tcFamily, tcRowsFamily, tcDWFamily}
	if wgArch(arch) {
		fams = append(fams, wgFamily, wgSlabsFamily, tcRowsTMAFamily, rowsTMAFamily)
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
