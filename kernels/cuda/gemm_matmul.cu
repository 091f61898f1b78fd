// gemm_matmul.cu: Matmul's elementwise kernels, around the product kernels
// of the other families (docs/contract.md, section "Matmul").
//
// A general Matmul runs as: (tensor cores, alpha = 1) mm_start writes each
// element's start value z to plane 0 of the workspace; the product kernel
// (gemm_slabs for the IEEE tiers, gemm_tc's f32-plane entries for tensor
// cores) writes every slab's chain to its f32 plane, laid out
// [S][rows][N]; mm_epilogue folds the planes in slab order in the request's
// form, adds beta·C and the bias, and ends through epi::mm_finish (aux,
// activation, store, mask); mm_bgrad sums a bias gradient afterwards.
// Every element is one fixed sequence of f32 operations: no order here
// depends on the grid, the rows of a call, or the GPU.
#include "prelude.cuh"
#include "epilogue.cuh"
#include "elementwise.cuh"

namespace mm {

using epi::F32;
using epi::BF16;
using epi::F16;

// The forms of the fold, shared with gemm/matmul.go.
constexpr int FORM_START = 0;   // v = p_0 + p_1 + ... (p_0's chain started at z)
constexpr int FORM_FOLD = 1;    // v = beta·C (or nothing); v = fma(alpha, p_s, v); + bias
constexpr int FORM_ALPHA0 = 2;  // v = beta·C (or +0); + bias: no product

// Elements are (i, j) with j = blockIdx.x·blockDim.x + threadIdx.x and rows
// i = blockIdx.y, blockIdx.y + gridDim.y, ...: no division per element.
#define MM_FOR_EACH(M, N)                                                          \
    const dg_i64 j = (dg_i64)blockIdx.x * blockDim.x + threadIdx.x;                \
    if (j >= (N)) return;                                                          \
    for (dg_i64 i = blockIdx.y; i < (M); i += gridDim.y)

// z: the tensor-core chain's start value (C of type CT, read only where
// beta != 0): +0, bias[j], beta·C, or fma(beta, C, bias[j]).
template <int CT>
DETGEMM_INLINE void start(float* DETGEMM_RESTRICT Z, const void* DETGEMM_RESTRICT C, dg_i64 ldc,
                          const float* DETGEMM_RESTRICT bias, float beta, dg_i64 M, dg_i64 N) {
    dg_grid_dependency_wait();
    MM_FOR_EACH(M, N) {
        float v = 0.0f;
        if (beta != 0.0f) {
            const float c = epi::widen<CT>(C, i * ldc + j);
            v = bias != nullptr ? __fmaf_rn(beta, c, bias[j]) : __fmul_rn(beta, c);
        } else if (bias != nullptr) {
            v = bias[j];
        }
        Z[i * N + j] = v;
    }
}

// The epilogue over S planes P (plane s at P + s·M·N, row stride N).
// (C may be D itself: each element reads its C before it stores its D.)
template <int OUT>
DETGEMM_INLINE void epilogue(const float* DETGEMM_RESTRICT P, dg_i64 S, const void* C, dg_i64 ldc,
                             void* D, dg_i64 ldd, const float* DETGEMM_RESTRICT bias,
                             void* DETGEMM_RESTRICT aux, unsigned char* DETGEMM_RESTRICT mask, dg_i64 ldaux,
                             dg_i64 M, dg_i64 N, float alpha, float beta, int form, int act) {
    dg_grid_dependency_wait();
    const dg_i64 plane = M * N;
    MM_FOR_EACH(M, N) {
        const dg_i64 e = i * N + j;
        float v = 0.0f;
        if (form == FORM_START) {
            v = P[e];
            for (dg_i64 s = 1; s < S; ++s) v = epi::fold_add(v, P[s * plane + e]);
        } else {
            bool have = false;
            if (beta != 0.0f) {
                v = __fmul_rn(beta, epi::widen<OUT>(C, i * ldc + j));
                have = true;
            }
            if (form == FORM_FOLD) {
                for (dg_i64 s = 0; s < S; ++s) {
                    const float p = P[s * plane + e];
                    v = have ? __fmaf_rn(alpha, p, v) : __fmul_rn(alpha, p);
                    have = true;
                }
            }
            if (bias != nullptr) v = epi::bias_add(v, bias[j]);
        }
        epi::mm_finish<OUT>(v, act, D, i * ldd + j, aux, mask, i * ldaux + j);
    }
}

// The epilogue's vector path: four consecutive columns a thread (N, ldd
// and, where the epilogue has an aux or a mask, ldaux multiples of 4; D,
// aux and mask aligned to 4 elements), the activation a template
// parameter, GELU and its gradient in elementwise.cuh's select forms.
// Every element is the same sequence of operations as epilogue's: the
// fold, beta·C and the bias per element, then epi::mm_act's cases.
template <int OUT, int ACT>
DETGEMM_INLINE void epilogue4(const float* DETGEMM_RESTRICT P, dg_i64 S, const void* C, dg_i64 ldc, void* D,
                              dg_i64 ldd, const float* DETGEMM_RESTRICT bias, void* DETGEMM_RESTRICT aux,
                              unsigned char* DETGEMM_RESTRICT mask, dg_i64 ldaux, dg_i64 M, dg_i64 N, float alpha,
                              float beta, int form) {
    const dg_i64 plane = M * N;
    const dg_i64 j = ((dg_i64)blockIdx.x * blockDim.x + threadIdx.x) * 4;
    if (j >= N) return;
    for (dg_i64 i = blockIdx.y; i < M; i += gridDim.y) {
        const dg_i64 e = i * N + j;
        float v[4] = {0.0f, 0.0f, 0.0f, 0.0f}, p[4];
        if (form == FORM_START) {
            sel::load4<F32>(P + e, v);
            for (dg_i64 s = 1; s < S; ++s) {
                sel::load4<F32>(P + s * plane + e, p);
#pragma unroll
                for (int u = 0; u < 4; ++u) v[u] = epi::fold_add(v[u], p[u]);
            }
        } else {
            bool have = false;
            if (beta != 0.0f) {
#pragma unroll
                for (int u = 0; u < 4; ++u) v[u] = __fmul_rn(beta, epi::widen<OUT>(C, i * ldc + j + u));
                have = true;
            }
            if (form == FORM_FOLD) {
                for (dg_i64 s = 0; s < S; ++s) {
                    sel::load4<F32>(P + s * plane + e, p);
#pragma unroll
                    for (int u = 0; u < 4; ++u) v[u] = have ? __fmaf_rn(alpha, p[u], v[u]) : __fmul_rn(alpha, p[u]);
                    have = true;
                }
            }
            if (bias != nullptr) {
#pragma unroll
                for (int u = 0; u < 4; ++u) v[u] = epi::bias_add(v[u], bias[j + u]);
            }
        }
        const dg_i64 ax = i * ldaux + j;
        float r[4];
        if constexpr (ACT == epi::ACT_RELU) {
#pragma unroll
            for (int u = 0; u < 4; ++u) r[u] = dg_relu(v[u]);
        } else if constexpr (ACT == epi::ACT_GELU) {
            if (aux != nullptr) sel::store4<OUT>(sel::at<OUT>(aux, ax), v);
#pragma unroll
            for (int u = 0; u < 4; ++u) r[u] = sel::gelu(v[u]);
        } else if constexpr (ACT == epi::ACT_DRELU) {
            const dg_u32 m = *reinterpret_cast<const dg_u32*>(mask + ax);
#pragma unroll
            for (int u = 0; u < 4; ++u) {
                const unsigned char b = (unsigned char)(m >> (8 * u));
                r[u] = b == epi::MASK_ZERO ? 0.0f : (b == epi::MASK_PASS && v[u] == v[u] ? v[u] : DG_F(0x7FFFFFFF));
            }
        } else if constexpr (ACT == epi::ACT_DGELU) {
            float x[4];
            sel::load4<OUT>(sel::at<OUT>(aux, ax), x);
#pragma unroll
            for (int u = 0; u < 4; ++u) {
                float act, grad;
                sel::gelu_grad(x[u], &act, &grad);
                r[u] = __fmul_rn(v[u], grad);
            }
        } else {
#pragma unroll
            for (int u = 0; u < 4; ++u) r[u] = v[u];
        }
        sel::store4<OUT>(sel::at<OUT>(D, i * ldd + j), r);
        if constexpr (ACT == epi::ACT_RELU) {
            if (mask != nullptr) {
                dg_u32 m = 0;
#pragma unroll
                for (int u = 0; u < 4; ++u) m |= (dg_u32)epi::mm_mask<OUT>(r[u]) << (8 * u);
                *reinterpret_cast<dg_u32*>(mask + ax) = m;
            }
        }
    }
}

template <int OUT>
DETGEMM_INLINE void epilogue_vec(const float* DETGEMM_RESTRICT P, dg_i64 S, const void* C, dg_i64 ldc, void* D,
                                 dg_i64 ldd, const float* DETGEMM_RESTRICT bias, void* DETGEMM_RESTRICT aux,
                                 unsigned char* DETGEMM_RESTRICT mask, dg_i64 ldaux, dg_i64 M, dg_i64 N, float alpha,
                                 float beta, int form, int act) {
    dg_grid_dependency_wait();
    switch (act) {
    case epi::ACT_RELU: epilogue4<OUT, epi::ACT_RELU>(P, S, C, ldc, D, ldd, bias, aux, mask, ldaux, M, N, alpha, beta, form); break;
    case epi::ACT_GELU: epilogue4<OUT, epi::ACT_GELU>(P, S, C, ldc, D, ldd, bias, aux, mask, ldaux, M, N, alpha, beta, form); break;
    case epi::ACT_DRELU: epilogue4<OUT, epi::ACT_DRELU>(P, S, C, ldc, D, ldd, bias, aux, mask, ldaux, M, N, alpha, beta, form); break;
    case epi::ACT_DGELU: epilogue4<OUT, epi::ACT_DGELU>(P, S, C, ldc, D, ldd, bias, aux, mask, ldaux, M, N, alpha, beta, form); break;
    default: epilogue4<OUT, epi::ACT_NONE>(P, S, C, ldc, D, ldd, bias, aux, mask, ldaux, M, N, alpha, beta, form); break;
    }
}

// A bias gradient, G[q] += the slab sums over r < R of X[q·sq + r·sr] (X
// of type T), in slabs of 256 terms, in two launches: bgrad writes slab
// s's sum (a chain from +0, ascending r) to P[s·Q + q], V columns a thread
// (V = 2 where the columns are adjacent and pairs aligned: one access a
// pair), so every slab runs at once; bgrad_fold adds them to G[q] in slab
// order. The terms come in batches, all of a batch's loads issued before
// its additions: the chains are sequential, so the loads in flight are
// what keeps memory busy; __launch_bounds__(256, 1) (the grid is about a
// block an SM) lets ptxas keep a batch's loads in registers, where its
// default schedule held the kernel to 32 registers and a few loads ahead
// (bench/NOTES-matmul.md).
template <int T, int V>
DETGEMM_INLINE void bgrad(const void* DETGEMM_RESTRICT X, dg_i64 sq, dg_i64 sr, dg_i64 Q, dg_i64 R,
                          float* DETGEMM_RESTRICT P) {
    constexpr int BATCH = T == epi::F32 || (T == epi::F16 && V == 1) ? 16 : 32;  // no spill
    const dg_i64 q = ((dg_i64)blockIdx.x * blockDim.x + threadIdx.x) * V;
    if (q >= Q) return;
    const dg_i64 s0 = (dg_i64)blockIdx.y * 256, s1 = s0 + 256 < R ? s0 + 256 : R;
    const dg_i64 base = q * sq;
    float p[V];
#pragma unroll
    for (int e = 0; e < V; ++e) p[e] = 0.0f;
    dg_i64 r = s0;
    for (; r + BATCH <= s1; r += BATCH) {
        float v[BATCH][V];
#pragma unroll
        for (int u = 0; u < BATCH; ++u) {
            if constexpr (V == 2) {
                sel::load2<T>(X, base + (r + u) * sr, v[u][0], v[u][1]);
            } else {
                v[u][0] = epi::widen<T>(X, base + (r + u) * sr);
            }
        }
#pragma unroll
        for (int u = 0; u < BATCH; ++u)
#pragma unroll
            for (int e = 0; e < V; ++e) p[e] = __fadd_rn(p[e], v[u][e]);
    }
    for (; r < s1; ++r) {
#pragma unroll
        for (int e = 0; e < V; ++e) p[e] = __fadd_rn(p[e], epi::widen<T>(X, base + e * sq + r * sr));
    }
#pragma unroll
    for (int e = 0; e < V; ++e) P[blockIdx.y * Q + q + e] = p[e];
}

DETGEMM_INLINE void bgrad_fold(const float* DETGEMM_RESTRICT P, dg_i64 S, dg_i64 Q, float* DETGEMM_RESTRICT G) {
    constexpr int BATCH = 16;  // the slabs' loads issued together, then added in slab order
    dg_grid_dependency_wait();
    const dg_i64 q = (dg_i64)blockIdx.x * blockDim.x + threadIdx.x;
    if (q >= Q) return;
    float g = G[q];
    dg_i64 s = 0;
    for (; s + BATCH <= S; s += BATCH) {
        float v[BATCH];
#pragma unroll
        for (int u = 0; u < BATCH; ++u) v[u] = P[(s + u) * Q + q];
#pragma unroll
        for (int u = 0; u < BATCH; ++u) g = __fadd_rn(g, v[u]);
    }
    for (; s < S; ++s) g = __fadd_rn(g, P[s * Q + q]);
    G[q] = g;
}

}  // namespace mm

// Entry points, one per type (the type of C for start, of D for the
// epilogue, of the summed matrix for bgrad), and the fold. Grids: start
// and epilogue (ceil(N / blockDim.x), any number of row blocks; the
// epilogue with vec set ceil(N / 4 / blockDim.x)); bgrad
// (ceil(Q / blockDim.x), slabs; with pairs set ceil(Q / 2 / blockDim.x):
// sq = 1, Q, sr and X's pairs aligned); bgrad_fold (ceil(Q / blockDim.x)).
#define DETGEMM_MM_START_ENTRY(NAME, T)                                                                 \
    DETGEMM_KERNEL void __launch_bounds__(256)                                                          \
        NAME(float* Z, const void* C, dg_i64 ldc, const float* bias, float beta, dg_i64 M, dg_i64 N) { \
        mm::start<T>(Z, C, ldc, bias, beta, M, N);                                                      \
    }
#define DETGEMM_MM_EPILOGUE_ENTRY(NAME, T)                                                              \
    DETGEMM_KERNEL void __launch_bounds__(256)                                                          \
        NAME(const float* P, dg_i64 S, const void* C, dg_i64 ldc, void* D, dg_i64 ldd, const float* bias, \
             void* aux, unsigned char* mask, dg_i64 ldaux, dg_i64 M, dg_i64 N, float alpha, float beta,   \
             int form, int act, int vec) {                                                               \
        if (vec)                                                                                         \
            mm::epilogue_vec<T>(P, S, C, ldc, D, ldd, bias, aux, mask, ldaux, M, N, alpha, beta, form, act); \
        else                                                                                             \
            mm::epilogue<T>(P, S, C, ldc, D, ldd, bias, aux, mask, ldaux, M, N, alpha, beta, form, act); \
    }
#define DETGEMM_MM_BGRAD_ENTRY(NAME, T)                                                                 \
    DETGEMM_KERNEL void __launch_bounds__(256, 1)                                                       \
        NAME(const void* X, dg_i64 sq, dg_i64 sr, dg_i64 Q, dg_i64 R, float* P, int pairs) {             \
        dg_grid_dependency_wait();                                                                       \
        if (pairs)                                                                                       \
            mm::bgrad<T, 2>(X, sq, sr, Q, R, P);                                                         \
        else                                                                                             \
            mm::bgrad<T, 1>(X, sq, sr, Q, R, P);                                                         \
    }
#define DETGEMM_MM_BGRAD_FOLD_ENTRY(NAME, ...)                                                            \
    DETGEMM_KERNEL void __launch_bounds__(256) NAME(const float* P, dg_i64 S, dg_i64 Q, float* G) {    \
        mm::bgrad_fold(P, S, Q, G);                                                                      \
    }

#include "zgemm_matmul_entries.cuh"
