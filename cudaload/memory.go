package cudaload

import (
	"unsafe"

	"github.com/ebitengine/purego"
)

// DevicePtr is a device memory address (CUdeviceptr).
type DevicePtr uintptr

// MemAlloc allocates bytes of device memory (cuMemAlloc_v2). The memory is
// not initialised; free it with MemFree.
func (c *Context) MemAlloc(bytes uint64) (DevicePtr, error) {
	if err := c.usable("MemAlloc"); err != nil {
		return 0, err
	}
	if bytes == 0 {
		return 0, argError("MemAlloc", "zero bytes")
	}
	if err := c.enter("MemAlloc"); err != nil {
		return 0, err
	}
	var p uint64
	r, _, _ := purego.SyscallN(c.drv.sym.cuMemAlloc, uintptr(unsafe.Pointer(&p)), uintptr(bytes))
	c.exit()
	if err := check("cuMemAlloc_v2", Result(int32(r))); err != nil {
		return 0, err
	}
	return DevicePtr(p), nil
}

// MemFree frees memory from MemAlloc (cuMemFree_v2). Freeing 0 does
// nothing.
func (c *Context) MemFree(p DevicePtr) error {
	if p == 0 {
		return c.usable("MemFree")
	}
	if err := c.enter("MemFree"); err != nil {
		return err
	}
	r := call(c.drv.sym.cuMemFree, uintptr(p))
	c.exit()
	return check("cuMemFree_v2", r)
}

// MemGetInfo returns the free and total device memory of the context's
// device, in bytes (cuMemGetInfo_v2). Free memory is what the driver could
// hand out at this moment: other contexts and processes change it, so it
// is a hint for sizing, not a promise that an allocation will succeed.
func (c *Context) MemGetInfo() (free, total uint64, err error) {
	if err := c.enter("MemGetInfo"); err != nil {
		return 0, 0, err
	}
	var f, t uint64 // size_t: 64 bits on every platform the package runs on
	r, _, _ := purego.SyscallN(c.drv.sym.cuMemGetInfo, uintptr(unsafe.Pointer(&f)), uintptr(unsafe.Pointer(&t)))
	c.exit()
	if err := check("cuMemGetInfo_v2", Result(int32(r))); err != nil {
		return 0, 0, err
	}
	return f, t, nil
}

// MemcpyHtoD copies bytes from host memory at src to dst (cuMemcpyHtoD_v2)
// and waits until they have landed in device memory, so that work queued
// next on any stream sees them.
func (c *Context) MemcpyHtoD(dst DevicePtr, src unsafe.Pointer, bytes uint64) error {
	if bytes == 0 {
		return c.usable("MemcpyHtoD")
	}
	if src == nil {
		return argError("MemcpyHtoD", "nil source")
	}
	if err := c.enter("MemcpyHtoD"); err != nil {
		return err
	}
	r, _, _ := purego.SyscallN(c.drv.sym.cuMemcpyHtoD, uintptr(dst), uintptr(src), uintptr(bytes))
	err := c.landed("cuMemcpyHtoD_v2", Result(int32(r)))
	c.exit()
	return err
}

// MemcpyDtoH copies bytes from src to host memory at dst and waits for the
// copy (cuMemcpyDtoH_v2).
func (c *Context) MemcpyDtoH(dst unsafe.Pointer, src DevicePtr, bytes uint64) error {
	if bytes == 0 {
		return c.usable("MemcpyDtoH")
	}
	if dst == nil {
		return argError("MemcpyDtoH", "nil destination")
	}
	if err := c.enter("MemcpyDtoH"); err != nil {
		return err
	}
	r, _, _ := purego.SyscallN(c.drv.sym.cuMemcpyDtoH, uintptr(dst), uintptr(src), uintptr(bytes))
	c.exit()
	return check("cuMemcpyDtoH_v2", Result(int32(r)))
}

// MemcpyDtoD copies bytes between device buffers (cuMemcpyDtoD_v2) and waits
// until the copy has finished.
func (c *Context) MemcpyDtoD(dst, src DevicePtr, bytes uint64) error {
	if bytes == 0 {
		return c.usable("MemcpyDtoD")
	}
	if err := c.enter("MemcpyDtoD"); err != nil {
		return err
	}
	r := call(c.drv.sym.cuMemcpyDtoD, uintptr(dst), uintptr(src), uintptr(bytes))
	err := c.landed("cuMemcpyDtoD_v2", r)
	c.exit()
	return err
}

// streamLegacy is CU_STREAM_LEGACY, the legacy default stream.
const streamLegacy = 1

// landed finishes a synchronous copy or memset that returned r: it waits
// until the legacy default stream, where the driver runs them, has drained.
// The driver may return from these before device memory is written (from
// pageable memory, device to device, memsets), and nothing orders this
// package's streams, which are non-blocking, after the legacy stream: a
// kernel launched next on a Stream could otherwise read the old bytes.
// The context must be bound.
func (c *Context) landed(op string, r Result) error {
	if err := check(op, r); err != nil {
		return err
	}
	return check("cuStreamSynchronize", call(c.drv.sym.cuStreamSynchronize, streamLegacy))
}

// MemsetD8 sets n bytes at p to v (cuMemsetD8_v2) and waits until they are
// written.
func (c *Context) MemsetD8(p DevicePtr, v uint8, n uint64) error {
	if n == 0 {
		return c.usable("MemsetD8")
	}
	if err := c.enter("MemsetD8"); err != nil {
		return err
	}
	r := call(c.drv.sym.cuMemsetD8, uintptr(p), uintptr(v), uintptr(n))
	err := c.landed("cuMemsetD8_v2", r)
	c.exit()
	return err
}

// MemsetD32 sets n 32-bit words at p (which must be 4-byte aligned) to v
// (cuMemsetD32_v2) and waits until they are written.
func (c *Context) MemsetD32(p DevicePtr, v uint32, n uint64) error {
	if n == 0 {
		return c.usable("MemsetD32")
	}
	if err := c.enter("MemsetD32"); err != nil {
		return err
	}
	r := call(c.drv.sym.cuMemsetD32, uintptr(p), uintptr(v), uintptr(n))
	err := c.landed("cuMemsetD32_v2", r)
	c.exit()
	return err
}

// CopyToDevice copies the elements of src to dst and waits for the copy.
// T should be plain data (numbers, arrays and structs of numbers): the
// bytes are copied as they lie in memory.
func CopyToDevice[T any](c *Context, dst DevicePtr, src []T) error {
	if len(src) == 0 {
		return nil
	}
	bytes := uint64(len(src)) * uint64(unsafe.Sizeof(src[0]))
	return c.MemcpyHtoD(dst, unsafe.Pointer(unsafe.SliceData(src)), bytes)
}

// CopyFromDevice fills dst with len(dst) elements read from src and waits
// for the copy. T should be plain data, as for CopyToDevice.
func CopyFromDevice[T any](c *Context, dst []T, src DevicePtr) error {
	if len(dst) == 0 {
		return nil
	}
	bytes := uint64(len(dst)) * uint64(unsafe.Sizeof(dst[0]))
	return c.MemcpyDtoH(unsafe.Pointer(unsafe.SliceData(dst)), src, bytes)
}
