package cublas

import (
	"fmt"
	"math"
	"unsafe"

	"github.com/ebitengine/purego"
)

// DataType is a cudaDataType_t.
type DataType int32

// The element types the bench uses.
const (
	R32F  DataType = 0  // CUDA_R_32F, float
	R16F  DataType = 2  // CUDA_R_16F, IEEE half
	R16BF DataType = 14 // CUDA_R_16BF, bfloat16
)

// ComputeType is a cublasComputeType_t: the accumulation type and which
// shortcuts it allows.
type ComputeType int32

// The f32-accumulating compute types.
const (
	Compute32F         ComputeType = 68 // CUBLAS_COMPUTE_32F
	Compute32FPedantic ComputeType = 69 // CUBLAS_COMPUTE_32F_PEDANTIC: no reduced precision anywhere
	Compute32FFastTF32 ComputeType = 77 // CUBLAS_COMPUTE_32F_FAST_TF32: f32 inputs rounded to TF32 for tensor cores
)

// Operation is a cublasOperation_t.
type Operation int32

// The transpose operations.
const (
	OpN Operation = 0 // CUBLAS_OP_N: as stored
	OpT Operation = 1 // CUBLAS_OP_T: transposed
)

// GemmAlgo is a cublasGemmAlgo_t.
type GemmAlgo int32

// GemmDefault lets cuBLAS's heuristics choose (CUBLAS_GEMM_DEFAULT).
const GemmDefault GemmAlgo = -1

// GemmEx is cublasGemmEx on column-major matrices:
// C[m,n] = alpha·op(A)[m,k]·op(B)[k,n] + beta·C, with device pointers a, b,
// c and leading dimensions in elements. alpha and beta are passed by host
// pointer (the default pointer mode) as float32, as every f32-accumulating
// compute type expects. The call is asynchronous on the handle's stream.
func (h *Handle) GemmEx(transA, transB Operation, m, n, k int, alpha float32,
	a uintptr, aType DataType, lda int,
	b uintptr, bType DataType, ldb int,
	beta float32, c uintptr, cType DataType, ldc int,
	compute ComputeType, algo GemmAlgo) error {
	if h.h == 0 {
		return ErrClosed
	}
	for _, d := range [...]struct {
		name string
		v    int
	}{{"m", m}, {"n", n}, {"k", k}, {"lda", lda}, {"ldb", ldb}, {"ldc", ldc}} {
		if d.v < 0 || d.v > math.MaxInt32 {
			return fmt.Errorf("cublasGemmEx: %s=%d outside a C int: %w", d.name, d.v, StatusInvalidValue)
		}
	}
	h.scal[0], h.scal[1] = alpha, beta
	r, _, _ := purego.SyscallN(h.lib.gemmEx, h.h,
		uintptr(transA), uintptr(transB),
		uintptr(m), uintptr(n), uintptr(k),
		uintptr(unsafe.Pointer(&h.scal[0])),
		a, uintptr(aType), uintptr(lda),
		b, uintptr(bType), uintptr(ldb),
		uintptr(unsafe.Pointer(&h.scal[1])),
		c, uintptr(cType), uintptr(ldc),
		uintptr(compute), uintptr(algo))
	return Check("cublasGemmEx", r)
}

// RowMajorGemm computes C[M,N] = A[M,K]·B[K,N] (alpha 1, beta 0) for dense
// row-major matrices of one element type, by the operand swap described in
// the package documentation.
func (h *Handle) RowMajorGemm(m, k, n int, a, b, c uintptr, dt DataType, compute ComputeType, algo GemmAlgo) error {
	return h.GemmEx(OpN, OpN, n, m, k, 1, b, dt, n, a, dt, k, 0, c, dt, n, compute, algo)
}
