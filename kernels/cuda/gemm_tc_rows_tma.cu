// gemm_tc_rows_tma.cu: gemm_tc_rows.cu's few-row tensor-core kernels
// (Forward and dX, M <= 16) with the stages filled by the bulk tensor copy
// engine (TMA) instead of per-thread 16-byte cp.async: one thread issues a
// stage's three copies, which complete on the stage's "full" mbarrier by
// transaction bytes. gemm_tc_rows.cu measured that one SM's copy
// throughput followed the number of warps issuing cp.async; TMA takes the
// issue off the warps altogether.
//
// The chain per element is the TC contract's, exactly as in gemm_tc.cu and
// gemm_tc_rows.cu: the accumulator starts at bias[j] (Forward) or +0 (dX)
// and takes the reduction in ascending 16-wide mma.sync.m16n8k16 steps;
// TMA zero-fills everything past the matrix, so the tail of the last step
// is 0 on both operands, and the rows past M are zeros; steps wholly past
// the end are not issued; one RNE rounding at the store. Same bits as
// every other TC kernel.
//
// Roles as in gemm_tc_rows.cu: W is the mma's A operand (16 columns of C
// as the mma's rows), the rows of X its B operand (8 rows of C). A block
// owns MR (8 or 16) rows x BN = 32 columns for the whole reduction; one
// consumer warp per 16 columns x 8 rows (one chain of K/16 mma each), so
// the 16-row tile spreads its two chains per column over four warps, one
// per SM sub-partition, instead of two chains in each of two warps. One
// producer warp, of which one thread issues the copies.
//
// Shared memory: a STAGES-deep ring, 1 KiB aligned, each stage BK = 128 of
// the reduction:
//   X: two boxes of 64 k x MR rows, 128-byte rows, 128-byte swizzle;
//   W nn (W[K,N], j contiguous): one box of 32 j x 128 k, 64-byte rows,
//     64-byte swizzle;
//   W nt (W[N,K] read as its transpose, k contiguous): two boxes of 64 k
//     x 32 j, 128-byte rows, 128-byte swizzle.
// The swizzles (the 16-byte chunk index XOR-ed with address bits 7-9, or
// 7-8 for 64 bytes) keep every ldmatrix below conflict-free: its eight
// 16-byte rows land in eight different chunks of 128 bytes.
//
// TMA and the mbarrier transaction count need sm_90; the family is built
// for sm_90a only, with gemm_wgmma (the engine loads both or neither).
//detgemm:only sm_90a
#include "prelude.cuh"
#include "tc_common.cuh"
#include "tma.cuh"
#include "ring_release.cuh"

namespace tcrt {

using tma::tensor_map;  // tma.cuh
using tma::mbar_expect_tx;
using tma::prefetch_map;

DETGEMM_INLINE void ldsm_x4(dg_u32 (&r)[4], dg_u32 addr) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(addr));
}
DETGEMM_INLINE void ldsm_x4_trans(dg_u32 (&r)[4], dg_u32 addr) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(addr));
}

constexpr int BK = 128;     // reduction per stage
constexpr int KS = BK / 16;  // mma steps per stage
constexpr int BN = 32;      // columns per block
constexpr int XBOX = 64;    // k per X box (one 128-byte swizzle row)

// Rows<MR, STAGES, MINB, SPLIT, LATE>: MR rows per block (8 or 16), a
// STAGES-deep ring, MINB blocks per SM asked of the register allocator;
// the next k-tile's fragment reads sit after SPLIT of the current k-tile's
// steps; LATE: their slot is given back after the current k-tile's last
// step instead of right after the reads (see rows_tile).
// The Go side computes the same shared memory (tcRowsTMASharedBytes).
template <int MR_, int STAGES_, int MINB_, int SPLIT_, bool LATE_>
struct Rows {
    static constexpr int MR = MR_, STAGES = STAGES_, MINB = MINB_, SPLIT = SPLIT_;
    static constexpr bool LATE = LATE_;
    static constexpr int WARPS_N = BN / 16;
    static constexpr int WARPS = WARPS_N * (MR / 8);  // consumer warps: 16 columns x 8 rows each
    static constexpr int CONSUMERS = WARPS * 32;
    static constexpr int THREADS = CONSUMERS + 32;  // and one producer warp
    static constexpr int X_BOX_BYTES = MR * XBOX * 2;
    static constexpr int X_BYTES = 2 * X_BOX_BYTES;
    static constexpr int W_BYTES = BK * BN * 2;
    static constexpr int STAGE_BYTES = X_BYTES + W_BYTES;
    // The ring, 1 KiB of slack to align it to the swizzle pattern, then
    // full[STAGES] and empty[STAGES].
    static constexpr int SMEM = STAGES * STAGE_BYTES + 1024 + 2 * STAGES * 8;
    static_assert(MR == 8 || MR == 16, "8 or 16 rows");
    static_assert(X_BOX_BYTES % 1024 == 0 && STAGE_BYTES % 1024 == 0, "boxes stay on the swizzle pattern's period");
};

// One k-tile's fragments of a warp: W as the A operand (16 columns x 16 k
// per step), X as the B operand (16 k x 8 rows per step).
struct Frags {
    dg_u32 w[KS][4];
    dg_u32 x[KS][2];
};

// Reads a k-tile's fragments for the warp's 16 columns n0 and 8 rows m0
// from the stage at sx (X) and sw (W). Each lane addresses one 16-byte row
// of an 8x8 matrix; the swizzle moves whole 16-byte chunks, so the logical
// rows are those of gemm_tc_rows.cu and only their addresses differ.
template <class T, bool B_JC>
DETGEMM_INLINE void load_frags(Frags& f, dg_u32 sx, dg_u32 sw, int lane, int n0, int m0) {
#pragma unroll
    for (int ks = 0; ks < KS; ++ks) {
        if (B_JC) {
            // W[k][j]: 64-byte rows of 32 j; chunk bits 4-5 ^= bits 7-8.
            const int row = ks * 16 + (lane & 7) + (lane >> 4) * 8;
            const int c = (n0 >> 3) + ((lane >> 3) & 1);
            ldsm_x4_trans(f.w[ks], sw + row * 64 + ((c ^ ((row >> 1) & 3)) << 4));
        } else {
            // W[j][k]: two boxes of 128-byte rows of 64 k; bits 4-6 ^= bits 7-9.
            const int line = n0 + (lane & 15);
            const int c = ((ks & 3) << 1) + (lane >> 4);
            ldsm_x4(f.w[ks], sw + (ks >> 2) * (BN * 128) + line * 128 + ((c ^ (line & 7)) << 4));
        }
    }
    // X: one x4 per two steps (k 0-7, 8-15 of step 2p and of step 2p+1).
    const int row = m0 + (lane & 7);
#pragma unroll
    for (int p = 0; p < KS / 2; ++p) {
        const int c = ((p & 1) << 2) + (lane >> 3);
        dg_u32 r[4];
        ldsm_x4(r, sx + (p >> 1) * T::X_BOX_BYTES + row * 128 + ((c ^ (row & 7)) << 4));
        f.x[2 * p][0] = r[0];
        f.x[2 * p][1] = r[1];
        f.x[2 * p + 1][0] = r[2];
        f.x[2 * p + 1][1] = r[3];
    }
}

template <class T, int DTIN, int DTOUT, bool B_JC, int INIT, bool CUT, class Act = epi::Identity>
DETGEMM_INLINE void rows_tile(const tensor_map& tmX, const tensor_map& tmW, void* DETGEMM_RESTRICT C,
                              const float* DETGEMM_RESTRICT bias, dg_i64 M, dg_i64 N, dg_i64 R, dg_i64 ldc,
                              dg_i64 L) {
    constexpr int STAGES = T::STAGES;
    extern __shared__ unsigned char smem_raw[];
    const dg_u32 ring = (tc::smem_addr(smem_raw) + 1023u) & ~1023u;
    const dg_u32 bars = ring + STAGES * T::STAGE_BYTES;  // full[s] at +8s, empty[s] at +8(STAGES+s)

    const int tid = threadIdx.x;
    const int lane = tid & 31, warp = tid >> 5;
    const dg_i64 rtiles = (M + T::MR - 1) / T::MR;
    const dg_i64 i0 = ((dg_i64)blockIdx.x % rtiles) * T::MR;
    const dg_i64 j0 = ((dg_i64)blockIdx.x / rtiles) * BN;
    const dg_i64 ktiles = (R + BK - 1) / BK;  // >= 1: R >= 1

    if (tid == 0) {
#pragma unroll
        for (int s = 0; s < STAGES; ++s) {
            tc::mbar_init(bars + 8 * s, 1);                        // the producer's expect_tx arrival
            tc::mbar_init(bars + 8 * (STAGES + s), T::CONSUMERS);  // every consumer thread
        }
        // The copy engine (async proxy) must see the initialised barriers.
        tma::fence_barrier_init();
    }
    dg_grid_dependency_wait();  // launched overlapped: the kernel ahead has finished
    __syncthreads();              // the only block barrier: the mbarriers exist

    if (warp == T::WARPS) {
        // The producer: k-tile kt goes to slot kt % STAGES once the
        // consumers have released that slot's previous k-tile. The
        // coordinates fit 32 bits (the engine checks the extents).
        if (lane != 0) return;
        prefetch_map(tmX);
        prefetch_map(tmW);
        const int ci = (int)i0, cj = (int)j0;
        int slot = 0;
        dg_u32 phase = 0;  // parity of the empty phase to wait for once the ring wrapped
        for (dg_i64 kt = 0; kt < ktiles; ++kt) {
            if (kt >= STAGES) tc::mbar_wait(bars + 8 * (STAGES + slot), phase);
            const dg_u32 full = bars + 8 * slot;
            const dg_u32 sx = ring + slot * T::STAGE_BYTES, sw = sx + T::X_BYTES;
            const int k0 = (int)(kt * BK);
            mbar_expect_tx(full, T::STAGE_BYTES);
            tma::load_2d(sx, tmX, k0, ci, full);
            tma::load_2d(sx + T::X_BOX_BYTES, tmX, k0 + XBOX, ci, full);
            if (B_JC) {
                tma::load_2d(sw, tmW, cj, k0, full);
            } else {
                tma::load_2d(sw, tmW, k0, cj, full);
                tma::load_2d(sw + BN * 128, tmW, k0 + XBOX, cj, full);
            }
            if (++slot == STAGES) {
                slot = 0;
                if (kt >= STAGES) phase ^= 1;
            }
        }
        return;
    }

    // Consumers: 16 columns n0 x 8 rows m0 of the block's tile.
    const int g = lane >> 2, t4 = lane & 3;
    const int n0 = (warp % T::WARPS_N) * 16, m0 = (warp / T::WARPS_N) * 8;
    const dg_i64 jw = j0 + n0;
    float acc[4], sum[4];
#pragma unroll
    for (int q = 0; q < 4; ++q) {
        const dg_i64 j = jw + g + (q >> 1) * 8;
        acc[q] = INIT == tc::INIT_BIAS && bias != nullptr && j < N ? epi::tc_start(bias, j) : 0.0f;
    }
    int rd = 0;
    dg_u32 phase = 0;
    // The slot rd's fragments, once its copies have landed; returns the
    // slot's empty barrier, to be arrived on (the slot given back to the
    // producer) once the fragments are in registers.
    auto take = [&](Frags& f) -> dg_u32 {
        tc::mbar_wait(bars + 8 * rd, phase);
        const dg_u32 sx = ring + rd * T::STAGE_BYTES;
        load_frags<T, B_JC>(f, sx, sx + T::X_BYTES, lane, n0, m0);
        const dg_u32 empty = bars + 8 * (STAGES + rd);
        if (++rd == STAGES) {
            rd = 0;
            phase ^= 1;
        }
        return empty;
    };
    auto step = [&](const Frags& f, int ks) { tc::mma16816<DTIN>(acc, f.w[ks], f.x[ks][0], f.x[ks][1]); };

    Frags f0, f1;
    tc::release_after_reads(take(f0));
    // k-tile kt with its fragments in cur: SPLIT steps, the next k-tile's
    // fragments (waiting on the tensor core anyway), the remaining steps.
    // The arrival that gives the slot back waits for the fragment reads to
    // complete, so right after them it holds the chain up for their
    // latency; LATE puts it after the k-tile's last step, when the reads
    // have long completed (bench/NOTES-tcrows.md, session 10).
    // Steps wholly past the end are not issued; a step past the end is
    // never the first (k0 < R).
    auto ktile = [&](dg_i64 kt, const Frags& cur, Frags& nxt) {
        const dg_i64 k0 = kt * BK;
        const bool whole = k0 + BK <= R;
#pragma unroll
        for (int ks = 0; ks < T::SPLIT; ++ks)
            if (whole || k0 + ks * 16 < R) step(cur, ks);
        dg_u32 empty = 0;
        if (kt + 1 < ktiles) {
            empty = take(nxt);
            if (!T::LATE) tc::release_after_reads(empty);
        }
#pragma unroll
        for (int ks = T::SPLIT; ks < KS; ++ks)
            if (whole || k0 + ks * 16 < R) step(cur, ks);
        if (T::LATE && empty != 0) tc::release_after_reads(empty);
    };
    // The plan's slabs (L a multiple of BK): the chain folds into sum at
    // the end of every slab but the last (epi::fold_slab); a loop a slab at
    // a time was slower. Without CUT (the _one entries, for one-slab plans)
    // none of the fold is compiled: it costs registers and time even when
    // never taken (bench/NOTES-kernels.md).
    const dg_i64 slab_tiles = CUT && L < R ? L / BK : ktiles;
    dg_i64 fold_at = slab_tiles;
    bool folded = false;
    auto slab_end = [&](dg_i64 kt) {
        if (CUT && kt + 1 == fold_at && kt + 1 < ktiles) {
            epi::fold_slab(sum, acc, !folded);
            folded = true;
            fold_at += slab_tiles;
        }
    };
    dg_i64 kt = 0;
    for (; kt + 2 <= ktiles; kt += 2) {
        ktile(kt, f0, f1);
        slab_end(kt);
        ktile(kt + 1, f1, f0);
        slab_end(kt + 1);
    }
    if (kt < ktiles) ktile(kt, f0, f1);
    if (CUT && folded) {
#pragma unroll
        for (int q = 0; q < 4; ++q) acc[q] = epi::fold_add(sum[q], acc[q]);
    }
    dg_launch_dependents();  // only the stores are left: the next grid may take the SMs this one leaves

    // acc[q]: column jw + g (q < 2) or jw + g + 8, row i0 + m0 + 2t + (q & 1).
#pragma unroll
    for (int q = 0; q < 4; ++q) {
        const dg_i64 i = i0 + m0 + t4 * 2 + (q & 1);
        const dg_i64 j = jw + g + (q >> 1) * 8;
        if (i < M && j < N) epi::store<DTOUT, epi::RNE_CVT>(C, i * ldc + j, epi::act<Act>(acc[q]));
    }
}

// The tiles: 8 rows, 7 stages of 10 KiB; 16 rows, 6 stages of 12 KiB; at
// most 73 KiB a block, so three blocks an SM (all of N = 11008's 344
// blocks resident at once). The 8-row tile gives its slots back LATE; the
// 16-row tile, whose slots four warps must all give back, was slower that
// way (bench/NOTES-kernels.md).
typedef Rows<8, 7, 3, 2, true> T8;
typedef Rows<16, 6, 3, 2, false> T16;

}  // namespace tcrt

// Entry points: detgemm_tmarows{8,16}_{nn,nt}_{in}_{out}_vec. Arguments:
// the TMA maps of X (or dY) and W built by the engine for this call, C,
// bias (nullable), M, N, R, ldc, the plan's slab length L (>= R: one slab);
// a 1-D grid of row tiles x column blocks, row tiles fastest. Each has a
// twin NAME_one for one-slab plans (L >= R), built without the fold.
#define DETGEMM_TMAROWS_KERNEL(NAME, TILE, DTIN, DTOUT, BJC, INIT, CUT)                                       \
    DETGEMM_KERNEL void __launch_bounds__(tcrt::TILE::THREADS, tcrt::TILE::MINB)                              \
        NAME(const __grid_constant__ tcrt::tensor_map tmX, const __grid_constant__ tcrt::tensor_map tmW,     \
             void* C, const float* bias, dg_i64 M, dg_i64 N, dg_i64 R, dg_i64 ldc, dg_i64 L) {                \
        tcrt::rows_tile<tcrt::TILE, DTIN, DTOUT, BJC, INIT, CUT>(tmX, tmW, C, bias, M, N, R, ldc, L);         \
    }
#define DETGEMM_TMAROWS_ENTRY(NAME, TILE, DTIN, DTOUT, BJC, INIT)      \
    DETGEMM_TMAROWS_KERNEL(NAME, TILE, DTIN, DTOUT, BJC, INIT, true) \
    DETGEMM_TMAROWS_KERNEL(NAME##_one, TILE, DTIN, DTOUT, BJC, INIT, false)

#include "zgemm_tc_rows_tma_entries.cuh"
