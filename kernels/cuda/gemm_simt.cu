// gemm_simt.cu: the IEEE tiers (f32, and typed bf16/f16) on CUDA cores.
//
// One register-tiled kernel template, instantiated for the triad's three
// layouts, implements the IEEE plan of the numerical contract:
//
//   the reduction range [0, R) is cut into slabs of SLAB = 256; each slab is
//   one ascending __fmaf_rn chain from +0; the slab results fold left to right
//   into the output value; forward adds the bias after the fold, dW folds onto
//   the value already in its f32 master buffer; one RNE rounding at the store.
//
// Typed inputs (bf16/f16) are widened exactly to f32 when a tile is staged, so
// the typed tier runs the very same chains as the f32 tier. Nothing here
// depends on M, on the grid, or on pointer alignment: a row's bits are the
// same in any batch.
#include "prelude.cuh"

namespace simt {

// Block tile BM x BN, k-step BK; each of the 256 threads owns TM x TN outputs
// as two 4x4 quadrants 64 rows/columns apart (conflict-free float4 reads).
// The running slab totals live in shared memory, not registers: holding both
// the chain accumulators and the totals in registers needs over 255 of them.
constexpr int BM = 128;
constexpr int BN = 128;
constexpr int BK = 16;
constexpr int TM = 8;
constexpr int TN = 8;
constexpr int THREADS = 256;

// The contract's slab length; a slab boundary always falls on a k-tile edge.
constexpr int SLAB = 256;
static_assert(SLAB % BK == 0, "slab boundaries must fall on k-tile edges");

// Dynamic shared memory: two stages of A and B tiles, then the totals laid
// out [TM*TN][THREADS] so each thread's accesses are conflict-free.
constexpr int SMEM_TILES = 2 * BK * (BM + BN) * 4;
constexpr int SMEM_BYTES = SMEM_TILES + TM * TN * THREADS * 4;
static_assert(SMEM_BYTES == 98304, "the Go dispatcher launches with 98304 bytes of dynamic shared memory");

// Element codes shared with the Go dispatcher.
constexpr int F32 = 0;
constexpr int BF16 = 1;
constexpr int F16 = 2;

// How slab results fold into the output.
constexpr int FOLD_STORE = 0;       // forward, dX: y = p0 + p1 + ... (+ bias)
constexpr int FOLD_ACCUMULATE = 1;  // dW: d = d_old + p0 + p1 + ...

template <int DT>
DETGEMM_INLINE float load_f32(const void* DETGEMM_RESTRICT p, dg_i64 i) {
    if (DT == F32) return static_cast<const float*>(p)[i];
    if (DT == BF16) return dg_bf16_to_f32(static_cast<const dg_u16*>(p)[i]);
    return dg_f16_to_f32(static_cast<const dg_u16*>(p)[i]);
}

template <int DT>
DETGEMM_INLINE void store_from_f32(void* DETGEMM_RESTRICT p, dg_i64 i, float v) {
    if (DT == F32) {
        static_cast<float*>(p)[i] = v;
    } else if (DT == BF16) {
        static_cast<dg_u16*>(p)[i] = dg_f32_to_bf16_rne(v);
    } else {
        static_cast<dg_u16*>(p)[i] = dg_f32_to_f16_rne(v);
    }
}

// C[i, j] (op)= sum_r A(i, r) * B(r, j) for a BM x BN tile of C.
//   A(i, r) = A_RC ? A[i*lda + r] : A[r*lda + i]
//   B(r, j) = B_JC ? B[r*ldb + j] : B[j*ldb + r]
template <int DTIN, int DTOUT, bool A_RC, bool B_JC, int FOLD>
DETGEMM_INLINE void gemm_tile(const void* DETGEMM_RESTRICT A, const void* DETGEMM_RESTRICT B,
                              void* DETGEMM_RESTRICT C, const float* DETGEMM_RESTRICT bias,
                              dg_i64 M, dg_i64 N, dg_i64 R, dg_i64 lda, dg_i64 ldb, dg_i64 ldc) {
    extern __shared__ __align__(16) float smem[];
    float (*As)[BK][BM] = reinterpret_cast<float (*)[BK][BM]>(smem);
    float (*Bs)[BK][BN] = reinterpret_cast<float (*)[BK][BN]>(smem + 2 * BK * BM);
    float* tot = smem + SMEM_TILES / 4 + threadIdx.x;  // tot[e * THREADS]

    const int t = threadIdx.x;
    const dg_i64 i0 = (dg_i64)blockIdx.x * BM;  // x: row tiles (up to 2^31-1 of them)
    const dg_i64 j0 = (dg_i64)blockIdx.y * BN;  // y: column tiles (up to 65535)

    // Staging assignment: each thread moves 8 elements of A and 8 of B per
    // k-tile, along whichever axis is contiguous in memory.
    const int a_lin = A_RC ? (t >> 1) : ((t & 15) * 8);  // i within tile
    const int a_red = A_RC ? ((t & 1) * 8) : (t >> 4);   // r within tile
    const int b_lin = B_JC ? ((t & 15) * 8) : (t >> 1);  // j within tile
    const int b_red = B_JC ? (t >> 4) : ((t & 1) * 8);   // r within tile

    float ra[8], rb[8];

    // Each thread's 8 staged elements run along the contiguous axis, so they
    // sit at consecutive offsets from one base; moving to the next k-tile
    // moves the base by BK along r. Bounds are checked against limits
    // computed once, which keeps 64-bit index math (and registers) low.
    const dg_i64 a_first = i0 + a_lin;
    const dg_i64 b_first = j0 + b_lin;
    const dg_i64 a_base = A_RC ? a_first * lda + a_red : (dg_i64)a_red * lda + a_first;
    const dg_i64 b_base = B_JC ? (dg_i64)b_red * ldb + b_first : b_first * ldb + b_red;
    const dg_i64 a_rstride = A_RC ? 1 : lda;
    const dg_i64 b_rstride = B_JC ? ldb : 1;
    const dg_i64 a_lin_left = M - a_first;  // staged i must be < this (relative)
    const dg_i64 b_lin_left = N - b_first;
    const dg_i64 a_red_left = R - a_red;    // k0 + r offset must be < this
    const dg_i64 b_red_left = R - b_red;

    auto fetch = [&](dg_i64 k0) {
        const void* pa = static_cast<const char*>(A) + (a_base + k0 * a_rstride) * (DTIN == F32 ? 4 : 2);
        const void* pb = static_cast<const char*>(B) + (b_base + k0 * b_rstride) * (DTIN == F32 ? 4 : 2);
#pragma unroll
        for (int q = 0; q < 8; ++q) {
            const bool a_ok = A_RC ? (a_lin_left > 0 && k0 + q < a_red_left) : (q < a_lin_left && k0 < a_red_left);
            const bool b_ok = B_JC ? (q < b_lin_left && k0 < b_red_left) : (b_lin_left > 0 && k0 + q < b_red_left);
            ra[q] = a_ok ? load_f32<DTIN>(pa, q) : 0.0f;
            rb[q] = b_ok ? load_f32<DTIN>(pb, q) : 0.0f;
        }
    };
    auto stage = [&](int buf) {
#pragma unroll
        for (int q = 0; q < 8; ++q) {
            if (A_RC) As[buf][a_red + q][a_lin] = ra[q];
            else      As[buf][a_red][a_lin + q] = ra[q];
            if (B_JC) Bs[buf][b_red][b_lin + q] = rb[q];
            else      Bs[buf][b_red + q][b_lin] = rb[q];
        }
    };

    const int ty = t >> 4, tx = t & 15;
    float acc[TM][TN];
#pragma unroll
    for (int m = 0; m < TM; ++m)
#pragma unroll
        for (int n = 0; n < TN; ++n) acc[m][n] = 0.0f;

    const dg_i64 tiles = (R + BK - 1) / BK;
    bool first = true;

    // dW folds every slab onto the value already in the master buffer.
    if (FOLD == FOLD_ACCUMULATE) {
#pragma unroll
        for (int m = 0; m < TM; ++m) {
            const dg_i64 i = i0 + (m < 4 ? ty * 4 + m : 64 + ty * 4 + m - 4);
#pragma unroll
            for (int n = 0; n < TN; ++n) {
                const dg_i64 j = j0 + (n < 4 ? tx * 4 + n : 64 + tx * 4 + n - 4);
                tot[(m * TN + n) * THREADS] = (i < M && j < N) ? static_cast<const float*>(C)[i * ldc + j] : 0.0f;
            }
        }
    }

    fetch(0);
    stage(0);
    __syncthreads();

    for (dg_i64 kt = 0; kt < tiles; ++kt) {
        const int buf = (int)(kt & 1);
        const bool more = kt + 1 < tiles;
        if (more) fetch((kt + 1) * BK);

        const dg_i64 left = R - kt * BK;
        const int kmax = left < BK ? (int)left : BK;
#pragma unroll
        for (int kk = 0; kk < BK; ++kk) {
            if (kk < kmax) {  // uniform: only the last tile is short
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

        // Close a slab at every SLAB boundary and at the end of the range.
        if (!more || ((kt + 1) * BK) % SLAB == 0) {
            if (FOLD == FOLD_STORE && first) {
#pragma unroll
                for (int m = 0; m < TM; ++m)
#pragma unroll
                    for (int n = 0; n < TN; ++n) tot[(m * TN + n) * THREADS] = acc[m][n];
                first = false;
            } else {
#pragma unroll
                for (int m = 0; m < TM; ++m)
#pragma unroll
                    for (int n = 0; n < TN; ++n) {
                        float* p = &tot[(m * TN + n) * THREADS];
                        *p = __fadd_rn(*p, acc[m][n]);
                    }
            }
#pragma unroll
            for (int m = 0; m < TM; ++m)
#pragma unroll
                for (int n = 0; n < TN; ++n) acc[m][n] = 0.0f;
        }
        __syncthreads();
    }

#pragma unroll
    for (int m = 0; m < TM; ++m) {
        const dg_i64 i = i0 + (m < 4 ? ty * 4 + m : 64 + ty * 4 + m - 4);
        if (i >= M) continue;
#pragma unroll
        for (int n = 0; n < TN; ++n) {
            const dg_i64 j = j0 + (n < 4 ? tx * 4 + n : 64 + tx * 4 + n - 4);
            if (j >= N) continue;
            float v = tot[(m * TN + n) * THREADS];
            if (bias != nullptr) v = __fadd_rn(v, bias[j]);
            store_from_f32<DTOUT>(C, i * ldc + j, v);
        }
    }
}

}  // namespace simt

// Entry points. Argument order for all: A, B, C, bias (nullable), M, N, R,
// lda, ldb, ldc — the tile problem C[M,N] = A[M,R] B[R,N] in the layout the
// name gives: nn = forward (X @ W), nt = dX (dY @ Wᵀ), tn = dW (Xᵀ @ dY).
#define DETGEMM_SIMT_ENTRY(NAME, DTIN, DTOUT, ARC, BJC, FOLD)                                     \
    DETGEMM_KERNEL void __launch_bounds__(simt::THREADS, 2)                                       \
        NAME(const void* A, const void* B, void* C, const float* bias, dg_i64 M, dg_i64 N,         \
             dg_i64 R, dg_i64 lda, dg_i64 ldb, dg_i64 ldc) {                                       \
        simt::gemm_tile<DTIN, DTOUT, ARC, BJC, FOLD>(A, B, C, bias, M, N, R, lda, ldb, ldc);       \
    }

DETGEMM_SIMT_ENTRY(detgemm_simt_nn_f32_f32, simt::F32, simt::F32, true, true, simt::FOLD_STORE)
DETGEMM_SIMT_ENTRY(detgemm_simt_nn_bf16_bf16, simt::BF16, simt::BF16, true, true, simt::FOLD_STORE)
DETGEMM_SIMT_ENTRY(detgemm_simt_nn_bf16_f32, simt::BF16, simt::F32, true, true, simt::FOLD_STORE)
DETGEMM_SIMT_ENTRY(detgemm_simt_nn_f16_f16, simt::F16, simt::F16, true, true, simt::FOLD_STORE)
DETGEMM_SIMT_ENTRY(detgemm_simt_nn_f16_f32, simt::F16, simt::F32, true, true, simt::FOLD_STORE)

DETGEMM_SIMT_ENTRY(detgemm_simt_nt_f32_f32, simt::F32, simt::F32, true, false, simt::FOLD_STORE)
DETGEMM_SIMT_ENTRY(detgemm_simt_nt_bf16_bf16, simt::BF16, simt::BF16, true, false, simt::FOLD_STORE)
DETGEMM_SIMT_ENTRY(detgemm_simt_nt_bf16_f32, simt::BF16, simt::F32, true, false, simt::FOLD_STORE)
DETGEMM_SIMT_ENTRY(detgemm_simt_nt_f16_f16, simt::F16, simt::F16, true, false, simt::FOLD_STORE)
DETGEMM_SIMT_ENTRY(detgemm_simt_nt_f16_f32, simt::F16, simt::F32, true, false, simt::FOLD_STORE)

DETGEMM_SIMT_ENTRY(detgemm_simt_tn_f32_f32, simt::F32, simt::F32, false, true, simt::FOLD_ACCUMULATE)
DETGEMM_SIMT_ENTRY(detgemm_simt_tn_bf16_f32, simt::BF16, simt::F32, false, true, simt::FOLD_ACCUMULATE)
DETGEMM_SIMT_ENTRY(detgemm_simt_tn_f16_f32, simt::F16, simt::F32, false, true, simt::FOLD_ACCUMULATE)
