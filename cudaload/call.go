package cudaload

import (
	"sync"
	"unsafe"

	"github.com/ebitengine/purego"
)

// maxCallArgs covers the widest entry point called through callFrame
// (cuLaunchKernel: 11 arguments).
const maxCallArgs = 12

// callFrame is an argument block on the Go heap, reused through a pool.
// purego.SyscallN moves its variadic slice to the heap (one allocation per
// call) unless the slice already lives there; handing it a pooled frame is
// what makes Launch, the async copies and Event.Record allocation-free.
type callFrame struct {
	args [maxCallArgs]uintptr
	// keep holds a Go pointer that was passed as a uintptr, so the object
	// it points to stays alive for the call and, because it is stored here,
	// escapes to the heap where it cannot move.
	keep unsafe.Pointer
	// out is a heap slot the driver may write through (cuCtxGetCurrent).
	out uintptr
}

var framePool = sync.Pool{New: func() any { return new(callFrame) }}

// call invokes fn with integer-class arguments only: handles, sizes, flags,
// or addresses of memory that is off the Go heap or pinned by the caller.
func call(fn uintptr, args ...uintptr) Result {
	f := framePool.Get().(*callFrame)
	n := copy(f.args[:], args)
	r, _, _ := purego.SyscallN(fn, f.args[:n]...)
	framePool.Put(f)
	return Result(int32(r))
}

// callKeep is call for an argument list that carries the Go pointer p as a
// uintptr; p is kept reachable (and on the heap) until fn returns.
func callKeep(fn uintptr, p unsafe.Pointer, args ...uintptr) Result {
	f := framePool.Get().(*callFrame)
	f.keep = p
	n := copy(f.args[:], args)
	r, _, _ := purego.SyscallN(fn, f.args[:n]...)
	f.keep = nil
	framePool.Put(f)
	return Result(int32(r))
}

// callOut is call for a single-pointer-result entry point fn(T* out, args...):
// the driver writes into a pooled heap slot, so nothing is allocated.
func callOut(fn uintptr, args ...uintptr) (uintptr, Result) {
	f := framePool.Get().(*callFrame)
	f.out = 0
	f.args[0] = uintptr(unsafe.Pointer(&f.out))
	n := copy(f.args[1:], args)
	r, _, _ := purego.SyscallN(fn, f.args[:n+1]...)
	out := f.out
	framePool.Put(f)
	return out, Result(int32(r))
}

// goString copies the NUL-terminated C string at p (nil gives "").
func goString(p *byte) string {
	if p == nil {
		return ""
	}
	n := 0
	for *(*byte)(unsafe.Add(unsafe.Pointer(p), n)) != 0 {
		n++
	}
	return string(unsafe.Slice(p, n))
}

// cString returns s as a NUL-terminated byte slice for the driver.
func cString(s string) []byte {
	b := make([]byte, len(s)+1)
	copy(b, s)
	return b
}
