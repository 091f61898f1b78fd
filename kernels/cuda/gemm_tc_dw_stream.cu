// gemm_tc_dw_stream.cu: the tensor-core tier's dW for short reductions,
// run as one stream over the f32 master buffer.
//
// dW[K,N] += X[M,K]ᵀ dY[M,N] with M small is a pass over dW: each element
// is read once, takes M/16 mma steps and is written once, so the time is
// the master's bytes. gemm_tc.cu loads its master tile into registers in
// a prologue, fragment by fragment, and then fills a deep operand
// pipeline; here a block's first act is to request its whole master tile
// as whole rows into shared memory, the few staged rows of X and dY arrive
// from L2 while those loads fly, each warp reads its fragments from the
// staged tile, runs its steps, puts them back, and the block writes the
// tile out as whole rows, so the stream runs near the device-to-device copy
// rate. Fragments loaded straight to registers (each warp access then
// covers 32 bytes of 8 rows, not whole lines) were slower, and so were an
// L2::128B prefetch hint on the copies, sm_90 bulk copies for the master
// rows, 32×256 tiles and 128×128 tiles (bench/NOTES-kernels.md).
//
// The chain per element is the TC contract's (gemm_tc.cu): the
// accumulator starts at the current dW[k,n] and takes the reduction over
// m in ascending 16-wide mma.sync.m16n8k16 steps, the last step's missing
// rows zero-filled on both operands, no step issued wholly past M, stored
// as f32. The tensor core adds each element's 16 products and its
// accumulator by its own per-element rule, which does not see the tiling:
// these kernels give gemm_tc.cu's bits.
//
// Roles (gemm_tc.cu's names, layout tn): C[i, j] with i = k (rows of dW),
// j = n; A(i, r) = X[r*lda + i] (the mma's A is Xᵀ, staged as X lies and
// read by ldmatrix .trans), B(r, j) = DY[r*ldb + j] (staged as it lies,
// ldmatrix .trans). A block owns BM rows × BN columns of dW; the grid is
// one-dimensional, column tiles fastest, so consecutive blocks walk dW in
// memory order. M is consumed in chunks of BR = 32 rows through a
// STAGES-deep cp.async ring.
//
// Paths. _vec: 16-byte cp.async copies of X and dY (16-byte aligned,
// leading dimensions multiples of 8) and of the master (dW 16-byte
// aligned, ldc and N multiples of 4), float4 stores. _any: element copies
// of everything (cp.async of 4 bytes for the master) and element stores,
// any alignment; the master still moves as whole rows per warp.
#include "prelude.cuh"
#include "tc_common.cuh"

namespace tcdw {

constexpr int BR = 32;    // rows of M per stage: two 16-wide steps
constexpr int PAD = 8;    // halves of padding per smem row of X and dY: conflict-free ldmatrix
constexpr int CPAD = 8;   // floats of padding per staged master row: conflict-free fragment reads

// A block of BM rows × BN columns of dW computed by WM × WN warps of
// (16·MI) × (8·NI), a STAGES-deep ring, MINB blocks per SM asked of the
// register allocator.
template <int BM_, int BN_, int WM_, int WN_, int STAGES_, int MINB_>
struct Tile {
    static constexpr int BM = BM_, BN = BN_, WM = WM_, WN = WN_, STAGES = STAGES_, MINB = MINB_;
    static constexpr int THREADS = WM * WN * 32;
    static constexpr int TM = BM / WM, TN = BN / WN;
    static constexpr int MI = TM / 16, NI = TN / 8;
    static_assert(MI >= 1 && TM == MI * 16 && NI >= 2 && NI % 2 == 0 && TN == NI * 8, "warp tile must hold 16x16 pieces");
    static constexpr int C_LD = BN + CPAD;                  // staged master row pitch (floats)
    static constexpr int A_LD = BM + PAD, B_LD = BN + PAD;  // ring row pitches (halves)
    static constexpr int A_ELEMS = BR * A_LD, B_ELEMS = BR * B_LD;
    static constexpr int C_BYTES = BM * C_LD * 4;
    static constexpr int RING_BYTES = STAGES * (A_ELEMS + B_ELEMS) * 2;
    static constexpr int SMEM = C_BYTES + RING_BYTES;
};

// Feed copies an operand's chunks into the ring in order: BR rows × CONTIG
// columns of a row-major matrix G (row pitch ld) from column c0, rows past
// R and columns past lim zero-filled. A thread owns ITERS 8-element pieces
// of one column of pieces, RSTEP rows apart (threads beyond the chunk's
// pieces own none). Chunks are loaded one after another, so the thread
// keeps a pointer that advances a chunk per load and the rows left below
// it: fewer live registers than tc::Stager, whose random access the ring
// does not need.
template <bool VEC, int CONTIG, int LD, int THREADS>
struct Feed {
    static constexpr int CH = CONTIG / 8;
    static constexpr int RSTEP = THREADS / CH;
    static constexpr int ITERS = BR * CH >= THREADS ? BR * CH / THREADS : 1;
    static_assert(THREADS % CH == 0 && (BR * CH % THREADS == 0 || THREADS % (BR * CH) == 0),
                  "pieces must divide evenly among threads");

    const dg_u16* g;  // the matrix: a valid address for empty copies
    const dg_u16* p;  // the thread's first piece in the next chunk
    dg_i64 ld;
    dg_i64 left;  // rows from p's row to R (<= 0: none)
    int bytes;    // the piece's bytes inside the matrix's columns (0..16)
    int s0;       // the first piece's offset in a slot; -1: the thread owns none

    DETGEMM_INLINE Feed(const dg_u16* G, dg_i64 ld_, dg_i64 c0, dg_i64 lim, dg_i64 R, int tid) {
        const int row = tid / CH, ch = tid % CH;
        const dg_i64 cols = lim - (c0 + ch * 8);
        g = G;
        ld = ld_;
        p = G + row * ld_ + c0 + ch * 8;
        left = R - row;
        bytes = cols >= 8 ? 16 : (cols > 0 ? (int)cols * 2 : 0);
        s0 = row < BR ? row * LD + ch * 8 : -1;
    }

    DETGEMM_INLINE void load(dg_u16* s) {
        if (BR * CH >= THREADS || s0 >= 0) {
            if (VEC) {
#pragma unroll
                for (int it = 0; it < ITERS; ++it) {
                    const int n = left > it * RSTEP ? bytes : 0;
                    tc::cp_async16(s + s0 + it * RSTEP * LD, n ? p + it * RSTEP * ld : g, n);
                }
            } else {
                // Kept rolled, as tc::Stager's element path (the slow path).
#pragma unroll 1
                for (int it = 0; it < ITERS; ++it) {
                    dg_u32 w[4] = {0u, 0u, 0u, 0u};
                    if (left > it * RSTEP && bytes > 0) {
                        const dg_u16* q = p + it * RSTEP * ld;
#pragma unroll
                        for (int e = 0; e < 8; ++e) {
                            const dg_u32 v = 2 * e < bytes ? (dg_u32)q[e] : 0u;
                            w[e >> 1] |= v << (16 * (e & 1));
                        }
                    }
                    *reinterpret_cast<uint4*>(s + s0 + it * RSTEP * LD) = make_uint4(w[0], w[1], w[2], w[3]);
                }
            }
        }
        p += BR * ld;
        left -= BR;
    }
};

// The element path's master moves by 4-byte zero-filling copies
// (async_copy.cuh).
using dgcp::cp_async4;

template <class T, int DTIN, bool VEC>
DETGEMM_INLINE void dw_stream(const dg_u16* DETGEMM_RESTRICT X, const dg_u16* DETGEMM_RESTRICT DY,
                              float* DETGEMM_RESTRICT C, dg_i64 M, dg_i64 N, dg_i64 R, dg_i64 lda, dg_i64 ldb,
                              dg_i64 ldc) {
    constexpr int STAGES = T::STAGES;
    extern __shared__ __align__(16) dg_u16 smem[];
    float* sC = reinterpret_cast<float*>(smem);       // BM x C_LD: the master tile
    dg_u16* sA = smem + T::C_BYTES / 2;               // STAGES x A_ELEMS: [r][i]
    dg_u16* sB = sA + STAGES * T::A_ELEMS;            // STAGES x B_ELEMS: [r][j]

    const int tid = threadIdx.x;
    const int lane = tid & 31, warp = tid >> 5;
    const int wm = warp / T::WN, wn = warp % T::WN;
    const int g = lane >> 2, t4 = lane & 3;

    const dg_i64 col_tiles = (N + T::BN - 1) / T::BN;
    const dg_i64 i0 = ((dg_i64)blockIdx.x / col_tiles) * T::BM;
    const dg_i64 j0 = ((dg_i64)blockIdx.x % col_tiles) * T::BN;
    // The tile's rows and columns inside dW.
    const int rows = (int)(M - i0 < T::BM ? M - i0 : T::BM);
    const int cols = (int)(N - j0 < T::BN ? N - j0 : T::BN);

    // The master tile, first. A thread owns pieces of PE elements (4: 16
    // bytes; 1 on the element path) in column mcol of rows mrow + p·MROWS,
    // a warp's copy covering consecutive pieces of one row (whole cache
    // lines); rows past M and columns past N are zero-filled.
    constexpr int PE = VEC ? 4 : 1;
    constexpr int MCH = T::BN / PE, MROWS = T::THREADS / MCH, PASSES = T::BM / MROWS;
    static_assert(T::THREADS % MCH == 0 && T::BM % MROWS == 0, "master pieces must divide evenly among threads");
    const int mrow = tid / MCH, mcol = (tid % MCH) * PE;
    const int mcols = cols - mcol < PE ? (cols - mcol > 0 ? cols - mcol : 0) : PE;  // the piece's columns in dW
    {
        const float* q = C + (i0 + mrow) * ldc + j0 + mcol;
#pragma unroll(VEC ? PASSES : 4)
        for (int p = 0; p < PASSES; ++p) {
            const int n = mrow + p * MROWS < rows ? mcols * 4 : 0;
            if (VEC) {
                tc::cp_async16(sC + (mrow + p * MROWS) * T::C_LD + mcol, n ? q : C, n);
            } else {
                cp_async4(sC + (mrow + p * MROWS) * T::C_LD + mcol, n ? q : C, n);
            }
            q += MROWS * ldc;
        }
        tc::cp_async_commit();
    }

    // The chunks of BR rows of X (its BM columns from i0) and dY (BN from
    // j0), rows past M and columns past K or N zero-filled.
    Feed<VEC, T::BM, T::A_LD, T::THREADS> stA(X, lda, i0, M, R, tid);
    Feed<VEC, T::BN, T::B_LD, T::THREADS> stB(DY, ldb, j0, N, R, tid);
    const dg_i64 chunks = (R + BR - 1) / BR;
#pragma unroll
    for (int s = 0; s < STAGES - 1; ++s) {
        if (s < chunks) {
            stA.load(sA + s * T::A_ELEMS);
            stB.load(sB + s * T::B_ELEMS);
        }
        tc::cp_async_commit();
    }

    // The master has landed (the ring's STAGES - 1 groups may not have):
    // each warp reads its fragments, acc[mi][ni] = rows g, g, g+8, g+8 and
    // columns 2t, 2t+1 of its 16x8 piece (mi, ni).
    tc::cp_async_wait<STAGES - 1>();
    __syncthreads();
    float acc[T::MI][T::NI][4];
    const int wr0 = wm * T::TM + g, wc0 = wn * T::TN + t4 * 2;  // the lane's first fragment element
#pragma unroll
    for (int mi = 0; mi < T::MI; ++mi)
#pragma unroll
        for (int h = 0; h < 2; ++h)
#pragma unroll
            for (int ni = 0; ni < T::NI; ++ni) {
                const float2 v = *reinterpret_cast<const float2*>(sC + (wr0 + mi * 16 + h * 8) * T::C_LD + wc0 + ni * 8);
                acc[mi][ni][2 * h] = v.x;
                acc[mi][ni][2 * h + 1] = v.y;
            }

    int rd = 0, wr = STAGES - 1;
#pragma unroll 1
    for (dg_i64 c = 0; c < chunks; ++c) {
        // Chunk c has landed, and every warp is done with chunk c-1, whose
        // slot the next copy refills.
        tc::cp_async_wait<STAGES - 2>();
        __syncthreads();
        if (c + STAGES - 1 < chunks) {
            stA.load(sA + wr * T::A_ELEMS);
            stB.load(sB + wr * T::B_ELEMS);
        }
        tc::cp_async_commit();
        wr = wr + 1 == STAGES ? 0 : wr + 1;

        const dg_u16* a = sA + rd * T::A_ELEMS;
        const dg_u16* b = sB + rd * T::B_ELEMS;
#pragma unroll
        for (int ks = 0; ks < BR / 16; ++ks) {
            if (c * BR + ks * 16 >= R) break;  // never issue a step wholly past M
            dg_u32 fa[T::MI][4];
#pragma unroll
            for (int mi = 0; mi < T::MI; ++mi) {
                const int rrow = ks * 16 + (lane & 7) + (lane >> 4) * 8;
                const int icol = wm * T::TM + mi * 16 + ((lane >> 3) & 1) * 8;
                tc::ldmatrix_x4_trans(fa[mi], a + rrow * T::A_LD + icol);
            }
#pragma unroll
            for (int np = 0; np < T::NI / 2; ++np) {
                const int rrow = ks * 16 + (lane & 15), jcol = wn * T::TN + np * 16 + (lane >> 4) * 8;
                dg_u32 fb[4];
                tc::ldmatrix_x4_trans(fb, b + rrow * T::B_LD + jcol);
#pragma unroll
                for (int mi = 0; mi < T::MI; ++mi) {
                    tc::mma16816<DTIN>(acc[mi][2 * np], fa[mi], fb[0], fb[1]);
                    tc::mma16816<DTIN>(acc[mi][2 * np + 1], fa[mi], fb[2], fb[3]);
                }
            }
        }
        rd = rd + 1 == STAGES ? 0 : rd + 1;
    }
    tc::cp_async_wait<0>();

    // Each warp puts back the fragments only it read; then the tile goes
    // out as whole rows.
#pragma unroll
    for (int mi = 0; mi < T::MI; ++mi)
#pragma unroll
        for (int h = 0; h < 2; ++h)
#pragma unroll
            for (int ni = 0; ni < T::NI; ++ni)
                *reinterpret_cast<float2*>(sC + (wr0 + mi * 16 + h * 8) * T::C_LD + wc0 + ni * 8) =
                    make_float2(acc[mi][ni][2 * h], acc[mi][ni][2 * h + 1]);
    __syncthreads();
    float* q = C + (i0 + mrow) * ldc + j0 + mcol;
#pragma unroll(VEC ? PASSES : 4)
    for (int p = 0; p < PASSES; ++p, q += MROWS * ldc) {
        if (mrow + p * MROWS >= rows || mcols == 0) continue;
        const float* s = sC + (mrow + p * MROWS) * T::C_LD + mcol;
        if (VEC && mcols == 4) {
            *reinterpret_cast<float4*>(q) = *reinterpret_cast<const float4*>(s);
        } else {
#pragma unroll
            for (int e = 0; e < PE; ++e)
                if (e < mcols) q[e] = s[e];
        }
    }
}

// The tile: 64×128, 8 warps of 16×64, three blocks per SM (register and
// shared-memory bound): 32 KiB of master each.
typedef Tile<64, 128, 4, 2, 3, 3> S64;

}  // namespace tcdw

// Entry points: detgemm_{tile}_tn_{in}_f32_{vec,any}, with gemm_tc.cu's
// arguments (A = X, B = dY, C = dW, bias unused, M = K rows of dW, N, R = the
// batch rows, lda, ldb, ldc); a one-dimensional grid of row tiles × column
// tiles; Tile::SMEM bytes of dynamic shared memory.
#define DETGEMM_TCDW_ENTRY(NAME, TILE, DTIN, VEC)                                                          \
    DETGEMM_KERNEL void __launch_bounds__(tcdw::TILE::THREADS, tcdw::TILE::MINB)                            \
        NAME(const void* A, const void* B, void* C, const float* bias, dg_i64 M, dg_i64 N, dg_i64 R,        \
             dg_i64 lda, dg_i64 ldb, dg_i64 ldc) {                                                          \
        (void)bias;                                                                                         \
        dg_grid_dependency_wait();                                                                          \
        tcdw::dw_stream<tcdw::TILE, DTIN, VEC>(static_cast<const dg_u16*>(A), static_cast<const dg_u16*>(B), \
                                                static_cast<float*>(C), M, N, R, lda, ldb, ldc);            \
    }

#include "zgemm_tc_dw_stream_entries.cuh"
