// prelude.cuh: shared helpers for every detgemm kernel family.
//
// Each family (one .cu file) starts with #include "prelude.cuh"; the Go
// package hands this file to NVRTC as an in-memory header, so nothing here
// may include a system or toolkit header. Everything is exact integer or
// IEEE arithmetic: no fast-math intrinsics, no reliance on cuda_fp16.h or
// cuda_bf16.h, whose availability and rounding paths vary between NVRTC
// releases.
#pragma once

// ---------------------------------------------------------------------------
// Integer types.
//
// NVRTC provides no <cstdint> by default (12.4 does not even define
// uint32_t), and a header that does may define the 64-bit type as
// `unsigned long`, which would clash with a typedef of our own. Our own
// names cannot clash with anything.
typedef unsigned short     dg_u16;
typedef unsigned int       dg_u32;
typedef unsigned long long dg_u64;
typedef long long          dg_i64;

static_assert(sizeof(dg_u16) == 2, "dg_u16 must be 16 bits");
static_assert(sizeof(dg_u32) == 4, "dg_u32 must be 32 bits");
static_assert(sizeof(dg_u64) == 8, "dg_u64 must be 64 bits");

// Kernel entry points are extern "C" so the host finds them by plain name.
#define DETGEMM_KERNEL extern "C" __global__

// Pointers that never alias within one kernel call. Every kernel that takes
// an input and an output buffer requires them to be disjoint.
#define DETGEMM_RESTRICT __restrict__

// Small helpers are forced inline so they never cost a call frame (the
// build tests require zero stack on every kernel).
#define DETGEMM_INLINE __device__ __forceinline__

// ---------------------------------------------------------------------------
// Grid-stride loops with 64-bit indices.
//
// Element counts are 64-bit: a 2^31-element buffer is ordinary on an H200.
// The products are widened before multiplying so blockIdx.x * blockDim.x
// cannot wrap in 32 bits.

// The index of this thread's first element.
DETGEMM_INLINE dg_u64 dg_global_thread() {
    return (dg_u64)blockIdx.x * (dg_u64)blockDim.x + (dg_u64)threadIdx.x;
}

// The distance between one thread's consecutive elements.
DETGEMM_INLINE dg_u64 dg_grid_stride() {
    return (dg_u64)gridDim.x * (dg_u64)blockDim.x;
}

// ---------------------------------------------------------------------------
// Bit casts (the CUDA intrinsics; named here so the conversions below read
// as plain integer code).

DETGEMM_INLINE dg_u32 dg_f32_bits(float f) { return __float_as_uint(f); }
DETGEMM_INLINE float dg_f32_from_bits(dg_u32 u) { return __uint_as_float(u); }

// ---------------------------------------------------------------------------
// Exact conversions between f32 and the 16-bit formats.
//
// Narrowing is one round-to-nearest-even (RNE), the only rounding the
// numerical contract allows at a store; widening is exact. All are pure
// integer manipulation, so they do not depend on the FTZ or rounding mode
// the compiler picked, and a CPU reproduces them bit for bit. Every NaN
// narrows to the canonical 0x7FFF, as the GPU's own arithmetic canonicalises
// f32 NaNs, so stored bits never depend on a payload; infinities stay
// infinities.

// f32 -> bf16, RNE. bf16 is the top half of an f32, so rounding is adding
// just under half an ulp plus the lowest kept bit (ties to even), then
// truncating. Overflow rounds into the infinity encoding by carry, and
// subnormals need no special case because both formats share the exponent
// range.
DETGEMM_INLINE dg_u16 dg_f32_to_bf16_rne(float f) {
    dg_u32 u = dg_f32_bits(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) {
        // NaN: canonical quiet NaN (rounding could carry into infinity).
        return (dg_u16)0x7fffu;
    }
    dg_u32 lsb = (u >> 16) & 1u;
    return (dg_u16)((u + 0x7fffu + lsb) >> 16);
}

// f32 -> IEEE binary16, RNE, with subnormal results and overflow to
// infinity.
DETGEMM_INLINE dg_u16 dg_f32_to_f16_rne(float f) {
    dg_u32 u = dg_f32_bits(f);
    dg_u32 sign = (u >> 16) & 0x8000u;
    dg_u32 a = u & 0x7fffffffu; // |f|

    if (a > 0x7f800000u) {
        // NaN: canonical quiet NaN.
        return (dg_u16)0x7fffu;
    }
    if (a >= 0x477ff000u) {
        // |f| >= 65520, the midpoint between the largest half (65504) and
        // 2^16; that tie rounds to the even neighbour, 2^16, which is
        // infinity. Infinity itself lands here too.
        return (dg_u16)(sign | 0x7c00u);
    }
    if (a >= 0x38800000u) {
        // Normal half (|f| >= 2^-14): rebias the exponent (127 -> 15, i.e.
        // subtract 112 << 23), then drop 13 mantissa bits with RNE. A carry
        // out of the mantissa correctly bumps the exponent.
        dg_u32 r = a - 0x38000000u;
        return (dg_u16)(sign | ((r + 0x0fffu + ((r >> 13) & 1u)) >> 13));
    }
    if (a <= 0x33000000u) {
        // |f| <= 2^-25, half of the smallest subnormal: rounds to zero
        // (exactly 2^-25 is a tie, and zero is the even neighbour).
        return (dg_u16)sign;
    }
    // Subnormal half: the result counts units of 2^-24. With the implicit
    // bit, |f| = m * 2^(e-150), so the count is m >> (126 - e), where the
    // shift is 14..24 in this range. Round the dropped bits to nearest even;
    // rounding up to 0x0400 yields the smallest normal, which is correct.
    dg_u32 e = a >> 23;
    dg_u32 m = (a & 0x007fffffu) | 0x00800000u;
    dg_u32 shift = 126u - e;
    dg_u32 q = m >> shift;
    dg_u32 rem = m & ((1u << shift) - 1u);
    dg_u32 half = 1u << (shift - 1u);
    if (rem > half || (rem == half && (q & 1u))) {
        q += 1u;
    }
    return (dg_u16)(sign | q);
}

// bf16 -> f32, exact: bf16 is the top half of an f32.
DETGEMM_INLINE float dg_bf16_to_f32(dg_u16 h) {
    return dg_f32_from_bits((dg_u32)h << 16);
}

// binary16 -> f32, exact.
DETGEMM_INLINE float dg_f16_to_f32(dg_u16 h) {
    dg_u32 sign = ((dg_u32)h & 0x8000u) << 16;
    dg_u32 exp = ((dg_u32)h >> 10) & 0x1fu;
    dg_u32 man = (dg_u32)h & 0x03ffu;
    if (exp == 0x1fu) {
        // Infinity or NaN: all-ones exponent, payload moved to the top.
        return dg_f32_from_bits(sign | 0x7f800000u | (man << 13));
    }
    if (exp != 0u) {
        // Normal: rebias 15 -> 127.
        return dg_f32_from_bits(sign | ((exp + 112u) << 23) | (man << 13));
    }
    if (man == 0u) {
        return dg_f32_from_bits(sign); // signed zero
    }
    // Subnormal: man * 2^-24 with the leading one at bit p (0..9) is
    // 2^(p-24) * 1.xxx, a normal f32 with biased exponent p + 103.
    dg_u32 p = 31u - (dg_u32)__clz(man);
    dg_u32 frac = (man << (23u - p)) & 0x007fffffu;
    return dg_f32_from_bits(sign | ((p + 103u) << 23) | frac);
}

// Programmatic dependent launch (sm_90 and newer; on older GPUs both are
// empty, and the engine never launches overlapped there). A grid launched
// with the overlap attribute may start while the kernel ahead of it in the
// stream still runs: every thread calls dg_grid_dependency_wait before it
// reads or writes global memory, and passes once that kernel has finished
// and its writes are visible (at once for a grid launched plainly).
// dg_launch_dependents lets the next grid, if launched overlapped, be
// scheduled now; that grid still waits for this one to finish.
DETGEMM_INLINE void dg_grid_dependency_wait() {
#if __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.wait;\n" ::: "memory");
#endif
}

DETGEMM_INLINE void dg_launch_dependents() {
#if __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");
#endif
}
