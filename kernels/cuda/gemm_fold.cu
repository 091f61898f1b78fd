// gemm_fold.cu: the ordered fold of slab partials, the last step of the
// strategies that compute slabs in parallel (gemm_slabs.cu, gemm_rows.cu).
//
// The workspace holds S partials laid out [S][rows][cols]; output element e
// (row-major, row stride cols) becomes, exactly as the plan says:
//
//   store (forward, dX):  v = p_0; v = v + p_1; ...; v = v + p_{S-1};
//                         then v = v + bias[j] when a bias is given;
//                         then one RNE rounding to the output type.
//   accumulate (dW):      v = C[e]; v = v + p_0; ...; v = v + p_{S-1}; store f32.
//
// Every addition is __fadd_rn in ascending s, so the bits equal the
// single-kernel fold.
#include "prelude.cuh"
#include "epilogue.cuh"

namespace fold {

using epi::F32;  // epilogue.cuh's output codes
using epi::BF16;
using epi::F16;

// A partial, read once: marked first to leave the L2. The fold streams
// every partial; lines it brings in from memory would otherwise push out
// partials the slab kernel just wrote that are still to be read.
DETGEMM_INLINE float load_once(const float* p, dg_u64 policy) {
    float v;
    asm volatile("ld.global.L2::cache_hint.f32 %0, [%1], %2;" : "=f"(v) : "l"(p), "l"(policy));
    return v;
}

template <int DTOUT, bool ACCUMULATE, class Act = epi::Identity>
DETGEMM_INLINE void run(const float* DETGEMM_RESTRICT ws, void* DETGEMM_RESTRICT C,
                        const float* DETGEMM_RESTRICT bias, dg_u64 n, dg_u64 cols, dg_u64 S) {
    dg_grid_dependency_wait();  // launched overlapped: the partials are all written
    dg_u64 policy;
    asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(policy));
    for (dg_u64 e = dg_global_thread(); e < n; e += dg_grid_stride()) {
        float v;
        dg_u64 s;
        if constexpr (ACCUMULATE) {
            v = static_cast<const float*>(C)[e];
            s = 0;
        } else {
            v = load_once(ws + e, policy);
            s = 1;
        }
        // Independent loads first, dependent additions after: eight
        // partials in flight at once (a long reduction with few outputs
        // leaves each thread many partials to fold).
        for (; s + 8 <= S; s += 8) {
            float p[8];
#pragma unroll
            for (int u = 0; u < 8; ++u) p[u] = load_once(ws + (s + u) * n + e, policy);
#pragma unroll
            for (int u = 0; u < 8; ++u) v = epi::fold_add(v, p[u]);
        }
        for (; s < S; ++s) v = epi::fold_add(v, load_once(ws + s * n + e, policy));
        if (!ACCUMULATE && bias != nullptr) v = epi::bias_add(v, bias[e % cols]);
        if (!ACCUMULATE) v = epi::act<Act>(v);
        epi::store<DTOUT>(C, e, v);
    }
}

}  // namespace fold

// Entry points. Arguments: ws, C, bias (nullable; ignored when
// accumulating), n = rows*cols, cols, S. Any grid covers any n.
#define DETGEMM_FOLD_ENTRY(NAME, DTOUT, ACC)                                                        \
    DETGEMM_KERNEL void __launch_bounds__(256)                                                      \
        NAME(const float* ws, void* C, const float* bias, dg_u64 n, dg_u64 cols, dg_u64 S) {        \
        fold::run<DTOUT, ACC>(ws, C, bias, n, cols, S);                                             \
    }

#include "zgemm_fold_entries.cuh"
