// gemm_rows_tma.cu: the IEEE plan for Forward and dX with at most 16 rows
// on Hopper, every slab of a column strip in one block, so the fold needs no
// workspace, no arrival counter and no second pass.
//
// gemm_rows_fused.cu spreads the slabs of a column run over blocks (a grid
// of column runs x slabs) and has the last block to arrive fold the run's
// partials through global memory: its tail (partials out, fence, atomic,
// fence, partials back) is serial and kept the call well above a device
// copy of the same bytes (bench/NOTES-kernels.md). Here a
// block owns BN = 32 columns of the output over the WHOLE reduction: its
// producer warp streams W's slab boxes (the rows of x for that slab riding
// along) with TMA into a ring, consumer warps compute the slabs (each slab
// one chain per element, from +0, in ascending r, exactly the plan's), the
// slab results meet in shared memory, and the block folds them in slab
// order: y = p_0, y = y + p_s for s = 1..S-1, then + bias when there is
// one, one rounding at the store. Same bits as every other IEEE kernel (the
// chains and the fold are the plan's; which warp computes a slab, and in
// which order the slabs are computed, change nothing).
//
// Block shapes (Cfg): MR = 1 or 4 rows, one consumer warp a ring slot,
// lane l owning column j0 + l; MR = 16, two warps a slot, eight rows each,
// "paired" (slab16); f32 at MR = 16 stages each slab in two halves, each
// its own slot; one row of 16-bit inputs over more strips than SMs takes a
// shallow ring (WAVES) so that three blocks share an SM.
//
// nn (Forward, W[K,N]): one box of the slab's rows x 32 columns, the lanes'
// reads one 128-byte (f32) or 64-byte row of it, conflict-free. nt (dX,
// W[N,K] read as its transpose, the reduction contiguous): boxes of 32 rows
// x 128 bytes with TMA's 128-byte swizzle, each lane reading 16 bytes (4 or
// 8 steps) of its own row, conflict-free; nt blocks start at slab blockIdx.x
// mod S. x reads are one address for a warp or half-warp (a broadcast).
// The last slab's short tail runs exactly its len terms (TMA zero-fills the
// box past the matrix, but a padding term 0*0 would turn a -0 chain into
// +0).
//
// TMA and the mbarrier transaction count need sm_90: the family is built
// for sm_90a only. The host (gemm/rows_tma.go) takes it for Forward and dX
// with M <= 16 where the operands suit TMA (16-byte aligned bases and row
// strides), the slabs fit the block (S <= MAXS) and its rule says the
// kernel wins (rowsTMA).
//detgemm:only sm_90a
#include "prelude.cuh"
#include "tc_common.cuh"
#include "tma.cuh"
#include "raw.cuh"
#include "epilogue.cuh"

namespace rowst {

constexpr int SLAB = 256;
constexpr int BN = 32;        // columns a block: a lane each

// Element codes shared with the Go dispatcher (as gemm_rows.cu's).
using dgraw::F32;
using dgraw::BF16;
using dgraw::F16;

using dgraw::raw_of;  // raw.cuh
using dgraw::widen;

// Sixteen bytes of staged values (4 f32 or 8 16-bit steps), widened: one
// shared-memory read, 16-byte aligned.
template <int DT>
DETGEMM_INLINE void widen16(const typename raw_of<DT>::type* p, float (&v)[16 / sizeof(typename raw_of<DT>::type)]) {
    const uint4 q = *reinterpret_cast<const uint4*>(p);
    const dg_u32 u[4] = {q.x, q.y, q.z, q.w};
    if constexpr (DT == F32) {
#pragma unroll
        for (int i = 0; i < 4; ++i) v[i] = __uint_as_float(u[i]);
    } else {
#pragma unroll
        for (int i = 0; i < 4; ++i) {
            v[2 * i] = widen<DT>((dg_u16)(u[i] & 0xffffu));
            v[2 * i + 1] = widen<DT>((dg_u16)(u[i] >> 16));
        }
    }
}

// Four consecutive staged x values (steps r..r+3 of one row), widened: one
// shared-memory read for the warp (a broadcast), 16- or 8-byte aligned.
template <int DT>
DETGEMM_INLINE void widen4(const typename raw_of<DT>::type* p, float (&v)[4]) {
    if constexpr (DT == F32) {
        const float4 q = *reinterpret_cast<const float4*>(p);
        v[0] = q.x, v[1] = q.y, v[2] = q.z, v[3] = q.w;
    } else {
        const uint2 q = *reinterpret_cast<const uint2*>(p);
        v[0] = widen<DT>((dg_u16)(q.x & 0xffffu)), v[1] = widen<DT>((dg_u16)(q.x >> 16));
        v[2] = widen<DT>((dg_u16)(q.y & 0xffffu)), v[3] = widen<DT>((dg_u16)(q.y >> 16));
    }
}

// Shared memory: 1 KiB of slack to align the ring, the ring (each stage a
// W box of SLAB rows x BN columns, then an x box of MR rows x SLAB), the
// slab results [MAXS][MR][BN] f32, then full[STAGES] and empty[STAGES].
// STAGES slab boxes in flight: f32 6 of 33 KiB (MR = 1) or 5 of 36 KiB
// (MR = 4); 16-bit 10 of 16.5 KiB or 8 of 18 KiB.
// One consumer warp a stage (two at MR = 16): the ring's fill q (slab
// slab_of(q), see strip) goes to slot q % STAGES and warp q % STAGES
// computes it, so each warp meets its slot's phases in order
// (an mbarrier parity wait cannot tell a phase two ahead from one behind,
// so a warp must never wait on a slot whose previous fill it has not
// seen). The Go side computes the same sizes (rowsTMASharedBytes,
// rowsTMAThreads).
template <int DT, int MR, bool WAVES = false>
struct Cfg {
    typedef typename raw_of<DT>::type Raw;
    static constexpr int ES = (int)sizeof(Raw);
    // MR = 16 runs "paired" (slab16 below): a warp's two half-warps take
    // its even and odd rows, two columns a lane; x comes in one plain box a
    // slot (XROW bytes a row). f32 slabs come in two halves of SUB = 128 steps,
    // each its own ring slot: a group of consumer warps computes a slab's
    // second half while its first half's slot refills (with one slot a
    // group, a group waited a whole refill after every slab); 16-bit was
    // slower in halves, so it keeps whole slabs (bench/NOTES-kernels.md).
    static constexpr bool PAIRED = MR == 16;
    static constexpr int HALVES = PAIRED && ES == 4 ? 2 : 1;  // ring slots a slab
    static constexpr int SUB = SLAB / HALVES;      // steps a slot
    // WAVES (16-bit, MR = 1): a ring of four slots (69 KiB), so that three
    // blocks share an SM and a grid of more strips than SMs runs as one wave;
    // where the strips fit one wave anyway the deep ring is faster
    // (bench/NOTES-kernels.md).
    static constexpr int GROUPS = WAVES ? 4 : MR == 16 ? (ES == 4 ? 4 : 6) : ES == 4 ? (MR == 1 ? 6 : 5) : (MR == 1 ? 10 : 8);
    static constexpr int STAGES = GROUPS * HALVES;  // ring slots
    static constexpr int WPS = MR == 16 ? 2 : 1;    // consumer warps a group, each RW of the rows
    static constexpr int RW = MR / WPS;
    static constexpr int MAXS = MR == 16 ? 16 : 32;  // slabs a block folds: R <= 4096 or 8192
    static constexpr int WARPS = GROUPS * WPS;       // consumer warps
    static constexpr int CONSUMERS = WARPS * 32;
    static constexpr int THREADS = CONSUMERS + 32;  // and one producer warp
    static constexpr int W_BYTES = SUB * BN * ES;
    static constexpr int X_BYTES = MR * SUB * ES;
    // Stages start on 1 KiB: the nt boxes' 128-byte swizzle follows the
    // address bits, so its pattern must restart at every box.
    static constexpr int STAGE_BYTES = (W_BYTES + X_BYTES + 1023) / 1024 * 1024;
    static constexpr int VE = 16 / ES;          // elements a 16-byte read
    static constexpr int BOXE = 128 / ES;       // nt: reduction steps a W box row (128 bytes)
    static constexpr int BOXES = SUB / BOXE;    // nt: W boxes a slot, 32 rows x 128 bytes each
    static constexpr int XROW = SUB * ES;                 // paired: one x row of a slot, unswizzled
    static constexpr int PART_BYTES = MAXS * MR * BN * 4;  // the slab results [MAXS][MR][BN]
    static constexpr int SMEM = 1024 + STAGES * STAGE_BYTES + PART_BYTES + 2 * STAGES * 8;
    static_assert(W_BYTES % 1024 == 0 && BOXES * 32 * 128 == W_BYTES, "nt boxes stay on the swizzle's 1 KiB period");
    static_assert(SMEM <= 227 * 1024, "fits an H100/H200 block");
    static_assert(!WAVES || (MR == 1 && ES == 2), "the many-wave ring is for one row of 16-bit inputs");
    static constexpr int MINB = WAVES ? 3 : 1;  // blocks an SM
};

// slab16: one warp's share of a slab of a 16-row block: rows mw .. mw + 7
// (two warps a slab). Half-warp h owns rows mw + 2i + h (i = 0..3); lane
// l's columns are c0 = 2(l % 16) and c0 + 1 for nn (a W row's neighbours,
// one 8- or 4-byte read that the halves share), or l % 16 and l % 16 + 16
// for nt (rows of W boxes spread over every bank). x is one plain box of
// SUB steps x 16 rows a slot: each half-warp reads one 16-byte chunk of its
// row (a broadcast), which costs the warp two shared-memory wavefronts
// whether the two rows' chunks share banks or not (a 16-byte read is served
// a half-warp at a time), so x needs no swizzle, and one copy a slot
// instead of one a 128-byte box row (bench/NOTES-kernels.md). Per VE steps a
// warp reads 4 x chunks and 2-4 W words for 8 VE FMAs a lane. It runs one ring
// slot, half a slab: the caller starts acc at +0 for the slab's first
// half and carries it through the second, so each chain is the plan's
// (from +0, ascending r); a short last slot runs exactly its len terms.
template <int DT, bool NT, class K>
DETGEMM_INLINE void slab16(const unsigned char* stage, dg_i64 left, int lane, int mw, float (&acc)[K::RW / 2][2]) {
    typedef typename K::Raw Raw;
    constexpr int VE = K::VE, BOXE = K::BOXE, ES = K::ES;
    const int h = lane >> 4, q = lane & 15;
    const int c0 = NT ? q : 2 * q, c1 = NT ? q + 16 : 2 * q + 1;
    const unsigned char* xs = stage + K::W_BYTES;
    const int len = left < K::SUB ? (int)left : K::SUB;
    constexpr int NI = K::RW / 2;  // rows a half-warp: mw + 2i + h
    // x[m][r]; w(c, r) for column c of the strip (nt: swizzled).
    auto xaddr = [&](int m, int r) { return xs + m * K::XROW + r * ES; };
    auto waddr = [&](int c, int r) {
        return NT ? stage + (r / BOXE) * 4096 + c * 128 + ((((r % BOXE) / VE) ^ (c & 7)) << 4) + (r % VE) * ES
                  : stage + (r * BN + c) * ES;
    };
    int r = 0;
    if (len == K::SUB) {
        // Every read is a per-lane base plus a compile-time offset: the nt
        // swizzle's lane-dependent part (chunk c of row j at c ^ (j % 8)) is
        // folded into a few bases computed once, and the loop is unrolled
        // over two boxes a trip, so the box and the chunk of each read are
        // constants: address arithmetic in the loop cost twice the FMAs'
        // instructions. Not unrolled over the whole slab: the 16-bit code
        // then outgrows the instruction cache (bench/NOTES-kernels.md).
        constexpr int CH = BOXE / VE;     // 16-byte chunks a 128-byte box row
        constexpr int NB = K::SUB / BOXE;  // boxes a slot
        constexpr int UB = NB < 2 ? NB : 2;
        // x: row m = mw + 2i + h, one base a lane.
        static_assert(K::RW == 8, "slab16's x base assumes eight rows a warp");
        const unsigned char* xb = xs + (mw + h) * K::XROW;
        auto xat = [&](int i, int c, int b) { return xb + 2 * i * K::XROW + b * 128 + c * 16; };
        // nt W: column c0's chunk c at c ^ (c0 % 8), a base a chunk; column
        // c1 = c0 + 16 has the same swizzle, 16 rows (2 KiB) further on.
        const unsigned char* wb0[NT ? CH : 1];
        if constexpr (NT) {
#pragma unroll
            for (int c = 0; c < CH; ++c) wb0[c] = stage + c0 * 128 + ((c ^ (c0 & 7)) << 4);
        } else {
            wb0[0] = stage + c0 * ES;
        }
#pragma unroll 1
        for (int b0 = 0; b0 < NB; b0 += UB)
#pragma unroll
        for (int bb = 0; bb < UB; ++bb) {
            const int b = b0 + bb;
#pragma unroll
            for (int c = 0; c < CH; ++c) {
                const int rr = b * BOXE + c * VE;
                float w0[VE], w1[VE];
                if constexpr (NT) {
                    widen16<DT>(reinterpret_cast<const Raw*>(wb0[c] + b * 4096), w0);
                    widen16<DT>(reinterpret_cast<const Raw*>(wb0[c] + 2048 + b * 4096), w1);
                } else {
#pragma unroll
                    for (int u = 0; u < VE; ++u) {
                        const unsigned char* pw = wb0[0] + (rr + u) * BN * ES;
                        if constexpr (DT == F32) {
                            const float2 v = *reinterpret_cast<const float2*>(pw);
                            w0[u] = v.x, w1[u] = v.y;
                        } else {
                            const dg_u32 v = *reinterpret_cast<const dg_u32*>(pw);
                            w0[u] = widen<DT>((dg_u16)(v & 0xffffu)), w1[u] = widen<DT>((dg_u16)(v >> 16));
                        }
                    }
                }
#pragma unroll
                for (int i = 0; i < NI; ++i) {
                    float xv[VE];
                    widen16<DT>(reinterpret_cast<const Raw*>(xat(i, c, b)), xv);
#pragma unroll
                    for (int u = 0; u < VE; ++u) {
                        acc[i][0] = __fmaf_rn(xv[u], w0[u], acc[i][0]);
                        acc[i][1] = __fmaf_rn(xv[u], w1[u], acc[i][1]);
                    }
                }
            }
        }
    } else {
#pragma unroll 1
        for (; r < len; ++r) {
            const float w0 = widen<DT>(*reinterpret_cast<const Raw*>(waddr(c0, r)));
            const float w1 = widen<DT>(*reinterpret_cast<const Raw*>(waddr(c1, r)));
#pragma unroll
            for (int i = 0; i < NI; ++i) {
                const float xv = widen<DT>(*reinterpret_cast<const Raw*>(xaddr(mw + 2 * i + h, r)));
                acc[i][0] = __fmaf_rn(xv, w0, acc[i][0]);
                acc[i][1] = __fmaf_rn(xv, w1, acc[i][1]);
            }
        }
    }
}

// slab16's results, a slab's chains, to the block's slab results.
template <bool NT, class K>
DETGEMM_INLINE void slab16_store(float (*part)[BN], const float (&acc)[K::RW / 2][2], int lane, int mw) {
    const int h = lane >> 4, q = lane & 15;
    const int c0 = NT ? q : 2 * q, c1 = NT ? q + 16 : 2 * q + 1;
#pragma unroll
    for (int i = 0; i < K::RW / 2; ++i) {
        part[mw + 2 * i + h][c0] = acc[i][0];
        part[mw + 2 * i + h][c1] = acc[i][1];
    }
}

template <int DT, int DTOUT, int MR, bool NT, bool WAVES, class Act = epi::Identity>
DETGEMM_INLINE void strip(const tma::tensor_map& tmX, const tma::tensor_map& tmW, void* DETGEMM_RESTRICT C,
                          const float* DETGEMM_RESTRICT bias, dg_i64 M, dg_i64 N, dg_i64 R, dg_i64 ldc, dg_i64 w3d) {
    typedef Cfg<DT, MR, WAVES> K;
    typedef typename K::Raw Raw;
    constexpr int STAGES = K::STAGES;
    extern __shared__ unsigned char smem_raw[];
    dg_u32 dyn;
    asm volatile("mov.u32 %0, %%dynamic_smem_size;" : "=r"(dyn));
    if (dyn < (dg_u32)K::SMEM) __trap();  // the host launched with the wrong size

    const dg_u32 base = tc::smem_addr(smem_raw);
    const dg_u32 ring = (base + 1023u) & ~1023u;
    unsigned char* ring_p = smem_raw + (ring - base);
    float (*part)[MR][BN] = reinterpret_cast<float (*)[MR][BN]>(ring_p + STAGES * K::STAGE_BYTES);
    const dg_u32 bars = ring + STAGES * K::STAGE_BYTES + K::PART_BYTES;  // full[s] at +8s, empty[s] at +8(STAGES+s)

    const int tid = threadIdx.x;
    const int lane = tid & 31, warp = tid >> 5;
    const dg_i64 j0 = (dg_i64)blockIdx.x * BN;
    const dg_i64 m0 = (dg_i64)blockIdx.y * MR;
    const int S = (int)((R + SLAB - 1) / SLAB);  // 1..K::MAXS (the host checks)

    // The producer thread sets up the barriers and issues the first
    // STAGES slabs before the block barrier, so those copies are in flight
    // while the other warps reach it (the consumers touch the barriers only
    // after it).
    const bool producer = warp == K::WARPS && lane == 0;
    const int UF = S * K::HALVES;                // the ring's fills
    // Fill u of the ring holds half u % HALVES of slab slab_of(u / HALVES)
    // (with HALVES = 1, slab slab_of(u)). nt blocks take their slabs
    // in a rotated order, from blockIdx.x % S on, so that the grid's reads
    // at any moment spread over the whole of W rather than one 1 KiB column
    // of every row; nn is not rotated, its blocks would leave the rows they
    // share (bench/NOTES-kernels.md).
    // The fold is in slab order whatever the order the chains ran in.
    const int rot = NT ? (int)(blockIdx.x % (unsigned)S) : 0;
    auto slab_of = [&](int q) { return q + rot < S ? q + rot : q + rot - S; };
    auto issue = [&](int u) {
        const int slot = u % STAGES;
        const int r0 = slab_of(u / K::HALVES) * SLAB + (u % K::HALVES) * K::SUB;
        const dg_u32 full = bars + 8 * slot, dst = ring + slot * K::STAGE_BYTES;
        if ((dg_i64)r0 >= R) {
            tc::mbar_arrive(full);  // the missing half of a short slab: the phase still turns
            return;
        }
        tma::mbar_expect_tx(full, K::W_BYTES + K::X_BYTES);
        if constexpr (NT) {
            // w3d: the map reads W as (128 bytes, row, 128-byte chunk), so one
            // copy brings a slot's BOXES boxes (the host builds it where R is
            // a whole number of chunks; otherwise one copy a box).
            if (w3d != 0) {
                tma::load_3d(dst, tmW, 0, (int)j0, r0 / K::BOXE, full);
            } else {
#pragma unroll 1
                for (int b = 0; b < K::BOXES; ++b) tma::load_2d(dst + b * 4096, tmW, r0 + b * K::BOXE, (int)j0, full);
            }
        } else {
            tma::load_2d(dst, tmW, (int)j0, r0, full);
        }
        tma::load_2d(dst + K::W_BYTES, tmX, r0, (int)m0, full);
    };
    if (producer) {
        tma::prefetch_map(tmX);
        tma::prefetch_map(tmW);
#pragma unroll
        for (int s = 0; s < STAGES; ++s) {
            tc::mbar_init(bars + 8 * s, 1);                      // the producer's expect_tx arrival
            tc::mbar_init(bars + 8 * (STAGES + s), 32 * K::WPS);  // the lanes of the slot's warps
        }
        tma::fence_barrier_init();
        dg_grid_dependency_wait();  // launched overlapped: the kernel ahead has finished
        for (int u = 0; u < UF && u < STAGES; ++u) issue(u);
    }
    dg_grid_dependency_wait();  // every thread, before the fold's global reads and stores
    __syncthreads();              // the mbarriers exist

    if (warp == K::WARPS) {
        // The producer: fill q to slot q % STAGES once the slot's warp has
        // released its previous fill. Coordinates fit 32 bits
        // (the host checks the extents).
        if (producer) {
            if constexpr (K::HALVES == 1) {
                for (int u = STAGES; u < UF; ++u) {
                    tc::mbar_wait(bars + 8 * (STAGES + u % STAGES), (dg_u32)(u / STAGES - 1) & 1u);
                    issue(u);
                }
            } else {
                // Halves are released out of fill order (every group frees
                // its first half before any frees its second): refill each
                // slot as soon as it is free, polling them in turn.
                int next[STAGES];
#pragma unroll
                for (int k = 0; k < STAGES; ++k) next[k] = k + STAGES;
                for (int left = UF - STAGES; left > 0;) {
#pragma unroll
                    for (int k = 0; k < STAGES; ++k) {
                        const int u = next[k];
                        if (u < UF && tc::mbar_test(bars + 8 * (STAGES + k), (dg_u32)(u / STAGES - 1) & 1u)) {
                            issue(u);
                            next[k] = u + STAGES;
                            --left;
                        }
                    }
                }
            }
        }
    } else {
        constexpr int RW = K::RW;
        const int slot = warp / K::WPS, mw = (warp % K::WPS) * RW;  // this warp's slot and first row
        // A warp whose rows all lie past M only keeps the ring turning.
        const bool live = m0 + mw < M;
        if constexpr (K::PAIRED) {
            // Group g (= slot here) computes slab fills q = g, g + GROUPS,
            // ...; their halves sit in slots HALVES g .. HALVES g + HALVES - 1,
            // the group's own, so every warp meets its slots' phases in order.
            for (int q = slot; q < S; q += K::GROUPS) {
                const int s = slab_of(q);
                float acc[RW / 2][2];
#pragma unroll
                for (int i = 0; i < RW / 2; ++i) acc[i][0] = acc[i][1] = 0.0f;  // +0: the slab's chains
#pragma unroll 1
                for (int hf = 0; hf < K::HALVES; ++hf) {
                    const int u = K::HALVES * q + hf, us = u % STAGES;
                    const dg_i64 left = R - (dg_i64)s * SLAB - hf * K::SUB;
                    tc::mbar_wait(bars + 8 * us, (dg_u32)(u / STAGES) & 1u);
                    if (left > 0) slab16<DT, NT, K>(ring_p + us * K::STAGE_BYTES, left, lane, mw, acc);
                    tc::mbar_arrive(bars + 8 * (STAGES + us));  // the slot back to the producer
                }
                slab16_store<NT, K>(part[s], acc, lane, mw);
            }
        } else {
        for (int q = slot; q < S; q += STAGES) {
            tc::mbar_wait(bars + 8 * slot, (dg_u32)(q / STAGES) & 1u);
            const int s = slab_of(q);
            if (!live) {
                tc::mbar_arrive(bars + 8 * (STAGES + slot));
                continue;
            }
            const Raw* w = reinterpret_cast<const Raw*>(ring_p + slot * K::STAGE_BYTES);
            const Raw* x = reinterpret_cast<const Raw*>(ring_p + slot * K::STAGE_BYTES + K::W_BYTES) + mw * SLAB;
            const dg_i64 left = R - (dg_i64)s * SLAB;
            const int len = left < SLAB ? (int)left : SLAB;
            float acc[RW];
#pragma unroll
            for (int m = 0; m < RW; ++m) acc[m] = 0.0f;
            int r = 0;
            if (MR == 1 && len == SLAB) {
                // One row: the whole slab unrolled, so the reads run ahead of
                // the chain and the slab costs little more than its 256
                // dependent FMAs; a loop trip at a time (reads, then four
                // dependent FMAs), the last slab's chain ran long after the
                // stream had ended (bench/NOTES-kernels.md).
                float wv[SLAB], xv[SLAB];
#pragma unroll
                for (int c = 0; c < SLAB / K::VE; ++c) {
                    if constexpr (NT) {
                        const int b = c * K::VE / K::BOXE, cc = (c * K::VE % K::BOXE) / K::VE;
                        widen16<DT>(reinterpret_cast<const Raw*>(ring_p + slot * K::STAGE_BYTES + b * 4096 + lane * 128 + ((cc ^ (lane & 7)) << 4)),
                                    *reinterpret_cast<float(*)[K::VE]>(wv + c * K::VE));
                    } else {
#pragma unroll
                        for (int u = 0; u < K::VE; ++u) wv[c * K::VE + u] = widen<DT>(w[(c * K::VE + u) * BN + lane]);
                    }
                    widen16<DT>(x + c * K::VE, *reinterpret_cast<float(*)[K::VE]>(xv + c * K::VE));
                }
#pragma unroll
                for (int u = 0; u < SLAB; ++u) acc[0] = __fmaf_rn(xv[u], wv[u], acc[0]);
            } else if (NT && len == SLAB) {
                // W[j][r] in 128-byte box rows: lane j's 16-byte run of VE
                // steps is chunk c of its row, stored at chunk c ^ (j & 7)
                // (TMA's 128-byte swizzle), so the warp's reads are
                // conflict-free; x as one VE-step read a row (a broadcast).
#pragma unroll 2
                for (; r < SLAB; r += K::VE) {
                    const int b = r / K::BOXE, c = (r % K::BOXE) / K::VE;
                    float wv[K::VE];
                    widen16<DT>(reinterpret_cast<const Raw*>(ring_p + slot * K::STAGE_BYTES + b * 4096 + lane * 128 +
                                                             ((c ^ (lane & 7)) << 4)),
                                wv);
#pragma unroll
                    for (int m = 0; m < RW; ++m) {
                        float xv[K::VE];
                        widen16<DT>(x + m * SLAB + r, xv);
#pragma unroll
                        for (int u = 0; u < K::VE; ++u) acc[m] = __fmaf_rn(xv[u], wv[u], acc[m]);
                    }
                }
            } else if (len == SLAB) {
                // Four steps at a time: x as one 4-step read a row (the
                // shared-memory reads, not the FMAs, bound this loop).
#pragma unroll 2
                for (; r < SLAB; r += 4) {
                    float wv[4];
#pragma unroll
                    for (int u = 0; u < 4; ++u) wv[u] = widen<DT>(w[(r + u) * BN + lane]);
#pragma unroll
                    for (int m = 0; m < RW; ++m) {
                        float xv[4];
                        widen4<DT>(x + m * SLAB + r, xv);
#pragma unroll
                        for (int u = 0; u < 4; ++u) acc[m] = __fmaf_rn(xv[u], wv[u], acc[m]);
                    }
                }
            } else {
#pragma unroll 1
                for (; r < len; ++r) {
                    const int b = r / K::BOXE, c = (r % K::BOXE) / K::VE;
                    const float wv = widen<DT>(NT ? *reinterpret_cast<const Raw*>(ring_p + slot * K::STAGE_BYTES + b * 4096 + lane * 128 +
                                                                                  ((c ^ (lane & 7)) << 4) + (r % K::VE) * K::ES)
                                                  : w[r * BN + lane]);
#pragma unroll
                    for (int m = 0; m < RW; ++m) acc[m] = __fmaf_rn(widen<DT>(x[m * SLAB + r]), wv, acc[m]);
                }
            }
            tc::mbar_arrive(bars + 8 * (STAGES + slot));  // the slot back to the producer
#pragma unroll
            for (int m = 0; m < RW; ++m) part[s][mw + m][lane] = acc[m];
        }
        }
    }
    __syncthreads();  // every slab's results are in part
    // Only the fold is left: the next grid may take the SMs this one leaves.
    // (Triggered at the start instead, the next grid's blocks wait on SMs
    // this grid holds idle: bench/NOTES-kernels.md.)
    dg_launch_dependents();

    // The fold, in slab order; rows past M and columns past N are not stored.
    for (int u = tid; u < MR * BN; u += K::THREADS) {
        const int m = u / BN, l = u % BN;
        const dg_i64 i = m0 + m, j = j0 + l;
        if (i < M && j < N) {
            // The partials' loads first, eight at a time, then the additions
            // in slab order.
            float y = part[0][m][l];
            int s = 1;
            for (; s + 8 <= S; s += 8) {
                float q[8];
#pragma unroll
                for (int u = 0; u < 8; ++u) q[u] = part[s + u][m][l];
#pragma unroll
                for (int u = 0; u < 8; ++u) y = epi::fold_add(y, q[u]);
            }
            for (; s < S; ++s) y = epi::fold_add(y, part[s][m][l]);
            if (bias != nullptr) y = epi::bias_add(y, bias[j]);
            epi::store<DTOUT>(C, i * ldc + j, epi::act<Act>(y));
        }
    }
}

}  // namespace rowst

// Entry points: detgemm_rowst_{nn,nt}_{in}_{out}_m{1,4,16}, and _m1w, the
// many-wave ring of one row of 16-bit inputs. Arguments: the TMA
// maps of X or dY (boxes of a slot's steps, 256 or 128 for f32 at MR = 16,
// x MR rows) and W (nn: 32
// columns x 256 rows; nt: 128 bytes of the reduction x 32 rows, 128-byte
// swizzle; with w3d != 0 the same boxes as (128 bytes, 32 rows, BOXES
// chunks), one copy a slot), built by the engine for this call, C, bias
// (nullable), M, N, R, ldc, w3d; grid (column strips, row groups of MR). MR = 1 for one row (no
// padding rows to compute), 4 for two to four.
#define DETGEMM_ROWSTW_ENTRY(NAME, DT, DTOUT, MR, NT, WAVES)                                             \
    DETGEMM_KERNEL void __launch_bounds__(rowst::Cfg<DT, MR, WAVES>::THREADS, rowst::Cfg<DT, MR, WAVES>::MINB) \
        NAME(const __grid_constant__ tma::tensor_map tmX, const __grid_constant__ tma::tensor_map tmW,    \
             void* C, const float* bias, dg_i64 M, dg_i64 N, dg_i64 R, dg_i64 ldc, dg_i64 w3d) {            \
        rowst::strip<DT, DTOUT, MR, NT, WAVES>(tmX, tmW, C, bias, M, N, R, ldc, w3d);                      \
    }
#define DETGEMM_ROWST_ENTRY(NAME, DT, DTOUT, MR, NT) DETGEMM_ROWSTW_ENTRY(NAME, DT, DTOUT, MR, NT, false)
#include "zgemm_rows_tma_entries.cuh"
