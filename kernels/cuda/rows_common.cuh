// rows_common.cuh: what the two few-row IEEE families share: gemm_rows.cu
// (the slab partials of the two-launch path) and gemm_rows_fused.cu (the
// one-launch path). Both run the plan's slab chains with a block owning one
// slab of the reduction for a run of columns and up to MR rows, so they
// share the slab length, the element codes and their exact widening, and
// the staging of the block's rows of the left operand in shared memory.
#pragma once
#include "prelude.cuh"
#include "raw.cuh"

namespace rowsk {

// The contract's slab length.
constexpr int SLAB = 256;

// Element codes shared with the Go dispatcher.
using dgraw::F32;
using dgraw::BF16;
using dgraw::F16;

using dgraw::raw_of;  // raw.cuh
using dgraw::widen;

}  // namespace rowsk
