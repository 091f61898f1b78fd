// gemm_slabs.cu: slab partials of the IEEE plan, computed in parallel.
//
// The "split-slab" strategy for shapes whose output tiles underfill the GPU:
// the slabs of the reduction are spread over grid.z, each block computing
// the chains of a run of consecutive slabs for one 128 x 128 tile (the same
// tile chains as the single-kernel family, from simt_tile.cuh), and writing
// every slab's partial p_s, unrounded f32, to the workspace
//
//   ws[s][i][j] = p_s(i, j),  laid out [S][rows][cols], row stride cols.
//
// gemm_fold.cu then folds the partials in the plan's order and stores. Each
// chain is the plan's chain and the fold is the plan's sequence of
// additions, so the output bits are those of every other strategy.
#include "prelude.cuh"
#include "simt_tile.cuh"

namespace slabs {

using namespace dgtile;

// Writes a tile's slab partials to the workspace.
struct WritePartials {
    float* ws;
    dg_i64 rows, cols, i0, j0;

    DETGEMM_INLINE void operator()(dg_i64 slab, float (&acc)[TM][TN]) const {
        const int ty = threadIdx.x >> 4, tx = threadIdx.x & 15;
        const dg_i64 rows_left = rows - i0, cols_left = cols - j0;
        float* p = ws + (slab * rows + i0) * cols + j0;
#pragma unroll
        for (int m = 0; m < TM; ++m) {
            const int i = acc_row(ty, m);
            if (i >= rows_left) continue;
            float* prow = p + i * cols;
#pragma unroll
            for (int n = 0; n < TN; ++n) {
                const int j = acc_col(tx, n);
                if (j < cols_left) prow[j] = acc[m][n];
            }
        }
    }
};

// Block (x, y, z) computes tile (x, y) over slabs [z*G, min((z+1)*G, S)).
template <int DTIN, bool A_RC, bool B_JC>
DETGEMM_INLINE void partials(const void* DETGEMM_RESTRICT A, const void* DETGEMM_RESTRICT B,
                             float* DETGEMM_RESTRICT ws, dg_i64 rows, dg_i64 cols, dg_i64 R,
                             dg_i64 lda, dg_i64 ldb, dg_i64 G) {
    __shared__ __align__(16) float smem[SMEM_TILE_BYTES / 4];
    const dg_i64 r_begin = (dg_i64)blockIdx.z * G * SLAB;
    if (r_begin >= R) return;  // uniform: a grid larger than the slabs
    const dg_i64 r_stop = r_begin + G * SLAB;
    const dg_i64 r_end = r_stop < R ? r_stop : R;
    WritePartials close{ws, rows, cols, (dg_i64)blockIdx.x * BM, (dg_i64)blockIdx.y * BN};
    tile_chains<DTIN, A_RC, B_JC>(A, B, rows, cols, r_begin, r_end, lda, ldb, close.i0, close.j0, smem, close);
}

}  // namespace slabs

// Entry points. Arguments: A, B, ws, rows, cols, R, lda, ldb, G (slabs per
// block) for the tile problem C[rows, cols] = A(rows, R) B(R, cols) in the
// layout the name gives: nn = forward (X @ W), nt = dX (dY @ Wᵀ), tn = dW
// (Xᵀ @ dY). Grid: (row tiles, column tiles, ceil(S / G)).
#define DETGEMM_SLABS_ENTRY(NAME, DTIN, ARC, BJC)                                                   \
    DETGEMM_KERNEL void __launch_bounds__(dgtile::THREADS, 2)                                       \
        NAME(const void* A, const void* B, float* ws, dg_i64 rows, dg_i64 cols, dg_i64 R,            \
             dg_i64 lda, dg_i64 ldb, dg_i64 G) {                                                     \
        slabs::partials<DTIN, ARC, BJC>(A, B, ws, rows, cols, R, lda, ldb, G);                       \
    }

DETGEMM_SLABS_ENTRY(detgemm_slabs_nn_f32, dgtile::F32, true, true)
DETGEMM_SLABS_ENTRY(detgemm_slabs_nn_bf16, dgtile::BF16, true, true)
DETGEMM_SLABS_ENTRY(detgemm_slabs_nn_f16, dgtile::F16, true, true)

DETGEMM_SLABS_ENTRY(detgemm_slabs_nt_f32, dgtile::F32, true, false)
DETGEMM_SLABS_ENTRY(detgemm_slabs_nt_bf16, dgtile::BF16, true, false)
DETGEMM_SLABS_ENTRY(detgemm_slabs_nt_f16, dgtile::F16, true, false)

DETGEMM_SLABS_ENTRY(detgemm_slabs_tn_f32, dgtile::F32, false, true)
DETGEMM_SLABS_ENTRY(detgemm_slabs_tn_bf16, dgtile::BF16, false, true)
DETGEMM_SLABS_ENTRY(detgemm_slabs_tn_f16, dgtile::F16, false, true)
