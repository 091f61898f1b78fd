package cudaload

import (
	"unsafe"
)

// TensorMap is an encoded TMA descriptor (CUtensorMap): 128 opaque bytes.
// A kernel takes it by value as a 64-byte-aligned parameter
// (const __grid_constant__ CUtensorMap); pack it with Args.TensorMap.
type TensorMap [128]byte

// TensorMap packs a tensor map by value (128 bytes, 64-byte aligned).
func (a *Args) TensorMap(t *TensorMap) *Args { return a.Bytes(t[:], 64) }

// TensorMapDataType is a CUtensorMapDataType: the element type TMA moves.
type TensorMapDataType int

// Element types (the driver's values).
const (
	TensorMapUint8       TensorMapDataType = 0
	TensorMapUint16      TensorMapDataType = 1
	TensorMapUint32      TensorMapDataType = 2
	TensorMapInt32       TensorMapDataType = 3
	TensorMapUint64      TensorMapDataType = 4
	TensorMapInt64       TensorMapDataType = 5
	TensorMapFloat16     TensorMapDataType = 6
	TensorMapFloat32     TensorMapDataType = 7
	TensorMapFloat64     TensorMapDataType = 8
	TensorMapBFloat16    TensorMapDataType = 9
	TensorMapFloat32FTZ  TensorMapDataType = 10
	TensorMapTFloat32    TensorMapDataType = 11
	TensorMapTFloat32FTZ TensorMapDataType = 12
	// 13..15 are CUDA 12.8's packed sub-byte types; they are passed
	// through, with the element-size checks left to the driver.
	tensorMapMaxDataType TensorMapDataType = 15
)

// ElementSize is the size in bytes of one element, 0 for the packed
// sub-byte types.
func (t TensorMapDataType) ElementSize() int {
	switch t {
	case TensorMapUint8:
		return 1
	case TensorMapUint16, TensorMapFloat16, TensorMapBFloat16:
		return 2
	case TensorMapUint32, TensorMapInt32, TensorMapFloat32, TensorMapFloat32FTZ, TensorMapTFloat32, TensorMapTFloat32FTZ:
		return 4
	case TensorMapUint64, TensorMapInt64, TensorMapFloat64:
		return 8
	}
	return 0
}

// Values for EncodeTiled's interleave, swizzle, l2promo and oobFill
// arguments (the driver's enums).
const (
	TensorMapInterleaveNone = 0
	TensorMapInterleave16B  = 1
	TensorMapInterleave32B  = 2

	TensorMapSwizzleNone = 0
	TensorMapSwizzle32B  = 1
	TensorMapSwizzle64B  = 2
	TensorMapSwizzle128B = 3
	// 4..6 are CUDA 12.8's 128B swizzle atoms, passed through.
	tensorMapMaxSwizzle = 6

	TensorMapL2PromotionNone = 0
	TensorMapL2Promotion64B  = 1
	TensorMapL2Promotion128B = 2
	TensorMapL2Promotion256B = 3

	TensorMapOOBFillNone              = 0
	TensorMapOOBFillNaNRequestZeroFMA = 1
)

// Limits of cuTensorMapEncodeTiled (CUDA driver API reference).
const (
	tensorMapMaxRank      = 5
	tensorMapMaxDim       = 1 << 32
	tensorMapMaxStride    = 1 << 40
	tensorMapMaxBox       = 256
	tensorMapMaxElemStr   = 8
	tensorMapStrideAlign  = 16
	tensorMapAddressAlign = 16
)

// EncodeTiled encodes a tiled TMA descriptor (cuTensorMapEncodeTiled) for
// a rank-dimensional tensor at base. dims are the sizes in elements,
// innermost first; stridesBytes are the byte strides of dimensions 1 to
// rank-1 (rank-1 values: the innermost stride is the element size); box is
// the tile moved per copy, in elements; elemStrides the per-dimension
// element steps (1 for dense). interleave, swizzle, l2promo and oobFill take
// the TensorMapInterleave*, TensorMapSwizzle*, TensorMapL2Promotion* and
// TensorMapOOBFill* values.
//
// The documented limits are checked here first, with an *ArgumentError
// naming the offending value (matching ErrInvalidArgument and
// ErrInvalidValue); the driver checks the rest. The entry point is
// resolved on first use: a driver older than CUDA 12.0 gives an error
// matching ErrSymbolMissing.
func (c *Context) EncodeTiled(dtype TensorMapDataType, rank int, base DevicePtr, dims []uint64, stridesBytes []uint64, box []uint32, elemStrides []uint32, interleave, swizzle, l2promo, oobFill int) (TensorMap, error) {
	var tm TensorMap
	if err := c.usable("EncodeTiled"); err != nil {
		return tm, err
	}
	if err := validateTiled(dtype, rank, base, dims, stridesBytes, box, elemStrides, interleave, swizzle, l2promo, oobFill); err != nil {
		return tm, err
	}
	// The driver writes the descriptor to 64-byte-aligned memory.
	var scratch tensorMapScratch
	strides := stridesBytes
	if len(strides) == 0 {
		// A rank-1 map has no strides; the driver still gets a valid pointer.
		strides = []uint64{0}
	}
	if err := c.encodeTiled(&tm, &scratch, dtype, rank, base, &dims[0], &strides[0], &box[0], &elemStrides[0], interleave, swizzle, l2promo, oobFill); err != nil {
		return tm, err
	}
	return tm, nil
}

// tensorMapScratch holds one descriptor at a 64-byte-aligned offset.
type tensorMapScratch [len(TensorMap{}) + 64]byte

// encodeTiled calls cuTensorMapEncodeTiled on validated arguments, through
// scratch (the driver's output must be 64-byte aligned), into dst.
func (c *Context) encodeTiled(dst *TensorMap, scratch *tensorMapScratch, dtype TensorMapDataType, rank int, base DevicePtr, dims, strides *uint64, box, elemStrides *uint32, interleave, swizzle, l2promo, oobFill int) error {
	fn, err := c.drv.tensorMapEncoder()
	if err != nil {
		return err
	}
	off := alignPad(uintptr(unsafe.Pointer(&scratch[0])), 64)
	// The encoder needs no context on a bare driver, but under tools that
	// intercept the driver (Nsight Compute) it answers
	// CUDA_ERROR_INVALID_CONTEXT on a thread without one: bind ours, as
	// every other call does.
	if err := c.enter("EncodeTiled"); err != nil {
		return err
	}
	// Through a pooled call frame: purego.SyscallN's variadic slice would
	// otherwise be one allocation per encode. The argument arrays belong to
	// the caller, which holds them for the call.
	r := callKeep(fn, unsafe.Pointer(scratch),
		uintptr(unsafe.Pointer(&scratch[off])),
		uintptr(uint32(dtype)), uintptr(rank), uintptr(base),
		uintptr(unsafe.Pointer(dims)), uintptr(unsafe.Pointer(strides)),
		uintptr(unsafe.Pointer(box)), uintptr(unsafe.Pointer(elemStrides)),
		uintptr(interleave), uintptr(swizzle), uintptr(l2promo), uintptr(oobFill))
	c.exit()
	if err := check(symTensorMapEncodeTiled, r); err != nil {
		return err
	}
	copy(dst[:], scratch[off:off+uintptr(len(dst))])
	return nil
}

// TiledEncoder encodes 2-D and 3-D tiled tensor maps without allocating,
// for code that builds a map per call on a hot path (a GEMM over
// caller-owned pointers). Its scratch space is reused, so one encoder must
// not be used from two goroutines at once.
type TiledEncoder struct {
	ctx     *Context
	scratch tensorMapScratch
	dims    [3]uint64
	strides [2]uint64
	box     [3]uint32
	elem    [3]uint32
}

// NewTiledEncoder returns an encoder bound to c's driver.
func (c *Context) NewTiledEncoder() *TiledEncoder {
	return &TiledEncoder{ctx: c, elem: [3]uint32{1, 1, 1}}
}

// Encode2D encodes into dst the map of a row-major matrix at base with
// outer rows of inner elements, rows pitchBytes apart, moved in boxes of
// boxInner × boxOuter elements; swizzle, l2promo and oobFill take the
// TensorMapSwizzle*, TensorMapL2Promotion* and TensorMapOOBFill* values.
// The checks and errors are EncodeTiled's.
func (e *TiledEncoder) Encode2D(dst *TensorMap, dtype TensorMapDataType, base DevicePtr, inner, outer, pitchBytes uint64, boxInner, boxOuter uint32, swizzle, l2promo, oobFill int) error {
	return e.encode(dst, 2, dtype, base, [3]uint64{inner, outer, 0}, [2]uint64{pitchBytes, 0}, [3]uint32{boxInner, boxOuter, 0}, swizzle, l2promo, oobFill)
}

// Encode3D encodes into dst the map of a 3-D tensor at base: dims
// elements along each axis (dims[0] innermost, contiguous), strides the
// byte distances between neighbours along axes 1 and 2, moved in boxes
// of box elements. The strides need not grow with the axis: a row-major
// matrix with rows pitch bytes apart, read as chunks of c elements (axis
// 0), rows (axis 1) and chunks (axis 2, stride c × element size), copies
// several neighbouring 2-D boxes of one row range in one operation. The
// checks and errors are EncodeTiled's.
func (e *TiledEncoder) Encode3D(dst *TensorMap, dtype TensorMapDataType, base DevicePtr, dims [3]uint64, strides [2]uint64, box [3]uint32, swizzle, l2promo, oobFill int) error {
	return e.encode(dst, 3, dtype, base, dims, strides, box, swizzle, l2promo, oobFill)
}

// encode is Encode2D and Encode3D: the first rank entries of dims and box
// and rank-1 of strides are the map's. The arrays are copied into the
// encoder so that their addresses, which the driver call takes, need no
// allocation.
func (e *TiledEncoder) encode(dst *TensorMap, rank int, dtype TensorMapDataType, base DevicePtr, dims [3]uint64, strides [2]uint64, box [3]uint32, swizzle, l2promo, oobFill int) error {
	if e == nil || e.ctx == nil {
		return &ClosedError{Op: "EncodeTiled", Object: "context"}
	}
	if err := e.ctx.usable("EncodeTiled"); err != nil {
		return err
	}
	if dst == nil {
		return argError("EncodeTiled", "nil destination map")
	}
	e.dims, e.strides, e.box = dims, strides, box
	if err := validateTiled(dtype, rank, base, e.dims[:rank], e.strides[:rank-1], e.box[:rank], e.elem[:rank], TensorMapInterleaveNone, swizzle, l2promo, oobFill); err != nil {
		return err
	}
	return e.ctx.encodeTiled(dst, &e.scratch, dtype, rank, base, &e.dims[0], &e.strides[0], &e.box[0], &e.elem[0], TensorMapInterleaveNone, swizzle, l2promo, oobFill)
}

// tensorMapEncoder resolves cuTensorMapEncodeTiled once.
func (d *Driver) tensorMapEncoder() (uintptr, error) {
	d.tensorMapOnce.Do(func() {
		if d.lib == nil {
			d.tensorMapErr = &SymbolMissingError{Symbol: symTensorMapEncodeTiled, Path: d.path, Version: d.version}
			return
		}
		p, err := d.lib.Lookup(symTensorMapEncodeTiled)
		if err != nil {
			d.tensorMapErr = &SymbolMissingError{Symbol: symTensorMapEncodeTiled, Path: d.path, Version: d.version, Err: err}
			return
		}
		d.tensorMapFn = p
	})
	return d.tensorMapFn, d.tensorMapErr
}

// validateTiled checks cuTensorMapEncodeTiled's documented limits.
func validateTiled(dtype TensorMapDataType, rank int, base DevicePtr, dims, strides []uint64, box, elemStrides []uint32, interleave, swizzle, l2promo, oobFill int) error {
	const op = "EncodeTiled"
	if dtype < 0 || dtype > tensorMapMaxDataType {
		return argError(op, "unknown data type %d", dtype)
	}
	if rank < 1 || rank > tensorMapMaxRank {
		return argError(op, "rank %d is outside [1, %d]", rank, tensorMapMaxRank)
	}
	if interleave < TensorMapInterleaveNone || interleave > TensorMapInterleave32B {
		return argError(op, "unknown interleave %d", interleave)
	}
	if interleave != TensorMapInterleaveNone && rank < 3 {
		return argError(op, "interleaved layouts need rank >= 3, got %d", rank)
	}
	if swizzle < TensorMapSwizzleNone || swizzle > tensorMapMaxSwizzle {
		return argError(op, "unknown swizzle %d", swizzle)
	}
	if l2promo < TensorMapL2PromotionNone || l2promo > TensorMapL2Promotion256B {
		return argError(op, "unknown L2 promotion %d", l2promo)
	}
	if oobFill < TensorMapOOBFillNone || oobFill > TensorMapOOBFillNaNRequestZeroFMA {
		return argError(op, "unknown out-of-bounds fill %d", oobFill)
	}
	if len(dims) != rank || len(box) != rank || len(elemStrides) != rank {
		return argError(op, "rank %d needs %d dims, box sizes and element strides; got %d, %d, %d", rank, rank, len(dims), len(box), len(elemStrides))
	}
	if len(strides) != rank-1 {
		return argError(op, "rank %d needs %d byte strides (the innermost is implicit); got %d", rank, rank-1, len(strides))
	}
	addrAlign := uint64(tensorMapAddressAlign)
	strideAlign := uint64(tensorMapStrideAlign)
	if interleave == TensorMapInterleave32B {
		addrAlign, strideAlign = 32, 32
	}
	if base == 0 {
		return argError(op, "base address is 0")
	}
	if uint64(base)%addrAlign != 0 {
		return argError(op, "base address %#x is not %d-byte aligned", uint64(base), addrAlign)
	}
	for i, d := range dims {
		if d == 0 || d > tensorMapMaxDim {
			return argError(op, "dims[%d] = %d is outside [1, 2^32]", i, d)
		}
	}
	for i, s := range strides {
		if s == 0 || s%strideAlign != 0 || s >= tensorMapMaxStride {
			return argError(op, "stridesBytes[%d] = %d must be a nonzero multiple of %d below 2^40", i, s, strideAlign)
		}
	}
	for i, b := range box {
		if b == 0 || b > tensorMapMaxBox {
			return argError(op, "box[%d] = %d is outside [1, %d]", i, b, tensorMapMaxBox)
		}
	}
	for i, e := range elemStrides {
		if e == 0 || e > tensorMapMaxElemStr {
			return argError(op, "elemStrides[%d] = %d is outside [1, %d]", i, e, tensorMapMaxElemStr)
		}
	}
	if es := dtype.ElementSize(); es > 0 && interleave == TensorMapInterleaveNone {
		inner := uint64(box[0]) * uint64(es)
		if inner%16 != 0 {
			return argError(op, "box[0] = %d elements is %d bytes, not a multiple of 16", box[0], inner)
		}
		if span := swizzleSpan(swizzle); span > 0 && inner > span {
			return argError(op, "box[0] = %d elements is %d bytes, more than the %d-byte swizzle span", box[0], inner, span)
		}
	}
	return nil
}

// swizzleSpan is the inner-box byte limit of a swizzle mode (0: none).
func swizzleSpan(swizzle int) uint64 {
	switch swizzle {
	case TensorMapSwizzle32B:
		return 32
	case TensorMapSwizzle64B:
		return 64
	case TensorMapSwizzle128B:
		return 128
	}
	return 0
}
