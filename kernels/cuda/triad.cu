// triad.cu: the elementwise and reduction kernels of the training triad
// (package triad): activation, loss, bias gradient and optimizer step.
//
//   detgemm_triad_relu_{f32,bf16,f16}        y = relu(x)
//   detgemm_triad_relu_grad_{f32,bf16,f16}   dx = relu'(h) · dy
//   detgemm_triad_bias_grad_{f32,bf16,f16}   db += Σ_rows dy   (fixed slab plan)
//   detgemm_triad_mse_loss_{f32,bf16,f16}    loss = Σ (y − t)² / n (fixed order)
//   detgemm_triad_mse_grad_{f32,bf16,f16}    dy = scale · (y − t)
//   detgemm_triad_sgd, _bf16, _f16           SGD with momentum on an f32
//                                            master, then zero the gradient
//                                            and refresh a 16-bit copy
//
// The suffix names the element type of the activations and gradients; the
// parameters, their gradients and velocities are always f32. Every
// rounding is spelled out (__fadd_rn, __fsub_rn, __fmul_rn, __fmaf_rn,
// __fdiv_rn) and the build uses --fmad=false, so nothing is contracted; the
// Go CPU backend performs the same float32 operations in the same order and
// matches bit for bit. Selections (ReLU) copy bits and never do arithmetic.
// NaN: arithmetic yields the canonical NaN 0x7FFFFFFF, as the GPU's own
// instructions do; a 16-bit store of any NaN is 0x7FFF.
//
// Elementwise kernels are 64-bit grid-stride loops, so any launch shape
// covers any n and the result never depends on the shape.
#include "prelude.cuh"

// ---------------------------------------------------------------------------
// Element types: how a stored element widens to f32 (exactly) and how an f32
// is stored (one RNE rounding for the 16-bit types).

struct dg_elem_f32 {
    typedef float T;
    static DETGEMM_INLINE float load(T v) { return v; }
    static DETGEMM_INLINE T store(float f) { return f; }
    static DETGEMM_INLINE T nan() { return dg_f32_from_bits(0x7fffffffu); }
    static DETGEMM_INLINE T zero() { return 0.0f; }
};

struct dg_elem_bf16 {
    typedef dg_u16 T;
    static DETGEMM_INLINE float load(T v) { return dg_bf16_to_f32(v); }
    static DETGEMM_INLINE T store(float f) { return dg_f32_to_bf16_rne(f); }
    static DETGEMM_INLINE T nan() { return (dg_u16)0x7fffu; }
    static DETGEMM_INLINE T zero() { return (dg_u16)0u; }
};

struct dg_elem_f16 {
    typedef dg_u16 T;
    static DETGEMM_INLINE float load(T v) { return dg_f16_to_f32(v); }
    static DETGEMM_INLINE T store(float f) { return dg_f32_to_f16_rne(f); }
    static DETGEMM_INLINE T nan() { return (dg_u16)0x7fffu; }
    static DETGEMM_INLINE T zero() { return (dg_u16)0u; }
};

// The slab length of every reduction here, the same as the GEMM plans'
// (ref.SlabLen).
#define DG_TRIAD_SLAB 256

// ---------------------------------------------------------------------------
// ReLU. relu(x) = x when x > 0 (its bits unchanged), the canonical NaN when
// x is NaN (a diverged run stays visible), and +0 otherwise, so relu(−0) is
// +0. The gradient uses the pre-activation h the same way: dx = dy (its
// bits) when h > 0, the canonical NaN when h is NaN, +0 otherwise.

template <class E>
DETGEMM_INLINE void dg_relu(const typename E::T* DETGEMM_RESTRICT x, typename E::T* DETGEMM_RESTRICT y, dg_u64 n) {
    for (dg_u64 i = dg_global_thread(); i < n; i += dg_grid_stride()) {
        typename E::T v = x[i];
        float f = E::load(v);
        y[i] = f > 0.0f ? v : (f != f ? E::nan() : E::zero());
    }
}

template <class E>
DETGEMM_INLINE void dg_relu_grad(const typename E::T* DETGEMM_RESTRICT h, const typename E::T* DETGEMM_RESTRICT dy,
                                 typename E::T* DETGEMM_RESTRICT dx, dg_u64 n) {
    for (dg_u64 i = dg_global_thread(); i < n; i += dg_grid_stride()) {
        float f = E::load(h[i]);
        dx[i] = f > 0.0f ? dy[i] : (f != f ? E::nan() : E::zero());
    }
}

// ---------------------------------------------------------------------------
// Bias gradient, db[cols] += Σ_r dy[r, c] over rows r, the dW plan with the
// products replaced by the elements: rows are cut into slabs of 256; slab s
// is one ascending chain p_s = +0, p_s = p_s + dy[r, c]; then
// db = ((db + p_0) + p_1) + ..., every addition __fadd_rn. One thread owns
// one column start to finish, so the order never depends on the launch.
// Because the fold starts from the old db, calls on micro-batches split at
// multiples of 256 rows, applied in order, give the bits of one call.

template <class E>
DETGEMM_INLINE void dg_bias_grad(const typename E::T* DETGEMM_RESTRICT dy, float* DETGEMM_RESTRICT db,
                                 dg_u64 rows, dg_u64 cols) {
    for (dg_u64 c = dg_global_thread(); c < cols; c += dg_grid_stride()) {
        float d = db[c];
        for (dg_u64 r0 = 0; r0 < rows; r0 += DG_TRIAD_SLAB) {
            dg_u64 r1 = r0 + DG_TRIAD_SLAB < rows ? r0 + DG_TRIAD_SLAB : rows;
            float p = 0.0f;
            for (dg_u64 r = r0; r < r1; ++r) {
                p = __fadd_rn(p, E::load(dy[r * cols + c]));
            }
            d = __fadd_rn(d, p);
        }
        db[c] = d;
    }
}

// ---------------------------------------------------------------------------
// MSE loss over n elements (row-major order): e_i = y_i − t_i; slab s of
// 256 consecutive elements is one ascending chain p_s = +0,
// p_s = fma(e_i, e_i, p_s); the slabs fold left to right from p_0:
// total = ((p_0 + p_1) + p_2) + ...; loss = total / nf (nf is n as an f32,
// computed by the host). loss[0] receives the value and loss[1] accumulates
// it (loss[1] + value), so a caller can read a running sum once per epoch.
//
// One block of DG_TRIAD_LOSS_THREADS threads: each round, thread j computes
// slab (round·threads + j) into shared memory, then thread 0 folds the round's
// slabs in ascending order. The result depends on n alone.

#define DG_TRIAD_LOSS_THREADS 256

template <class E>
DETGEMM_INLINE void dg_mse_loss(const typename E::T* DETGEMM_RESTRICT y, const typename E::T* DETGEMM_RESTRICT t,
                                float* DETGEMM_RESTRICT loss, dg_u64 n, float nf) {
    __shared__ float part[DG_TRIAD_LOSS_THREADS];
    __shared__ float total;
    const dg_u64 slabs = (n + DG_TRIAD_SLAB - 1) / DG_TRIAD_SLAB;
    const unsigned tid = threadIdx.x;
    for (dg_u64 base = 0; base < slabs; base += DG_TRIAD_LOSS_THREADS) {
        dg_u64 s = base + tid;
        if (s < slabs) {
            dg_u64 i0 = s * DG_TRIAD_SLAB;
            dg_u64 i1 = i0 + DG_TRIAD_SLAB < n ? i0 + DG_TRIAD_SLAB : n;
            float p = 0.0f;
            for (dg_u64 i = i0; i < i1; ++i) {
                float e = __fsub_rn(E::load(y[i]), E::load(t[i]));
                p = __fmaf_rn(e, e, p);
            }
            part[tid] = p;
        }
        __syncthreads();
        if (tid == 0) {
            dg_u64 m = slabs - base < DG_TRIAD_LOSS_THREADS ? slabs - base : DG_TRIAD_LOSS_THREADS;
            float acc = base == 0 ? part[0] : __fadd_rn(total, part[0]);
            for (dg_u64 j = 1; j < m; ++j) {
                acc = __fadd_rn(acc, part[j]);
            }
            total = acc;
        }
        __syncthreads();
    }
    if (tid == 0) {
        float l = __fdiv_rn(slabs == 0 ? 0.0f : total, nf);
        loss[0] = l;
        loss[1] = __fadd_rn(loss[1], l);
    }
}

// MSE gradient: dy_i = scale · (y_i − t_i), scale = 2/n computed by the
// host as one f32 division; the difference is rounded, then the product,
// then the store to the element type.
template <class E>
DETGEMM_INLINE void dg_mse_grad(const typename E::T* DETGEMM_RESTRICT y, const typename E::T* DETGEMM_RESTRICT t,
                                typename E::T* DETGEMM_RESTRICT dy, dg_u64 n, float scale) {
    for (dg_u64 i = dg_global_thread(); i < n; i += dg_grid_stride()) {
        dy[i] = E::store(__fmul_rn(scale, __fsub_rn(E::load(y[i]), E::load(t[i]))));
    }
}

// ---------------------------------------------------------------------------
// SGD with momentum on an f32 master: v = mu·v + g; w = w − lr·v (each
// operation rounded: __fmul_rn, __fadd_rn, __fsub_rn); then g = +0 for the
// next accumulation, and the 16-bit working copy, if any, is the master
// rounded once to nearest even.

template <class E>
DETGEMM_INLINE void dg_sgd(float* DETGEMM_RESTRICT w, float* DETGEMM_RESTRICT v, float* DETGEMM_RESTRICT g,
                           typename E::T* DETGEMM_RESTRICT work, dg_u64 n, float lr, float mu) {
    for (dg_u64 i = dg_global_thread(); i < n; i += dg_grid_stride()) {
        float vi = __fadd_rn(__fmul_rn(mu, v[i]), g[i]);
        float wi = __fsub_rn(w[i], __fmul_rn(lr, vi));
        v[i] = vi;
        w[i] = wi;
        g[i] = 0.0f;
        if (work != nullptr) {
            work[i] = E::store(wi);
        }
    }
}

// ---------------------------------------------------------------------------
// Entry points.

#define DG_TRIAD_ENTRIES(SUF, E)                                                                                     \
    DETGEMM_KERNEL void detgemm_triad_relu_##SUF(const E::T* DETGEMM_RESTRICT x, E::T* DETGEMM_RESTRICT y, dg_u64 n) { \
        dg_relu<E>(x, y, n);                                                                                          \
    }                                                                                                                 \
    DETGEMM_KERNEL void detgemm_triad_relu_grad_##SUF(const E::T* DETGEMM_RESTRICT h, const E::T* DETGEMM_RESTRICT dy, \
                                                      E::T* DETGEMM_RESTRICT dx, dg_u64 n) {                          \
        dg_relu_grad<E>(h, dy, dx, n);                                                                                \
    }                                                                                                                 \
    DETGEMM_KERNEL void detgemm_triad_bias_grad_##SUF(const E::T* DETGEMM_RESTRICT dy, float* DETGEMM_RESTRICT db,     \
                                                      dg_u64 rows, dg_u64 cols) {                                     \
        dg_bias_grad<E>(dy, db, rows, cols);                                                                          \
    }                                                                                                                 \
    DETGEMM_KERNEL void __launch_bounds__(DG_TRIAD_LOSS_THREADS)                                                      \
        detgemm_triad_mse_loss_##SUF(const E::T* DETGEMM_RESTRICT y, const E::T* DETGEMM_RESTRICT t,                 \
                                     float* DETGEMM_RESTRICT loss, dg_u64 n, float nf) {                              \
        dg_mse_loss<E>(y, t, loss, n, nf);                                                                            \
    }                                                                                                                 \
    DETGEMM_KERNEL void detgemm_triad_mse_grad_##SUF(const E::T* DETGEMM_RESTRICT y, const E::T* DETGEMM_RESTRICT t,   \
                                                     E::T* DETGEMM_RESTRICT dy, dg_u64 n, float scale) {              \
        dg_mse_grad<E>(y, t, dy, n, scale);                                                                           \
    }

DG_TRIAD_ENTRIES(f32, dg_elem_f32)
DG_TRIAD_ENTRIES(bf16, dg_elem_bf16)
DG_TRIAD_ENTRIES(f16, dg_elem_f16)

// The parameters: without a working copy (f32 tier, and every bias), and
// with a bf16 or f16 one (typed tier weights).
DETGEMM_KERNEL void detgemm_triad_sgd(float* DETGEMM_RESTRICT w, float* DETGEMM_RESTRICT v, float* DETGEMM_RESTRICT g,
                                      dg_u64 n, float lr, float mu) {
    dg_sgd<dg_elem_f32>(w, v, g, nullptr, n, lr, mu);
}

DETGEMM_KERNEL void detgemm_triad_sgd_bf16(float* DETGEMM_RESTRICT w, float* DETGEMM_RESTRICT v,
                                           float* DETGEMM_RESTRICT g, dg_u16* DETGEMM_RESTRICT work, dg_u64 n,
                                           float lr, float mu) {
    dg_sgd<dg_elem_bf16>(w, v, g, work, n, lr, mu);
}

DETGEMM_KERNEL void detgemm_triad_sgd_f16(float* DETGEMM_RESTRICT w, float* DETGEMM_RESTRICT v,
                                          float* DETGEMM_RESTRICT g, dg_u16* DETGEMM_RESTRICT work, dg_u64 n,
                                          float lr, float mu) {
    dg_sgd<dg_elem_f16>(w, v, g, work, n, lr, mu);
}
