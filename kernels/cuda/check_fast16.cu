// check_fast16.cu: a test-only family (kernels.CheckFamilies), built by
// gemm's TestFast16* with kernels.Build(..., WithFamilies("check_fast16")).
//
// fast16.cuh's shortcut (the GeGLU forward into bf16) against the
// contract's sequences (activation.cuh's branchy forms, which gemm/ref
// reproduces), over every f32 input. Each kernel takes any grid of a
// power-of-two number of threads (so that a warp's lanes run the same
// number of iterations, as fast16's votes need) and accumulates into stats:
//   [0] mismatches (or, for the bound check, inputs over half the bound)
//   [1] inputs the shortcut left to the contract's sequence, of
//   [2] the inputs with 2^-4 <= |b| <= 4 (the typical range)
//   [3] the first mismatching input's bits (atomicMin; start it at ~0)
//   [4] the largest error over the bound, as f32 bits (bound check)
//detgemm:check
#include "prelude.cuh"
#include "epilogue.cuh"
#include "elementwise.cuh"
#include "fast16.cuh"

namespace checkfast16 {

DETGEMM_INLINE void mismatch(dg_u32* stats, dg_u64 i) {
    atomicAdd(stats + 0, 1u);
    atomicMin(stats + 3, (dg_u32)i);
}

// y = a·gelu(b) into bf16 for each a of as: fast16::geglu's stored code
// against the contract's fl(a·dg_gelu(b)), every b.
DETGEMM_INLINE void geglu(const float* as, int na, dg_u32* stats) {
    for (dg_u64 i = dg_global_thread(); i < (1ull << 32); i += dg_grid_stride()) {
        const float b = __uint_as_float((dg_u32)i);
        const float act = dg_gelu(b);
        const float ab = dg_abs(b);
        const bool typical = ab >= 0.0625f && ab <= 4.0f;
        for (int k = 0; k < na; ++k) {
            const float a = as[k];
            bool ok;
            fast16::geglu_try(a, b, &ok);
            float av[1] = {a}, bv[1] = {b}, y[1];
            fast16::geglu<1>(av, bv, y);
            if (dg_f32_to_bf16_rne(y[0]) != dg_f32_to_bf16_rne(__fmul_rn(a, act))) mismatch(stats, i);
            if (typical) {
                if (!ok) atomicAdd(stats + 1, 1u);
                atomicAdd(stats + 2, 1u);
            }
        }
    }
}

// The bound's premise: for every finite x, the approximation v of gelu(x)
// is within half of (C1·s + C0)·2^-24·|v| + K_ABS of the contract's f32
// value c (what geglu_try scales by).
DETGEMM_INLINE void bound(dg_u32* stats) {
    for (dg_u64 i = dg_global_thread(); i < (1ull << 32); i += dg_grid_stride()) {
        const float x = __uint_as_float((dg_u32)i);
        if (!(dg_abs(x) <= DG_F(0x7F7FFFFF))) continue;  // the infinities and NaN
        float s;
        const float v = fast16::gelu_approx(x, &s), c = dg_gelu(x);
        const double av = v < 0.0f ? -(double)v : (double)v, d = (double)v - (double)c;
        const double lim =
            ((double)fast16::GELU_C1 * (double)s + (double)fast16::GELU_C0) * 5.9604644775390625e-8 * av +  // ·2^-24
            (double)fast16::K_ABS;
        const double err = d < 0.0 ? -d : d;
        // (s is +Inf where z overflowed; v and c are then both the same zero.)
        const float r = err == 0.0 ? 0.0f : (float)(err / lim);
        if (!(r <= 0.5f)) mismatch(stats, i);
        if (r > 0.0f) atomicMax(stats + 4, __float_as_uint(r));
    }
}

}  // namespace checkfast16

DETGEMM_KERNEL void detgemm_check_fast16_geglu(const float* as, int na, dg_u32* stats) { checkfast16::geglu(as, na, stats); }

DETGEMM_KERNEL void detgemm_check_fast16_bound(dg_u32* stats) { checkfast16::bound(stats); }
