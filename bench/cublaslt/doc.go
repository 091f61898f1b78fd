// Package cublaslt binds the few entry points of NVIDIA's cuBLASLt that the
// bench needs to time fused GEMM epilogues (bias, GELU, ReLU, their aux
// outputs and the bias-gradient reductions) and fp8 products beside the
// engine: handle life cycle, matmul, matrix-layout and preference
// descriptors, the heuristic's algorithm choice, cublasLtMatmul and the
// library version. The library is
// loaded at run time with purego, so the bench builds with CGO_ENABLED=0
// and runs where no cuBLASLt is installed (Open then returns an error
// listing every place it looked).
//
// # Finding the library
//
// Open tries, in order: the path given by WithLibraryPath, else the one in
// the environment variable DETGEMM_LIBCUBLASLT (exclusively: an override
// that does not load is an error); without an override, the sonames
// libcublasLt.so.13, .so.12 and .so.11 through the system loader, then the
// same folders the cuBLAS binding searches (cublas.SearchDirs: the
// toolkits of CUDA_PATH, CUDA_HOME, /usr/local/cuda, /usr/local/cuda-X.Y
// and /opt/cuda, conda, and the nvidia-* Python wheels), where cuBLASLt
// ships beside cuBLAS. On Windows the names are cublasLt64_13.dll, _12 and
// _11. Candidates shows the list. When nothing loads, the error matches
// ErrNotFound (this package's own sentinel; cuBLAS's does not match it).
//
// # Row-major products
//
// cuBLASLt describes matrices column-major. A row-major D[M,N] = A[M,K]·B[K,N]
// is the column-major product Dᵀ = Bᵀ·Aᵀ over the same memory, so Matmul
// hands cuBLASLt m=N, n=M, k=K with the operands swapped and every layout
// in CUBLASLT_ORDER_COL. The swap is chosen over CUBLASLT_ORDER_ROW
// because column order is the layout every algorithm and epilogue accepts,
// and it is the one the cuBLAS rows of the bench use, so the two are timed
// on the same problem. A consequence: cuBLASLt's bias runs along its rows,
// which are D's columns in the row-major view: bias has N elements and
// bias[j] is added to every D[i,j]; the bias gradients of DGELU_BGRAD and
// DRELU_BGRAD likewise have N elements (sums over D's M rows). The aux
// matrix is row-major [M, N] with row stride AuxLD. Transposed operands
// (TransA, TransB) and padded rows (LDA, LDB, LDD) follow the same view:
// our TransB is cuBLASLt's CUBLASLT_MATMUL_DESC_TRANSA and our TransA its
// TRANSB.
//
// # fp8 products
//
// With In = R8FE4M3, Matmul runs cuBLASLt's fp8 product (CUBLAS_COMPUTE_32F,
// f32 scale type, alpha 1, beta 0, output R16BF, R16F or R32F). cuBLASLt's
// fp8 kernels take only the "TN" form: CUBLASLT_MATMUL_DESC_TRANSA =
// CUBLAS_OP_T and TRANSB = CUBLAS_OP_N, both operands K-major. Through the
// swap above, that is exactly the row-major D[M,N] = A[M,K]·B[N,K]ᵀ with A
// stored M×K and B stored N×K (TransB), the layout detgemm's fp8 product
// takes: cuBLASLt's A is our B, seen column-major as K×N (ld K) and
// transposed to its m×k = N×K; its B is our A, seen column-major as K×M
// (ld K), not transposed; its D is N×M column-major (ld N), our row-major
// D. Any other layout is refused before cuBLASLt is called. The per-tensor
// scales (MatmulArgs.ScaleA, ScaleB: device pointers to one f32) go to
// CUBLASLT_MATMUL_DESC_B_SCALE_POINTER and A_SCALE_POINTER respectively
// (swapped with the operands), and MatmulArgs.FastAccum sets
// CUBLASLT_MATMUL_DESC_FAST_ACCUM.
//
// # Threads and contexts
//
// cuBLASLt works in the CUDA context current on the calling OS thread.
// Callers must lock the OS thread and make their context current before
// creating a handle and for every call on it. A Handle is not safe for
// concurrent use.
package cublaslt
