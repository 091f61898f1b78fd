// gemm_rows_fused.cu: the one-launch rows path ("fused") for few rows: the
// chains of gemm_rows.cu, the fold in the same kernel.
//
// gemm_rows.cu's partials kernel and gemm_fold are two launches; at the
// sizes the rows strategy is for (M <= 32, little work) the second launch
// and the tail between them are a large share of the call
// (bench/NOTES-kernels.md). Here each
// block computes its slab's chains exactly as gemm_rows.cu does, writes the partials to
// the same workspace, and then bumps an arrival counter of its column run
// and row group; the block that arrives last (whichever it is) folds the S
// partials of that run in slab order — y = p_0, y = y + p_s for s = 1..S-1,
// + bias, one RNE store — and resets the counter to zero for the next call.
// The fold's order is fixed, so which block folds never changes a bit.
// The counters live in their own engine buffer, zeroed once when it is
// allocated (gemm/workspace.go); every launch leaves them zero again.
//
// Data movement differs from gemm_rows.cu's:
//  - W is streamed into shared memory by 16-byte cp.async copies,
//    STAGES - 1 chunks in flight a block and no registers held for them
//    (gemm_rows.cu holds its prefetch in registers: at M = 1 that limited
//    the bytes in flight). So the path needs W 16-byte aligned with
//    ldb * size % 16 == 0; the host takes the two-launch path otherwise.
//    At MR = 4 two producer warps do the copying, into a ring of stages
//    turned by mbarriers, while the compute warps only wait and compute.
//  - each thread owns 4 columns and MT rows (a 4 x MT register tile), so
//    at M = 16 a W value read from shared memory feeds 4 FMAs and an x
//    read (a float4 over 4 steps) feeds 16. nn: the 4 columns are
//    consecutive (one 16- or 8-byte shared read a step); nt: they are CT
//    apart, so that a warp's 16-byte reads along r hit different rows of
//    the staged tile, whose stride (KC elements + 16 bytes) is an odd
//    number of 16-byte units: conflict-free.
// The host (gemm/launch.go, rowsOneLaunch) takes this path where it
// measured faster than the two launches: every MR >= 16; at MR = 4 16-bit
// inputs, and f32 forward while its blocks fit the GPU at once
// (bench/NOTES-simt.md, rounds 4 and 7).
#include "prelude.cuh"
#include "rows_common.cuh"
#include "tc_common.cuh"  // the sm_80 mbarrier forms
#include "async_copy.cuh"
#include "epilogue.cuh"

namespace rowsf {

using rowsk::SLAB;  // rows_common.cuh

// Column threads a block: 64 at MR = 4 and 16, so that 4096 columns make
// 16 runs of 256 columns, whose W rows are 1 KiB runs (f32) streamed in
// 16 KiB chunks; 32 at MR = 32, whose x rows leave room for 8 KiB chunks
// only.
constexpr int col_threads(int mr) { return mr == 32 ? 32 : 64; }
// Rows a thread: 8 at MR = 32, else 4.
constexpr int rows_per_thread(int mr) { return mr == 32 ? 8 : 4; }
// Producer warps: two at MR = 4, where the compute threads have little to
// do (one row group, mostly one live row) and the call is the stream of W;
// there a block whose own threads copy between block barriers was slower
// (bench/NOTES-simt.md, round 7). None for larger MR.
constexpr int producer_warps(int mr) { return mr == 4 ? 2 : 0; }
// The block: MR / MT row groups of col_threads columns, then the producers.
constexpr int block_threads(int mr) { return mr / rows_per_thread(mr) * col_threads(mr) + 32 * producer_warps(mr); }

// Geometry of one configuration. With PW = 0 every thread copies W and the
// stages turn at a block barrier; with PW > 0 the PW producer warps fill a
// ring of the stages, each with a "full" mbarrier (the producers' copies
// have landed) and an "empty" one (the compute threads have read it), and
// no block barrier turns it. The Go dispatcher mirrors THREADS, JT and
// SMEM (rowsFusedThreads, rowsFusedCols, rowsFusedSharedBytes); the kernel
// traps if launched with less shared memory.
template <int DT, int MR, bool NT>
struct Cfg {
    typedef typename rowsk::raw_of<DT>::type Raw;
    static constexpr int ES = (int)sizeof(Raw);
    static constexpr int VE = 16 / ES;                     // elements per 16-byte copy
    static constexpr int G = VE;                           // steps per unrolled group
    static constexpr int MT = rows_per_thread(MR);         // rows per thread
    static constexpr int RT = MR / MT;                     // threads along the rows
    static constexpr int CT = col_threads(MR);             // threads along the columns
    static constexpr int CONS = RT * CT;                   // threads that compute
    static constexpr int PW = producer_warps(MR);
    static constexpr int THREADS = block_threads(MR);
    static_assert(THREADS == CONS + 32 * PW, "block_threads counts the row groups and producers");
    static constexpr int COPIERS = PW ? 32 * PW : CONS;    // threads that copy W
    static constexpr int JT = 4 * CT;                      // columns per block
    static constexpr int STAGE_BYTES = MR == 32 ? 8192 : 16384;
    static constexpr int KC = STAGE_BYTES / (JT * ES);     // steps per staged chunk
    static constexpr int LDT = KC + VE;                    // nt: row stride (elements)
    static constexpr int STAGE_ELEMS = NT ? JT * LDT : KC * JT;
    static constexpr int STAGES = 4;                       // PW = 0: chunks in flight + 1; else ring slots
    static constexpr int XLD = SLAB + 4;                   // x row stride (floats)
    static constexpr int XS_BYTES = MR * XLD * 4;
    static constexpr int LPR = 32 / RT;                    // lanes a row group in a warp
    static constexpr int BARS = PW ? 2 * STAGES * 8 : 0;   // full and empty mbarriers
    static constexpr int SMEM = XS_BYTES + STAGES * STAGE_ELEMS * ES + BARS;
    static_assert(SMEM <= 99 * 1024, "fits a block on every supported GPU");
    static constexpr int COPIES = STAGE_BYTES / 16 / COPIERS;  // 16-byte copies a thread a chunk
    static_assert(32 % RT == 0 && CONS % 32 == 0, "a warp holds whole row groups");
    static_assert(SLAB % KC == 0 && KC % G == 0, "chunks tile a slab, groups tile a chunk");
    static_assert((STAGE_BYTES / 16) % COPIERS == 0, "copies split evenly over the threads");
    static_assert((KC * ES / 16) % 2 == 0, "nt: the padded row stride is an odd number of 16-byte units");
    static_assert((XS_BYTES + STAGES * STAGE_ELEMS * ES) % 8 == 0, "the mbarriers are 8-byte aligned");
};

// W's chunks are copied with the L2::256B hint (async_copy.cuh): L2 fetches
// whole 256-byte sector groups of the streamed W (bench/NOTES-kernels.md).
using dgcp::cp_async_commit;
using dgcp::cp_async_wait;

// Bytes of a 16-byte copy that lie inside the problem: have elements remain.
template <int ES>
DETGEMM_INLINE int copy_bytes(dg_i64 have) {
    return have <= 0 ? 0 : have >= 16 / ES ? 16 : (int)have * ES;
}

// Four consecutive staged elements, widened (nn: a thread's columns at one step).
template <int DT>
DETGEMM_INLINE void widen4(const typename rowsk::raw_of<DT>::type* p, float (&w)[4]) {
    if constexpr (DT == rowsk::F32) {
        const float4 v = *reinterpret_cast<const float4*>(p);
        w[0] = v.x, w[1] = v.y, w[2] = v.z, w[3] = v.w;
    } else {
        const uint2 v = *reinterpret_cast<const uint2*>(p);
        w[0] = rowsk::widen<DT>((dg_u16)(v.x & 0xffffu)), w[1] = rowsk::widen<DT>((dg_u16)(v.x >> 16));
        w[2] = rowsk::widen<DT>((dg_u16)(v.y & 0xffffu)), w[3] = rowsk::widen<DT>((dg_u16)(v.y >> 16));
    }
}

// G consecutive staged elements, widened (nt: one column over G steps).
template <int DT>
DETGEMM_INLINE void widen_g(const typename rowsk::raw_of<DT>::type* p, float (&w)[16 / sizeof(typename rowsk::raw_of<DT>::type)]) {
    if constexpr (DT == rowsk::F32) {
        const float4 v = *reinterpret_cast<const float4*>(p);
        w[0] = v.x, w[1] = v.y, w[2] = v.z, w[3] = v.w;
    } else {
        const uint4 v = *reinterpret_cast<const uint4*>(p);
        const dg_u32 q[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
        for (int i = 0; i < 4; ++i) {
            w[2 * i] = rowsk::widen<DT>((dg_u16)(q[i] & 0xffffu));
            w[2 * i + 1] = rowsk::widen<DT>((dg_u16)(q[i] >> 16));
        }
    }
}

template <int DT, int DTOUT, int MR, bool NT, class Act = epi::Identity>
DETGEMM_INLINE void fused(const void* DETGEMM_RESTRICT A, const void* DETGEMM_RESTRICT B,
                          float* DETGEMM_RESTRICT ws, dg_u32* DETGEMM_RESTRICT ctr, void* DETGEMM_RESTRICT C,
                          const float* DETGEMM_RESTRICT bias, dg_i64 rows, dg_i64 cols, dg_i64 R, dg_i64 lda,
                          dg_i64 ldb) {
    typedef Cfg<DT, MR, NT> K;
    typedef typename K::Raw Raw;
    constexpr int KC = K::KC, G = K::G, MT = K::MT, CT = K::CT, JT = K::JT, STAGES = K::STAGES;
    constexpr int THREADS = K::THREADS, CONS = K::CONS, PW = K::PW;
    extern __shared__ __align__(16) float smem[];
    constexpr int RT = K::RT, XLD = K::XLD;
    float (*xs)[XLD] = reinterpret_cast<float (*)[XLD]>(smem);
    Raw* bs = reinterpret_cast<Raw*>(smem + MR * XLD);

    dg_u32 dyn;
    asm volatile("mov.u32 %0, %%dynamic_smem_size;" : "=r"(dyn));
    if (dyn < (dg_u32)K::SMEM) __trap();  // the host launched with the wrong size

    // A warp covers LPR column quads by RT row groups (8 x 4 at MR >= 16):
    // its W reads are 8 distinct 16-byte words (one shared-memory wavefront,
    // broadcast to the row groups) and its x reads RT words of consecutive
    // rows, whose 260-float stride puts them in different banks (one
    // wavefront). Thread (ct, rt) computes rows rt + RT*m, m < MT.
    const int t = threadIdx.x;
    const int lane = t % 32;
    const int ct = (t / 32) * K::LPR + lane % K::LPR, rt = lane / K::LPR;
    const dg_i64 jb = (dg_i64)blockIdx.x * JT;
    const dg_i64 s = blockIdx.y;
    const dg_i64 m0 = (dg_i64)blockIdx.z * MR;
    const dg_i64 r0 = s * SLAB;
    const int len = R - r0 < SLAB ? (int)(R - r0) : SLAB;
    const int mcount = rows - m0 < MR ? (int)(rows - m0) : MR;
    const Raw* Ap = static_cast<const Raw*>(A);
    const Raw* Bp = static_cast<const Raw*>(B);
    // This thread's column v, relative to jb.
    auto col = [&](int v) { return NT ? ct + v * CT : 4 * ct + v; };

    // Chunk c of the slab into stage buffer c % STAGES, by copier ct0 of
    // COPIERS. Copies past the problem (columns, or steps past len) read
    // nothing and stage zeros.
    auto issue = [&](int c, int ct0) {
        Raw* dst = bs + (c % STAGES) * K::STAGE_ELEMS;
        const int k0 = c * KC;
#pragma unroll
        for (int q = 0; q < K::COPIES; ++q) {
            const int i = ct0 + q * K::COPIERS;
            if (NT) {
                constexpr int VPR = KC / K::VE;  // copies per staged row
                const int jl = i / VPR, kv = (i % VPR) * K::VE;
                const dg_i64 j = jb + jl;
                const int bytes = j < cols ? copy_bytes<K::ES>(len - (k0 + kv)) : 0;
                dgcp::cp_async16_l2(dst + jl * K::LDT + kv, bytes ? Bp + j * ldb + r0 + k0 + kv : Bp, bytes);
            } else {
                constexpr int VPR = JT / K::VE;
                const int kr = i / VPR, jv = (i % VPR) * K::VE;
                const dg_i64 j = jb + jv;
                const int bytes = k0 + kr < len ? copy_bytes<K::ES>(cols - j) : 0;
                dgcp::cp_async16_l2(dst + kr * JT + jv, bytes ? Bp + (r0 + k0 + kr) * ldb + j : Bp, bytes);
            }
        }
    };

    const int chunks = (len + KC - 1) / KC;
    // full[s] at bars + 8s, empty[s] at bars + 8(STAGES + s) (PW > 0).
    const dg_u32 bars = dgcp::smem_addr(bs + STAGES * K::STAGE_ELEMS);
    if constexpr (PW == 0) {
#pragma unroll
        for (int c = 0; c < STAGES - 1; ++c) {
            if (c < chunks) issue(c, t);
            cp_async_commit();
        }
    } else {
        if (t == 0) {
#pragma unroll
            for (int q = 0; q < STAGES; ++q) {
                tc::mbar_init(bars + 8 * q, K::COPIERS);       // every producer thread, when its copies land
                tc::mbar_init(bars + 8 * (STAGES + q), CONS);  // every compute thread, once it has read the slot
            }
        }
        __syncthreads();  // the mbarriers exist
    }

    // Producers (PW > 0): chunk c goes to slot c % STAGES once the compute
    // threads have released that slot's previous chunk (empty phase
    // c / STAGES - 1); each producer's arrival on full fires when its own
    // copies have landed. They then wait for the arrival below.
    if (PW > 0 && t >= CONS) {
        const int pt = t - CONS;
#pragma unroll 1
        for (int c = 0; c < chunks; ++c) {
            const int slot = c % STAGES;
            if (c >= STAGES) tc::mbar_wait(bars + 8 * (STAGES + slot), (dg_u32)(c / STAGES - 1) & 1u);
            issue(c, pt);
            tc::cp_async_arrive(bars + 8 * slot);
        }
        tc::cp_async_wait_all();
    } else {
        // The block's rows of A over the slab, zero outside the problem (the
        // first chunks of W are already in flight), by the compute threads.
        static_assert((MR * SLAB) % CONS == 0, "the rows of A split evenly over the threads");
        {
            constexpr int PERX = MR * SLAB / CONS;
            constexpr int BATCH = PERX < 32 ? PERX : 32;
#pragma unroll 1
            for (int b0 = 0; b0 < PERX; b0 += BATCH) {
                Raw xr[BATCH];
#pragma unroll
                for (int q = 0; q < BATCH; ++q) {
                    const int idx = t + (b0 + q) * CONS, m = idx / SLAB, r = idx % SLAB;
                    xr[q] = (m < mcount && r < len) ? Ap[(m0 + m) * lda + r0 + r] : (Raw)0;
                }
#pragma unroll
                for (int q = 0; q < BATCH; ++q) {
                    const int idx = t + (b0 + q) * CONS;
                    xs[idx / SLAB][idx % SLAB] = rowsk::widen<DT>(xr[q]);
                }
            }
        }
        // Published by the loop's first block barrier (PW = 0), or here by a
        // barrier of the compute threads alone (the producers never wait on it).
        if constexpr (PW > 0) asm volatile("bar.sync 1, %0;\n" ::"n"(CONS) : "memory");

        // Rows this thread computes: with MR = 4 (M <= 4, mostly 1; one row
        // group, so the test is uniform) rows past mcount are skipped one by
        // one; larger MR compute their padding rows (x is zero there) and never
        // store them.
        auto live = [&](int m) { return MR > 4 || rt + RT * m < mcount; };

        float acc[MT][4];
#pragma unroll
        for (int m = 0; m < MT; ++m)
#pragma unroll
            for (int v = 0; v < 4; ++v) acc[m][v] = 0.0f;

        // G steps from chunk-relative step k: every chain gets its G terms in
        // ascending order.
        auto group = [&](const Raw* b, int k, int kx) {
            float w[G][4];
            if (NT) {
#pragma unroll
                for (int v = 0; v < 4; ++v) {
                    float g[G];
                    widen_g<DT>(b + col(v) * K::LDT + k, g);
#pragma unroll
                    for (int u = 0; u < G; ++u) w[u][v] = g[u];
                }
            } else {
#pragma unroll
                for (int u = 0; u < G; ++u) widen4<DT>(b + (k + u) * JT + 4 * ct, w[u]);
            }
#pragma unroll
            for (int m = 0; m < MT; ++m) {
                if (!live(m)) break;
#pragma unroll
                for (int h = 0; h < G / 4; ++h) {
                    const float4 x = *reinterpret_cast<const float4*>(&xs[rt + RT * m][kx + 4 * h]);
                    const float xv[4] = {x.x, x.y, x.z, x.w};
#pragma unroll
                    for (int u = 0; u < 4; ++u)
#pragma unroll
                        for (int v = 0; v < 4; ++v) acc[m][v] = __fmaf_rn(xv[u], w[4 * h + u][v], acc[m][v]);
                }
            }
        };

        for (int c = 0; c < chunks; ++c) {
            if constexpr (PW == 0) {
                cp_async_wait<STAGES - 2>();
                __syncthreads();
                if (c + STAGES - 1 < chunks) issue(c + STAGES - 1, t);
                cp_async_commit();
            } else {
                tc::mbar_wait(bars + 8 * (c % STAGES), (dg_u32)(c / STAGES) & 1u);
            }
            const Raw* b = bs + (c % STAGES) * K::STAGE_ELEMS;
            const int k0 = c * KC;
            const int steps = len - k0 < KC ? len - k0 : KC;
            if (steps == KC) {
#pragma unroll
                for (int k = 0; k < KC; k += G) group(b, k, k0 + k);
            } else {
                // The short tail of the last slab: exactly `steps` terms, so no
                // padding term ever enters a chain (0*0 + -0 would give +0).
                int k = 0;
#pragma unroll 1
                for (; k + G <= steps; k += G) group(b, k, k0 + k);
#pragma unroll 1
                for (; k < steps; ++k) {
                    float w[4];
#pragma unroll
                    for (int v = 0; v < 4; ++v) w[v] = rowsk::widen<DT>(NT ? b[col(v) * K::LDT + k] : b[k * JT + 4 * ct + v]);
#pragma unroll
                    for (int m = 0; m < MT; ++m) {
                        if (!live(m)) break;
                        const float x = xs[rt + RT * m][k0 + k];
#pragma unroll
                        for (int v = 0; v < 4; ++v) acc[m][v] = __fmaf_rn(x, w[v], acc[m][v]);
                    }
                }
            }
            // The slot back to the producers: this thread has read it.
            if constexpr (PW > 0) tc::mbar_arrive(bars + 8 * (STAGES + c % STAGES));
        }
        if constexpr (PW == 0) cp_async_wait<0>();

        // This slab's partials, ws[s][i][j] as in the two-launch path.
        float* out = ws + (s * rows + m0) * cols + jb;
#pragma unroll
        for (int m = 0; m < MT; ++m) {
            const int row = rt + RT * m;
            if (row >= mcount) break;
#pragma unroll
            for (int v = 0; v < 4; ++v)
                if (jb + col(v) < cols) __stcg(out + row * cols + col(v), acc[m][v]);
        }

    }

    // Arrival: the partials are made visible device-wide before the count
    // (the fence), the count before the last block reads them. The verdict
    // goes through xs[0][0], free once every thread is past the loop (no
    // static shared memory: at MR = 16 four blocks fill an H200 SM exactly).
    __threadfence();
    __syncthreads();
    int* verdict = reinterpret_cast<int*>(&xs[0][0]);
    if (t == 0) {
        dg_u32* c = ctr + (dg_i64)blockIdx.z * gridDim.x + blockIdx.x;
        const bool last = atomicAdd(c, 1u) == gridDim.y - 1;
        if (last) *c = 0;  // every slab of the run has arrived: zero for the next call
        *verdict = last;
    }
    __syncthreads();
    if (!*verdict) return;
    __threadfence();

    // The fold of the block's outputs, shared by all its threads: units of
    // one row and four consecutive columns, a unit's S partials loaded
    // sixteen slabs at a time (all in flight together), then added in
    // ascending s. Units are float4 loads when a row of the workspace is a
    // whole number of them (cols % 4 == 0), else four scalar ones.
    const int S = gridDim.y;
    const dg_i64 plane = rows * cols;
    const bool vec = (cols & 3) == 0;
    constexpr int UPR = JT / 4;  // units a row
#pragma unroll 1
    for (int u = t; u < mcount * UPR; u += THREADS) {
        const int m = u / UPR;
        const dg_i64 j0 = jb + 4 * (u % UPR);
        if (j0 >= cols) continue;
        const float* p = ws + (m0 + m) * cols + j0;
        const dg_i64 e0 = (m0 + m) * cols + j0;
        float y[4] = {0.0f, 0.0f, 0.0f, 0.0f};
#pragma unroll 1
        for (int k = 0; k < S; k += 16) {
            float q[16][4];
#pragma unroll
            for (int i = 0; i < 16; ++i) {
                if (k + i < S) {
                    const float* ps = p + (k + i) * plane;
                    if (vec) {
                        const float4 v = __ldcg(reinterpret_cast<const float4*>(ps));
                        q[i][0] = v.x, q[i][1] = v.y, q[i][2] = v.z, q[i][3] = v.w;
                    } else {
#pragma unroll
                        for (int e = 0; e < 4; ++e) q[i][e] = j0 + e < cols ? __ldcg(ps + e) : 0.0f;
                    }
                }
            }
#pragma unroll
            for (int i = 0; i < 16; ++i) {
                if (k + i < S) {
#pragma unroll
                    for (int e = 0; e < 4; ++e) y[e] = k + i == 0 ? q[i][e] : epi::fold_add(y[e], q[i][e]);
                }
            }
        }
#pragma unroll
        for (int e = 0; e < 4; ++e) {
            if (j0 + e >= cols) break;
            float r = y[e];
            if (bias != nullptr) r = epi::bias_add(r, bias[j0 + e]);
            epi::store<DTOUT>(C, e0 + e, epi::act<Act>(r));
        }
    }
}

// Blocks per SM each configuration is compiled for (a register budget):
// what the shared memory admits on the H200 (nn: 68, 81, 65 KiB).
constexpr int min_blocks(int mr) { return mr == 4 ? 3 : mr == 16 ? 2 : 3; }

}  // namespace rowsf

// Entry points. Arguments: A, B, ws, counters, C, bias (nullable), rows,
// cols, R, lda, ldb; C is rows x cols with row stride cols. Grid:
// (ceil(cols / JT), S, ceil(rows / MR)) with JT = 256 (MR = 4, 16) or 128,
// block_threads(MR) threads, dynamic shared memory Cfg::SMEM; counters: one u32 per
// (grid.z, grid.x), zero before the launch and zero after it.
#define DETGEMM_ROWSF_ENTRY(NAME, DT, DTOUT, MR, NT)                                                         \
    DETGEMM_KERNEL void __launch_bounds__(rowsf::block_threads(MR), rowsf::min_blocks(MR))                       \
        NAME(const void* A, const void* B, float* ws, dg_u32* ctr, void* C, const float* bias, dg_i64 rows,  \
             dg_i64 cols, dg_i64 R, dg_i64 lda, dg_i64 ldb) {                                                \
        dg_grid_dependency_wait();                                                                            \
        rowsf::fused<DT, DTOUT, MR, NT>(A, B, ws, ctr, C, bias, rows, cols, R, lda, ldb);                     \
    }
#include "zgemm_rows_fused_entries.cuh"
