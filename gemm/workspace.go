package gemm

import ()

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
	return e.choose(p, &filter{})
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
// on planes (StrategySplitSlab), none where its tiles keep the running
// sum in registers but S planes of the rows of a split tail (its short
// last round's rows, on planes), or the running sums of its tiles plus,
// for a 16-bit output, one f32 plane. It depends on the
// shape and, through the strategy, on the GPU's multiprocessor count —
// never on the data or the pointers.
func (e *Engine) WorkspaceBytes(c Call) (uint64, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	pl, err := e.planCall(c)
	return pl.ws + pl.ctrs, err
}

// reserveWorkspace allocates, under the engine's lock, the workspace a
// plan of op needs, so that its Run allocates nothing (none when bytes is
// 0): ErrClosed after Close, else the allocation's error.
func (e *Engine) reserveWorkspace(op string, bytes uint64) error {
	if bytes == 0 {
		return nil
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return ErrClosed
	}
	return e.ws.ensure(op, bytes, e.stream.IsCapturing, e.ctx.MemAlloc)
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
