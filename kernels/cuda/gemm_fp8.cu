// gemm_fp8.cu: the fp8 product on Hopper's wgmma (docs/contract.md, "fp8"),
//
//   D[M,N] = epilogue(A[M,K] · B[N,K]ᵀ)  with A, B in E4M3 or E5M2,
//
// both operands K-major ("TN", as fp8 wgmma and cuBLASLt require), staged
// by TMA through wgmma.cuh's producer and ring: the maps view each fp8 row
// as 16-bit units, so a stage holds 128 positions of K in exactly the bytes
// (and the 128-byte swizzle) of the 16-bit kernels' 64, and every k32 step
// starts 32 bytes further along the rows, as theirs do.
//
// Per element the chain is the measured fp8 step (one wgmma k32 step: the
// incoming accumulator and 32 products aligned, truncated to 2^(emax-13),
// summed, rounded toward zero to 14 significant bits):
//   fast:     one chain over all of K from +0 (read from shared memory);
//   promoted: a chain from +0 over each 128 positions of K (a stage), then
//             acc = fma(chain, w, acc) in f32 with w = sa_blk·sb_blk for
//             block scales, else w = 1 (fma(p, 1, acc) = add(acc, p)).
// Then v = (v · sa[i]) · sb[j] (per-tensor: stride 0; per-row; absent for
// block scales), the bias, the activation (Matmul's epilogue, fold form
// with alpha 1: v·1 is v), and the store: RNE to bf16/f16, f32 as is, or
// fp8 = satfinite(RNE(v · sd)) with the amax of v over D (an atomic
// maximum of non-negative bit patterns: order-free, so the bits are too).
// Steps wholly past K meet only TMA's zero fill, which leaves the
// accumulator unchanged (see consume), so every stage issues four. Which block computes a
// tile never changes a bit, so the bits do not depend on M.
//detgemm:only sm_90a
#include "prelude.cuh"
#include "wgmma.cuh"

namespace f8 {

// Operand codes (the A and B template arguments) and the fp8 output codes
// (after epi's F32, BF16, F16).
constexpr int E4M3 = 0;
constexpr int E5M2 = 1;
constexpr int OUT_E4M3 = 16;
constexpr int OUT_E5M2 = 17;

// A tile of 128 x BN outputs (two consumer warpgroups of 64 rows) with a
// STAGES-deep ring of 128 positions of K: wgmma.cuh's Tile with the fp8
// widths (64 columns for grids that would leave SMs idle, 256 for the
// fast chain on full ones); the fields wg::produce and the stores read.
// The Go side computes the same shared memory (fp8SharedBytes).
template <int BN_, int STAGES_>
struct F8Tile {
    static constexpr int BM = 128, BN = BN_, STAGES = STAGES_;
    static constexpr bool SLABS = false, RUNSUM = false;
    static constexpr int CONSUMERS = 2;
    static constexpr int THREADS = 128 * (CONSUMERS + 1);
    static constexpr int PRODUCER_REGS = 40;
    static constexpr int CONSUMER_REGS = 232;
    static constexpr int A_BYTES = BM * wg::BK * 2;
    static constexpr int B_BYTES = BN * wg::BK * 2;
    static constexpr int STAGE_BYTES = A_BYTES + B_BYTES;
    static constexpr int EPI_WARP_BYTES = 16 * 64 * 2;
    static constexpr int EPI_BYTES = 4 * CONSUMERS * EPI_WARP_BYTES;
    static constexpr int SMEM = STAGES * STAGE_BYTES + 1024 + 2 * STAGES * 8 + BN * 4 + 128 + EPI_BYTES;
    static_assert(BN == 64 || BN == 128 || BN == 256, "consumers issue m64n64k32, m64n128k32 or m64n256k32");
};
typedef F8Tile<64, 8> T64;
typedef F8Tile<128, 6> T128;
typedef F8Tile<256, 4> T256;

// One k32 step of fp8 wgmma, m64nNk32 (N = BN), both operands K-major
// from shared memory: d = A·B + (scale_d ? d : 0).
template <int N, int TA, int TB>
DETGEMM_INLINE void mma_k32(float (&d)[N / 2], dg_u64 da, dg_u64 db, int scale_d) {
    if constexpr (N == 64 && TA == E4M3 && TB == E4M3) {
        asm volatile(
            "{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"
            "wgmma.mma_async.sync.aligned.m64n64k32.f32.e4m3.e4m3 "
            "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
            "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, "
            "%32, %33, p, 1, 1;\n}\n"
            : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
              "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
              "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
              "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
            : "l"(da), "l"(db), "r"(scale_d));
    } else if constexpr (N == 64 && TA == E4M3 && TB == E5M2) {
        asm volatile(
            "{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"
            "wgmma.mma_async.sync.aligned.m64n64k32.f32.e4m3.e5m2 "
            "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
            "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, "
            "%32, %33, p, 1, 1;\n}\n"
            : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
              "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
              "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
              "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
            : "l"(da), "l"(db), "r"(scale_d));
    } else if constexpr (N == 64 && TA == E5M2 && TB == E4M3) {
        asm volatile(
            "{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"
            "wgmma.mma_async.sync.aligned.m64n64k32.f32.e5m2.e4m3 "
            "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
            "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, "
            "%32, %33, p, 1, 1;\n}\n"
            : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
              "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
              "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
              "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
            : "l"(da), "l"(db), "r"(scale_d));
    } else if constexpr (N == 64 && TA == E5M2 && TB == E5M2) {
        asm volatile(
            "{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"
            "wgmma.mma_async.sync.aligned.m64n64k32.f32.e5m2.e5m2 "
            "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
            "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, "
            "%32, %33, p, 1, 1;\n}\n"
            : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
              "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
              "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
              "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
            : "l"(da), "l"(db), "r"(scale_d));
    } else if constexpr (N == 128 && TA == E4M3 && TB == E4M3) {
        asm volatile(
            "{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
            "wgmma.mma_async.sync.aligned.m64n128k32.f32.e4m3.e4m3 "
            "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
            "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
            "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
            "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, "
            "%64, %65, p, 1, 1;\n}\n"
            : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
              "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
              "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
              "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
              "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
              "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
              "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
              "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
            : "l"(da), "l"(db), "r"(scale_d));
    } else if constexpr (N == 128 && TA == E4M3 && TB == E5M2) {
        asm volatile(
            "{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
            "wgmma.mma_async.sync.aligned.m64n128k32.f32.e4m3.e5m2 "
            "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
            "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
            "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
            "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, "
            "%64, %65, p, 1, 1;\n}\n"
            : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
              "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
              "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
              "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
              "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
              "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
              "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
              "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
            : "l"(da), "l"(db), "r"(scale_d));
    } else if constexpr (N == 128 && TA == E5M2 && TB == E4M3) {
        asm volatile(
            "{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
            "wgmma.mma_async.sync.aligned.m64n128k32.f32.e5m2.e4m3 "
            "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
            "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
            "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
            "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, "
            "%64, %65, p, 1, 1;\n}\n"
            : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
              "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
              "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
              "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
              "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
              "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
              "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
              "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
            : "l"(da), "l"(db), "r"(scale_d));
    } else if constexpr (N == 128 && TA == E5M2 && TB == E5M2) {
        asm volatile(
            "{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
            "wgmma.mma_async.sync.aligned.m64n128k32.f32.e5m2.e5m2 "
            "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
            "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
            "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
            "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, "
            "%64, %65, p, 1, 1;\n}\n"
            : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
              "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
              "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
              "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
              "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
              "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
              "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
              "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
            : "l"(da), "l"(db), "r"(scale_d));
    } else if constexpr (N == 256 && TA == E4M3 && TB == E4M3) {
        asm volatile(
            "{\n.reg .pred p;\nsetp.ne.b32 p, %130, 0;\n"
            "wgmma.mma_async.sync.aligned.m64n256k32.f32.e4m3.e4m3 "
            "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
            "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
            "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
            "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, "
            "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, "
            "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, "
            "%96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, "
            "%112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127}, "
            "%128, %129, p, 1, 1;\n}\n"
            : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
              "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
              "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
              "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
              "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
              "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
              "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
              "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]),
              "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]),
              "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]),
              "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]),
              "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]),
              "+f"(d[96]), "+f"(d[97]), "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]),
              "+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]), "+f"(d[110]), "+f"(d[111]),
              "+f"(d[112]), "+f"(d[113]), "+f"(d[114]), "+f"(d[115]), "+f"(d[116]), "+f"(d[117]), "+f"(d[118]), "+f"(d[119]),
              "+f"(d[120]), "+f"(d[121]), "+f"(d[122]), "+f"(d[123]), "+f"(d[124]), "+f"(d[125]), "+f"(d[126]), "+f"(d[127])
            : "l"(da), "l"(db), "r"(scale_d));
    } else if constexpr (N == 256 && TA == E4M3 && TB == E5M2) {
        asm volatile(
            "{\n.reg .pred p;\nsetp.ne.b32 p, %130, 0;\n"
            "wgmma.mma_async.sync.aligned.m64n256k32.f32.e4m3.e5m2 "
            "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
            "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
            "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
            "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, "
            "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, "
            "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, "
            "%96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, "
            "%112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127}, "
            "%128, %129, p, 1, 1;\n}\n"
            : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
              "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
              "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
              "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
              "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
              "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
              "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
              "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]),
              "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]),
              "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]),
              "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]),
              "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]),
              "+f"(d[96]), "+f"(d[97]), "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]),
              "+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]), "+f"(d[110]), "+f"(d[111]),
              "+f"(d[112]), "+f"(d[113]), "+f"(d[114]), "+f"(d[115]), "+f"(d[116]), "+f"(d[117]), "+f"(d[118]), "+f"(d[119]),
              "+f"(d[120]), "+f"(d[121]), "+f"(d[122]), "+f"(d[123]), "+f"(d[124]), "+f"(d[125]), "+f"(d[126]), "+f"(d[127])
            : "l"(da), "l"(db), "r"(scale_d));
    } else if constexpr (N == 256 && TA == E5M2 && TB == E4M3) {
        asm volatile(
            "{\n.reg .pred p;\nsetp.ne.b32 p, %130, 0;\n"
            "wgmma.mma_async.sync.aligned.m64n256k32.f32.e5m2.e4m3 "
            "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
            "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
            "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
            "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, "
            "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, "
            "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, "
            "%96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, "
            "%112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127}, "
            "%128, %129, p, 1, 1;\n}\n"
            : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
              "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
              "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
              "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
              "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
              "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
              "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
              "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]),
              "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]),
              "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]),
              "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]),
              "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]),
              "+f"(d[96]), "+f"(d[97]), "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]),
              "+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]), "+f"(d[110]), "+f"(d[111]),
              "+f"(d[112]), "+f"(d[113]), "+f"(d[114]), "+f"(d[115]), "+f"(d[116]), "+f"(d[117]), "+f"(d[118]), "+f"(d[119]),
              "+f"(d[120]), "+f"(d[121]), "+f"(d[122]), "+f"(d[123]), "+f"(d[124]), "+f"(d[125]), "+f"(d[126]), "+f"(d[127])
            : "l"(da), "l"(db), "r"(scale_d));
    } else if constexpr (N == 256 && TA == E5M2 && TB == E5M2) {
        asm volatile(
            "{\n.reg .pred p;\nsetp.ne.b32 p, %130, 0;\n"
            "wgmma.mma_async.sync.aligned.m64n256k32.f32.e5m2.e5m2 "
            "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
            "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
            "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
            "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, "
            "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, "
            "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, "
            "%96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, "
            "%112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127}, "
            "%128, %129, p, 1, 1;\n}\n"
            : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
              "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
              "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
              "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
              "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
              "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
              "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
              "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]),
              "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]),
              "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]),
              "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]),
              "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]),
              "+f"(d[96]), "+f"(d[97]), "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]),
              "+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]), "+f"(d[110]), "+f"(d[111]),
              "+f"(d[112]), "+f"(d[113]), "+f"(d[114]), "+f"(d[115]), "+f"(d[116]), "+f"(d[117]), "+f"(d[118]), "+f"(d[119]),
              "+f"(d[120]), "+f"(d[121]), "+f"(d[122]), "+f"(d[123]), "+f"(d[124]), "+f"(d[125]), "+f"(d[126]), "+f"(d[127])
            : "l"(da), "l"(db), "r"(scale_d));
    }
}

// The arguments after the maps and shape.
struct Args {
    void* D;
    dg_i64 ldd;
    const float* sa;  // end scale of A: sa[i * sa_rs] (null: none)
    dg_i64 sa_rs;
    const float* sb;  // end scale of B: sb[j * sb_rs] (null: none)
    dg_i64 sb_rs;
    const float* ba;  // block scales of A: ba[i * ba_ld + kb] (null: none)
    dg_i64 ba_ld;
    const float* bb;  // block scales of B: bb[(j / 128) * bb_ld + kb]
    dg_i64 bb_ld;
    const float* bias;  // null: none
    const float* sd;    // the fp8 output's scale (null: 1)
    dg_u32* amax;       // the fp8 output's amax (f32 bits), zeroed by the caller; null: none
};

// Two f32 values as one fp8 pair (lo in the low byte), satfinite RNE.
template <int OUT>
DETGEMM_INLINE dg_u16 pack8(float lo, float hi) {
    dg_u16 p;
    if constexpr (OUT == OUT_E4M3) {
        asm("cvt.rn.satfinite.e4m3x2.f32 %0, %1, %2;\n" : "=h"(p) : "f"(hi), "f"(lo));
    } else {
        asm("cvt.rn.satfinite.e5m2x2.f32 %0, %1, %2;\n" : "=h"(p) : "f"(hi), "f"(lo));
    }
    return p;
}

// The fp8 store of a consumer thread's accumulators (after the epilogue):
// accumulator 4q + 2h + e is element (row0 + 8h, col0 + 8q + e). Pairs go
// as one 2-byte access where D and ldd allow. am takes |v| of every stored
// element (fmaxf skips NaN).
template <int BN, int OUT>
DETGEMM_INLINE void store8(const float (&acc)[BN / 2], const Args& a, float sd, dg_i64 M, dg_i64 N, dg_i64 row0,
                           dg_i64 col0, float& am) {
    unsigned char* out = static_cast<unsigned char*>(a.D);
    const bool pairs = (a.ldd & 1) == 0 && (reinterpret_cast<dg_u64>(out) & 1u) == 0;
#pragma unroll
    for (int q = 0; q < BN / 8; ++q) {
        const dg_i64 j = col0 + 8 * q;
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            const dg_i64 i = row0 + 8 * h;
            if (i >= M || j >= N) continue;
            const float v0 = acc[4 * q + 2 * h], v1 = acc[4 * q + 2 * h + 1];
            const dg_u16 p = pack8<OUT>(__fmul_rn(v0, sd), __fmul_rn(v1, sd));
            am = fmaxf(am, fabsf(v0));
            if (j + 1 < N) {
                am = fmaxf(am, fabsf(v1));
                if (pairs) {
                    *reinterpret_cast<dg_u16*>(out + i * a.ldd + j) = p;
                } else {
                    out[i * a.ldd + j] = (unsigned char)(p & 0xffu);
                    out[i * a.ldd + j + 1] = (unsigned char)(p >> 8);
                }
            } else {
                out[i * a.ldd + j] = (unsigned char)(p & 0xffu);
            }
        }
    }
}

// Consumers: warpgroup c owns rows [64c, 64c + 64) of each tile.
template <class T, int TA, int TB, int DTOUT, bool PROMOTE, int ACT>
DETGEMM_INLINE void consume(dg_u32 ring, dg_u32 bars, const wg::Work& w, int c, dg_i64 M, dg_i64 N, dg_i64 K,
                            const Args& a) {
    constexpr int BN = T::BN, STAGES = T::STAGES;
    const int warp = (threadIdx.x / 32) % 4, lane = threadIdx.x % 32;
    // Matmul's epilogue in its fold form with alpha 1 and no C: the bias,
    // then the activation (wgmma.cuh's mm_tile, whose GELU runs rolled).
    const wg::MMArgs mm{nullptr, 0, a.bias, nullptr, nullptr, 0, 1.0f, 0.0f, wg::FORM_FOLD};
    constexpr int EPI_OUT = DTOUT == OUT_E4M3 || DTOUT == OUT_E5M2 ? epi::F32 : DTOUT;
    float am = 0.0f;
    extern __shared__ unsigned char smem_raw[];
    const float* zeros = reinterpret_cast<const float*>(smem_raw + (bars + 16 * STAGES - wg::smem_addr(smem_raw)));

    wg::Ring r;
    int prev = 0;
    for (dg_i64 item = blockIdx.x; item < w.items; item += gridDim.x) {
        dg_i64 i0, j0;
        wg::tile_origin<T::BM, BN>(item, M, N, i0, j0);
        const dg_i64 row0 = i0 + c * 64 + warp * 16 + lane / 4;  // and row0 + 8
        const dg_i64 col0 = j0 + 2 * (lane % 4);                 // + 8q, and + 1
        // Block scales: rows past M read row M - 1's (never stored).
        const dg_i64 ra0 = row0 < M ? row0 : M - 1, ra1 = row0 + 8 < M ? row0 + 8 : M - 1;
        float acc[BN / 2];
        float part[BN / 2];
        if constexpr (PROMOTE) {
#pragma unroll
            for (int i = 0; i < BN / 2; ++i) acc[i] = 0.0f;
        } else {
            // The chain starts at +0, read from shared memory rather than
            // written as constants: constant accumulators make ptxas
            // serialise the wgmma pipeline (C7515), as in wgmma.cuh.
            const float* z = zeros;
            asm volatile("" : "+l"(z));
#pragma unroll
            for (int i = 0; i < BN / 2; ++i) acc[i] = z[i];
            wg::fence_acc(acc);
        }
        for (dg_i64 kt = 0; kt < w.ktiles; ++kt, r.next<STAGES>()) {
            const int s = r.slot;
            float wa0 = 1.0f, wa1 = 1.0f, wb = 1.0f;
            if constexpr (PROMOTE) {
                if (a.ba != nullptr) {
                    wa0 = a.ba[ra0 * a.ba_ld + kt];
                    wa1 = a.ba[ra1 * a.ba_ld + kt];
                    wb = a.bb[(j0 / 128) * a.bb_ld + kt];
                }
            }
            wg::mbar_wait(bars + 8 * s, r.phase);
            const dg_u32 sa = ring + s * T::STAGE_BYTES + c * wg::BOX, sbm = ring + s * T::STAGE_BYTES + T::A_BYTES;
            // Every stage issues its four steps: a step wholly past K meets
            // only the zeros TMA filled in, and such a step leaves the
            // accumulator as it is (it holds at most 14 significant bits,
            // a multiple of the step's grid 2^(e-13); docs/contract.md,
            // "fp8"), so the bits are those of the chain without it, and
            // the loop has one path. The descriptors of steps 1-3 are step
            // 0's plus 32 bytes (2 units of the start address field) each.
            const dg_u64 da = wg::step_desc<true, true>(sa, 0), db = wg::step_desc<false, false>(sbm, 0);
            wg::wgmma_fence();
            if constexpr (PROMOTE) {
#pragma unroll
                for (int kk = 0; kk < 4; ++kk)
                    mma_k32<BN, TA, TB>(part, da + 2 * kk, db + 2 * kk, kk);
                wg::wgmma_commit();
                wg::wgmma_wait<0>();
                wg::fence_acc(part);
                if (lane == 0) wg::mbar_arrive(bars + 8 * (STAGES + s));
                const float w0 = __fmul_rn(wa0, wb), w1 = __fmul_rn(wa1, wb);
#pragma unroll
                for (int i = 0; i < BN / 2; ++i) acc[i] = __fmaf_rn(part[i], (i & 2) ? w1 : w0, acc[i]);
            } else {
#pragma unroll
                for (int kk = 0; kk < 4; ++kk)
                    mma_k32<BN, TA, TB>(acc, da + 2 * kk, db + 2 * kk, 1);
                wg::wgmma_commit();
                // The previous stage's steps are done once at most this
                // one's group is pending: hand its buffers back.
                wg::wgmma_wait<1>();
                wg::fence_acc(acc);
                if (kt > 0 && lane == 0) wg::mbar_arrive(bars + 8 * (STAGES + prev));
                prev = s;
            }
        }
        if constexpr (!PROMOTE) {
            wg::wgmma_wait<0>();
            wg::fence_acc(acc);
            if (lane == 0) wg::mbar_arrive(bars + 8 * (STAGES + prev));
        }
        if (item + gridDim.x >= w.items) dg_launch_dependents();

        // The end scales: per tensor (stride 0) or per row / column.
        if (a.sa != nullptr) {
            const float s0 = a.sa[ra0 * a.sa_rs], s1 = a.sa[ra1 * a.sa_rs];
#pragma unroll
            for (int i = 0; i < BN / 2; ++i) acc[i] = __fmul_rn(acc[i], (i & 2) ? s1 : s0);
        }
        if (a.sb != nullptr) {
#pragma unroll
            for (int q = 0; q < BN / 8; ++q)
#pragma unroll
                for (int e = 0; e < 2; ++e) {
                    const dg_i64 j = col0 + 8 * q + e;
                    const float sj = a.sb[(j < N ? j : N - 1) * a.sb_rs];
                    acc[4 * q + e] = __fmul_rn(acc[4 * q + e], sj);
                    acc[4 * q + 2 + e] = __fmul_rn(acc[4 * q + 2 + e], sj);
                }
        }
        wg::mm_tile<BN, EPI_OUT, ACT>(acc, mm, M, N, row0, col0);
        if constexpr (DTOUT == OUT_E4M3 || DTOUT == OUT_E5M2) {
            store8<BN, DTOUT>(acc, a, a.sd != nullptr ? *a.sd : 1.0f, M, N, row0, col0, am);
        } else {
            if constexpr (DTOUT != epi::F32) {
                if (i0 + T::BM <= M && j0 + BN <= N && (a.ldd & 7) == 0 && (reinterpret_cast<dg_u64>(a.D) & 15u) == 0) {
                    const dg_u32 stage =
                        ((bars + 16 * STAGES + BN * 4 + 127u) & ~127u) + (c * 4 + warp) * T::EPI_WARP_BYTES;
                    wg::store_whole<BN, DTOUT>(acc, a.D, a.ldd, i0 + c * 64 + warp * 16, j0, lane, stage);
                    continue;
                }
            }
            wg::store_tile<BN, DTOUT>(acc, a.D, M, N, a.ldd, row0, col0, j0, lane);
        }
    }
    if constexpr (DTOUT == OUT_E4M3 || DTOUT == OUT_E5M2) {
        if (a.amax != nullptr) {
            const dg_u32 m = __reduce_max_sync(0xffffffffu, __float_as_uint(am));
            if (lane == 0 && m != 0u) atomicMax(a.amax, m);
        }
    }
}

// A persistent kernel: at most one block per SM, block b computing tiles
// b, b + gridDim.x, ...
template <class T, int TA, int TB, int DTOUT, bool PROMOTE, int ACT>
DETGEMM_INLINE void gemm(const wg::tensor_map& tmA, const wg::tensor_map& tmB, dg_i64 M, dg_i64 N, dg_i64 K,
                         const Args& a) {
    constexpr int STAGES = T::STAGES;
    extern __shared__ unsigned char smem_raw[];
    const dg_u32 ring = (wg::smem_addr(smem_raw) + 1023u) & ~1023u;
    const dg_u32 bars = ring + STAGES * T::STAGE_BYTES;  // full[STAGES], empty[STAGES], zeros[BN]
    if (threadIdx.x < T::BN) {
        asm volatile("st.shared.u32 [%0], 0;\n" ::"r"(bars + 16 * STAGES + 4 * threadIdx.x) : "memory");
    }
    if (threadIdx.x == 0) {
        for (int s = 0; s < STAGES; ++s) {
            wg::mbar_init(bars + 8 * s, 1);
            wg::mbar_init(bars + 8 * (STAGES + s), 4 * T::CONSUMERS);
        }
        tma::fence_barrier_init();
    }
    __syncthreads();
    wg::Work w;
    w.tiles = ((M + T::BM - 1) / T::BM) * ((N + T::BN - 1) / T::BN);
    w.ktiles = (K + 127) / 128;
    w.slab_tiles = w.ktiles;
    w.planes = false;
    w.runsum = false;
    w.items = w.tiles;
    if (threadIdx.x < 128) {
        asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(T::PRODUCER_REGS) : "memory");
        if (threadIdx.x == 0) wg::produce<T, true, false>(tmA, tmB, ring, bars, w, M, N);
    } else {
        asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(T::CONSUMER_REGS) : "memory");
        consume<T, TA, TB, DTOUT, PROMOTE, ACT>(ring, bars, w, threadIdx.x / 128 - 1, M, N, K, a);
    }
}

}  // namespace f8

// Entry points: detgemm_fp8_{fast,prom}{BN}_{act}_{a}{b}_{out}. Arguments: the
// TMA maps of A (K/2 16-bit units × M) and B (K/2 × N), M, N, K, D, ldd,
// the end scales (sa, sa_rs, sb, sb_rs), the block scales (ba, ba_ld, bb,
// bb_ld), bias, sd, amax (each pointer nullable). TILE::THREADS threads;
// grid: min(tiles, SMs).
#define DETGEMM_F8_ENTRY(NAME, TILE, TA, TB, DTOUT, PROMOTE, ACT)                                                 \
    DETGEMM_KERNEL void __launch_bounds__(TILE::THREADS, 1)                                                    \
        NAME(const __grid_constant__ wg::tensor_map tmA, const __grid_constant__ wg::tensor_map tmB, dg_i64 M,    \
             dg_i64 N, dg_i64 K, void* D, dg_i64 ldd, const float* sa, dg_i64 sa_rs, const float* sb,             \
             dg_i64 sb_rs, const float* ba, dg_i64 ba_ld, const float* bb, dg_i64 bb_ld, const float* bias,       \
             const float* sd, dg_u32* amax) {                                                                             \
        dg_grid_dependency_wait();                                                                                 \
        const f8::Args a{D, ldd, sa, sa_rs, sb, sb_rs, ba, ba_ld, bb, bb_ld, bias, sd, amax};                      \
        f8::gemm<TILE, TA, TB, DTOUT, PROMOTE, ACT>(tmA, tmB, M, N, K, a);                                               \
    }

#include "zgemm_fp8_entries.cuh"
