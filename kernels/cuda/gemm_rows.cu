// gemm_rows.cu: slab partials for few rows (the "rows" strategy).
// See gemm_rows_fused.cu for the one-launch path, which folds in the same kernel.
//
// Forward and dX with a small M are bandwidth-bound: every element of the
// right operand W is used by only M output rows. Here each block owns one
// slab s of the reduction, a run of JT = THREADS*CN output columns and up to
// MR output rows; each thread owns CN columns of those rows and runs, per
// element, the plan's chain of slab s: one ascending __fmaf_rn chain from
// +0. The partial goes to the workspace laid out [S][rows][cols]:
//
//   ws[s][i][j] = p_s(i, j)
//
// and gemm_fold.cu folds the partials in the plan's order and stores. So
// the bits equal the tiled kernels' for every M: this kernel only changes
// who computes a chain, never the chain.
//
// Data movement: the block's MR rows of the left operand for the slab are
// staged once in shared memory (xs, widened to f32). The right operand is
// streamed through shared memory in chunks of RC reduction steps, double
// buffered through registers (RC*CN loads in flight per thread), read along
// its contiguous axis: along j for forward (nn: B(r, j) = W[r*ldb + j]) and
// along r for dX (nt: B(r, j) = W[j*ldb + r]), transposed on the way into
// shared memory. So W is read exactly once, coalesced, in either layout.
// Typed inputs stay 16-bit in shared memory and are widened exactly when
// used (once per element either way).
#include "prelude.cuh"
#include "rows_common.cuh"

namespace rowsk {

constexpr int THREADS = 128;

// Blocks per SM each configuration is compiled for (a register budget):
// four for the bandwidth-bound few-row kernels, whose memory parallelism is
// their occupancy (with one column a thread, 4096 columns and 16 slabs are
// 512 blocks: one wave at four an SM); three where 32 row accumulators need
// the registers.
// Naming a minimum also stops ptxas from trading a few spills for an
// occupancy of its own choosing.
constexpr int min_blocks(int mr) { return mr <= 16 ? 4 : 3; }

// Geometry of one configuration. The Go dispatcher computes SMEM by the
// same formula (rowsSharedBytes); the kernel traps if launched with less.
template <int DT, int MR, int CN>
struct Geo {
    typedef typename raw_of<DT>::type Raw;
    static constexpr int JT = THREADS * CN;               // columns per block
    static constexpr int RC = (DT == F32 || CN > 1 ? 32 : 64) / CN;  // steps per staged chunk
    static constexpr int PAD = DT == F32 ? 1 : 2;          // conflict-free transposed stores
    static constexpr int LDB = JT + PAD;                   // row stride of a staged chunk
    static constexpr int PER = RC * CN;                    // elements each thread prefetches
    static constexpr int XS_BYTES = MR * SLAB * 4;
    static constexpr int BS_BYTES = (2 * RC * LDB * (int)sizeof(Raw) + 15) / 16 * 16;
    static constexpr int SMEM = XS_BYTES + BS_BYTES;
    static_assert(SLAB % RC == 0, "chunks tile a slab");
    static_assert(MR % 4 == 0, "rows are processed in groups of four");
    static_assert(THREADS % RC == 0, "the transposed fetch maps whole chunks");
};

template <int DT, int MR, int CN, bool NT>
DETGEMM_INLINE void partials(const void* DETGEMM_RESTRICT A, const void* DETGEMM_RESTRICT B,
                             float* DETGEMM_RESTRICT ws, dg_i64 rows, dg_i64 cols, dg_i64 R,
                             dg_i64 lda, dg_i64 ldb) {
    typedef Geo<DT, MR, CN> G;
    typedef typename G::Raw Raw;
    constexpr int RC = G::RC;
    extern __shared__ __align__(16) float smem[];
    float (*xs)[SLAB] = reinterpret_cast<float (*)[SLAB]>(smem);
    Raw (*bs)[RC][G::LDB] = reinterpret_cast<Raw (*)[RC][G::LDB]>(smem + MR * SLAB);

    dg_u32 dyn;
    asm volatile("mov.u32 %0, %%dynamic_smem_size;" : "=r"(dyn));
    if (dyn < (dg_u32)G::SMEM) __trap();  // the host launched with the wrong size

    const int t = threadIdx.x;
    const dg_i64 jb = (dg_i64)blockIdx.x * G::JT;
    const dg_i64 s = blockIdx.y;
    const dg_i64 m0 = (dg_i64)blockIdx.z * MR;
    const dg_i64 r0 = s * SLAB;
    const int len = R - r0 < SLAB ? (int)(R - r0) : SLAB;     // steps in this slab
    const int mcount = rows - m0 < MR ? (int)(rows - m0) : MR;  // rows in this block
    const Raw* Ap = static_cast<const Raw*>(A);
    const Raw* Bp = static_cast<const Raw*>(B);

    // The block's rows of A over the slab, zero outside the problem: the
    // thread's loads issued in batches of up to 32 before their stores (one
    // memory latency per batch rather than one per eight elements).
    static_assert((MR * SLAB) % THREADS == 0, "the rows of A split evenly over the threads");
    {
        constexpr int PERX = MR * SLAB / THREADS;
        constexpr int BATCH = PERX < 32 ? PERX : 32;
#pragma unroll 1
        for (int b0 = 0; b0 < PERX; b0 += BATCH) {
            Raw xr[BATCH];
#pragma unroll
            for (int q = 0; q < BATCH; ++q) {
                const int idx = t + (b0 + q) * THREADS, m = idx / SLAB, r = idx % SLAB;
                xr[q] = (m < mcount && r < len) ? Ap[(m0 + m) * lda + r0 + r] : (Raw)0;
            }
#pragma unroll
            for (int q = 0; q < BATCH; ++q) {
                const int idx = t + (b0 + q) * THREADS;
                xs[idx / SLAB][idx % SLAB] = widen<DT>(xr[q]);
            }
        }
    }

    // This thread's share of a chunk: element q sits at chunk row
    // chunk_r(q), chunk column chunk_j(q). Addresses advance by running
    // pointers, so no per-element 64-bit products stay live.
    auto chunk_r = [&](int q) { return NT ? t % RC : q / CN; };
    auto chunk_j = [&](int q) { return NT ? t / RC + (THREADS / RC) * q : t + THREADS * (q % CN); };
    const dg_i64 cols_left = cols - jb;
    const Raw* b_first = NT ? Bp + (jb + t / RC) * ldb + r0 + t % RC : Bp + r0 * ldb + jb + t;
    const dg_i64 b_step = NT ? (dg_i64)(THREADS / RC) * ldb : ldb;  // to the next q (nt) or row (nn)

    Raw pre[G::PER];
    auto fetch = [&](int c) {
        const int rem = len - c * RC;  // valid steps in chunk c
        const Raw* p = b_first + (NT ? (dg_i64)c * RC : (dg_i64)c * RC * ldb);
        if (NT) {
            const bool r_ok = t % RC < rem;
#pragma unroll
            for (int q = 0; q < G::PER; ++q) {
                pre[q] = (r_ok && chunk_j(q) < cols_left) ? *p : (Raw)0;
                p += b_step;
            }
        } else {
#pragma unroll
            for (int rr = 0; rr < RC; ++rr) {
#pragma unroll
                for (int q = 0; q < CN; ++q)
                    pre[rr * CN + q] = (rr < rem && t + THREADS * q < cols_left) ? p[THREADS * q] : (Raw)0;
                p += b_step;
            }
        }
    };
    auto stage = [&](int buf) {
#pragma unroll
        for (int q = 0; q < G::PER; ++q) bs[buf][chunk_r(q)][chunk_j(q)] = pre[q];
    };

    // Whether row m of the block is computed: with MR = 4 (M <= 4, so
    // mostly M = 1) rows past mcount are skipped one by one, a quarter of
    // the FMAs and x reads at M = 1; larger MR skip only whole groups of
    // four (a per-row test there costs more than it saves). Skipped rows
    // are never stored.
    auto row_live = [](int m, int mcount) { return MR > 4 || m < mcount; };

    float acc[MR][CN];
#pragma unroll
    for (int m = 0; m < MR; ++m)
#pragma unroll
        for (int c = 0; c < CN; ++c) acc[m][c] = 0.0f;

    const int chunks = (len + RC - 1) / RC;
    fetch(0);
    stage(0);
    __syncthreads();

    for (int c = 0; c < chunks; ++c) {
        const int buf = c & 1;
        const bool more = c + 1 < chunks;
        if (more) fetch(c + 1);

        const int cr0 = c * RC;
        const int steps = len - cr0 < RC ? len - cr0 : RC;
        if (steps == RC) {
            // Not unrolled further: the body already holds 4*MR*CN
            // independent-by-element FMAs, and a rolled loop keeps the
            // register allocation (and so spills) under control.
#pragma unroll 1
            for (int k4 = 0; k4 < RC; k4 += 4) {
                float b[4][CN];
#pragma unroll
                for (int u = 0; u < 4; ++u)
#pragma unroll
                    for (int q = 0; q < CN; ++q) b[u][q] = widen<DT>(bs[buf][k4 + u][t + THREADS * q]);
#pragma unroll
                for (int g = 0; g < MR; g += 4) {
                    if (g < mcount) {  // uniform: skip row groups the block does not have
#pragma unroll
                        for (int mm = 0; mm < 4; ++mm) {
                            if (!row_live(g + mm, mcount)) break;
                            const float4 x = *reinterpret_cast<const float4*>(&xs[g + mm][cr0 + k4]);
#pragma unroll
                            for (int q = 0; q < CN; ++q) {
                                float a = acc[g + mm][q];
                                a = __fmaf_rn(x.x, b[0][q], a);
                                a = __fmaf_rn(x.y, b[1][q], a);
                                a = __fmaf_rn(x.z, b[2][q], a);
                                a = __fmaf_rn(x.w, b[3][q], a);
                                acc[g + mm][q] = a;
                            }
                        }
                    }
                }
            }
        } else {
            // The short tail of the last slab: exactly `steps` terms, so no
            // padding term ever enters a chain (0*0 + -0 would give +0).
            for (int k = 0; k < steps; ++k) {
                float b[CN];
#pragma unroll
                for (int q = 0; q < CN; ++q) b[q] = widen<DT>(bs[buf][k][t + THREADS * q]);
#pragma unroll
                for (int g = 0; g < MR; g += 4) {
                    if (g < mcount) {
#pragma unroll
                        for (int mm = 0; mm < 4; ++mm) {
                            if (!row_live(g + mm, mcount)) break;
                            const float x = xs[g + mm][cr0 + k];
#pragma unroll
                            for (int q = 0; q < CN; ++q) acc[g + mm][q] = __fmaf_rn(x, b[q], acc[g + mm][q]);
                        }
                    }
                }
            }
        }

        if (more) stage(buf ^ 1);
        __syncthreads();
    }

    float* out = ws + (s * rows + m0) * cols;
#pragma unroll
    for (int m = 0; m < MR; ++m) {
        if (m >= mcount) break;
#pragma unroll
        for (int q = 0; q < CN; ++q) {
            const dg_i64 j = jb + t + THREADS * q;
            if (j < cols) out[m * cols + j] = acc[m][q];
        }
    }
}

}  // namespace rowsk

// Entry points. Arguments: A, B, ws, rows, cols, R, lda, ldb for the tile
// problem C[rows, cols] = A[rows, R] B(R, cols): nn = forward (X @ W),
// nt = dX (dY @ Wᵀ). Grid: (ceil(cols / (128*CN)), S, ceil(rows / MR)),
// 128 threads, dynamic shared memory Geo::SMEM. One column a thread (CN = 1)
// for every MR: twice the blocks of two columns a thread, so twice the loads
// in flight at small M (the kernel is bandwidth- and latency-bound there).
#define DETGEMM_ROWS_ENTRY(NAME, DT, MR, CN, NT)                                                    \
    DETGEMM_KERNEL void __launch_bounds__(rowsk::THREADS, rowsk::min_blocks(MR))                    \
        NAME(const void* A, const void* B, float* ws, dg_i64 rows, dg_i64 cols, dg_i64 R,            \
             dg_i64 lda, dg_i64 ldb) {                                                               \
        dg_grid_dependency_wait();                                                                   \
        rowsk::partials<DT, MR, CN, NT>(A, B, ws, rows, cols, R, lda, ldb);                          \
    }

#include "zgemm_rows_entries.cuh"
