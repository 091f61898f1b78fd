// simt_tile.cuh: the register-tiled slab chains of the IEEE tiers, the one
// copy of the loop that every tiled family runs.
//
// tile_chains runs, for the BM x BN tile of the tile problem
// C[M, N] = A(M, R) B(R, N) at block (blockIdx.x, blockIdx.y), the plan's
// slab chains over a range of whole slabs [r0, r0 + len) (r0 a multiple of
// SLAB): each slab is one ascending __fmaf_rn chain from +0 per output
// element, exactly one fma per r. At the end of every slab it hands the
// chains to the caller's Close functor, then starts the next slab from +0.
// What happens to a slab's result is the family's concern: gemm_simt.cu
// folds the slabs in order into running totals (r0 = 0, len = R);
// gemm_slabs.cu writes each one to a workspace. So both families run the
// same chains by construction.
//
// The loop is gemm_simt's tuned "v2" (bench/NOTES-simt.md): 128 x BN x 16
// tiles, 256 threads of 8 x (BN/16) outputs, vector loads where the block is
// in range and aligned, r-contiguous operands read 8 rows x 64 bytes per
// warp instruction, padded staged tiles, an unconditional 16-step body for
// full k-tiles. BN, the tile width, is 128 (the default tile) or 64 (the
// narrow tile, for grids that underfill the GPU: twice the blocks for the
// same output, each the same chains over half the columns). Nothing here depends on M, on the grid, or on pointer alignment:
// alignment and edges only pick how a tile is loaded; every path stages the
// same values and runs the same chains.
#pragma once
#include "prelude.cuh"
#include "widen_f16.cuh"

namespace dgtile {

// Block tile BM x BN, k-step BK; each of the 256 threads owns TM x TN<BN>
// outputs: rows as two runs of four 64 apart, columns as TN/4 runs of four
// BN/2 apart (conflict-free float4 reads). A warp's 32 threads cover 4 x 8
// thread positions, so each of a k step's fragment reads (two of A, TN/4 of
// B) is one shared-memory wavefront.
constexpr int BM = 128;
constexpr int BK = 16;
constexpr int TM = 8;
constexpr int THREADS = 256;

// The tile widths: 128 (square tiles) and 64 (narrow tiles).
template <int BN>
constexpr int TN = BN / 16;
template <int BN>
constexpr bool width_ok = BN == 128 || BN == 64;
// Blocks an SM runs at once (__launch_bounds__): two square blocks (128
// registers a thread), three narrow ones (at most 80).
template <int BN>
constexpr int MIN_BLOCKS = BN == 128 ? 2 : 3;

// The contract's slab length; a slab boundary always falls on a k-tile edge.
constexpr int SLAB = 256;
static_assert(SLAB % BK == 0, "slab boundaries must fall on k-tile edges");
constexpr int TILES_PER_SLAB = SLAB / BK;

// Staged tiles are [BK][LIN + 4] for an operand of LIN = 128 or 64 rows
// (columns): the pad spreads the transposing stores (a warp writes 8
// consecutive rows at four r offsets) over 32 banks with at most two-way
// conflicts, and keeps each row 16-byte aligned for float4 reads.
template <int LIN>
constexpr int LDOF = LIN + 4;
template <int BN>
constexpr int STAGE = BK * (LDOF<BM> + LDOF<BN>);  // floats: A then B

// Shared memory tile_chains<.., BN> needs: two stages of A and B tiles
// (128 x 128: 33792 bytes; 128 x 64: 25600).
template <int BN>
constexpr int SMEM_TILES = 2 * STAGE<BN> * 4;

// Element codes shared with the Go dispatcher.
constexpr int F32 = 0;
constexpr int BF16 = 1;
constexpr int F16 = 2;

// Four consecutive input elements as loaded, before widening: four f32 words
// or four 16-bit values packed in two words. Elements travel as raw bits
// from the global load to the shared-memory store and are widened exactly
// only there.
template <int DT>
struct Quad {
    dg_u32 w[DT == F32 ? 4 : 2];
};

template <int DT>
DETGEMM_INLINE float quad_elem(const Quad<DT>& q, int e) {
    if (DT == F32) return dg_f32_from_bits(q.w[e]);
    const dg_u16 h = (dg_u16)(q.w[e >> 1] >> (16 * (e & 1)));
    return DT == BF16 ? dg_bf16_to_f32(h) : dg_f16_to_f32_fast(h);
}

// One aligned vector load of four elements.
template <int DT>
DETGEMM_INLINE void load_quad_vec(Quad<DT>& q, const char* p) {
    if (DT == F32) {
        const float4 v = __ldg(reinterpret_cast<const float4*>(p));
        q.w[0] = dg_f32_bits(v.x); q.w[1] = dg_f32_bits(v.y);
        q.w[2] = dg_f32_bits(v.z); q.w[3] = dg_f32_bits(v.w);
    } else {
        const uint2 v = __ldg(reinterpret_cast<const uint2*>(p));
        q.w[0] = v.x; q.w[1] = v.y;
    }
}

// Element e of four consecutive elements, or zero (+0 in every type) where
// ok is false.
template <int DT>
DETGEMM_INLINE void load_quad_elem(Quad<DT>& q, const char* p, int e, bool ok) {
    if (DT == F32) {
        q.w[e] = ok ? __ldg(reinterpret_cast<const dg_u32*>(p) + e) : 0u;
    } else {
        const dg_u32 h = ok ? (dg_u32)__ldg(reinterpret_cast<const unsigned short*>(p) + e) : 0u;
        if (e & 1) q.w[e >> 1] |= h << 16;
        else q.w[e >> 1] = h;
    }
}

// One operand's share of staging a BK-deep tile of LIN (128 or 64) rows or
// columns. The operand is X(lin, r) with lin the output row (A) or column
// (B) and r the reduction index; RC means r is the contiguous axis in
// memory (X[lin*ld + r]), otherwise lin is (X[r*ld + lin]). Each thread
// moves H = LIN / 64 quads (h = 0 .. H-1) per tile, along the contiguous
// axis:
//   RC:  lin = row + 64h, r = 4*r4 .. 4*r4+3  (a warp: 8 rows x 4 quads,
//        each row's 64 contiguous bytes)
//   !RC: r = rr + RSTEP*h, lin = 4*c4 .. 4*c4+3  (a warp: 128 / LIN r, LIN
//        lins each)
// The tile in shared memory is always [r][lin], rows LDOF<LIN> apart. For
// RC, 8 rows x 64 bytes per warp instruction beat 16 rows x 32 bytes (fewer
// cache lines per load), which outweighs the two-way conflicts of the
// transposing stores (bench/NOTES-kernels.md).
template <int DT, bool RC, int LIN>
struct Loader {
    const char* p;  // quad h = 0's first element for the current tile

    static constexpr int ESZ = DT == F32 ? 4 : 2;
    static constexpr int H = LIN / 64;
    static constexpr int LD = LDOF<LIN>;
    static constexpr int QPR = LIN / 4;          // !RC: quads along a row
    static constexpr int RSTEP = THREADS / QPR;  // !RC: r between quads h
    static_assert(LIN * BK == 4 * H * THREADS, "every thread moves H quads");

    // This thread's quad 0 position: RC: lin = row, r = 4*r4; !RC: lin =
    // 4*c4, r = rr.
    static DETGEMM_INLINE int lin_of(int t) { return RC ? t >> 2 : (t % QPR) * 4; }
    static DETGEMM_INLINE int r_of(int t) { return RC ? (t & 3) * 4 : t / QPR; }

    // Byte distance from quad h to quad h + 1: 64 rows (RC) or RSTEP r
    // (!RC). It is recomputed from the kernel parameter rather than held in
    // registers.
    static DETGEMM_INLINE dg_i64 hoff(dg_i64 ld) { return (RC ? 64 : RSTEP) * ld * ESZ; }

    // Positions the loader at (lin0, r0), the tile's first row (column) and
    // the range's first reduction index.
    DETGEMM_INLINE void init(const void* X, dg_i64 lin0, dg_i64 r0, dg_i64 ld, int t) {
        const int lin = lin_of(t), r = r_of(t);
        p = static_cast<const char*>(X) +
            (RC ? (lin0 + lin) * ld + r0 + r : (r0 + r) * ld + lin0 + lin) * ESZ;
    }

    DETGEMM_INLINE void advance(dg_i64 ld) { p += RC ? (dg_i64)BK * ESZ : (dg_i64)BK * ld * ESZ; }

    // Whole tile in range and aligned: H vector loads.
    DETGEMM_INLINE void fetch_vec(Quad<DT> (&q)[H], dg_i64 ld) const {
#pragma unroll
        for (int h = 0; h < H; ++h) load_quad_vec<DT>(q[h], p + h * hoff(ld));
    }

    // Edge tiles: each element checked against lin_left = LIN - lin0 and
    // r_left (reduction indices left in the range). t is read afresh
    // (dg_tid) so the positions are not kept in registers across the main
    // loop for this rare path.
    DETGEMM_INLINE void fetch_checked(Quad<DT> (&q)[H], dg_i64 ld, dg_i64 lin_left, dg_i64 r_left, int t) const {
        const int lin = lin_of(t), r = r_of(t);
#pragma unroll
        for (int h = 0; h < H; ++h)
#pragma unroll
            for (int e = 0; e < 4; ++e) {
                const bool ok = RC ? (lin + 64 * h < lin_left && r + e < r_left)
                                   : (lin + e < lin_left && r + RSTEP * h < r_left);
                load_quad_elem<DT>(q[h], p + h * hoff(ld), e, ok);
            }
    }

    DETGEMM_INLINE void stage(const Quad<DT> (&q)[H], float* S, int t) const {
        const int lin = lin_of(t), r = r_of(t);
#pragma unroll
        for (int h = 0; h < H; ++h) {
            if (RC) {
#pragma unroll
                for (int e = 0; e < 4; ++e) S[(r + e) * LD + lin + 64 * h] = quad_elem<DT>(q[h], e);
            } else {
                float4 v;
                v.x = quad_elem<DT>(q[h], 0); v.y = quad_elem<DT>(q[h], 1);
                v.z = quad_elem<DT>(q[h], 2); v.w = quad_elem<DT>(q[h], 3);
                *reinterpret_cast<float4*>(&S[(r + RSTEP * h) * LD + lin]) = v;
            }
        }
    }
};

// The thread and block indices, read so that the compiler cannot keep
// values derived from them alive across the main loop (it recomputes them
// where used).
DETGEMM_INLINE int dg_tid() {
    int t;
    asm volatile("mov.u32 %0, %%tid.x;" : "=r"(t));
    return t;
}
DETGEMM_INLINE unsigned dg_ctaid_x() {
    unsigned v;
    asm volatile("mov.u32 %0, %%ctaid.x;" : "=r"(v));
    return v;
}
DETGEMM_INLINE unsigned dg_ctaid_y() {
    unsigned v;
    asm volatile("mov.u32 %0, %%ctaid.y;" : "=r"(v));
    return v;
}
DETGEMM_INLINE unsigned dg_ctaid_z() {
    unsigned v;
    asm volatile("mov.u32 %0, %%ctaid.z;" : "=r"(v));
    return v;
}

// Compute positions: warp w covers thread rows 4*(w>>1) .. +3 and thread
// columns 8*(w&1) .. +7 (16 x 16 thread positions); thread (ty, tx) owns
// rows ty*4 + {0..3} and 64 + ty*4 + {0..3}, and columns tx*4 + {0..3}
// (+ BN/2 for the second run of a 128-wide tile). acc[m][n] of thread t is
// the tile element (out_row(out_ty(t), m), out_col<BN>(out_tx(t), n)).
DETGEMM_INLINE int out_ty(int t) { return ((t >> 6) << 2) + ((t & 31) >> 3); }
DETGEMM_INLINE int out_tx(int t) { return (((t >> 5) & 1) << 3) + (t & 7); }
DETGEMM_INLINE int out_row(int ty, int m) { return (m < 4 ? 0 : 64) + ty * 4 + (m & 3); }
template <int BN>
DETGEMM_INLINE int out_col(int tx, int n) { return (n >> 2) * (BN / 2) + tx * 4 + (n & 3); }

// Whether a vector of four elements at every quad start is aligned.
template <int DT>
DETGEMM_INLINE bool vec_ok(const void* X, dg_i64 ld) {
    const dg_u64 align = DT == F32 ? 16 : 8;
    return ((dg_u64)X % align) == 0 && (ld % 4) == 0;
}

// The reduction ranges a block can run. A range is a policy rather than two
// numbers so that a family whose range is derived (from the grid) recomputes
// it where it is used instead of holding it in registers through the loop.
//
// Whole: [0, R), the single-kernel family.
struct Whole {
    static constexpr bool SERPENTINE_F32 = true;  // see tile_chains' step
    dg_i64 R;
    DETGEMM_INLINE dg_i64 r0() const { return 0; }
    DETGEMM_INLINE dg_i64 len() const { return R; }
};

// SlabGroup: slabs [z*G, min((z+1)*G, S)) for block z = blockIdx.z, the
// split-slab family. Empty (len <= 0) for a block past the last slab.
struct SlabGroup {
    static constexpr bool SERPENTINE_F32 = false;  // see tile_chains' step
    dg_i64 R, G;
    DETGEMM_INLINE dg_i64 r0() const { return (dg_i64)dg_ctaid_z() * G * SLAB; }
    DETGEMM_INLINE dg_i64 len() const {
        const dg_i64 left = R - r0(), span = G * SLAB;
        return left < span ? left : span;
    }
};

// tile_chains: the chains of the BM x BN tile at (blockIdx.x * BM,
// blockIdx.y * BN) of C[M, N] over the reduction range [rg.r0(), rg.r0() +
// rg.len()), len > 0, r0 a multiple of SLAB:
//   A(i, r) = A_RC ? A[i*lda + r] : A[r*lda + i]
//   B(r, j) = B_JC ? B[r*ldb + j] : B[j*ldb + r]
// smem holds SMEM_TILES<BN> bytes (16-byte aligned). close(kt, acc) is
// called once per slab, by every thread, with the thread's chains (see
// out_ty); kt / TILES_PER_SLAB is the slab's index within the range. Every
// call is followed by a __syncthreads, so a Close may use shared memory of
// its own.
template <int DTIN, bool A_RC, bool B_JC, int BN, class Range, class Close>
DETGEMM_INLINE void tile_chains(const void* DETGEMM_RESTRICT A, const void* DETGEMM_RESTRICT B,
                                dg_i64 M, dg_i64 N, const Range& rg, dg_i64 lda, dg_i64 ldb,
                                float* smem, Close& close) {
    static_assert(width_ok<BN>, "tiles are 128 or 64 columns wide");
    constexpr int W = TN<BN>;
    constexpr int LDA = LDOF<BM>, LDB = LDOF<BN>;
    const int t = threadIdx.x;
    const dg_i64 i0 = (dg_i64)blockIdx.x * BM;  // x: row tiles (up to 2^31-1 of them)
    const dg_i64 j0 = (dg_i64)blockIdx.y * BN;  // y: column tiles (up to 65535)

    using LA = Loader<DTIN, A_RC, BM>;
    using LB = Loader<DTIN, !B_JC, BN>;
    LA la;
    LB lb;
    la.init(A, i0, rg.r0(), lda, t);
    lb.init(B, j0, rg.r0(), ldb, t);
    Quad<DTIN> qa[LA::H], qb[LB::H];

    // Vector loads when the block's rows and columns are all in range and
    // every quad is aligned; the reduction edge is checked per tile.
    const bool vec = i0 + BM <= M && j0 + BN <= N && vec_ok<DTIN>(A, lda) && vec_ok<DTIN>(B, ldb);

    // k: the tile's first reduction index, relative to r0.
    auto fetch = [&](dg_i64 k) {
        if (vec && k + BK <= rg.len()) {
            la.fetch_vec(qa, lda);
            lb.fetch_vec(qb, ldb);
        } else {
            const int tc = dg_tid();
            la.fetch_checked(qa, lda, M - i0, rg.len() - k, tc);
            lb.fetch_checked(qb, ldb, N - j0, rg.len() - k, tc);
        }
    };
    auto stage = [&](int buf) {
        float* S = smem + buf * STAGE<BN>;
        const int ts = dg_tid();
        la.stage(qa, S, ts);
        lb.stage(qb, S + BK * LDA, ts);
    };

    const int ty = out_ty(t), tx = out_tx(t);
    const float* a_rd = smem + ty * 4;
    const float* b_rd = smem + BK * LDA + tx * 4;

    float acc[TM][W];
#pragma unroll
    for (int m = 0; m < TM; ++m)
#pragma unroll
        for (int n = 0; n < W; ++n) acc[m][n] = 0.0f;

    // One k step: r = the tile's kk-th reduction index, one fma per output.
    auto step = [&](const float* ap, const float* bp) {
        float a[TM], b[W];
        const float4 a0 = *reinterpret_cast<const float4*>(ap);
        const float4 a1 = *reinterpret_cast<const float4*>(ap + 64);
        a[0] = a0.x; a[1] = a0.y; a[2] = a0.z; a[3] = a0.w;
        a[4] = a1.x; a[5] = a1.y; a[6] = a1.z; a[7] = a1.w;
#pragma unroll
        for (int q = 0; q < W / 4; ++q) {
            const float4 bq = *reinterpret_cast<const float4*>(bp + q * (BN / 2));
            b[4 * q] = bq.x; b[4 * q + 1] = bq.y; b[4 * q + 2] = bq.z; b[4 * q + 3] = bq.w;
        }
        // The order of the independent FFMAs of one step is free (each
        // output still gets exactly one fma per r) and decides how ptxas
        // allocates registers. Serpentine order (odd rows walk the columns
        // backwards) lets consecutive FFMAs share an operand at every turn,
        // so more operands come from the reuse cache. With the plain
        // row-major order the f32 r-contiguous gemm_simt kernels came out
        // of ptxas with many FFMAs whose three register sources sat in one
        // bank; the square f32 gemm_slabs kernels measured the other way,
        // so they keep the plain order (bench/NOTES-kernels.md).
        constexpr bool serpentine = DTIN != F32 || BN != 128 || Range::SERPENTINE_F32;
#pragma unroll
        for (int m = 0; m < TM; ++m)
#pragma unroll
            for (int c = 0; c < W; ++c) {
                const int n = serpentine && (m & 1) ? W - 1 - c : c;
                acc[m][n] = __fmaf_rn(a[m], b[n], acc[m][n]);
            }
    };

    const dg_i64 tiles = (rg.len() + BK - 1) / BK;

    fetch(0);
    stage(0);
    __syncthreads();

    int slab_tile = 0;  // tiles of the current slab done
    for (dg_i64 kt = 0; kt < tiles; ++kt) {
        const int off = (int)(kt & 1) * STAGE<BN>;
        const bool more = kt + 1 < tiles;
        if (more) {
            la.advance(lda);
            lb.advance(ldb);
            fetch((kt + 1) * BK);
        }

        const dg_i64 left = rg.len() - kt * BK;
        if (left >= BK) {
#pragma unroll
            for (int kk = 0; kk < BK; ++kk) step(a_rd + off + kk * LDA, b_rd + off + kk * LDB);
        } else {
            // The last, short tile: exactly one fma per remaining r.
#pragma unroll 1
            for (int kk = 0; kk < (int)left; ++kk) step(a_rd + off + kk * LDA, b_rd + off + kk * LDB);
        }

        if (more) stage((int)((kt + 1) & 1));

        // Close a slab at every SLAB boundary and at the end of the range
        // (r0 is a slab boundary, so slab edges are k-tile edges).
        if (++slab_tile == TILES_PER_SLAB || !more) {
            slab_tile = 0;
            close(kt, acc);
#pragma unroll
            for (int m = 0; m < TM; ++m)
#pragma unroll
                for (int n = 0; n < W; ++n) acc[m][n] = 0.0f;
        }
        __syncthreads();
    }
}

}  // namespace dgtile
