// simt_tile.cuh: the register-tiled slab chains of the IEEE tiers, shared
// by every tiled family.
//
// tile_chains runs, for one BM x BN tile of the tile problem
// C[rows, cols] = A(rows, R) B(R, cols), the plan's slab chains over a range
// of whole slabs [r_begin, r_end) (r_begin a multiple of SLAB): each slab is
// one ascending __fmaf_rn chain from +0 per output element. At the end of
// every slab it hands the chains to the caller's Close functor, then starts
// the next slab from +0. What happens to a slab's result is the family's
// concern: gemm_slabs.cu writes each one to a workspace; a single-kernel
// family folds them in order into a running total.
//
// Note for the lead: gemm_simt.cu still carries its own copy of this loop
// (it is being tuned separately). To share it, make gemm_simt's gemm_tile
// call dgtile::tile_chains(..., r_begin = 0, r_end = R, ...) with a Close
// functor that does what its slab-closing block does today (first slab:
// tot = acc; later slabs: tot = __fadd_rn(tot, acc)), and move the tuned
// inner loop here; both families then run the same chains by construction.
#pragma once
#include "prelude.cuh"

namespace dgtile {

// Block tile BM x BN, k-step BK; each of the THREADS threads owns TM x TN
// outputs as two 4x4 quadrants 64 rows/columns apart (conflict-free float4
// reads of the staged tiles).
constexpr int BM = 128;
constexpr int BN = 128;
constexpr int BK = 16;
constexpr int TM = 8;
constexpr int TN = 8;
constexpr int THREADS = 256;

// The contract's slab length; a slab boundary always falls on a k-tile edge.
constexpr int SLAB = 256;
static_assert(SLAB % BK == 0, "slab boundaries must fall on k-tile edges");

// Shared memory of the two staged k-tiles of A and B.
constexpr int SMEM_TILE_BYTES = 2 * BK * (BM + BN) * 4;

// Element codes shared with the Go dispatcher.
constexpr int F32 = 0;
constexpr int BF16 = 1;
constexpr int F16 = 2;

// Staged elements travel as raw bits (an f32's, or a 16-bit code in the low
// half) from the global load to the shared-memory store, and are widened
// exactly only at the store: the f16 widening needs a few registers of its
// own, and at that point the chain registers of the compute are not live
// alongside the in-flight loads.
template <int DT>
DETGEMM_INLINE dg_u32 load_raw(const void* DETGEMM_RESTRICT p, dg_i64 i) {
    if constexpr (DT == F32) return static_cast<const dg_u32*>(p)[i];
    else return static_cast<const dg_u16*>(p)[i];
}

template <int DT>
DETGEMM_INLINE float widen_raw(dg_u32 u) {
    if constexpr (DT == F32) return dg_f32_from_bits(u);
    else if constexpr (DT == BF16) return dg_bf16_to_f32((dg_u16)u);
    else return dg_f16_to_f32((dg_u16)u);
}

// The tile row (column) of a thread's accumulator row m (column n).
DETGEMM_INLINE int acc_row(int ty, int m) { return m < 4 ? ty * 4 + m : 64 + ty * 4 + m - 4; }
DETGEMM_INLINE int acc_col(int tx, int n) { return n < 4 ? tx * 4 + n : 64 + tx * 4 + n - 4; }

// tile_chains: the tile at (i0, j0) of C[rows, cols], over [r_begin, r_end).
//   A(i, r) = A_RC ? A[i*lda + r] : A[r*lda + i]
//   B(r, j) = B_JC ? B[r*ldb + j] : B[j*ldb + r]
// smem holds SMEM_TILE_BYTES (16-byte aligned). close(slab, acc) is called
// once per slab, by every thread, with the thread's chains: acc[m][n] is the
// element (i0 + acc_row(ty, m), j0 + acc_col(tx, n)), ty = t / 16,
// tx = t % 16. The call is followed by a __syncthreads, so a Close may use
// shared memory of its own.
template <int DTIN, bool A_RC, bool B_JC, class Close>
DETGEMM_INLINE void tile_chains(const void* DETGEMM_RESTRICT A, const void* DETGEMM_RESTRICT B,
                                dg_i64 rows, dg_i64 cols, dg_i64 r_begin, dg_i64 r_end,
                                dg_i64 lda, dg_i64 ldb, dg_i64 i0, dg_i64 j0, float* smem,
                                Close& close) {
    float (*As)[BK][BM] = reinterpret_cast<float (*)[BK][BM]>(smem);
    float (*Bs)[BK][BN] = reinterpret_cast<float (*)[BK][BN]>(smem + 2 * BK * BM);
    const int t = threadIdx.x;

    // Staging: each thread moves 8 elements of A and 8 of B per k-tile,
    // along whichever axis is contiguous in memory.
    const int a_lin = A_RC ? (t >> 1) : ((t & 15) * 8);
    const int a_red = A_RC ? ((t & 1) * 8) : (t >> 4);
    const int b_lin = B_JC ? ((t & 15) * 8) : (t >> 1);
    const int b_red = B_JC ? (t >> 4) : ((t & 1) * 8);

    dg_u32 ra[8], rb[8];  // raw bits of the next k-tile
    const dg_i64 a_first = i0 + a_lin;
    const dg_i64 b_first = j0 + b_lin;
    const dg_i64 a_base = A_RC ? a_first * lda + a_red : (dg_i64)a_red * lda + a_first;
    const dg_i64 b_base = B_JC ? (dg_i64)b_red * ldb + b_first : b_first * ldb + b_red;
    const dg_i64 a_rstride = A_RC ? 1 : lda;
    const dg_i64 b_rstride = B_JC ? ldb : 1;
    const dg_i64 a_lin_left = rows - a_first;
    const dg_i64 b_lin_left = cols - b_first;
    const dg_i64 a_red_left = r_end - a_red;
    const dg_i64 b_red_left = r_end - b_red;
    constexpr int ES = DTIN == F32 ? 4 : 2;

    auto fetch = [&](dg_i64 k0) {
        const void* pa = static_cast<const char*>(A) + (a_base + k0 * a_rstride) * ES;
        const void* pb = static_cast<const char*>(B) + (b_base + k0 * b_rstride) * ES;
#pragma unroll
        for (int q = 0; q < 8; ++q) {
            const bool a_ok = A_RC ? (a_lin_left > 0 && k0 + q < a_red_left) : (q < a_lin_left && k0 < a_red_left);
            const bool b_ok = B_JC ? (q < b_lin_left && k0 < b_red_left) : (b_lin_left > 0 && k0 + q < b_red_left);
            ra[q] = a_ok ? load_raw<DTIN>(pa, q) : 0u;  // 0 widens to +0 in every type
            rb[q] = b_ok ? load_raw<DTIN>(pb, q) : 0u;
        }
    };
    auto stage = [&](int buf) {
#pragma unroll
        for (int q = 0; q < 8; ++q) {
            const float a = widen_raw<DTIN>(ra[q]), b = widen_raw<DTIN>(rb[q]);
            if (A_RC) As[buf][a_red + q][a_lin] = a;
            else      As[buf][a_red][a_lin + q] = a;
            if (B_JC) Bs[buf][b_red][b_lin + q] = b;
            else      Bs[buf][b_red + q][b_lin] = b;
        }
    };

    const int ty = t >> 4, tx = t & 15;
    float acc[TM][TN];
#pragma unroll
    for (int m = 0; m < TM; ++m)
#pragma unroll
        for (int n = 0; n < TN; ++n) acc[m][n] = 0.0f;

    const dg_i64 tiles = (r_end - r_begin + BK - 1) / BK;
    fetch(r_begin);
    stage(0);
    __syncthreads();

    for (dg_i64 kt = 0; kt < tiles; ++kt) {
        const int buf = (int)(kt & 1);
        const dg_i64 k0 = r_begin + kt * BK;
        const bool more = kt + 1 < tiles;
        if (more) fetch(k0 + BK);

        const dg_i64 left = r_end - k0;
        const int kmax = left < BK ? (int)left : BK;
#pragma unroll
        for (int kk = 0; kk < BK; ++kk) {
            if (kk < kmax) {  // uniform: only the range's last tile is short
                float a[TM], b[TN];
                const float4 a0 = *reinterpret_cast<const float4*>(&As[buf][kk][ty * 4]);
                const float4 a1 = *reinterpret_cast<const float4*>(&As[buf][kk][64 + ty * 4]);
                const float4 b0 = *reinterpret_cast<const float4*>(&Bs[buf][kk][tx * 4]);
                const float4 b1 = *reinterpret_cast<const float4*>(&Bs[buf][kk][64 + tx * 4]);
                a[0] = a0.x; a[1] = a0.y; a[2] = a0.z; a[3] = a0.w;
                a[4] = a1.x; a[5] = a1.y; a[6] = a1.z; a[7] = a1.w;
                b[0] = b0.x; b[1] = b0.y; b[2] = b0.z; b[3] = b0.w;
                b[4] = b1.x; b[5] = b1.y; b[6] = b1.z; b[7] = b1.w;
#pragma unroll
                for (int m = 0; m < TM; ++m)
#pragma unroll
                    for (int n = 0; n < TN; ++n) acc[m][n] = __fmaf_rn(a[m], b[n], acc[m][n]);
            }
        }

        if (more) stage(buf ^ 1);

        // Close a slab at every SLAB boundary and at the end of the range
        // (r_begin is a slab boundary, so slab edges are k-tile edges).
        if (!more || ((kt + 1) * BK) % SLAB == 0) {
            close(k0 / SLAB, acc);
#pragma unroll
            for (int m = 0; m < TM; ++m)
#pragma unroll
                for (int n = 0; n < TN; ++n) acc[m][n] = 0.0f;
        }
        __syncthreads();
    }
}

}  // namespace dgtile
