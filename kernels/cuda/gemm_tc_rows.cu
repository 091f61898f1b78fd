// gemm_tc_rows.cu: the tensor-core tier for few rows (Forward and dX with
// M <= 16), where the work is a weight matrix streamed once past a handful
// of activation rows and the time is the memory's and the chain's.
//
// The chain per element is the TC contract's (gemm_tc.cu): the accumulator
// starts at bias[j] (Forward) or +0 (dX) and takes the reduction in
// ascending 16-wide mma.sync.m16n8k16 steps, the tail zero-filled on both
// operands, no step wholly past the end, one rounding at the store. Only
// the tiling and the operands' roles differ, which the tensor core's
// per-element addition does not see (it depends on the element's 16 exact
// products and its incoming accumulator only; products commute exactly):
// these kernels give gemm_tc.cu's bits.
//
// Roles swapped: W is the mma's A operand (16 columns of C as the mma's 16
// rows) and the rows of X its B operand (8 rows of C as the mma's 8
// columns). A consumer warp owns 16 columns of C for the block's MR (8 or
// 16) rows: one chain of K/16 mma per 8 rows, NB = MR/8 chains. With the
// usual roles a 16-row mma would compute 15 padding rows for M = 1 and read
// a 16-row X fragment per 8 columns; swapped, the fragment traffic per
// column halves.
//
// A block owns MR rows x BN = 32 columns (two consumer warps) for the whole
// reduction: with N = 4096, 128 blocks, about one per SM and up to three
// resident per SM. Each stage of a STAGES-deep ring holds BK = 128 of the
// reduction of both operands, staged with 16-byte cp.async as they lie in
// global memory (the _vec requirement: 16-byte aligned bases, leading
// dimensions multiples of 8; the dispatcher sends other calls to
// gemm_tc.cu). PW producer warps do nothing but copy: they fill a slot once
// its "empty" mbarrier says every consumer has read it, and each producer
// thread's cp.async.mbarrier.arrive on the slot's "full" mbarrier fires
// when its copies have landed. A consumer waits on "full" only, reads the
// k-tile's fragments into registers one k-tile ahead (while the current
// k-tile's steps issue) and releases the slot at once. No warp waits at a
// block barrier inside the loop, so the copies run ahead of the chain by
// the whole ring. sm_80 forms throughout: the family builds for every
// target.
//
// Producer warps because the copy throughput of one SM grows with the warps
// that issue them: copies issued by the compute warps between block
// barriers cost the sum of chain and stream, one producer warp was not
// enough, two were (bench/NOTES-kernels.md).
//
// Layouts (gemm_tc.cu's names): A(i, r) = A[i*lda + r] always (X or dY,
// row-major along the reduction); B(r, j) = B_JC ? B[r*ldb + j] (nn: W[K,N])
// : B[j*ldb + r] (nt: W[K,N] read as its transpose, dX).
#include "prelude.cuh"
#include "tc_common.cuh"

namespace tcr {

constexpr int PAD = 8;  // halves of padding per smem row: conflict-free ldmatrix

// Rows<MR, BN, BK, STAGES, MINB, SPLIT, PW>: MR rows (8 or 16) and BN
// columns (16 per consumer warp) per block, BK of the reduction per stage
// (a multiple of 32: X fragments come two steps per ldmatrix), STAGES
// deep, MINB blocks per SM asked of the register allocator; the next
// k-tile's fragment reads sit after SPLIT of the current k-tile's steps;
// PW producer warps after the consumers.
template <int MR_, int BN_, int BK_, int STAGES_, int MINB_, int SPLIT_, int PW_>
struct Rows {
    static constexpr int MR = MR_, BN = BN_, BK = BK_, STAGES = STAGES_, MINB = MINB_, SPLIT = SPLIT_, PW = PW_;
    static constexpr int NB = MR / 8;  // 8-row groups: one mma each per step
    static constexpr int WARPS = BN / 16;  // consumer warps
    static constexpr int CONSUMERS = WARPS * 32;
    static constexpr int THREADS = CONSUMERS + PW * 32;
    static constexpr int KS = BK / 16;
    static_assert((MR == 8 || MR == 16) && BN % 16 == 0 && BK % 32 == 0, "tile must hold whole mma pieces");
    static constexpr int A_LD = BK + PAD;  // X rows (the B operand)
    static constexpr int A_ELEMS = MR * A_LD;
    template <bool B_JC>
    static constexpr int b_ld() { return B_JC ? BN + PAD : BK + PAD; }
    template <bool B_JC>
    static constexpr int b_elems() { return B_JC ? BK * b_ld<B_JC>() : BN * b_ld<B_JC>(); }
};

// One k-tile's fragments of a warp: W as the A operand (16 columns x 16 k
// per step), X as the B operand (16 k x 8 rows per step and 8-row group).
template <class T>
struct Frags {
    dg_u32 w[T::KS][4];
    dg_u32 x[T::KS][T::NB][2];
};

// Reads a k-tile's fragments for the warp's 16 columns n0 from the staged
// X piece a and W piece b (a slot of the ring).
template <class T, bool B_JC>
DETGEMM_INLINE void load_frags(Frags<T>& f, const dg_u16* a, const dg_u16* b, int lane, int n0) {
    constexpr int KS = T::KS, NB = T::NB, A_LD = T::A_LD, B_LD = T::template b_ld<B_JC>();
#pragma unroll
    for (int ks = 0; ks < KS; ++ks) {
        if (B_JC) {
            tc::ldmatrix_x4_trans(f.w[ks], b + (ks * 16 + (lane & 7) + (lane >> 4) * 8) * B_LD + n0 + ((lane >> 3) & 1) * 8);
        } else {
            tc::ldmatrix_x4(f.w[ks], b + (n0 + (lane & 15)) * B_LD + ks * 16 + (lane >> 4) * 8);
        }
    }
    if (NB == 1) {
        // One x4: k 0-7, 8-15 of step 2p and of step 2p+1.
#pragma unroll
        for (int p = 0; p < KS / 2; ++p) {
            dg_u32 r[4];
            tc::ldmatrix_x4(r, a + (lane & 7) * A_LD + p * 32 + (lane >> 3) * 8);
            f.x[2 * p][0][0] = r[0];
            f.x[2 * p][0][1] = r[1];
            f.x[2 * p + 1][0][0] = r[2];
            f.x[2 * p + 1][0][1] = r[3];
        }
    } else {
        // One x4 per step: rows 0-7 (k 0-7, 8-15), rows 8-15.
#pragma unroll
        for (int ks = 0; ks < KS; ++ks) {
            dg_u32 r[4];
            tc::ldmatrix_x4(r, a + ((lane & 7) + (lane >> 4) * 8) * A_LD + ks * 16 + ((lane >> 3) & 1) * 8);
            f.x[ks][0][0] = r[0];
            f.x[ks][0][1] = r[1];
            f.x[ks][NB - 1][0] = r[2];
            f.x[ks][NB - 1][1] = r[3];
        }
    }
}

// Step ks of a k-tile: one mma per 8-row group, in k order on each chain.
template <class T, int DTIN>
DETGEMM_INLINE void mma_step(float (&acc)[T::NB][4], const Frags<T>& f, int ks) {
#pragma unroll
    for (int nb = 0; nb < T::NB; ++nb) tc::mma16816<DTIN>(acc[nb], f.w[ks], f.x[ks][nb][0], f.x[ks][nb][1]);
}

// acc[nb][q]: column n0+g (q < 2) or n0+g+8, rows nb*8 + 2t + (q & 1); the
// chain starts at bias[j] (Forward) or +0.
template <class T, int INIT>
DETGEMM_INLINE void init_acc(float (&acc)[T::NB][4], const float* DETGEMM_RESTRICT bias, dg_i64 N, dg_i64 jw, int g) {
#pragma unroll
    for (int nb = 0; nb < T::NB; ++nb)
#pragma unroll
        for (int q = 0; q < 4; ++q) {
            const dg_i64 j = jw + g + (q >> 1) * 8;
            acc[nb][q] = INIT == tc::INIT_BIAS && bias != nullptr && j < N ? epi::tc_start(bias, j) : 0.0f;
        }
}

// Epilogue: rows below M and columns below N; a thread holds two rows of
// one column, so elements are stored one by one.
template <class T, int DTOUT, class Act>
DETGEMM_INLINE void store_acc(const float (&acc)[T::NB][4], void* DETGEMM_RESTRICT C, dg_i64 M, dg_i64 N, dg_i64 ldc,
                              dg_i64 i0, dg_i64 jw, int g, int t4) {
#pragma unroll
    for (int nb = 0; nb < T::NB; ++nb)
#pragma unroll
        for (int q = 0; q < 4; ++q) {
            const dg_i64 i = i0 + nb * 8 + t4 * 2 + (q & 1);
            const dg_i64 j = jw + g + (q >> 1) * 8;
            if (i < M && j < N) epi::store<DTOUT, epi::RNE_CVT>(C, i * ldc + j, epi::act<Act>(acc[nb][q]));
        }
}

template <class T, int DTIN, int DTOUT, bool B_JC, int INIT, class Act = epi::Identity>
DETGEMM_INLINE void rows_tile(const dg_u16* DETGEMM_RESTRICT A, const dg_u16* DETGEMM_RESTRICT B,
                              void* DETGEMM_RESTRICT C, const float* DETGEMM_RESTRICT bias, dg_i64 M,
                              dg_i64 N, dg_i64 R, dg_i64 lda, dg_i64 ldb, dg_i64 ldc, dg_i64 L) {
    extern __shared__ __align__(16) dg_u16 smem[];
    constexpr int STAGES = T::STAGES, BK = T::BK, KS = T::KS, NB = T::NB;
    constexpr int A_LD = T::A_LD, A_ELEMS = T::A_ELEMS;
    constexpr int B_LD = T::template b_ld<B_JC>(), B_ELEMS = T::template b_elems<B_JC>();
    dg_u16* sA = smem;                     // STAGES x A_ELEMS: X
    dg_u16* sB = smem + STAGES * A_ELEMS;  // STAGES x B_ELEMS: W
    // full[s] at bars + 8s, empty[s] at bars + 8(STAGES + s); the ring is a
    // whole number of 16-byte rows, so they are 8-byte aligned.
    const dg_u32 bars = tc::smem_addr(sB + STAGES * B_ELEMS);

    const int tid = threadIdx.x;
    const int lane = tid & 31, warp = tid >> 5;
    const dg_i64 rtiles = (M + T::MR - 1) / T::MR;
    const dg_i64 i0 = ((dg_i64)blockIdx.x % rtiles) * T::MR;
    const dg_i64 j0 = ((dg_i64)blockIdx.x / rtiles) * T::BN;
    const dg_i64 ktiles = (R + BK - 1) / BK;  // >= 1: R >= 1

    if (tid == 0) {
#pragma unroll
        for (int s = 0; s < STAGES; ++s) {
            tc::mbar_init(bars + 8 * s, T::PW * 32);                   // every producer thread
            tc::mbar_init(bars + 8 * (STAGES + s), T::CONSUMERS);  // every consumer thread
        }
    }
    __syncthreads();  // the only block barrier: the mbarriers exist

    if (tid >= T::CONSUMERS) {
        // Producers: k-tile kt goes to slot kt % STAGES once the consumers
        // have released that slot's previous k-tile; each thread's arrival
        // on full fires when its own copies have landed.
        const int ptid = tid - T::CONSUMERS;
        const tc::Stager<true, true, T::MR, BK, A_LD, T::PW * 32> stA(A, lda, i0, 0, M, R, ptid);
        const tc::Stager<true, !B_JC, B_JC ? BK : T::BN, B_JC ? T::BN : BK, B_LD, T::PW * 32> stB(
            B, ldb, B_JC ? 0 : j0, B_JC ? j0 : 0, B_JC ? R : N, B_JC ? N : R, ptid);
        int slot = 0;
        dg_u32 phase = 0;  // parity of the empty phase to wait for once the ring wrapped
        for (dg_i64 kt = 0; kt < ktiles; ++kt) {
            if (kt >= STAGES) tc::mbar_wait(bars + 8 * (STAGES + slot), phase);
            stA.load(sA + slot * A_ELEMS, kt * BK);
            stB.load(sB + slot * B_ELEMS, kt * BK);
            tc::cp_async_arrive(bars + 8 * slot);
            if (++slot == STAGES) {
                slot = 0;
                if (kt >= STAGES) phase ^= 1;
            }
        }
        tc::cp_async_wait_all();
        return;
    }

    // Consumers: the warp's 16 columns for all the block's rows.
    const int g = lane >> 2, t4 = lane & 3;
    const int n0 = warp * 16;
    float acc[NB][4], sum[NB][4];
    init_acc<T, INIT>(acc, bias, N, j0 + n0, g);
    auto step = [&](const Frags<T>& f, int ks) { mma_step<T, DTIN>(acc, f, ks); };
    int rd = 0;
    dg_u32 phase = 0;
    // The slot rd's fragments, once its copies have landed; the slot goes
    // back to the producer at once (the fragments are in registers).
    auto take = [&](Frags<T>& f) {
        tc::mbar_wait(bars + 8 * rd, phase);
        load_frags<T, B_JC>(f, sA + rd * A_ELEMS, sB + rd * B_ELEMS, lane, n0);
        tc::mbar_arrive(bars + 8 * (STAGES + rd));
        if (++rd == STAGES) {
            rd = 0;
            phase ^= 1;
        }
    };

    Frags<T> f0, f1;
    take(f0);
    // k-tile kt with its fragments in cur: SPLIT steps, the next k-tile's
    // fragments (waiting on the tensor core anyway), the remaining steps.
    // Steps wholly past the end are not issued; a step past the end is
    // never the first (k0 < R).
    auto ktile = [&](dg_i64 kt, const Frags<T>& cur, Frags<T>& nxt) {
        const dg_i64 k0 = kt * BK;
        const bool full = k0 + BK <= R;
#pragma unroll
        for (int ks = 0; ks < T::SPLIT; ++ks)
            if (full || k0 + ks * 16 < R) step(cur, ks);
        if (kt + 1 < ktiles) take(nxt);
#pragma unroll
        for (int ks = T::SPLIT; ks < KS; ++ks)
            if (full || k0 + ks * 16 < R) step(cur, ks);
    };
    // The plan's slabs (L a multiple of BK): the chain folds into sum at
    // the end of every slab but the last (epi::fold_slab). (The loop of
    // gemm_tc_rows_tma.cu, a slab at a time, spills here.)
    const dg_i64 slab_tiles = L < R ? L / BK : ktiles;
    dg_i64 fold_at = slab_tiles;
    bool folded = false;
    auto slab_end = [&](dg_i64 kt) {
        if (kt + 1 == fold_at && kt + 1 < ktiles) {
#pragma unroll
            for (int nb = 0; nb < NB; ++nb) epi::fold_slab(sum[nb], acc[nb], !folded);
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
    if (folded) {
#pragma unroll
        for (int nb = 0; nb < NB; ++nb)
#pragma unroll
            for (int q = 0; q < 4; ++q) acc[nb][q] = epi::fold_add(sum[nb][q], acc[nb][q]);
    }
    store_acc<T, DTOUT, Act>(acc, C, M, N, ldc, i0, j0 + n0, g, t4);
}

// The shapes: two producer warps each; 8 rows x 32 columns, 6 stages of
// 12.1 KiB (nn) for M <= 8; 16 rows, 5 stages of 14.3 KiB for M <= 16; at
// most 75 KiB, so three blocks an SM (all of N = 11008's 344 blocks
// resident) and 99 KiB blocks (sm_86, sm_89) hold them. A third and fourth
// producer warp, deeper rings (two blocks an SM) and four consumer warps of
// 8 rows for the 16-row tile gained nothing (bench/NOTES-kernels.md).
typedef Rows<8, 32, 128, 6, 3, 2, 2> R8;
typedef Rows<16, 32, 128, 5, 3, 2, 2> R16;

}  // namespace tcr

// Entry points: detgemm_tcrows{8,16}_{nn,nt}_{in}_{out}_vec, arguments as in
// gemm_tc.cu (ws is never set: a block runs all of its elements' slabs and
// folds them in registers); a 1-D grid of row tiles x column blocks, row
// tiles fastest.
#define DETGEMM_TCROWS_ENTRY(NAME, TILE, DTIN, DTOUT, BJC, INIT)                                           \
    DETGEMM_KERNEL void __launch_bounds__(tcr::TILE::THREADS, tcr::TILE::MINB)                              \
        NAME(const void* A, const void* B, void* C, const float* bias, dg_i64 M, dg_i64 N, dg_i64 R,        \
             dg_i64 lda, dg_i64 ldb, dg_i64 ldc, float* ws, dg_i64 L) {                                     \
        dg_grid_dependency_wait();                                                                          \
        tcr::rows_tile<tcr::TILE, DTIN, DTOUT, BJC, INIT>(static_cast<const dg_u16*>(A),                     \
                                                         static_cast<const dg_u16*>(B), C, bias, M, N, R,   \
                                                         lda, ldb, ldc, L);                                 \
    }

#include "zgemm_tc_rows_entries.cuh"
