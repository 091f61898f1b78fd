// gated.cu: the gated activations (GLU, ReGLU, SwiGLU, GeGLU) as
// elementwise kernels over rows × n (docs/contract.md, section "Gated
// activations"): the standalone forward y = a·act(b) and backward da =
// dy·act(b), db = (dy·a)·act′(b), and the second half of Matmul's gated
// epilogues on its general path (a product onto an f32 plane, then these).
//
// a and b are (row r, index j) at A[r·lda + col(j)] and B[r·ldb + col(j)]
// with col(j) = j, or with blk set the fused layout's (j/8)·16 + j%8 (B
// then points 8 elements past A); outputs likewise. Every element is the
// fixed sequence of activation.cuh's dg_gate_act / dg_gate_act_grad and one
// rounding at the store: nothing here depends on the grid or the rows of
// a call.
#include "prelude.cuh"
#include "epilogue.cuh"
#include "elementwise.cuh"
#include "fast16.cuh"

namespace gated {

using epi::F32;
using epi::BF16;
using epi::F16;
using sel::act_grads;
using sel::acts;
using sel::at;
using sel::load4;
using sel::store4;

DETGEMM_INLINE dg_i64 col(dg_i64 j, int blk) { return blk ? ((j >> 3) << 4) + (j & 7) : j; }

// Element groups: g = blockIdx.x·blockDim.x + threadIdx.x covers indices
// [g·V, g·V + V) of a row; rows blockIdx.y, blockIdx.y + gridDim.y, ...
#define GATED_FOR_EACH(ROWS, NG)                                                   \
    const dg_i64 g = (dg_i64)blockIdx.x * blockDim.x + threadIdx.x;                \
    if (g >= (NG)) return;                                                         \
    for (dg_i64 r = blockIdx.y; r < (ROWS); r += gridDim.y)

// y = a·act(b) to Y (type OT); with HA set, a and b also stored, rounded
// to OT, at HA and HB (Matmul's aux: the pre-activation). One element a
// thread: the path for operands that are not 4-aligned, and the exhaustive
// test's reference for the vector path below.
template <int HT, int OT>
DETGEMM_INLINE void forward(int gate, dg_i64 rows, dg_i64 n, const void* DETGEMM_RESTRICT A, dg_i64 lda,
                            const void* DETGEMM_RESTRICT B, dg_i64 ldb, int blk, void* DETGEMM_RESTRICT Y,
                            dg_i64 ldy, void* DETGEMM_RESTRICT HA, void* DETGEMM_RESTRICT HB, dg_i64 ldh) {
    dg_grid_dependency_wait();
    GATED_FOR_EACH(rows, n) {
        const dg_i64 j = g, c = col(j, blk);
        const float a = epi::widen<HT>(A, r * lda + c), b = epi::widen<HT>(B, r * ldb + c);
        epi::store<OT>(Y, r * ldy + j, __fmul_rn(a, dg_gate_act(gate, b)));
        if (HA != nullptr) {
            epi::store<OT>(HA, r * ldh + c, a);
            epi::store<OT>(HB, r * ldh + c, b);
        }
    }
}

// da = dy·act(b), db = (dy·a)·act′(b), dy of type DT, a and b of HT, da
// and db stored as OT; one element a thread, as forward.
template <int HT, int DT, int OT>
DETGEMM_INLINE void backward(int gate, dg_i64 rows, dg_i64 n, const void* DETGEMM_RESTRICT DY, dg_i64 lddy,
                             const void* DETGEMM_RESTRICT A, dg_i64 lda, const void* DETGEMM_RESTRICT B, dg_i64 ldb,
                             int blk, void* DETGEMM_RESTRICT DA, dg_i64 ldda, void* DETGEMM_RESTRICT DB, dg_i64 lddb) {
    dg_grid_dependency_wait();
    GATED_FOR_EACH(rows, n) {
        const dg_i64 j = g, c = col(j, blk);
        const float dy = epi::widen<DT>(DY, r * lddy + j);
        const float a = epi::widen<HT>(A, r * lda + c), b = epi::widen<HT>(B, r * ldb + c);
        float act, grad;
        dg_gate_act_grad(gate, b, &act, &grad);
        epi::store<OT>(DA, r * ldda + c, __fmul_rn(dy, act));
        epi::store<OT>(DB, r * lddb + c, __fmul_rn(__fmul_rn(dy, a), grad));
    }
}

// ---------------------------------------------------------------------------
// The vector path: eight consecutive indices a thread (two groups of four,
// each one 8- or 16-byte access), the gate a template parameter, and the
// activations as elementwise.cuh's select forms compute them (the
// operations of dg_gate_act and dg_gate_act_grad, in their order, with no
// branch), so that a thread's eight elements interleave and no element
// pays for branch bookkeeping (elementwise.cuh's acts and act_grads).
// TestGatedVectorPathEveryPattern checks this path against gemm/ref on
// every exponent and sign of b and every 16-bit pattern of the half types'
// inputs.

// Thread t of the x dimension takes indices [8t, 8t + 8) of every row it
// visits (n, the leading dimensions and the column offsets multiples of 4;
// the second group only where 8t + 4 < n). With blk, 8t is a block start,
// so col(8t + 4) = col(8t) + 4.
#define GATED_FOR_EACH8(ROWS, N)                                                   \
    const dg_i64 j = ((dg_i64)blockIdx.x * blockDim.x + threadIdx.x) * 8;          \
    if (j >= (N)) return;                                                          \
    const bool two = j + 4 < (N);                                                  \
    for (dg_i64 r = blockIdx.y; r < (ROWS); r += gridDim.y)

// FAST: GeGLU into bf16 by fast16.cuh's rounding test (the same stored
// bits), in the kernel of its own that the GeGLU entries define.
template <int HT, int OT, int G, bool FAST = false>
DETGEMM_INLINE void forward8(dg_i64 rows, dg_i64 n, const void* DETGEMM_RESTRICT A, dg_i64 lda,
                             const void* DETGEMM_RESTRICT B, dg_i64 ldb, int blk, void* DETGEMM_RESTRICT Y, dg_i64 ldy,
                             void* DETGEMM_RESTRICT HA, void* DETGEMM_RESTRICT HB, dg_i64 ldh) {
    GATED_FOR_EACH8(rows, n) {
        const dg_i64 c = col(j, blk);
        float a[8], b[8], y[8];
        load4<HT>(at<HT>(A, r * lda + c), a);
        load4<HT>(at<HT>(B, r * ldb + c), b);
        if (two) {
            load4<HT>(at<HT>(A, r * lda + c + 4), a + 4);
            load4<HT>(at<HT>(B, r * ldb + c + 4), b + 4);
        } else {
#pragma unroll
            for (int u = 4; u < 8; ++u) a[u] = b[u] = 0.0f;
        }
        if constexpr (FAST) {
            static_assert(G == 4 && OT == BF16, "fast16's shortcut is GeGLU's, into bf16");
            fast16::geglu<8>(a, b, y);
        } else {
            acts<G, 8>(b, y);
#pragma unroll
            for (int u = 0; u < 8; ++u) y[u] = __fmul_rn(a[u], y[u]);
        }
        store4<OT>(at<OT>(Y, r * ldy + j), y);
        if (two) store4<OT>(at<OT>(Y, r * ldy + j + 4), y + 4);
        if (HA != nullptr) {
            store4<OT>(at<OT>(HA, r * ldh + c), a);
            store4<OT>(at<OT>(HB, r * ldh + c), b);
            if (two) {
                store4<OT>(at<OT>(HA, r * ldh + c + 4), a + 4);
                store4<OT>(at<OT>(HB, r * ldh + c + 4), b + 4);
            }
        }
    }
}

template <int HT, int DT, int OT, int G>
DETGEMM_INLINE void backward8(dg_i64 rows, dg_i64 n, const void* DETGEMM_RESTRICT DY, dg_i64 lddy,
                              const void* DETGEMM_RESTRICT A, dg_i64 lda, const void* DETGEMM_RESTRICT B, dg_i64 ldb,
                              int blk, void* DETGEMM_RESTRICT DA, dg_i64 ldda, void* DETGEMM_RESTRICT DB,
                              dg_i64 lddb) {
    GATED_FOR_EACH8(rows, n) {
        const dg_i64 c = col(j, blk);
        float dy[8], a[8], b[8], act[8], grad[8];
        load4<DT>(at<DT>(DY, r * lddy + j), dy);
        load4<HT>(at<HT>(A, r * lda + c), a);
        load4<HT>(at<HT>(B, r * ldb + c), b);
        if (two) {
            load4<DT>(at<DT>(DY, r * lddy + j + 4), dy + 4);
            load4<HT>(at<HT>(A, r * lda + c + 4), a + 4);
            load4<HT>(at<HT>(B, r * ldb + c + 4), b + 4);
        } else {
#pragma unroll
            for (int u = 4; u < 8; ++u) dy[u] = a[u] = b[u] = 0.0f;
        }
        act_grads<G, 8>(b, act, grad);
        float da[8], db[8];
#pragma unroll
        for (int u = 0; u < 8; ++u) {
            da[u] = __fmul_rn(dy[u], act[u]);
            db[u] = __fmul_rn(__fmul_rn(dy[u], a[u]), grad[u]);
        }
        store4<OT>(at<OT>(DA, r * ldda + c), da);
        store4<OT>(at<OT>(DB, r * lddb + c), db);
        if (two) {
            store4<OT>(at<OT>(DA, r * ldda + c + 4), da + 4);
            store4<OT>(at<OT>(DB, r * lddb + c + 4), db + 4);
        }
    }
}

// The gate as a template parameter: one instantiation a gate (any other
// code is the identity, as dg_gate_act's).
#define GATED_BY_GATE(GATE, CALL) \
    switch (GATE) {               \
    case 1: CALL(1); break;       \
    case 2: CALL(2); break;       \
    case 3: CALL(3); break;       \
    case 4: CALL(4); break;       \
    default: CALL(0); break;      \
    }

template <int HT, int OT>
DETGEMM_INLINE void forward_vec(int gate, dg_i64 rows, dg_i64 n, const void* DETGEMM_RESTRICT A, dg_i64 lda,
                                const void* DETGEMM_RESTRICT B, dg_i64 ldb, int blk, void* DETGEMM_RESTRICT Y,
                                dg_i64 ldy, void* DETGEMM_RESTRICT HA, void* DETGEMM_RESTRICT HB, dg_i64 ldh) {
    dg_grid_dependency_wait();
#define GATED_FWD8(G) forward8<HT, OT, G>(rows, n, A, lda, B, ldb, blk, Y, ldy, HA, HB, ldh)
    GATED_BY_GATE(gate, GATED_FWD8)
#undef GATED_FWD8
}

template <int HT, int DT, int OT>
DETGEMM_INLINE void backward_vec(int gate, dg_i64 rows, dg_i64 n, const void* DETGEMM_RESTRICT DY, dg_i64 lddy,
                                 const void* DETGEMM_RESTRICT A, dg_i64 lda, const void* DETGEMM_RESTRICT B,
                                 dg_i64 ldb, int blk, void* DETGEMM_RESTRICT DA, dg_i64 ldda,
                                 void* DETGEMM_RESTRICT DB, dg_i64 lddb) {
    dg_grid_dependency_wait();
#define GATED_BWD8(G) backward8<HT, DT, OT, G>(rows, n, DY, lddy, A, lda, B, ldb, blk, DA, ldda, DB, lddb)
    GATED_BY_GATE(gate, GATED_BWD8)
#undef GATED_BWD8
}

}  // namespace gated

// Entry points: detgemm_gated_fwd_{h}_{out} and detgemm_gated_bwd_{h}_{out}
// (dy of the output's type) or _{h}_f32dy (dy f32: Matmul's plane), one
// element a thread, each with a twin NAME_v4 for 4-aligned operands (n, the
// leading dimensions and the column offsets multiples of 4, the pointers
// aligned to 4 elements) that takes eight consecutive indices a thread.
// Grid: (ceil(n / V / blockDim.x), row blocks), V = 1 or 8.
#define DETGEMM_GATED_FWD_ENTRY(NAME, HT, OT)                                                                   \
    DETGEMM_KERNEL void __launch_bounds__(256)                                                                  \
        NAME(int gate, dg_i64 rows, dg_i64 n, const void* A, dg_i64 lda, const void* B, dg_i64 ldb, int blk,     \
             void* Y, dg_i64 ldy, void* HA, void* HB, dg_i64 ldh) {                                             \
        gated::forward<HT, OT>(gate, rows, n, A, lda, B, ldb, blk, Y, ldy, HA, HB, ldh);                        \
    }                                                                                                           \
    DETGEMM_KERNEL void __launch_bounds__(256)                                                                  \
        NAME##_v4(int gate, dg_i64 rows, dg_i64 n, const void* A, dg_i64 lda, const void* B, dg_i64 ldb, int blk, \
                  void* Y, dg_i64 ldy, void* HA, void* HB, dg_i64 ldh) {                                        \
        gated::forward_vec<HT, OT>(gate, rows, n, A, lda, B, ldb, blk, Y, ldy, HA, HB, ldh);                     \
    }
// detgemm_gated_geglu_fwd_{h}_bf16_v4: the vector forward with GeGLU
// compiled in (the gate argument is ignored; the engine launches it for
// GeGLU only), its gate through fast16.cuh.
#define DETGEMM_GATED_GEGLU_FWD_ENTRY(NAME, HT, OT)                                                          \
    DETGEMM_KERNEL void __launch_bounds__(256)                                                               \
        NAME(int gate, dg_i64 rows, dg_i64 n, const void* A, dg_i64 lda, const void* B, dg_i64 ldb, int blk,  \
             void* Y, dg_i64 ldy, void* HA, void* HB, dg_i64 ldh) {                                          \
        dg_grid_dependency_wait();                                                                           \
        gated::forward8<HT, OT, 4, true>(rows, n, A, lda, B, ldb, blk, Y, ldy, HA, HB, ldh);                 \
    }
#define DETGEMM_GATED_BWD_ENTRY(NAME, HT, DT, OT)                                                                  \
    DETGEMM_KERNEL void __launch_bounds__(256)                                                                     \
        NAME(int gate, dg_i64 rows, dg_i64 n, const void* DY, dg_i64 lddy, const void* A, dg_i64 lda, const void* B, \
             dg_i64 ldb, int blk, void* DA, dg_i64 ldda, void* DB, dg_i64 lddb) {                                  \
        gated::backward<HT, DT, OT>(gate, rows, n, DY, lddy, A, lda, B, ldb, blk, DA, ldda, DB, lddb);          \
    }                                                                                                              \
    DETGEMM_KERNEL void __launch_bounds__(256)                                                                     \
        NAME##_v4(int gate, dg_i64 rows, dg_i64 n, const void* DY, dg_i64 lddy, const void* A, dg_i64 lda,         \
                  const void* B, dg_i64 ldb, int blk, void* DA, dg_i64 ldda, void* DB, dg_i64 lddb) {              \
        gated::backward_vec<HT, DT, OT>(gate, rows, n, DY, lddy, A, lda, B, ldb, blk, DA, ldda, DB, lddb);          \
    }

#include "zgated_entries.cuh"
