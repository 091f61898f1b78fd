package gemm

import "github.com/detgemm/detgemm/cudaload"

// ForwardArgs describes Y[M,N] = X[M,K] @ W[K,N] (+ bias[N]).
type ForwardArgs struct {
	Tier    Tier
	M, K, N int
	X       cudaload.DevicePtr // [M,K] of In
	W       cudaload.DevicePtr // [K,N] of In
	Bias    cudaload.DevicePtr // [N] of f32, or 0 for no bias (then nothing is added)
	Y       cudaload.DevicePtr // [M,N] of Out
	In      DType              // F32 for TierF32; BF16 or F16 for TierTyped
	Out     DType              // In, or F32
}

// DWArgs describes dW[K,N] += X[M,K]ᵀ @ dY[M,N] into an f32 master buffer.
type DWArgs struct {
	Tier    Tier
	M, K, N int
	X       cudaload.DevicePtr // [M,K] of In
	DY      cudaload.DevicePtr // [M,N] of In
	DW      cudaload.DevicePtr // [K,N] of f32, read and written
	In      DType
}

// DXArgs describes dX[M,K] = dY[M,N] @ W[K,N]ᵀ.
type DXArgs struct {
	Tier    Tier
	M, N, K int
	DY      cudaload.DevicePtr // [M,N] of In
	W       cudaload.DevicePtr // [K,N] of In
	DX      cudaload.DevicePtr // [M,K] of Out
	In      DType
	Out     DType // In, or F32
}
