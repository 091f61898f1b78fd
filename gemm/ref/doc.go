// Package ref is the CPU reference of detgemm's tiers: the f32 tier, the
// typed (bf16, f16) tier and, given the architecture's addition model, the
// tensor-core tier. It computes the same reduction plans as the GPU kernels,
// with the same correctly rounded operations, so its output bits equal the
// GPU's. It is the oracle of the engine's tests and the engine's CPU backend.
// Pure Go; of detgemm it imports only the shared argument-error type.
//
// # Entry points
//
// One per op, methods of Options, which names the tier (IEEE or
// TensorCore), the input and output types, the tensor-core model, the
// window of the output to compute and the number of goroutines:
//
//	o := ref.Options{Tier: ref.TensorCore, In: ref.BF16, Model: ref.Hopper}
//	err := o.Forward(ref.Bits(y), ref.Bits(x), ref.Bits(w), bias, M, K, N)
//
// Options.Forward, Options.DX and Options.DW (and the general
// Options.Matmul, section Matmul) take the matrices as Operands:
// float32 Values, or the Bits of a 16-bit type (a 16-bit matrix may also be
// given as its exact float32 values). Options.Rows and Options.Cols select a
// window of the output; the inputs are read in place, so a few rows of a
// very large problem cost those rows' work and no copy of W.
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
// # Tensor-core tier
//
// The tensor-core (TC) tier takes bf16 or f16 inputs and accumulates in
// float32 with mma.sync.m16n8k16 (or, on Hopper, wgmma, which gives the
// same bits). Tensor cores do not add by IEEE rules; TCModel describes how
// one architecture adds, and the package reproduces the GPU's bits from it.
// Hopper (sm_90) is verified: on an H200 the model reproduced mma.sync and
// wgmma bit for bit on about 330 000 outputs (random data, ±60-binade
// spreads, cancellation, subnormal inputs, nonzero accumulators, K up to
// 4096). Ampere (sm_80) is the published model, not verified here.
//
// One step. Per output element, a step takes the accumulator c and 16
// products a_i·b_i (TCStepK). It is cut into 16/BlockTerms blocks of
// consecutive products (Hopper: one block of 16; Ampere: products 0-7, then
// 8-15), chained: the first block starts from c, each next block from the
// previous block's result. One block, with X = ExtraBits:
//
//  1. Special values, by IEEE rules: a NaN operand (c, a_i or b_i), Inf·0,
//     or infinities of both signs give NaN; otherwise an infinite addend
//     gives that infinity, whatever the finite ones. A NaN result is always
//     the canonical 0x7FFFFFFF. Otherwise all operands are finite:
//  2. Nominal exponents. For an input x, exp(x) = floor(log2|x|), a
//     subnormal of the input type clamped up to the type's smallest normal
//     exponent (bf16: -126; f16: -14, so an f16 subnormal such as 2^-24
//     counts as exponent -14). A product's nominal exponent is exp(a) +
//     exp(b), whatever the product's magnitude (which may reach 4·2^e, or be
//     far below 2^e for subnormal inputs). The accumulator's is
//     floor(log2|c|) with float32 subnormals clamped to -126.
//  3. Alignment: emax = max(MinAlignExp, nominal exponent of every nonzero
//     addend). Zero addends (c = ±0, products with a zero factor) take no
//     part in it.
//  4. Truncation: each addend's exact value (a product of two 16-bit values
//     has at most 22 significant bits, c has 24) is cut toward zero, on its
//     magnitude, to a multiple of the grid 2^(emax-23-X): 2^(emax-25) on
//     Hopper, two bits below float32's last fraction bit at emax. An addend
//     whose nominal exponent is more than 31 below emax contributes 0. That
//     rule never changes a result: an addend of nominal exponent e is below
//     2^(e+2), so below 2^(25+X-(emax-e)) grid units, less than one unit
//     once emax-e >= 25+X (27 on Hopper, 26 on Ampere); it is kept as
//     written and tested as implied.
//  5. The truncated addends are summed exactly: each is below 2^(25+X)
//     units, at most 17 of them, so |S| < 17·2^(25+X), which fits int64 for
//     any ExtraBits TCModel.Valid allows (0 to 7).
//  6. The sum S·2^(emax-23-X) is rounded toward zero to float32: kept to
//     24 significant bits; below 2^-126 to the subnormal grid 2^-149; an
//     exact magnitude of 2^128 or more gives ±Inf (measured on the H200,
//     2026-11-21: not IEEE's round-toward-zero overflow, which would give
//     ±MaxFloat32; only bf16 products or an accumulator near MaxFloat32 can
//     get there). An infinite accumulator then stays infinite.
//  7. A zero result is +0, whatever the signs: S = 0 (cancellation, or c
//     and every product -0 or truncated to 0) and a nonzero S that truncates
//     to zero alike. Not IEEE's rule (which keeps -0 when every addend is
//     negative or -0): measured on the H100, 2026-11-28, with every mma.sync
//     and wgmma kernel. A step never produces -0.
//
// Consequences: within a block the order of the products does not matter
// (Hopper's whole step is permutation invariant; Ampere's two blocks are
// not). A step whose products are all zero returns c bit for bit: c alone
// sets emax = exp(c) (above Hopper's and Ampere's clamp even for a
// subnormal c), and the grid
// 2^(exp(c)-23-X) is finer than c's last bit; the one exception is c = -0,
// which gives +0. The grid is finer than float32's
// near emax but every addend is cut before the sum, and the sum is
// truncated, not rounded: the TC tier is not the IEEE f32 plan
// (1 + 1.5·2^-24 is 1 here, 1 + 2^-23 in the f32 tier).
//
// Step evaluates the model literally with integer arithmetic. The plans run
// a float64 form for finite operands (products and power-of-two scalings are
// exact in float64, the float64-to-int64 conversion truncates toward zero,
// the sum is exact in int64), checked against Step, and Step itself for
// chains that meet a NaN or an infinity; an independent math/big
// evaluation of the model checks Step in the tests. The float64 form runs
// of the order of 50 million steps (one element, 16 products) per second on
// one core.
//
// Plans (Options with Tier TensorCore). The reduction of
// length R is cut into S slabs of L terms, the last possibly shorter, L a
// multiple of 256: TCSlabs(R, other) for Forward (other = N) and dX (other
// = K), a function of those two only, never M; TCDWSlabs(M, K, N) for dW.
// S = 1 (L = R: one chain over the whole reduction) unless the reduction
// is long against the output (see there). Per output element each slab is
// one chain of ascending 16-wide steps, step s of slab t covering terms
// [tL + 16s, tL + 16s + 16) and the reduction's last step missing terms
// that are +0 on both operands (L being a multiple of 16, only the last
// slab has a partial step). Slab 0's chain starts at the start value
// below, every later slab's at +0, and the element is
// v = p_0; v = Add32(v, p_1); …; v = Add32(v, p_{S-1}) — IEEE float32
// additions in ascending slab order (where S = 1, v = p_0: the chain). The zero fill is harmless: a zero
// product never sets emax and adds exactly 0, so it changes nothing but,
// possibly, the sign of an exactly zero result (a +0 product makes it +0),
// and the GPU's zero-filled fragments are the same +0s.
//
//   - Forward, Y[M,N] = X[M,K] @ W[K,N] (+ bias[N]): for each (m, n) the
//     chain starts at bias[n] (float32, entering the first step as its c,
//     aligned and truncated with the first 16 products) or, without bias,
//     at +0, and takes a_k = X[m,k], b_k = W[k,n] for k ascending.
//   - dX[M,K] = dY[M,N] @ W[K,N]ᵀ: the chain starts at +0 and takes
//     a_n = dY[m,n], b_n = W[k,n] for n ascending.
//   - dW[K,N] += X[M,K]ᵀ @ dY[M,N], into the float32 master buffer: the
//     chain starts at the current dW[k,n] and takes a_m = X[m,k],
//     b_m = dY[m,n] for m ascending; the result is stored as it is. So
//     where every call's plan has one slab, a batch split into
//     micro-batches whose boundaries fall on multiples of 16 rows, applied
//     in order, gives the bits of one call: the stored float32 is exactly
//     the accumulator the next step would have started from. A boundary
//     inside a step zero-fills a partial step and gives a different chain;
//     a cut plan (M >= 1024 into a small master) adds its slabs in IEEE
//     float32 and is a different sum again.
//
// The float32 accumulator is the result with Options.Out = F32; with Out =
// In it is rounded once, to nearest even, to bf16 or f16 at the store; dW
// stays float32. As in the IEEE tiers, a forward or dX row depends only on
// its own row of the left operand, the right operand and the bias, never on
// M, the other rows or Options.Workers. Inputs given as float32 Values must
// be exactly of the input type (ErrInexact otherwise; any NaN is accepted);
// the bias and dW may be any float32.
//
// # Epilogue
//
// Every op of every tier ends the same way, in one function: the slab
// results folded in ascending slab order with Add32 (the tensor-core
// tier's first slab being the chain that started at the bias, dW's fold
// starting at the master), then, for the IEEE Forward with a bias, one
// Add32 of bias[n], then the activation (the identity for Forward, DX and
// DW), then the store, rounding once, to nearest even, to the output type.
//
// # Matmul
//
// Options.Matmul computes cuBLASLt's general request, D = epilogue(alpha ·
// op(A)·op(B) + beta·C (+ bias)): the four layouts, leading dimensions,
// alpha and beta, C and D separate or the same, and the sixteen epilogues
// (ReLU and GELU with their aux outputs, their gradients, bias gradients),
// through the same plans and the same epilogue function. Forward, DX and DW
// are its special cases, bit for bit. The transcendentals the epilogues
// use (Exp32, Tanh32, Sigmoid32, Gelu32, GeluGrad32, Silu32, SiluGrad32)
// are fixed sequences of float32 operations that the device performs
// identically.
//
// # Gated activations
//
// GLU, ReGLU, SwiGLU and GeGLU (Gate): y = a·act(b) of a projection
// h = [a | b], and its backward. GateAct32 and GateGrad32 are act and act′;
// GatedForward and GatedBackward apply them to slices, rounding once to
// the output type. Matmul's twenty gated epilogues (GatedGLU …
// GatedGeGLUAuxBias, DGatedGLU … DGatedGeGLU) fuse them into the product:
// its columns hold a and b in alternating blocks of 8, the forward's D has
// half the product's width and the backward's twice, and the result is
// the Default (or Bias) epilogue's unrounded float32 product gated per
// element. The order of
// operations, the aux formats, the bias gradients' slab order and the
// functions' CUDA text and accuracy are in docs/contract.md, sections
// "Transcendentals" and "Matmul".
//
// # fp8 (E4M3, E5M2)
//
// The 8-bit types E4M3 (OCP E4M3FN: bias 7, no infinities, largest 448)
// and E5M2 (bias 15, ±Inf, largest 57344) are DTypes of their own (FP8
// reports them; Valid does not: the IEEE and tensor-core tiers do not take
// them). FP8Decode widens a code exactly; FP8Encode is PTX's
// cvt.rn.satfinite: round to nearest even on the format's grid, then
// saturate to ±FP8Max. FP8Quantize turns a float32, bf16 or f16 matrix
// (or its transpose) into codes and one float32 scale a group (the tensor,
// a row, 1×128 or 128×128 blocks: FP8Groups), so that x ≈ code·scale.
//
// Options.FP8Matmul is the product D = A·Bᵀ of fp8 codes (B stored N × K,
// cuBLASLt's "TN"), with per-tensor, per-row or block scales (FP8Scaling),
// promoted or fast accumulation (FP8Accum), the bias, ReLU and GELU
// epilogues and F32, BF16, F16, E4M3 or E5M2 outputs (an fp8 one
// scaled by ScaleD, with its amax). Its arithmetic is FP8Step, one
// 32-product tensor-core step as measured on an H100 (wgmma m64n8k32):
// the addends are aligned to the largest nominal exponent, cut to 13 bits
// below it, summed exactly, and the sum cut to 14 significant bits.
// FP8Step follows the measured rules literally; FP8Matmul runs a faster
// integer form of the same rules, checked against it. The order of
// operations is in docs/contract.md, section "fp8 (E4M3, E5M2)".
//
// # Oracle
//
// ForwardF64, DXF64 and DWF64 compute the same products in float64 with
// plain ascending sums, and RelError measures a float32 result against them;
// they bound the plans' accuracy rather than pin bits.
package ref
