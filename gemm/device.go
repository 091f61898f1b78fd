package gemm

import (
	"errors"
	"fmt"

	"github.com/detgemm/detgemm/cudaload"
	"github.com/detgemm/detgemm/kernels"
)

// device is what planning and launching read and write of an engine: the
// GPU's figures, the loaded kernels, the stream, the argument block, the
// workspace and the per-call TMA maps. Engine embeds it; the kernel
// families' launch code and rules take it, never the Engine, so they sit
// below the engine.
type device struct {
	ctx      *cudaload.Context
	stream   *cudaload.Stream
	arch     kernels.Arch
	sms      int // multiprocessors: the dispatcher's only device input
	fns      functions
	args     cudaload.Args
	ws       workspace
	tcShared uint32 // shared memory a gemm_tc block may use (tc.go)
	// smemPerSM: shared memory per multiprocessor; loneShared: the dynamic
	// shared memory that keeps a tiled block alone on its SM (tiles.go's
	// tail launches), 0 where the device cannot give it.
	smemPerSM, loneShared uint32
	// gemm_wgmma (sm_90a): whether it is loaded, and the per-call TMA maps
	// (encoded under Engine.mu, without allocating).
	hasWG bool
	// mmUnfused: Matmul never takes the fused wgmma kernels; mmForce: the
	// tile they take wherever they can (EnvMatmulFused when the engine was
	// made).
	mmUnfused bool
	mmForce   tcTile
	tmEnc     *cudaload.TiledEncoder
	tmA, tmB  cudaload.TensorMap
}

// workspace is the engine's device scratch: slab partials, and the
// one-launch rows kernels' arrival counters in a buffer of their own (no
// other kernel writes there, so they stay zero between calls; each rows
// launch leaves them zero). Both only grow; a buffer they outgrow is kept
// until Close, because a CUDA graph captured earlier may still launch
// kernels that use it.
type workspace struct {
	ptr      cudaload.DevicePtr
	bytes    uint64
	ctr      cudaload.DevicePtr
	ctrBytes uint64
	retired  []cudaload.DevicePtr
}

// holds checks, before a plan's Run, that the plan's need bytes are still
// allocated (of what: "" or a description starting with a space). The
// workspace only grows, so they are; checked because the plan's kernels
// write all of it.
func (w *workspace) holds(op, what string, need uint64) error {
	if w.bytes < need {
		return fmt.Errorf("gemm.%s: %w: the plan's %d bytes%s are no longer allocated", op, ErrWorkspace, need, what)
	}
	return nil
}

// workspaceGranule rounds allocations up, so a sweep over shapes grows the
// buffer a few times rather than on every new shape.
const workspaceGranule = 1 << 20

// ensure makes the workspace at least need bytes. It allocates only when it
// must grow, and then refuses while the stream is capturing a graph (an
// allocation would invalidate the capture): the caller must Presize first.
func (w *workspace) ensure(op string, need uint64, capturing func() (bool, error), alloc func(uint64) (cudaload.DevicePtr, error)) error {
	if need <= w.bytes {
		return nil
	}
	c, err := capturing()
	if err != nil {
		return fmt.Errorf("gemm.%s: asking whether the stream is capturing: %w", op, err)
	}
	if c {
		return fmt.Errorf("gemm.%s: %w: the call needs %d bytes, %d are presized, and the stream is capturing a CUDA graph; call Presize with this shape before capturing",
			op, ErrWorkspace, need, w.bytes)
	}
	p, size, err := grow(op, need, alloc)
	if err != nil {
		return err
	}
	if w.ptr != 0 {
		w.retired = append(w.retired, w.ptr)
	}
	w.ptr, w.bytes = p, size
	return nil
}

// ensureCounters makes the counter buffer at least need bytes, as ensure
// does the partials', and zeroes a new buffer (zero enqueues that on the
// engine's stream, before any kernel that uses it).
func (w *workspace) ensureCounters(op string, need uint64, capturing func() (bool, error), alloc func(uint64) (cudaload.DevicePtr, error), zero func(cudaload.DevicePtr, uint64) error) error {
	if need <= w.ctrBytes {
		return nil
	}
	c, err := capturing()
	if err != nil {
		return fmt.Errorf("gemm.%s: asking whether the stream is capturing: %w", op, err)
	}
	if c {
		return fmt.Errorf("gemm.%s: %w: the call needs %d bytes of counters, %d are presized, and the stream is capturing a CUDA graph; call Presize with this shape before capturing",
			op, ErrWorkspace, need, w.ctrBytes)
	}
	p, size, err := grow(op, need, alloc)
	if err != nil {
		return err
	}
	if err := zero(p, size); err != nil {
		w.retired = append(w.retired, p) // freed at Close
		return fmt.Errorf("gemm.%s: %w: zeroing the counters: %w", op, ErrWorkspace, err)
	}
	if w.ctr != 0 {
		w.retired = append(w.retired, w.ctr)
	}
	w.ctr, w.ctrBytes = p, size
	return nil
}

// grow allocates need bytes rounded up to the granule.
func grow(op string, need uint64, alloc func(uint64) (cudaload.DevicePtr, error)) (cudaload.DevicePtr, uint64, error) {
	size := (need + workspaceGranule - 1) / workspaceGranule * workspaceGranule
	p, err := alloc(size)
	if err != nil {
		return 0, 0, fmt.Errorf("gemm.%s: %w: allocating %d bytes: %w", op, ErrWorkspace, size, err)
	}
	return p, size, nil
}

// release frees every buffer; the stream must be idle.
func (w *workspace) release(free func(cudaload.DevicePtr) error) error {
	var errs []error
	for _, p := range append(w.retired, w.ptr, w.ctr) {
		if p != 0 {
			errs = append(errs, free(p))
		}
	}
	*w = workspace{}
	return errors.Join(errs...)
}

// launcher enqueues the kernels of a plan on its engine, or, for Explain,
// records them (rec set) without launching, encoding or allocating: one
// launch code for both, so Explain says exactly what a call runs.
type launcher struct {
	e      *device
	serial bool         // launch plainly, without overlap (tests)
	rec    *Explanation // record instead of launching
}

// loaded reports whether the engine holds kernel id (an entry of a family
// it built and loaded for its GPU).
func (d *device) loaded(id kernelID) bool {
	return id != 0 && int(id) < len(d.fns) && d.fns[id] != nil
}

// need reports a kernel the engine lacks before anything is prepared for
// it; validation admits only combinations that have one, so this is a bug,
// not a user error.
func (l launcher) need(p *problem, id kernelID) error {
	if l.rec != nil || l.e.loaded(id) {
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
func (l launcher) launch(p *problem, id kernelID, grid cudaload.Dim3, threads, shared uint32, tm, tn int64) error {
	if l.rec != nil {
		if len(l.rec.Launches) == 0 {
			l.rec.Tile = tileName(tm, tn)
		}
		en := id.entry()
		l.rec.Launches = append(l.rec.Launches, Launch{en.Name, en.Family, grid, threads, shared})
		return nil
	}
	e := l.e
	fn := e.fns[id]
	if fn == nil {
		return l.need(p, id)
	}
	cfg := cudaload.LaunchConfig{Grid: grid, Block: cudaload.Dim3{X: threads, Y: 1, Z: 1}, SharedMemBytes: shared, Stream: e.stream,
		Overlap: !l.serial && e.arch.Major >= 9}
	if err := fn.Launch(cfg, &e.args); err != nil {
		return fmt.Errorf("gemm.%s: %w", p.op, err)
	}
	return nil
}

// zero clears n bytes (a multiple of 4) at p on the engine's stream.
func (e *device) zero(p cudaload.DevicePtr, n uint64) error {
	return e.stream.MemsetD32Async(p, 0, n/4)
}
