// gemm_tc.cu: the tensor-core tier (bf16/f16 inputs, f32 accumulation).
//
// The TC contract: per output element the accumulator starts at the bias
// (forward), 0 (dX) or the current dW value (dW), and consumes the reduction
// in ascending 16-wide steps of mma.sync.m16n8k16 (never k8: another chain);
// the tail of the last step is zero-filled (both operands, so every padded
// product is 0·0, which the tensor core ignores); steps that would lie wholly
// past the end are never issued; one RNE rounding at the store. Every tile
// shape below runs that same chain per element, so the tile choice may
// depend on M without changing a bit.
//
// Layout names follow gemm_simt.cu: C[i, j] (op)= sum_r A(i, r) B(r, j) with
//   A(i, r) = A_RC ? A[i*lda + r] : A[r*lda + i]
//   B(r, j) = B_JC ? B[r*ldb + j] : B[j*ldb + r]
// Tiles are staged in shared memory as they lie in global memory (16-byte
// cp.async chunks along the contiguous axis) and turned into mma fragments by
// ldmatrix, transposing (.trans) where the contiguous axis is not k.
#include "prelude.cuh"

namespace tc {

constexpr int F32 = 0;
constexpr int BF16 = 1;
constexpr int F16 = 2;

constexpr int INIT_ZERO = 0;  // dX: the chain starts at +0
constexpr int INIT_BIAS = 1;  // forward: at bias[j] (or +0 without bias)
constexpr int INIT_OLD = 2;   // dW: at the current value of C (f32)

constexpr int BK = 32;     // k per pipeline stage: two 16-wide steps
constexpr int STAGES = 4;  // cp.async pipeline depth
constexpr int PAD = 8;     // halves of padding per smem row: conflict-free ldmatrix

// A block tile BM x BN computed by WM x WN warps.
template <int BM_, int BN_, int WM_, int WN_>
struct Tile {
    static constexpr int BM = BM_, BN = BN_, WM = WM_, WN = WN_;
    static constexpr int THREADS = WM * WN * 32;
    static constexpr int TM = BM / WM, TN = BN / WN;  // warp tile
    static constexpr int MI = TM / 16, NI = TN / 8;   // mma tiles per warp
    static_assert(MI >= 1 && NI >= 2 && NI % 2 == 0, "warp tile must hold 16x16 pieces");
    template <bool A_RC>
    static constexpr int a_elems() { return A_RC ? BM * (BK + PAD) : BK * (BM + PAD); }
    template <bool B_JC>
    static constexpr int b_elems() { return B_JC ? BK * (BN + PAD) : BN * (BK + PAD); }
    template <bool A_RC, bool B_JC>
    static constexpr int smem_bytes() { return STAGES * (a_elems<A_RC>() + b_elems<B_JC>()) * 2; }
};

DETGEMM_INLINE dg_u32 smem_addr(const void* p) {
    return static_cast<dg_u32>(__cvta_generic_to_shared(p));
}

// 16-byte async copy; bytes beyond src_bytes (0..16) are zero-filled.
DETGEMM_INLINE void cp_async16(void* dst, const void* src, int src_bytes) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem_addr(dst)), "l"(src), "r"(src_bytes));
}
DETGEMM_INLINE void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int N>
DETGEMM_INLINE void cp_async_wait() { asm volatile("cp.async.wait_group %0;\n" ::"n"(N)); }

DETGEMM_INLINE void ldmatrix_x4(dg_u32 (&r)[4], const void* p) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(smem_addr(p)));
}
DETGEMM_INLINE void ldmatrix_x4_trans(dg_u32 (&r)[4], const void* p) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(smem_addr(p)));
}

// One 16x8x16 step: d = a·b + d, in the tensor core's own addition.
template <int DT>
DETGEMM_INLINE void mma16816(float (&d)[4], const dg_u32 (&a)[4], dg_u32 b0, dg_u32 b1) {
    if (DT == BF16) {
        asm volatile(
            "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
            : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
            : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
    } else {
        asm volatile(
            "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
            : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
            : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
    }
}

template <int DT>
DETGEMM_INLINE void store_out(void* p, dg_i64 i, float v) {
    if (DT == F32) {
        static_cast<float*>(p)[i] = v;
    } else if (DT == BF16) {
        static_cast<dg_u16*>(p)[i] = dg_f32_to_bf16_rne(v);
    } else {
        static_cast<dg_u16*>(p)[i] = dg_f32_to_f16_rne(v);
    }
}

// gemm_tile: one BM x BN tile of C. VEC: operands may be moved in 16-byte
// chunks (lda, ldb multiples of 8 elements, base pointers 16-byte aligned);
// otherwise the same stages are filled element by element.
template <class T, int DTIN, int DTOUT, bool A_RC, bool B_JC, int INIT, bool VEC>
DETGEMM_INLINE void gemm_tile(const dg_u16* DETGEMM_RESTRICT A, const dg_u16* DETGEMM_RESTRICT B,
                              void* DETGEMM_RESTRICT C, const float* DETGEMM_RESTRICT bias,
                              dg_i64 M, dg_i64 N, dg_i64 R, dg_i64 lda, dg_i64 ldb, dg_i64 ldc) {
    extern __shared__ __align__(16) dg_u16 smem[];
    constexpr int A_ELEMS = T::template a_elems<A_RC>();
    constexpr int B_ELEMS = T::template b_elems<B_JC>();
    dg_u16* sA = smem;                     // STAGES x A_ELEMS
    dg_u16* sB = smem + STAGES * A_ELEMS;  // STAGES x B_ELEMS
    constexpr int A_LD = A_RC ? BK + PAD : T::BM + PAD;  // smem row pitch of A
    constexpr int B_LD = B_JC ? T::BN + PAD : BK + PAD;

    const int tid = threadIdx.x;
    const int lane = tid & 31, warp = tid >> 5;
    const int wm = warp / T::WN, wn = warp % T::WN;
    const dg_i64 i0 = (dg_i64)blockIdx.x * T::BM;
    const dg_i64 j0 = (dg_i64)blockIdx.y * T::BN;

    // Fill one stage with the k-tile starting at k0.
    auto load_stage = [&](int stage, dg_i64 k0) {
        dg_u16* a = sA + stage * A_ELEMS;
        dg_u16* b = sB + stage * B_ELEMS;
        if (VEC) {
            // A: rows x 8-element chunks along its contiguous axis.
            constexpr int A_ROWS = A_RC ? T::BM : BK;
            constexpr int A_CH = (A_RC ? BK : T::BM) / 8;
            for (int c = tid; c < A_ROWS * A_CH; c += T::THREADS) {
                const int row = c / A_CH, ch = c % A_CH;
                dg_i64 gl, gc, lim_l, lim_c;  // line (strided axis) and column (contiguous)
                if (A_RC) { gl = i0 + row; gc = k0 + ch * 8; lim_l = M; lim_c = R; }
                else      { gl = k0 + row; gc = i0 + ch * 8; lim_l = R; lim_c = M; }
                dg_i64 left = lim_c - gc;
                int bytes = (gl < lim_l && left > 0) ? (left >= 8 ? 16 : (int)left * 2) : 0;
                const dg_u16* src = bytes ? A + gl * lda + gc : A;
                cp_async16(a + row * A_LD + ch * 8, src, bytes);
            }
            constexpr int B_ROWS = B_JC ? BK : T::BN;
            constexpr int B_CH = (B_JC ? T::BN : BK) / 8;
            for (int c = tid; c < B_ROWS * B_CH; c += T::THREADS) {
                const int row = c / B_CH, ch = c % B_CH;
                dg_i64 gl, gc, lim_l, lim_c;
                if (B_JC) { gl = k0 + row; gc = j0 + ch * 8; lim_l = R; lim_c = N; }
                else      { gl = j0 + row; gc = k0 + ch * 8; lim_l = N; lim_c = R; }
                dg_i64 left = lim_c - gc;
                int bytes = (gl < lim_l && left > 0) ? (left >= 8 ? 16 : (int)left * 2) : 0;
                const dg_u16* src = bytes ? B + gl * ldb + gc : B;
                cp_async16(b + row * B_LD + ch * 8, src, bytes);
            }
        } else {
            constexpr int A_ROWS = A_RC ? T::BM : BK;
            constexpr int A_COLS = A_RC ? BK : T::BM;
            // Not unrolled: NVRTC 13 hoists every element's 64-bit address
            // out of a fully unrolled loop and spills (this is the slow path).
#pragma unroll 1
            for (int e = tid; e < A_ROWS * A_COLS; e += T::THREADS) {
                const int row = e / A_COLS, col = e % A_COLS;
                const dg_i64 gi = A_RC ? i0 + row : i0 + col;
                const dg_i64 gr = A_RC ? k0 + col : k0 + row;
                a[row * A_LD + col] = (gi < M && gr < R) ? (A_RC ? A[gi * lda + gr] : A[gr * lda + gi]) : (dg_u16)0;
            }
            constexpr int B_ROWS = B_JC ? BK : T::BN;
            constexpr int B_COLS = B_JC ? T::BN : BK;
#pragma unroll 1
            for (int e = tid; e < B_ROWS * B_COLS; e += T::THREADS) {
                const int row = e / B_COLS, col = e % B_COLS;
                const dg_i64 gj = B_JC ? j0 + col : j0 + row;
                const dg_i64 gr = B_JC ? k0 + row : k0 + col;
                b[row * B_LD + col] = (gj < N && gr < R) ? (B_JC ? B[gr * ldb + gj] : B[gj * ldb + gr]) : (dg_u16)0;
            }
        }
    };

    // Accumulators: acc[mi][ni][0..3] = rows g, g, g+8, g+8; cols 2t, 2t+1.
    float acc[T::MI][T::NI][4];
    const int g = lane >> 2, t4 = lane & 3;
#pragma unroll
    for (int mi = 0; mi < T::MI; ++mi)
#pragma unroll
        for (int ni = 0; ni < T::NI; ++ni)
#pragma unroll
            for (int q = 0; q < 4; ++q) {
                const dg_i64 i = i0 + wm * T::TM + mi * 16 + g + (q >> 1) * 8;
                const dg_i64 j = j0 + wn * T::TN + ni * 8 + t4 * 2 + (q & 1);
                float v = 0.0f;
                if (INIT == INIT_BIAS && bias != nullptr && j < N) v = bias[j];
                if (INIT == INIT_OLD && i < M && j < N) v = static_cast<const float*>(C)[i * ldc + j];
                acc[mi][ni][q] = v;
            }

    const dg_i64 ktiles = (R + BK - 1) / BK;
#pragma unroll
    for (int s = 0; s < STAGES - 1; ++s) {
        if (s < ktiles) load_stage(s, (dg_i64)s * BK);
        cp_async_commit();
    }

    for (dg_i64 kt = 0; kt < ktiles; ++kt) {
        cp_async_wait<STAGES - 2>();
        __syncthreads();
        const int stage = (int)(kt % STAGES);
        const dg_u16* a = sA + stage * A_ELEMS;
        const dg_u16* b = sB + stage * B_ELEMS;
        const dg_i64 k0 = kt * BK;
#pragma unroll
        for (int ks = 0; ks < BK / 16; ++ks) {
            if (k0 + ks * 16 >= R) break;  // never issue a step wholly past the end
            dg_u32 af[T::MI][4];
#pragma unroll
            for (int mi = 0; mi < T::MI; ++mi) {
                const int m_base = wm * T::TM + mi * 16;
                if (A_RC) {
                    const int row = m_base + (lane & 15), col = ks * 16 + (lane >> 4) * 8;
                    ldmatrix_x4(af[mi], a + row * A_LD + col);
                } else {
                    const int krow = ks * 16 + (lane & 7) + (lane >> 4) * 8;
                    const int mcol = m_base + ((lane >> 3) & 1) * 8;
                    ldmatrix_x4_trans(af[mi], a + krow * A_LD + mcol);
                }
            }
            dg_u32 bf[T::NI][2];
#pragma unroll
            for (int np = 0; np < T::NI / 2; ++np) {
                const int n_base = wn * T::TN + np * 16;
                dg_u32 r[4];
                if (B_JC) {
                    const int krow = ks * 16 + (lane & 15), ncol = n_base + (lane >> 4) * 8;
                    ldmatrix_x4_trans(r, b + krow * B_LD + ncol);
                } else {
                    const int nrow = n_base + (lane & 7) + (lane >> 4) * 8, kcol = ks * 16 + ((lane >> 3) & 1) * 8;
                    ldmatrix_x4(r, b + nrow * B_LD + kcol);
                }
                bf[2 * np][0] = r[0];
                bf[2 * np][1] = r[1];
                bf[2 * np + 1][0] = r[2];
                bf[2 * np + 1][1] = r[3];
            }
#pragma unroll
            for (int mi = 0; mi < T::MI; ++mi)
#pragma unroll
                for (int ni = 0; ni < T::NI; ++ni) mma16816<DTIN>(acc[mi][ni], af[mi], bf[ni][0], bf[ni][1]);
        }
        const dg_i64 next = kt + STAGES - 1;
        if (next < ktiles) load_stage((int)(next % STAGES), next * BK);
        cp_async_commit();
    }
    cp_async_wait<0>();

#pragma unroll
    for (int mi = 0; mi < T::MI; ++mi)
#pragma unroll
        for (int ni = 0; ni < T::NI; ++ni)
#pragma unroll
            for (int q = 0; q < 4; ++q) {
                const dg_i64 i = i0 + wm * T::TM + mi * 16 + g + (q >> 1) * 8;
                const dg_i64 j = j0 + wn * T::TN + ni * 8 + t4 * 2 + (q & 1);
                if (i < M && j < N) store_out<DTOUT>(C, i * ldc + j, acc[mi][ni][q]);
            }
}

// The tile families: 128x128 (8 warps of 64x32) and 64x64 (4 warps of 32x32).
typedef Tile<128, 128, 2, 4> T128;
typedef Tile<64, 64, 2, 2> T64;

}  // namespace tc

// Entry points: detgemm_tc{128,64}_{nn,nt,tn}_{in}_{out}_{vec,any}. Arguments
// as in gemm_simt.cu: A, B, C, bias (nullable), M, N, R, lda, ldb, ldc.
#define DETGEMM_TC_ENTRY(NAME, TILE, DTIN, DTOUT, ARC, BJC, INIT, VEC)                                   \
    DETGEMM_KERNEL void __launch_bounds__(tc::TILE::THREADS)                                              \
        NAME(const void* A, const void* B, void* C, const float* bias, dg_i64 M, dg_i64 N, dg_i64 R,      \
             dg_i64 lda, dg_i64 ldb, dg_i64 ldc) {                                                        \
        tc::gemm_tile<tc::TILE, DTIN, DTOUT, ARC, BJC, INIT, VEC>(static_cast<const dg_u16*>(A),          \
                                                               static_cast<const dg_u16*>(B), C, bias, M, \
                                                               N, R, lda, ldb, ldc);                      \
    }

DETGEMM_TC_ENTRY(detgemm_tc128_nn_bf16_bf16_vec, T128, tc::BF16, tc::BF16, true, true, tc::INIT_BIAS, true)
DETGEMM_TC_ENTRY(detgemm_tc128_nn_bf16_bf16_any, T128, tc::BF16, tc::BF16, true, true, tc::INIT_BIAS, false)
DETGEMM_TC_ENTRY(detgemm_tc128_nn_bf16_f32_vec, T128, tc::BF16, tc::F32, true, true, tc::INIT_BIAS, true)
DETGEMM_TC_ENTRY(detgemm_tc128_nn_bf16_f32_any, T128, tc::BF16, tc::F32, true, true, tc::INIT_BIAS, false)
DETGEMM_TC_ENTRY(detgemm_tc128_nn_f16_f16_vec, T128, tc::F16, tc::F16, true, true, tc::INIT_BIAS, true)
DETGEMM_TC_ENTRY(detgemm_tc128_nn_f16_f16_any, T128, tc::F16, tc::F16, true, true, tc::INIT_BIAS, false)
DETGEMM_TC_ENTRY(detgemm_tc128_nn_f16_f32_vec, T128, tc::F16, tc::F32, true, true, tc::INIT_BIAS, true)
DETGEMM_TC_ENTRY(detgemm_tc128_nn_f16_f32_any, T128, tc::F16, tc::F32, true, true, tc::INIT_BIAS, false)
DETGEMM_TC_ENTRY(detgemm_tc128_nt_bf16_bf16_vec, T128, tc::BF16, tc::BF16, true, false, tc::INIT_ZERO, true)
DETGEMM_TC_ENTRY(detgemm_tc128_nt_bf16_bf16_any, T128, tc::BF16, tc::BF16, true, false, tc::INIT_ZERO, false)
DETGEMM_TC_ENTRY(detgemm_tc128_nt_bf16_f32_vec, T128, tc::BF16, tc::F32, true, false, tc::INIT_ZERO, true)
DETGEMM_TC_ENTRY(detgemm_tc128_nt_bf16_f32_any, T128, tc::BF16, tc::F32, true, false, tc::INIT_ZERO, false)
DETGEMM_TC_ENTRY(detgemm_tc128_nt_f16_f16_vec, T128, tc::F16, tc::F16, true, false, tc::INIT_ZERO, true)
DETGEMM_TC_ENTRY(detgemm_tc128_nt_f16_f16_any, T128, tc::F16, tc::F16, true, false, tc::INIT_ZERO, false)
DETGEMM_TC_ENTRY(detgemm_tc128_nt_f16_f32_vec, T128, tc::F16, tc::F32, true, false, tc::INIT_ZERO, true)
DETGEMM_TC_ENTRY(detgemm_tc128_nt_f16_f32_any, T128, tc::F16, tc::F32, true, false, tc::INIT_ZERO, false)
DETGEMM_TC_ENTRY(detgemm_tc128_tn_bf16_f32_vec, T128, tc::BF16, tc::F32, false, true, tc::INIT_OLD, true)
DETGEMM_TC_ENTRY(detgemm_tc128_tn_bf16_f32_any, T128, tc::BF16, tc::F32, false, true, tc::INIT_OLD, false)
DETGEMM_TC_ENTRY(detgemm_tc128_tn_f16_f32_vec, T128, tc::F16, tc::F32, false, true, tc::INIT_OLD, true)
DETGEMM_TC_ENTRY(detgemm_tc128_tn_f16_f32_any, T128, tc::F16, tc::F32, false, true, tc::INIT_OLD, false)
DETGEMM_TC_ENTRY(detgemm_tc64_nn_bf16_bf16_vec, T64, tc::BF16, tc::BF16, true, true, tc::INIT_BIAS, true)
DETGEMM_TC_ENTRY(detgemm_tc64_nn_bf16_bf16_any, T64, tc::BF16, tc::BF16, true, true, tc::INIT_BIAS, false)
DETGEMM_TC_ENTRY(detgemm_tc64_nn_bf16_f32_vec, T64, tc::BF16, tc::F32, true, true, tc::INIT_BIAS, true)
DETGEMM_TC_ENTRY(detgemm_tc64_nn_bf16_f32_any, T64, tc::BF16, tc::F32, true, true, tc::INIT_BIAS, false)
DETGEMM_TC_ENTRY(detgemm_tc64_nn_f16_f16_vec, T64, tc::F16, tc::F16, true, true, tc::INIT_BIAS, true)
DETGEMM_TC_ENTRY(detgemm_tc64_nn_f16_f16_any, T64, tc::F16, tc::F16, true, true, tc::INIT_BIAS, false)
DETGEMM_TC_ENTRY(detgemm_tc64_nn_f16_f32_vec, T64, tc::F16, tc::F32, true, true, tc::INIT_BIAS, true)
DETGEMM_TC_ENTRY(detgemm_tc64_nn_f16_f32_any, T64, tc::F16, tc::F32, true, true, tc::INIT_BIAS, false)
DETGEMM_TC_ENTRY(detgemm_tc64_nt_bf16_bf16_vec, T64, tc::BF16, tc::BF16, true, false, tc::INIT_ZERO, true)
DETGEMM_TC_ENTRY(detgemm_tc64_nt_bf16_bf16_any, T64, tc::BF16, tc::BF16, true, false, tc::INIT_ZERO, false)
DETGEMM_TC_ENTRY(detgemm_tc64_nt_bf16_f32_vec, T64, tc::BF16, tc::F32, true, false, tc::INIT_ZERO, true)
DETGEMM_TC_ENTRY(detgemm_tc64_nt_bf16_f32_any, T64, tc::BF16, tc::F32, true, false, tc::INIT_ZERO, false)
DETGEMM_TC_ENTRY(detgemm_tc64_nt_f16_f16_vec, T64, tc::F16, tc::F16, true, false, tc::INIT_ZERO, true)
DETGEMM_TC_ENTRY(detgemm_tc64_nt_f16_f16_any, T64, tc::F16, tc::F16, true, false, tc::INIT_ZERO, false)
DETGEMM_TC_ENTRY(detgemm_tc64_nt_f16_f32_vec, T64, tc::F16, tc::F32, true, false, tc::INIT_ZERO, true)
DETGEMM_TC_ENTRY(detgemm_tc64_nt_f16_f32_any, T64, tc::F16, tc::F32, true, false, tc::INIT_ZERO, false)
DETGEMM_TC_ENTRY(detgemm_tc64_tn_bf16_f32_vec, T64, tc::BF16, tc::F32, false, true, tc::INIT_OLD, true)
DETGEMM_TC_ENTRY(detgemm_tc64_tn_bf16_f32_any, T64, tc::BF16, tc::F32, false, true, tc::INIT_OLD, false)
DETGEMM_TC_ENTRY(detgemm_tc64_tn_f16_f32_vec, T64, tc::F16, tc::F32, false, true, tc::INIT_OLD, true)
DETGEMM_TC_ENTRY(detgemm_tc64_tn_f16_f32_any, T64, tc::F16, tc::F32, false, true, tc::INIT_OLD, false)
