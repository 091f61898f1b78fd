// check_widen_f16.cu: a test-only family (kernels.CheckFamilies): never in
// the engine's families nor in the embedded set; tests build it with
// kernels.Build(..., WithFamilies("check_widen_f16")).
//
// The widening check: out[i] = dg_f16_to_f32_fast(in[i]) (tests compare it
// with the reference on all 65536 codes). Any grid covers any n.
//detgemm:check
#include "prelude.cuh"
#include "widen_f16.cuh"

DETGEMM_KERNEL void detgemm_rows_f16_widen_check(const dg_u16* in, float* out, dg_u64 n) {
    for (dg_u64 i = dg_global_thread(); i < n; i += dg_grid_stride()) out[i] = dg_f16_to_f32_fast(in[i]);
}
