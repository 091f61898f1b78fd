// gemm_wgmma_matmul.cu: Matmul on Hopper's wgmma with its epilogue fused
// (wgmma.cuh's INIT_MM): one slab (the tensor-core plan's S = 1), any of
// the four layouts, operands staged by TMA (16-byte aligned, leading
// dimensions multiples of 8). The chain of an element is the one every
// tensor-core kernel runs (gemm_wgmma.cu), started at the start form's
// value; the epilogue is gemm_matmul.cu's, element for element, so the
// fused kernel and the general path give the same bits.
//detgemm:only sm_90a
#include "prelude.cuh"
#include "wgmma.cuh"

// Entry points: detgemm_wgmm{tile}_{act}_{nn,nt,tn,tt}_{in}_{out}, tiles
// 128x256 and 128x192 (two warpgroups a tile; the gated epilogues 128x256
// only); one kernel per activation, so that each holds only its own code. Arguments: the TMA maps of A and B,
// D, the start form's bias (nullable), M, N, R, ldd; then Matmul's: C
// (nullable), ldc, the fold form's bias (nullable), aux, mask (nullable),
// ldaux, alpha, beta, form. Tile::THREADS threads; grid: min(tiles, SMs).
#define DETGEMM_WGMM_ENTRY(NAME, TILE, DTIN, DTOUT, ARC, BJC, ACT)                                              \
    DETGEMM_KERNEL void __launch_bounds__(wg::TILE::THREADS, 1)                                                 \
        NAME(const __grid_constant__ wg::tensor_map tmA, const __grid_constant__ wg::tensor_map tmB, void* D,  \
             const float* bias, dg_i64 M, dg_i64 N, dg_i64 R, dg_i64 ldd, const void* C, dg_i64 ldc,             \
             const float* fbias, void* aux, unsigned char* mask, dg_i64 ldaux, float alpha, float beta,           \
             int form) {                                                                                         \
        dg_grid_dependency_wait();                                                                               \
        const wg::MMArgs mm{C, ldc, fbias, aux, mask, ldaux, alpha, beta, form};                                 \
        wg::gemm<wg::TILE, DTIN, DTOUT, ARC, BJC, wg::INIT_MM, epi::Identity, ACT>(tmA, tmB, D, bias, M, N, R, ldd, \
                                                                                  nullptr, R, 0, mm);            \
    }

#include "zgemm_wgmma_matmul_entries.cuh"
