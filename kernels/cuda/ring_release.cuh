// ring_release.cuh: giving a TMA-filled ring slot back after ldmatrix
// reads, as the few-row kernels fed by TMA do (gemm_tc_rows_tma.cu,
// gemm_sp24_rows.cu).
#pragma once
#include "prelude.cuh"
#include "tc_common.cuh"

namespace tc {

// Gives ring slot bar back once this thread's reads of it have completed:
// the fence orders the fragment reads (ldmatrix, generic proxy) before the
// arrival, after which the producer's next copy (TMA, async proxy) may
// overwrite the slot. The arrival's own release was not enough under
// NVRTC 12.4: repeated runs met rows of a slot already refilled
// (gemm's TestTCKernelsRepeatTheirBits).
DETGEMM_INLINE void release_after_reads(dg_u32 bar) {
    asm volatile("fence.acq_rel.cta;\n" ::: "memory");
    mbar_arrive(bar);
}

}  // namespace tc
