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
// activations of activation.cuh with their branches turned into selects,
// so that a thread's eight elements interleave and no element pays for
// branch bookkeeping. The operations, their order and their operands are
// dg_gate_act's and dg_gate_act_grad's; where those skip work (the
// exponential below −104, a NaN or infinite b) the work is done and its
// result discarded. TestGatedVectorPathEveryPattern checks this path
// against gemm/ref on every exponent and sign of b and every 16-bit
// pattern of the half types' inputs.

// x / d for the sigmoid's operands (d = 1 + e, x = 1 or e, e in [0, 1]):
// __fdiv_rn's own fast path (reciprocal, one Newton step, quotient,
// remainder, correction) without its test for the slow path. For x from
// 2^-100 up the operands are far from the exponent limits that test guards,
// and the sequence gives the correctly rounded quotient; a smaller x is e
// itself, so d = 1 + e rounds to 1, r = 1 and q = x exactly, and the result
// is x = x / 1 again (subnormals and 0 included).
DETGEMM_INLINE float div_unit(float x, float d) {
    float r;
    asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(d));
    r = __fmaf_rn(r, __fmaf_rn(-d, r, 1.0f), r);
    const float q = __fmaf_rn(x, r, 0.0f);
    return __fmaf_rn(r, __fmaf_rn(-d, q, x), q);
}

// dg_sigmoid_parts / dg_sigmoid_one's exponential, branch-free: e =
// e^(−|z+zl|) (0 where −|z| < −104) and d = 1 + e.
struct SigmoidExp {
    float e, d;
};
DETGEMM_INLINE SigmoidExp sigmoid_exp(float z, float zl) {
    const bool pos = z >= 0.0f;
    const float y = pos ? -z : z, yl = pos ? -zl : zl;
    int k;
    const float q = dg_exp_reduce(y, yl, &k);
    float e = dg_exp_scale(q, k);
    asm volatile("" : "+f"(e));  // computed on every lane: no branch around it
    e = y >= -104.0f ? e : 0.0f;
    return {e, __fadd_rn(1.0f, e)};
}

// act(b) for gate G (dg_gate_act) over V values.
template <int G, int V>
DETGEMM_INLINE void acts(const float (&b)[V], float (&act)[V]) {
#pragma unroll
    for (int u = 0; u < V; ++u) {
        const float x = b[u];
        if constexpr (G == 2) {
            act[u] = dg_relu(x);
        } else if constexpr (G == 1 || G == 3 || G == 4) {
            float z = x, zl = 0.0f, x2;
            if constexpr (G == 4) z = dg_gelu_arg(x, &x2, &zl);
            const SigmoidExp p = sigmoid_exp(z, zl);
            const float s = div_unit(z >= 0.0f ? 1.0f : p.e, p.d);
            float v = s;
            if constexpr (G == 3) {
                v = __fmul_rn(x, s);
                v = x == DG_F(0xFF800000) ? DG_F(0x80000000) : v;  // −Inf: −0
            } else if constexpr (G == 4) {
                float big = x > 0.0f ? x : DG_F(0x80000000);  // |x| >= 16: x or −0
                asm volatile("" : "+f"(big));                 // a select below, not a branch
                v = dg_abs(x) >= DG_F(0x41800000) ? big : __fmul_rn(x, s);
            }
            // A NaN b: GLU's s is not NaN, so the NaN is chosen here; for
            // SwiGLU and GeGLU x·s is already the canonical NaN.
            act[u] = G == 1 && x != x ? DG_F(0x7FFFFFFF) : v;
        } else {
            act[u] = x;
        }
    }
}

// act(b) and act′(b) for gate G (dg_gate_act_grad) over V values.
template <int G, int V>
DETGEMM_INLINE void act_grads(const float (&b)[V], float (&act)[V], float (&grad)[V]) {
    if constexpr (G == 2) {
#pragma unroll
        for (int u = 0; u < V; ++u) {
            act[u] = dg_relu(b[u]);
            grad[u] = dg_gate_grad(2, b[u]);
        }
    } else if constexpr (G == 1 || G == 3 || G == 4) {
#pragma unroll
        for (int u = 0; u < V; ++u) {
            float z = b[u], zl = 0.0f, x2 = 0.0f, zp = 0.0f;
            if constexpr (G == 4) {
                z = dg_gelu_arg(b[u], &x2, &zl);
                zp = __fmaf_rn(DG_F(0x3E5B33B6), x2, DG_F(0x3FCC422A));  // K0 + 3·K1·x²
            }
            const SigmoidExp p = sigmoid_exp(z, zl);
            const float pos = div_unit(1.0f, p.d), neg = div_unit(p.e, p.d);
            const float x = b[u];
            const bool swap = z < 0.0f;
            const float s = swap ? neg : pos, sm = swap ? pos : neg;
            float va, vg;
            if constexpr (G == 1) {
                va = s;
                vg = __fmul_rn(s, sm);
            } else if constexpr (G == 3) {
                va = __fmul_rn(x, s);
                vg = __fmul_rn(s, __fmaf_rn(x, sm, 1.0f));
                const bool pinf = x == DG_F(0x7F800000), ninf = x == DG_F(0xFF800000);
                va = pinf ? x : (ninf ? DG_F(0x80000000) : va);
                vg = pinf ? 1.0f : (ninf ? DG_F(0x80000000) : vg);
            } else {
                va = __fmul_rn(x, s);
                vg = __fmul_rn(s, __fmaf_rn(__fmul_rn(x, sm), zp, 1.0f));
                const bool big = dg_abs(x) >= DG_F(0x41800000), up = x > 0.0f;
                va = big ? (up ? x : DG_F(0x80000000)) : va;
                vg = big ? (up ? 1.0f : DG_F(0x80000000)) : vg;
            }
            // A NaN b: as in acts, only GLU needs the NaN chosen (x·s and
            // s·(…x…) are the canonical NaN for SwiGLU and GeGLU).
            const bool nan = G == 1 && x != x;
            act[u] = nan ? DG_F(0x7FFFFFFF) : va;
            grad[u] = nan ? DG_F(0x7FFFFFFF) : vg;
        }
    } else {
#pragma unroll
        for (int u = 0; u < V; ++u) {
            act[u] = b[u];
            grad[u] = 1.0f;
        }
    }
}

// Four consecutive elements from p (4-aligned), widened exactly: f16 by the
// hardware conversion, exact for every number. A NaN's payload may differ
// from dg_f16_to_f32's, and nothing shows it: every output a NaN input
// reaches is the canonical NaN (the activations' NaN, the products' NaN,
// round_pair's 0x7fff).
template <int T>
DETGEMM_INLINE void load4(const void* DETGEMM_RESTRICT p, float* v) {
    if constexpr (T == F32) {
        const float4 x = *static_cast<const float4*>(p);
        v[0] = x.x; v[1] = x.y; v[2] = x.z; v[3] = x.w;
    } else {
        const uint2 x = *static_cast<const uint2*>(p);
        const dg_u32 w[2] = {x.x, x.y};
#pragma unroll
        for (int c = 0; c < 4; ++c) {
            const dg_u16 h = (dg_u16)(w[c >> 1] >> (16 * (c & 1)));
            if constexpr (T == BF16) v[c] = dg_bf16_to_f32(h);
            else asm("cvt.f32.f16 %0, %1;" : "=f"(v[c]) : "h"(h));
        }
    }
}

// Two values rounded to T (RNE) and packed, lo in the low half: one cvt for
// the pair, a NaN half replaced by the canonical 0x7fff (round16's bits).
template <int T>
DETGEMM_INLINE dg_u32 round_pair(float lo, float hi) {
    dg_u32 p;
    if constexpr (T == BF16) asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(p) : "f"(hi), "f"(lo));
    else asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(p) : "f"(hi), "f"(lo));
    p = lo != lo ? (p & 0xffff0000u) | 0x7fffu : p;
    return hi != hi ? (p & 0x0000ffffu) | 0x7fff0000u : p;
}

// Four values rounded once to T and stored at p (4-aligned) with one access.
template <int T>
DETGEMM_INLINE void store4(void* DETGEMM_RESTRICT p, const float* v) {
    if constexpr (T == F32) {
        asm volatile("st.global.v4.f32 [%0], {%1, %2, %3, %4};" ::"l"(p), "f"(v[0]), "f"(v[1]), "f"(v[2]), "f"(v[3])
                     : "memory");
    } else {
        asm volatile("st.global.v2.b32 [%0], {%1, %2};" ::"l"(p), "r"(round_pair<T>(v[0], v[1])),
                     "r"(round_pair<T>(v[2], v[3]))
                     : "memory");
    }
}

// Pointer to element e of a T array.
template <int T>
DETGEMM_INLINE const void* at(const void* p, dg_i64 e) {
    return static_cast<const char*>(p) + e * (T == F32 ? 4 : 2);
}
template <int T>
DETGEMM_INLINE void* at(void* p, dg_i64 e) {
    return static_cast<char*>(p) + e * (T == F32 ? 4 : 2);
}

// Thread t of the x dimension takes indices [8t, 8t + 8) of every row it
// visits (n, the leading dimensions and the column offsets multiples of 4;
// the second group only where 8t + 4 < n). With blk, 8t is a block start,
// so col(8t + 4) = col(8t) + 4.
#define GATED_FOR_EACH8(ROWS, N)                                                   \
    const dg_i64 j = ((dg_i64)blockIdx.x * blockDim.x + threadIdx.x) * 8;          \
    if (j >= (N)) return;                                                          \
    const bool two = j + 4 < (N);                                                  \
    for (dg_i64 r = blockIdx.y; r < (ROWS); r += gridDim.y)

template <int HT, int OT, int G>
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
        acts<G, 8>(b, y);
#pragma unroll
        for (int u = 0; u < 8; ++u) y[u] = __fmul_rn(a[u], y[u]);
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
