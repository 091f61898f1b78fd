package cudaload

import (
	"errors"
	"fmt"
	"math"
	"sync"
	"unsafe"
)

// Element is the element types a Buffer holds: fixed-size numbers whose
// bytes in Go memory are the bytes a kernel reads. Use float32 for f32
// data, uint16 for the bits of bf16 and f16 values (gemm/ref converts
// them), int32, uint8 and the rest as a kernel expects. Types defined on
// them (type BF16 uint16) qualify too. Pointers, strings, slices and
// structs do not: their bytes mean nothing on the device, and a struct's
// padding would be copied as garbage.
type Element interface {
	~float32 | ~float64 |
		~int8 | ~int16 | ~int32 | ~int64 |
		~uint8 | ~uint16 | ~uint32 | ~uint64
}

// ErrLengthMismatch is matched by the error a Buffer copy returns when the
// host slice's length differs from the buffer's. It also matches
// ErrInvalidArgument: nothing was copied.
var ErrLengthMismatch = errors.New("host slice and device buffer lengths differ")

// LengthError is a Buffer copy refused because the host slice does not
// hold exactly the buffer's elements. It matches ErrLengthMismatch and
// ErrInvalidArgument.
type LengthError struct {
	Op     string // e.g. "Buffer.CopyFromHost"
	Buffer int    // elements in the device buffer
	Host   int    // elements in the host slice
}

// Error reads "cudaload: Buffer.CopyFromHost: the host slice has 3
// elements, the buffer 4; copy exactly Len() elements".
func (e *LengthError) Error() string {
	return fmt.Sprintf("cudaload: %s: the host slice has %d elements, the buffer %d; copy exactly Len() elements", e.Op, e.Host, e.Buffer)
}

// Is matches ErrLengthMismatch and ErrInvalidArgument.
func (e *LengthError) Is(target error) bool {
	return target == ErrLengthMismatch || target == ErrInvalidArgument
}

// Buffer is device memory holding Len() elements of T, so that nobody
// computes byte sizes by hand. Ptr gives the raw address for APIs that
// take one (gemm's argument structs). A Buffer belongs to the Context it
// was allocated on; Close frees it. Its methods may be called from any
// goroutine; the copies are synchronous, as MemcpyHtoD and MemcpyDtoH are.
type Buffer[T Element] struct {
	ctx *Context
	ptr DevicePtr
	n   int

	mu     sync.Mutex // held by copies and Close, so Close never frees under a copy
	closed bool
}

// NewBuffer allocates device memory for n elements of T on c (MemAlloc).
// The memory is not initialised. n must be positive, and n elements must
// fit in 64-bit byte counts.
func NewBuffer[T Element](c *Context, n int) (*Buffer[T], error) {
	const op = "NewBuffer"
	if n <= 0 {
		return nil, argError(op, "%d elements; a buffer holds at least one", n)
	}
	var zero T
	size := uint64(unsafe.Sizeof(zero))
	if uint64(n) > math.MaxInt64/size {
		return nil, argError(op, "%d elements of %d bytes overflow a byte count", n, size)
	}
	p, err := c.MemAlloc(uint64(n) * size)
	if err != nil {
		return nil, err
	}
	return &Buffer[T]{ctx: c, ptr: p, n: n}, nil
}

// NewBufferFrom allocates a buffer of len(src) elements on c and copies src
// into it. On a failed copy the buffer is freed again.
func NewBufferFrom[T Element](c *Context, src []T) (*Buffer[T], error) {
	b, err := NewBuffer[T](c, len(src))
	if err != nil {
		return nil, err
	}
	if err := b.CopyFromHost(src); err != nil {
		return nil, errors.Join(err, b.Close())
	}
	return b, nil
}

// Len is the number of elements.
func (b *Buffer[T]) Len() int { return b.n }

// Bytes is the buffer's size in bytes: Len() times the size of T.
func (b *Buffer[T]) Bytes() uint64 {
	var zero T
	return uint64(b.n) * uint64(unsafe.Sizeof(zero))
}

// Ptr is the device address of element 0. It stays valid until Close; it is
// 0 after Close.
func (b *Buffer[T]) Ptr() DevicePtr {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return 0
	}
	return b.ptr
}

// Context is the context the buffer was allocated on.
func (b *Buffer[T]) Context() *Context { return b.ctx }

// CopyFromHost copies src, which must hold exactly Len() elements, into the
// buffer and waits until the bytes have landed in device memory (as
// MemcpyHtoD does), so work queued next on any stream sees them.
func (b *Buffer[T]) CopyFromHost(src []T) error {
	const op = "Buffer.CopyFromHost"
	b.mu.Lock() // a concurrent Close waits for the copy
	defer b.mu.Unlock()
	if err := b.check(op, len(src)); err != nil {
		return err
	}
	return b.ctx.MemcpyHtoD(b.ptr, unsafe.Pointer(unsafe.SliceData(src)), b.Bytes())
}

// CopyToHost fills dst, which must hold exactly Len() elements, with the
// buffer's contents and waits for the copy (MemcpyDtoH). The copy does not
// wait for kernels queued on other streams: synchronise the stream that
// writes the buffer first (gemm.Engine.Synchronize).
func (b *Buffer[T]) CopyToHost(dst []T) error {
	const op = "Buffer.CopyToHost"
	b.mu.Lock() // a concurrent Close waits for the copy
	defer b.mu.Unlock()
	if err := b.check(op, len(dst)); err != nil {
		return err
	}
	return b.ctx.MemcpyDtoH(unsafe.Pointer(unsafe.SliceData(dst)), b.ptr, b.Bytes())
}

// check refuses a closed buffer (a *ClosedError matching ErrClosed) and a
// host slice of the wrong length (a *LengthError). b.mu must be held.
func (b *Buffer[T]) check(op string, host int) error {
	if b.closed {
		return &ClosedError{Op: op, Object: "buffer"}
	}
	if host != b.n {
		return &LengthError{Op: op, Buffer: b.n, Host: host}
	}
	return nil
}

// Close frees the device memory (MemFree). The memory must no longer be in
// use by queued work. Closing twice is safe: the second call does nothing.
// After Close, copies return an error matching ErrClosed.
func (b *Buffer[T]) Close() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return nil
	}
	b.closed = true
	return b.ctx.MemFree(b.ptr)
}
