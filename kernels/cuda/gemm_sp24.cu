// gemm_sp24.cu: the 2:4-sparse forward on sparse tensor cores,
// Y[M,N] = epilogue(X[M,K] · W[K,N] (+ bias)) with W 2:4-sparse along K and
// given compressed (docs/contract.md, "2:4 sparse format" and "2:4 sparse
// forward"): values V[N][K/2] and metadata E[N][ceil(K/32)].
//
// The product is computed transposed, Yᵀ = Wᵀ·Xᵀ, so that the sparse
// operand is mma.sp's A: a tile's instruction rows are columns n of Y, its
// instruction columns rows m of X. Per element the chain starts at bias[n]
// (or +0) and takes one mma.sp.m16n8k32 step for every 32 positions of K in
// ascending order (16 kept products a step; a step wholly past K is not
// taken), then the Matmul epilogue and one rounding at the store. Every
// tile shape below runs that chain, so the tile may depend on M.
//
// Register layouts (measured on an H100 with register-level probes): A as
// mma.m16n8k16's A over the compressed columns; B as two m16n8k16 B
// fragments stacked (k 0..15, 16..31); metadata with selector 0: lane 4g+h
// (h = 0, 1) holds rows g (bits 0-15) and g+8 (bits 16-31), groups 4h..4h+3
// of the step, a nibble each in group order, which is each row's word of E
// cut in half.
#include "prelude.cuh"
#include "tc_common.cuh"
#include "sp24_mma.cuh"

namespace sp24 {

using epi::F32;
using epi::BF16;
using epi::F16;
using tc::cp_async16;
using dgcp::cp_async4;
using tc::cp_async_commit;
using tc::cp_async_wait;

// A tile shape: WN × WM warps, each owning FN 16-row (n) by FM 8-row (m)
// fragments; BK positions of K a pipeline stage, STAGES stages.
template <int WN_, int WM_, int FN_, int FM_, int BK_, int STAGES_, int MINB_>
struct Cfg {
    static constexpr int WN = WN_, WM = WM_, FN = FN_, FM = FM_, BK = BK_, STAGES = STAGES_;
    static constexpr int MINB = MINB_;  // blocks an SM should hold (__launch_bounds__)
    static constexpr int THREADS = 32 * WN * WM;
    static constexpr int BN = WN * FN * 16;  // columns n of Y a block
    static constexpr int BM = WM * FM * 8;   // rows m a block
    static constexpr int VROW = BK;          // bytes of a value row a stage (BK/2 values)
    static constexpr int XROW = 2 * BK;      // bytes of an X row a stage
    static constexpr int EW = BK / 32;       // metadata words a row a stage
    static constexpr int VBYTES = BN * VROW, XBYTES = BM * XROW, EBYTES = BN * EW * 4;
    static constexpr int STAGE = VBYTES + XBYTES + EBYTES;
    static constexpr int SMEM = STAGES * STAGE;
    static_assert(BK % 64 == 0, "a stage is whole 16-byte chunks of values");
};

// The three tile shapes (gemm/internal/entries: "s", "m", "l").
using CfgS = Cfg<2, 2, 1, 1, 256, 4, 1>;  // M <= 16: 32 columns a block, long stages, four warps of 16 x 8 (two warps were issue-bound)
using CfgM = Cfg<2, 2, 2, 4, 64, 4, 2>;   // M <= 128: 64 × 64
using CfgL = Cfg<2, 2, 4, 8, 64, 4, 2>;   // 128 × 128, warps of 64 × 64

// The 16-byte chunk c of row r of a shared tile whose rows are rb bytes:
// an XOR swizzle that keeps the 8 rows one ldmatrix reads in distinct banks.
DETGEMM_INLINE int swz(int r, int c, int rb) { return rb >= 128 ? (c ^ (r & 7)) : (c ^ ((r >> 1) & 3)); }

// ldmatrix as a plain memory read (ordered against the barriers and the
// other shared-memory accesses, not against the mma), so the compiler may
// issue a step's fragment loads ahead of the previous step's mma.
DETGEMM_INLINE void ldsm_x4(dg_u32 (&r)[4], const void* p) {
    asm("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
        : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
        : "r"(dgcp::smem_addr(p))
        : "memory");
}

// One operand's share of a stage for one thread: ITERS copies of B bytes,
// all in one chunk column (col, in units of B bytes) and RSTEP rows apart,
// so that only the k offset changes from one k-tile to the next (rows past
// the operand's end: see load).
template <int ROWS, int CH, int ROWB, int B, int THREADS, bool CLAMP = false>
struct Part {
    static constexpr int RSTEP = THREADS / CH, ITERS = ROWS * CH / THREADS;
    static_assert(THREADS % CH == 0 && (ROWS * CH) % THREADS == 0, "chunks must divide evenly among threads");
    const unsigned char* g;     // the thread's first chunk at k-tile 0
    const unsigned char* last;  // its column's chunk in the operand's last row (CLAMP)
    dg_i64 rstride;          // bytes between its chunks' rows in global memory
    int col;                 // its chunk column
    dg_u32 rows_ok;          // bit it: chunk it's row is inside the operand
    int soff[ITERS];         // shared-memory offsets in a stage

    DETGEMM_INLINE Part(const void* G, dg_i64 ld_bytes, dg_i64 row0, dg_i64 rows, int tid) {
        const int r = tid / CH;
        col = tid % CH;
        g = static_cast<const unsigned char*>(G) + (row0 + r) * ld_bytes + col * B;
        last = static_cast<const unsigned char*>(G) + (rows - 1) * ld_bytes + col * B;
        rstride = RSTEP * ld_bytes;
        rows_ok = 0;
#pragma unroll
        for (int it = 0; it < ITERS; ++it) {
            const int rr = r + it * RSTEP;
            if (row0 + rr < rows) rows_ok |= 1u << it;
            soff[it] = rr * ROWB + (B == 16 ? swz(rr, col, ROWB) * 16 : col * B);
        }
    }

    // Issues the copies of the k-tile whose first chunk column is at byte
    // koff of a row (in_k: that chunk is inside the row). Chunks past the
    // row's end or in rows past the operand's end are zero-filled, except
    // the metadata's rows (CLAMP), which copy the last row's: every
    // executed step needs a valid pattern, and such rows are computed but
    // never stored. (Skipping the copies of rows past the end, leaving stale
    // shared memory that feeds only unstored outputs, measured slower.)
    DETGEMM_INLINE void load(unsigned char* s, dg_i64 koff, bool in_k, const void* any) const {
#pragma unroll
        for (int it = 0; it < ITERS; ++it) {
            const bool row = rows_ok >> it & 1u;
            const bool ok = in_k && (row || CLAMP);
            const void* src = ok ? static_cast<const void*>((row ? g + it * rstride : last) + koff) : any;
            if constexpr (B == 16) cp_async16(s + soff[it], src, ok ? 16 : 0);
            else cp_async4(s + soff[it], src, ok ? 4 : 0);
        }
    }
};

// A block's loads: its BN rows of values and metadata and BM rows of X.
template <class C>
struct Loader {
    static constexpr int VCH = C::VROW / 16, XCH = C::XROW / 16;
    Part<C::BN, VCH, C::VROW, 16, C::THREADS> v;
    Part<C::BM, XCH, C::XROW, 16, C::THREADS> x;
    Part<C::BN, C::EW, C::EW * 4, 4, C::THREADS, true> e;
    const void *V, *X, *E;
    dg_i64 K, kw;

    DETGEMM_INLINE Loader(const dg_u16* X_, dg_i64 ldx, const dg_u16* V_, const dg_u32* E_, dg_i64 M, dg_i64 N,
                          dg_i64 K_, dg_i64 m0, dg_i64 n0, int tid)
        : v(V_, K_, n0, N, tid), x(X_, 2 * ldx, m0, M, tid), e(E_, 4 * ((K_ + 31) / 32), n0, N, tid), V(V_), X(X_),
          E(E_), K(K_), kw((K_ + 31) / 32) {}

    // Stages k-tile kt (positions kt·BK ..) into st (what lies past N, M
    // or K: Part::load).
    DETGEMM_INLINE void load(unsigned char* st, dg_i64 kt) const {
        const dg_i64 k0 = kt * C::BK;
        v.load(st, k0, k0 + v.col * 16 < K, V);  // value chunk: 8 values, 16 positions of K
        x.load(st + C::VBYTES, 2 * k0, k0 + x.col * 8 < K, X);
        e.load(st + C::VBYTES + C::XBYTES, 4 * (kt * C::EW), kt * C::EW + e.col < kw, E);
    }
};

// One block: a BN × BM tile of Yᵀ (columns n0.., rows m0..).
template <int IN, int OUT, class C>
DETGEMM_INLINE void forward(const dg_u16* DETGEMM_RESTRICT X, dg_i64 ldx, const dg_u16* DETGEMM_RESTRICT V,
                            const dg_u32* DETGEMM_RESTRICT E, void* DETGEMM_RESTRICT Y, dg_i64 ldy,
                            const float* DETGEMM_RESTRICT bias, void* aux, unsigned char* mask, dg_i64 ldaux, int act,
                            dg_i64 M, dg_i64 N, dg_i64 K) {
    extern __shared__ __align__(128) unsigned char smem[];
    dg_grid_dependency_wait();
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const int wn = warp % C::WN, wm = warp / C::WN;
    // Tiles in groups of 8 m-tiles: the blocks resident at once share a
    // few m-tiles of X and a band of the weight, which stays in L2.
    dg_i64 mt, nt;
    {
        const dg_i64 tn = (N + C::BN - 1) / C::BN, tm = (M + C::BM - 1) / C::BM, pid = blockIdx.x;
        const dg_i64 per = 8 * tn, first = pid / per * 8, gs = min((dg_i64)8, tm - first);
        mt = first + pid % per % gs;
        nt = pid % per / gs;
    }
    const dg_i64 n0 = nt * C::BN, m0 = mt * C::BM;
    const int g = lane >> 2, q = lane & 3;

    float acc[C::FN][C::FM][4];
#pragma unroll
    for (int i = 0; i < C::FN; ++i) {
        const dg_i64 na = n0 + (wn * C::FN + i) * 16 + g;
        const float b0 = bias != nullptr && na < N ? epi::tc_start(bias, na) : 0.0f;
        const float b1 = bias != nullptr && na + 8 < N ? epi::tc_start(bias, na + 8) : 0.0f;
#pragma unroll
        for (int j = 0; j < C::FM; ++j) {
            acc[i][j][0] = b0;
            acc[i][j][1] = b0;
            acc[i][j][2] = b1;
            acc[i][j][3] = b1;
        }
    }

    const dg_i64 KT = (K + C::BK - 1) / C::BK;
    const Loader<C> ld(X, ldx, V, E, M, N, K, m0, n0, tid);
#pragma unroll
    for (int s = 0; s < C::STAGES - 1; ++s) {
        if (s < KT) ld.load(smem + s * C::STAGE, s);
        cp_async_commit();
    }
    for (dg_i64 kt = 0; kt < KT; ++kt) {
        cp_async_wait<C::STAGES - 2>();
        __syncthreads();
        {
            const dg_i64 nk = kt + C::STAGES - 1;
            if (nk < KT) ld.load(smem + (nk % C::STAGES) * C::STAGE, nk);
            cp_async_commit();
        }
        const unsigned char* st = smem + (kt % C::STAGES) * C::STAGE;
        const unsigned char* sv = st;
        const unsigned char* sx = st + C::VBYTES;
        const dg_u32* se = reinterpret_cast<const dg_u32*>(st + C::VBYTES + C::XBYTES);
#pragma unroll
        for (int s = 0; s < C::EW; ++s) {
            if (kt * C::BK + s * 32 >= K) break;  // a step wholly past K is not taken
            dg_u32 a[C::FN][4], e[C::FN], b[C::FM][4];
#pragma unroll
            for (int i = 0; i < C::FN; ++i) {
                const int rb = (wn * C::FN + i) * 16;
                const int r = rb + (lane & 7) + 8 * ((lane >> 3) & 1), c = 2 * s + (lane >> 4);
                ldsm_x4(a[i], sv + r * C::VROW + swz(r, c, C::VROW) * 16);
                const dg_u32 w0 = se[(rb + g) * C::EW + s], w1 = se[(rb + g + 8) * C::EW + s];
                e[i] = __byte_perm(w0, w1, (lane & 1) ? 0x7632 : 0x5410);
            }
#pragma unroll
            for (int j = 0; j < C::FM; ++j) {
                const int r = (wm * C::FM + j) * 8 + (lane & 7), c = 4 * s + (lane >> 3);
                ldsm_x4(b[j], sx + r * C::XROW + swz(r, c, C::XROW) * 16);
            }
#pragma unroll
            for (int j = 0; j < C::FM; ++j) {
#pragma unroll
                for (int i = 0; i < C::FN; ++i) mma_sp<IN>(acc[i][j], a[i], b[j], e[i]);
            }
        }
    }
    cp_async_wait<0>();

    // The epilogue, element by element: acc[i][j][v] is Y[m][n] with
    // n = row g (+8 for v >= 2) of fragment i, m = column 2q + (v & 1) of j.
#pragma unroll
    for (int i = 0; i < C::FN; ++i) {
#pragma unroll
        for (int j = 0; j < C::FM; ++j) {
#pragma unroll
            for (int v = 0; v < 4; ++v) {
                const dg_i64 n = n0 + (wn * C::FN + i) * 16 + g + 8 * (v >> 1);
                const dg_i64 m = m0 + (wm * C::FM + j) * 8 + 2 * q + (v & 1);
                if (n < N && m < M) epi::mm_finish<OUT>(acc[i][j][v], act, Y, m * ldy + n, aux, mask, m * ldaux + n);
            }
        }
    }
}

}  // namespace sp24

// Y = epilogue(X · W (+ bias)) over the compressed W (V, E); act is an
// epi::ACT_* code (none, ReLU or GELU); aux (GELU) and mask (ReLU) are null
// unless the epilogue writes them. Grid: ceil(N/BN)·ceil(M/BM) blocks; block
// CFG::THREADS; dynamic shared memory CFG::SMEM.
#define DETGEMM_SP24_ENTRY(NAME, IN, OUT, CFG)                                                                  \
    DETGEMM_KERNEL void __launch_bounds__(CFG::THREADS, CFG::MINB)                                              \
        NAME(const dg_u16* X, dg_i64 ldx, const dg_u16* V, const dg_u32* E, void* Y, dg_i64 ldy, const float* bias, \
             void* aux, unsigned char* mask, dg_i64 ldaux, int act, dg_i64 M, dg_i64 N, dg_i64 K) {              \
        sp24::forward<IN, OUT, CFG>(X, ldx, V, E, Y, ldy, bias, aux, mask, ldaux, act, M, N, K);               \
    }

#include "zgemm_sp24_entries.cuh"
