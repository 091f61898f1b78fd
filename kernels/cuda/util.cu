// util.cu: elementwise helper kernels used by the engine and its tests.
//
//   detgemm_fill_u32 / detgemm_fill_u16   set every element to one bit
//                                        pattern (tests poison outputs with
//                                        NaN so an unwritten element shows)
//   detgemm_f32_to_bf16_rne / _f16_rne   narrow with one RNE rounding
//   detgemm_bf16_to_f32 / detgemm_f16_to_f32
//                                        widen, exactly
//   detgemm_read_xor                     read a buffer once (the bench's
//                                        read floor)
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

// detgemm_read_xor reads n 16-byte words once, four loads in flight a
// thread and no L1 allocation, and writes one word a warp (the xor of what
// it read, so the loads cannot be dropped) to out[global warp]. The bench
// times it as the read floor of a bandwidth-bound GEMM: the bytes a GEMV
// reads, read by the simplest kernel that can. On sm_90 it may be launched
// overlapped, as detgemm's few-row kernels are: it then waits for the
// kernel ahead before reading, and lets the next one in once its loads are
// done.
DETGEMM_KERNEL void detgemm_read_xor(const uint4* DETGEMM_RESTRICT in, dg_u64 n, dg_u32* DETGEMM_RESTRICT out) {
    dg_grid_dependency_wait();
    const dg_u64 stride = dg_grid_stride();
    dg_u64 i = dg_global_thread();
    dg_u32 acc = 0;
    for (; i + 3 * stride < n; i += 4 * stride) {
        const uint4 a = __ldcs(in + i), b = __ldcs(in + i + stride);
        const uint4 c = __ldcs(in + i + 2 * stride), d = __ldcs(in + i + 3 * stride);
        acc ^= a.x ^ a.y ^ a.z ^ a.w ^ b.x ^ b.y ^ b.z ^ b.w ^ c.x ^ c.y ^ c.z ^ c.w ^ d.x ^ d.y ^ d.z ^ d.w;
    }
    for (; i < n; i += stride) {
        const uint4 a = __ldcs(in + i);
        acc ^= a.x ^ a.y ^ a.z ^ a.w;
    }
    dg_launch_dependents();
    for (int o = 16; o > 0; o /= 2) acc ^= __shfl_xor_sync(0xffffffffu, acc, o);
    if (threadIdx.x % 32 == 0) out[dg_global_thread() / 32] = acc;
}
