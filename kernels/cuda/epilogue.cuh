// epilogue.cuh: the one epilogue every GEMM family ends with. Its CPU twin
// is gemm/ref's; the two must say the same thing, step for step.
//
// The contract, per output element (j its column):
//   IEEE tiers (f32, bf16/f16 in):  v = p_0; v = fold_add(v, p_s) for
//     s = 1..S-1 (the slab partials, in slab order, __fadd_rn); v =
//     bias_add(v, bias[j]) when there is a bias (f32, one rounding);
//     v = act(v); store RNE(v) to the output type.
//   Tensor-core tier:  acc starts at tc_start (bias[j]; +0 without a bias
//     and for dX); the chain of 16-wide mma steps; where the plan has
//     several slabs, slab 0's chain starts there, every later slab's at +0,
//     and the slab results fold in slab order (fold_slab, fold_add);
//     v = act(v); store RNE(v).
//   dW (both tiers):  accumulates onto the f32 master: d = d_old, then
//     fold_add(d, p_s) in slab order (IEEE) or the chain starts at d_old
//     (tensor cores); stored as f32, no bias, no activation.
// act is the activation hook, a template parameter (Identity today, which
// compiles to nothing). Every addition is __fadd_rn: the kernels are built
// with --fmad=false, and nothing here may contract or re-associate.
#pragma once
#include "prelude.cuh"
#include "activation.cuh"

namespace epi {

// Output codes, shared with the Go dispatcher (as every family's).
constexpr int F32 = 0;
constexpr int BF16 = 1;
constexpr int F16 = 2;

// ---------------------------------------------------------------------------
// The activation hook: Act::apply(v), on the f32 value after the bias and
// before the rounding, on final outputs only (never on a slab partial, a
// running sum or dW).

// Identity: no activation.
struct Identity {
    static DETGEMM_INLINE float apply(float v) { return v; }
};

template <class Act>
DETGEMM_INLINE float act(float v) {
    return Act::apply(v);
}

// ---------------------------------------------------------------------------
// Slab fold and bias.

// One step of the slab fold: the running value plus the next slab's partial
// (or, for dW, the master value plus a slab), one f32 rounding.
DETGEMM_INLINE float fold_add(float v, float p) { return __fadd_rn(v, p); }

// The bias of the IEEE tiers, added once after the fold: one f32 rounding.
DETGEMM_INLINE float bias_add(float v, float b) { return __fadd_rn(v, b); }

// The tensor-core tier's start value where there is a bias: the chain of
// column j starts at bias[j] (the bias enters as the accumulator's start
// value, never as an addition). Without a bias, for dX, and outside the
// matrix the chain starts at +0; the callers test those cases themselves,
// each in the form its loop was tuned with.
DETGEMM_INLINE float tc_start(const float* DETGEMM_RESTRICT bias, dg_i64 j) { return bias[j]; }

// The slab fold in registers, for kernels that run all of an element's
// slabs: called at the end of every slab but the last, it adds the slab's
// chain to the running sum in slab order (sum = p_0 at the first call,
// fold_add(sum, p_s) after) and restarts the chain from +0. After the last
// slab the value is fold_add(sum, acc).
template <int N>
DETGEMM_INLINE void fold_slab(float (&sum)[N], float (&acc)[N], bool first) {
#pragma unroll
    for (int i = 0; i < N; ++i) {
        sum[i] = first ? acc[i] : fold_add(sum[i], acc[i]);
        acc[i] = 0.0f;
    }
}

// ---------------------------------------------------------------------------
// Rounding and store: one round-to-nearest-even to the output type.
//
// f16 has two encodings of the same rounding: the prelude's integer code
// (RNE_INT, the IEEE tiers) and the hardware conversion (RNE_CVT, the
// tensor-core tiers, branch-free: their f16 epilogues are store-bound).
// Both give the bits of dg_f32_to_f16_rne for every input, NaNs included
// (canonical 0x7fff). bf16 is the prelude's integer code in both.
constexpr int RNE_INT = 0;
constexpr int RNE_CVT = 1;

// f32 -> f16, RNE, by cvt.rn.f16.f32: IEEE round-to-nearest-even (subnormal
// results, overflow to infinity, signed zeros); a NaN becomes the prelude's
// canonical 0x7fff.
DETGEMM_INLINE dg_u16 f32_to_f16_rne_cvt(float v) {
    unsigned short h;
    asm("cvt.rn.f16.f32 %0, %1;\n" : "=h"(h) : "f"(v));
    return (dg_f32_bits(v) & 0x7fffffffu) > 0x7f800000u ? (dg_u16)0x7fffu : (dg_u16)h;
}

// v rounded to a 16-bit output type (OUT = BF16 or F16).
template <int OUT, int CVT = RNE_INT>
DETGEMM_INLINE dg_u16 round16(float v) {
    if constexpr (OUT == BF16) return dg_f32_to_bf16_rne(v);
    else if constexpr (CVT == RNE_CVT) return f32_to_f16_rne_cvt(v);
    else return dg_f32_to_f16_rne(v);
}

// Stores element e of C, rounded once to OUT.
template <int OUT, int CVT = RNE_INT>
DETGEMM_INLINE void store(void* DETGEMM_RESTRICT C, dg_i64 e, float v) {
    if constexpr (OUT == F32) static_cast<float*>(C)[e] = v;
    else static_cast<dg_u16*>(C)[e] = round16<OUT, CVT>(v);
}

// Stores elements e and e + 1 (e even, the pair aligned) with one access.
template <int OUT, int CVT = RNE_INT>
DETGEMM_INLINE void store2(void* DETGEMM_RESTRICT C, dg_i64 e, float v0, float v1) {
    if constexpr (OUT == F32) {
        *reinterpret_cast<float2*>(static_cast<float*>(C) + e) = make_float2(v0, v1);
    } else {
        *reinterpret_cast<dg_u32*>(static_cast<dg_u16*>(C) + e) =
            (dg_u32)round16<OUT, CVT>(v0) | ((dg_u32)round16<OUT, CVT>(v1) << 16);
    }
}

// Stores elements e .. e + 3 as one 16-byte (f32) or 8-byte (16-bit)
// access; the caller checks alignment and range. Written as PTX: NVRTC
// split a float4 store through the output's void* into four.
template <int OUT, int CVT = RNE_INT>
DETGEMM_INLINE void store4(void* DETGEMM_RESTRICT C, dg_i64 e, const float (&v)[4]) {
    if constexpr (OUT == F32) {
        asm volatile("st.global.v4.f32 [%0], {%1, %2, %3, %4};\n" ::"l"(static_cast<float*>(C) + e), "f"(v[0]),
                     "f"(v[1]), "f"(v[2]), "f"(v[3])
                     : "memory");
    } else {
        dg_u16 h[4];
#pragma unroll
        for (int c = 0; c < 4; ++c) h[c] = round16<OUT, CVT>(v[c]);
        asm volatile("st.global.v2.b32 [%0], {%1, %2};\n" ::"l"(static_cast<dg_u16*>(C) + e),
                     "r"((dg_u32)h[0] | ((dg_u32)h[1] << 16)), "r"((dg_u32)h[2] | ((dg_u32)h[3] << 16))
                     : "memory");
    }
}

// ---------------------------------------------------------------------------
// Matmul's epilogue (docs/contract.md, section "Matmul"): after the value v
// of an element is formed (the fold, beta·C, the bias), an optional GELU
// aux (v itself, rounded as D is), the activation, the store of D, and an
// optional ReLU mask of the stored D. The codes are shared with
// gemm/matmul.go.
constexpr int ACT_NONE = 0;
constexpr int ACT_RELU = 1;
constexpr int ACT_GELU = 2;
constexpr int ACT_DRELU = 3;
constexpr int ACT_DGELU = 4;
// The fused wgmma kernels' gated epilogues: the forward of gate g (1 GLU,
// 2 ReGLU, 3 SwiGLU, 4 GeGLU: activation.cuh's codes) at ACT_GATE + g, its
// backward at ACT_DGATE + g.
constexpr int ACT_GATE = 8;
constexpr int ACT_DGATE = 16;

// Element e of a matrix of type T, widened exactly to f32.
template <int T>
DETGEMM_INLINE float widen(const void* DETGEMM_RESTRICT p, dg_i64 e) {
    if constexpr (T == F32) return static_cast<const float*>(p)[e];
    else if constexpr (T == BF16) return dg_bf16_to_f32(static_cast<const dg_u16*>(p)[e]);
    else return dg_f16_to_f32(static_cast<const dg_u16*>(p)[e]);
}

// v as a matrix of type OUT stores it, read back as f32.
template <int OUT>
DETGEMM_INLINE float stored(float v) {
    if constexpr (OUT == F32) return v;
    else if constexpr (OUT == BF16) return dg_bf16_to_f32(round16<OUT>(v));
    else return dg_f16_to_f32(round16<OUT>(v));
}

// The ReLU mask bytes (gemm/ref's ReluMaskZero, ReluMaskPass, ReluMaskNaN).
constexpr unsigned char MASK_ZERO = 0, MASK_PASS = 1, MASK_NAN = 2;

// The activation of a Matmul element whose pre-activation value is v (aux
// at ax): a GELU aux output stores v first (aux non-null, of type OUT);
// the backward activations read the forward's mask byte or aux.
template <int OUT>
DETGEMM_INLINE float mm_act(float v, int act, void* aux, const unsigned char* mask, dg_i64 ax) {
    switch (act) {
    case ACT_RELU:
        return dg_relu(v);
    case ACT_GELU:
        if (aux != nullptr) store<OUT>(aux, ax, v);
        return dg_gelu(v);
    case ACT_DRELU: {
        const unsigned char b = mask[ax];
        return b == MASK_ZERO ? 0.0f : (b == MASK_PASS && v == v ? v : DG_F(0x7FFFFFFF));
    }
    case ACT_DGELU:
        return __fmul_rn(v, dg_gelu_grad(widen<OUT>(aux, ax)));
    default:
        return v;
    }
}

// The ReLU mask byte of v as a matrix of type OUT stores it.
template <int OUT>
DETGEMM_INLINE unsigned char mm_mask(float v) {
    const float x = stored<OUT>(v);
    return x > 0.0f ? MASK_PASS : (x != x ? MASK_NAN : MASK_ZERO);
}

// Finishes element (D[de], aux and mask at ax) of a Matmul whose
// pre-activation value is v: aux and mask are null unless the epilogue
// writes or reads them.
template <int OUT>
DETGEMM_INLINE void mm_finish(float v, int act, void* D, dg_i64 de, void* aux, unsigned char* mask, dg_i64 ax) {
    v = mm_act<OUT>(v, act, aux, mask, ax);
    store<OUT>(D, de, v);
    if (act == ACT_RELU && mask != nullptr) mask[ax] = mm_mask<OUT>(v);
}

}  // namespace epi
