// gemm_slabs.cu: slab partials of the IEEE plan, computed in parallel.
//
// The "split-slab" strategy for shapes whose output tiles underfill the GPU:
// the slabs of the reduction are spread over grid.z, each block computing
// the chains of a run of consecutive slabs for one 128 x 128 tile, or
// 128 x 64 for the narrow entry points (the same code as the single-kernel
// family: simt_tile.cuh's tile_chains), and writing
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

// The Close of tile_chains for this family: writes a slab's partials to its
// workspace plane. Positions and block are read afresh (nothing derived
// from them stays live through the main loop); the members are kernel
// parameters.
template <int BN>
struct WritePartials {
    static constexpr int W = TN<BN>;
    float* ws;
    dg_i64 rows, cols, G;

    DETGEMM_INLINE void operator()(dg_i64 kt, float (&acc)[TM][W]) const {
        const int t = dg_tid();
        const int ty = out_ty(t), tx = out_tx(t);
        const dg_i64 i0 = (dg_i64)dg_ctaid_x() * BM, j0 = (dg_i64)dg_ctaid_y() * BN;
        const dg_i64 s = (dg_i64)dg_ctaid_z() * G + kt / TILES_PER_SLAB;
        float* p = ws + (s * rows + i0) * cols + j0;
        // A thread's columns are two runs of four: float4 stores where the
        // tile is in range and every run is 16-byte aligned (the workspace
        // is; cols % 4 keeps each row so).
        const bool vec = i0 + BM <= rows && j0 + BN <= cols && (cols % 4) == 0;
#pragma unroll
        for (int m = 0; m < TM; ++m) {
            const int i = out_row(ty, m);
            float* prow = p + i * cols;
            if (vec) {
#pragma unroll
                for (int h = 0; h < W / 4; ++h) {
                    float4 v;
                    v.x = acc[m][4 * h]; v.y = acc[m][4 * h + 1];
                    v.z = acc[m][4 * h + 2]; v.w = acc[m][4 * h + 3];
                    *reinterpret_cast<float4*>(prow + out_col<BN>(tx, 4 * h)) = v;
                }
            } else if (i0 + i < rows) {
#pragma unroll
                for (int n = 0; n < W; ++n) {
                    const int j = out_col<BN>(tx, n);
                    if (j0 + j < cols) prow[j] = acc[m][n];
                }
            }
        }
    }
};

// Block (x, y, z) computes tile (x, y) over slabs [z*G, min((z+1)*G, S)).
template <int DTIN, bool A_RC, bool B_JC, int BN>
DETGEMM_INLINE void partials(const void* DETGEMM_RESTRICT A, const void* DETGEMM_RESTRICT B,
                             float* DETGEMM_RESTRICT ws, dg_i64 rows, dg_i64 cols, dg_i64 R,
                             dg_i64 lda, dg_i64 ldb, dg_i64 G) {
    dg_grid_dependency_wait();  // launched overlapped: the kernel ahead has finished
    __shared__ __align__(16) float smem[SMEM_TILES<BN> / 4];
    const SlabGroup rg{R, G};
    if (rg.len() <= 0) return;  // uniform: a grid larger than the slabs
    WritePartials<BN> close{ws, rows, cols, G};
    tile_chains<DTIN, A_RC, B_JC, BN>(A, B, rows, cols, rg, lda, ldb, smem, close);
    // This block's partials are written: once every block is here the
    // fold (launched overlapped) may be scheduled, and waits for the grid
    // to finish before it reads them.
    dg_launch_dependents();
}

}  // namespace slabs

// Entry points. Arguments: A, B, ws, rows, cols, R, lda, ldb, G (slabs per
// block) for the tile problem C[rows, cols] = A(rows, R) B(R, cols) in the
// layout the name gives: nn = forward (X @ W), nt = dX (dY @ Wᵀ), tn = dW
// (Xᵀ @ dY). Grid: (row tiles, column tiles, ceil(S / G)); tiles are
// 128 x 128 (detgemm_slabs_*) or 128 x 64 (detgemm_slabs64_*).
#define DETGEMM_SLABS_ENTRY_BN(NAME, DTIN, ARC, BJC, BN)                                            \
    DETGEMM_KERNEL void __launch_bounds__(dgtile::THREADS, dgtile::MIN_BLOCKS<BN>)                                       \
        NAME(const void* A, const void* B, float* ws, dg_i64 rows, dg_i64 cols, dg_i64 R,            \
             dg_i64 lda, dg_i64 ldb, dg_i64 G) {                                                     \
        slabs::partials<DTIN, ARC, BJC, BN>(A, B, ws, rows, cols, R, lda, ldb, G);                   \
    }
#define DETGEMM_SLABS_ENTRY(NAME, DTIN, ARC, BJC) DETGEMM_SLABS_ENTRY_BN(NAME, DTIN, ARC, BJC, 128)
#define DETGEMM_SLABS64_ENTRY(NAME, DTIN, ARC, BJC) DETGEMM_SLABS_ENTRY_BN(NAME, DTIN, ARC, BJC, 64)

#include "zgemm_slabs_entries.cuh"
