// raw.cuh: the element codes the IEEE few-row families share with the Go
// dispatcher (0 f32, 1 bf16, 2 f16), each code's storage type, and its
// exact widening to f32.
#pragma once
#include "prelude.cuh"
#include "widen_f16.cuh"

namespace dgraw {

constexpr int F32 = 0;
constexpr int BF16 = 1;
constexpr int F16 = 2;

template <int DT> struct raw_of { typedef dg_u16 type; };
template <> struct raw_of<F32> { typedef float type; };

template <int DT>
DETGEMM_INLINE float widen(typename raw_of<DT>::type v) {
    if constexpr (DT == F32) return v;
    else if constexpr (DT == BF16) return dg_bf16_to_f32(v);
    else return dg_f16_to_f32_fast(v);
}

}  // namespace dgraw
