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

// The ping-pong tile (wg128x128p): each consumer warpgroup computes whole
// 128 x BN tiles (both 64-row halves, 128 accumulators a thread), the two
// taking the block's tiles in turn, so one warpgroup's epilogue runs while
// the other's steps keep the tensor cores busy. Turn barriers keep the main
// loops in ring order: warpgroup c starts a tile's steps only once the other
// has issued all of the tile before it, so no warpgroup waits on a full
// barrier a whole phase ahead of the other. Blocks run in clusters of
// CLUSTER side by side along n (rank r takes columns j0 + r·BN of an item):
// each producer loads its 64-row half of A and multicasts it to both, so
// every A byte leaves L2 once a pair and a block's L2 traffic a FLOP is the
// 128 x 256 tile's. Same chain per element, same epilogue: same bits.
namespace wgp {

using namespace wg;

template <int BN_, int STAGES_, int CLUSTER_>
struct PTile {
    static constexpr int BM = 128, BN = BN_, STAGES = STAGES_, CLUSTER = CLUSTER_;
    static constexpr int CONSUMERS = 2;
    static constexpr int THREADS = 128 * (CONSUMERS + 1);
    // The consumers hold two 64-row halves' chains (128 a thread) through
    // the epilogue of the first: 240 registers (232 spilled a few bf16
    // kernels), the producer thread the minimum.
    static constexpr int PRODUCER_REGS = 24;
    static constexpr int CONSUMER_REGS = 240;
    static constexpr int A_BYTES = BM * BK * 2;
    static constexpr int B_BYTES = BN * BK * 2;
    static constexpr int STAGE_BYTES = A_BYTES + B_BYTES;
    static constexpr int EPI_WARP_BYTES = 16 * 64 * 2;
    static constexpr int EPI_BYTES = 4 * CONSUMERS * EPI_WARP_BYTES;
    static constexpr int SMEM = STAGES * STAGE_BYTES + 1024 + 2 * STAGES * 8 + BN * 4 + 128 + EPI_BYTES;
    static_assert(BN == 128, "consumers issue two m64n128 steps a k16");
    static_assert(CLUSTER == 1 || CLUSTER == 2, "blocks alone or in pairs");
};
typedef PTile<128, 6, 2> TP128x128;

// The origin of item t's tile for the block of this rank (past N the
// block computes on TMA's zeros and stores nothing).
template <class T>
DETGEMM_INLINE void item_origin(dg_i64 t, dg_i64 M, dg_i64 N, dg_u32 rank, dg_i64& i0, dg_i64& j0) {
    tile_origin<T::BM, T::BN * T::CLUSTER>(t, M, N, i0, j0);
    j0 += (dg_i64)rank * T::BN;
}

// Producer: one thread keeps the ring full across the block's tiles, in
// the order the warpgroups take them. A comes as this rank's 64-row half
// (a box of 64 rows; with A read along its rows two 64 x 64 boxes, this
// rank's one) multicast to the pair; B as the block's own BN columns.
// Every block's full barrier expects the whole stage.
template <class T, bool A_RC, bool B_JC>
DETGEMM_INLINE void produce(const tensor_map& tmA, const tensor_map& tmB, dg_u32 ring, dg_u32 bars, dg_i64 items,
                            dg_i64 ktiles, dg_i64 M, dg_i64 N, dg_u32 rank, dg_i64 first, dg_i64 step) {
    constexpr int BN = T::BN, STAGES = T::STAGES;
    prefetch_map(tmA);
    prefetch_map(tmB);
    Ring r;
    for (dg_i64 item = first; item < items; item += step) {
        dg_i64 i0, j0;
        item_origin<T>(item, M, N, rank, i0, j0);
        for (dg_i64 kt = 0; kt < ktiles; ++kt, r.next<STAGES>()) {
            const int s = r.slot;
            mbar_wait(bars + 8 * (STAGES + s), r.phase ^ 1u);
            const dg_u32 full = bars + 8 * s;
            mbar_expect_tx(full, T::STAGE_BYTES);
            const dg_u32 a = ring + s * T::STAGE_BYTES, b = a + T::A_BYTES;
            const int k0 = (int)(kt * BK);
            if constexpr (T::CLUSTER > 1) {
                if constexpr (A_RC) {
                    tma::load_2d_multicast(a + rank * BOX, tmA, k0, (int)i0 + 64 * (int)rank, full, 0x3);
                } else {
                    tma::load_2d_multicast(a + rank * BOX, tmA, (int)i0 + 64 * (int)rank, k0, full, 0x3);
                }
            } else {
                if constexpr (A_RC) {
                    tma::load_2d(a, tmA, k0, (int)i0, full);
                } else {
#pragma unroll
                    for (int q = 0; q < 2; ++q) tma::load_2d(a + q * BOX, tmA, (int)i0 + 64 * q, k0, full);
                }
            }
            if constexpr (B_JC) {
#pragma unroll
                for (int q = 0; q < BN / 64; ++q) tma::load_2d(b + q * BOX, tmB, (int)j0 + 64 * q, k0, full);
            } else {
                tma::load_2d(b, tmB, k0, (int)j0, full);
            }
        }
    }
}

// The turn barriers (named barriers 2 and 3, the two consumer warpgroups'
// 256 threads): warpgroup c waits on 2 + c before a tile's steps and the
// other arrives on it once it has issued all of its own tile's.
DETGEMM_INLINE void turn_wait(int c) { asm volatile("bar.sync %0, 256;\n" ::"r"(2 + c) : "memory"); }
DETGEMM_INLINE void turn_pass(int c) { asm volatile("bar.arrive %0, 256;\n" ::"r"(3 - c) : "memory"); }

// One 64-row half's epilogue and store (wgmma.cuh's consume, for one
// warpgroup's 64 rows from hrow).
template <class T, int DTOUT, int MMACT>
DETGEMM_INLINE void finish_half(float (&acc)[T::BN / 2], const MMArgs& mm, void* D, dg_i64 M, dg_i64 N, dg_i64 ldd,
                                dg_i64 i0, dg_i64 hrow, dg_i64 j0, int c, int warp, int lane, dg_u32 bars) {
    constexpr int BN = T::BN;
    const dg_i64 row0 = hrow + warp * 16 + lane / 4, col0 = j0 + 2 * (lane % 4);
    if constexpr (MMACT >= epi::ACT_GATE) {
        mm_gated<BN, DTOUT, MMACT>(acc, mm, D, M, N, ldd, row0, col0, j0, lane);
    } else {
        mm_tile<BN, DTOUT, MMACT>(acc, mm, M, N, row0, col0, i0 + T::BM <= M && j0 + BN <= N);
        // The block's condition (tile origin and arguments), as in consume.
        if (i0 + T::BM <= M && j0 + BN <= N && (ldd & 7) == 0 && (reinterpret_cast<dg_u64>(D) & 15u) == 0) {
            const dg_u32 stage = ((bars + 16 * T::STAGES + BN * 4 + 127u) & ~127u) + (c * 4 + warp) * T::EPI_WARP_BYTES;
            store_whole<BN, DTOUT>(acc, D, ldd, hrow + warp * 16, j0, lane, stage);
        } else {
            store_tile<BN, DTOUT>(acc, D, M, N, ldd, row0, col0, j0, lane);
        }
    }
}

// Consumers: warpgroup c takes the block's tiles n = c, c + 2, ... (its
// items first + n·step), each at ring position n·ktiles.
template <class T, int DTIN, int DTOUT, bool A_RC, bool B_JC, int MMACT>
DETGEMM_INLINE void consume(dg_u32 ring, dg_u32 bars, dg_i64 items, dg_i64 ktiles, int c, void* D, const float* bias,
                            dg_i64 M, dg_i64 N, dg_i64 ldd, const MMArgs& mm, dg_u32 rank, dg_i64 first, dg_i64 step) {
    constexpr int BN = T::BN, STAGES = T::STAGES;
    constexpr int TA = A_RC ? 0 : 1, TB = B_JC ? 1 : 0;
    const int warp = (threadIdx.x / 32) % 4, lane = threadIdx.x % 32;
    extern __shared__ unsigned char smem_raw[];
    const float* zeros = reinterpret_cast<const float*>(smem_raw + (bars + 16 * STAGES - smem_addr(smem_raw)));
    const dg_u64 da0 = step_desc<A_RC, true>(ring, 0), da1 = step_desc<A_RC, true>(ring + BOX, 0);
    const dg_u64 db0 = step_desc<B_JC, false>(ring + T::A_BYTES, 0);
    // The block's tiles (fewer than 2^31: the engine's wgFits).
    const int tiles = first < items ? (int)((items - first + step - 1) / step) : 0;
    // c through a shuffle, so that ptxas knows it is the same in every lane:
    // the ring position, and with it every descriptor of the hot loop, then
    // lives in uniform registers (wgmma.cuh's consume does the same). With
    // descriptors in vector registers each step took four R2UR and 64-bit
    // adds on the ALUs, which the other warpgroup's epilogue keeps busy.
    const int cu = __shfl_sync(0xffffffffu, c, 0);
    for (int n = cu; n < tiles; n += 2) {
        const dg_i64 item = first + (dg_i64)n * step;
        dg_i64 i0, j0;
        item_origin<T>(item, M, N, rank, i0, j0);
        const dg_i64 col0 = j0 + 2 * (lane % 4);
        // The chains' start (wgmma.cuh's consume, INIT_MM): the start
        // form's bias, or +0 read from shared memory.
        const float* bsrc = bias != nullptr ? bias : zeros - j0;
        asm volatile("" : "+l"(bsrc));
        float acc0[BN / 2], acc1[BN / 2];
        {
            const int left = (int)(N - col0 < BN ? N - col0 : BN);
            const float* b = bsrc + col0;
#pragma unroll
            for (int q = 0; q < BN / 8; ++q) {
#pragma unroll
                for (int e = 0; e < 2; ++e) {
                    const int col = 8 * q + e;
                    float v = 0.0f;
                    if (col < left) v = b[col];
                    acc0[4 * q + e] = v;
                    acc0[4 * q + 2 + e] = v;
                    acc1[4 * q + e] = v;
                    acc1[4 * q + 2 + e] = v;
                }
            }
        }
        fence_acc(acc0);
        fence_acc(acc1);
        // This tile's ring position.
        const dg_u64 pos = (dg_u64)n * (dg_u64)ktiles;
        Ring r;
        r.slot = (int)(pos % STAGES);
        r.phase = (dg_u32)((pos / STAGES) & 1u);
        if (n > 0) turn_wait(c);
        int prev = 0;
        for (dg_i64 kt = 0; kt < ktiles; ++kt, r.next<STAGES>()) {
            const int s = r.slot;
            mbar_wait(bars + 8 * s, r.phase);
            const dg_u64 slot = (dg_u64)(s * (T::STAGE_BYTES >> 4));
            wgmma_fence();
#pragma unroll
            for (int kk = 0; kk < BK / 16; ++kk) {
                const dg_u64 db = db0 + slot + kk * desc_step<B_JC, false>();
                mma_step<BN, DTIN, TA, TB>(acc0, da0 + slot + kk * desc_step<A_RC, true>(), db);
                mma_step<BN, DTIN, TA, TB>(acc1, da1 + slot + kk * desc_step<A_RC, true>(), db);
            }
            wgmma_commit();
            wgmma_wait<1>();
            fence_acc(acc0);
            fence_acc(acc1);
            if (kt > 0) release_slot<T>(bars, prev, lane, rank);
            prev = s;
        }
        // Every step of the tile is issued: the other warpgroup's next
        // tile may start its steps behind them.
        if (n + 1 < tiles) turn_pass(c);
        wgmma_wait<0>();
        fence_acc(acc0);
        fence_acc(acc1);
        release_slot<T>(bars, prev, lane, rank);
        if (n + 2 >= tiles) dg_launch_dependents();
        // The two halves through one copy of the epilogue's code (a rolled
        // loop, acc1 moved into acc0 after the first): inlined twice it
        // outgrew the instruction cache, and with one warp a scheduler on
        // it (the other runs the tile beside) each miss is exposed.
#pragma unroll 1
        for (int h = 0; h < 2; ++h) {
            finish_half<T, DTOUT, MMACT>(acc0, mm, D, M, N, ldd, i0, i0 + 64 * h, j0, c, warp, lane, bars);
#pragma unroll
            for (int i = 0; i < BN / 2; ++i) acc0[i] = acc1[i];
        }
    }
}

template <class T, int DTIN, int DTOUT, bool A_RC, bool B_JC, int MMACT>
DETGEMM_INLINE void gemm(const tensor_map& tmA, const tensor_map& tmB, void* D, const float* bias, dg_i64 M, dg_i64 N,
                         dg_i64 R, dg_i64 ldd, const MMArgs& mm) {
    constexpr int BN = T::BN, STAGES = T::STAGES;
    extern __shared__ unsigned char smem_raw[];
    const dg_u32 ring = (smem_addr(smem_raw) + 1023u) & ~1023u;
    const dg_u32 bars = ring + STAGES * T::STAGE_BYTES;  // full[STAGES], empty[STAGES], zeros[BN]
    if (threadIdx.x < BN) {
        asm volatile("st.shared.u32 [%0], 0;\n" ::"r"(bars + 16 * STAGES + 4 * threadIdx.x) : "memory");
    }
    if (threadIdx.x == 0) {
        for (int s = 0; s < STAGES; ++s) {
            mbar_init(bars + 8 * s, 1);
            // One arrival per consumer warp of the warpgroup on the slot's
            // tile, from every block of the cluster (the peer's producer
            // multicasts into this block's slot too).
            mbar_init(bars + 8 * (STAGES + s), 4 * T::CLUSTER);
        }
        tma::fence_barrier_init();
    }
    __syncthreads();
    if constexpr (T::CLUSTER > 1) cluster_sync();
    dg_u32 rank;
    dg_i64 first, step;
    cluster_place<T>(rank, first, step);
    const dg_i64 items = ((M + T::BM - 1) / T::BM) * ((N + BN * T::CLUSTER - 1) / (BN * T::CLUSTER));
    const dg_i64 ktiles = (R + BK - 1) / BK;
    if (threadIdx.x < 128) {
        asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(T::PRODUCER_REGS) : "memory");
        if (threadIdx.x == 0) produce<T, A_RC, B_JC>(tmA, tmB, ring, bars, items, ktiles, M, N, rank, first, step);
    } else {
        asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(T::CONSUMER_REGS) : "memory");
        consume<T, DTIN, DTOUT, A_RC, B_JC, MMACT>(ring, bars, items, ktiles, threadIdx.x / 128 - 1, D, bias, M, N, ldd, mm,
                                                   rank, first, step);
    }
    // No block leaves while its peer may still multicast into it or arrive
    // on its barriers.
    if constexpr (T::CLUSTER > 1) cluster_sync();
}

}  // namespace wgp

// Entry points of the ping-pong tile: detgemm_wgmm128x128p_{act}_{layout}_{in}_{out},
// the arguments of DETGEMM_WGMM_ENTRY; grid: TILE::CLUSTER · min(items,
// SMs / TILE::CLUSTER) in clusters (an item is TILE::CLUSTER tiles side by
// side along n).
#define DETGEMM_WGMP_ENTRY(NAME, TILE, DTIN, DTOUT, ARC, BJC, ACT)                                               \
    DETGEMM_KERNEL void __launch_bounds__(wgp::TILE::THREADS, 1) __cluster_dims__(wgp::TILE::CLUSTER, 1, 1)      \
        NAME(const __grid_constant__ wg::tensor_map tmA, const __grid_constant__ wg::tensor_map tmB, void* D,   \
             const float* bias, dg_i64 M, dg_i64 N, dg_i64 R, dg_i64 ldd, const void* C, dg_i64 ldc,              \
             const float* fbias, void* aux, unsigned char* mask, dg_i64 ldaux, float alpha, float beta,            \
             int form) {                                                                                          \
        dg_grid_dependency_wait();                                                                                \
        const wg::MMArgs mm{C, ldc, fbias, aux, mask, ldaux, alpha, beta, form};                                  \
        wgp::gemm<wgp::TILE, DTIN, DTOUT, ARC, BJC, ACT>(tmA, tmB, D, bias, M, N, R, ldd, mm);                    \
    }

#include "zgemm_wgmma_matmul_entries.cuh"
