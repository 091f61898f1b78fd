// sp24_mma.cuh: the sparse tensor-core step the 2:4 families share,
// mma.sp.m16n8k32 with f32 accumulation (gemm_sp24.cu, gemm_sp24_rows.cu):
// A the compressed operand (16 rows x 16 kept values), B 32 x 8, e the
// thread's metadata register, selector 0.
#pragma once
#include "prelude.cuh"
#include "epilogue.cuh"

namespace sp24 {

// mma.sp::ordered_metadata (PTX 8.5, NVRTC 12.5 and newer) where the
// compiler has it: the PTX ISA warns that the unordered form may run much
// slower on some targets. The metadata here is always in ascending order,
// the one order both forms define identically.
#if defined(__CUDACC_VER_MAJOR__) && (__CUDACC_VER_MAJOR__ > 12 || (__CUDACC_VER_MAJOR__ == 12 && __CUDACC_VER_MINOR__ >= 5))
#define SP24_ORDERED "::ordered_metadata"
#else
#define SP24_ORDERED ""
#endif

// mma.sp, not volatile: its only effect is its output.
template <int IN>
DETGEMM_INLINE void mma_sp(float (&d)[4], const dg_u32 (&a)[4], const dg_u32 (&b)[4], dg_u32 e) {
    if constexpr (IN == epi::BF16) {
        asm(
            "mma.sp" SP24_ORDERED ".sync.aligned.m16n8k32.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
            "{%8,%9,%10,%11}, {%0,%1,%2,%3}, %12, 0x0;\n"
            : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
            : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]), "r"(b[2]), "r"(b[3]), "r"(e));
    } else {
        asm(
            "mma.sp" SP24_ORDERED ".sync.aligned.m16n8k32.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
            "{%8,%9,%10,%11}, {%0,%1,%2,%3}, %12, 0x0;\n"
            : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
            : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]), "r"(b[2]), "r"(b[3]), "r"(e));
    }
}

}  // namespace sp24
