package triad

import (
	"github.com/detgemm/detgemm/cudaload"
	"github.com/detgemm/detgemm/gemm"
)

// DType is an element type: the engine's (and the CPU reference's) type.
type DType = gemm.DType

// The element types.
const (
	F32  = gemm.F32
	BF16 = gemm.BF16
	F16  = gemm.F16
)

// Tensor is a row-major rows×cols matrix owned by one Backend: device
// memory on the GPU, a Go slice on the CPU. Tensors are made by
// Backend.Alloc (zeroed) and freed by Free or by closing the backend. A
// View shares its parent's memory.
type Tensor struct {
	be Backend
	// dtype is the element type; E4M3 or E5M2 for an fp8 layer's internal
	// codes (one byte an element, made by the backends' allocFP8, never
	// handed out).
	dtype      DType
	rows, cols int
	view       bool
	freed      bool
	// mask marks a ReLU mask, one byte per element (gemm.ReluMaskZero,
	// ReluMaskPass, ReluMaskNaN): an MLP's internal aux buffer, made by
	// the backends' allocMask, never handed out; its dtype is 0.
	mask bool
	// words marks 32-bit words (2:4 metadata, ref.Sparse24's layout): a
	// sparse layer's internal buffer, made by the backends' allocWords,
	// never handed out; its dtype is 0.
	words bool

	dev cudaload.DevicePtr // GPU
	f32 []float32          // CPU, F32
	u16 []uint16           // CPU, BF16 and F16 (raw bits)
	u8  []uint8            // CPU, a ReLU mask or fp8 codes
	u32 []uint32           // CPU, words
}

// elemSize is the bytes of one element.
func (t *Tensor) elemSize() int {
	switch {
	case t.mask:
		return 1
	case t.words:
		return 4
	}
	return t.dtype.Size()
}

// DType is the element type.
func (t *Tensor) DType() DType { return t.dtype }

// Rows is the number of rows.
func (t *Tensor) Rows() int { return t.rows }

// Cols is the number of columns: the length of one row of the row-major
// values Read returns (see ExampleTensor_View).
func (t *Tensor) Cols() int { return t.cols }

// Len is Rows·Cols.
func (t *Tensor) Len() int { return t.rows * t.cols }

// Backend is the backend that owns the tensor.
func (t *Tensor) Backend() Backend { return t.be }

// View returns rows [row0, row0+rows) of t, sharing its memory. A view is
// never freed itself; it is valid while t is.
func (t *Tensor) View(row0, rows int) (*Tensor, error) {
	const op = "Tensor.View"
	if t == nil {
		return nil, argErr(op, "t", ErrNilTensor, "nil tensor")
	}
	if t.freed {
		return nil, argErr(op, "t", ErrClosed, "tensor was freed")
	}
	// Compared without row0+rows, which can overflow.
	if row0 < 0 || rows <= 0 || rows > t.rows || row0 > t.rows-rows {
		return nil, argErr(op, "rows", ErrShape, "%d rows from row %d is not a non-empty range of the %d rows", rows, row0, t.rows)
	}
	v := *t
	v.view, v.rows = true, rows
	off := row0 * t.cols
	switch {
	case t.dev != 0:
		v.dev = t.dev + cudaload.DevicePtr(off*t.elemSize())
	case t.f32 != nil:
		v.f32 = t.f32[off : off+rows*t.cols]
	case t.mask || t.dtype.FP8():
		v.u8 = t.u8[off : off+rows*t.cols]
	case t.words:
		v.u32 = t.u32[off : off+rows*t.cols]
	default:
		v.u16 = t.u16[off : off+rows*t.cols]
	}
	return &v, nil
}

// Free releases the tensor's memory. Freeing a view or a freed tensor does
// nothing.
func (t *Tensor) Free() error {
	if t == nil || t.view || t.freed {
		return nil
	}
	t.freed = true
	return t.be.free(t)
}

// check validates an argument of op: present, live, owned by be, of dtype d
// (0: any), with rows (< 0: any) and cols (< 0: any).
func check(op, arg string, be Backend, t *Tensor, d DType, rows, cols int) error {
	if t == nil {
		return argErr(op, arg, ErrNilTensor, "nil tensor")
	}
	if t.freed {
		return argErr(op, arg, ErrClosed, "tensor was freed")
	}
	if t.be != be {
		return argErr(op, arg, ErrBackend, "tensor belongs to the %s backend, not %s", t.be.Name(), be.Name())
	}
	if d != 0 && t.dtype != d {
		return argErr(op, arg, ErrDType, "%v, want %v", t.dtype, d)
	}
	if rows >= 0 && t.rows != rows {
		return argErr(op, arg, ErrShape, "%d×%d, want %d rows", t.rows, t.cols, rows)
	}
	if cols >= 0 && t.cols != cols {
		return argErr(op, arg, ErrShape, "%d×%d, want %d columns", t.rows, t.cols, cols)
	}
	return nil
}

// checkAlloc validates Alloc's arguments.
func checkAlloc(d DType, rows, cols int) error {
	if !d.Valid() {
		return argErr("Alloc", "dtype", ErrDType, "%v is not f32, bf16 or f16", d)
	}
	if rows <= 0 || cols <= 0 || rows > (1<<62)/cols/4 {
		return argErr("Alloc", "shape", ErrShape, "%d×%d is not a valid shape", rows, cols)
	}
	return nil
}
