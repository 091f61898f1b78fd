// fp8_quant.cu: quantization to fp8 with scales (docs/contract.md, "fp8"):
// Q = X or Xᵀ, in groups of Q (the whole tensor, a row, 1 x 128, or 128 x
// 128), each group scaled by s = amax / FP8_MAX (1 where amax is 0, not
// finite, or s underflows), q = satfinite(RNE(x / s)).
//
// Three launches, all over tiles of 32 rows x 128 columns of Q (a block of
// 256 threads; each warp four rows, each lane four adjacent columns):
//   amax:   the group maxima of |x| (NaN skipped), as f32 bit patterns in
//           the scales buffer (zeroed by the caller), by atomicMax: the
//           maximum does not depend on the order, so neither do the bits;
//   quant:  q from the group's amax;
//   scales: the amax patterns replaced by the scales, in place.
//detgemm:only sm_90a
#include "prelude.cuh"
#include "epilogue.cuh"

namespace f8q {

constexpr int GROUP_TENSOR = 1;
constexpr int GROUP_ROW = 2;
constexpr int GROUP_1X128 = 3;
constexpr int GROUP_128X128 = 4;
constexpr int OUT_E4M3 = 16;
constexpr int OUT_E5M2 = 17;
constexpr int TR = 32, TC = 128;  // the tile of Q

struct Shape {
    dg_i64 qrows, qcols;  // Q's shape (X is qrows x qcols, or qcols x qrows transposed)
    dg_i64 ldx, ldq;
    int transpose, groups;
};

// The group of element (r, c) of Q, and the number of column groups.
DETGEMM_INLINE dg_i64 group_of(const Shape& s, dg_i64 r, dg_i64 c) {
    const dg_i64 cb = (s.qcols + 127) / 128;
    switch (s.groups) {
    case GROUP_TENSOR:
        return 0;
    case GROUP_ROW:
        return r;
    case GROUP_1X128:
        return r * cb + c / 128;
    default:
        return (r / 128) * cb + c / 128;
    }
}

// Element (r, c) of Q read from X, widened.
template <int IN>
DETGEMM_INLINE float load(const void* X, const Shape& s, dg_i64 r, dg_i64 c) {
    return s.transpose ? epi::widen<IN>(X, c * s.ldx + r) : epi::widen<IN>(X, r * s.ldx + c);
}

// The tile's 32 x 128 values of Q (NaN past Q's edges, which every use
// skips), through shared memory where X is transposed so that the reads
// stay along X's rows.
template <int IN>
DETGEMM_INLINE void load_tile(const void* X, const Shape& s, dg_i64 r0, dg_i64 c0, float (&v)[4][4], float* tile) {
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    if (s.transpose) {
        // X rows c0 .. c0+127, columns r0 .. r0+31: a warp reads 32
        // adjacent columns of one X row at a time.
        for (int k = 0; k < TC / 8; ++k) {
            const int xc = warp + 8 * k;  // Q column
            const dg_i64 c = c0 + xc, r = r0 + lane;
            tile[lane * (TC + 1) + xc] = (r < s.qrows && c < s.qcols) ? epi::widen<IN>(X, c * s.ldx + r) : __int_as_float(0x7fffffff);
        }
        __syncthreads();
#pragma unroll
        for (int i = 0; i < 4; ++i)
#pragma unroll
            for (int e = 0; e < 4; ++e) v[i][e] = tile[(4 * warp + i) * (TC + 1) + 4 * lane + e];
        __syncthreads();
    } else {
#pragma unroll
        for (int i = 0; i < 4; ++i) {
            const dg_i64 r = r0 + 4 * warp + i;
#pragma unroll
            for (int e = 0; e < 4; ++e) {
                const dg_i64 c = c0 + 4 * lane + e;
                v[i][e] = (r < s.qrows && c < s.qcols) ? epi::widen<IN>(X, r * s.ldx + c) : __int_as_float(0x7fffffff);
            }
        }
    }
}

// The scale of a group from its amax (f32 bits): amax / fmax, or 1.
DETGEMM_INLINE float scale_of(dg_u32 bits, float fmax) {
    const float amax = __uint_as_float(bits);
    const float s = __fdiv_rn(amax, fmax);
    return (amax <= 3.40282347e38f && s > 0.0f) ? s : 1.0f;
}

// The tile of blockIdx.x: column tiles fastest.
DETGEMM_INLINE void tile_of(const Shape& s, dg_i64& r0, dg_i64& c0) {
    const dg_i64 ct = (s.qcols + TC - 1) / TC;
    r0 = (dg_i64)(blockIdx.x / ct) * TR;
    c0 = (dg_i64)(blockIdx.x % ct) * TC;
}

template <int IN>
DETGEMM_INLINE void amax(const void* X, dg_u32* S, const Shape& s) {
    __shared__ float tile[TR * (TC + 1)];
    __shared__ dg_u32 red[8];
    dg_i64 r0, c0;
    tile_of(s, r0, c0);
    float v[4][4];
    load_tile<IN>(X, s, r0, c0, v, tile);
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    float wm = 0.0f;  // the warp's rows (tensor and 128 x 128 groups)
#pragma unroll
    for (int i = 0; i < 4; ++i) {
        float m = 0.0f;
#pragma unroll
        for (int e = 0; e < 4; ++e) m = fmaxf(m, fabsf(v[i][e]));  // NaN (and the edges) skipped
        const dg_u32 b = __reduce_max_sync(0xffffffffu, __float_as_uint(m));
        wm = fmaxf(wm, __uint_as_float(b));
        const dg_i64 r = r0 + 4 * warp + i;
        if ((s.groups == GROUP_ROW || s.groups == GROUP_1X128) && lane == 0 && r < s.qrows && b != 0u)
            atomicMax(S + group_of(s, r, c0), b);
    }
    if (s.groups == GROUP_TENSOR || s.groups == GROUP_128X128) {
        if (lane == 0) red[warp] = __float_as_uint(wm);
        __syncthreads();
        if (threadIdx.x == 0) {
            dg_u32 b = 0u;
            for (int k = 0; k < 8; ++k) b = red[k] > b ? red[k] : b;
            if (b != 0u) atomicMax(S + group_of(s, r0, c0), b);
        }
    }
}

template <int OUT>
DETGEMM_INLINE dg_u32 pack4(float a, float b, float c, float d) {
    dg_u16 lo, hi;
    if constexpr (OUT == OUT_E4M3) {
        asm("cvt.rn.satfinite.e4m3x2.f32 %0, %1, %2;\n" : "=h"(lo) : "f"(b), "f"(a));
        asm("cvt.rn.satfinite.e4m3x2.f32 %0, %1, %2;\n" : "=h"(hi) : "f"(d), "f"(c));
    } else {
        asm("cvt.rn.satfinite.e5m2x2.f32 %0, %1, %2;\n" : "=h"(lo) : "f"(b), "f"(a));
        asm("cvt.rn.satfinite.e5m2x2.f32 %0, %1, %2;\n" : "=h"(hi) : "f"(d), "f"(c));
    }
    return (dg_u32)lo | ((dg_u32)hi << 16);
}

template <int IN, int OUT>
DETGEMM_INLINE void quant(const void* X, unsigned char* Q, const dg_u32* S, const Shape& s, float fmax) {
    __shared__ float tile[TR * (TC + 1)];
    dg_i64 r0, c0;
    tile_of(s, r0, c0);
    float v[4][4];
    load_tile<IN>(X, s, r0, c0, v, tile);
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const bool words = (s.ldq & 3) == 0 && (reinterpret_cast<dg_u64>(Q) & 3u) == 0;
#pragma unroll
    for (int i = 0; i < 4; ++i) {
        const dg_i64 r = r0 + 4 * warp + i, c = c0 + 4 * lane;
        if (r >= s.qrows || c >= s.qcols) continue;
        const float sc = scale_of(S[group_of(s, r, c0)], fmax);
        float x[4];
#pragma unroll
        for (int e = 0; e < 4; ++e) x[e] = __fdiv_rn(v[i][e], sc);
        const dg_u32 p = pack4<OUT>(x[0], x[1], x[2], x[3]);
        unsigned char* q = Q + r * s.ldq + c;
        if (words && c + 4 <= s.qcols) {
            *reinterpret_cast<dg_u32*>(q) = p;
        } else {
            for (int e = 0; e < 4 && c + e < s.qcols; ++e) q[e] = (unsigned char)(p >> (8 * e));
        }
    }
}

}  // namespace f8q

// Entry points. detgemm_fp8_amax_{in}(X, S, qrows, qcols, ldx, ldq,
// transpose, groups) and detgemm_fp8_quant_{in}_{out}(X, Q, S, ...,
// fmax): 256 threads, one block per 32 x 128 tile of Q (column tiles
// fastest); detgemm_fp8_scales(S, n, fmax): S[i] from amax bits to the
// scale, 256 threads a block, a grid-stride loop.
#define DETGEMM_F8Q_AMAX_ENTRY(NAME, IN)                                                                        \
    DETGEMM_KERNEL void __launch_bounds__(256) NAME(const void* X, dg_u32* S, dg_i64 qrows, dg_i64 qcols,     \
                                                    dg_i64 ldx, dg_i64 ldq, int transpose, int groups) {       \
        dg_grid_dependency_wait();                                                                             \
        const f8q::Shape s{qrows, qcols, ldx, ldq, transpose, groups};                                         \
        f8q::amax<IN>(X, S, s);                                                                                \
    }
#define DETGEMM_F8Q_QUANT_ENTRY(NAME, IN, OUT)                                                                  \
    DETGEMM_KERNEL void __launch_bounds__(256)                                                                  \
        NAME(const void* X, unsigned char* Q, const dg_u32* S, dg_i64 qrows, dg_i64 qcols, dg_i64 ldx,         \
             dg_i64 ldq, int transpose, int groups, float fmax) {                                              \
        dg_grid_dependency_wait();                                                                             \
        const f8q::Shape s{qrows, qcols, ldx, ldq, transpose, groups};                                         \
        f8q::quant<IN, OUT>(X, Q, S, s, fmax);                                                                 \
    }
#define DETGEMM_F8Q_SCALES_ENTRY(NAME, ...)                                                                        \
    DETGEMM_KERNEL void __launch_bounds__(256) NAME(dg_u32* S, dg_i64 n, float fmax) {                        \
        dg_grid_dependency_wait();                                                                             \
        for (dg_u64 i = dg_global_thread(); i < (dg_u64)n; i += dg_grid_stride())                              \
            reinterpret_cast<float*>(S)[i] = f8q::scale_of(S[i], fmax);                                         \
    }

#include "zfp8_quant_entries.cuh"
