package cublas

import (
	"unsafe"

	"github.com/ebitengine/purego"
)

// MathMode is a cublasMath_t: which reduced-precision shortcuts a handle may
// take.
type MathMode int32

// The cublasMath_t values the bench uses.
const (
	// DefaultMath lets cuBLAS pick tensor cores for half-precision inputs;
	// for f32 it stays IEEE unless the compute type asks for TF32.
	DefaultMath MathMode = 0
	// PedanticMath forbids every reduced-precision shortcut.
	PedanticMath MathMode = 2
	// TF32TensorOpMath lets f32 GEMMs run on TF32 tensor cores.
	TF32TensorOpMath MathMode = 3
)

// Handle is a cublasHandle_t. It is not safe for concurrent use.
type Handle struct {
	lib *Library
	h   uintptr
	// scal holds alpha and beta for the call in flight: with the default
	// host pointer mode cuBLAS reads them through pointers before it
	// returns, so they only need to outlive the call, and keeping them here
	// spares an allocation per launch.
	scal *[2]float32
}

// Create makes a handle in the CUDA context current on the calling thread
// (cublasCreate_v2).
func (l *Library) Create() (*Handle, error) {
	var h uintptr
	r, _, _ := purego.SyscallN(l.create, uintptr(unsafe.Pointer(&h)))
	if err := Check("cublasCreate_v2", r); err != nil {
		return nil, err
	}
	return &Handle{lib: l, h: h, scal: new([2]float32)}, nil
}

// Raw is the cublasHandle_t, for callers binding other entry points.
func (h *Handle) Raw() uintptr { return h.h }

// Destroy releases the handle (cublasDestroy_v2); a second call is a no-op.
func (h *Handle) Destroy() error {
	if h == nil || h.h == 0 {
		return nil
	}
	r, _, _ := purego.SyscallN(h.lib.destroy, h.h)
	h.h = 0
	return Check("cublasDestroy_v2", r)
}

// SetStream makes later calls run on stream, a CUstream / cudaStream_t
// handle (0 is the legacy default stream).
func (h *Handle) SetStream(stream uintptr) error {
	if h.h == 0 {
		return ErrClosed
	}
	r, _, _ := purego.SyscallN(h.lib.setStream, h.h, stream)
	return Check("cublasSetStream_v2", r)
}

// SetMathMode sets the handle's math mode (cublasSetMathMode).
func (h *Handle) SetMathMode(m MathMode) error {
	if h.h == 0 {
		return ErrClosed
	}
	r, _, _ := purego.SyscallN(h.lib.setMathMode, h.h, uintptr(m))
	return Check("cublasSetMathMode", r)
}

// Version is cublasGetVersion_v2: major*10000 + minor*100 + patch for
// cuBLAS 11 and later (e.g. 130100 for 13.1.0).
func (h *Handle) Version() (int, error) {
	if h.h == 0 {
		return 0, ErrClosed
	}
	var v int32
	r, _, _ := purego.SyscallN(h.lib.getVersion, h.h, uintptr(unsafe.Pointer(&v)))
	if err := Check("cublasGetVersion_v2", r); err != nil {
		return 0, err
	}
	return int(v), nil
}
