package cudaload

import (
	"runtime"
	"unsafe"
)

// SetSkipSetWhenCurrent switches how calls bind the context to their
// thread (see skipSetWhenCurrent) and returns a function restoring it.
func SetSkipSetWhenCurrent(v bool) (restore func()) {
	old := skipSetWhenCurrent.Swap(v)
	return func() { skipSetWhenCurrent.Store(old) }
}

// BindOnce makes c current on the calling thread once, the way every
// method does, for benchmarking the binding alone.
func BindOnce(c *Context) error {
	runtime.LockOSThread()
	r := c.bind()
	runtime.UnlockOSThread()
	return check("cuCtxSetCurrent", r)
}

func ptrOf[T any](s []T) unsafe.Pointer { return unsafe.Pointer(unsafe.SliceData(s)) }
