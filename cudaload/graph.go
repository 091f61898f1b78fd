package cudaload

import (
	"errors"
	"sync/atomic"
	"unsafe"

	"github.com/ebitengine/purego"
)

// CUDA graphs: work queued on a stream between BeginCapture and EndCapture
// is recorded instead of run; the recorded Graph is instantiated once into a
// GraphExec, which replays the whole sequence with one launch.

// The driver's stream-capture status codes (CUDA_ERROR_STREAM_CAPTURE_*),
// for errors.Is.
const (
	ErrStreamCaptureUnsupported Result = 900 // the operation is not permitted while the stream is capturing
	ErrStreamCaptureInvalidated Result = 901 // an earlier error invalidated the capture
	ErrStreamCaptureMerge       Result = 902 // two independent captures would be merged
	ErrStreamCaptureUnmatched   Result = 903 // EndCapture on a stream that is not capturing
	ErrStreamCaptureUnjoined    Result = 904 // the capture forked into a stream that did not join back
	ErrStreamCaptureIsolation   Result = 905 // a dependency crosses the capture boundary
	ErrStreamCaptureImplicit    Result = 906 // implicit dependency on the legacy default stream
	ErrCapturedEvent            Result = 907 // the operation is not permitted on an event captured in a graph
	ErrStreamCaptureWrongThread Result = 908 // a non-relaxed capture was ended on another thread
	ErrGraphExecUpdateFailure   Result = 910 // the graph update was not performed
)

const (
	captureModeRelaxed           = 2 // CU_STREAM_CAPTURE_MODE_RELAXED
	graphInstantiateDefaultFlags = 0
)

// BeginCapture puts the stream into capture mode (cuStreamBeginCapture_v2):
// until EndCapture, kernels, copies and memsets queued on it are recorded
// into a graph instead of running. Capture is not possible on a nil (legacy
// default) stream.
//
// The capture uses CU_STREAM_CAPTURE_MODE_RELAXED. The driver requires
// that a capture begun in the GLOBAL or THREAD_LOCAL mode be ended by the
// thread that began it (else CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD, 908),
// but this package locks the goroutine to its OS thread only for the
// length of one driver call, so BeginCapture and EndCapture may well run on
// different threads. RELAXED lifts that rule. What it gives up is the
// driver's check that no thread makes an unsafe call (cuMemAlloc,
// synchronous copies) while the capture is open: such calls run eagerly and
// are not recorded. So the caller must allocate every buffer before the
// capture and must not synchronise the capturing stream (that still
// fails, with ErrStreamCaptureUnsupported, and invalidates the capture).
func (s *Stream) BeginCapture() error {
	if err := s.enter("Stream.BeginCapture"); err != nil {
		return err
	}
	r := call(s.ctx.drv.sym.cuStreamBeginCapture, s.handle, uintptr(captureModeRelaxed))
	s.ctx.exit()
	return check("cuStreamBeginCapture_v2", r)
}

// EndCapture ends the capture begun by BeginCapture and returns the
// recorded graph, which the caller must Close. When something queued during
// the capture failed, the driver invalidated the capture: EndCapture then
// returns an error matching ErrStreamCaptureInvalidated and no graph, and
// the stream is usable again.
func (s *Stream) EndCapture() (*Graph, error) {
	if err := s.enter("Stream.EndCapture"); err != nil {
		return nil, err
	}
	h, r := callOut2(s.ctx.drv.sym.cuStreamEndCapture, s.handle)
	s.ctx.exit()
	if err := check("cuStreamEndCapture", r); err != nil {
		return nil, err
	}
	if h == 0 {
		// A successful end with no graph: the capture was invalidated.
		return nil, newError("cuStreamEndCapture", ErrStreamCaptureInvalidated)
	}
	return &Graph{ctx: s.ctx, handle: h}, nil
}

// Capture records what fn queues on s into a graph: BeginCapture, fn,
// EndCapture. The capture is ended even when fn fails, so the stream never
// stays in capture mode; fn's error comes first in the result.
func (s *Stream) Capture(fn func() error) (*Graph, error) {
	if fn == nil {
		return nil, argError("Stream.Capture", "nil function")
	}
	if err := s.BeginCapture(); err != nil {
		return nil, err
	}
	fnErr := fn()
	g, endErr := s.EndCapture()
	if fnErr != nil {
		return nil, errors.Join(fnErr, g.Close(), endErr)
	}
	return g, endErr
}

// callOut2 is callOut for fn(arg, T* out): the out slot is the second
// argument (cuStreamEndCapture).
func callOut2(fn, arg uintptr) (uintptr, Result) {
	f := framePool.Get().(*callFrame)
	f.out = 0
	f.args[0] = arg
	f.args[1] = uintptr(unsafe.Pointer(&f.out))
	r, _, _ := purego.SyscallN(fn, f.args[:2]...)
	out := f.out
	framePool.Put(f)
	return out, Result(int32(r))
}

// Graph is a recorded sequence of work (CUgraph). It is not runnable
// itself: Instantiate makes a GraphExec. Close must not race with other
// calls on the graph.
type Graph struct {
	ctx    *Context
	handle uintptr // CUgraph
	closed atomic.Bool
}

// Handle is the raw CUgraph (0 for nil).
func (g *Graph) Handle() uintptr {
	if g == nil {
		return 0
	}
	return g.handle
}

func (g *Graph) enter(op string) error {
	if g == nil || g.closed.Load() {
		return &ClosedError{Op: op, Object: "graph"}
	}
	return g.ctx.enter(op)
}

// Instantiate turns the graph into an executable graph
// (cuGraphInstantiateWithFlags, flags 0). The graph may be closed
// afterwards; the GraphExec does not depend on it.
func (g *Graph) Instantiate() (*GraphExec, error) {
	if err := g.enter("Graph.Instantiate"); err != nil {
		return nil, err
	}
	h, r := callOut(g.ctx.drv.sym.cuGraphInstantiateWithFlags, g.handle, uintptr(graphInstantiateDefaultFlags))
	g.ctx.exit()
	if err := check("cuGraphInstantiateWithFlags", r); err != nil {
		return nil, err
	}
	return &GraphExec{ctx: g.ctx, handle: h}, nil
}

// Close destroys the graph (cuGraphDestroy). It is idempotent, and nil-safe.
func (g *Graph) Close() error {
	if g == nil || !g.closed.CompareAndSwap(false, true) {
		return nil
	}
	if err := g.ctx.enter("Graph.Close"); err != nil {
		if errors.Is(err, ErrClosed) {
			return nil // context closed first; nothing can be done now
		}
		return err
	}
	r := call(g.ctx.drv.sym.cuGraphDestroy, g.handle)
	g.ctx.exit()
	return check("cuGraphDestroy", r)
}

// GraphExec is an instantiated graph (CUgraphExec): Launch replays the
// recorded work, reading and writing the same device buffers every time.
// It is safe for concurrent use; Close must not race with other calls.
type GraphExec struct {
	ctx    *Context
	handle uintptr // CUgraphExec
	closed atomic.Bool
}

// Handle is the raw CUgraphExec (0 for nil).
func (e *GraphExec) Handle() uintptr {
	if e == nil {
		return 0
	}
	return e.handle
}

// Launch queues one replay of the graph on s (cuGraphLaunch); a nil s
// means the legacy default stream. Like a kernel launch it returns once
// queued; the work's own errors surface at the next synchronisation.
// Replays queued on one stream run one after the other.
func (e *GraphExec) Launch(s *Stream) error {
	if e == nil || e.closed.Load() {
		return &ClosedError{Op: "GraphExec.Launch", Object: "graph exec"}
	}
	if s != nil {
		if err := s.usable("GraphExec.Launch"); err != nil {
			return err
		}
		if s.ctx.handle != e.ctx.handle {
			return argError("GraphExec.Launch", "stream belongs to another context")
		}
	}
	if err := e.ctx.enter("GraphExec.Launch"); err != nil {
		return err
	}
	r := call(e.ctx.drv.sym.cuGraphLaunch, e.handle, s.Handle())
	e.ctx.exit()
	return check("cuGraphLaunch", r)
}

// Close destroys the executable graph (cuGraphExecDestroy); replays
// already queued still complete. It is idempotent, and nil-safe.
func (e *GraphExec) Close() error {
	if e == nil || !e.closed.CompareAndSwap(false, true) {
		return nil
	}
	if err := e.ctx.enter("GraphExec.Close"); err != nil {
		if errors.Is(err, ErrClosed) {
			return nil
		}
		return err
	}
	r := call(e.ctx.drv.sym.cuGraphExecDestroy, e.handle)
	e.ctx.exit()
	return check("cuGraphExecDestroy", r)
}
