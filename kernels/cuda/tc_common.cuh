// tc_common.cuh: pieces shared by the tensor-core families (gemm_tc.cu,
// gemm_tc_rows.cu, ...): dtype and chain-start codes, the cp.async
// wrappers they use (async_copy.cuh), ldmatrix, the sm_80 mbarrier forms,
// the m16n8k16 step and the operand stager. Their epilogue (start value,
// slab fold, rounding and store) is epilogue.cuh's, with the f16 rounding
// by cvt (epi::RNE_CVT).
#pragma once
#include "prelude.cuh"
#include "async_copy.cuh"
#include "epilogue.cuh"

namespace tc {

using epi::F32;  // epilogue.cuh's element codes
using epi::BF16;
using epi::F16;

constexpr int INIT_ZERO = 0;  // dX: the chain starts at +0
constexpr int INIT_BIAS = 1;  // forward: at bias[j] (or +0 without bias)
constexpr int INIT_OLD = 2;   // dW: at the current value of C (f32)

template <bool V>
struct tc_bool {
    static constexpr bool value = V;
};

// The cp.async wrappers (async_copy.cuh); the tensor-core tiles use the
// plain zero-filling 16-byte form.
using dgcp::cp_async16;
using dgcp::cp_async_commit;
using dgcp::cp_async_wait;
using dgcp::cp_async_wait_all;
using dgcp::smem_addr;

// Shared-memory barriers in their sm_80 forms (addresses from smem_addr),
// so a kernel that uses them builds for every target.
DETGEMM_INLINE void mbar_init(dg_u32 bar, dg_u32 count) {
    asm volatile("mbarrier.init.shared.b64 [%0], %1;\n" ::"r"(bar), "r"(count) : "memory");
}
// One arrival, releasing the thread's earlier shared-memory reads.
DETGEMM_INLINE void mbar_arrive(dg_u32 bar) {
    dg_u64 state;
    asm volatile("mbarrier.arrive.shared.b64 %0, [%1];\n" : "=l"(state) : "r"(bar) : "memory");
    (void)state;
}
// One arrival when all the thread's earlier cp.async copies have landed
// (.noinc: it counts towards the barrier's expected arrivals).
DETGEMM_INLINE void cp_async_arrive(dg_u32 bar) {
    asm volatile("cp.async.mbarrier.arrive.noinc.shared.b64 [%0];\n" ::"r"(bar) : "memory");
}
// Waits until the barrier's phase of the given parity has completed:
// mbar_test: whether the phase of the given parity has completed, without
// waiting (a producer polling several slots).
DETGEMM_INLINE bool mbar_test(dg_u32 bar, dg_u32 parity) {
    dg_u32 ok;
    asm volatile("{\n.reg .pred p;\nmbarrier.test_wait.parity.shared.b64 p, [%1], %2;\nselp.u32 %0, 1, 0, p;\n}\n"
                 : "=r"(ok)
                 : "r"(bar), "r"(parity)
                 : "memory");
    return ok != 0;
}

// try_wait (which may suspend the thread) on sm_90, test_wait before.
DETGEMM_INLINE void mbar_wait(dg_u32 bar, dg_u32 parity) {
    dg_u32 ok = 0;
    while (!ok) {
#if __CUDA_ARCH__ >= 900
        asm volatile(
            "{\n.reg .pred p;\nmbarrier.try_wait.parity.shared.b64 p, [%1], %2;\nselp.u32 %0, 1, 0, p;\n}\n"
            : "=r"(ok)
            : "r"(bar), "r"(parity)
            : "memory");
#else
        asm volatile(
            "{\n.reg .pred p;\nmbarrier.test_wait.parity.shared.b64 p, [%1], %2;\nselp.u32 %0, 1, 0, p;\n}\n"
            : "=r"(ok)
            : "r"(bar), "r"(parity)
            : "memory");
#endif
    }
}

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

// Stager copies one operand's k-tiles into shared memory: LINES x CONTIG
// elements of a row-major matrix G (row pitch ld), cut into 8-element chunks
// along the contiguous axis. K_CONTIG: k runs along the contiguous axis
// (else along the lines). A thread owns ITERS chunks, all in one chunk
// column and RSTEP lines apart, so everything but k0 is computed once.
// Elements past (lim_l, lim_c) are zero-filled. VEC: one 16-byte cp.async
// per chunk (ld a multiple of 8, G 16-byte aligned); otherwise eight element
// loads packed into one 16-byte shared store.
template <bool VEC, bool K_CONTIG, int LINES, int CONTIG, int LD, int THREADS>
struct Stager {
    static constexpr int CH = CONTIG / 8;
    static constexpr int RSTEP = THREADS / CH;
    static constexpr int ITERS = LINES * CH / THREADS;
    static_assert(THREADS % CH == 0 && (LINES * CH) % THREADS == 0, "chunks must divide evenly among threads");

    const dg_u16* g;   // the matrix: a valid address for empty copies
    const dg_u16* p0;  // the thread's first chunk at k0 = 0
    dg_i64 ld;
    dg_i64 line0, col0;  // the first chunk's line and column at k0 = 0
    dg_i64 lim_l, lim_c;
    int s0;  // the first chunk's shared-memory offset

    DETGEMM_INLINE Stager(const dg_u16* G, dg_i64 ld_, dg_i64 l0, dg_i64 c0, dg_i64 ll, dg_i64 lc, int tid) {
        const int row = tid / CH, ch = tid % CH;
        g = G;
        ld = ld_;
        line0 = l0 + row;
        col0 = c0 + ch * 8;
        lim_l = ll;
        lim_c = lc;
        p0 = G + line0 * ld + col0;
        s0 = row * LD + ch * 8;
    }

    DETGEMM_INLINE void load(dg_u16* s, dg_i64 k0) const {
        const dg_u16* p = p0 + (K_CONTIG ? k0 : k0 * ld);
        const dg_i64 line = line0 + (K_CONTIG ? 0 : k0);
        const dg_i64 left = lim_c - (col0 + (K_CONTIG ? k0 : 0));
        const int cbytes = left >= 8 ? 16 : (left > 0 ? (int)left * 2 : 0);
        if (VEC) {
#pragma unroll
            for (int it = 0; it < ITERS; ++it) {
                const int bytes = line + it * RSTEP < lim_l ? cbytes : 0;
                cp_async16(s + s0 + it * RSTEP * LD, bytes ? p + it * RSTEP * ld : g, bytes);
            }
        } else {
            // Kept rolled: unrolled, NVRTC 13 hoists every chunk's 64-bit
            // address out of the loop and spills (this is the slow path).
#pragma unroll 1
            for (int it = 0; it < ITERS; ++it) {
                dg_u32 w[4] = {0u, 0u, 0u, 0u};
                if (line + it * RSTEP < lim_l && cbytes > 0) {
                    const dg_u16* q = p + it * RSTEP * ld;
#pragma unroll
                    for (int e = 0; e < 8; ++e) {
                        const dg_u32 v = 2 * e < cbytes ? (dg_u32)q[e] : 0u;
                        w[e >> 1] |= v << (16 * (e & 1));
                    }
                }
                *reinterpret_cast<uint4*>(s + s0 + it * RSTEP * LD) = make_uint4(w[0], w[1], w[2], w[3]);
            }
        }
    }
};

}  // namespace tc
