package gemm

import (
	"errors"
	"fmt"

	"github.com/detgemm/detgemm/cudaload"
)

// Call is one product of the triad: a ForwardArgs, DWArgs or DXArgs value.
// Presize, WorkspaceBytes and Strategy take any of them and read only its
// tier, types and shape: the pointers may be left zero.
type Call interface {
	build(pointers bool) (problem, error)
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

// planCall validates c's shape and types (not its pointers) and returns
// the dispatcher's decision for it.
func (e *Engine) planCall(c Call) (plan, error) {
	if nilCall(c) {
		return plan{}, argErr("Presize", "call", ErrNilPointer, "nil Call")
	}
	p, err := c.build(false)
	if err != nil {
		return plan{}, err
	}
	return e.choose(p, filter{})
}

// nilCall reports a nil Call, or a nil *ForwardArgs, *DWArgs or *DXArgs in
// one (whose build would dereference nil).
func nilCall(c Call) bool {
	switch a := c.(type) {
	case nil:
		return true
	case *ForwardArgs:
		return a == nil
	case *DWArgs:
		return a == nil
	case *DXArgs:
		return a == nil
	}
	return false
}

// choose is the plan of a validated problem: validate → plan → launch's
// middle step. The tier's planner picks the kernels (chooseTCLaunch for
// the tensor cores, choose for the IEEE tiers), narrowed by f; then what
// depends on this engine's GPU and the call's pointers is resolved — the
// rows path, the tiled grid's tail cut, the one-slab twin — so that the
// launcher and Explain only read the plan.
func (e *Engine) choose(p problem, f filter) (plan, error) {
	if p.tier == TierTensorCore {
		// One kernel per call, and gemm_fold where the plan's slabs go to
		// planes (tc_slabs.go).
		r, err := chooseTCLaunch(p, e.sms, e.tcShared, e.hasWG, f.tc)
		if err != nil {
			return plan{}, fmt.Errorf("gemm.%s: %w", p.op, err)
		}
		r.one = r.slabs <= 1 && kernelIndex.tcOne[r.k] != 0
		ws, _ := r.wsBytes(p)
		if !r.planes {
			return plan{strategy: StrategyTiled, slabs: r.slabs, ws: ws, tc: r}, nil
		}
		return plan{strategy: StrategySplitSlab, slabs: r.slabs, perBlock: 1, groups: r.slabs, ws: ws, tc: r}, nil
	}
	pl, err := choose(p.layout, p.rows, p.cols, p.red, e.sms, f)
	if err != nil {
		return plan{}, fmt.Errorf("gemm.%s: %w", p.op, err)
	}
	switch {
	case pl.strategy == StrategyRows:
		pl.path = e.rowsPathFor(p, pl.mr, f)
	case pl.strategy == StrategyTiled && pl.tailRow == 0:
		pl.cut, pl.cutK = e.tiledCut(p, pl, f)
	}
	return pl, nil
}

// Strategy is the strategy the engine runs c with on this GPU. It is a
// function of the operation, the shape and the GPU's multiprocessor count;
// the bits of the result never depend on it.
func (e *Engine) Strategy(c Call) (Strategy, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	pl, err := e.planCall(c)
	return pl.strategy, err
}

// WorkspaceBytes is the device workspace c needs on this engine: 0 for the
// tiled strategy (or, where its last rows run split-slab, S·tailRows·cols·4
// bytes), S·rows·cols·4 bytes (S = ceil(R/256) slabs of f32
// partials of the output shape) for split-slab, and for rows that plus 4
// bytes of arrival counter per run of 256 (M ≤ 16) or 128 output columns
// and group of 4, 16 or 32 rows. A TierTensorCore call needs none where its
// plan has one slab; a cut plan needs S (DW: S-1) f32 planes of the output
// on planes (StrategySplitSlab), or the running sums of its tiles plus,
// for a 16-bit output, one f32 plane. It depends on the
// shape and, through the strategy, on the GPU's multiprocessor count —
// never on the data or the pointers.
func (e *Engine) WorkspaceBytes(c Call) (uint64, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	pl, err := e.planCall(c)
	return pl.ws + pl.ctrs, err
}

// Presize allocates, now, the workspace the largest of calls needs (only
// their shapes and types matter; pointers may be anything valid), so that
// later calls with those shapes allocate nothing. Before capturing calls in
// a CUDA graph, Presize them: a call that needs more workspace than was
// presized allocates lazily outside a capture, but fails with ErrWorkspace
// while the stream is capturing. The workspace only grows, and stays
// allocated until Close.
func (e *Engine) Presize(calls ...Call) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return ErrClosed
	}
	var need, ctrs uint64
	op := "Presize"
	for _, c := range calls {
		pl, err := e.planCall(c)
		if err != nil {
			return err
		}
		need, ctrs = max(need, pl.ws), max(ctrs, pl.ctrs)
	}
	if err := e.ws.ensure(op, need, e.stream.IsCapturing, e.ctx.MemAlloc); err != nil {
		return err
	}
	return e.ws.ensureCounters(op, ctrs, e.stream.IsCapturing, e.ctx.MemAlloc, e.zero)
}

// zero clears n bytes (a multiple of 4) at p on the engine's stream.
func (e *Engine) zero(p cudaload.DevicePtr, n uint64) error {
	return e.stream.MemsetD32Async(p, 0, n/4)
}
