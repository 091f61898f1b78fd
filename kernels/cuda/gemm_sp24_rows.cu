// gemm_sp24_rows.cu: the 2:4-sparse forward for few rows (decode), the
// stages filled by the bulk tensor copy engine (TMA):
// Y[M,N] = epilogue(X[M,K] · W[K,N] (+ bias)) with W 2:4-sparse along K and
// given compressed (docs/contract.md, "2:4 sparse format" and "2:4 sparse
// forward"): values V[N][K/2], metadata E[N][ceil(K/32)].
//
// The chain per element is gemm_sp24.cu's (the product transposed,
// Yᵀ = Wᵀ·Xᵀ, the compressed weight as mma.sp's A): bias[n] (or +0), one
// mma.sp.m16n8k32 step for every 32 positions of K in ascending order (a
// step wholly past K is not issued), Matmul's epilogue, one rounding at the
// store. Same bits as gemm_sp24 and gemm_sp24_wg.
//
// gemm_sp24.cu's few-row tile copies a stage with per-thread cp.async and
// measured issue-bound (ncu: the warps' own copy and address instructions,
// not DRAM, set the pace); as gemm_tc_rows_tma.cu does for the dense
// product, one thread here issues a stage's TMA copies of V and X, and the
// producer warp's lanes copy the stage's metadata, a row each.
//
// A block owns MR (8, 16 or 32) rows m x BN = 32 columns n for the whole
// reduction: one consumer warp per 16 columns x 8 rows (one chain of K/32
// mma.sp each), and one producer warp.
//
// Shared memory: a STAGES-deep ring, 1 KiB aligned, each stage BK = 128
// positions of K:
//   V: one box of 64 values x 32 rows (n), 128-byte rows, 128-byte swizzle;
//   X: two boxes of 64 positions x MR rows, 128-byte rows, 128-byte swizzle;
// then full[STAGES] and empty[STAGES], then the metadata ring: a stage's 4
// words of each of the 32 rows, 16 bytes a row.
//detgemm:only sm_90a
#include "prelude.cuh"
#include "tc_common.cuh"
#include "tma.cuh"
#include "ring_release.cuh"
#include "sp24_mma.cuh"

namespace sp24r {

constexpr int BK = 128;      // positions of K a stage
constexpr int STEPS = BK / 32;  // mma.sp steps a stage
constexpr int BN = 32;       // columns n a block
constexpr int V_BYTES = BN * 128;

// Rows<MR, STAGES, MINB>: MR rows a block, a STAGES-deep ring, MINB
// blocks an SM asked of the register allocator. The Go side computes the
// same shared memory (sp24RowsShared).
template <int MR_, int STAGES_, int MINB_>
struct Rows {
    static constexpr int MR = MR_, STAGES = STAGES_, MINB = MINB_;
    static constexpr int WARPS = (BN / 16) * (MR / 8);  // consumer warps: 16 columns x 8 rows each
    static constexpr int CONSUMERS = WARPS * 32;
    static constexpr int THREADS = CONSUMERS + 32;  // and the producer warp
    static constexpr int X_BOX_BYTES = MR * 128;
    static constexpr int STAGE_BYTES = V_BYTES + 2 * X_BOX_BYTES;
    static constexpr int E_BYTES = BN * 16;
    static constexpr int SMEM = 1024 + STAGES * (STAGE_BYTES + 16 + E_BYTES);
    static_assert(MR == 8 || MR == 16 || MR == 32, "8, 16 or 32 rows");
    static_assert(X_BOX_BYTES % 1024 == 0 && STAGE_BYTES % 1024 == 0, "boxes stay on the swizzle pattern's period");
};

// Shared memory for three blocks an SM (N = 11008's 344 blocks resident at
// once): at most 75 KiB a block. Registers for three blocks of 8 or 16
// rows; the 32-row tile (nine warps) spilled when asked for three or two,
// so it asks for one (the planner takes it where the grid has at most a
// block an SM).
typedef Rows<8, 10, 3> R8;
typedef Rows<16, 8, 3> R16;
typedef Rows<32, 5, 1> R32;

DETGEMM_INLINE void ldsm_x4(dg_u32 (&r)[4], dg_u32 addr) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(addr));
}

// A stage's fragments of one warp: V as A (16 columns n x 16 kept values a
// step), X as B (32 positions x 8 rows a step), the metadata registers.
struct Frags {
    dg_u32 a[STEPS][4];
    dg_u32 b[STEPS][4];
    dg_u32 e[STEPS];
};

// Reads a stage's fragments for the warp's 16 columns n0 and 8 rows m0.
// The 128-byte swizzle moves 16-byte chunk c of row r to c ^ (r & 7); the
// logical fragments are gemm_sp24.cu's. Metadata: lane 4g + h takes the
// stage's words of rows g and g + 8 and gives step s the halves that
// mma.sp's selector-0 layout wants of them.
template <class T>
DETGEMM_INLINE void load_frags(Frags& f, dg_u32 sv, dg_u32 sx, dg_u32 se, int lane, int n0, int m0) {
#pragma unroll
    for (int s = 0; s < STEPS; ++s) {
        const int r = n0 + (lane & 7) + 8 * ((lane >> 3) & 1), c = 2 * s + (lane >> 4);
        ldsm_x4(f.a[s], sv + r * 128 + ((c ^ (r & 7)) << 4));
        const int xr = m0 + (lane & 7), xc = 4 * (s & 1) + (lane >> 3);
        ldsm_x4(f.b[s], sx + (s >> 1) * T::X_BOX_BYTES + xr * 128 + ((xc ^ (xr & 7)) << 4));
    }
    const int g = lane >> 2;
    dg_u32 wa[4], wb[4];
    asm volatile("ld.shared.v4.u32 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(wa[0]), "=r"(wa[1]), "=r"(wa[2]), "=r"(wa[3])
                 : "r"(se + 16 * (n0 + g)));
    asm volatile("ld.shared.v4.u32 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(wb[0]), "=r"(wb[1]), "=r"(wb[2]), "=r"(wb[3])
                 : "r"(se + 16 * (n0 + g + 8)));
    const dg_u32 sel = (lane & 1) ? 0x7632u : 0x5410u;
#pragma unroll
    for (int s = 0; s < STEPS; ++s) f.e[s] = __byte_perm(wa[s], wb[s], sel);
}

template <class T, int IN, int OUT>
DETGEMM_INLINE void forward(const tma::tensor_map& tmV, const tma::tensor_map& tmX, const dg_u32* DETGEMM_RESTRICT E,
                            void* DETGEMM_RESTRICT Y, dg_i64 ldy, const float* DETGEMM_RESTRICT bias, void* aux,
                            unsigned char* mask, dg_i64 ldaux, int act, dg_i64 M, dg_i64 N, dg_i64 K) {
    constexpr int STAGES = T::STAGES;
    extern __shared__ unsigned char smem_raw[];
    const dg_u32 ring = (tc::smem_addr(smem_raw) + 1023u) & ~1023u;
    const dg_u32 bars = ring + STAGES * T::STAGE_BYTES;  // full[s] at +8s, empty[s] at +8(STAGES+s)
    const dg_u32 mring = bars + 16 * STAGES;           // 16-byte aligned

    const int tid = threadIdx.x;
    const int lane = tid & 31, warp = tid >> 5;
    const dg_i64 rtiles = (M + T::MR - 1) / T::MR;
    const dg_i64 i0 = ((dg_i64)blockIdx.x % rtiles) * T::MR;
    const dg_i64 j0 = ((dg_i64)blockIdx.x / rtiles) * BN;
    const dg_i64 ktiles = (K + BK - 1) / BK;  // >= 1: K >= 16
    const dg_i64 mw = (K + 31) / 32;          // metadata words a row

    if (tid == 0) {
#pragma unroll 1
        for (int s = 0; s < STAGES; ++s) {
            tc::mbar_init(bars + 8 * s, 33);                       // expect_tx, and the 32 metadata lanes
            tc::mbar_init(bars + 8 * (STAGES + s), T::CONSUMERS);  // every consumer thread
        }
        tma::fence_barrier_init();
    }
    dg_grid_dependency_wait();  // launched overlapped: the kernel ahead has finished
    __syncthreads();            // the only block barrier: the mbarriers exist

    if (warp == T::WARPS) {
        // The producer warp: k-tile kt goes to slot kt % STAGES once the
        // consumers have released the slot's previous k-tile. Lane 0 issues
        // the TMA copies (rows and positions past the operands arrive as
        // zeros); every lane copies its row's four words of the stage (a row
        // past N takes row N - 1's, a word past the row a zero: the first
        // feeds outputs never stored, the second steps never issued) and
        // arrives on the full barrier when they have landed.
        const dg_i64 n = j0 + lane < N ? j0 + lane : N - 1;
        const dg_u32* erow = E + n * mw;
        // One 16-byte copy where a row's stage words are 16-byte aligned.
        const bool wide = (mw & 3) == 0 && (reinterpret_cast<dg_u64>(E) & 15u) == 0;
        if (lane == 0) {
            tma::prefetch_map(tmV);
            tma::prefetch_map(tmX);
        }
        const int ci = (int)i0, cj = (int)j0;  // TMA coordinates: the engine keeps them below 2^31
        int slot = 0;
        dg_u32 phase = 0;
#pragma unroll 1
        for (dg_i64 kt = 0; kt < ktiles; ++kt) {
            if (kt >= STAGES) tc::mbar_wait(bars + 8 * (STAGES + slot), phase);
            const dg_u32 full = bars + 8 * slot;
            const dg_u32 sv = ring + slot * T::STAGE_BYTES, sx = sv + V_BYTES;
            if (lane == 0) {
                const int k0 = (int)(kt * BK);
                tma::mbar_expect_tx(full, T::STAGE_BYTES);
                tma::load_2d(sv, tmV, k0 / 2, cj, full);
                tma::load_2d(sx, tmX, k0, ci, full);
                tma::load_2d(sx + T::X_BOX_BYTES, tmX, k0 + 64, ci, full);
            }
            const dg_u32 dst = mring + slot * T::E_BYTES + 16 * lane;
            const dg_i64 w0 = 4 * kt;
            if (wide) {
                asm volatile("cp.async.ca.shared.global [%0], [%1], 16;\n" ::"r"(dst), "l"(erow + w0) : "memory");
            } else {
#pragma unroll
                for (int q = 0; q < 4; ++q) {
                    const bool in = w0 + q < mw;
                    asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(dst + 4 * q),
                                 "l"(in ? erow + w0 + q : erow), "r"(in ? 4 : 0)
                                 : "memory");
                }
            }
            asm volatile("cp.async.mbarrier.arrive.noinc.shared::cta.b64 [%0];\n" ::"r"(full) : "memory");
            if (++slot == STAGES) {
                slot = 0;
                if (kt >= STAGES) phase ^= 1;
            }
        }
        // Every copy must land before the warp leaves (its lanes' cp.async
        // are theirs to wait for).
        asm volatile("cp.async.wait_all;\n" ::: "memory");
        return;
    }

    // Consumers: 16 columns n0 x 8 rows m0 of the block's tile.
    const int g = lane >> 2, t4 = lane & 3;
    const int n0 = (warp % 2) * 16, m0 = (warp / 2) * 8;
    float acc[4];
    {
        const dg_i64 na = j0 + n0 + g, nb = na + 8;
        const float b0 = bias != nullptr && na < N ? epi::tc_start(bias, na) : 0.0f;
        const float b1 = bias != nullptr && nb < N ? epi::tc_start(bias, nb) : 0.0f;
        acc[0] = b0;
        acc[1] = b0;
        acc[2] = b1;
        acc[3] = b1;
    }
    int rd = 0;
    dg_u32 phase = 0;
    // The slot rd's fragments, once its copies have landed; returns the
    // slot's empty barrier, arrived on once the fragments are in registers.
    auto take = [&](Frags& f) -> dg_u32 {
        tc::mbar_wait(bars + 8 * rd, phase);
        const dg_u32 sv = ring + rd * T::STAGE_BYTES;
        load_frags<T>(f, sv, sv + V_BYTES, mring + rd * T::E_BYTES, lane, n0, m0);
        const dg_u32 empty = bars + 8 * (STAGES + rd);
        if (++rd == STAGES) {
            rd = 0;
            phase ^= 1;
        }
        return empty;
    };
    // k-tile kt with its fragments in cur: the next k-tile's fragments are
    // read while the steps run, and their slot given back after the last
    // step, by when the reads have long landed: the fence then waits for
    // nothing, where right after the reads it held the chain's next step
    // behind their latency.
    auto ktile = [&](dg_i64 kt, const Frags& cur, Frags& nxt) {
        const dg_i64 k0 = kt * BK;
        const bool whole = k0 + BK <= K;
        if (whole || k0 < K) sp24::mma_sp<IN>(acc, cur.a[0], cur.b[0], cur.e[0]);
        const bool more = kt + 1 < ktiles;
        const dg_u32 empty = more ? take(nxt) : 0u;
#pragma unroll
        for (int s = 1; s < STEPS; ++s)
            if (whole || k0 + 32 * s < K) sp24::mma_sp<IN>(acc, cur.a[s], cur.b[s], cur.e[s]);
        if (more) tc::release_after_reads(empty);
    };
    Frags f0, f1;
    tc::release_after_reads(take(f0));
    dg_i64 kt = 0;
#pragma unroll 1
    for (; kt + 2 <= ktiles; kt += 2) {
        ktile(kt, f0, f1);
        ktile(kt + 1, f1, f0);
    }
    if (kt < ktiles) ktile(kt, f0, f1);
    dg_launch_dependents();  // only the stores are left

    // acc[v]: column j0 + n0 + g (+8 for v >= 2), row i0 + m0 + 2t + (v & 1).
#pragma unroll
    for (int v = 0; v < 4; ++v) {
        const dg_i64 n = j0 + n0 + g + 8 * (v >> 1);
        const dg_i64 m = i0 + m0 + 2 * t4 + (v & 1);
        if (n < N && m < M) epi::mm_finish<OUT>(acc[v], act, Y, m * ldy + n, aux, mask, m * ldaux + n);
    }
}

}  // namespace sp24r

// Entry points: detgemm_sp24rows_{r8,r16,r32}_{in}_{out}. Arguments: the
// TMA maps of V (K/2 values x N rows, box 64 x 32) and X (K x M, box 64 x
// MR), both 128-byte swizzle; E, Y, ldy, bias, aux (GELU's, or null), mask
// (ReLU's, or null), ldaux, act (epi::ACT_*), M, N, K. Grid: ceil(M/MR) ·
// ceil(N/32) blocks, row tiles fastest; block TILE::THREADS; dynamic shared
// memory TILE::SMEM.
#define DETGEMM_SP24ROWS_ENTRY(NAME, IN, OUT, TILE)                                                              \
    DETGEMM_KERNEL void __launch_bounds__(TILE::THREADS, TILE::MINB)                                                      \
        NAME(const __grid_constant__ tma::tensor_map tmV, const __grid_constant__ tma::tensor_map tmX,          \
             const dg_u32* E, void* Y, dg_i64 ldy, const float* bias, void* aux, unsigned char* mask, dg_i64 ldaux, \
             int act, dg_i64 M, dg_i64 N, dg_i64 K) {                                                          \
        sp24r::forward<TILE, IN, OUT>(tmV, tmX, E, Y, ldy, bias, aux, mask, ldaux, act, M, N, K);               \
    }

#include "zgemm_sp24_rows_entries.cuh"
