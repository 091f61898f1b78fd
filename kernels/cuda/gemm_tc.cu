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
// Tiles are staged in shared memory as they lie in global memory (8-element
// chunks along the contiguous axis: 16-byte cp.async on the _vec path,
// element loads packed into one 16-byte store on the _any path) and turned
// into mma fragments by ldmatrix, transposing (.trans) where the contiguous
// axis is not k.
//
// Block order: blocks are dispatched in launch order (x fastest); each block
// maps its launch index to a tile in groups of GROUP row tiles, so the
// blocks resident at once share rows of A and columns of B in L2. The
// mapping decides where a tile is computed, never how.
#include "prelude.cuh"
#include "tc_common.cuh"

namespace tc {

constexpr int BK = 32;      // k per pipeline stage: two 16-wide steps
constexpr int PAD = 8;      // halves of padding per smem row: conflict-free ldmatrix
constexpr int GROUP = 16;   // row tiles per group of the block order

// A block tile BM x BN computed by WM x WN warps, STAGES deep, with
// MINB blocks per SM asked of the register allocator. DBUF: two fragment
// sets, the next step's read from shared memory while this step's mma
// issue (needs the registers: off where MINB caps them).
template <int BM_, int BN_, int WM_, int WN_, int STAGES_, int MINB_, bool DBUF_>
struct Tile {
    static constexpr int BM = BM_, BN = BN_, WM = WM_, WN = WN_, STAGES = STAGES_, MINB = MINB_;
    static constexpr bool DBUF = DBUF_;
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

// gemm_tile: one BM x BN tile of C. VEC: operands may be moved in 16-byte
// chunks (lda, ldb multiples of 8 elements, base pointers 16-byte aligned);
// otherwise the same stages are filled element by element.
template <class T, int DTIN, int DTOUT, bool A_RC, bool B_JC, int INIT, bool VEC, class Act = epi::Identity>
DETGEMM_INLINE void gemm_tile(const dg_u16* DETGEMM_RESTRICT A, const dg_u16* DETGEMM_RESTRICT B,
                              void* DETGEMM_RESTRICT C, const float* DETGEMM_RESTRICT bias,
                              dg_i64 M, dg_i64 N, dg_i64 R, dg_i64 lda, dg_i64 ldb, dg_i64 ldc,
                              float* DETGEMM_RESTRICT ws, dg_i64 L) {
    // The plan's slabs (ref.TCSlabs, TCDWSlabs). Without ws the call has
    // one slab, the whole reduction. With ws, block z computes slab z only:
    // the reduction [z*L, min((z+1)*L, R)), its chain from the start value
    // for z = 0 and from +0 after, stored as f32 (the Go side launches the
    // f32-output entry): dW's slab 0 in place in C, every other slab to its
    // partial plane in ws (M x N, row stride N); gemm_fold then adds the
    // planes in ascending order. tc128's dW (A transposed) sits at its
    // 128-register cap and would spill the slab offsets: it has no slabs,
    // and the Go side never sends it a cut call (tcSlabsOK).
    constexpr bool SLABS = !(T::MINB == 2 && !A_RC);
    if (SLABS && ws != nullptr) {
        const dg_i64 z = blockIdx.z, k0 = z * L;
        R = R - k0 < L ? R - k0 : L;
        A += A_RC ? k0 : k0 * lda;
        B += B_JC ? k0 * ldb : k0;
        if (!(INIT == INIT_OLD && z == 0)) {
            C = ws + (z - (INIT == INIT_OLD ? 1 : 0)) * M * N;
            ldc = N;
        }
    }
    extern __shared__ __align__(16) dg_u16 smem[];
    constexpr int STAGES = T::STAGES;
    constexpr int A_ELEMS = T::template a_elems<A_RC>();
    constexpr int B_ELEMS = T::template b_elems<B_JC>();
    dg_u16* sA = smem;                     // STAGES x A_ELEMS
    dg_u16* sB = smem + STAGES * A_ELEMS;  // STAGES x B_ELEMS
    constexpr int A_LD = A_RC ? BK + PAD : T::BM + PAD;  // smem row pitch of A
    constexpr int B_LD = B_JC ? T::BN + PAD : BK + PAD;

    const int tid = threadIdx.x;
    const int lane = tid & 31, warp = tid >> 5;
    const int wm = warp / T::WN, wn = warp % T::WN;

    // Grouped block order: launch index -> (row tile, column tile).
    dg_i64 i0, j0;
    {
        const dg_i64 rows = gridDim.x, cols = gridDim.y;
        const dg_i64 pid = (dg_i64)blockIdx.y * rows + blockIdx.x;
        const dg_i64 per_group = (dg_i64)GROUP * cols;
        const dg_i64 first = (pid / per_group) * GROUP;
        const dg_i64 gsize = rows - first < GROUP ? rows - first : (dg_i64)GROUP;
        const dg_i64 in_group = pid % per_group;
        i0 = (first + in_group % gsize) * T::BM;
        j0 = (in_group / gsize) * T::BN;
    }

    // The operands' stagers: A(i, r) has k contiguous when A_RC, B(r, j)
    // when not B_JC.
    const Stager<VEC, A_RC, A_RC ? T::BM : BK, A_RC ? BK : T::BM, A_LD, T::THREADS> stA(
        A, lda, A_RC ? i0 : 0, A_RC ? 0 : i0, A_RC ? M : R, A_RC ? R : M, tid);
    const Stager<VEC, !B_JC, B_JC ? BK : T::BN, B_JC ? T::BN : BK, B_LD, T::THREADS> stB(
        B, ldb, B_JC ? 0 : j0, B_JC ? j0 : 0, B_JC ? R : N, B_JC ? N : R, tid);
    // Fill one stage with the k-tile starting at k0.
    auto load_stage = [&](int stage, dg_i64 k0) {
        stA.load(sA + stage * A_ELEMS, k0);
        stB.load(sB + stage * B_ELEMS, k0);
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
                // Slab 0's chain (blockIdx.z = 0 also without ws) starts at
                // the start value, a later slab's at +0.
                const bool start = !SLABS || blockIdx.z == 0;
                if (INIT == INIT_BIAS && start && bias != nullptr && j < N) v = epi::tc_start(bias, j);
                if (INIT == INIT_OLD && start && i < M && j < N) v = static_cast<const float*>(C)[i * ldc + j];
                acc[mi][ni][q] = v;
            }

    // Fragments of one 16-wide step: A's MI 16x16 pieces, B's NI 16x8 ones.
    struct Frags {
        dg_u32 a[T::MI][4];
        dg_u32 b[T::NI][2];
    };
    auto load_frags = [&](Frags& f, int st, int ks) {
        const dg_u16* a = sA + st * A_ELEMS;
        const dg_u16* b = sB + st * B_ELEMS;
#pragma unroll
        for (int mi = 0; mi < T::MI; ++mi) {
            const int m_base = wm * T::TM + mi * 16;
            if (A_RC) {
                const int row = m_base + (lane & 15), col = ks * 16 + (lane >> 4) * 8;
                ldmatrix_x4(f.a[mi], a + row * A_LD + col);
            } else {
                const int krow = ks * 16 + (lane & 7) + (lane >> 4) * 8;
                const int mcol = m_base + ((lane >> 3) & 1) * 8;
                ldmatrix_x4_trans(f.a[mi], a + krow * A_LD + mcol);
            }
        }
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
            f.b[2 * np][0] = r[0];
            f.b[2 * np][1] = r[1];
            f.b[2 * np + 1][0] = r[2];
            f.b[2 * np + 1][1] = r[3];
        }
    };
    auto mma_frags = [&](const Frags& f) {
#pragma unroll
        for (int mi = 0; mi < T::MI; ++mi)
#pragma unroll
            for (int ni = 0; ni < T::NI; ++ni) mma16816<DTIN>(acc[mi][ni], f.a[mi], f.b[ni][0], f.b[ni][1]);
    };

    // With DBUF the main loop keeps two fragment sets: the fragments of step
    // ks+1 are read from shared memory while the mma of step ks issue, and
    // the first step of the next stage is read (after its barrier) while the
    // last step of this one issues. Only when operands are read changes;
    // each accumulator still takes the same steps in ascending k.
    constexpr int KS = BK / 16;
    static_assert(KS % 2 == 0, "the next stage's first step lands in fragment set 0");
    const dg_i64 ktiles = (R + BK - 1) / BK;
#pragma unroll
    for (int s = 0; s < STAGES - 1; ++s) {
        if (s < ktiles) load_stage(s, (dg_i64)s * BK);
        cp_async_commit();
    }
    cp_async_wait<STAGES - 2>();
    __syncthreads();

    Frags fr[2];
    int rd = 0, wr = STAGES - 1;
    if (!VEC) {
        // The element-wise path keeps one fragment set and checks every
        // step (its loads dominate; the 64-bit addressing of the split
        // loop below spills on sm_80).
        for (dg_i64 kt = 0; kt < ktiles; ++kt) {
            const dg_i64 k0 = kt * BK;
            if (kt + STAGES - 1 < ktiles) load_stage(wr, k0 + (STAGES - 1) * BK);
            cp_async_commit();
            wr = wr + 1 == STAGES ? 0 : wr + 1;
#pragma unroll
            for (int ks = 0; ks < KS; ++ks) {
                if (k0 + ks * 16 >= R) break;  // never issue a step wholly past the end
                load_frags(fr[0], rd, ks);
                mma_frags(fr[0]);
            }
            cp_async_wait<STAGES - 2>();
            __syncthreads();
            rd = rd + 1 == STAGES ? 0 : rd + 1;
        }
    } else {
    if (T::DBUF && VEC) load_frags(fr[0], 0, 0);  // unused when ktiles == 0: registers only
    // One k-tile. LAST: the final one, whose steps wholly past the end are
    // not issued (every earlier tile lies wholly below R).
    auto ktile = [&](dg_i64 kt, auto last_tag) {
        constexpr bool LAST = decltype(last_tag)::value;
        const dg_i64 k0 = kt * BK;
        // Refill the slot read in the previous k-tile: every warp read its
        // fragments before the barrier that ended that k-tile.
        if (kt + STAGES - 1 < ktiles) load_stage(wr, k0 + (STAGES - 1) * BK);
        cp_async_commit();
        wr = wr + 1 == STAGES ? 0 : wr + 1;
        if (!T::DBUF) {
#pragma unroll
            for (int ks = 0; ks < KS; ++ks) {
                if (LAST && k0 + ks * 16 >= R) break;  // never issue a step wholly past the end
                load_frags(fr[0], rd, ks);
                mma_frags(fr[0]);
            }
            if (!LAST) {
                cp_async_wait<STAGES - 2>();
                __syncthreads();
                rd = rd + 1 == STAGES ? 0 : rd + 1;
            }
            return;
        }
#pragma unroll
        for (int ks = 0; ks < KS; ++ks) {
            if (ks + 1 < KS) {
                load_frags(fr[(ks + 1) & 1], rd, ks + 1);
            } else if (!LAST) {
                cp_async_wait<STAGES - 2>();
                __syncthreads();
                rd = rd + 1 == STAGES ? 0 : rd + 1;
                load_frags(fr[(ks + 1) & 1], rd, 0);
            }
            if (LAST && k0 + ks * 16 >= R) break;  // never issue a step wholly past the end
            mma_frags(fr[ks & 1]);
        }
    };
    for (dg_i64 kt = 0; kt + 1 < ktiles; ++kt) ktile(kt, tc_bool<false>());
    if (ktiles > 0) ktile(ktiles - 1, tc_bool<true>());
    }
    cp_async_wait<0>();

    dg_launch_dependents();  // only the stores are left: the next grid may be scheduled
    // Epilogue: a thread owns column pairs (2t, 2t+1); store each pair with
    // one access when C and ldc keep it aligned, else element by element.
    // The activation applies to final outputs only: not to dW, nor to a
    // slab's chain stored for gemm_fold.
    const bool final = INIT != INIT_OLD && !(SLABS && ws != nullptr);
    const bool pairs = (ldc & 1) == 0 && (reinterpret_cast<dg_u64>(C) & (DTOUT == F32 ? 7u : 3u)) == 0;
#pragma unroll
    for (int mi = 0; mi < T::MI; ++mi)
#pragma unroll
        for (int ni = 0; ni < T::NI; ++ni)
#pragma unroll
            for (int h = 0; h < 2; ++h) {
                const dg_i64 i = i0 + wm * T::TM + mi * 16 + g + h * 8;
                const dg_i64 j = j0 + wn * T::TN + ni * 8 + t4 * 2;
                if (i >= M) continue;
                float v0 = acc[mi][ni][2 * h], v1 = acc[mi][ni][2 * h + 1];
                if (final) v0 = epi::act<Act>(v0), v1 = epi::act<Act>(v1);
                if (pairs && j + 1 < N) {
                    epi::store2<DTOUT, epi::RNE_CVT>(C, i * ldc + j, v0, v1);
                } else {
                    if (j < N) epi::store<DTOUT, epi::RNE_CVT>(C, i * ldc + j, v0);
                    if (j + 1 < N) epi::store<DTOUT, epi::RNE_CVT>(C, i * ldc + j + 1, v1);
                }
            }
}

// The tile families. tc256: 128x256, 8 warps of 64x64 (the large-shape
// workhorse; _vec only). tc128: 128x128, 8 warps of 64x32, two blocks per
// SM (at most 128 registers: no spills with NVRTC 12.4 and 13.0). tc64:
// 64x64, 4 warps of 32x32 (fills the GPU on shapes with few 128-tiles).
typedef Tile<128, 256, 2, 4, 4, 1, true> T256;
typedef Tile<128, 128, 2, 4, 4, 2, false> T128;
typedef Tile<64, 64, 2, 2, 4, 1, true> T64;

}  // namespace tc

// Entry points: detgemm_tc{256,128,64}_{nn,nt,tn}_{in}_{out}_{vec,any}.
// Arguments as in gemm_simt.cu: A, B, C, bias (nullable), M, N, R, lda, ldb,
// ldc; then ws (nullable) and the slab length L, used only with ws. The grid
// is (row tiles, column tiles, slabs — 1 without ws); blocks take their tile
// from the grouped order above.
#define DETGEMM_TC_ENTRY(NAME, TILE, DTIN, DTOUT, ARC, BJC, INIT, VEC)                                   \
    DETGEMM_KERNEL void __launch_bounds__(tc::TILE::THREADS, tc::TILE::MINB)                              \
        NAME(const void* A, const void* B, void* C, const float* bias, dg_i64 M, dg_i64 N, dg_i64 R,      \
             dg_i64 lda, dg_i64 ldb, dg_i64 ldc, float* ws, dg_i64 L) {                                   \
        dg_grid_dependency_wait();                                                                        \
        tc::gemm_tile<tc::TILE, DTIN, DTOUT, ARC, BJC, INIT, VEC>(static_cast<const dg_u16*>(A),          \
                                                               static_cast<const dg_u16*>(B), C, bias, M, \
                                                               N, R, lda, ldb, ldc, ws, L);               \
    }

#include "zgemm_tc_entries.cuh"
