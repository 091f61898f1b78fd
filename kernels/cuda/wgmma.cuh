// wgmma.cuh: the body of the Hopper tensor-core families, everything but
// their entry points: gemm_wgmma.cu (the plain tiles, which run one slab)
// and gemm_wgmma_slabs.cu (the slab variants, Tile::SLABS), apart so that
// the kernels package compiles them in parallel. The contract, roles and
// layouts are described in gemm_wgmma.cu.
#pragma once
#include "prelude.cuh"
#include "tma.cuh"
#include "tc_common.cuh"
#include "elementwise.cuh"

namespace wg {

// Element and chain-start codes and the shared-memory address are
// gemm_tc's (tc_common.cuh); the epilogue is epilogue.cuh's with the f16
// rounding by cvt, as gemm_tc's: the same epilogue bits.
using tc::BF16;
using tc::F16;
using tc::F32;
using tc::INIT_BIAS;
using tc::INIT_OLD;
using tc::INIT_ZERO;
using tc::smem_addr;

// Matmul's fused epilogue (gemm_wgmma_matmul.cu): the chain starts at the
// start value of docs/contract.md's "start" form where beta = 0 (bias[j],
// or +0), or at +0 for the "fold" form, which applies alpha, beta·C and the
// bias after the chain; then the activation, its aux and mask, and the
// store, per element as gemm_matmul.cu's epilogue does. (A start value
// with beta·C, read into the accumulators on some paths only, made ptxas
// serialise the wgmma pipeline, C7515: those requests take the general
// path.)
constexpr int INIT_MM = 3;
constexpr int FORM_START = 0;
constexpr int FORM_FOLD = 1;

struct MMArgs {
    const void* C;        // the fold form's C, of the output type; null where beta = 0
    dg_i64 ldc;
    const float* bias;    // the fold form's bias (the start form's is the kernel's)
    void* aux;            // a GELU aux of the output type, or null
    unsigned char* mask;  // a ReLU mask, or null
    dg_i64 ldaux;
    float alpha, beta;
    int form;
};

constexpr int BK = 64;         // reduction per stage: four 16-wide steps, one 128-byte swizzle row of halves
constexpr int GROUP = 16;      // row tiles per group of the block order (L2 reuse)
constexpr int BOX = 64 * 64 * 2;  // bytes of one 64x64 half box

// A tile of BM x BN outputs with a STAGES-deep ring: BM/64 consumer
// warpgroups of 64 rows and one producer warpgroup. The Go side computes
// the same shared-memory size (wgSharedBytes).
template <int BM_, int BN_, int STAGES_, bool SLABS_ = false, bool REGSUM_ = false>
struct Tile {
    static constexpr int BM = BM_, BN = BN_, STAGES = STAGES_;
    // SLABS: the variant that runs the plan's slabs (ws_mode); the plain
    // kernels keep none of that code, which slowed their one-slab loop
    // (bench/NOTES-kernels.md).
    static constexpr bool SLABS = SLABS_;
    // REGSUM (a slab variant): the slabs' running sum kept in registers,
    // beside the chain (BN/2 more a thread), so the tile's result is final
    // in the kernel: any output type, no workspace, no fold.
    static constexpr bool REGSUM = SLABS_ && REGSUM_;
    static constexpr int CONSUMERS = BM / 64;
    static constexpr int THREADS = 128 * (CONSUMERS + 1);
    // setmaxnreg: the producer keeps few registers a thread (40, or the
    // minimum 24 where three consumer warpgroups need every one) and the
    // consumers share the rest of the SM's 64 K (multiples of 8).
    static constexpr int PRODUCER_REGS = CONSUMERS == 2 ? 40 : 24;
    static constexpr int CONSUMER_REGS = ((65536 / 128 - PRODUCER_REGS) / CONSUMERS) / 8 * 8 > 232
                                             ? 232
                                             : ((65536 / 128 - PRODUCER_REGS) / CONSUMERS) / 8 * 8;
    static constexpr int A_BYTES = BM * BK * 2;
    static constexpr int B_BYTES = BN * BK * 2;
    static constexpr int STAGE_BYTES = A_BYTES + B_BYTES;
    // The 16-bit store path's staging (store_whole): 16 rows x 64 columns
    // of halves (2 KiB) per consumer warp.
    static constexpr int EPI_WARP_BYTES = 16 * 64 * 2;
    static constexpr int EPI_BYTES = 4 * CONSUMERS * EPI_WARP_BYTES;
    // The ring, 1 KiB of slack to align it to the swizzle atom, the
    // barriers, BN zero floats (the bias of a call without one), then
    // 128 bytes of slack and the staging, 128-byte aligned.
    static constexpr int SMEM = STAGES * STAGE_BYTES + 1024 + 2 * STAGES * 8 + BN * 4 + 128 + EPI_BYTES;
    static_assert(BN == 64 || BN == 96 || BN == 128 || BN == 192 || BN == 256,
                  "consumers issue m64n64, m64n96, m64n128, m64n192 or m64n256");
    // B read along its columns (B_JC) comes in 64-column boxes: a 96-column
    // tile reads B along the reduction only (produce checks).
    static constexpr bool B_BOXES_OK = BN % 64 == 0;
    // Whether the tile has WS_RUNSUM (runsum_add): two consumer
    // warpgroups (168 registers a thread).
    static constexpr bool RUNSUM = SLABS && CONSUMERS == 2 && !REGSUM;
    static_assert(BM == 128 || BM == 192, "two or three consumer warpgroups");
};

using tma::tensor_map;  // tma.cuh
using tma::mbar_expect_tx;
using tma::prefetch_map;

DETGEMM_INLINE void mbar_init(dg_u32 bar, dg_u32 count) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(count) : "memory");
}

DETGEMM_INLINE bool mbar_try_wait(dg_u32 bar, dg_u32 parity) {
    dg_u32 ok;
    asm volatile(
        "{\n.reg .pred p;\nmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\nselp.u32 %0, 1, 0, p;\n}\n"
        : "=r"(ok)
        : "r"(bar), "r"(parity)
        : "memory");
    return ok != 0;
}

// Waits until the barrier's phase of the given parity has completed.
DETGEMM_INLINE void mbar_wait(dg_u32 bar, dg_u32 parity) {
    while (!mbar_try_wait(bar, parity)) {
    }
}

DETGEMM_INLINE void mbar_arrive(dg_u32 bar) {
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(bar) : "memory");
}

// The block's rank in its cluster, the cluster's index and the number of
// clusters (without clusters: rank 0, blockIdx.x and gridDim.x). T is a
// tile type with a CLUSTER (here, gemm_fp8's, gemm_sp24_wg's).
template <class T, class I>
DETGEMM_INLINE void cluster_place(dg_u32& rank, I& first, I& step) {
    if constexpr (T::CLUSTER > 1) {
        dg_u32 rk, id, n;
        asm volatile("mov.u32 %0, %%cluster_ctarank;\n" : "=r"(rk));
        asm volatile("mov.u32 %0, %%clusterid.x;\n" : "=r"(id));
        asm volatile("mov.u32 %0, %%nclusterid.x;\n" : "=r"(n));
        rank = rk;
        first = id;
        step = n;
    } else {
        rank = 0;
        first = blockIdx.x;
        step = gridDim.x;
    }
}

// Every block of the cluster has arrived here (and sees the others'
// shared-memory writes before it: the barriers' initialisation at the
// start, the end of their last remote arrivals at the end).
DETGEMM_INLINE void cluster_sync() {
    asm volatile("barrier.cluster.arrive.release.aligned;\nbarrier.cluster.wait.acquire.aligned;\n" ::: "memory");
}

// Hands ring slot s back to the producers: an arrival on the slot's empty
// barrier of every block of the cluster (the peer's producer multicasts
// into this block's slot too), from lane 0 of each consumer warp. The
// remote arrival has the default (CTA-scope) release: the slot's reads are
// wgmma's, already complete (wgmma_wait); a cluster-scope release makes
// ptxas wait for all of the warp's outstanding memory operations first.
template <class T>
DETGEMM_INLINE void release_slot(dg_u32 bars, int s, int lane, dg_u32 rank) {
    if (lane != 0) return;
    const dg_u32 bar = bars + 8 * (T::STAGES + s);
    mbar_arrive(bar);
    if constexpr (T::CLUSTER > 1) {
        asm volatile(
            "{\n.reg .b32 ra;\nmapa.shared::cluster.u32 ra, %0, %1;\n"
            "mbarrier.arrive.shared::cluster.b64 _, [ra];\n}\n" ::"r"(bar),
            "r"(rank ^ 1u)
            : "memory");
    }
}

// A shared-memory matrix descriptor with the 128-byte swizzle: start
// address, leading and stride byte offsets (each in 16-byte units), layout
// type 1 (SWIZZLE_128B) in bits 62-63. The ring is 1 KiB aligned, so the
// base-offset field stays 0.
DETGEMM_INLINE dg_u64 sw128_desc(dg_u32 addr, dg_u32 lbo, dg_u32 sbo) {
    return (dg_u64)((addr & 0x3ffffu) >> 4) | ((dg_u64)(lbo >> 4) << 16) | ((dg_u64)(sbo >> 4) << 32) | (1ull << 62);
}

DETGEMM_INLINE void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
DETGEMM_INLINE void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
template <int N>
DETGEMM_INLINE void wgmma_wait() {
    asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
}

// Pins the accumulators in place around asynchronous wgmma: the compiler may
// not move their reads or writes across this point.
template <int N>
DETGEMM_INLINE void fence_acc(float (&d)[N]) {
#pragma unroll
    for (int i = 0; i < N; ++i) asm volatile("" : "+f"(d[i])::"memory");
}

// The wgmma instructions: D (f32, in registers) += A · B, both from shared
// memory through descriptors; TA/TB: A/B MN-major (transposed).
// m64n256k16, bf16 inputs, f32 accumulators d (+= a·b).
template <int TA, int TB>
DETGEMM_INLINE void wgmma_m64n256_bf16(float (&d)[128], dg_u64 da, dg_u64 db) {
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %132, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16 "
        "{"
        "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
        "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
        "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
        "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, "
        "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, "
        "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, "
        "%96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, "
        "%112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127"
        "}, %128, %129, p, 1, 1, %130, %131;\n}\n"
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
        : "l"(da), "l"(db), "n"(TA), "n"(TB), "r"(1));
}

// m64n256k16, f16 inputs, f32 accumulators d (+= a·b).
template <int TA, int TB>
DETGEMM_INLINE void wgmma_m64n256_f16(float (&d)[128], dg_u64 da, dg_u64 db) {
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %132, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n256k16.f32.f16.f16 "
        "{"
        "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
        "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
        "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
        "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, "
        "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, "
        "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, "
        "%96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, "
        "%112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127"
        "}, %128, %129, p, 1, 1, %130, %131;\n}\n"
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
        : "l"(da), "l"(db), "n"(TA), "n"(TB), "r"(1));
}

// m64n192k16, bf16 inputs, f32 accumulators d (+= a·b).
template <int TA, int TB>
DETGEMM_INLINE void wgmma_m64n192_bf16(float (&d)[96], dg_u64 da, dg_u64 db) {
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %100, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n192k16.f32.bf16.bf16 "
        "{"
        "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
        "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
        "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
        "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, "
        "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, "
        "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95"
        "}, %96, %97, p, 1, 1, %98, %99;\n}\n"
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
          "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95])
        : "l"(da), "l"(db), "n"(TA), "n"(TB), "r"(1));
}

// m64n192k16, f16 inputs, f32 accumulators d (+= a·b).
template <int TA, int TB>
DETGEMM_INLINE void wgmma_m64n192_f16(float (&d)[96], dg_u64 da, dg_u64 db) {
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %100, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n192k16.f32.f16.f16 "
        "{"
        "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
        "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
        "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
        "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, "
        "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, "
        "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95"
        "}, %96, %97, p, 1, 1, %98, %99;\n}\n"
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
          "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95])
        : "l"(da), "l"(db), "n"(TA), "n"(TB), "r"(1));
}

// m64n128k16, bf16 inputs, f32 accumulators d (+= a·b).
template <int TA, int TB>
DETGEMM_INLINE void wgmma_m64n128_bf16(float (&d)[64], dg_u64 da, dg_u64 db) {
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %68, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 "
        "{"
        "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
        "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
        "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
        "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63"
        "}, %64, %65, p, 1, 1, %66, %67;\n}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
          "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
          "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
          "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
          "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
          "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
          "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
          "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
        : "l"(da), "l"(db), "n"(TA), "n"(TB), "r"(1));
}

// m64n128k16, f16 inputs, f32 accumulators d (+= a·b).
template <int TA, int TB>
DETGEMM_INLINE void wgmma_m64n128_f16(float (&d)[64], dg_u64 da, dg_u64 db) {
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %68, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16 "
        "{"
        "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
        "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
        "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
        "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63"
        "}, %64, %65, p, 1, 1, %66, %67;\n}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
          "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
          "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
          "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
          "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
          "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
          "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
          "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
        : "l"(da), "l"(db), "n"(TA), "n"(TB), "r"(1));
}


// m64n64k16 and m64n96k16 (the narrow tiles), bf16 or f16 inputs, f32
// accumulators d (+= a·b): the register lists spelled out once per N.
#define WG_REGS_64                                                                \
    "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "    \
    "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}"
#define WG_TAIL_64 "%32, %33, p, 1, 1, %34, %35"
#define WG_PRED_64 "%36"
#define WG_REGS_96                                                                \
    "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "    \
    "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, " \
    "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47}"
#define WG_TAIL_96 "%48, %49, p, 1, 1, %50, %51"
#define WG_PRED_96 "%52"
#define WG_D8(o) \
    "+f"(d[o]), "+f"(d[o + 1]), "+f"(d[o + 2]), "+f"(d[o + 3]), "+f"(d[o + 4]), "+f"(d[o + 5]), "+f"(d[o + 6]), "+f"(d[o + 7])
#define WG_D_64 WG_D8(0), WG_D8(8), WG_D8(16), WG_D8(24)
#define WG_D_96 WG_D_64, WG_D8(32), WG_D8(40)
#define WG_MMA_NARROW(NN, TYPE)                                                                              \
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, " WG_PRED_##NN ", 0;\n"                                   \
                 "wgmma.mma_async.sync.aligned.m64n" #NN "k16.f32." TYPE "." TYPE " " WG_REGS_##NN ", " WG_TAIL_##NN \
                 ";\n}\n"                                                                                    \
                 : WG_D_##NN                                                                                  \
                 : "l"(da), "l"(db), "n"(TA), "n"(TB), "r"(1))
template <int N, int DT, int TA, int TB>
DETGEMM_INLINE void wgmma_narrow(float (&d)[N / 2], dg_u64 da, dg_u64 db) {
    static_assert(N == 64 || N == 96, "the narrow tiles: m64n64 or m64n96");
    if constexpr (N == 64) {
        if constexpr (DT == BF16) WG_MMA_NARROW(64, "bf16");
        else WG_MMA_NARROW(64, "f16");
    } else {
        if constexpr (DT == BF16) WG_MMA_NARROW(96, "bf16");
        else WG_MMA_NARROW(96, "f16");
    }
}
#undef WG_MMA_NARROW
#undef WG_D_96
#undef WG_D_64
#undef WG_D8
#undef WG_PRED_96
#undef WG_TAIL_96
#undef WG_REGS_96
#undef WG_PRED_64
#undef WG_TAIL_64
#undef WG_REGS_64

// One 16-wide step on the accumulators: d += A(64 x 16) · B(16 x BN).
// Issued unconditionally: ptxas commits a stage's unconditional steps as
// one group, but a guarded or branched-around step as a group of its own.
template <int BN, int DT, int TA, int TB>
DETGEMM_INLINE void mma_step(float (&d)[BN / 2], dg_u64 da, dg_u64 db) {
    if constexpr (BN == 256) {
        if constexpr (DT == BF16) wgmma_m64n256_bf16<TA, TB>(d, da, db);
        else wgmma_m64n256_f16<TA, TB>(d, da, db);
    } else if constexpr (BN == 192) {
        if constexpr (DT == BF16) wgmma_m64n192_bf16<TA, TB>(d, da, db);
        else wgmma_m64n192_f16<TA, TB>(d, da, db);
    } else if constexpr (BN == 128) {
        if constexpr (DT == BF16) wgmma_m64n128_bf16<TA, TB>(d, da, db);
        else wgmma_m64n128_f16<TA, TB>(d, da, db);
    } else {
        wgmma_narrow<BN, DT, TA, TB>(d, da, db);
    }
}

// Grouped tile order: tile index -> origin (i0, j0), GROUP row tiles at a
// time, so the tiles in flight at once share rows of A and columns of B in
// L2. It decides where a tile is computed, never how.
// The engine launches these kernels only where M, N and the tile count
// stay below 2^31 (wgFits), so the arithmetic is 32-bit: 64-bit divisions
// are long instruction sequences on every tile.
template <int BM, int BN>
DETGEMM_INLINE void tile_origin(dg_i64 t, dg_i64 M, dg_i64 N, dg_i64& i0, dg_i64& j0) {
    const dg_u32 tiles_m = (dg_u32)((M + BM - 1) / BM), tiles_n = (dg_u32)((N + BN - 1) / BN);
    const dg_u32 per_group = (dg_u32)GROUP * tiles_n;
    const dg_u32 tt = (dg_u32)t, g = tt / per_group, in_group = tt - g * per_group;
    const dg_u32 first = g * GROUP;
    const dg_u32 rows_in_group = tiles_m - first < (dg_u32)GROUP ? tiles_m - first : (dg_u32)GROUP;
    const dg_u32 col = in_group / rows_in_group;
    i0 = (dg_i64)(first + (in_group - col * rows_in_group)) * BM;
    j0 = (dg_i64)col * BN;
}

// How a call runs the plan's slabs (the ws_mode argument; 0 with one slab).
constexpr int WS_PLANES = 1;  // an item per tile and slab, each slab's chain to its partial plane
constexpr int WS_RUNSUM = 2;  // an item per tile, the slabs' running sum kept in ws

// The block's work: items b, b + gridDim.x, ... of `items`. With one slab
// or WS_RUNSUM an item is a tile and all of its reduction; with WS_PLANES
// an item is (tile, slab z) = (item % tiles, item / tiles), the slab's
// k-tiles only, its chain stored to a partial plane (gemm_fold adds the
// planes).
struct Work {
    dg_i64 tiles, items, ktiles, slab_tiles;  // slab_tiles: k-tiles a slab (ktiles with one slab)
    bool planes, runsum;
    template <class T>
    DETGEMM_INLINE void item(dg_i64 item, dg_i64& kb, dg_i64& ke) const {
        kb = 0;
        ke = ktiles;
        if (T::SLABS && planes) {
            kb = (item / tiles) * slab_tiles;
            ke = kb + slab_tiles < ktiles ? kb + slab_tiles : ktiles;
        }
    }
};

// A position in the ring: the block's k-tiles take slots 0, 1, ...,
// STAGES - 1, 0, ... in turn; phase is the parity of the slot's use (its
// full barrier's phase, and the empty barrier's one behind). Counted, not
// divided: it % STAGES and it / STAGES of a 64-bit count cost a long
// sequence per k-tile.
struct Ring {
    int slot = 0;
    dg_u32 phase = 0;
    template <int STAGES>
    DETGEMM_INLINE void next() {
        if (++slot == STAGES) {
            slot = 0;
            phase ^= 1u;
        }
    }
};

// Producer: one thread keeps the ring full across all of the block's tiles,
// so the next tile's first stages load while the consumers store this one.
template <class T, bool A_RC, bool B_JC>
DETGEMM_INLINE void produce(const tensor_map& tmA, const tensor_map& tmB, dg_u32 ring, dg_u32 bars, const Work& w,
                            dg_i64 M, dg_i64 N) {
    constexpr int BN = T::BN, STAGES = T::STAGES;
    static_assert(!B_JC || T::B_BOXES_OK, "B read along its columns needs a multiple of 64 columns");
    prefetch_map(tmA);
    prefetch_map(tmB);
    // The ring position of the block's k-tiles, in order: slot s, and the
    // parity of its use (Ring).
    Ring r;
    for (dg_i64 item = blockIdx.x; item < w.items; item += gridDim.x) {
        dg_i64 i0, j0, kb, ke;
        w.item<T>(item, kb, ke);
        tile_origin<T::BM, BN>(item % w.tiles, M, N, i0, j0);
        for (dg_i64 kt = kb; kt < ke; ++kt, r.next<STAGES>()) {
            const int s = r.slot;
            mbar_wait(bars + 8 * (STAGES + s), r.phase ^ 1u);
            const dg_u32 full = bars + 8 * s;
            mbar_expect_tx(full, T::STAGE_BYTES);
            const dg_u32 a = ring + s * T::STAGE_BYTES, b = a + T::A_BYTES;
            const int k0 = (int)(kt * BK);
            if constexpr (A_RC) {
                tma::load_2d(a, tmA, k0, (int)i0, full);  // box 64 (r) x BM (i)
            } else {
#pragma unroll
                for (int q = 0; q < T::CONSUMERS; ++q) tma::load_2d(a + q * BOX, tmA, (int)i0 + 64 * q, k0, full);  // 64 (i) x 64 (r)
            }
            if constexpr (B_JC) {
#pragma unroll
                for (int q = 0; q < BN / 64; ++q) tma::load_2d(b + q * BOX, tmB, (int)j0 + 64 * q, k0, full);
            } else {
                tma::load_2d(b, tmB, k0, (int)j0, full);  // box 64 (r) x BN (j)
            }
        }
    }
}

// The difference between the descriptors of consecutive steps
// (step_desc(addr, kk + 1) - step_desc(addr, kk)): the start address, in
// 16-byte units in the low bits, moves 32 bytes (K-major) or 2048
// (MN-major); shared addresses stay below 2^18, so the field never carries.
template <bool CONTIG, bool IS_A>
DETGEMM_INLINE constexpr dg_u64 desc_step() {
    return (IS_A ? CONTIG : !CONTIG) ? 32 >> 4 : 2048 >> 4;
}

// The descriptor of step kk of a stage's operand at addr: K-major
// (swizzled rows of 64 halves) starts 32 bytes further along the row;
// MN-major 16 rows (two 8-row groups) on. A is K-major where A_RC (CONTIG
// of A), B where !B_JC (CONTIG of B).
template <bool CONTIG, bool IS_A>
DETGEMM_INLINE dg_u64 step_desc(dg_u32 addr, int kk) {
    constexpr bool KMAJOR = IS_A ? CONTIG : !CONTIG;
    return KMAJOR ? sw128_desc(addr + kk * 32, 16, 1024) : sw128_desc(addr + kk * 2048, BOX, 1024);
}

// The 16-bit store of a warp's 16 whole rows (wrow ..) of the tile's BN
// columns from j0, 64 columns at a time: the accumulators rounded and
// packed, written to the warp's 2 KiB of shared memory with stmatrix (the
// accumulator layout is stmatrix's fragment: lane l holds row l/4, column
// pair l%4 of each 8x8 block), rows of 128 bytes with the 16-byte units
// XOR-swizzled by row (conflict-free), then read back a 16-byte unit a
// lane and stored so that each warp access writes four whole 128-byte
// lines. Same values and bits as store_tile, in far fewer instructions.
template <int BN, int DTOUT>
DETGEMM_INLINE void store_whole(const float (&acc)[BN / 2], void* C, dg_i64 ldc, dg_i64 wrow, dg_i64 j0, int lane,
                                dg_u32 stage) {
    // stmatrix.x4: lane l gives the address of row l%8 of matrix l/8;
    // matrices (q, rows 0-7), (q, rows 8-15), (q+1, 0-7), (q+1, 8-15).
    const int mrow = ((lane >> 3) & 1) * 8 + (lane & 7), munit = lane >> 4;
    dg_u16* out = static_cast<dg_u16*>(C) + wrow * ldc + j0;
#pragma unroll
    for (int ch = 0; ch < (BN + 63) / 64; ++ch) {
        // 64 columns a chunk; 96-column tiles end on a chunk of 32 (the
        // staging keeps its 128-byte rows, half used).
        constexpr int FULL = BN / 64;
        const int units = ch < FULL ? 8 : (BN % 64) / 8;  // 16-byte units a row
#pragma unroll
        for (int qq = 0; qq < units / 2; ++qq) {
            const int q = 8 * ch + 2 * qq;
            const dg_u32 r0 = sel::round_pair<DTOUT>(acc[4 * q], acc[4 * q + 1]);
            const dg_u32 r1 = sel::round_pair<DTOUT>(acc[4 * q + 2], acc[4 * q + 3]);
            const dg_u32 r2 = sel::round_pair<DTOUT>(acc[4 * q + 4], acc[4 * q + 5]);
            const dg_u32 r3 = sel::round_pair<DTOUT>(acc[4 * q + 6], acc[4 * q + 7]);
            const dg_u32 addr = stage + mrow * 128 + (((2 * qq + munit) ^ (mrow & 7)) << 4);
            asm volatile("stmatrix.sync.aligned.m8n8.x4.shared.b16 [%0], {%1, %2, %3, %4};\n" ::"r"(addr), "r"(r0),
                         "r"(r1), "r"(r2), "r"(r3)
                         : "memory");
        }
        __syncwarp();
#pragma unroll
        for (int k = 0; k < units / 2; ++k) {
            const int u = lane + 32 * k, row = u / units, cu = u % units;
            uint4 v;
            asm volatile("ld.shared.v4.b32 {%0, %1, %2, %3}, [%4];\n"
                         : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
                         : "r"(stage + row * 128 + ((cu ^ (row & 7)) << 4))
                         : "memory");
            *reinterpret_cast<uint4*>(out + row * ldc + 64 * ch + 8 * cu) = v;
        }
        __syncwarp();
    }
}

// Epilogue: a thread owns column pairs (col0 + 8q, +1) of rows row0 and
// row0 + 8. 16-bit outputs, where C and ldc allow 16-byte accesses: the
// four threads of a quad hold one pair each of every 8-column chunk, so four
// chunks at a time are transposed across the quad (shuffles) until each
// thread holds one whole chunk and stores it with one 16-byte access — a
// warp instruction writes 8 rows x 64 contiguous bytes instead of 8 rows x
// 16. Otherwise (and for f32, whose pairs already fill a quad's 32-byte
// sector) each pair is one access when aligned, else two.
template <int BN, int DTOUT>
DETGEMM_INLINE void store_tile(const float (&acc)[BN / 2], void* C, dg_i64 M, dg_i64 N, dg_i64 ldc, dg_i64 row0,
                               dg_i64 col0, dg_i64 j0, int lane) {
    if constexpr (DTOUT != F32) {
        if ((ldc & 7) == 0 && (reinterpret_cast<dg_u64>(C) & 15u) == 0) {
            const int p = lane & 3;
#pragma unroll
            for (int g = 0; g < BN / 32; ++g) {
#pragma unroll
                for (int h = 0; h < 2; ++h) {
                    dg_u32 w[4], o[4] = {0u, 0u, 0u, 0u};
#pragma unroll
                    for (int c = 0; c < 4; ++c) {
                        const int a = 4 * (4 * g + c) + 2 * h;
                        w[c] = (dg_u32)epi::round16<DTOUT, epi::RNE_CVT>(acc[a]) |
                               ((dg_u32)epi::round16<DTOUT, epi::RNE_CVT>(acc[a + 1]) << 16);
                    }
                    // Round k: send my pair of chunk (p - k) & 3, receive
                    // quad lane s = (p + k) & 3's pair of chunk p into o[s].
#pragma unroll
                    for (int k = 0; k < 4; ++k) {
                        const int si = (p - k) & 3, s = (p + k) & 3;
                        const dg_u32 send = si == 0 ? w[0] : si == 1 ? w[1] : si == 2 ? w[2] : w[3];
                        const dg_u32 got = __shfl_sync(0xffffffffu, send, (lane & ~3) | s);
                        o[0] = s == 0 ? got : o[0];
                        o[1] = s == 1 ? got : o[1];
                        o[2] = s == 2 ? got : o[2];
                        o[3] = s == 3 ? got : o[3];
                    }
                    const dg_i64 i = row0 + 8 * h, j = j0 + 8 * (4 * g + p);
                    if (i >= M || j >= N) continue;
                    dg_u16* out = static_cast<dg_u16*>(C) + i * ldc + j;
                    if (j + 8 <= N) {
                        *reinterpret_cast<uint4*>(out) = make_uint4(o[0], o[1], o[2], o[3]);
                    } else {
#pragma unroll
                        for (int e = 0; e < 8; ++e)
                            if (j + e < N) out[e] = (dg_u16)(o[e >> 1] >> (16 * (e & 1)));
                    }
                }
            }
            return;
        }
    }
    const bool pairs = (ldc & 1) == 0 && (reinterpret_cast<dg_u64>(C) & (DTOUT == F32 ? 7u : 3u)) == 0;
#pragma unroll
    for (int q = 0; q < BN / 8; ++q) {
        const dg_i64 j = col0 + 8 * q;
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            const dg_i64 i = row0 + 8 * h;
            if (i >= M) continue;
            const float v0 = acc[4 * q + 2 * h], v1 = acc[4 * q + 2 * h + 1];
            if (pairs && j + 1 < N) {
                sel::store2<DTOUT>(C, i * ldc + j, v0, v1);
            } else {
                if (j < N) epi::store<DTOUT, epi::RNE_CVT>(C, i * ldc + j, v0);
                if (j + 1 < N) epi::store<DTOUT, epi::RNE_CVT>(C, i * ldc + j + 1, v1);
            }
        }
    }
}

// Matmul's epilogue of one element (row ii, column jj) whose chain ended
// at v. Every accumulator is defined on one path (an element outside D
// reads element 0 and is not stored): acc registers defined on some paths
// only make ptxas serialise the wgmma pipeline (C7515).
template <int DTOUT, int ACT>
DETGEMM_INLINE float mm_elem(float v, const MMArgs& mm, dg_i64 M, dg_i64 N, dg_i64 ii, dg_i64 jj) {
    const bool in = ii < M && jj < N;
    const dg_i64 i = in ? ii : 0, j = in ? jj : 0;
    if (mm.form == FORM_FOLD) {
        v = mm.C != nullptr ? __fmaf_rn(mm.alpha, v, __fmul_rn(mm.beta, epi::widen<DTOUT>(mm.C, i * mm.ldc + j)))
                            : __fmul_rn(mm.alpha, v);
        if (mm.bias != nullptr) v = epi::bias_add(v, mm.bias[j]);
    }
    const dg_i64 ax = i * mm.ldaux + j;
    v = epi::mm_act<DTOUT>(v, ACT, in || ACT == epi::ACT_DGELU ? mm.aux : nullptr, mm.mask, ax);
    if (ACT == epi::ACT_RELU && in && mm.mask != nullptr) mm.mask[ax] = epi::mm_mask<DTOUT>(v);
    return v;
}

// The raw bits mm_tile's backward epilogues read for turn t (W
// accumulators): DGELU's aux, element u of the turn in raw[u] (f32) or the
// pair u/2 in raw[u/2] (16-bit, lo the even column); DRELU's mask bytes,
// pair u/2 in the low 16 bits of raw[u/2]. A pair is one access where the
// aux or mask allows; an element outside D reads element 0.
template <int DTOUT, int ACT, int W>
DETGEMM_INLINE void mm_fetch(dg_u32 (&raw)[W], const MMArgs& mm, dg_i64 M, dg_i64 N, dg_i64 row0, dg_i64 col0, int t,
                             bool apairs, bool mpairs) {
#pragma unroll
    for (int u = 0; u < W; u += 2) {
        const dg_i64 ii = row0 + 8 * ((u / 2) % 2), jj = col0 + 8 * (t * (W / 4) + u / 4);
        const bool in0 = ii < M && jj < N, in1 = ii < M && jj + 1 < N;
        const dg_i64 x0 = in0 ? ii * mm.ldaux + jj : 0, x1 = in1 ? ii * mm.ldaux + jj + 1 : 0;
        if constexpr (ACT == epi::ACT_DRELU) {
            raw[u / 2] = mpairs && in1 ? (dg_u32) * reinterpret_cast<const dg_u16*>(mm.mask + x0)
                                       : (dg_u32)mm.mask[x0] | ((dg_u32)mm.mask[x1] << 8);
        } else if constexpr (DTOUT == F32) {
            const float* a = static_cast<const float*>(mm.aux);
            if (apairs && in1) {
                const float2 p = *reinterpret_cast<const float2*>(a + x0);
                raw[u] = __float_as_uint(p.x);
                raw[u + 1] = __float_as_uint(p.y);
            } else {
                raw[u] = __float_as_uint(a[x0]);
                raw[u + 1] = __float_as_uint(a[x1]);
            }
        } else {
            const dg_u16* a = static_cast<const dg_u16*>(mm.aux);
            raw[u / 2] = apairs && in1 ? *reinterpret_cast<const dg_u32*>(a + x0) : (dg_u32)a[x0] | ((dg_u32)a[x1] << 16);
        }
    }
}

// Element u of a turn from mm_fetch's raw bits, widened exactly (f16 as
// sel::load4 widens it).
template <int DTOUT>
DETGEMM_INLINE float mm_raw_value(const dg_u32* raw, int u) {
    if constexpr (DTOUT == F32) {
        return __uint_as_float(raw[u]);
    } else {
        const dg_u16 h = (dg_u16)(raw[u / 2] >> (16 * (u % 2)));
        if constexpr (DTOUT == BF16) {
            return dg_bf16_to_f32(h);
        } else {
            float f;
            asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
            return f;
        }
    }
}

// mm_gated's backward: turn t's a and b (W accumulators of the product
// dy, pairs of columns j = col0 + 8q, +1 at the aux's columns ca = 2·j0 +
// 16q + (col0 − j0) and ca + 8), raw as mm_fetch keeps them. An element
// outside D reads element 0.
template <int DTOUT, int W>
DETGEMM_INLINE void mm_gated_fetch(dg_u32 (&ra)[W], dg_u32 (&rb)[W], const MMArgs& mm, dg_i64 M, dg_i64 N, dg_i64 row0,
                                   dg_i64 col0, dg_i64 j0, int t, bool pairs) {
#pragma unroll
    for (int u = 0; u < W; u += 2) {
        const int q = t * (W / 4) + u / 4, h = (u / 2) % 2;
        const dg_i64 j = col0 + 8 * q, i = row0 + 8 * h;
        const bool in = j < N && i < M;
        const dg_i64 xa = in ? i * mm.ldaux + 2 * j0 + 16 * q + (col0 - j0) : 0;
        if constexpr (DTOUT == F32) {
            const float* p = static_cast<const float*>(mm.aux) + xa;
            if (pairs) {
                const float2 x = *reinterpret_cast<const float2*>(p), y = *reinterpret_cast<const float2*>(p + 8);
                ra[u] = __float_as_uint(x.x), ra[u + 1] = __float_as_uint(x.y);
                rb[u] = __float_as_uint(y.x), rb[u + 1] = __float_as_uint(y.y);
            } else {
                ra[u] = __float_as_uint(p[0]), ra[u + 1] = __float_as_uint(p[1]);
                rb[u] = __float_as_uint(p[8]), rb[u + 1] = __float_as_uint(p[9]);
            }
        } else {
            const dg_u16* p = static_cast<const dg_u16*>(mm.aux) + xa;
            if (pairs) {
                ra[u / 2] = *reinterpret_cast<const dg_u32*>(p);
                rb[u / 2] = *reinterpret_cast<const dg_u32*>(p + 8);
            } else {
                ra[u / 2] = (dg_u32)p[0] | ((dg_u32)p[1] << 16);
                rb[u / 2] = (dg_u32)p[8] | ((dg_u32)p[9] << 16);
            }
        }
    }
}

// mm_fetch for mm_turns' FAST path: the same raw bits of turn t, read at
// the row bases arow (the aux, bytes) and mrow (the mask) plus the turn's
// constant columns, every pair one access.
template <int DTOUT, int ACT, int W>
DETGEMM_INLINE void mm_fetch_rows(dg_u32 (&raw)[W], char* const (&arow)[2], unsigned char* const (&mrow)[2], int t) {
    constexpr int ES = DTOUT == F32 ? 4 : 2;
#pragma unroll
    for (int u = 0; u < W; u += 2) {
        const int h = (u / 2) % 2, c = 2 * W * t + 8 * (u / 4);
        if constexpr (ACT == epi::ACT_DRELU) {
            raw[u / 2] = (dg_u32) * reinterpret_cast<const dg_u16*>(mrow[h] + c);
        } else if constexpr (DTOUT == F32) {
            const float2 p = *reinterpret_cast<const float2*>(arow[h] + (dg_i64)c * ES);
            raw[u] = __float_as_uint(p.x);
            raw[u + 1] = __float_as_uint(p.y);
        } else {
            raw[u / 2] = *reinterpret_cast<const dg_u32*>(arow[h] + (dg_i64)c * ES);
        }
    }
}

// mm_tile's turns. FAST: the tile wholly inside D, the aux and mask (where
// given) aligned for pairs; the elements of turn t sit at row bases
// (row0, row0 + 8) plus the constant columns 2W·t + 8·(u/4) + u%2 from
// col0, and the bias of a column is read once for both rows. Otherwise
// every element is tested and indexed (an element outside D reads element
// 0 of C, the aux and the mask and is not stored: mm_elem's rule). A turn
// computes the fold form's values, then the activation as elementwise.cuh's
// select forms (the contract's operations in its order, no branch: the
// turn's values interleave), and reads or writes the aux and the mask a
// column pair per access where they are aligned for it.
template <int BN, int DTOUT, int ACT, bool FAST>
DETGEMM_INLINE void mm_turns(float (&acc)[BN / 2], const MMArgs& mm, dg_i64 M, dg_i64 N, dg_i64 row0, dg_i64 col0,
                             bool apairs, bool mpairs) {
    constexpr int W = 16;  // a turn: four 8-column chunks of both rows
    constexpr int ES = DTOUT == F32 ? 4 : 2;
    constexpr int TURNS = BN / 2 / W;
    // FAST's row bases (bytes): C, the aux and the mask at (row0 + 8h, col0).
    const char* crow[2] = {nullptr, nullptr};
    char* arow[2] = {nullptr, nullptr};
    unsigned char* mrow[2] = {nullptr, nullptr};
    if constexpr (FAST) {
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            const dg_i64 i = row0 + 8 * h;
            if (mm.C != nullptr) crow[h] = static_cast<const char*>(mm.C) + (i * mm.ldc + col0) * ES;
            if (mm.aux != nullptr) arow[h] = static_cast<char*>(mm.aux) + (i * mm.ldaux + col0) * ES;
            if (mm.mask != nullptr) mrow[h] = mm.mask + i * mm.ldaux + col0;
        }
    }
    // The backward's aux (DGELU) or mask (DRELU) of turn t + 1 is loaded
    // during turn t: in a rolled loop, loads issued where they are used
    // leave every turn waiting on their latency.
    constexpr bool READS = ACT == epi::ACT_DGELU || ACT == epi::ACT_DRELU;
    dg_u32 cur[W], nxt[W];
    if constexpr (READS) {
        if constexpr (FAST) mm_fetch_rows<DTOUT, ACT, W>(nxt, arow, mrow, 0);
        else mm_fetch<DTOUT, ACT, W>(nxt, mm, M, N, row0, col0, 0, apairs, mpairs);
    }
#pragma unroll 1
    for (int t = 0; t < TURNS; ++t) {
        if constexpr (READS) {
#pragma unroll
            for (int u = 0; u < W; ++u) cur[u] = nxt[u];
            if (t + 1 < TURNS) {
                if constexpr (FAST) mm_fetch_rows<DTOUT, ACT, W>(nxt, arow, mrow, t + 1);
                else mm_fetch<DTOUT, ACT, W>(nxt, mm, M, N, row0, col0, t + 1, apairs, mpairs);
            }
        }
        // acc[u] holds accumulator t·W + u: element (row0 + 8·((u/2)%2),
        // col0 + 8·(t·W/4 + u/4) + u%2).
        float v[W];
        bool in[W];
        dg_i64 ax[W];
        float bias[W / 2];  // FAST: column 8·(u/4) + u%2 of the turn at bias[2·(u/4) + u%2]
        if constexpr (FAST) {
            if (mm.form == FORM_FOLD && mm.bias != nullptr) {
                const float* b = mm.bias + col0 + 2 * W * t;
#pragma unroll
                for (int k = 0; k < W / 2; ++k) bias[k] = b[8 * (k / 2) + k % 2];
            }
        }
#pragma unroll
        for (int u = 0; u < W; ++u) {
            const int h = (u / 2) % 2, c = 8 * (u / 4) + u % 2;  // column in the turn
            float x = acc[u];
            if constexpr (FAST) {
                in[u] = true;
                ax[u] = 0;
                if (mm.form == FORM_FOLD) {
                    x = mm.C != nullptr
                            ? __fmaf_rn(mm.alpha, x,
                                        __fmul_rn(mm.beta, epi::widen<DTOUT>(crow[h] + (dg_i64)(2 * W * t + c) * ES, 0)))
                            : __fmul_rn(mm.alpha, x);
                    if (mm.bias != nullptr) x = epi::bias_add(x, bias[2 * (u / 4) + u % 2]);
                }
            } else {
                const dg_i64 ii = row0 + 8 * h, jj = col0 + 8 * (t * (W / 4) + u / 4) + u % 2;
                in[u] = ii < M && jj < N;
                const dg_i64 i = in[u] ? ii : 0, j = in[u] ? jj : 0;
                ax[u] = i * mm.ldaux + j;
                if (mm.form == FORM_FOLD) {
                    x = mm.C != nullptr ? __fmaf_rn(mm.alpha, x, __fmul_rn(mm.beta, epi::widen<DTOUT>(mm.C, i * mm.ldc + j)))
                                        : __fmul_rn(mm.alpha, x);
                    if (mm.bias != nullptr) x = epi::bias_add(x, mm.bias[j]);
                }
            }
            v[u] = x;
        }
        if constexpr (ACT == epi::ACT_GELU) {
            if (mm.aux != nullptr) {  // the pre-activation, rounded as D is
#pragma unroll
                for (int u = 0; u < W; u += 2) {
                    if constexpr (FAST) {
                        const int h = (u / 2) % 2, c = 8 * (u / 4);
                        sel::store2<DTOUT>(arow[h] + (dg_i64)(2 * W * t + c) * ES, 0, v[u], v[u + 1]);
                    } else if (apairs && in[u + 1]) {
                        sel::store2<DTOUT>(mm.aux, ax[u], v[u], v[u + 1]);
                    } else {
                        if (in[u]) epi::store<DTOUT, epi::RNE_CVT>(mm.aux, ax[u], v[u]);
                        if (in[u + 1]) epi::store<DTOUT, epi::RNE_CVT>(mm.aux, ax[u + 1], v[u + 1]);
                    }
                }
            }
#pragma unroll
            for (int u = 0; u < W; ++u) v[u] = sel::gelu(v[u]);
        } else if constexpr (ACT == epi::ACT_DGELU) {
            float x[W];
#pragma unroll
            for (int u = 0; u < W; ++u) x[u] = mm_raw_value<DTOUT>(cur, u);
#pragma unroll
            for (int u = 0; u < W; ++u) {
                float act, grad;
                sel::gelu_grad(x[u], &act, &grad);
                v[u] = __fmul_rn(v[u], grad);
            }
        } else if constexpr (ACT == epi::ACT_RELU) {
#pragma unroll
            for (int u = 0; u < W; ++u) v[u] = dg_relu(v[u]);
            if (mm.mask != nullptr) {
#pragma unroll
                for (int u = 0; u < W; u += 2) {
                    const unsigned char b0 = epi::mm_mask<DTOUT>(v[u]), b1 = epi::mm_mask<DTOUT>(v[u + 1]);
                    if constexpr (FAST) {
                        const int h = (u / 2) % 2, c = 8 * (u / 4);
                        *reinterpret_cast<dg_u16*>(mrow[h] + 2 * W * t + c) = (dg_u16)(b0 | (b1 << 8));
                    } else if (mpairs && in[u + 1]) {
                        *reinterpret_cast<dg_u16*>(mm.mask + ax[u]) = (dg_u16)(b0 | (b1 << 8));
                    } else {
                        if (in[u]) mm.mask[ax[u]] = b0;
                        if (in[u + 1]) mm.mask[ax[u + 1]] = b1;
                    }
                }
            }
        } else if constexpr (ACT == epi::ACT_DRELU) {
#pragma unroll
            for (int u = 0; u < W; ++u) {
                const unsigned char m = (unsigned char)(cur[u / 2] >> (8 * (u % 2)));
                const float x = v[u];
                v[u] = m == epi::MASK_ZERO ? 0.0f : (m == epi::MASK_PASS && x == x ? x : DG_F(0x7FFFFFFF));
            }
        }
        // The next turn's accumulators to the front, this turn's
        // results to the back (after all turns, each is home).
#pragma unroll
        for (int k = 0; k < BN / 2 - W; ++k) acc[k] = acc[k + W];
#pragma unroll
        for (int u = 0; u < W; ++u) acc[BN / 2 - W + u] = v[u];
    }
}

// Matmul's epilogue on a consumer thread's accumulators (INIT_MM), for
// the activation ACT compiled in; store_tile stores D after. Accumulator
// 4q + 2h + e is element (row0 + 8h, col0 + 8q + e). The activations run
// in a rolled loop (mm_turns), W accumulators a turn, the array rotated by
// W after each (register moves) so that every turn finds its values at the
// same indices: inlined at all 128 accumulators, their code (with the aux
// and mask accesses) far outgrew the instruction caches and the epilogue
// cost more than the product. whole is the block's condition that the
// tile lies wholly inside D (tile origin and arguments only, as the
// callers' store_whole test: a branch ptxas cannot prove uniform, around
// code that reads the accumulators, serialises the wgmma pipeline); with
// it, and the aux and mask aligned for pairs, the turns take their
// addresses as row bases and constant columns (no element test, no 64-bit
// index an element). Both paths run the same operations on the same
// values: the same bits.
template <int BN, int DTOUT, int ACT>
DETGEMM_INLINE void mm_tile(float (&acc)[BN / 2], const MMArgs& mm, dg_i64 M, dg_i64 N, dg_i64 row0, dg_i64 col0,
                            bool whole) {
    if constexpr (ACT == epi::ACT_NONE) {
#pragma unroll
        for (int q = 0; q < BN / 8; ++q)
#pragma unroll
            for (int h = 0; h < 2; ++h)
#pragma unroll
                for (int e = 0; e < 2; ++e)
                    acc[4 * q + 2 * h + e] = mm_elem<DTOUT, ACT>(acc[4 * q + 2 * h + e], mm, M, N, row0 + 8 * h, col0 + 8 * q + e);
    } else {
        constexpr dg_u64 PAIR_ALIGN = DTOUT == F32 ? 7u : 3u;
        const bool apairs = (mm.ldaux & 1) == 0 && (reinterpret_cast<dg_u64>(mm.aux) & PAIR_ALIGN) == 0;
        const bool mpairs = (mm.ldaux & 1) == 0 && (reinterpret_cast<dg_u64>(mm.mask) & 1u) == 0;
        if (whole && (mm.aux == nullptr || apairs) && (mm.mask == nullptr || mpairs)) {
            mm_turns<BN, DTOUT, ACT, true>(acc, mm, M, N, row0, col0, true, true);
        } else {
            mm_turns<BN, DTOUT, ACT, false>(acc, mm, M, N, row0, col0, apairs, mpairs);
        }
    }
}

// Elements e and e + 1 at p (bytes; e even) rounded as D is, stored where
// ok: one access where pairs (the pair aligned for it), else one an
// element. The 16-bit halves are round_pair's, whose bits on sm_90 are
// round16's (RNE, NaN the canonical 0x7fff) for each half alone: the
// single stores' bits too. Predicated stores, no branch.
template <int DTOUT>
DETGEMM_INLINE void store_pair_if(char* p, float v0, float v1, bool ok, bool pairs) {
    if constexpr (DTOUT == F32) {
        if (ok && pairs) *reinterpret_cast<float2*>(p) = make_float2(v0, v1);
        if (ok && !pairs) {
            reinterpret_cast<float*>(p)[0] = v0;
            reinterpret_cast<float*>(p)[1] = v1;
        }
    } else {
        const dg_u32 w = sel::round_pair<DTOUT>(v0, v1);
        if (ok && pairs) *reinterpret_cast<dg_u32*>(p) = w;
        if (ok && !pairs) {
            reinterpret_cast<dg_u16*>(p)[0] = (dg_u16)w;
            reinterpret_cast<dg_u16*>(p)[1] = (dg_u16)(w >> 16);
        }
    }
}

template <int BN, int DTOUT, int MMACT>
DETGEMM_INLINE void mm_gated_turns(float (&acc)[BN / 2], const MMArgs& mm, void* D, dg_i64 M, dg_i64 N, dg_i64 ldd,
                                   dg_i64 row0, dg_i64 col0, dg_i64 j0, bool apairs, bool dpairs) {
    constexpr bool BWD = MMACT >= epi::ACT_DGATE;
    constexpr int G = BWD ? MMACT - epi::ACT_DGATE : MMACT - epi::ACT_GATE;
    constexpr int ES = DTOUT == F32 ? 4 : 2;
    const dg_i64 t2 = col0 - j0;  // 2·(lane % 4)
    if constexpr (!BWD) {
        // The aux (the pre-activation, rounded as D is) is stored turn by
        // turn, a pair a store: store_tile's shuffles beside the live
        // accumulators made ptxas spill. One loop for every tile: the
        // addresses are row bases (row0 + 8h; the aux at col0, D at j0/2 +
        // t2) plus constant columns, each pair's store predicated on its row
        // and column (a second loop for the tiles wholly inside, beside
        // this one, made ptxas spill the accumulators in it).
        const bool rowok[2] = {row0 < M, row0 + 8 < M};
        constexpr int W = G == 4 ? 16 : 32;  // two or four output chunks a turn (GELU: two)
#pragma unroll 1
        for (int t = 0; t < BN / 2 / W; ++t) {
            if (mm.aux != nullptr) {
#pragma unroll
                for (int h = 0; h < 2; ++h) {
                    // Formed in the turn, not held across the loop: registers.
                    char* arow = static_cast<char*>(mm.aux) + ((row0 + 8 * h) * mm.ldaux + col0) * ES;
#pragma unroll
                    for (int k = 0; k < W / 4; ++k) {
                        const int c = 8 * (t * (W / 4) + k);
                        store_pair_if<DTOUT>(arow + (dg_i64)c * ES, acc[4 * k + 2 * h], acc[4 * k + 2 * h + 1],
                                             rowok[h] && col0 + c < N, apairs);
                    }
                }
            }
            float b[W / 2], y[W / 2];
#pragma unroll
            for (int k = 0; k < W / 8; ++k)
#pragma unroll
                for (int u = 0; u < 4; ++u) b[4 * k + u] = acc[8 * k + 4 + u];
            sel::acts<G, W / 2>(b, y);
#pragma unroll
            for (int k = 0; k < W / 8; ++k)
#pragma unroll
                for (int u = 0; u < 4; ++u) y[4 * k + u] = __fmul_rn(acc[8 * k + u], y[4 * k + u]);
#pragma unroll
            for (int k = 0; k < BN / 2 - W; ++k) acc[k] = acc[k + W];
#pragma unroll
            for (int u = 0; u < W / 2; ++u) acc[BN / 2 - W + u] = y[u];
        }
        // After the turns, turn t's outputs sit at acc[W·t .. W·t + W/2).
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            char* drow = static_cast<char*>(D) + ((row0 + 8 * h) * ldd + j0 / 2 + t2) * ES;
#pragma unroll
            for (int p = 0; p < BN / 16; ++p) {
                const int base = (p / (W / 8)) * W + 4 * (p % (W / 8));
                store_pair_if<DTOUT>(drow + 8 * p * ES, acc[base + 2 * h], acc[base + 2 * h + 1],
                                     rowok[h] && col0 + 16 * p < N, dpairs);
            }
        }
    } else {
        const bool pairs = dpairs && apairs;
        constexpr int W = 16;  // four chunks a turn
        // A turn's a and b (the aux at the blocks of its product columns),
        // fetched a turn ahead as mm_tile's backward does.
        dg_u32 ra[W], rb[W], na[W], nb[W];
        mm_gated_fetch<DTOUT, W>(na, nb, mm, M, N, row0, col0, j0, 0, pairs);
#pragma unroll 1
        for (int t = 0; t < BN / 2 / W; ++t) {
#pragma unroll
            for (int u = 0; u < W; ++u) ra[u] = na[u], rb[u] = nb[u];
            if (t + 1 < BN / 2 / W) mm_gated_fetch<DTOUT, W>(na, nb, mm, M, N, row0, col0, j0, t + 1, pairs);
            float a[W], b[W], act[W], grad[W];
#pragma unroll
            for (int u = 0; u < W; ++u) {
                a[u] = mm_raw_value<DTOUT>(ra, u);
                b[u] = mm_raw_value<DTOUT>(rb, u);
            }
            sel::act_grads<G, W>(b, act, grad);
#pragma unroll
            for (int u = 0; u < W; u += 2) {
                const int q = t * (W / 4) + u / 4, h = (u / 2) % 2;
                const dg_i64 j = col0 + 8 * q, ca = 2 * j0 + 16 * q + t2, i = row0 + 8 * h;  // ca: (j/8)·16 + j%8
                if (j >= N || i >= M) continue;
                float da[2], db[2];
#pragma unroll
                for (int e = 0; e < 2; ++e) {
                    const float dy = acc[u + e];
                    da[e] = __fmul_rn(dy, act[u + e]);
                    db[e] = __fmul_rn(__fmul_rn(dy, a[u + e]), grad[u + e]);
                }
                const dg_i64 xd = i * ldd + ca;
                if (pairs) {
                    sel::store2<DTOUT>(D, xd, da[0], da[1]);
                    sel::store2<DTOUT>(D, xd + 8, db[0], db[1]);
                } else {
#pragma unroll
                    for (int e = 0; e < 2; ++e) {
                        epi::store<DTOUT, epi::RNE_CVT>(D, xd + e, da[e]);
                        epi::store<DTOUT, epi::RNE_CVT>(D, xd + 8 + e, db[e]);
                    }
                }
            }
#pragma unroll
            for (int k = 0; k < BN / 2 - W; ++k) acc[k] = acc[k + W];
        }
    }
}

// Matmul's gated epilogues on a consumer thread's accumulators (INIT_MM,
// beta = 0; docs/contract.md, "Gated epilogues"). The product's columns
// come in 8-column blocks alternating a and b, so chunk 2p of a thread
// (accumulators 8p .. 8p+3) holds a and chunk 2p+1 (8p+4 .. 8p+7) the b of
// the same outputs: output (row0 + 8h, j0/2 + 8p + (col0 − j0) + e) from
// accumulators 8p + 2h + e and 8p + 4 + 2h + e. The forward stores the
// pre-activation to the aux (rounded as D is), then D = a·act(b), N/2
// wide; the backward reads a and b from the aux (2N
// wide) at the blocks of its product column j and stores da, db there in
// D. The gates run in a rolled loop (W accumulators a turn, the array
// rotated as mm_tile's), as elementwise.cuh's select forms, the
// backward's aux fetched a turn ahead (mm_gated_turns).
template <int BN, int DTOUT, int MMACT>
DETGEMM_INLINE void mm_gated(float (&acc)[BN / 2], const MMArgs& mm, void* D, dg_i64 M, dg_i64 N, dg_i64 ldd,
                             dg_i64 row0, dg_i64 col0, dg_i64 j0, int lane) {
    constexpr bool BWD = MMACT >= epi::ACT_DGATE;
    if (mm.form == FORM_FOLD) {  // alpha != 1: the chain was from +0
#pragma unroll
        for (int u = 0; u < BN / 2; ++u) {
            const dg_i64 j = col0 + 8 * (u / 4) + (u % 2);
            float v = __fmul_rn(mm.alpha, acc[u]);
            if (!BWD && mm.bias != nullptr) v = epi::bias_add(v, mm.bias[j < N ? j : 0]);
            acc[u] = v;
        }
    }
    constexpr dg_u64 PAIR_ALIGN = DTOUT == F32 ? 7u : 3u;
    const bool apairs = (mm.ldaux & 1) == 0 && (reinterpret_cast<dg_u64>(mm.aux) & PAIR_ALIGN) == 0;
    const bool dpairs = (ldd & 1) == 0 && (reinterpret_cast<dg_u64>(D) & PAIR_ALIGN) == 0;
    mm_gated_turns<BN, DTOUT, MMACT>(acc, mm, D, M, N, ldd, row0, col0, j0, apairs, dpairs);
}

// WS_RUNSUM: the running sum of a tile's slabs, kept in ws where only the
// thread that wrote a value reads it back (program order, no barrier):
// element i of consumer thread t of tile x at ws[(x * BN/2 + i) * THREADS
// + t], THREADS the consumers' threads, so that each access of a warp is
// one 128-byte line; marked to stay in L2 (evict_last) against the
// operands streaming past. first: the sum is this chain (slab 0);
// otherwise sum + acc (__fadd_rn, commutative: the plan's ((p_0 + p_1) +
// p_2) + ...). keep stores the sum back (a slab ends); otherwise acc takes
// it (the last slab, before the store). QB elements at a time, their loads
// issued before any addition waits.
template <int BN, int THREADS>
DETGEMM_INLINE void runsum_add(float (&acc)[BN / 2], float* run, bool first, bool keep, dg_u64 policy) {
    constexpr int QB = 16;
    static_assert((BN / 2) % QB == 0, "whole batches");
#pragma unroll
    for (int i0 = 0; i0 < BN / 2; i0 += QB) {
        float old[QB];
#pragma unroll
        for (int u = 0; u < QB; ++u) {
            old[u] = 0.0f;
            if (!first)
                asm volatile("ld.global.L2::cache_hint.f32 %0, [%1], %2;"
                             : "=f"(old[u])
                             : "l"(run + (i0 + u) * THREADS), "l"(policy));
        }
#pragma unroll
        for (int u = 0; u < QB; ++u) {
            const float v = first ? acc[i0 + u] : epi::fold_add(old[u], acc[i0 + u]);
            if (keep) {
                asm volatile("st.global.L2::cache_hint.f32 [%0], %1, %2;" ::"l"(run + (i0 + u) * THREADS), "f"(v),
                             "l"(policy));
            } else {
                acc[i0 + u] = v;
            }
        }
    }
}

// Consumers: warpgroup c owns rows [64c, 64c + 64) of each tile.
template <class T, int DTIN, int DTOUT, bool A_RC, bool B_JC, int INIT, class Act, int MMACT>
DETGEMM_INLINE void consume(dg_u32 ring, dg_u32 bars, const Work& w, int c, void* C, const float* bias, float* ws,
                            dg_i64 M, dg_i64 N, dg_i64 ldc, const MMArgs& mm) {
    constexpr int BN = T::BN, STAGES = T::STAGES;
    constexpr int TA = A_RC ? 0 : 1, TB = B_JC ? 1 : 0;
    const int warp = (threadIdx.x / 32) % 4, lane = threadIdx.x % 32;
    extern __shared__ unsigned char smem_raw[];
    const float* zeros = reinterpret_cast<const float*>(smem_raw + (bars + 16 * STAGES - smem_addr(smem_raw)));
    dg_u64 policy = 0;
    if constexpr (T::RUNSUM) asm volatile("createpolicy.fractional.L2::evict_last.b64 %0, 1.0;" : "=l"(policy));

    // The descriptors of slot 0's first step: a step, a slot on are the
    // same descriptors plus constants (desc_step), so the hot loop adds in
    // the uniform datapath. c comes through a shuffle so that ptxas knows
    // it is the same in every lane and keeps A's descriptor uniform too.
    const int cu = __shfl_sync(0xffffffffu, c, 0);
    const dg_u64 da0 = step_desc<A_RC, true>(ring + cu * BOX, 0), db0 = step_desc<B_JC, false>(ring + T::A_BYTES, 0);
    Ring r;        // as the producer's
    int prev = 0;  // the slot of the k-tile before, released once its steps are done
    for (dg_i64 item = blockIdx.x; item < w.items; item += gridDim.x) {
        dg_i64 i0, j0, kb, ke;
        w.item<T>(item, kb, ke);
        tile_origin<T::BM, BN>(item % w.tiles, M, N, i0, j0);
        const dg_i64 row0 = i0 + c * 64 + warp * 16 + lane / 4;  // and row0 + 8
        const dg_i64 col0 = j0 + 2 * (lane % 4);                 // + 8q, and + 1
        // Slab 0's chain starts at the start value; a later slab's at +0.
        const bool start = !T::SLABS || kb == 0;
        // WS_RUNSUM: this thread's running sums (runsum_add).
        float* run = ws + (item % w.tiles) * (T::BM * BN) + (threadIdx.x - 128);
        // Where the item's result goes: C, or (planes) dW's slab 0 in place
        // in C and every other slab to its f32 plane of ws (row stride N).
        void* out = C;
        dg_i64 ldo = ldc;
        if (T::SLABS && w.planes && !(INIT == INIT_OLD && start)) {
            out = ws + (item / w.tiles - (INIT == INIT_OLD ? 1 : 0)) * M * N;
            ldo = N;
        }

        // Without a bias every chain starts at +0, read from zeros in shared
        // memory rather than written as a constant: with constant
        // accumulators on one path, ptxas versions the pipeline and
        // serialises every wgmma of the kernel (warning C7515).
        const float* bsrc = bias != nullptr && start ? bias : zeros - j0;  // indexed by column
        asm volatile("" : "+l"(bsrc));                                     // one path from here on
        const float* osrc = static_cast<const float*>(C);                  // dW's old values
        dg_i64 old_ld = ldc;
        if constexpr (T::SLABS) {
            if (!start) osrc = zeros - j0, old_ld = 0;
            asm volatile("" : "+l"(osrc), "+l"(old_ld));
        }
        float acc[BN / 2];
        // The start values, one code path for every tile (a second path
        // that writes the accumulators makes ptxas serialise the wgmma
        // pipeline, C7515): this thread's columns are col0 + 8q + e, so
        // one 32-bit test against the columns left, and a bias value
        // serves both of the thread's rows.
        {
            const int left = (int)(N - col0 < BN ? N - col0 : BN);
            const float* b = bsrc + col0;
            const float* o0 = osrc + row0 * old_ld + col0;
            const float* o1 = o0 + 8 * old_ld;
            const bool r0 = row0 < M, r1 = row0 + 8 < M;
#pragma unroll
            for (int q = 0; q < BN / 8; ++q) {
#pragma unroll
                for (int e = 0; e < 2; ++e) {
                    const int col = 8 * q + e;
                    float v0 = 0.0f, v1 = 0.0f;
                    if constexpr (INIT == INIT_BIAS || INIT == INIT_MM) {
                        if (col < left) v0 = b[col];
                        v1 = v0;
                    } else if constexpr (INIT == INIT_OLD) {
                        if (r0 && col < left) v0 = o0[col];
                        if (r1 && col < left) v1 = o1[col];
                    }
                    acc[4 * q + e] = v0;
                    acc[4 * q + 2 + e] = v1;
                }
            }
        }

        fence_acc(acc);
        float sum[T::REGSUM ? BN / 2 : 1];  // REGSUM: the slabs' running sum
        // The item's k-tiles, cut where a slab ends inside the item
        // (WS_RUNSUM, REGSUM); the hot loop itself has no fold.
        for (dg_i64 sb = kb; sb < ke;) {
            const dg_i64 se = ((T::RUNSUM && w.runsum) || T::REGSUM) && sb + w.slab_tiles < ke ? sb + w.slab_tiles : ke;
            for (dg_i64 kt = sb; kt < se; ++kt, r.next<STAGES>()) {
                const int s = r.slot;
                mbar_wait(bars + 8 * s, r.phase);
                const dg_u64 slot = (dg_u64)(s * (T::STAGE_BYTES >> 4));
                wgmma_fence();
                // One code path for every stage, four steps each, with no
                // branch or guard (mma_step). A step wholly past the end
                // meets only TMA's +0 fill: all its products are zero, so
                // it leaves every accumulator as it is (a nonzero one bit
                // for bit; a zero one is +0 after the chain's first step,
                // which always has some of the reduction, since a step's
                // zero result is +0: docs/contract.md). (With a second
                // path for whole stages, ptxas 13 serialised the pipeline.)
#pragma unroll
                for (int kk = 0; kk < BK / 16; ++kk)
                    mma_step<BN, DTIN, TA, TB>(acc, da0 + slot + kk * desc_step<A_RC, true>(),
                                               db0 + slot + kk * desc_step<B_JC, false>());
                wgmma_commit();
                // The previous stage's steps are done once at most this one's
                // group is pending: hand its buffers back to the producer.
                wgmma_wait<1>();
                fence_acc(acc);
                if (kt > kb && lane == 0) mbar_arrive(bars + 8 * (STAGES + prev));
                prev = s;
            }
            if constexpr (T::REGSUM) {
                if (se < ke) {
                    // A slab ends inside the item: its chain joins the
                    // running sum, ((p_0 + p_1) + p_2) + ... in IEEE f32
                    // (runsum_add's order), and the next starts from +0.
                    wgmma_wait<0>();
                    fence_acc(acc);
                    if (sb == kb) {
#pragma unroll
                        for (int i = 0; i < BN / 2; ++i) sum[i] = acc[i];
                    } else {
#pragma unroll
                        for (int i = 0; i < BN / 2; ++i) sum[i] = epi::fold_add(sum[i], acc[i]);
                    }
#pragma unroll
                    for (int i = 0; i < BN / 2; ++i) acc[i] = zeros[i];
                    fence_acc(acc);
                }
            }
            if constexpr (T::RUNSUM) {
                if (se < ke) {
                    // A slab ends inside the item: its chain joins the
                    // running sum in ws, and the next starts from +0 (zeros
                    // from shared memory, as above).
                    wgmma_wait<0>();
                    fence_acc(acc);
                    runsum_add<BN, 128 * T::CONSUMERS>(acc, run, sb == kb, true, policy);
#pragma unroll
                    for (int i = 0; i < BN / 2; ++i) acc[i] = zeros[i];
                    fence_acc(acc);
                }
            }
            sb = se;
        }
        wgmma_wait<0>();
        fence_acc(acc);
        if (lane == 0) mbar_arrive(bars + 8 * (STAGES + prev));
        if constexpr (T::RUNSUM) {
            if (w.runsum && ke - kb > w.slab_tiles) runsum_add<BN, 128 * T::CONSUMERS>(acc, run, false, false, policy);
        }
        if constexpr (T::REGSUM) {
            if (ke - kb > w.slab_tiles) {
#pragma unroll
                for (int i = 0; i < BN / 2; ++i) acc[i] = epi::fold_add(sum[i], acc[i]);
            }
        }

        // The block's last item: only its stores are left, so the next grid
        // (launched overlapped) may be scheduled.
        if (item + gridDim.x >= w.items) dg_launch_dependents();
        // The activation applies to final outputs only: not to dW, and not
        // in the slab variants, whose f32 results (partial planes, or a
        // running sum that gemm_fold rounds for 16-bit outputs) may still
        // be folded; a sliced call's activation belongs to its last step.
        if constexpr (INIT == INIT_MM && MMACT >= epi::ACT_GATE) {
            mm_gated<BN, DTOUT, MMACT>(acc, mm, out, M, N, ldo, row0, col0, j0, lane);
            continue;  // it stores D itself
        } else if constexpr (INIT == INIT_MM) {
            mm_tile<BN, DTOUT, MMACT>(acc, mm, M, N, row0, col0, i0 + T::BM <= M && j0 + BN <= N);
        } else if constexpr (INIT != INIT_OLD && (!T::SLABS || T::REGSUM)) {
#pragma unroll
            for (int i = 0; i < BN / 2; ++i) acc[i] = epi::act<Act>(acc[i]);
        }
        if constexpr (DTOUT == F32) {
            // A tile wholly inside the output, pairs 8-byte aligned: one
            // access a pair, no bounds (the condition is the block's, as
            // below).
            if (i0 + T::BM <= M && j0 + BN <= N && (ldo & 1) == 0 && (reinterpret_cast<dg_u64>(out) & 7u) == 0) {
                float* o0 = static_cast<float*>(out) + row0 * ldo + col0;
                float* o1 = o0 + 8 * ldo;
#pragma unroll
                for (int q = 0; q < BN / 8; ++q) {
                    *reinterpret_cast<float2*>(o0 + 8 * q) = make_float2(acc[4 * q], acc[4 * q + 1]);
                    *reinterpret_cast<float2*>(o1 + 8 * q) = make_float2(acc[4 * q + 2], acc[4 * q + 3]);
                }
                continue;
            }
        } else {
            // A tile wholly inside D, 16-byte aligned: staged through
            // shared memory and stored by whole lines. The condition is the
            // block's (tile origin and arguments), never a warp's: a branch
            // that ptxas cannot prove uniform, around code that reads the
            // accumulators, makes it serialise the wgmma pipeline (C7520).
            if (i0 + T::BM <= M && j0 + BN <= N && (ldo & 7) == 0 && (reinterpret_cast<dg_u64>(out) & 15u) == 0) {
                const dg_u32 stage = ((bars + 16 * STAGES + BN * 4 + 127u) & ~127u) + (c * 4 + warp) * T::EPI_WARP_BYTES;
                store_whole<BN, DTOUT>(acc, out, ldo, i0 + c * 64 + warp * 16, j0, lane, stage);
                continue;
            }
        }
        store_tile<BN, DTOUT>(acc, out, M, N, ldo, row0, col0, j0, lane);
    }
}

// A persistent kernel: the grid has at most one block per SM, and block b
// computes tiles b, b + gridDim.x, ... (which tile a block computes never
// changes a bit).
template <class T, int DTIN, int DTOUT, bool A_RC, bool B_JC, int INIT, class Act = epi::Identity, int MMACT = epi::ACT_NONE>
DETGEMM_INLINE void gemm(const tensor_map& tmA, const tensor_map& tmB, void* C, const float* bias, dg_i64 M,
                         dg_i64 N, dg_i64 R, dg_i64 ldc, float* ws, dg_i64 L, int ws_mode, const MMArgs& mm = MMArgs{}) {
    constexpr int BN = T::BN, STAGES = T::STAGES;
    extern __shared__ unsigned char smem_raw[];
    const dg_u32 ring = (smem_addr(smem_raw) + 1023u) & ~1023u;
    const dg_u32 bars = ring + STAGES * T::STAGE_BYTES;  // full[STAGES], empty[STAGES], zeros[BN]

    if (threadIdx.x < BN) {
        asm volatile("st.shared.u32 [%0], 0;\n" ::"r"(bars + 16 * STAGES + 4 * threadIdx.x) : "memory");
    }
    if (threadIdx.x == 0) {
        for (int s = 0; s < STAGES; ++s) {
            mbar_init(bars + 8 * s, 1);             // the producer's expect_tx arrival
            mbar_init(bars + 8 * (STAGES + s), 4 * T::CONSUMERS);  // one arrival per consumer warp
        }
        tma::fence_barrier_init();
    }
    __syncthreads();

    // The plan's slabs: L (a multiple of BK) >= R for one slab.
    Work w;
    w.tiles = ((M + T::BM - 1) / T::BM) * ((N + BN - 1) / BN);
    w.ktiles = (R + BK - 1) / BK;
    w.slab_tiles = L < R ? L / BK : w.ktiles;
    w.planes = T::SLABS && ws_mode == WS_PLANES;
    w.runsum = T::RUNSUM && ws_mode == WS_RUNSUM;
    w.items = w.planes ? w.tiles * ((w.ktiles + w.slab_tiles - 1) / w.slab_tiles) : w.tiles;
    if (threadIdx.x < 128) {
        // The producer warpgroup gives its registers to the consumers
        // (setmaxnreg needs the cap of __launch_bounds__(THREADS, 1) and one
        // branch per role).
        asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(T::PRODUCER_REGS) : "memory");
        if (threadIdx.x == 0) produce<T, A_RC, B_JC>(tmA, tmB, ring, bars, w, M, N);
    } else {
        asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(T::CONSUMER_REGS) : "memory");
        consume<T, DTIN, DTOUT, A_RC, B_JC, INIT, Act, MMACT>(ring, bars, w, threadIdx.x / 128 - 1, C, bias, ws, M, N, ldc, mm);
    }
}

// The tiles and their rings: 128x256 (4 stages, 192 KiB), 128x192 (5,
// 200 KiB), 128x128 (6, 192 KiB), 192x192 (4, 192 KiB). Several shapes
// exist for wave quantisation on 132 SMs: 1536x3072 outputs are 144 tiles
// of 128x256 (two rounds, the second nearly empty), 192 of 128x192, but 128
// of 192x192 (one round). The narrow tiles, 128x96 (7, 196 KiB; B read
// along the reduction only) and 128x64 (8, 192 KiB), are for outputs whose
// 128x128 grid leaves SMs idle: 2048x768 is 96 tiles of 128x128 but 128 of
// 128x96, 2048x512 64 of 128x128 but 128 of 128x64.
typedef Tile<128, 256, 4> T128x256;
typedef Tile<128, 192, 5> T128x192;
typedef Tile<128, 128, 6> T128x128;
typedef Tile<192, 192, 4> T192x192;
typedef Tile<128, 96, 7> T128x96;
typedef Tile<128, 64, 8> T128x64;
// The slab variants (Tile::SLABS): 128x128 for planes on small grids, all
// three for running sums on full ones; f32 outputs only (a 16-bit output
// of running sums is the last sum, rounded by gemm_fold), since their
// 16-bit stores left ptxas too few registers to pipeline the wgmma
// (C7511: serialized).
typedef Tile<128, 128, 6, true> T128x128S;
typedef Tile<128, 192, 5, true> T128x192S;
typedef Tile<128, 256, 4, true> T128x256S;
// The slab variant with the running sum in registers (Tile::REGSUM):
// 96 accumulators and 96 sums a consumer thread; any output type.
typedef Tile<128, 192, 5, true, true> T128x192R;

}  // namespace wg

// Entry points: detgemm_wg{BM}x{BN}[s]_{nn,nt,tn}_{in}_{out} (s: the slab
// variants). Arguments: the
// TMA maps of A and B (built by the engine for this call), C, bias
// (nullable), M, N, R, ldc, ws (the partial planes or the running sums;
// nullable with one slab), the plan's slab length L (>= R: one slab) and
// ws_mode (0, WS_PLANES, or WS_RUNSUM on tiles with Tile::RUNSUM). Tile::THREADS threads; grid:
// min(items, SMs).
#define DETGEMM_WG_ENTRY(NAME, TILE, DTIN, DTOUT, ARC, BJC, INIT)                                            \
    DETGEMM_KERNEL void __launch_bounds__(wg::TILE::THREADS, 1)                                                     \
        NAME(const __grid_constant__ wg::tensor_map tmA, const __grid_constant__ wg::tensor_map tmB, void* C, \
             const float* bias, dg_i64 M, dg_i64 N, dg_i64 R, dg_i64 ldc, float* ws, dg_i64 L, int ws_mode) { \
        dg_grid_dependency_wait();                                                                            \
        wg::gemm<wg::TILE, DTIN, DTOUT, ARC, BJC, INIT>(tmA, tmB, C, bias, M, N, R, ldc, ws, L, ws_mode);     \
    }
