// util.cu: elementwise helper kernels used by the engine and its tests.
//
//   detgemm_fill_u32 / detgemm_fill_u16   set every element to one bit
//                                        pattern (tests poison outputs with
//                                        NaN so an unwritten element shows)
//   detgemm_f32_to_bf16_rne / _f16_rne   narrow with one RNE rounding
//   detgemm_bf16_to_f32 / detgemm_f16_to_f32
//                                        widen, exactly
//
// Each is a grid-stride loop over a 64-bit count, so any launch shape
// covers any n; the host picks the grid. 16-bit values travel as raw bits
// (dg_u16) because the kernels never do arithmetic in the narrow types.
#include "prelude.cuh"

DETGEMM_KERNEL void detgemm_fill_u32(dg_u32* DETGEMM_RESTRICT p, dg_u64 n, dg_u32 v) {
    for (dg_u64 i = dg_global_thread(); i < n; i += dg_grid_stride()) {
        p[i] = v;
    }
}

DETGEMM_KERNEL void detgemm_fill_u16(dg_u16* DETGEMM_RESTRICT p, dg_u64 n, dg_u16 v) {
    for (dg_u64 i = dg_global_thread(); i < n; i += dg_grid_stride()) {
        p[i] = v;
    }
}

DETGEMM_KERNEL void detgemm_f32_to_bf16_rne(const float* DETGEMM_RESTRICT in,
                                            dg_u16* DETGEMM_RESTRICT out, dg_u64 n) {
    for (dg_u64 i = dg_global_thread(); i < n; i += dg_grid_stride()) {
        out[i] = dg_f32_to_bf16_rne(in[i]);
    }
}

DETGEMM_KERNEL void detgemm_f32_to_f16_rne(const float* DETGEMM_RESTRICT in,
                                           dg_u16* DETGEMM_RESTRICT out, dg_u64 n) {
    for (dg_u64 i = dg_global_thread(); i < n; i += dg_grid_stride()) {
        out[i] = dg_f32_to_f16_rne(in[i]);
    }
}

DETGEMM_KERNEL void detgemm_bf16_to_f32(const dg_u16* DETGEMM_RESTRICT in,
                                        float* DETGEMM_RESTRICT out, dg_u64 n) {
    for (dg_u64 i = dg_global_thread(); i < n; i += dg_grid_stride()) {
        out[i] = dg_bf16_to_f32(in[i]);
    }
}

DETGEMM_KERNEL void detgemm_f16_to_f32(const dg_u16* DETGEMM_RESTRICT in,
                                       float* DETGEMM_RESTRICT out, dg_u64 n) {
    for (dg_u64 i = dg_global_thread(); i < n; i += dg_grid_stride()) {
        out[i] = dg_f16_to_f32(in[i]);
    }
}
