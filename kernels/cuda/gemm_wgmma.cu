// gemm_wgmma.cu: the tensor-core tier on Hopper (sm_90a only): warpgroup
// wgmma fed by the bulk tensor copy engine (TMA).
//
// Same contract as gemm_tc.cu, bit for bit: per output element the f32
// accumulator starts at the bias (forward), +0 (dX) or the current dW value,
// and consumes the reduction in ascending 16-wide steps — here one
// wgmma.m64nNk16 per step, issued in k order on the same accumulators, which
// on the H200 adds exactly as mma.sync.m16n8k16 does (design.md: both match
// the same per-element block model). TMA zero-fills everything past the
// matrix, so the tail of the last step is 0 on both operands; steps that
// would lie wholly past the end are never issued; one RNE rounding at the
// store. The tile shape therefore never changes a bit, and the dispatcher
// may pick this family or gemm_tc's by shape and alignment.
//
// Layout names follow gemm_tc.cu: C[i, j] (op)= sum_r A(i, r) B(r, j) with
//   A(i, r) = A_RC ? A[i*lda + r] : A[r*lda + i]
//   B(r, j) = B_JC ? B[r*ldb + j] : B[j*ldb + r]
// Both operands are staged by TMA with the 128-byte swizzle, 64 halves (one
// swizzle row) along the contiguous axis per copy, and read by wgmma straight
// from shared memory through matrix descriptors: K-major where the
// contiguous axis is r (A of nn/nt, B of nt), MN-major ("transposed", a
// bf16/f16-only wgmma mode) where it is i or j (A of tn, B of nn/tn).
//
// A block is a producer warpgroup (one thread issues the copies of a
// STAGES-deep ring, gated by "empty" mbarriers) and one consumer warpgroup
// per 64 rows of the tile (two or three), which wait on "full" mbarriers
// that TMA completes by transaction bytes. The grid is persistent: a block
// loops over tiles, and the producer runs ahead into the next one while the
// consumers store.
//
// The whole family needs sm_90a (wgmma): the directive below tells the
// kernels package to build it for that target only.
//detgemm:only sm_90a
#include "prelude.cuh"
#include "wgmma.cuh"

#include "zgemm_wgmma_entries.cuh"
