package cudaload

import (
	"runtime"
	"sync/atomic"

	"github.com/ebitengine/purego"
)

// Context is a CUDA context: the address space that device memory,
// modules, streams and events belong to.
//
// A CUDA context is current per OS thread, and goroutines move between
// threads; so every method that needs the context locks the calling
// goroutine to its thread, makes the context current there, calls the
// driver and unlocks. That makes a Context safe for concurrent use from
// any number of goroutines, with no setup by the caller.
//
// Close releases the context; it must not race with other calls on the
// same Context. After Close every method, and every method of the streams,
// events and modules made from it, returns an error matching ErrClosed.
type Context struct {
	drv    *Driver
	dev    *Device
	handle uintptr // CUcontext
	closed atomic.Bool
}

// skipSetWhenCurrent selects how a call binds the context to its thread:
// false calls cuCtxSetCurrent every time (one driver call); true asks
// cuCtxGetCurrent first and sets only when another context is current
// (one call when already bound, two otherwise). BenchmarkBind compares
// them on a GPU.
var skipSetWhenCurrent atomic.Bool

// Device is the device the context belongs to.
func (c *Context) Device() *Device { return c.dev }

// Handle is the raw CUcontext, for interoperation with other CUDA
// bindings in the same process.
func (c *Context) Handle() uintptr { return c.handle }

// enter checks that the context is open, locks the goroutine to its OS
// thread and makes the context current there. On success the caller must
// call exit; on error the thread is already unlocked.
func (c *Context) enter(op string) error {
	if err := c.usable(op); err != nil {
		return err
	}
	runtime.LockOSThread()
	if r := c.bind(); r != Success {
		runtime.UnlockOSThread()
		return newError("cuCtxSetCurrent", r)
	}
	return nil
}

// usable reports ErrClosed for a closed context, and for a nil or zero one
// (not made by Device.PrimaryContext), without binding.
func (c *Context) usable(op string) error {
	if c == nil || c.drv == nil || c.closed.Load() {
		return &ClosedError{Op: op, Object: "context"}
	}
	return nil
}

// exit undoes enter. LockOSThread calls nest, so a caller that locked its
// own thread stays locked.
func (c *Context) exit() { runtime.UnlockOSThread() }

// bind makes the context current on the (locked) calling thread.
func (c *Context) bind() Result {
	if skipSetWhenCurrent.Load() {
		cur, r := callOut(c.drv.sym.cuCtxGetCurrent)
		if r == Success && cur == c.handle {
			return Success
		}
	}
	return call(c.drv.sym.cuCtxSetCurrent, c.handle)
}

// Close releases the primary context retained by Device.PrimaryContext.
// It is idempotent: later calls return nil.
func (c *Context) Close() error {
	if c == nil || c.drv == nil || !c.closed.CompareAndSwap(false, true) {
		return nil
	}
	r, _, _ := purego.SyscallN(c.drv.sym.cuDevicePrimaryCtxRelease, uintptr(c.dev.handle))
	return check("cuDevicePrimaryCtxRelease_v2", Result(int32(r)))
}

// Synchronize waits until all work queued in the context has finished
// (cuCtxSynchronize), and reports an asynchronous error from that work.
func (c *Context) Synchronize() error {
	if err := c.enter("Synchronize"); err != nil {
		return err
	}
	r := call(c.drv.sym.cuCtxSynchronize)
	c.exit()
	return check("cuCtxSynchronize", r)
}
