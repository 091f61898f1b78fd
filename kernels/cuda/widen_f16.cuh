// widen_f16.cuh: a branch-free exact widening of IEEE binary16 to f32.
//
// The prelude's dg_f16_to_f32 is portable integer code with a branch per
// class (normal, zero, subnormal, inf/NaN), too slow for a GEMM's staging
// (bench/NOTES-kernels.md). The hardware conversion
// cvt.f32.f16 is exact (every binary16 value, subnormals included, is an
// f32 value; no rounding mode applies) and one instruction. Its bits equal
// the prelude's for every non-NaN code and it gives a NaN for every NaN
// code (a GPU test checks all 65536 codes); a NaN's payload never reaches
// an output, because every widened value enters an fma, which returns the
// canonical NaN.
#pragma once
#include "prelude.cuh"

DETGEMM_INLINE float dg_f16_to_f32_fast(dg_u16 h) {
    float f;
    asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
    return f;
}
