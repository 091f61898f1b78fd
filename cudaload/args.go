package cudaload

import (
	"fmt"
	"math"
	"runtime"
	"unsafe"
)

const (
	// MaxParamBytes is the most kernel parameter bytes an Args holds: the
	// limit of CUDA 12.1+ on Volta and newer GPUs. Older drivers allow
	// 4096 and refuse larger launches themselves.
	MaxParamBytes = 32764

	// argsBaseAlign is the alignment of the packed block's first byte, the
	// largest alignment Bytes accepts (a CUtensorMap needs 64).
	argsBaseAlign = 64

	ptrSize = int(unsafe.Sizeof(uintptr(0)))
)

// Args is a reusable block of kernel arguments, packed as the kernel's
// parameter list lays them out: each value at its real size and natural
// alignment (a Ptr is 8 bytes aligned to 8, an Int32 4 bytes aligned to 4,
// a by-value struct its own size and alignment). Launch hands the driver a
// table of pointers into the block; nothing is allocated per launch once
// the block has grown to its working size, so keep one Args per call site
// (or per goroutine) and Reset it before packing the next launch.
//
// The zero value is ready to use. An Args must not be used by two
// goroutines at once, nor copied after first use. The driver copies the
// values during Launch, so the Args may be reset and repacked as soon as
// Launch returns.
//
// Packing methods chain; a bad argument (an alignment that is not a power
// of two, a block past MaxParamBytes) is remembered and returned by Launch
// and Err, so a chain needs one check.
type Args struct {
	buf   []byte   // values from buf[start], then Launch's pointer table
	start int      // index of the argsBaseAlign-aligned first value byte
	size  int      // bytes of packed values
	offs  []uint32 // each parameter's offset from buf[start]
	err   error
	pin   runtime.Pinner
}

// Reset empties the block, keeping its storage, and clears a remembered
// error.
func (a *Args) Reset() *Args {
	a.size = 0
	a.offs = a.offs[:0]
	a.err = nil
	return a
}

// Len is the number of parameters packed.
func (a *Args) Len() int { return len(a.offs) }

// Size is the number of bytes the packed parameters span, padding included.
func (a *Args) Size() int { return a.size }

// Err is the first packing error since the last Reset.
func (a *Args) Err() error { return a.err }

// Ptr packs a device pointer (8 bytes).
func (a *Args) Ptr(p DevicePtr) *Args { return a.Uint64(uint64(p)) }

// Int32 packs an int (4 bytes).
func (a *Args) Int32(v int32) *Args { return a.Uint32(uint32(v)) }

// Uint32 packs an unsigned int (4 bytes).
func (a *Args) Uint32(v uint32) *Args {
	if i := a.slot(4, 4); i >= 0 {
		*(*uint32)(unsafe.Pointer(&a.buf[i])) = v
	}
	return a
}

// Int64 packs a long long (8 bytes).
func (a *Args) Int64(v int64) *Args { return a.Uint64(uint64(v)) }

// Uint64 packs an unsigned long long or size_t (8 bytes).
func (a *Args) Uint64(v uint64) *Args {
	if i := a.slot(8, 8); i >= 0 {
		*(*uint64)(unsafe.Pointer(&a.buf[i])) = v
	}
	return a
}

// Float32 packs a float (4 bytes).
func (a *Args) Float32(v float32) *Args { return a.Uint32(math.Float32bits(v)) }

// Float64 packs a double (8 bytes).
func (a *Args) Float64(v float64) *Args { return a.Uint64(math.Float64bits(v)) }

// Bytes packs a by-value struct: len(b) bytes at the given alignment (a
// power of two, at most 64), e.g. a TensorMap with Bytes(tm[:], 64). The
// bytes are copied.
func (a *Args) Bytes(b []byte, align int) *Args {
	if a.err != nil {
		return a
	}
	if len(b) == 0 {
		a.err = argError("Args.Bytes", "empty value (parameter %d)", len(a.offs))
		return a
	}
	if align <= 0 || align > argsBaseAlign || align&(align-1) != 0 {
		a.err = argError("Args.Bytes", "alignment %d is not a power of two in [1, %d] (parameter %d)", align, argsBaseAlign, len(a.offs))
		return a
	}
	if i := a.slot(len(b), align); i >= 0 {
		copy(a.buf[i:i+len(b)], b)
	}
	return a
}

// slot reserves size bytes at the next offset aligned to align and returns
// their index in buf, or -1 after an error.
func (a *Args) slot(size, align int) int {
	if a.err != nil {
		return -1
	}
	off := alignUp(a.size, align)
	end := off + size
	if end > MaxParamBytes {
		a.err = argError("Args", "parameter %d ends at byte %d, past the %d-byte limit", len(a.offs), end, MaxParamBytes)
		return -1
	}
	a.reserve(end)
	clear(a.buf[a.start+a.size : a.start+off]) // padding is zero, not stale
	a.offs = append(a.offs, uint32(off))
	a.size = end
	return a.start + off
}

// reserve makes buf hold at least n bytes from start, moving the packed
// values to new storage (with its own aligned start) when it must grow.
func (a *Args) reserve(n int) {
	if a.buf != nil && a.start+n <= len(a.buf) {
		return
	}
	capacity := max(256, 2*(len(a.buf)-a.start), n)
	nb := make([]byte, capacity+argsBaseAlign)
	ns := int(alignPad(uintptr(unsafe.Pointer(&nb[0])), argsBaseAlign))
	if a.buf != nil {
		copy(nb[ns:], a.buf[a.start:a.start+a.size])
	}
	a.buf, a.start = nb, ns
}

// prepare writes the pointer table (one pointer per parameter, into the
// packed values) after the values, pins the block for the driver call and
// returns the table's address: cuLaunchKernel's void** kernelParams. A
// block with no parameters gives 0 (NULL). release must follow the call.
func (a *Args) prepare() (uintptr, error) {
	if a.err != nil {
		return 0, a.err
	}
	n := len(a.offs)
	if n == 0 {
		return 0, nil
	}
	tab := alignUp(a.size, ptrSize)
	a.reserve(tab + n*ptrSize)
	base := uintptr(unsafe.Pointer(&a.buf[a.start]))
	for i, off := range a.offs {
		*(*uintptr)(unsafe.Pointer(&a.buf[a.start+tab+i*ptrSize])) = base + uintptr(off)
	}
	// The table holds addresses as integers, so the garbage collector
	// would not keep the block in place for their sake; pinning does, for
	// the duration of the call, as cgo's rules ask.
	a.pin.Pin(&a.buf[0])
	return base + uintptr(tab), nil
}

// release unpins what prepare pinned.
func (a *Args) release() { a.pin.Unpin() }

// String describes the packed layout, for debugging: "Args{4 params, 200 bytes: 0 8 16 64}".
func (a *Args) String() string {
	return fmt.Sprintf("Args{%d params, %d bytes: offsets %v}", len(a.offs), a.size, a.offs)
}

func alignUp(n, align int) int { return (n + align - 1) &^ (align - 1) }

// alignPad is the number of bytes from addr to the next multiple of align.
func alignPad(addr uintptr, align uintptr) uintptr { return (align - addr%align) % align }
