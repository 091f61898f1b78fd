// elementwise.cuh: what the elementwise code (gated.cu, gemm_matmul.cu's
// epilogue, the fused epilogues of wgmma.cuh) shares on its vector paths:
// activation.cuh's functions with their branches turned into selects, and
// 4-wide loads and stores.
//
// The select forms run the contract's operations in the contract's order
// on the same operands; where activation.cuh skips work (the exponential
// below −104, |x| >= 16 for GELU, a NaN) the work is done and its result
// discarded, so the lanes of a warp never diverge and a thread's elements
// interleave. An empty asm volatile on a value keeps NVVM from sinking its
// computation back under a branch. gemm's TestGatedVectorPathEveryPattern
// and TestMatmulEpilogueVectorPathEveryPattern check them against gemm/ref.
#pragma once
#include "prelude.cuh"
#include "epilogue.cuh"

namespace sel {

using epi::F32;
using epi::BF16;
using epi::F16;

// x / d for the sigmoid's operands (d = 1 + e, x = 1 or e, e in [0, 1]):
// __fdiv_rn's own fast path (reciprocal, one Newton step, quotient,
// remainder, correction) without its test for the slow path. For x from
// 2^-100 up the operands are far from the exponent limits that test guards,
// and the sequence gives the correctly rounded quotient; a smaller x is e
// itself, so d = 1 + e rounds to 1, r = 1 and q = x exactly, and the result
// is x = x / 1 again (subnormals and 0 included).
DETGEMM_INLINE float div_unit(float x, float d) {
    float r;
    asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(d));
    r = __fmaf_rn(r, __fmaf_rn(-d, r, 1.0f), r);
    const float q = __fmaf_rn(x, r, 0.0f);
    return __fmaf_rn(r, __fmaf_rn(-d, q, x), q);
}

// dg_sigmoid_parts / dg_sigmoid_one's exponential, branch-free: e =
// e^(−|z+zl|) (0 where −|z| < −104) and d = 1 + e.
struct SigmoidExp {
    float e, d;
};
DETGEMM_INLINE SigmoidExp sigmoid_exp(float z, float zl) {
    const bool pos = z >= 0.0f;
    const float y = pos ? -z : z, yl = pos ? -zl : zl;
    int k;
    const float q = dg_exp_reduce(y, yl, &k);
    float e = dg_exp_scale(q, k);
    asm volatile("" : "+f"(e));  // computed on every lane: no branch around it
    e = y >= -104.0f ? e : 0.0f;
    return {e, __fadd_rn(1.0f, e)};
}

// dg_gelu, as selects.
DETGEMM_INLINE float gelu(float x) {
    float x2, zl;
    const float z = dg_gelu_arg(x, &x2, &zl);
    const SigmoidExp p = sigmoid_exp(z, zl);
    const float s = div_unit(z >= 0.0f ? 1.0f : p.e, p.d);
    float big = x > 0.0f ? x : DG_F(0x80000000);  // |x| >= 16: x or −0
    asm volatile("" : "+f"(big));
    // A NaN x: x·s is the canonical NaN, as dg_gelu's.
    return dg_abs(x) >= DG_F(0x41800000) ? big : __fmul_rn(x, s);
}

// dg_gelu(x) and dg_gelu_grad(x) together (dg_gate_act_grad's GeGLU case),
// as selects.
DETGEMM_INLINE void gelu_grad(float x, float* act, float* grad) {
    float x2, zl;
    const float z = dg_gelu_arg(x, &x2, &zl);
    const float zp = __fmaf_rn(DG_F(0x3E5B33B6), x2, DG_F(0x3FCC422A));  // K0 + 3·K1·x²
    const SigmoidExp p = sigmoid_exp(z, zl);
    const float pos = div_unit(1.0f, p.d), neg = div_unit(p.e, p.d);
    const bool swap = z < 0.0f;
    const float s = swap ? neg : pos, sm = swap ? pos : neg;
    // Both products first, then the selects (an arm of a conditional that
    // holds a product became a branch); a NaN x makes both products the
    // canonical NaN, as dg_gelu's and dg_gelu_grad's.
    const float va = __fmul_rn(x, s), vg = __fmul_rn(s, __fmaf_rn(__fmul_rn(x, sm), zp, 1.0f));
    const bool big = dg_abs(x) >= DG_F(0x41800000), up = x > 0.0f;
    *act = big ? (up ? x : DG_F(0x80000000)) : va;
    *grad = big ? (up ? 1.0f : DG_F(0x80000000)) : vg;
}

// act(b) for gate G (dg_gate_act) over V values.
template <int G, int V>
DETGEMM_INLINE void acts(const float (&b)[V], float (&act)[V]) {
#pragma unroll
    for (int u = 0; u < V; ++u) {
        const float x = b[u];
        if constexpr (G == 2) {
            act[u] = dg_relu(x);
        } else if constexpr (G == 4) {
            act[u] = sel::gelu(x);
        } else if constexpr (G == 1 || G == 3) {
            const SigmoidExp p = sigmoid_exp(x, 0.0f);
            const float s = div_unit(x >= 0.0f ? 1.0f : p.e, p.d);
            if constexpr (G == 3) {
                const float v = __fmul_rn(x, s);                        // a NaN x: the canonical NaN
                act[u] = x == DG_F(0xFF800000) ? DG_F(0x80000000) : v;  // −Inf: −0
            } else {
                act[u] = x != x ? DG_F(0x7FFFFFFF) : s;  // GLU: s is not NaN for a NaN x
            }
        } else {
            act[u] = x;
        }
    }
}

// act(b) and act′(b) for gate G (dg_gate_act_grad) over V values.
template <int G, int V>
DETGEMM_INLINE void act_grads(const float (&b)[V], float (&act)[V], float (&grad)[V]) {
    if constexpr (G == 2) {
#pragma unroll
        for (int u = 0; u < V; ++u) {
            act[u] = dg_relu(b[u]);
            grad[u] = dg_gate_grad(2, b[u]);
        }
    } else if constexpr (G == 4) {
#pragma unroll
        for (int u = 0; u < V; ++u) sel::gelu_grad(b[u], &act[u], &grad[u]);
    } else if constexpr (G == 1 || G == 3) {
#pragma unroll
        for (int u = 0; u < V; ++u) {
            const float x = b[u];
            const SigmoidExp p = sigmoid_exp(x, 0.0f);
            const float pos = div_unit(1.0f, p.d), neg = div_unit(p.e, p.d);
            const bool swap = x < 0.0f;
            const float s = swap ? neg : pos, sm = swap ? pos : neg;
            if constexpr (G == 1) {
                // GLU: s and s·sm are not NaN for a NaN x, so the NaN is chosen.
                const bool nan = x != x;
                act[u] = nan ? DG_F(0x7FFFFFFF) : s;
                grad[u] = nan ? DG_F(0x7FFFFFFF) : __fmul_rn(s, sm);
            } else {
                // SwiGLU: a NaN x makes both products the canonical NaN.
                const float va = __fmul_rn(x, s), vg = __fmul_rn(s, __fmaf_rn(x, sm, 1.0f));
                const bool pinf = x == DG_F(0x7F800000), ninf = x == DG_F(0xFF800000);
                act[u] = pinf ? x : (ninf ? DG_F(0x80000000) : va);
                grad[u] = pinf ? 1.0f : (ninf ? DG_F(0x80000000) : vg);
            }
        }
    } else {
#pragma unroll
        for (int u = 0; u < V; ++u) {
            act[u] = b[u];
            grad[u] = 1.0f;
        }
    }
}

// Four consecutive elements from p (4-aligned), widened exactly: f16 by the
// hardware conversion, exact for every number. A NaN's payload may differ
// from dg_f16_to_f32's, and nothing shows it: every output a NaN input
// reaches is the canonical NaN (the activations' NaN, the products' NaN,
// round_pair's 0x7fff).
template <int T>
DETGEMM_INLINE void load4(const void* DETGEMM_RESTRICT p, float* v) {
    if constexpr (T == F32) {
        const float4 x = *static_cast<const float4*>(p);
        v[0] = x.x; v[1] = x.y; v[2] = x.z; v[3] = x.w;
    } else {
        const uint2 x = *static_cast<const uint2*>(p);
        const dg_u32 w[2] = {x.x, x.y};
#pragma unroll
        for (int c = 0; c < 4; ++c) {
            const dg_u16 h = (dg_u16)(w[c >> 1] >> (16 * (c & 1)));
            if constexpr (T == BF16) v[c] = dg_bf16_to_f32(h);
            else asm("cvt.f32.f16 %0, %1;" : "=f"(v[c]) : "h"(h));
        }
    }
}

// Two values rounded to T (RNE) and packed, lo in the low half: one cvt for
// the pair, a NaN half the canonical 0x7fff (round16's bits). On sm_90 the
// cvt alone gives exactly these bits for every pair, NaNs included
// (TestGPUPack16MatchesContract runs all 2^32 low halves on the GPU);
// elsewhere, where no PTX rule promises a NaN's bits, selects replace a
// NaN half.
template <int T>
DETGEMM_INLINE dg_u32 round_pair(float lo, float hi) {
    dg_u32 p;
    if constexpr (T == BF16) asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(p) : "f"(hi), "f"(lo));
    else asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(p) : "f"(hi), "f"(lo));
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ == 900
    return p;
#else
    p = lo != lo ? (p & 0xffff0000u) | 0x7fffu : p;
    return hi != hi ? (p & 0x0000ffffu) | 0x7fff0000u : p;
#endif
}

// Four values rounded once to T and stored at p (4-aligned) with one access.
template <int T>
DETGEMM_INLINE void store4(void* DETGEMM_RESTRICT p, const float* v) {
    if constexpr (T == F32) {
        asm volatile("st.global.v4.f32 [%0], {%1, %2, %3, %4};" ::"l"(p), "f"(v[0]), "f"(v[1]), "f"(v[2]), "f"(v[3])
                     : "memory");
    } else {
        asm volatile("st.global.v2.b32 [%0], {%1, %2};" ::"l"(p), "r"(round_pair<T>(v[0], v[1])),
                     "r"(round_pair<T>(v[2], v[3]))
                     : "memory");
    }
}

// Elements e and e + 1 of a T array (e even, the pair aligned for one
// access): widened as load4 does, or rounded as round_pair and stored.
template <int T>
DETGEMM_INLINE void load2(const void* DETGEMM_RESTRICT p, dg_i64 e, float& lo, float& hi) {
    if constexpr (T == F32) {
        const float2 x = *reinterpret_cast<const float2*>(static_cast<const float*>(p) + e);
        lo = x.x;
        hi = x.y;
    } else {
        const dg_u32 w = *reinterpret_cast<const dg_u32*>(static_cast<const dg_u16*>(p) + e);
        const dg_u16 h0 = (dg_u16)w, h1 = (dg_u16)(w >> 16);
        if constexpr (T == BF16) {
            lo = dg_bf16_to_f32(h0);
            hi = dg_bf16_to_f32(h1);
        } else {
            asm("cvt.f32.f16 %0, %1;" : "=f"(lo) : "h"(h0));
            asm("cvt.f32.f16 %0, %1;" : "=f"(hi) : "h"(h1));
        }
    }
}
template <int T>
DETGEMM_INLINE void store2(void* DETGEMM_RESTRICT p, dg_i64 e, float lo, float hi) {
    if constexpr (T == F32) *reinterpret_cast<float2*>(static_cast<float*>(p) + e) = make_float2(lo, hi);
    else *reinterpret_cast<dg_u32*>(static_cast<dg_u16*>(p) + e) = round_pair<T>(lo, hi);
}

// Pointer to element e of a T array.
template <int T>
DETGEMM_INLINE const void* at(const void* p, dg_i64 e) {
    return static_cast<const char*>(p) + e * (T == F32 ? 4 : 2);
}
template <int T>
DETGEMM_INLINE void* at(void* p, dg_i64 e) {
    return static_cast<char*>(p) + e * (T == F32 ? 4 : 2);
}

}  // namespace sel
