// gemm_dw_stream.cu: dW with a short reduction as one stream over the f32
// master buffer (the IEEE tiers' StrategyStream).
//
// dW[k, n] += sum_m X[m, k] * dY[m, n] costs only M fused multiply-adds per
// master element, so for small M the call is a read and a write of dW and
// little else. The tiled kernels load their master tile in a prologue with
// nothing to overlap it with; here each block stages its first rows of X
// (its k-slice) and dY (its n-slice), sends its tile of dW to shared memory
// by asynchronous copies (no registers held while they fly, so several
// blocks an SM keep 80-96 KiB of master in flight), runs the chains while
// the copies land, folds each slab onto the copied master and stores
// (evict-first): the master is read once and written once.
//
// The plan is the contract's IEEE DW plan, unchanged: M is cut into slabs of
// SLAB = 256 rows; each slab is one ascending __fmaf_rn chain from +0 over
// m; then d = dW[k, n]; d = d + p_0; d = d + p_1; ...; store. Rows of M are
// staged CH at a time (double-buffered); a slab boundary always falls on a
// stage edge, and no fma is issued past M (an fma with a zero pad would
// turn a -0 chain into +0). Rows and columns past K or N compute chains that
// are never stored. Alignment only picks the master's load/store width (16
// bytes where dW and its row stride allow, 4 otherwise): every path runs the
// same chains, so nothing here depends on the grid or the pointers.
#include "prelude.cuh"
#include "raw.cuh"
#include "async_copy.cuh"
#include "epilogue.cuh"

namespace dws {

using dgraw::F32;  // raw.cuh
using dgraw::BF16;
using dgraw::F16;

// Block tile BR x BC of dW, BR = 8 TR; each of the 256 threads owns TR
// consecutive rows x TC consecutive columns: warp w rows [TR w, TR w + TR),
// lane l columns [4l, 4l + 4). A warp's master access is one 512-byte row
// piece per row. Two shapes (see the entry points): TR = 8 (64 x 128
// tiles, three blocks an SM: 32 fmas per three shared-memory reads, for
// M > 16) and TR = 4 (32 x 128, five an SM: more blocks turning over, for
// the memory-bound M <= 16; bench/NOTES-dw.md).
constexpr int BC = 128;
constexpr int TC = 4;
constexpr int THREADS = 256;
constexpr int WARPS = THREADS / 32;
static_assert(BC == 32 * TC, "a warp spans the block's columns");
template <int TR>
constexpr int BR = WARPS * TR;

// Rows of M staged at a time, and the contract's slab length.
constexpr int CH = 16;
constexpr int SLAB = 256;
static_assert(SLAB % CH == 0, "slab boundaries fall on stage edges");

// Staged elements per thread and stage: X's CH x BR (XJ each, rows XRS
// apart) and dY's CH x BC (YJ each, rows YRS apart), coalesced along the
// contiguous axis.
template <int TR>
constexpr int XJ = CH * BR<TR> / THREADS;
template <int TR>
constexpr int XRS = THREADS / BR<TR>;
constexpr int YJ = CH * BC / THREADS;
constexpr int YRS = THREADS / BC;

// One element's raw bits: a u32 word for f32, a u16 code for bf16/f16.
template <int DT>
DETGEMM_INLINE dg_u32 load_raw(const void* DETGEMM_RESTRICT p, dg_i64 i) {
    if constexpr (DT == F32) return __ldg(static_cast<const unsigned int*>(p) + i);
    else return (dg_u32)__ldg(static_cast<const unsigned short*>(p) + i);
}

// Exact widening to f32.
template <int DT>
DETGEMM_INLINE float widen(dg_u32 u) {
    if constexpr (DT == F32) return dg_f32_from_bits(u);
    else if constexpr (DT == BF16) return dg_bf16_to_f32((dg_u16)u);
    else return dg_f16_to_f32_fast((dg_u16)u);
}

// One stage: CH rows of M of the block's k-slice of X and n-slice of dY,
// widened to f32. Compute reads x as broadcast float4s (a warp's TR rows),
// y as one 512-byte float4 row per warp.
template <int TR>
struct Stage {
    float x[CH][BR<TR>];
    float y[CH][BC];
};

// The thread index, read so that the compiler cannot hoist the staging
// addresses derived from it out of the loop over stages (twelve 64-bit
// addresses held across the chains would cost 24 registers).
DETGEMM_INLINE int tid() {
    int t;
    asm volatile("mov.u32 %0, %%tid.x;" : "=r"(t));
    return t;
}

// The raw elements of stage rows [m0, m0 + nm) this thread copies: rows
// past nm and X columns past K (dY: past N) read as +0 and are never used
// in a chain. Addresses step by whole rows from one base per operand.
template <int DT, int TR>
DETGEMM_INLINE void fetch(dg_u32 (&sx)[XJ<TR>], dg_u32 (&sy)[YJ], const void* DETGEMM_RESTRICT A,
                          const void* DETGEMM_RESTRICT B, dg_i64 K, dg_i64 N, dg_i64 lda, dg_i64 ldb,
                          int m0, int nm) {
    const int t = tid();
    const dg_i64 k = (dg_i64)blockIdx.y * BR<TR> + t % BR<TR>;
    const dg_i64 n = (dg_i64)blockIdx.x * BC + t % BC;
    const int xm = t / BR<TR>, ym = t / BC;
    dg_i64 xi = (dg_i64)(m0 + xm) * lda + k;
#pragma unroll
    for (int j = 0; j < XJ<TR>; ++j, xi += XRS<TR> * lda)
        sx[j] = (xm + XRS<TR> * j < nm && k < K) ? load_raw<DT>(A, xi) : 0u;
    dg_i64 yi = (dg_i64)(m0 + ym) * ldb + n;
#pragma unroll
    for (int j = 0; j < YJ; ++j, yi += YRS * ldb)
        sy[j] = (ym + YRS * j < nm && n < N) ? load_raw<DT>(B, yi) : 0u;
}

template <int DT, int TR>
DETGEMM_INLINE void put(Stage<TR>& s, const dg_u32 (&sx)[XJ<TR>], const dg_u32 (&sy)[YJ]) {
    const int t = tid();
#pragma unroll
    for (int j = 0; j < XJ<TR>; ++j) s.x[t / BR<TR> + XRS<TR> * j][t % BR<TR>] = widen<DT>(sx[j]);
#pragma unroll
    for (int j = 0; j < YJ; ++j) s.y[t / BC + YRS * j][t % BC] = widen<DT>(sy[j]);
}

// Asynchronous copies of master elements into shared memory (sm_80+,
// async_copy.cuh): 16 bytes (both addresses 16-byte aligned) or 4. The
// 16-byte copies carry the L2::256B prefetch hint: the master is streamed
// as whole rows (bench/NOTES-kernels.md).
using dgcp::cp_async_wait_all;

// Dynamic shared memory: the BR x BC master tile, then the two stages.
template <int TR>
constexpr int SM_BYTES = BR<TR> * BC * 4 + 2 * (int)sizeof(Stage<TR>);

// dW[K, N] += A(K, M) B(M, N) with A(k, m) = A[m*lda + k] and B(m, n) =
// B[m*ldb + n]; block (blockIdx.x, blockIdx.y) owns columns
// [128 blockIdx.x, +128) and rows [BR blockIdx.y, +BR). M <= 2^30 (the
// dispatcher's condition).
template <int DT, int TR>
DETGEMM_INLINE void run(const void* DETGEMM_RESTRICT A, const void* DETGEMM_RESTRICT B, float* DETGEMM_RESTRICT C,
                        dg_i64 K, dg_i64 N, int M, dg_i64 lda, dg_i64 ldb, dg_i64 ldc) {
    extern __shared__ __align__(16) float dyn[];
    float(*ms)[BC] = reinterpret_cast<float(*)[BC]>(dyn);
    Stage<TR>* st = reinterpret_cast<Stage<TR>*>(dyn + BR<TR> * BC);

    // 1. Stage 0's loads first (L2 hits, short), then the master's (from
    // memory): the chains can start while the master is still in flight.
    dg_u32 sx[XJ<TR>], sy[YJ];
    fetch<DT, TR>(sx, sy, A, B, K, N, lda, ldb, 0, min(M, CH));
    {
        const int t = tid();
        const int r0 = (t / 32) * TR, c0 = (t % 32) * TC;
        const dg_i64 k0 = (dg_i64)blockIdx.y * BR<TR> + r0, n0 = (dg_i64)blockIdx.x * BC + c0;
        // 16-byte master access where every row piece of this thread is
        // aligned and whole; element by element otherwise (same values).
        const bool vec = (reinterpret_cast<dg_u64>(C) % 16 == 0) && (ldc % 4 == 0) && (n0 + TC <= N);
#pragma unroll
        for (int i = 0; i < TR; ++i) {
            const bool row = k0 + i < K;
            const float* c = C + (k0 + i) * ldc + n0;
            if (vec && row) {
                dgcp::cp_async16_l2_whole(&ms[r0 + i][c0], c);
            } else {
#pragma unroll
                for (int j = 0; j < TC; ++j)
                    if (row && n0 + j < N) dgcp::cp_async4_whole(&ms[r0 + i][c0 + j], c + j);
            }
        }
    }
    put<DT, TR>(st[0], sx, sy);
    __syncthreads();

    // 2. The slab chains, stage by stage; the next stage's loads are issued
    // before this one's fmas and stored to the other buffer after them.
    float p[TR][TC];
#pragma unroll
    for (int i = 0; i < TR; ++i)
#pragma unroll
        for (int j = 0; j < TC; ++j) p[i][j] = 0.0f;
    int buf = 0;
    for (int m0 = 0; m0 < M; m0 += CH) {
        const int nm = min(M - m0, CH);
        const bool next = M - m0 > CH;
        if (next) fetch<DT, TR>(sx, sy, A, B, K, N, lda, ldb, m0 + CH, min(M - m0 - CH, CH));
        const int t = tid();
        const float* xs = &st[buf].x[0][(t / 32) * TR];
        const float* ys = &st[buf].y[0][(t % 32) * TC];
#pragma unroll 1
        for (int mm = 0; mm < nm; ++mm) {
            float xv[TR];
#pragma unroll
            for (int q = 0; q < TR / 4; ++q) {
                const float4 v = *reinterpret_cast<const float4*>(xs + mm * BR<TR> + 4 * q);
                xv[4 * q] = v.x; xv[4 * q + 1] = v.y; xv[4 * q + 2] = v.z; xv[4 * q + 3] = v.w;
            }
            const float4 y = *reinterpret_cast<const float4*>(ys + mm * BC);
            const float yv[TC] = {y.x, y.y, y.z, y.w};
#pragma unroll
            for (int i = 0; i < TR; ++i)
#pragma unroll
                for (int j = 0; j < TC; ++j) p[i][j] = __fmaf_rn(xv[i], yv[j], p[i][j]);
        }
        // The end of a slab (or of M): fold its chain onto the master value,
        // the thread's own elements in shared memory from its own copies
        // (waiting for those makes them visible to it; no barrier needed).
        // Elements past K or N were never copied: their folds are never
        // stored.
        if ((m0 + nm) % SLAB == 0 || m0 + nm == M) {
            cp_async_wait_all();
#pragma unroll
            for (int i = 0; i < TR; ++i) {
                float4* q = reinterpret_cast<float4*>(&ms[(t / 32) * TR + i][(t % 32) * TC]);
                float4 v = *q;
                v.x = epi::fold_add(v.x, p[i][0]); v.y = epi::fold_add(v.y, p[i][1]);
                v.z = epi::fold_add(v.z, p[i][2]); v.w = epi::fold_add(v.w, p[i][3]);
                *q = v;
            }
#pragma unroll
            for (int i = 0; i < TR; ++i)
#pragma unroll
                for (int j = 0; j < TC; ++j) p[i][j] = 0.0f;
        }
        if (next) put<DT, TR>(st[buf ^ 1], sx, sy);
        __syncthreads();
        buf ^= 1;
    }

    dg_launch_dependents();  // only the stores are left: the next grid may be scheduled

    // 3. Store, evict-first.
    const int t = tid();
    const int r0 = (t / 32) * TR, c0 = (t % 32) * TC;
    const dg_i64 k0 = (dg_i64)blockIdx.y * BR<TR> + r0, n0 = (dg_i64)blockIdx.x * BC + c0;
    const bool vec = (reinterpret_cast<dg_u64>(C) % 16 == 0) && (ldc % 4 == 0) && (n0 + TC <= N);
#pragma unroll
    for (int i = 0; i < TR; ++i) {
        if (k0 + i >= K) continue;
        float* c = C + (k0 + i) * ldc + n0;
        const float4 v = *reinterpret_cast<const float4*>(&ms[r0 + i][c0]);
        if (vec) {
            __stcs(reinterpret_cast<float4*>(c), v);
        } else {
            const float e[TC] = {v.x, v.y, v.z, v.w};
#pragma unroll
            for (int j = 0; j < TC; ++j)
                if (n0 + j < N) __stcs(c + j, e[j]);
        }
    }
}

}  // namespace dws

// Entry points. Arguments: A = X, B = dY, C = dW, then K (rows of dW), N
// (columns), M (the reduction, at most 2^30: int indices never wrap), lda, ldb, ldc. 256 threads.
// detgemm_dwstream_*: 64 x 128 tiles, grid (ceil(N/128), ceil(K/64)),
// SM_BYTES<8> = 57344 bytes of dynamic shared memory; detgemm_dwstream32_*:
// 32 x 128 tiles, grid (ceil(N/128), ceil(K/32)), SM_BYTES<4> = 36864.
static_assert(dws::SM_BYTES<8> == 57344 && dws::SM_BYTES<4> == 36864, "the Go dispatcher launches these sizes");
#define DETGEMM_DWSTREAM_ENTRY(NAME, DT, TR, MINB)                                                   \
    DETGEMM_KERNEL void __launch_bounds__(dws::THREADS, MINB)                                        \
        NAME(const void* A, const void* B, float* C, dg_i64 K, dg_i64 N, dg_i64 M, dg_i64 lda,       \
             dg_i64 ldb, dg_i64 ldc) {                                                               \
        dg_grid_dependency_wait();                                                                   \
        dws::run<DT, TR>(A, B, C, K, N, (int)M, lda, ldb, ldc);                                      \
    }

#include "zgemm_dw_stream_entries.cuh"
