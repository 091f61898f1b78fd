package cudaload

import (
	"errors"
	"sync/atomic"
	"unsafe"

	"github.com/ebitengine/purego"
)

// streamNonBlocking is CU_STREAM_NON_BLOCKING: the stream does not
// synchronise with the legacy default stream.
const streamNonBlocking = 1

// Stream is a CUDA stream: work queued on it runs in order, and
// concurrently with other streams. It is safe for concurrent use (the
// order of work queued from two goroutines at once is whichever call
// reaches the driver first). Close must not race with other calls.
type Stream struct {
	ctx    *Context
	handle uintptr // CUstream
	closed atomic.Bool
}

// NewStream creates a non-blocking stream (CU_STREAM_NON_BLOCKING).
func (c *Context) NewStream() (*Stream, error) {
	if err := c.enter("NewStream"); err != nil {
		return nil, err
	}
	var h uintptr
	r, _, _ := purego.SyscallN(c.drv.sym.cuStreamCreate, uintptr(unsafe.Pointer(&h)), streamNonBlocking)
	c.exit()
	if err := check("cuStreamCreate", Result(int32(r))); err != nil {
		return nil, err
	}
	return &Stream{ctx: c, handle: h}, nil
}

// Handle is the raw CUstream (0 for a nil *Stream: the legacy default
// stream), for interoperation with other CUDA bindings.
func (s *Stream) Handle() uintptr {
	if s == nil {
		return 0
	}
	return s.handle
}

// Context is the context the stream belongs to.
func (s *Stream) Context() *Context { return s.ctx }

// usable reports ErrClosed for a nil, zero or closed stream, or one whose
// context is closed.
func (s *Stream) usable(op string) error {
	if s == nil || s.closed.Load() {
		return &ClosedError{Op: op, Object: "stream"}
	}
	return s.ctx.usable(op)
}

// enter checks the stream and its context and binds the context.
func (s *Stream) enter(op string) error {
	if s == nil || s.closed.Load() {
		return &ClosedError{Op: op, Object: "stream"}
	}
	return s.ctx.enter(op)
}

// Synchronize waits until all work queued on the stream has finished.
func (s *Stream) Synchronize() error {
	if err := s.enter("Stream.Synchronize"); err != nil {
		return err
	}
	r := call(s.ctx.drv.sym.cuStreamSynchronize, s.handle)
	s.ctx.exit()
	return check("cuStreamSynchronize", r)
}

// Close destroys the stream (cuStreamDestroy_v2); work already queued
// still completes. Close is idempotent.
func (s *Stream) Close() error {
	if s == nil || !s.closed.CompareAndSwap(false, true) {
		return nil
	}
	if err := s.ctx.enter("Stream.Close"); err != nil {
		if errors.Is(err, ErrClosed) {
			return nil // context closed first; nothing can be done now
		}
		return err
	}
	r := call(s.ctx.drv.sym.cuStreamDestroy, s.handle)
	s.ctx.exit()
	return check("cuStreamDestroy_v2", r)
}

// MemcpyHtoDAsync queues a copy of bytes from host memory at src to dst.
// The host memory must stay valid and unchanged until the stream reaches
// the copy (synchronise before reusing it); page-locked memory makes the
// copy truly asynchronous, pageable memory is staged by the driver.
func (s *Stream) MemcpyHtoDAsync(dst DevicePtr, src unsafe.Pointer, bytes uint64) error {
	if err := s.enter("MemcpyHtoDAsync"); err != nil {
		return err
	}
	r := callKeep(s.ctx.drv.sym.cuMemcpyHtoDAsync, src, uintptr(dst), uintptr(src), uintptr(bytes), s.handle)
	s.ctx.exit()
	return check("cuMemcpyHtoDAsync_v2", r)
}

// MemcpyDtoHAsync queues a copy of bytes from src to host memory at dst;
// dst holds the data only after the stream is synchronised, and must stay
// valid until then.
func (s *Stream) MemcpyDtoHAsync(dst unsafe.Pointer, src DevicePtr, bytes uint64) error {
	if err := s.enter("MemcpyDtoHAsync"); err != nil {
		return err
	}
	r := callKeep(s.ctx.drv.sym.cuMemcpyDtoHAsync, dst, uintptr(dst), uintptr(src), uintptr(bytes), s.handle)
	s.ctx.exit()
	return check("cuMemcpyDtoHAsync_v2", r)
}

// MemcpyDtoDAsync queues a device-to-device copy of bytes.
func (s *Stream) MemcpyDtoDAsync(dst, src DevicePtr, bytes uint64) error {
	if err := s.enter("MemcpyDtoDAsync"); err != nil {
		return err
	}
	r := call(s.ctx.drv.sym.cuMemcpyDtoDAsync, uintptr(dst), uintptr(src), uintptr(bytes), s.handle)
	s.ctx.exit()
	return check("cuMemcpyDtoDAsync_v2", r)
}

// MemsetD32Async queues setting n 32-bit words at p to v.
func (s *Stream) MemsetD32Async(p DevicePtr, v uint32, n uint64) error {
	if err := s.enter("MemsetD32Async"); err != nil {
		return err
	}
	r := call(s.ctx.drv.sym.cuMemsetD32Async, uintptr(p), uintptr(v), uintptr(n), s.handle)
	s.ctx.exit()
	return check("cuMemsetD32Async", r)
}
