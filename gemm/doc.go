// Package gemm is detgemm's engine: deterministic, batch-invariant matrix
// products for the training triad over raw device pointers.
//
// # Operations
//
// All matrices are row-major and contiguous.
//
//	Forward:  Y[M,N]  = X[M,K] @ W[K,N] (+ bias[N])
//	DW:       dW[K,N] += X[M,K]ᵀ @ dY[M,N]    (f32 master buffer)
//	DX:       dX[M,K] = dY[M,N] @ W[K,N]ᵀ
//
// # Tiers
//
// The caller names the tier in every call; the engine never switches to
// another one. TierF32 takes f32 inputs and runs IEEE fmaf chains on CUDA
// cores. TierTyped takes bf16 or f16 inputs, widens them exactly to f32 and
// runs the very same plans, rounding once (to nearest even) at the store, so
// its bits equal "upcast, run the f32 tier, round". TierTensorCore is
// reserved for the tensor-core contract and answers ErrTierUnavailable in
// this release.
//
// # The IEEE plan
//
// For one output element with reduction length R (K for Forward, N for DX,
// M for DW): the range [0, R) is cut into slabs of ref.SlabLen = 256; each
// slab is one ascending fmaf chain starting from +0; the slab results fold
// left to right — Forward and DX start from the first slab's result, DW
// from the value already in dW — then Forward adds the bias (only when one is
// given) and the value is rounded once to the output type. The plan depends
// on R alone: never on M, the GPU, the grid or pointer alignment. So a
// Forward or DX row has the same bits in a batch of 1 or of 100 000, and a
// CPU reproduces them exactly (package ref). For DW, splitting the batch into
// micro-batches at multiples of 256 rows, applied in order, gives the same
// bits as one call.
//
// # Concurrency
//
// An Engine owns one stream. Its methods may be called from many goroutines:
// each call validates, then enqueues under the engine's lock and returns
// without waiting; Synchronize waits for everything queued. Calls need no
// workspace, so they are safe to capture in a CUDA graph.
package gemm
