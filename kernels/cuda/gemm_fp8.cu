// gemm_fp8.cu: the fp8 product on Hopper's wgmma (docs/contract.md, "fp8"),
//
//   D[M,N] = epilogue(A[M,K] · B[N,K]ᵀ)  with A, B in E4M3 or E5M2,
//
// both operands K-major ("TN", as fp8 wgmma and cuBLASLt require), staged
// by TMA through wgmma.cuh's producer and ring: the maps view each fp8 row
// as 16-bit units, so a stage holds 128 positions of K in exactly the bytes
// (and the 128-byte swizzle) of the 16-bit kernels' 64, and every k32 step
// starts 32 bytes further along the rows, as theirs do.
//
// Per element the chain is the measured fp8 step (one wgmma k32 step: the
// incoming accumulator and 32 products aligned, truncated to 2^(emax-13),
// summed, rounded toward zero to 14 significant bits):
//   fast:     one chain over all of K from +0 (read from shared memory);
//   promoted: a chain from +0 over each 128 positions of K (a stage), then
//             acc = fma(chain, w, acc) in f32 with w = sa_blk·sb_blk for
//             block scales, else w = 1 (fma(p, 1, acc) = add(acc, p)).
// Then v = (v · sa[i]) · sb[j] (per-tensor: stride 0; per-row; absent for
// block scales), the bias, the activation (Matmul's epilogue, fold form
// with alpha 1: v·1 is v), and the store: RNE to bf16/f16, f32 as is, or
// fp8 = satfinite(RNE(v · sd)) with the amax of v over D (an atomic
// maximum of non-negative bit patterns: order-free, so the bits are too).
// Steps wholly past K meet only TMA's zero fill, which leaves the
// accumulator unchanged (see consume), so every stage issues four. Which block computes a
// tile never changes a bit, so the bits do not depend on M.
//detgemm:only sm_90a
#include "prelude.cuh"
#include "wgmma.cuh"

namespace f8 {

// Operand codes (the A and B template arguments) and the fp8 output codes
// (after epi's F32, BF16, F16).
constexpr int E4M3 = 0;
constexpr int E5M2 = 1;
constexpr int OUT_E4M3 = 16;
constexpr int OUT_E5M2 = 17;

// A tile of 128 x BN outputs (two consumer warpgroups of 64 rows) with a
// STAGES-deep ring of 128 positions of K: wgmma.cuh's Tile with the fp8
// widths (32 or 64 columns for grids that would leave SMs idle, 256 for
// the fast chain on full ones); the fields the stores read. With CLUSTER
// 2, blocks run in pairs (a cluster) on the two tiles of one row block
// side by side: each block's producer loads half of the rows of A they
// share and multicasts it to both, so each A byte leaves L2 once a pair.
// The Go side computes the same shared memory (fp8SharedBytes).
template <int BN_, int STAGES_, int CLUSTER_ = 1>
struct F8Tile {
    static constexpr int BM = 128, BN = BN_, STAGES = STAGES_, CLUSTER = CLUSTER_;
    static constexpr bool SLABS = false, RUNSUM = false;
    static constexpr int CONSUMERS = 2;
    static constexpr int THREADS = 128 * (CONSUMERS + 1);
    static constexpr int PRODUCER_REGS = 40;
    static constexpr int CONSUMER_REGS = 232;
    static constexpr int A_BYTES = BM * wg::BK * 2;
    static constexpr int B_BYTES = BN * wg::BK * 2;
    static constexpr int STAGE_BYTES = A_BYTES + B_BYTES;
    static constexpr int EPI_WARP_BYTES = 16 * 64 * 2;
    static constexpr int EPI_BYTES = 4 * CONSUMERS * EPI_WARP_BYTES;
    // A stage's block scales for the loader warp's path (M <= 128): A's
    // for the tile's BM rows, then B's.
    static constexpr int SCALE_BYTES = (BM + 4) * 4;
    static constexpr int SMEM =
        STAGES * STAGE_BYTES + 1024 + 2 * STAGES * 8 + BN * 4 + 128 + EPI_BYTES + STAGES * SCALE_BYTES;
    static_assert(BN == 32 || BN == 64 || BN == 128 || BN == 256, "consumers issue m64nBNk32");
};
typedef F8Tile<32, 10> T32;
typedef F8Tile<64, 8> T64;
typedef F8Tile<128, 6, 2> T128;
typedef F8Tile<256, 4> T256;

// One k32 step of fp8 wgmma, m64nNk32 (N = BN), both operands K-major
// from shared memory: d = A·B + (scale_d ? d : 0). The register lists are
// spelled out once per N; F8_MMA writes one shape and type pair, F8_PAIRS
// the four type pairs of one shape.
#define F8_REGS_32 \
    "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15}"
#define F8_TAIL_32 "%16, %17"
#define F8_PRED_32 "%18"
#define F8_REGS_64 \
    "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, " \
    "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}"
#define F8_TAIL_64 "%32, %33"
#define F8_PRED_64 "%34"
#define F8_REGS_128 \
    "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, " \
    "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, " \
    "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, " \
    "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}"
#define F8_TAIL_128 "%64, %65"
#define F8_PRED_128 "%66"
#define F8_REGS_256 \
    "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, " \
    "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, " \
    "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, " \
    "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, " \
    "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, " \
    "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, " \
    "%96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, " \
    "%112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127}"
#define F8_TAIL_256 "%128, %129"
#define F8_PRED_256 "%130"
#define F8_D8(o) \
    "+f"(d[o]), "+f"(d[o + 1]), "+f"(d[o + 2]), "+f"(d[o + 3]), "+f"(d[o + 4]), "+f"(d[o + 5]), "+f"(d[o + 6]), "+f"(d[o + 7])
#define F8_D_32 F8_D8(0), F8_D8(8)
#define F8_D_64 F8_D_32, F8_D8(16), F8_D8(24)
#define F8_D_128 F8_D_64, F8_D8(32), F8_D8(40), F8_D8(48), F8_D8(56)
#define F8_D_256 F8_D_128, F8_D8(64), F8_D8(72), F8_D8(80), F8_D8(88), F8_D8(96), F8_D8(104), F8_D8(112), F8_D8(120)
#define F8_MMA(NN, TYPES)                                                                            \
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, " F8_PRED_##NN ", 0;\n"                                 \
                 "wgmma.mma_async.sync.aligned.m64n" #NN "k32.f32." TYPES " " F8_REGS_##NN ", " F8_TAIL_##NN \
                 ", p, 1, 1;\n}\n"                                                                           \
                 : F8_D_##NN                                                                                  \
                 : "l"(da), "l"(db), "r"(scale_d))
#define F8_PAIRS(NN)                                          \
    if constexpr (TA == E4M3 && TB == E4M3) {                \
        F8_MMA(NN, "e4m3.e4m3");                             \
    } else if constexpr (TA == E4M3 && TB == E5M2) {         \
        F8_MMA(NN, "e4m3.e5m2");                             \
    } else if constexpr (TA == E5M2 && TB == E4M3) {         \
        F8_MMA(NN, "e5m2.e4m3");                             \
    } else {                                                 \
        F8_MMA(NN, "e5m2.e5m2");                             \
    }
template <int N, int TA, int TB>
DETGEMM_INLINE void mma_k32(float (&d)[N / 2], dg_u64 da, dg_u64 db, int scale_d) {
    static_assert(N == 32 || N == 64 || N == 128 || N == 256, "m64nNk32 with N of 32, 64, 128 or 256");
    if constexpr (N == 32) {
        F8_PAIRS(32)
    } else if constexpr (N == 64) {
        F8_PAIRS(64)
    } else if constexpr (N == 128) {
        F8_PAIRS(128)
    } else {
        F8_PAIRS(256)
    }
}

// The arguments after the maps and shape.
struct Args {
    void* D;
    dg_i64 ldd;
    const float* sa;  // end scale of A: sa[i * sa_rs] (null: none)
    dg_i64 sa_rs;
    const float* sb;  // end scale of B: sb[j * sb_rs] (null: none)
    dg_i64 sb_rs;
    const float* ba;  // block scales of A: ba[i * ba_ld + kb] (null: none)
    dg_i64 ba_ld;
    const float* bb;  // block scales of B: bb[(j / 128) * bb_ld + kb]
    dg_i64 bb_ld;
    const float* bias;  // null: none
    const float* sd;    // the fp8 output's scale (null: 1)
    dg_u32* amax;       // the fp8 output's amax (f32 bits), zeroed by the caller; null: none
};

// Two f32 values as one fp8 pair (lo in the low byte), satfinite RNE.
template <int OUT>
DETGEMM_INLINE dg_u16 pack8(float lo, float hi) {
    dg_u16 p;
    if constexpr (OUT == OUT_E4M3) {
        asm("cvt.rn.satfinite.e4m3x2.f32 %0, %1, %2;\n" : "=h"(p) : "f"(hi), "f"(lo));
    } else {
        asm("cvt.rn.satfinite.e5m2x2.f32 %0, %1, %2;\n" : "=h"(p) : "f"(hi), "f"(lo));
    }
    return p;
}

// The fp8 store of a consumer thread's accumulators (after the epilogue):
// accumulator 4q + 2h + e is element (row0 + 8h, col0 + 8q + e). Pairs go
// as one 2-byte access where D and ldd allow. am takes |v| of every stored
// element (fmaxf skips NaN).
template <int BN, int OUT>
DETGEMM_INLINE void store8(const float (&acc)[BN / 2], const Args& a, float sd, dg_i64 M, dg_i64 N, dg_i64 row0,
                           dg_i64 col0, float& am) {
    unsigned char* out = static_cast<unsigned char*>(a.D);
    const bool pairs = (a.ldd & 1) == 0 && (reinterpret_cast<dg_u64>(out) & 1u) == 0;
#pragma unroll
    for (int q = 0; q < BN / 8; ++q) {
        const dg_i64 j = col0 + 8 * q;
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            const dg_i64 i = row0 + 8 * h;
            if (i >= M || j >= N) continue;
            const float v0 = acc[4 * q + 2 * h], v1 = acc[4 * q + 2 * h + 1];
            const dg_u16 p = pack8<OUT>(__fmul_rn(v0, sd), __fmul_rn(v1, sd));
            am = fmaxf(am, fabsf(v0));
            if (j + 1 < N) {
                am = fmaxf(am, fabsf(v1));
                if (pairs) {
                    *reinterpret_cast<dg_u16*>(out + i * a.ldd + j) = p;
                } else {
                    out[i * a.ldd + j] = (unsigned char)(p & 0xffu);
                    out[i * a.ldd + j + 1] = (unsigned char)(p >> 8);
                }
            } else {
                out[i * a.ldd + j] = (unsigned char)(p & 0xffu);
            }
        }
    }
}

using wg::cluster_place;
using wg::cluster_sync;
using wg::release_slot;

// The origin of the tile of item t for the block of this rank: an item is
// a tile, or with clusters the pair of tiles (i0, j0) and (i0, j0 + BN)
// of one row block, rank r taking the r-th (past N it computes on TMA's
// zeros and stores nothing).
template <class T>
DETGEMM_INLINE void item_origin(dg_i64 t, dg_i64 M, dg_i64 N, dg_u32 rank, dg_i64& i0, dg_i64& j0) {
    wg::tile_origin<T::BM, T::BN * T::CLUSTER>(t, M, N, i0, j0);
    j0 += (dg_i64)rank * T::BN;
}

// The block's stages in ring order, as every party that fills the ring
// walks them: for each of the block's items and each of its k-tiles,
// waits until the stage's slot s is free (its empty barrier), then calls
// fill(s, rank, i0, j0, kt).
template <class T, class F>
DETGEMM_INLINE void each_free_slot(dg_u32 bars, const wg::Work& w, dg_i64 M, dg_i64 N, F&& fill) {
    dg_u32 rank;
    dg_i64 first, step;
    cluster_place<T>(rank, first, step);
    wg::Ring r;
    for (dg_i64 item = first; item < w.items; item += step) {
        dg_i64 i0, j0;
        item_origin<T>(item, M, N, rank, i0, j0);
        for (dg_i64 kt = 0; kt < w.ktiles; ++kt, r.next<T::STAGES>()) {
            wg::mbar_wait(bars + 8 * (T::STAGES + r.slot), r.phase ^ 1u);
            fill(r.slot, rank, i0, j0, kt);
        }
    }
}

// Producer: one thread keeps the ring full across all of the block's
// tiles (wgmma.cuh's produce with fp8's items): A's box of 64 units x 128
// rows, or with clusters this rank's 64 rows multicast to both blocks
// (every block's full barrier expects the whole stage: its own B, both
// halves of A); B's box of 64 units x BN rows. With half tiles (M <= 64;
// A's box then has 64 rows) only A's first 64 rows are copied, by rank 0
// of a cluster: the second half would be all TMA zero fill, which cost more
// than the rows the product reads (fp8 decode ran slower at M = 64 than at
// M = 128). The second consumer warpgroup still runs its chain, on what
// that half of the slot held before: its rows are past M, so neither
// stored nor in the amax (store8, store_tile), and the consumers' code is
// the same for every M (a branch there cost the promoted chain 4 %).
// Block scales never pass through this thread's copies: up to 128 rows the
// loader warp brings them (load_scales), past that the consumers load
// their own (ScaleWalk).
template <class T>
DETGEMM_INLINE void produce(const wg::tensor_map& tmA, const wg::tensor_map& tmB, dg_u32 ring, dg_u32 bars,
                            const wg::Work& w, dg_i64 M, dg_i64 N, bool half) {
    const dg_u32 bytes = half ? T::STAGE_BYTES - (dg_u32)wg::BOX : T::STAGE_BYTES;
    each_free_slot<T>(bars, w, M, N, [&](int s, dg_u32 rank, dg_i64 i0, dg_i64 j0, dg_i64 kt) {
        const dg_u32 full = bars + 8 * s;
        tma::mbar_expect_tx(full, bytes);
        const dg_u32 a = ring + s * T::STAGE_BYTES, b = a + T::A_BYTES;
        const int k0 = (int)(kt * wg::BK);
        if constexpr (T::CLUSTER > 1) {
            if (!half || rank == 0) tma::load_2d_multicast(a + rank * wg::BOX, tmA, k0, (int)i0 + 64 * (int)rank, full, 0x3);
        } else {
            tma::load_2d(a, tmA, k0, (int)i0, full);
        }
        tma::load_2d(b, tmB, k0, (int)j0, full);
    });
}


// The shared-memory ring of the stages' block scales (F8Tile's
// SCALE_BYTES a slot) for the loader warp's path, after the 16-bit store's
// staging.
template <class T>
DETGEMM_INLINE dg_u32 scale_ring(dg_u32 bars) {
    return ((bars + 16 * T::STAGES + T::BN * 4 + 127u) & ~127u) + T::EPI_BYTES;
}

// How block scales reach the consumers: not at all (end scales only),
// through the ring by the loader warp, or by the consumers' own loads.
enum ScalePath { SCALES_NONE = 0, SCALES_RING = 1, SCALES_OWN = 2 };

// The M up to which the loader warp brings the block scales (SCALES_RING).
// There the stages are short (the products are memory-bound) and a
// consumer's own load, one stage ahead, would hold the chain for an L2
// round trip; past it the loader warp's 33 arrivals a stage held the ring
// longer than the consumers' loads cost (bench/NOTES-fp8.md).
constexpr dg_i64 SCALE_RING_ROWS = 128;

// The block scales' loader (the producer warpgroup's second warp, on the
// SCALES_RING path): for every stage, once its slot is free, A's scales
// of the tile's rows (rows past M take row M - 1's, never stored) and B's
// of its column block (block 0's for a cluster's spare tile past N),
// copied by cp.async into the stage's scale slot; each lane's arrival on
// the stage's full barrier (counted in its initialisation) comes when its
// copies have landed, so the consumers read the scales from shared memory
// beside the operands instead of waiting on global loads each stage.
template <class T>
DETGEMM_INLINE void load_scales(dg_u32 bars, const wg::Work& w, dg_i64 M, dg_i64 N, const Args& a, int lane) {
    const dg_u32 sring = scale_ring<T>(bars);
    each_free_slot<T>(bars, w, M, N, [&](int s, dg_u32, dg_i64 i0, dg_i64 j0, dg_i64 kt) {
        const dg_i64 jb = j0 < N ? j0 / 128 : 0;
        const dg_u32 dst = sring + s * T::SCALE_BYTES;
#pragma unroll
        for (int q = 0; q < T::BM / 32; ++q) {
            const dg_i64 i = i0 + 32 * q + lane;
            const float* src = a.ba + (i < M ? i : M - 1) * a.ba_ld + kt;
            asm volatile("cp.async.ca.shared.global [%0], [%1], 4;\n" ::"r"(dst + 4 * (32 * q + lane)), "l"(src)
                         : "memory");
        }
        if (lane == 0) {
            asm volatile("cp.async.ca.shared.global [%0], [%1], 4;\n" ::"r"(dst + 4 * T::BM),
                         "l"(a.bb + jb * a.bb_ld + kt)
                         : "memory");
        }
        asm volatile("cp.async.mbarrier.arrive.noinc.shared::cta.b64 [%0];\n" ::"r"(bars + 8 * s) : "memory");
    });
}

// A consumer thread's block scales on the SCALES_OWN path: its two rows'
// A factors and its tile's B factor for k-block kt are a0[kt], a1[kt] and
// b[kt], read where the caller put them: a row's factors are contiguous,
// so each 32-byte sector read serves 8 k-blocks from L1. Rows past M read
// row M - 1's (never stored); a cluster's spare tile past N reads column
// block 0's. Off that path (scale_walk) the pointers are null, never read.
struct ScaleWalk {
    const float* a0;
    const float* a1;
    const float* b;
};

DETGEMM_INLINE int scale_path(const Args& a, dg_i64 M) {
    return a.ba == nullptr ? SCALES_NONE : M <= SCALE_RING_ROWS ? SCALES_RING : SCALES_OWN;
}

DETGEMM_INLINE ScaleWalk scale_walk(const Args& a, int path, dg_i64 M, dg_i64 N, dg_i64 i0, dg_i64 j0, int lr0) {
    ScaleWalk s{nullptr, nullptr, nullptr};
    if (path != SCALES_OWN) return s;
    const dg_i64 jb = j0 < N ? j0 / 128 : 0;
    const dg_i64 r0 = i0 + lr0, r1 = r0 + 8;
    s.a0 = a.ba + (r0 < M ? r0 : M - 1) * a.ba_ld;
    s.a1 = a.ba + (r1 < M ? r1 : M - 1) * a.ba_ld;
    s.b = a.bb + jb * a.bb_ld;
    return s;
}

// One stage of the ring (slot r.slot, once full): its four k32 steps into
// d, committed as one group. Every stage issues its four steps: a step
// wholly past K meets only the zeros TMA filled in, and such a step leaves
// the accumulator as it is (it holds at most 14 significant bits, a
// multiple of the step's grid 2^(e-13); docs/contract.md, "fp8"), so the
// bits are those of the chain without it, and the loop has one path. The
// descriptors of steps 1-3 are step 0's plus 32 bytes (2 units of the
// start address field) each. FRESH starts the chain from +0 (scale-d 0
// on the first step), else it continues d.
template <class T, int TA, int TB, bool FRESH>
DETGEMM_INLINE void issue_stage(float (&d)[T::BN / 2], dg_u32 ring, dg_u32 bars, int c, const wg::Ring& r) {
    wg::mbar_wait(bars + 8 * r.slot, r.phase);
    const dg_u32 sa = ring + r.slot * T::STAGE_BYTES + c * wg::BOX, sbm = ring + r.slot * T::STAGE_BYTES + T::A_BYTES;
    const dg_u64 da = wg::step_desc<true, true>(sa, 0), db = wg::step_desc<false, false>(sbm, 0);
    wg::wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < 4; ++kk) mma_k32<T::BN, TA, TB>(d, da + 2 * kk, db + 2 * kk, FRESH ? kk : 1);
    wg::wgmma_commit();
}

// A finished stage's chain p added to acc: acc = fma(p, w, acc) with w
// = wa0·wb for the thread's first row, wa1·wb for the row 8 below
// (accumulator 4q + 2h + e is row 8h).
template <int BN>
DETGEMM_INLINE void promote_weighted(float (&acc)[BN / 2], float (&p)[BN / 2], float w0, float w1) {
    wg::fence_acc(p);
#pragma unroll
    for (int i = 0; i < BN / 2; ++i) acc[i] = __fmaf_rn(p[i], (i & 2) ? w1 : w0, acc[i]);
}

template <int BN>
DETGEMM_INLINE void promote(float (&acc)[BN / 2], float (&p)[BN / 2], float wa0, float wa1, float wb) {
    promote_weighted<BN>(acc, p, __fmul_rn(wa0, wb), __fmul_rn(wa1, wb));
}

// A stage's block-scale factors on the SCALES_OWN path (k-block k of the
// thread's two rows and of its tile's columns), loaded where k < ktiles.
struct Factors {
    float a0 = 1.0f, a1 = 1.0f, b = 1.0f;
    DETGEMM_INLINE void load(const ScaleWalk& sw, dg_i64 k, dg_i64 ktiles) {
        if (k < ktiles) {
            a0 = __ldg(sw.a0 + k);
            a1 = __ldg(sw.a1 + k);
            b = __ldg(sw.b + k);
        }
    }
};

// promote_tile's overlapped loop on the SCALES_OWN path: the same stages,
// chains and additions in the same order, with the factors loaded a whole
// loop turn (two stages) before the turn in which their weights are formed,
// and the weights (wa·wb, one a row) formed at the top of that turn, before
// it loads the next factors into the same registers. ptxas waits for a
// turn's outstanding loads at the loop's back edge; loads issued at the end
// of a turn (one stage ahead of their use, promote_tile's other paths) then
// hold that edge for every L1 miss (bench/NOTES-fp8.md, twenty-second
// session). At the top of the turn at kt: w0 is stage kt - 1's weight
// (its chain in p0), fx and fy hold k-blocks kt and kt + 1.
template <class T, int TA, int TB>
DETGEMM_INLINE void promote_tile_own(float (&acc)[T::BN / 2], dg_u32 ring, dg_u32 bars, int c, int lane, dg_u32 rank,
                                     wg::Ring& r, dg_i64 ktiles, const ScaleWalk& sw) {
    constexpr int BN = T::BN, STAGES = T::STAGES;
    float p0[BN / 2], p1[BN / 2];
    int slot[2] = {0, 0};
    auto stage = [&](float (&p)[BN / 2], int x) {
        slot[x] = r.slot;
        issue_stage<T, TA, TB, true>(p, ring, bars, c, r);
        r.next<STAGES>();
    };
    auto retire = [&](float (&p)[BN / 2], int x, float w0, float w1) {
        release_slot<T>(bars, slot[x], lane, rank);
        promote_weighted<BN>(acc, p, w0, w1);
    };
    Factors f0, fx, fy;
    f0.load(sw, 0, ktiles);
    fx.load(sw, 1, ktiles);
    fy.load(sw, 2, ktiles);
    float w00 = __fmul_rn(f0.a0, f0.b), w01 = __fmul_rn(f0.a1, f0.b);
    stage(p0, 0);
    dg_i64 kt = 1;
    for (; kt + 1 < ktiles; kt += 2) {
        const float w10 = __fmul_rn(fx.a0, fx.b), w11 = __fmul_rn(fx.a1, fx.b);
        const float w20 = __fmul_rn(fy.a0, fy.b), w21 = __fmul_rn(fy.a1, fy.b);
        fx.load(sw, kt + 2, ktiles);
        fy.load(sw, kt + 3, ktiles);
        stage(p1, 1);
        wg::wgmma_wait<1>();
        retire(p0, 0, w00, w01);
        stage(p0, 0);
        wg::wgmma_wait<1>();
        retire(p1, 1, w10, w11);
        w00 = w20;
        w01 = w21;
    }
    if (kt < ktiles) {
        const float w10 = __fmul_rn(fx.a0, fx.b), w11 = __fmul_rn(fx.a1, fx.b);
        stage(p1, 1);
        wg::wgmma_wait<1>();
        retire(p0, 0, w00, w01);
        wg::wgmma_wait<0>();
        retire(p1, 1, w10, w11);
    } else {
        wg::wgmma_wait<0>();
        retire(p0, 0, w00, w01);
    }
}

// The promoted mainloop of one tile: stage kt's chain runs on the tensor
// cores into one of two partial sets while stage kt - 1's, in the other,
// is added to acc, so the promotion's FMAs hide under the next stage's
// steps. The additions are acc's in the order of kt all the same (the
// contract's promoted chain); only when they are issued moves. The stage's
// weight is sa_blk·sb_blk for block scales, else 1 (fma(p, 1, acc) is
// add(acc, p)); the product is taken when the stage is promoted. On the
// SCALES_RING path the factors are read from the stage's scale slot once
// the stage is full; on SCALES_OWN from global memory (sw), with OVERLAP
// in promote_tile_own, without it each stage's loaded when the one before
// it is issued. lr0 is the thread's first row within the tile. Without
// OVERLAP one set of chain registers serves every stage (each stage waited
// for, then added): the same additions in the same order, for kernels
// whose epilogue leaves no room for the second set (GELU at 128 columns
// spilled under NVRTC 13). Without AHEAD the SCALES_OWN path's factors
// also come one stage ahead with OVERLAP: promote_tile_own's six more
// registers spill the 128-column ReLU kernels into bf16 (NVRTC 12.4 and
// 13.0), which keep this loop.
template <class T, int TA, int TB, bool OVERLAP, bool AHEAD>
DETGEMM_INLINE void promote_tile(float (&acc)[T::BN / 2], dg_u32 ring, dg_u32 bars, int c, int lane, dg_u32 rank,
                                 wg::Ring& r, dg_i64 ktiles, int path, const ScaleWalk& sw, int lr0) {
    if constexpr (OVERLAP && AHEAD) {
        if (path == SCALES_OWN) {
            promote_tile_own<T, TA, TB>(acc, ring, bars, c, lane, rank, r, ktiles, sw);
            return;
        }
    }
    constexpr int BN = T::BN, STAGES = T::STAGES;
    const dg_u32 sring = scale_ring<T>(bars);
    float p0[BN / 2], p1[BN / 2];
    float wa0[2], wa1[2], wb[2];  // the pending stage's weight factors, by partial set
    int slot[2] = {0, 0};         // and its ring slot
    float f0 = 1.0f, f1 = 1.0f, fb = 1.0f;  // the next stage's factors, in flight
    dg_i64 kn = 0;                          // and its k-block
    auto fetch = [&]() {
        if (path == SCALES_OWN && kn < ktiles) {
            f0 = __ldg(sw.a0 + kn);
            f1 = __ldg(sw.a1 + kn);
            fb = __ldg(sw.b + kn);
        }
        ++kn;
    };
    fetch();
    auto stage = [&](float (&p)[BN / 2], int x) {
        slot[x] = r.slot;
        issue_stage<T, TA, TB, true>(p, ring, bars, c, r);
        wa0[x] = f0;
        wa1[x] = f1;
        wb[x] = fb;
        if (path == SCALES_RING) {
            const dg_u32 q = sring + r.slot * T::SCALE_BYTES;
            asm volatile("ld.shared.f32 %0, [%1];\n" : "=f"(wa0[x]) : "r"(q + 4 * lr0) : "memory");
            asm volatile("ld.shared.f32 %0, [%1];\n" : "=f"(wa1[x]) : "r"(q + 4 * (lr0 + 8)) : "memory");
            asm volatile("ld.shared.f32 %0, [%1];\n" : "=f"(wb[x]) : "r"(q + 4 * T::BM) : "memory");
        }
        fetch();
        r.next<STAGES>();
    };
    auto release = [&](int x) { release_slot<T>(bars, slot[x], lane, rank); };
    if constexpr (!OVERLAP) {
        for (dg_i64 kt = 0; kt < ktiles; ++kt) {
            stage(p0, 0);
            wg::wgmma_wait<0>();
            release(0);
            promote<BN>(acc, p0, wa0[0], wa1[0], wb[0]);
        }
        return;
    }
    stage(p0, 0);
    dg_i64 kt = 1;
    for (; kt + 1 < ktiles; kt += 2) {
        stage(p1, 1);
        wg::wgmma_wait<1>();
        release(0);
        promote<BN>(acc, p0, wa0[0], wa1[0], wb[0]);

        stage(p0, 0);
        wg::wgmma_wait<1>();
        release(1);
        promote<BN>(acc, p1, wa0[1], wa1[1], wb[1]);
    }
    if (kt < ktiles) {
        stage(p1, 1);
        wg::wgmma_wait<1>();
        release(0);
        promote<BN>(acc, p0, wa0[0], wa1[0], wb[0]);
        wg::wgmma_wait<0>();
        release(1);
        promote<BN>(acc, p1, wa0[1], wa1[1], wb[1]);
    } else {
        wg::wgmma_wait<0>();
        release(0);
        promote<BN>(acc, p0, wa0[0], wa1[0], wb[0]);
    }
}

// Consumers: warpgroup c owns rows [64c, 64c + 64) of each tile.
template <class T, int TA, int TB, int DTOUT, bool PROMOTE, int ACT>
DETGEMM_INLINE void consume(dg_u32 ring, dg_u32 bars, const wg::Work& w, int c, dg_i64 M, dg_i64 N, dg_i64 K,
                            const Args& a) {
    constexpr int BN = T::BN, STAGES = T::STAGES;
    const int warp = (threadIdx.x / 32) % 4, lane = threadIdx.x % 32;
    // Matmul's epilogue in its fold form with alpha 1 and no C: the bias,
    // then the activation (wgmma.cuh's mm_tile, whose GELU runs rolled).
    const wg::MMArgs mm{nullptr, 0, a.bias, nullptr, nullptr, 0, 1.0f, 0.0f, wg::FORM_FOLD};
    constexpr int EPI_OUT = DTOUT == OUT_E4M3 || DTOUT == OUT_E5M2 ? epi::F32 : DTOUT;
    float am = 0.0f;

    dg_u32 rank;
    dg_i64 first, step;
    cluster_place<T>(rank, first, step);
    wg::Ring r;
    int prev = 0;
    for (dg_i64 item = first; item < w.items; item += step) {
        dg_i64 i0, j0;
        item_origin<T>(item, M, N, rank, i0, j0);
        const dg_i64 row0 = i0 + c * 64 + warp * 16 + lane / 4;  // and row0 + 8
        const dg_i64 col0 = j0 + 2 * (lane % 4);                 // + 8q, and + 1
        // Per-row end scales: rows past M read row M - 1's (never stored).
        const dg_i64 ra0 = row0 < M ? row0 : M - 1, ra1 = row0 + 8 < M ? row0 + 8 : M - 1;
        float acc[BN / 2];
        if constexpr (PROMOTE) {
#pragma unroll
            for (int i = 0; i < BN / 2; ++i) acc[i] = 0.0f;
            const int path = scale_path(a, M), lr0 = c * 64 + warp * 16 + lane / 4;
            promote_tile<T, TA, TB, !(ACT == epi::ACT_GELU && BN >= 128),
                         !(ACT == epi::ACT_RELU && BN >= 128 && DTOUT == epi::BF16)>(
                acc, ring, bars, c, lane, rank, r, w.ktiles, path, scale_walk(a, path, M, N, i0, j0, lr0), lr0);
        } else {
            // The chain starts at +0, read from shared memory rather than
            // written as constants: constant accumulators make ptxas
            // serialise the wgmma pipeline (C7515), as in wgmma.cuh. Four
            // a load from the zeros' shared address (a generic pointer cost
            // a load a value).
#pragma unroll
            for (int i = 0; i < BN / 2; i += 4)
                asm volatile("ld.shared.v4.f32 {%0, %1, %2, %3}, [%4];\n"
                             : "=f"(acc[i]), "=f"(acc[i + 1]), "=f"(acc[i + 2]), "=f"(acc[i + 3])
                             : "r"(bars + 16 * STAGES + 4 * i));
            wg::fence_acc(acc);
            for (dg_i64 kt = 0; kt < w.ktiles; ++kt, r.next<STAGES>()) {
                const int s = r.slot;
                issue_stage<T, TA, TB, false>(acc, ring, bars, c, r);
                // The previous stage's steps are done once at most this
                // one's group is pending: hand its buffers back.
                wg::wgmma_wait<1>();
                wg::fence_acc(acc);
                if (kt > 0) release_slot<T>(bars, prev, lane, rank);
                prev = s;
            }
            wg::wgmma_wait<0>();
            wg::fence_acc(acc);
            release_slot<T>(bars, prev, lane, rank);
        }
        if (item + step >= w.items) dg_launch_dependents();

        // The end scales: per tensor (stride 0) or per row / column.
        if (a.sa != nullptr) {
            const float s0 = a.sa[ra0 * a.sa_rs], s1 = a.sa[ra1 * a.sa_rs];
#pragma unroll
            for (int i = 0; i < BN / 2; ++i) acc[i] = __fmul_rn(acc[i], (i & 2) ? s1 : s0);
        }
        // B's: one factor for every column where it is per tensor (stride
        // 0), a whole tile's columns of a contiguous vector read without the
        // clamp, else each column's index clamped. The same factors and
        // products either way; the general loop's index arithmetic and 64
        // loads ran a 256-column tile's epilogue at about 1 800 instructions
        // a warp (bench/NOTES-fp8.md, twenty-third session).
        // (Not in the ReLU kernels into bf16 of 128 columns or more, which
        // spilled with it under NVRTC 12.4, as with promote_tile's AHEAD.)
        constexpr bool SB_SHORT = !(ACT == epi::ACT_RELU && BN >= 128 && DTOUT == epi::BF16);
        if (a.sb != nullptr) {
            if (SB_SHORT && a.sb_rs == 0) {
                const float sj = a.sb[0];
#pragma unroll
                for (int i = 0; i < BN / 2; ++i) acc[i] = __fmul_rn(acc[i], sj);
            } else if (SB_SHORT && a.sb_rs == 1 && j0 + BN <= N) {
                const float* sbj = a.sb + col0;
#pragma unroll
                for (int q = 0; q < BN / 8; ++q)
#pragma unroll
                    for (int e = 0; e < 2; ++e) {
                        const float sj = sbj[8 * q + e];
                        acc[4 * q + e] = __fmul_rn(acc[4 * q + e], sj);
                        acc[4 * q + 2 + e] = __fmul_rn(acc[4 * q + 2 + e], sj);
                    }
            } else {
#pragma unroll
                for (int q = 0; q < BN / 8; ++q)
#pragma unroll
                    for (int e = 0; e < 2; ++e) {
                        const dg_i64 j = col0 + 8 * q + e;
                        const float sj = a.sb[(j < N ? j : N - 1) * a.sb_rs];
                        acc[4 * q + e] = __fmul_rn(acc[4 * q + e], sj);
                        acc[4 * q + 2 + e] = __fmul_rn(acc[4 * q + 2 + e], sj);
                    }
            }
        }
        // Every tile through mm_tile's general turns: its whole-tile turns made
        // ptxas spill in the 128-column GELU kernels into bf16.
        wg::mm_tile<BN, EPI_OUT, ACT>(acc, mm, M, N, row0, col0, false);
        if constexpr (DTOUT == OUT_E4M3 || DTOUT == OUT_E5M2) {
            store8<BN, DTOUT>(acc, a, a.sd != nullptr ? *a.sd : 1.0f, M, N, row0, col0, am);
        } else {
            if constexpr (DTOUT != epi::F32 && BN >= 64) {  // store_whole writes 64 columns at a time
                if (i0 + T::BM <= M && j0 + BN <= N && (a.ldd & 7) == 0 && (reinterpret_cast<dg_u64>(a.D) & 15u) == 0) {
                    const dg_u32 stage =
                        ((bars + 16 * STAGES + BN * 4 + 127u) & ~127u) + (c * 4 + warp) * T::EPI_WARP_BYTES;
                    wg::store_whole<BN, DTOUT>(acc, a.D, a.ldd, i0 + c * 64 + warp * 16, j0, lane, stage);
                    continue;
                }
            }
            wg::store_tile<BN, DTOUT>(acc, a.D, M, N, a.ldd, row0, col0, j0, lane);
        }
    }
    if constexpr (DTOUT == OUT_E4M3 || DTOUT == OUT_E5M2) {
        if (a.amax != nullptr) {
            const dg_u32 m = __reduce_max_sync(0xffffffffu, __float_as_uint(am));
            if (lane == 0 && m != 0u) atomicMax(a.amax, m);
        }
    }
}

// A persistent kernel: at most one block per SM, block (or cluster) b
// computing items b, b + gridDim.x (clusters), ...
template <class T, int TA, int TB, int DTOUT, bool PROMOTE, int ACT>
DETGEMM_INLINE void gemm(const wg::tensor_map& tmA, const wg::tensor_map& tmB, dg_i64 M, dg_i64 N, dg_i64 K,
                         const Args& a) {
    constexpr int STAGES = T::STAGES;
    extern __shared__ unsigned char smem_raw[];
    const dg_u32 ring = (wg::smem_addr(smem_raw) + 1023u) & ~1023u;
    const dg_u32 bars = ring + STAGES * T::STAGE_BYTES;  // full[STAGES], empty[STAGES], zeros[BN]
    // Everything up to dg_grid_dependency_wait touches only this block's
    // shared memory and the kernel's parameters (the tensor maps among
    // them), never global memory: launched overlapped, it runs while the
    // grid ahead in the stream still finishes.
    if (threadIdx.x == 0) {
        tma::prefetch_map(tmA);
        tma::prefetch_map(tmB);
    }
    if (threadIdx.x < T::BN) {
        asm volatile("st.shared.u32 [%0], 0;\n" ::"r"(bars + 16 * STAGES + 4 * threadIdx.x) : "memory");
    }
    if (threadIdx.x == 0) {
        // A stage is full when the producer's copies have landed and, on
        // the SCALES_RING path, the scale loader's 32 lanes' copies too.
        const dg_u32 fills = PROMOTE && scale_path(a, M) == SCALES_RING ? 33u : 1u;
        for (int s = 0; s < STAGES; ++s) {
            wg::mbar_init(bars + 8 * s, fills);
            wg::mbar_init(bars + 8 * (STAGES + s), 4 * T::CONSUMERS * T::CLUSTER);
        }
        tma::fence_barrier_init();
    }
    // With clusters the peer multicasts into this block's ring and arrives
    // on its barriers: both must be initialised first.
    if constexpr (T::CLUSTER > 1) {
        cluster_sync();
    } else {
        __syncthreads();
    }
    dg_grid_dependency_wait();
    wg::Work w;
    w.tiles = ((M + T::BM - 1) / T::BM) * ((N + T::BN * T::CLUSTER - 1) / (T::BN * T::CLUSTER));
    w.ktiles = (K + 127) / 128;
    w.slab_tiles = w.ktiles;
    w.planes = false;
    w.runsum = false;
    w.items = w.tiles;
    if (threadIdx.x < 128) {
        asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(T::PRODUCER_REGS) : "memory");
        if (threadIdx.x == 0) produce<T>(tmA, tmB, ring, bars, w, M, N, M <= 64);
        if constexpr (PROMOTE) {
            if (threadIdx.x / 32 == 1 && scale_path(a, M) == SCALES_RING) load_scales<T>(bars, w, M, N, a, threadIdx.x % 32);
        }
    } else {
        asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(T::CONSUMER_REGS) : "memory");
        consume<T, TA, TB, DTOUT, PROMOTE, ACT>(ring, bars, w, threadIdx.x / 128 - 1, M, N, K, a);
    }
    // No block leaves while its peer may still arrive on its barriers.
    if constexpr (T::CLUSTER > 1) cluster_sync();
}

}  // namespace f8

// Entry points: detgemm_fp8_{fast,prom}{BN}_{act}_{a}{b}_{out}. Arguments: the
// TMA maps of A (K/2 16-bit units × M) and B (K/2 × N), M, N, K, D, ldd,
// the end scales (sa, sa_rs, sb, sb_rs), the block scales (ba, ba_ld, bb,
// bb_ld), bias, sd, amax (each pointer nullable). TILE::THREADS threads;
// grid: TILE::CLUSTER · min(items, SMs / TILE::CLUSTER) in clusters of
// TILE::CLUSTER blocks (an item is TILE::CLUSTER tiles side by side).
#define DETGEMM_F8_ENTRY(NAME, TILE, TA, TB, DTOUT, PROMOTE, ACT)                                                 \
    DETGEMM_KERNEL void __launch_bounds__(TILE::THREADS, 1) __cluster_dims__(TILE::CLUSTER, 1, 1)              \
        NAME(const __grid_constant__ wg::tensor_map tmA, const __grid_constant__ wg::tensor_map tmB, dg_i64 M,    \
             dg_i64 N, dg_i64 K, void* D, dg_i64 ldd, const float* sa, dg_i64 sa_rs, const float* sb,             \
             dg_i64 sb_rs, const float* ba, dg_i64 ba_ld, const float* bb, dg_i64 bb_ld, const float* bias,       \
             const float* sd, dg_u32* amax) {                                                                       \
        const f8::Args a{D, ldd, sa, sa_rs, sb, sb_rs, ba, ba_ld, bb, bb_ld, bias, sd, amax};                     \
        f8::gemm<TILE, TA, TB, DTOUT, PROMOTE, ACT>(tmA, tmB, M, N, K, a);                                               \
    }

#include "zgemm_fp8_entries.cuh"
