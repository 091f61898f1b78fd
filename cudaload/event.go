package cudaload

import (
	"errors"
	"math"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/ebitengine/purego"
)

// eventDefault is CU_EVENT_DEFAULT: timing enabled, spin-wait sync.
const eventDefault = 0

// Event marks a point in a stream's work, for waiting and timing. It is
// safe for concurrent use; Close must not race with other calls.
type Event struct {
	ctx    *Context
	handle uintptr // CUevent
	closed atomic.Bool
}

// NewEvent creates an event with timing enabled (CU_EVENT_DEFAULT).
func (c *Context) NewEvent() (*Event, error) {
	if err := c.enter("NewEvent"); err != nil {
		return nil, err
	}
	var h uintptr
	r, _, _ := purego.SyscallN(c.drv.sym.cuEventCreate, uintptr(unsafe.Pointer(&h)), eventDefault)
	c.exit()
	if err := check("cuEventCreate", Result(int32(r))); err != nil {
		return nil, err
	}
	return &Event{ctx: c, handle: h}, nil
}

func (e *Event) enter(op string) error {
	if e == nil || e.closed.Load() {
		return &ClosedError{Op: op, Object: "event"}
	}
	return e.ctx.enter(op)
}

// Record marks the event at the current end of s's queued work; a nil s
// means the legacy default stream.
func (e *Event) Record(s *Stream) error {
	if s != nil {
		if err := s.usable("Event.Record"); err != nil {
			return err
		}
	}
	if err := e.enter("Event.Record"); err != nil {
		return err
	}
	r := call(e.ctx.drv.sym.cuEventRecord, e.handle, s.Handle())
	e.ctx.exit()
	return check("cuEventRecord", r)
}

// Synchronize waits until the work before the event's last Record has
// finished.
func (e *Event) Synchronize() error {
	if err := e.enter("Event.Synchronize"); err != nil {
		return err
	}
	r := call(e.ctx.drv.sym.cuEventSynchronize, e.handle)
	e.ctx.exit()
	return check("cuEventSynchronize", r)
}

// Close destroys the event (cuEventDestroy_v2). Close is idempotent.
func (e *Event) Close() error {
	if e == nil || !e.closed.CompareAndSwap(false, true) {
		return nil
	}
	if err := e.ctx.enter("Event.Close"); err != nil {
		if errors.Is(err, ErrClosed) {
			return nil // context closed first; nothing can be done now
		}
		return err
	}
	r := call(e.ctx.drv.sym.cuEventDestroy, e.handle)
	e.ctx.exit()
	return check("cuEventDestroy_v2", r)
}

// ElapsedTime is the GPU time between two recorded, completed events
// (cuEventElapsedTime_v2 where the driver has it, else cuEventElapsedTime;
// resolution about 0.5 µs). Both events must belong to the same context.
func ElapsedTime(start, end *Event) (time.Duration, error) {
	if end == nil || end.closed.Load() {
		return 0, &ClosedError{Op: "ElapsedTime", Object: "event"}
	}
	if err := start.enter("ElapsedTime"); err != nil {
		return 0, err
	}
	var ms float32
	r, _, _ := purego.SyscallN(start.ctx.drv.sym.cuEventElapsedTime, uintptr(unsafe.Pointer(&ms)), start.handle, end.handle)
	start.ctx.exit()
	if err := check("cuEventElapsedTime", Result(int32(r))); err != nil {
		return 0, err
	}
	return time.Duration(math.Round(float64(ms) * 1e6)), nil
}
