package cusparselt

import (
	"errors"
	"fmt"
	"math"
	"unsafe"
)

// opaqueSize is the bytes given to each of cuSPARSELt's opaque structs:
// more than any release has declared (11024 in 0.4, 1024 in 0.6, 512 in
// 0.8).
const opaqueSize = 16 << 10

// opaque is one such struct: a Go buffer 15 bytes longer, whose first
// 16-byte aligned address is handed to the library (it asks for that
// alignment). The buffer is referenced by the value that owns the struct,
// so it stays alive; the Go heap does not move it.
type opaque struct{ buf []byte }

func newOpaque() *opaque { return &opaque{buf: make([]byte, opaqueSize+15)} }

func (o *opaque) ptr() uintptr { return (uintptr(unsafe.Pointer(&o.buf[0])) + 15) &^ 15 }

// DataType is cudaDataType_t, for the element types the bench uses.
type DataType int32

// The element types.
const (
	R16F  DataType = 2  // CUDA_R_16F
	R16BF DataType = 14 // CUDA_R_16BF
)

// Enumerations from cusparse.h and cusparseLt.h (0.7 and newer).
const (
	orderCol         = 1 // CUSPARSE_ORDER_COL
	opNonTranspose   = 0 // CUSPARSE_OPERATION_NON_TRANSPOSE
	opTranspose      = 1 // CUSPARSE_OPERATION_TRANSPOSE
	sparsity50       = 0 // CUSPARSELT_SPARSITY_50_PERCENT
	compute32F       = 2 // CUSPARSE_COMPUTE_32F
	algDefault       = 0 // CUSPARSELT_MATMUL_ALG_DEFAULT
	pruneStrip       = 1 // CUSPARSELT_PRUNE_SPMMA_STRIP: 2 of every 4 along a row of op(A)
	alignment        = 16
	maxDim           = math.MaxInt32
	errInvalidPrefix = "cusparselt: "
)

// ErrClosed is returned by calls on a destroyed Handle or Plan.
var ErrClosed = errors.New("cusparselt: closed")

// Handle is a cusparseLtHandle_t.
type Handle struct {
	lib *Library
	h   *opaque
}

// Init makes a handle in the CUDA context current on the calling thread
// (cusparseLtInit).
func (l *Library) Init() (*Handle, error) {
	h := newOpaque()
	if err := l.call("cusparseLtInit", h.ptr()); err != nil {
		return nil, err
	}
	return &Handle{lib: l, h: h}, nil
}

// Version is cusparseLtGetVersion: major·1000 + minor·100 + patch.
func (h *Handle) Version() (int, error) {
	if h.h == nil {
		return 0, ErrClosed
	}
	var v int32
	err := h.lib.call("cusparseLtGetVersion", h.h.ptr(), uintptr(unsafe.Pointer(&v)))
	return int(v), err
}

// FormatVersion writes a version code as major.minor.patch.
func FormatVersion(v int) string { return fmt.Sprintf("%d.%d.%d", v/1000, v%1000/100, v%100) }

// Destroy releases the handle (its plans must be destroyed first); a
// second call is a no-op.
func (h *Handle) Destroy() error {
	if h == nil || h.h == nil {
		return nil
	}
	err := h.lib.call("cusparseLtDestroy", h.h.ptr())
	h.h = nil
	return err
}

// Plan is one row-major sparse product Y[M,N] = X[M,K]·W[K,N] with W
// 2:4-sparse along K, in cuSPARSELt's terms the column-major
// Yᵀ[N,M] = op(A)·Xᵀ with A the structured matrix: A is stored K×N
// column-major (ld K), op(A) = Aᵀ, N×K, so each of A's N columns of K
// elements is one row of op(A) along which 2:4 holds — the "TN" layout,
// cuSPARSELt's fastest for a sparse A. The dense weight a caller prunes
// and compresses is read as that A: N blocks of K contiguous elements,
// that is Wᵀ stored row-major. X is read as the column-major K×M matrix
// Xᵀ (opB none), Y written as the column-major N×M matrix Yᵀ; output in
// the input type, f32 accumulation (CUSPARSE_COMPUTE_32F), alpha 1, beta
// 0, the default algorithm.
type Plan struct {
	h                *Handle
	matA, matB, matC *opaque
	mm, alg, plan    *opaque
	// Workspace, CompressedBytes and CompressBufferBytes are the sizes the
	// plan asks for.
	Workspace, CompressedBytes, CompressBufferBytes uint64
	scal                                            *[2]float32 // alpha, beta: read through host pointers
	stream                                          *uintptr    // the one stream cusparseLtMatmul takes by pointer
	descs                                           int         // descriptors made, for Destroy
	planned                                         bool
}

// NewPlan makes the plan of a product of element type dt (R16BF or R16F).
func (h *Handle) NewPlan(dt DataType, M, K, N int) (_ *Plan, err error) {
	if h.h == nil {
		return nil, ErrClosed
	}
	if dt != R16BF && dt != R16F {
		return nil, fmt.Errorf("%selement type %d: want R16BF or R16F", errInvalidPrefix, dt)
	}
	if M < 1 || K < 1 || N < 1 || M > maxDim || K > maxDim || N > maxDim {
		return nil, fmt.Errorf("%sM %d, K %d, N %d: each must be in 1..%d", errInvalidPrefix, M, K, N, maxDim)
	}
	p := &Plan{h: h, matA: newOpaque(), matB: newOpaque(), matC: newOpaque(), mm: newOpaque(), alg: newOpaque(), plan: newOpaque(),
		scal: &[2]float32{1, 0}, stream: new(uintptr)}
	defer func() {
		if err != nil {
			err = errors.Join(err, p.Destroy())
		}
	}()
	l, hp := h.lib, h.h.ptr()
	m, k, n := uintptr(M), uintptr(K), uintptr(N)
	if err := l.call("cusparseLtStructuredDescriptorInit", hp, p.matA.ptr(), k, n, k, alignment, uintptr(dt), orderCol, sparsity50); err != nil {
		return nil, err
	}
	p.descs++
	if err := l.call("cusparseLtDenseDescriptorInit", hp, p.matB.ptr(), k, m, k, alignment, uintptr(dt), orderCol); err != nil {
		return nil, err
	}
	p.descs++
	if err := l.call("cusparseLtDenseDescriptorInit", hp, p.matC.ptr(), n, m, n, alignment, uintptr(dt), orderCol); err != nil {
		return nil, err
	}
	p.descs++
	if err := l.call("cusparseLtMatmulDescriptorInit", hp, p.mm.ptr(), opTranspose, opNonTranspose,
		p.matA.ptr(), p.matB.ptr(), p.matC.ptr(), p.matC.ptr(), compute32F); err != nil {
		return nil, err
	}
	if err := l.call("cusparseLtMatmulAlgSelectionInit", hp, p.alg.ptr(), p.mm.ptr(), algDefault); err != nil {
		return nil, err
	}
	if err := l.call("cusparseLtMatmulPlanInit", hp, p.plan.ptr(), p.mm.ptr(), p.alg.ptr()); err != nil {
		return nil, err
	}
	p.planned = true
	var ws, cs, cb uint64
	if err := l.call("cusparseLtMatmulGetWorkspace", hp, p.plan.ptr(), uintptr(unsafe.Pointer(&ws))); err != nil {
		return nil, err
	}
	if err := l.call("cusparseLtSpMMACompressedSize", hp, p.plan.ptr(), uintptr(unsafe.Pointer(&cs)), uintptr(unsafe.Pointer(&cb))); err != nil {
		return nil, err
	}
	p.Workspace, p.CompressedBytes, p.CompressBufferBytes = ws, cs, cb
	return p, nil
}

// Prune writes the dense weight in (the plan's A, K·N elements) pruned to
// 2:4 to out (in may be out), on stream (cusparseLtSpMMAPrune, the strip
// rule: the two largest magnitudes of every 4).
func (p *Plan) Prune(in, out, stream uintptr) error {
	if !p.planned {
		return ErrClosed
	}
	return p.h.lib.call("cusparseLtSpMMAPrune", p.h.h.ptr(), p.mm.ptr(), in, out, pruneStrip, stream)
}

// Compress writes the pruned weight dense (K·N elements) in cuSPARSELt's
// compressed form to compressed (CompressedBytes), using buffer
// (CompressBufferBytes), on stream.
func (p *Plan) Compress(dense, compressed, buffer, stream uintptr) error {
	if !p.planned {
		return ErrClosed
	}
	return p.h.lib.call("cusparseLtSpMMACompress", p.h.h.ptr(), p.plan.ptr(), dense, compressed, buffer, stream)
}

// Matmul enqueues Y = X·W on stream, W the compressed weight, with
// workspace (Workspace bytes; 0 when none is asked for).
func (p *Plan) Matmul(compressed, x, y, workspace, stream uintptr) error {
	if !p.planned {
		return ErrClosed
	}
	*p.stream = stream
	return p.h.lib.call("cusparseLtMatmul", p.h.h.ptr(), p.plan.ptr(),
		uintptr(unsafe.Pointer(&p.scal[0])), compressed, x, uintptr(unsafe.Pointer(&p.scal[1])), y, y,
		workspace, uintptr(unsafe.Pointer(p.stream)), 1)
}

// Destroy releases the plan and its descriptors; a second call is a
// no-op.
func (p *Plan) Destroy() error {
	if p == nil || p.h == nil {
		return nil
	}
	var errs []error
	if p.planned {
		errs = append(errs, p.h.lib.call("cusparseLtMatmulPlanDestroy", p.plan.ptr()))
		p.planned = false
	}
	for _, d := range []*opaque{p.matA, p.matB, p.matC}[:p.descs] {
		errs = append(errs, p.h.lib.call("cusparseLtMatDescriptorDestroy", d.ptr()))
	}
	p.descs, p.h = 0, nil
	return errors.Join(errs...)
}
