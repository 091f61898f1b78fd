// gemm_sp24_wg.cu: the 2:4-sparse forward on Hopper's sparse wgmma,
// Y[M,N] = epilogue(X[M,K] · W[K,N] (+ bias)) with W 2:4-sparse along K and
// given compressed (docs/contract.md, "2:4 sparse format" and "2:4 sparse
// forward"): values V[N][K/2], metadata E[N][ceil(K/32)].
//
// As in gemm_sp24.cu the product runs transposed, Yᵀ = Wᵀ·Xᵀ, so that the
// sparse operand is the instruction's A: a tile's rows are columns n of Y
// (rows of V), its columns rows m of X. Per element the chain starts at
// bias[n] (or +0) and takes one wgmma.sp m64nNk32 step for every 32
// positions of K in ascending order (16 kept products a step; a step wholly
// past K is not issued: the plan runs this family only where K % 128 is 0
// or 112, so both steps of every stage lie inside K), then Matmul's epilogue
// and one rounding at the store: gemm_sp24.cu's chain, so the two families
// give the same bits and the tile may depend on M.
//
// Roles, ring and clusters as gemm_fp8.cu's: a producer warpgroup (thread 0 issues
// TMA copies of V's BM rows x 32 values, 64-byte swizzle, and X's BN rows x
// 64 positions, 128-byte swizzle, per stage of 64 positions of K; warp 1
// copies the stage's two metadata words of each of the tile's rows with
// cp.async, or, where the plan staged the metadata first (stage_meta),
// thread 0 copies the stage's in one bulk copy), and BM/64 consumer
// warpgroups of 64 rows each. Metadata
// registers: each warp of a warpgroup gives its 16 rows (warp % 4), lane
// 4g + h (h = 0, 1; sparsity selector 0) rows g (bits 0-15) and g + 8
// (bits 16-31), groups 4h .. 4h+3 of the step: mma.sp.m16n8k32's layout
// (gemm_sp24.cu), measured for wgmma.sp by the GPU tests against gemm/ref.
//detgemm:only sm_90a
#include "prelude.cuh"
#include "wgmma.cuh"

namespace spw {

// A tile of BM (n) x BN (m) outputs with a STAGES-deep ring of 64
// positions of K; the 64-row tile (one consumer warpgroup) gives a grid
// twice as many blocks where the 128-row one leaves SMs idle (M of about
// 128 with N of a few thousand). With CLUSTER 2, blocks run in pairs (a cluster) on the
// two tiles of one column block m stacked along n: each block's producer
// loads half of the X rows they share and multicasts it to both, so each X
// byte leaves L2 once a pair (X is four times V's bytes a stage). The Go
// side computes the same shared memory and grid (sp24wgShared, sp24Tiles).
template <int BM_, int BN_, int STAGES_, int CLUSTER_>
struct Tile {
    static constexpr int BM = BM_, BN = BN_, STAGES = STAGES_, CLUSTER = CLUSTER_;
    static constexpr int CONSUMERS = BM / 64;
    static constexpr int THREADS = 128 * (CONSUMERS + 1);
    static constexpr int V_BYTES = BM * 64;   // BM rows x 32 values
    static constexpr int X_BYTES = BN * 128;  // BN rows x 64 positions
    static constexpr int STAGE_BYTES = V_BYTES + X_BYTES;
    static constexpr int E_BYTES = BM * 8;  // two metadata words a row
    static constexpr int SMEM = STAGES * STAGE_BYTES + 1024 + 2 * STAGES * 8 + BN * 4 + 128 + STAGES * E_BYTES;
    static_assert(BN == 64 || BN == 128 || BN == 256, "consumers issue m64nBNk32");
    static_assert(BM == 64 || BM == 128, "one consumer warpgroup per 64 rows");
};
typedef Tile<64, 128, 10, 2> T64;
// 64 rows m, for batches of 33 to 64 rows, which the other tiles run as
// two row tiles of 32 or as 128 rows half empty; a block streams the same
// V as T64's, so it does not help larger M (bench/NOTES-sparse.md).
typedef Tile<64, 64, 16, 2> T64x64;
typedef Tile<128, 128, 8, 2> T128;
typedef Tile<128, 256, 5, 2> T256;

// A shared-memory matrix descriptor with the 64-byte swizzle (layout type
// 2 in bits 62-63): V's stage rows are 64 bytes; 8-row atoms 512 bytes
// apart. The ring is 1 KiB aligned, so the base-offset field stays 0.
DETGEMM_INLINE dg_u64 sw64_desc(dg_u32 addr) {
    return (dg_u64)((addr & 0x3ffffu) >> 4) | ((dg_u64)1 << 16) | ((dg_u64)(512 >> 4) << 32) | (2ull << 62);
}

// One sparse k32 step, m64nNk32, A (compressed, 64 x 16) and B (32 x N,
// K-major) from shared memory, e the thread's metadata register:
// d = A·B + d.
#define SPW_REGS_64 \
    "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, " \
    "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}"
#define SPW_TAIL_64 "%32, %33, %34"
#define SPW_REGS_128 \
    "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, " \
    "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, " \
    "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, " \
    "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}"
#define SPW_TAIL_128 "%64, %65, %66"
#define SPW_REGS_256 \
    "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, " \
    "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, " \
    "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, " \
    "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, " \
    "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, " \
    "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, " \
    "%96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, " \
    "%112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127}"
#define SPW_TAIL_256 "%128, %129, %130"
#define SPW_D8(o) \
    "+f"(d[o]), "+f"(d[o + 1]), "+f"(d[o + 2]), "+f"(d[o + 3]), "+f"(d[o + 4]), "+f"(d[o + 5]), "+f"(d[o + 6]), "+f"(d[o + 7])
#define SPW_D_64 SPW_D8(0), SPW_D8(8), SPW_D8(16), SPW_D8(24)
#define SPW_D_128 \
    SPW_D8(0), SPW_D8(8), SPW_D8(16), SPW_D8(24), SPW_D8(32), SPW_D8(40), SPW_D8(48), SPW_D8(56)
#define SPW_D_256 \
    SPW_D_128, SPW_D8(64), SPW_D8(72), SPW_D8(80), SPW_D8(88), SPW_D8(96), SPW_D8(104), SPW_D8(112), SPW_D8(120)
#define SPW_MMA(NN, TY)                                                                                        \
    asm volatile("wgmma.mma_async.sp.sync.aligned.m64n" #NN "k32.f32." TY "." TY " " SPW_REGS_##NN ", " \
                 SPW_TAIL_##NN ", 0, 1, 1, 1, 0, 0;\n"                                                       \
                 : SPW_D_##NN                                                                                  \
                 : "l"(da), "l"(db), "r"(e))
template <int N, int IN>
DETGEMM_INLINE void mma_sp(float (&d)[N / 2], dg_u64 da, dg_u64 db, dg_u32 e) {
    if constexpr (N == 64) {
        if constexpr (IN == epi::BF16) {
            SPW_MMA(64, "bf16");
        } else {
            SPW_MMA(64, "f16");
        }
    } else if constexpr (N == 128) {
        if constexpr (IN == epi::BF16) {
            SPW_MMA(128, "bf16");
        } else {
            SPW_MMA(128, "f16");
        }
    } else {
        if constexpr (IN == epi::BF16) {
            SPW_MMA(256, "bf16");
        } else {
            SPW_MMA(256, "f16");
        }
    }
}

// The arguments after the maps and shape.
struct Args {
    const dg_u32* E;  // metadata, N rows of MW words
    // The metadata staged by stage_meta (null: the loader warp reads E):
    // ET[(kt * et_rows + n) * 2 + w], the stage's two words of row n, rows
    // past N repeating row N - 1's; et_rows is N rounded up to 256.
    const dg_u32* ET;
    dg_i64 et_rows;
    void* Y;
    dg_i64 ldy;
    const float* bias;  // null: none
    void* aux;
    unsigned char* mask;
    dg_i64 ldaux;
};

// The ring's metadata slots (Tile::E_BYTES a stage), after the barriers,
// the zeros and 128 bytes of slack.
template <class T>
DETGEMM_INLINE dg_u32 meta_ring(dg_u32 bars) {
    return (bars + 16 * T::STAGES + T::BN * 4 + 127u) & ~127u;
}

using wg::cluster_place;
using wg::cluster_sync;
using wg::release_slot;

// The bits of v as a matrix of type OUT stores it (epi::store's rounding;
// 16-bit by wgmma.cuh's pack16: one cvt, no branch).
template <int OUT>
DETGEMM_INLINE dg_u32 out_bits(float v) {
    if constexpr (OUT == epi::F32) return __float_as_uint(v);
    else return sel::round_pair<OUT>(v, v) & 0xffffu;
}

// Stores element e of a matrix of type OUT whose bits out_bits gave.
template <int OUT>
DETGEMM_INLINE void put(void* p, dg_i64 e, dg_u32 bits) {
    if constexpr (OUT == epi::F32) static_cast<dg_u32*>(p)[e] = bits;
    else static_cast<dg_u16*>(p)[e] = (dg_u16)bits;
}

// The ReLU mask byte (epi::mm_mask) of a stored value, from its bits.
template <int OUT>
DETGEMM_INLINE unsigned char mask_byte(dg_u32 bits) {
    const float x = OUT == epi::F32 ? __uint_as_float(bits)
                    : OUT == epi::BF16 ? __uint_as_float(bits << 16)
                                       : dg_f16_to_f32((dg_u16)bits);
    return x > 0.0f ? epi::MASK_PASS : (x != x ? epi::MASK_NAN : epi::MASK_ZERO);
}

// The origin of the tile of item t for the block of this rank: an item is
// a tile, or with clusters the tiles (n0, m0) and (n0 + BM, m0), rank r
// taking the r-th (past N it computes on TMA's zeros and stores nothing).
template <class T>
DETGEMM_INLINE void item_origin(dg_u32 t, dg_i64 M, dg_i64 N, dg_u32 rank, dg_i64& n0, dg_i64& m0) {
    wg::tile_origin<T::BM * T::CLUSTER, T::BN>(t, N, M, n0, m0);
    n0 += (dg_i64)rank * T::BM;
}

// The block's stages in ring order, as every party that fills the ring
// walks them: for each of the block's items and each of its k-tiles,
// waits until the stage's slot is free (its empty barrier), then calls
// fill(slot, rank, n0, m0, kt).
template <class T, class F>
DETGEMM_INLINE void each_free_slot(dg_u32 bars, dg_i64 items, dg_i64 ktiles, dg_i64 M, dg_i64 N, F&& fill) {
    dg_u32 rank, first, step;
    cluster_place<T>(rank, first, step);
    wg::Ring r;
    for (dg_u32 t = first; t < (dg_u32)items; t += step) {
        dg_i64 n0, m0;
        item_origin<T>(t, M, N, rank, n0, m0);
        for (int kt = 0; kt < (int)ktiles; ++kt, r.next<T::STAGES>()) {
            wg::mbar_wait(bars + 8 * (T::STAGES + r.slot), r.phase ^ 1u);
            fill(r.slot, rank, n0, m0, kt);
        }
    }
}

// Producer (one thread): V's box of 32 values x BM rows; X's of 64
// positions x BN rows, or with clusters this rank's BN/2 rows multicast
// to both blocks (every block's full barrier expects the whole stage: its
// own V, both halves of X). Rows and positions past the operands arrive as
// zeros.
// With staged metadata (Args::ET) the same thread copies the stage's
// metadata too, BM rows x 8 contiguous bytes of ET, into the stage's slot
// (meta_ring) by one bulk copy completing on the stage's full barrier.
template <class T>
DETGEMM_INLINE void produce(const wg::tensor_map& tmV, const wg::tensor_map& tmX, dg_u32 ring, dg_u32 bars,
                            dg_i64 items, dg_i64 ktiles, dg_i64 M, dg_i64 N, const Args& a) {
    tma::prefetch_map(tmV);
    tma::prefetch_map(tmX);
    const bool staged = a.ET != nullptr;
    const dg_u32 mring = meta_ring<T>(bars);
    each_free_slot<T>(bars, items, ktiles, M, N, [&](int s, dg_u32 rank, dg_i64 n0, dg_i64 m0, int kt) {
        const dg_u32 full = bars + 8 * s;
        tma::mbar_expect_tx(full, T::STAGE_BYTES + (staged ? T::E_BYTES : 0));
        if (staged) {
            asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];\n" ::"r"(
                             mring + s * T::E_BYTES),
                         "l"(a.ET + ((dg_i64)kt * a.et_rows + n0) * 2), "r"(T::E_BYTES), "r"(full)
                         : "memory");
        }
        const dg_u32 v = ring + s * T::STAGE_BYTES, x = v + T::V_BYTES;
        tma::load_2d(v, tmV, (int)(kt * 32), (int)n0, full);
        if constexpr (T::CLUSTER > 1) {
            constexpr int HALF = T::BN / 2;
            tma::load_2d_multicast(x + rank * HALF * 128, tmX, (int)(kt * 64), (int)m0 + HALF * (int)rank, full, 0x3);
        } else {
            tma::load_2d(x, tmX, (int)(kt * 64), (int)m0, full);
        }
    });
}

// The metadata loader (the producer warpgroup's second warp): for every
// stage, once its slot is free, words 2kt and 2kt + 1 of each of the
// tile's BM rows (rows past N take row N - 1's, a word past the row its
// first word: valid patterns in places that are never stored or never
// issued), by cp.async; each lane's arrival on the stage's full barrier
// (counted in its initialisation) comes when its copies have landed.
template <class T>
DETGEMM_INLINE void load_meta(dg_u32 bars, dg_i64 items, dg_i64 ktiles, dg_i64 M, dg_i64 N, dg_i64 mw,
                              const dg_u32* E, int lane) {
    const dg_u32 mring = meta_ring<T>(bars);
    // Both words in one 8-byte copy where a row's pairs are 8-byte aligned
    // (an even number of words a row, E 8-byte aligned): half the requests,
    // each in its own sector.
    const bool wide = (mw & 1) == 0 && (reinterpret_cast<dg_u64>(E) & 7u) == 0;
    each_free_slot<T>(bars, items, ktiles, M, N, [&](int s, dg_u32, dg_i64 n0, dg_i64, int kt) {
        const dg_u32 dst = mring + s * T::E_BYTES;
        const dg_i64 w0 = 2 * kt, w1 = 2 * kt + 1 < mw ? 2 * kt + 1 : 2 * kt;
#pragma unroll
        for (int q = 0; q < T::BM / 32; ++q) {
            const int r = 32 * q + lane;
            const dg_i64 n = n0 + r < N ? n0 + r : N - 1;
            const dg_u32* src = E + n * mw;
            if (wide) {
                asm volatile("cp.async.ca.shared.global [%0], [%1], 8;\n" ::"r"(dst + 8 * r), "l"(src + w0) : "memory");
            } else {
                asm volatile("cp.async.ca.shared.global [%0], [%1], 4;\n" ::"r"(dst + 8 * r), "l"(src + w0) : "memory");
                asm volatile("cp.async.ca.shared.global [%0], [%1], 4;\n" ::"r"(dst + 8 * r + 4), "l"(src + w1) : "memory");
            }
        }
        asm volatile("cp.async.mbarrier.arrive.noinc.shared::cta.b64 [%0];\n" ::"r"(bars + 8 * s) : "memory");
    });
}

// Consumers: warpgroup c owns rows [64c, 64c + 64) of each tile (n).
template <class T, int IN, int OUT, int ACT>
DETGEMM_INLINE void consume(dg_u32 ring, dg_u32 bars, dg_i64 items, dg_i64 ktiles, int c, dg_i64 M, dg_i64 N,
                            dg_i64 K, const Args& a) {
    constexpr int BN = T::BN, STAGES = T::STAGES;
    const int warp = (threadIdx.x / 32) % 4, lane = threadIdx.x % 32;
    const int g = lane / 4;
    const dg_u32 mring = meta_ring<T>(bars);
    // This thread's metadata rows within the tile and its half of them.
    const int r0 = c * 64 + warp * 16 + g;
    // 32-bit indices (the plan keeps M and N below 2^31 here; TMA's
    // coordinates are 32-bit too): 64-bit ones spilled the 256-row tile.
    const int m32 = (int)M, n32 = (int)N;
    const dg_u32 sel = (lane & 1) ? 0x7632u : 0x5410u;
    extern __shared__ unsigned char smem_raw[];
    const float* zeros = reinterpret_cast<const float*>(smem_raw + (bars + 16 * STAGES - wg::smem_addr(smem_raw)));

    dg_u32 rank, first, step;
    cluster_place<T>(rank, first, step);
    wg::Ring r;
    int prev = 0;
    // Two sets of metadata registers, one for even stages and one for odd:
    // wgmma.sp may still read a stage's metadata operand until its group
    // completes, so the next stage's must land in the other set (measured:
    // with one set, whose registers the next stage's loads could take while
    // the group before was still pending, the bits changed from run to
    // run). Each set is used once more after the wait that retires its
    // group, which keeps the compiler from giving the other set its
    // registers before then.
    dg_u32 ea0 = 0, ea1 = 0, eb0 = 0, eb1 = 0;
    for (dg_u32 t = first; t < (dg_u32)items; t += step) {
        dg_i64 n0, m0;
        item_origin<T>(t, M, N, rank, n0, m0);
        const int na = (int)n0 + r0, nb = na + 8;  // accumulator 4q + 2h + e: n = na (h = 0) or nb
        float acc[BN / 2];
        {
            // The chain's start: bias[n], or +0 read from shared memory
            // (constant accumulators make ptxas serialise the wgmma
            // pipeline, C7515, as in wgmma.cuh), loaded on one path: the
            // source is the block's choice, and rows past N read row
            // N - 1's (never stored); a per-thread choice between a load
            // and a constant made ptxas 13 serialise it too (C7520).
            const bool has = a.bias != nullptr;
            const float* src = has ? a.bias : zeros;
            asm volatile("" : "+l"(src));
            const float s0 = epi::tc_start(src, has ? min(na, n32 - 1) : 0);
            const float s1 = epi::tc_start(src, has ? min(nb, n32 - 1) : 0);
#pragma unroll
            for (int i = 0; i < BN / 2; ++i) acc[i] = (i & 2) ? s1 : s0;
        }
        wg::fence_acc(acc);
        // One stage: its metadata into (e0, e1), both k32 steps, and the
        // slot of the stage before handed back once its group is done;
        // (o0, o1) is the other set, free from then on.
        auto stage = [&](int kt, dg_u32& e0, dg_u32& e1, const dg_u32& o0, const dg_u32& o1) {
            const int s = r.slot;
            wg::mbar_wait(bars + 8 * s, r.phase);
            const dg_u32 v = ring + s * T::STAGE_BYTES;
            const dg_u64 da = sw64_desc(v + c * 64 * 64), db = wg::sw128_desc(v + T::V_BYTES, 16, 1024);
            const dg_u32 me = mring + s * T::E_BYTES;
            dg_u32 w0a, w0b, w1a, w1b;
            asm volatile("ld.shared.v2.u32 {%0, %1}, [%2];\n" : "=r"(w0a), "=r"(w1a) : "r"(me + 8 * r0) : "memory");
            asm volatile("ld.shared.v2.u32 {%0, %1}, [%2];\n" : "=r"(w0b), "=r"(w1b) : "r"(me + 8 * (r0 + 8)) : "memory");
            e0 = __byte_perm(w0a, w0b, sel);
            e1 = __byte_perm(w1a, w1b, sel);
            wg::wgmma_fence();
            mma_sp<BN, IN>(acc, da, db, e0);
            mma_sp<BN, IN>(acc, da + 2, db + 4, e1);
            wg::wgmma_commit();
            // The previous stage's steps are done once at most this one's
            // group is pending: hand its slot back to the producers.
            wg::wgmma_wait<1>();
            wg::fence_acc(acc);
            asm volatile("" ::"r"(o0), "r"(o1));
            if (kt > 0) release_slot<T>(bars, prev, lane, rank);
            prev = s;
            r.next<STAGES>();
        };
        // Stages in pairs, every step issued: the plan runs these tiles only
        // where K % 128 is 0 or 112 (sp24wgTakesK), so the count of stages
        // is even and both steps of the last lie inside K. A step wholly
        // past K would add +0 products and turn a -0 chain into +0; a step
        // or stage issued on a condition (a branch, or the instruction's
        // guard) made ptxas 13 serialise the pipeline (C7520).
        for (int kt = 0; kt < (int)ktiles; kt += 2) {
            stage(kt, ea0, ea1, eb0, eb1);
            stage(kt + 1, eb0, eb1, ea0, ea1);
        }
        wg::wgmma_wait<0>();
        wg::fence_acc(acc);
        release_slot<T>(bars, prev, lane, rank);
        if (t + step >= (dg_u32)items) dg_launch_dependents();

        // The epilogue, element by element: accumulator 4q + 2h + e is
        // Y[m][n] with n = na (h = 0) or nb, m = m0 + 8q + 2(lane % 4) + e.
        // Every value is formed on one path and only the stores depend on
        // the bounds (epi::mm_finish's steps, reordered): the same bits in
        // fewer registers than mm_finish under a bounds branch.
        const int mc = (int)m0 + 2 * (lane % 4);
        auto finish = [&](float v, int q, int h, int e) {
            const int n = h ? nb : na, m = mc + 8 * q + e;
            const bool in = n < n32 && m < m32;
            const dg_i64 ax = (dg_i64)m * a.ldaux + n;
            const dg_u32 pre = out_bits<OUT>(v);  // GELU's aux: v as D stores it
            const float y = ACT == epi::ACT_RELU ? dg_relu(v) : ACT == epi::ACT_GELU ? dg_gelu(v) : v;
            const dg_u32 yb = out_bits<OUT>(y);
            if (in) {
                put<OUT>(a.Y, (dg_i64)m * a.ldy + n, yb);
                if (ACT == epi::ACT_GELU && a.aux != nullptr) put<OUT>(a.aux, ax, pre);
                if (ACT == epi::ACT_RELU && a.mask != nullptr) a.mask[ax] = mask_byte<OUT>(yb);
            }
        };
        if constexpr (ACT == epi::ACT_GELU) {
            // GELU in a rolled loop, W accumulators a turn, the next turn's
            // moved to the front after each (wgmma.cuh's mm_tile): inlined
            // at every accumulator, or 8 a turn, it spilled under NVRTC 13.
            constexpr int W = 4;
#pragma unroll 1
            for (int t8 = 0; t8 < BN / 2 / W; ++t8) {
#pragma unroll
                for (int u = 0; u < W; ++u) finish(acc[u], t8 * (W / 4) + u / 4, (u / 2) % 2, u % 2);
#pragma unroll
                for (int k = 0; k < BN / 2 - W; ++k) acc[k] = acc[k + W];
            }
        } else {
#pragma unroll
            for (int q = 0; q < BN / 8; ++q)
#pragma unroll
                for (int h = 0; h < 2; ++h)
#pragma unroll
                    for (int e = 0; e < 2; ++e) finish(acc[4 * q + 2 * h + e], q, h, e);
        }
    }
}

// A persistent kernel: at most one block per SM, block b computing tiles
// b, b + gridDim.x, ...
template <class T, int IN, int OUT, int ACT>
DETGEMM_INLINE void forward(const wg::tensor_map& tmV, const wg::tensor_map& tmX, dg_i64 M, dg_i64 N, dg_i64 K,
                            const Args& a) {
    constexpr int STAGES = T::STAGES;
    extern __shared__ unsigned char smem_raw[];
    const dg_u32 ring = (wg::smem_addr(smem_raw) + 1023u) & ~1023u;
    const dg_u32 bars = ring + STAGES * T::STAGE_BYTES;  // full[STAGES], empty[STAGES], zeros[BN]
    if (threadIdx.x < T::BN) {
        asm volatile("st.shared.u32 [%0], 0;\n" ::"r"(bars + 16 * STAGES + 4 * threadIdx.x) : "memory");
    }
    if (threadIdx.x == 0) {
        // A stage is full when the producer's copies and the metadata
        // loader's 32 lanes' copies have landed (staged metadata: the
        // producer's copies alone).
        for (int s = 0; s < STAGES; ++s) {
            wg::mbar_init(bars + 8 * s, a.ET != nullptr ? 1u : 33u);
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
    const dg_i64 items = ((N + T::BM * T::CLUSTER - 1) / (T::BM * T::CLUSTER)) * ((M + T::BN - 1) / T::BN);
    const dg_i64 ktiles = (K + 63) / 64;
    // No setmaxnreg: the consumers' code fits the launch's 168 registers a
    // thread (with the producer lowered to 40 and the consumers raised to
    // 232, NVRTC 13 spilled a GELU kernel).
    if (threadIdx.x < 128) {
        if (threadIdx.x == 0) produce<T>(tmV, tmX, ring, bars, items, ktiles, M, N, a);
        if (threadIdx.x / 32 == 1 && a.ET == nullptr) load_meta<T>(bars, items, ktiles, M, N, (K + 31) / 32, a.E, threadIdx.x % 32);
    } else {
        consume<T, IN, OUT, ACT>(ring, bars, items, ktiles, threadIdx.x / 128 - 1, M, N, K, a);
    }
    // No block leaves while its peer may still arrive on its barriers.
    if constexpr (T::CLUSTER > 1) cluster_sync();
}

}  // namespace spw

// Entry points: detgemm_sp24wg_{tile}_{act}_{in}_{out}, the activation
// (epi::ACT_*) compiled in. Arguments: the TMA maps of V (K/2 values x N
// rows, box 32 x TILE::BM, 64-byte swizzle) and X (K x M, box 64 x BN, 128-byte
// swizzle), M, N, K, E, Y, ldy, bias, aux (GELU's, or null), mask (ReLU's,
// or null), ldaux.
// TILE::THREADS threads; grid: TILE::CLUSTER · min(items, SMs /
// TILE::CLUSTER) in clusters of TILE::CLUSTER blocks (an item is
// TILE::CLUSTER tiles stacked along n).
#define DETGEMM_SP24WG_ENTRY(NAME, IN, OUT, TILE, ACT)                                                          \
    DETGEMM_KERNEL void __launch_bounds__(TILE::THREADS, 1) __cluster_dims__(TILE::CLUSTER, 1, 1)              \
        NAME(const __grid_constant__ wg::tensor_map tmV, const __grid_constant__ wg::tensor_map tmX, dg_i64 M,   \
             dg_i64 N, dg_i64 K, const dg_u32* E, const dg_u32* ET, dg_i64 et_rows, void* Y, dg_i64 ldy,        \
             const float* bias, void* aux, unsigned char* mask, dg_i64 ldaux) {                                  \
        dg_grid_dependency_wait();                                                                              \
        const spw::Args a{E, ET, et_rows, Y, ldy, bias, aux, mask, ldaux};                                      \
        spw::forward<TILE, IN, OUT, ACT>(tmV, tmX, M, N, K, a);                                                 \
    }

// Entry point detgemm_sp24wg_stage_meta(E, N, mw, ktiles, ET, et_rows): one
// call's metadata in the layout the producer copies a stage of at once
// (Args::ET): ET[(kt * et_rows + n) * 2 + w] = E[min(n, N - 1) * mw + c]
// with c = 2kt for w = 0 and min(2kt + 1, mw - 1) for w = 1 (load_meta's
// words). Exact copies, so the bits are the loader's. A thread a word
// pair, rows fastest; any grid.
#define DETGEMM_SP24WG_STAGE_ENTRY(NAME, ...)                                                                   \
    DETGEMM_KERNEL void NAME(const dg_u32* E, dg_i64 N, dg_i64 mw, dg_i64 ktiles, dg_u32* ET, dg_i64 et_rows) {   \
        dg_grid_dependency_wait();                                                                              \
        const dg_i64 total = ktiles * et_rows;                                                                  \
        for (dg_i64 e = (dg_i64)blockIdx.x * blockDim.x + threadIdx.x; e < total;                              \
             e += (dg_i64)gridDim.x * blockDim.x) {                                                             \
            const dg_i64 kt = e / et_rows, n = e - kt * et_rows;                                                \
            const dg_u32* row = E + (n < N ? n : N - 1) * mw;                                                  \
            const dg_i64 w1 = 2 * kt + 1 < mw ? 2 * kt + 1 : 2 * kt;                                          \
            ET[2 * e] = row[2 * kt];                                                                            \
            ET[2 * e + 1] = row[w1];                                                                            \
        }                                                                                                       \
        dg_launch_dependents();                                                                                 \
    }

#include "zgemm_sp24_wg_entries.cuh"
