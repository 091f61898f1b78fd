// Package ref is the CPU reference of detgemm's IEEE tiers: the f32 tier and
// the typed (bf16, f16) tier. It computes the same reduction plans as the GPU
// kernels, with the same correctly rounded operations, so its output bits
// equal the GPU's. It is the oracle of the engine's tests and the engine's
// CPU backend. Pure Go; it imports nothing else from detgemm.
//
// # Arithmetic
//
// Two float32 operations, both round to nearest, ties to even, with
// subnormals kept (no flush to zero):
//
//   - FMA32(a, b, c): a*b + c exact, rounded once (CUDA's __fmaf_rn).
//   - Add32(a, b): a + b rounded once (CUDA's __fadd_rn).
//
// Any NaN they produce is the canonical NaN, bits 0x7FFFFFFF (CanonicalNaN32),
// as on NVIDIA GPUs, which do not propagate NaN payloads. Signed zeros follow
// IEEE 754: an exact zero sum of opposite-signed terms is +0.
//
// # Plans
//
// Matrices are row-major. SlabLen = 256. A reduction of length R is cut into
// S = ceil(R/256) slabs; slab s covers terms r in [256s, min(256(s+1), R)).
// The partial of slab s is one ascending FMA chain from +0:
//
//	p_s = +0
//	for r in slab s, ascending: p_s = FMA32(a_r, b_r, p_s)
//
// Forward, Y[M,N] = X[M,K] @ W[K,N] (+ bias[N]): for each (m, n), R = K,
// a_r = X[m,r], b_r = W[r,n], and
//
//	y = p_0
//	for s = 1 .. S-1: y = Add32(y, p_s)
//	if a bias is given: y = Add32(y, bias[n])   (no bias: no addition at all)
//
// dX, dX[M,K] = dY[M,N] @ W[K,N]ᵀ: for each (m, k), R = N, a_r = dY[m,r],
// b_r = W[k,r], combined as forward without bias.
//
// dW, dW[K,N] += X[M,K]ᵀ @ dY[M,N], into a float32 master buffer: for each
// (k, n), R = M, a_r = X[r,k], b_r = dY[r,n], and
//
//	d = dW[k,n]
//	for s = 0 .. S-1: d = Add32(d, p_s)
//	dW[k,n] = d
//
// So a batch split into micro-batches whose boundaries fall on multiples of
// 256 rows, accumulated in order, gives the bits of one call; a split inside
// a slab is a different plan and can give different bits.
//
// A forward or dX result depends only on its own row of the left operand,
// the right operand and the bias: never on M, the other rows, or how the
// work is spread over goroutines (Options.Workers).
//
// # Typed tier
//
// bf16 and f16 inputs are widened exactly to float32 (F32FromBF16,
// F32FromF16), the f32 plan runs unchanged, and the float32 result is
// rounded once, to nearest even, to the 16-bit type at the store
// (BF16FromF32, F16FromF32). The bias stays float32; dW is always float32.
// A 16-bit NaN widens to the canonical float32 NaN and any NaN narrows to
// 0x7FFF. Typed results therefore equal Upcast, then the f32 operation, then
// Round, bit for bit.
//
// # Oracle
//
// ForwardF64, DXF64 and DWF64 compute the same products in float64 with
// plain ascending sums, and RelError measures a float32 result against them;
// they bound the plans' accuracy rather than pin bits.
package ref
