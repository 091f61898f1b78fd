// gemm_simt.cu: the IEEE tiers (f32, and typed bf16/f16) on CUDA cores.
//
// One register-tiled kernel template, instantiated for the triad's three
// layouts, implements the IEEE plan of the numerical contract:
//
//   the reduction range [0, R) is cut into slabs of SLAB = 256; each slab is
//   one ascending __fmaf_rn chain from +0; the slab results fold left to right
//   into the output value; forward adds the bias after the fold, dW folds onto
//   the value already in its f32 master buffer; one RNE rounding at the store.
//
// Typed inputs (bf16/f16) are widened exactly to f32 when a tile is staged, so
// the typed tier runs the very same chains as the f32 tier. Nothing here
// depends on M, on the grid, or on pointer alignment: a row's bits are the
// same in any batch. Alignment and edges only pick how a tile is loaded
// (vector loads, or element by element with bounds checks); every path
// stages the same values and runs the same chain.
//
// The chains themselves are simt_tile.cuh's tile_chains, shared with the
// split-slab family (gemm_slabs.cu); this file adds the in-block fold of the
// slab results into running totals, the bias and the store. Two tile widths:
// 128 x 128 (detgemm_simt_*) and 128 x 64 (detgemm_simt64_*, for grids of
// square tiles that underfill the GPU); same chains, same fold, same bits.
#include "prelude.cuh"
#include "simt_tile.cuh"
#include "epilogue.cuh"

namespace simt {

using namespace dgtile;

// The running slab totals live in shared memory, not registers: holding both
// the chain accumulators and the totals in registers needs over 255 of them.
// Dynamic shared memory: tile_chains' two stages of A and B tiles, then the
// totals laid out [TM*TN][THREADS] so each thread's accesses are
// conflict-free.
template <int BN>
constexpr int SMEM_BYTES = SMEM_TILES<BN> + TM * TN<BN> * THREADS * 4;
static_assert(SMEM_BYTES<128> == 99328, "the Go dispatcher launches 128 x 128 tiles with 99328 bytes of dynamic shared memory");
static_assert(SMEM_BYTES<64> == 58368, "the Go dispatcher launches 128 x 64 tiles with 58368 bytes of dynamic shared memory");

// How slab results fold into the output.
constexpr int FOLD_STORE = 0;       // forward, dX: y = p0 + p1 + ... (+ bias)
constexpr int FOLD_ACCUMULATE = 1;  // dW: d = d_old + p0 + p1 + ...

// Whether four consecutive outputs of C (from a multiple of four columns)
// are one aligned access.
template <int DT>
DETGEMM_INLINE bool vec_out(const void* C, dg_i64 ldc) {
    return ((dg_u64)C % (DT == F32 ? 16 : 8)) == 0 && (ldc % 4) == 0;
}

// The Close of tile_chains for the single-kernel family: slab results fold
// left to right into the thread's running totals (tot[e * THREADS]). For
// FOLD_STORE the first slab's result is the total; for FOLD_ACCUMULATE the
// totals start at the old output and every slab is added.
template <int FOLD, int BN>
struct FoldTotals {
    static constexpr int W = TN<BN>;
    float* tot;
    bool first;

    DETGEMM_INLINE void operator()(dg_i64, float (&acc)[TM][W]) {
        if (FOLD == FOLD_STORE && first) {
#pragma unroll
            for (int m = 0; m < TM; ++m)
#pragma unroll
                for (int n = 0; n < W; ++n) tot[(m * W + n) * THREADS] = acc[m][n];
            first = false;
        } else {
#pragma unroll
            for (int m = 0; m < TM; ++m)
#pragma unroll
                for (int n = 0; n < W; ++n) {
                    float* p = &tot[(m * W + n) * THREADS];
                    *p = epi::fold_add(*p, acc[m][n]);
                }
        }
    }
};

// C[i, j] (op)= sum_r A(i, r) * B(r, j) for a BM x BN tile of C.
//   A(i, r) = A_RC ? A[i*lda + r] : A[r*lda + i]
//   B(r, j) = B_JC ? B[r*ldb + j] : B[j*ldb + r]
// A thread's outputs come in runs of four consecutive columns (out_col), so
// where C and ldc allow, the output is written a run at a time, one 16-byte
// (or 8-byte) store: a scalar store wrote every fourth word of four lines a
// warp instruction, four times the L2 requests, most of a short reduction's
// time. dW's master is read element by element in the square tile, all 64
// loads in flight before the first is needed (16-byte loads four rows at a
// time, to stay within the registers, made two round trips of it), and a
// run at a time four rows at a time in the narrow tile
// (bench/NOTES-kernels.md).
template <int DTIN, int DTOUT, bool A_RC, bool B_JC, int FOLD, int BN, class Act = epi::Identity>
DETGEMM_INLINE void gemm_tile(const void* DETGEMM_RESTRICT A, const void* DETGEMM_RESTRICT B,
                              void* DETGEMM_RESTRICT C, const float* DETGEMM_RESTRICT bias,
                              dg_i64 M, dg_i64 N, dg_i64 R, dg_i64 lda, dg_i64 ldb, dg_i64 ldc) {
    constexpr int W = TN<BN>;
    extern __shared__ __align__(16) float smem[];
    FoldTotals<FOLD, BN> close{smem + SMEM_TILES<BN> / 4 + threadIdx.x, true};

    // dW folds every slab onto the value already in the master buffer.
    if (FOLD == FOLD_ACCUMULATE) {
        const int tp = dg_tid();
        const int typ = out_ty(tp), txp = out_tx(tp);
        const dg_i64 ip = (dg_i64)dg_ctaid_x() * BM, jp = (dg_i64)dg_ctaid_y() * BN;
        const bool vec = vec_out<F32>(C, ldc);
#pragma unroll(BN == 64 ? 4 : TM)
        for (int m = 0; m < TM; ++m) {
            const dg_i64 i = ip + out_row(typ, m);
            const float* crow = static_cast<const float*>(C) + i * ldc + jp;
#pragma unroll
            for (int r = 0; r < W / 4; ++r) {
                const int jn = out_col<BN>(txp, 4 * r);
                float v[4];
                if (BN == 64 && i < M && vec && jp + jn + 3 < N) {
                    const float4 q = *reinterpret_cast<const float4*>(crow + jn);
                    v[0] = q.x, v[1] = q.y, v[2] = q.z, v[3] = q.w;
                } else {
#pragma unroll
                    for (int c = 0; c < 4; ++c) v[c] = (i < M && jp + jn + c < N) ? crow[jn + c] : 0.0f;
                }
#pragma unroll
                for (int c = 0; c < 4; ++c) close.tot[(m * W + 4 * r + c) * THREADS] = v[c];
            }
        }
    }

    tile_chains<DTIN, A_RC, B_JC, BN>(A, B, M, N, Whole{R}, lda, ldb, smem, close);
    dg_launch_dependents();  // only the stores are left: the next grid may be scheduled

    // Positions, block and bias are read afresh: nothing computed before
    // the main loop stays live through it for the epilogue's sake.
    const int te = dg_tid();
    const int tye = out_ty(te), txe = out_tx(te);
    const dg_i64 ie = (dg_i64)dg_ctaid_x() * BM, je = (dg_i64)dg_ctaid_y() * BN;
    const float* tot = smem + SMEM_TILES<BN> / 4 + te;
    const bool vec = vec_out<DTOUT>(C, ldc);
#pragma unroll
    for (int m = 0; m < TM; ++m) {
        const dg_i64 i = ie + out_row(tye, m);
        if (i >= M) continue;
#pragma unroll
        for (int r = 0; r < W / 4; ++r) {
            const dg_i64 j = je + out_col<BN>(txe, 4 * r);
            if (j >= N) continue;
            float v[4];
#pragma unroll
            for (int c = 0; c < 4; ++c) {
                v[c] = tot[(m * W + 4 * r + c) * THREADS];
                if (bias != nullptr && j + c < N) v[c] = epi::bias_add(v[c], bias[j + c]);
                if (FOLD == FOLD_STORE) v[c] = epi::act<Act>(v[c]);
            }
            if (vec && j + 3 < N) {
                epi::store4<DTOUT>(C, i * ldc + j, v);
            } else {
#pragma unroll
                for (int c = 0; c < 4; ++c)
                    if (j + c < N) epi::store<DTOUT>(C, i * ldc + j + c, v[c]);
            }
        }
    }
}

}  // namespace simt

// Entry points. Argument order for all: A, B, C, bias (nullable), M, N, R,
// lda, ldb, ldc — the tile problem C[M,N] = A[M,R] B[R,N] in the layout the
// name gives: nn = forward (X @ W), nt = dX (dY @ Wᵀ), tn = dW (Xᵀ @ dY).
// detgemm_simt_*: 128 x 128 tiles, grid (ceil(M/128), ceil(N/128));
// detgemm_simt64_*: 128 x 64 tiles, grid (ceil(M/128), ceil(N/64)).
#define DETGEMM_SIMT_ENTRY_BN(NAME, DTIN, DTOUT, ARC, BJC, FOLD, BN)                              \
    DETGEMM_KERNEL void __launch_bounds__(dgtile::THREADS, dgtile::MIN_BLOCKS<BN>)                                       \
        NAME(const void* A, const void* B, void* C, const float* bias, dg_i64 M, dg_i64 N,         \
             dg_i64 R, dg_i64 lda, dg_i64 ldb, dg_i64 ldc) {                                       \
        dg_grid_dependency_wait();                                                                 \
        simt::gemm_tile<DTIN, DTOUT, ARC, BJC, FOLD, BN>(A, B, C, bias, M, N, R, lda, ldb, ldc);   \
    }
#define DETGEMM_SIMT_ENTRY(NAME, DTIN, DTOUT, ARC, BJC, FOLD) DETGEMM_SIMT_ENTRY_BN(NAME, DTIN, DTOUT, ARC, BJC, FOLD, 128)
#define DETGEMM_SIMT64_ENTRY(NAME, DTIN, DTOUT, ARC, BJC, FOLD) DETGEMM_SIMT_ENTRY_BN(NAME, DTIN, DTOUT, ARC, BJC, FOLD, 64)

#include "zgemm_simt_entries.cuh"
