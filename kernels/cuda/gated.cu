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

namespace gated {

using epi::F32;
using epi::BF16;
using epi::F16;

DETGEMM_INLINE dg_i64 col(dg_i64 j, int blk) { return blk ? ((j >> 3) << 4) + (j & 7) : j; }

// V consecutive elements from index j (j % V == 0; with blk, V <= 8 keeps
// them in one block), widened exactly.
template <int T, int V>
DETGEMM_INLINE void load(const void* DETGEMM_RESTRICT p, dg_i64 e, float (&v)[V]) {
    if constexpr (V == 1) {
        v[0] = epi::widen<T>(p, e);
    } else if constexpr (T == F32) {
        static_assert(V == 4, "four f32 a load");
        const float4 x = *reinterpret_cast<const float4*>(static_cast<const float*>(p) + e);
        v[0] = x.x; v[1] = x.y; v[2] = x.z; v[3] = x.w;
    } else {
        static_assert(V == 4, "four 16-bit values a load");
        const uint2 x = *reinterpret_cast<const uint2*>(static_cast<const dg_u16*>(p) + e);
        const dg_u32 w[2] = {x.x, x.y};
#pragma unroll
        for (int c = 0; c < 4; ++c) {
            const dg_u16 h = (dg_u16)(w[c >> 1] >> (16 * (c & 1)));
            v[c] = T == BF16 ? dg_bf16_to_f32(h) : dg_f16_to_f32(h);
        }
    }
}

template <int T, int V>
DETGEMM_INLINE void put(void* DETGEMM_RESTRICT p, dg_i64 e, const float (&v)[V]) {
    if constexpr (V == 1) epi::store<T>(p, e, v[0]);
    else epi::store4<T>(p, e, v);
}

// Element groups: g = blockIdx.x·blockDim.x + threadIdx.x covers indices
// [g·V, g·V + V) of a row; rows blockIdx.y, blockIdx.y + gridDim.y, ...
#define GATED_FOR_EACH(ROWS, NG)                                                   \
    const dg_i64 g = (dg_i64)blockIdx.x * blockDim.x + threadIdx.x;                \
    if (g >= (NG)) return;                                                         \
    for (dg_i64 r = blockIdx.y; r < (ROWS); r += gridDim.y)

// y = a·act(b) to Y (type OT); with HA set, a and b also stored, rounded
// to OT, at HA and HB (Matmul's aux: the pre-activation).
template <int HT, int OT, int V>
DETGEMM_INLINE void forward(int gate, dg_i64 rows, dg_i64 n, const void* DETGEMM_RESTRICT A, dg_i64 lda,
                            const void* DETGEMM_RESTRICT B, dg_i64 ldb, int blk, void* DETGEMM_RESTRICT Y,
                            dg_i64 ldy, void* DETGEMM_RESTRICT HA, void* DETGEMM_RESTRICT HB, dg_i64 ldh) {
    dg_grid_dependency_wait();
    GATED_FOR_EACH(rows, n / V) {
        const dg_i64 j = g * V, c = col(j, blk);
        float a[V], b[V], y[V];
        load<HT, V>(A, r * lda + c, a);
        load<HT, V>(B, r * ldb + c, b);
#pragma unroll
        for (int u = 0; u < V; ++u) y[u] = __fmul_rn(a[u], dg_gate_act(gate, b[u]));
        put<OT, V>(Y, r * ldy + j, y);
        if (HA != nullptr) {
            put<OT, V>(HA, r * ldh + c, a);
            put<OT, V>(HB, r * ldh + c, b);
        }
    }
}

// da = dy·act(b), db = (dy·a)·act′(b), dy of type DT, a and b of HT, da
// and db stored as OT.
template <int HT, int DT, int OT, int V>
DETGEMM_INLINE void backward(int gate, dg_i64 rows, dg_i64 n, const void* DETGEMM_RESTRICT DY, dg_i64 lddy,
                             const void* DETGEMM_RESTRICT A, dg_i64 lda, const void* DETGEMM_RESTRICT B, dg_i64 ldb,
                             int blk, void* DETGEMM_RESTRICT DA, dg_i64 ldda, void* DETGEMM_RESTRICT DB, dg_i64 lddb) {
    dg_grid_dependency_wait();
    GATED_FOR_EACH(rows, n / V) {
        const dg_i64 j = g * V, c = col(j, blk);
        float dy[V], a[V], b[V], da[V], db[V];
        load<DT, V>(DY, r * lddy + j, dy);
        load<HT, V>(A, r * lda + c, a);
        load<HT, V>(B, r * ldb + c, b);
#pragma unroll
        for (int u = 0; u < V; ++u) {
            float act, grad;
            dg_gate_act_grad(gate, b[u], &act, &grad);
            da[u] = __fmul_rn(dy[u], act);
            db[u] = __fmul_rn(__fmul_rn(dy[u], a[u]), grad);
        }
        put<OT, V>(DA, r * ldda + c, da);
        put<OT, V>(DB, r * lddb + c, db);
    }
}

}  // namespace gated

// Entry points: detgemm_gated_fwd_{h}_{out} and detgemm_gated_bwd_{h}_{out}
// (dy of the output's type) or _{h}_f32dy (dy f32: Matmul's plane), each
// with a twin NAME_v4 that takes four consecutive indices a thread (n, the
// leading dimensions and the column offsets multiples of 4, the pointers
// aligned to 4 elements). Grid: (ceil(n / V / blockDim.x), row blocks).
#define DETGEMM_GATED_FWD_ENTRY(NAME, HT, OT)                                                                   \
    DETGEMM_KERNEL void __launch_bounds__(256)                                                                  \
        NAME(int gate, dg_i64 rows, dg_i64 n, const void* A, dg_i64 lda, const void* B, dg_i64 ldb, int blk,     \
             void* Y, dg_i64 ldy, void* HA, void* HB, dg_i64 ldh) {                                             \
        gated::forward<HT, OT, 1>(gate, rows, n, A, lda, B, ldb, blk, Y, ldy, HA, HB, ldh);                     \
    }                                                                                                           \
    DETGEMM_KERNEL void __launch_bounds__(256)                                                                  \
        NAME##_v4(int gate, dg_i64 rows, dg_i64 n, const void* A, dg_i64 lda, const void* B, dg_i64 ldb, int blk, \
                  void* Y, dg_i64 ldy, void* HA, void* HB, dg_i64 ldh) {                                        \
        gated::forward<HT, OT, 4>(gate, rows, n, A, lda, B, ldb, blk, Y, ldy, HA, HB, ldh);                     \
    }
#define DETGEMM_GATED_BWD_ENTRY(NAME, HT, DT, OT)                                                                  \
    DETGEMM_KERNEL void __launch_bounds__(256)                                                                     \
        NAME(int gate, dg_i64 rows, dg_i64 n, const void* DY, dg_i64 lddy, const void* A, dg_i64 lda, const void* B, \
             dg_i64 ldb, int blk, void* DA, dg_i64 ldda, void* DB, dg_i64 lddb) {                                  \
        gated::backward<HT, DT, OT, 1>(gate, rows, n, DY, lddy, A, lda, B, ldb, blk, DA, ldda, DB, lddb);          \
    }                                                                                                              \
    DETGEMM_KERNEL void __launch_bounds__(256)                                                                     \
        NAME##_v4(int gate, dg_i64 rows, dg_i64 n, const void* DY, dg_i64 lddy, const void* A, dg_i64 lda,         \
                  const void* B, dg_i64 ldb, int blk, void* DA, dg_i64 ldda, void* DB, dg_i64 lddb) {              \
        gated::backward<HT, DT, OT, 4>(gate, rows, n, DY, lddy, A, lda, B, ldb, blk, DA, ldda, DB, lddb);          \
    }

#include "zgated_entries.cuh"
