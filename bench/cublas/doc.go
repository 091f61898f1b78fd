// Package cublas binds the few entry points of NVIDIA's cuBLAS that the bench
// compares the engine against: handle life cycle, stream and math mode, the
// library version and cublasGemmEx. The library is loaded at run time with
// purego, so the bench builds with CGO_ENABLED=0 and runs where no cuBLAS is
// installed (Open then returns an error listing every place it looked).
//
// # Finding the library
//
// Open tries, in order: the path given by WithLibraryPath, else the one in the
// environment variable DETGEMM_LIBCUBLAS (exclusively: an override that does
// not load is an error, not a hint); without an override, the sonames
// libcublas.so.13, .so.12 and .so.11 through the system loader, then the
// toolkits (lib64 and targets/<arch>-linux/lib) of CUDA_PATH, CUDA_HOME,
// /usr/local/cuda, the versioned /usr/local/cuda-X.Y (newest first) and
// /opt/cuda, and the nvidia-* Python wheels (nvidia/cu13/lib,
// nvidia/cublas/lib). On Windows the names are cublas64_13.dll, _12 and _11
// under CUDA_PATH\bin and CUDA_PATH\bin\x64. Before a candidate is opened by
// absolute path, its sibling cuBLASLt is opened from the same directory, so
// the dependency resolves even when that directory is not on the loader's
// path. Candidates shows the list.
//
// When nothing loads, the error matches ErrNotFound (cuBLAS's own sentinel:
// a missing driver or NVRTC does not match it) and lists every candidate
// with its reason, the folders skipped because they are not present, and
// where cuBLAS comes from. On macOS, which CUDA no longer supports, Open
// makes no search and says so.
//
// # Row-major GEMM
//
// cuBLAS is column-major. A row-major C[M,N] = A[M,K]·B[K,N] is the
// column-major product Cᵀ = Bᵀ·Aᵀ over the same memory, so RowMajorGemm calls
// cublasGemmEx with m=N, n=M, k=K and the operands swapped (lda=N, ldb=K,
// ldc=N); no data moves.
//
// # Threads and contexts
//
// cuBLAS works in the CUDA context current on the calling OS thread (or, when
// none is, the primary context of the runtime's current device). Callers that
// use a context other than device 0's primary one must lock the OS thread and
// make their context current before creating a handle and for every call on
// it. A Handle is not safe for concurrent use.
package cublas
