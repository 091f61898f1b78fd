// fast16.cuh: the GeGLU forward's y = a·gelu(b) where it is only stored
// rounded to bf16 (gated.cu's vector path), at about half the
// instructions, with the contract's stored bits.
//
// activation.cuh's GELU costs about 60 instructions a value, which is what
// the GeGLU forward spends its time on (it is issue-bound where the other
// gates are memory-bound). Where y is stored as a bf16, only its rounding
// matters. So a short approximation (the hardware's ex2.approx and
// rcp.approx, GELU's argument in plain f32) is computed with a bound w on
// its distance to the contract's f32 value, and if every number within
// y ± w rounds to the same bf16 code (one paired cvt of both ends: rounding
// is monotone), that code is the contract's. Otherwise (y near a rounding
// boundary, infinite, NaN or beyond 2^100) the contract's own sequence
// (elementwise.cuh) runs for that value, in a loop a warp enters only when
// one of its lanes needs it: a rounding test, as correctly rounded
// libraries use. The approximation never reaches a stored bit unless the
// test has shown that it rounds as the contract's value does.
//
// Measured and not used elsewhere (bench/NOTES-matmul.md, fourteenth
// session): f16 stores (three more fraction bits put a rounding boundary
// within the bound eight times as often), SwiGLU's forward (memory-bound:
// the shortcut's registers cost it occupancy) and the fused epilogues of
// gemm_wgmma_matmul (slower there). gemm's TestFast16RoundsAsTheContract
// checks the bound and the stored codes against the contract over every
// f32 input (check_fast16.cu).
#pragma once
#include "prelude.cuh"
#include "epilogue.cuh"
#include "elementwise.cuh"

namespace fast16 {

// The bound on the approximation of gelu(x): relative (C1·s + C0)·2^-24 of
// the approximation, plus K_ABS (subnormal results), where s = −z for z < 0
// and 0 otherwise (z the sigmoid's argument): σ(z)'s sensitivity to its
// argument's and the exponential's relative errors is σ(−z), which for
// z >= 0 keeps z·σ(−z) under 0.28, so there the constant term covers them.
// The terms: z in three f32 roundings against the contract's double-f32 z,
// ex2's argument −|z|·log2(e)/2 in f32, ex2.approx twice (its result
// squared), rcp.approx, the roundings around them, the contract's own error
// (its exponential and quotient), and the product x·σ; K_ABS the roundings
// into subnormals on both sides (the contract's e and products, and its
// e = 0 below −104). TestFast16RoundsAsTheContract measures every f32
// input against half this bound.
constexpr float GELU_C1 = 12.0f, GELU_C0 = 48.0f;
constexpr float K_ABS = 1.4349296274686127e-42f;  // 2^-139, a subnormal
// What the store adds on top: a·act's rounding and the contract's, and the
// rounding of the test's two ends.
constexpr float PRODUCT_C0 = 4.0f, ENDS_C0 = 4.0f;

// σ(z), every finite z: e = e^−|z| as the square of ex2(−|z|·log2(e)/2),
// which stays a normal number (as ex2.approx.ftz needs) until e itself is
// below 2^-252, and then e = h·h rounds into the subnormals or to 0 once.
DETGEMM_INLINE float sigmoid_approx(float z) {
    const float t = __fmul_rn(-dg_abs(z), DG_F(0x3F38AA3B));  // −|z|·log2(e)/2
    float h, r;
    asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(h) : "f"(t));
    const float e = __fmul_rn(h, h);
    const float d = __fadd_rn(1.0f, e);
    asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(d));
    return z >= 0.0f ? r : __fmul_rn(e, r);
}

// gelu(x) ≈ x·σ(z), z = x·(K0 + K1·x²) in f32; *s = max(−z, 0).
DETGEMM_INLINE float gelu_approx(float x, float* s) {
    const float w = __fmaf_rn(DG_F(0x3D922279), __fmul_rn(x, x), DG_F(0x3FCC422A));
    const float z = __fmul_rn(x, w);
    *s = z < 0.0f ? -z : 0.0f;
    return __fmul_rn(x, sigmoid_approx(z));
}

// Whether every number within [v − w, v + w] rounds to one bf16 code (w >= 0;
// rounding is monotone). The two ends' own roundings move them inward by at
// most half an f32 ulp of v each (ENDS_C0 in the caller's w).
DETGEMM_INLINE bool rounds_alike(float v, float w) {
    const float lo = __fsub_rn(v, w), hi = __fadd_rn(v, w);
    dg_u32 p;
    asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(p) : "f"(hi), "f"(lo));
    return (p >> 16) == (p & 0xFFFFu);
}

// |v| <= 2^100 (false for NaN and the infinities): one integer compare.
DETGEMM_INLINE bool moderate(float v) { return (__float_as_uint(v) & 0x7FFFFFFFu) <= 0x71800000u; }

// y = a·gelu(b) for a bf16 store: a value whose bf16 rounding is that of
// the contract's fl(a·dg_gelu(b)), and whether the shortcut decided it. The
// distance: the GELU bound scaled by |a|, both products' roundings, and
// K_ABS·(|a| + 1) for subnormal products. A zero product with |a| < 16
// decides the signed zero: the contract's is then under 2^-135 in
// magnitude, with the same sign (a's times b's).
DETGEMM_INLINE float geglu_try(float a, float b, bool* ok) {
    float s;
    const float y = __fmul_rn(a, gelu_approx(b, &s));
    const float rel = __fmul_rn(__fmaf_rn(GELU_C1, s, GELU_C0 + PRODUCT_C0 + ENDS_C0), DG_F(0x33800000));  // ·2^-24
    const float w = __fmaf_rn(dg_abs(y), rel, __fmaf_rn(dg_abs(a), K_ABS, K_ABS));
    *ok = (y == 0.0f && dg_abs(a) < 16.0f) || (moderate(y) && rounds_alike(y, w));
    return y;
}

// The lowest value index left in a lane's mask: its bit, or 0 for none.
DETGEMM_INLINE dg_u32 lowest(dg_u32 left) { return left & (0u - left); }

// y[u] = a[u]·gelu(b[u]) over V values (V <= 32) for a bf16 store: every
// value the shortcut's, then the contract's sequence for those it left,
// one a lane a round (each lane its lowest such value; rounds while any
// lane has one, so one evaluation serves a whole warp's undecided values at
// once). The shortcuts of all V values come first, in one block, so that
// they interleave; the contract's sequence is compiled once, not V times.
template <int V>
DETGEMM_INLINE void geglu(const float (&a)[V], const float (&b)[V], float (&y)[V]) {
    dg_u32 left = 0;
#pragma unroll
    for (int u = 0; u < V; ++u) {
        bool ok;
        y[u] = geglu_try(a[u], b[u], &ok);
        left |= ok ? 0u : 1u << u;
    }
    const dg_u32 lanes = __activemask();
#pragma unroll 1
    while (__any_sync(lanes, left != 0)) {
        const dg_u32 bit = lowest(left);
        float aa = 0.0f, bb = 0.0f;
#pragma unroll
        for (int u = 0; u < V; ++u) {
            aa = bit == 1u << u ? a[u] : aa;
            bb = bit == 1u << u ? b[u] : bb;
        }
        const float e = __fmul_rn(aa, sel::gelu(bb));
#pragma unroll
        for (int u = 0; u < V; ++u) y[u] = bit == 1u << u ? e : y[u];
        left ^= bit;
    }
}

}  // namespace fast16
