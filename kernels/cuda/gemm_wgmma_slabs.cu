// gemm_wgmma_slabs.cu: the slab variants of gemm_wgmma.cu's tiles
// (Tile::SLABS, wgmma.cuh), which run a tensor-core plan whose reduction is
// cut into slabs (ref.TCSlabs, TCDWSlabs): one block a tile and slab with
// each slab's chain to an f32 partial plane (WS_PLANES, gemm_fold adds
// them), or one block a tile keeping the slabs' running sums in the
// workspace (WS_RUNSUM). f32 outputs only: with 16-bit stores ptxas had
// too few registers to pipeline the wgmma. A family of its own so that
// the cold build compiles it beside gemm_wgmma.
//detgemm:only sm_90a
#include "prelude.cuh"
#include "wgmma.cuh"

DETGEMM_WG_ENTRY(detgemm_wg128x128s_nn_bf16_f32, T128x128S, wg::BF16, wg::F32, true, true, wg::INIT_BIAS)
DETGEMM_WG_ENTRY(detgemm_wg128x128s_nn_f16_f32, T128x128S, wg::F16, wg::F32, true, true, wg::INIT_BIAS)
DETGEMM_WG_ENTRY(detgemm_wg128x128s_nt_bf16_f32, T128x128S, wg::BF16, wg::F32, true, false, wg::INIT_ZERO)
DETGEMM_WG_ENTRY(detgemm_wg128x128s_nt_f16_f32, T128x128S, wg::F16, wg::F32, true, false, wg::INIT_ZERO)
DETGEMM_WG_ENTRY(detgemm_wg128x128s_tn_bf16_f32, T128x128S, wg::BF16, wg::F32, false, true, wg::INIT_OLD)
DETGEMM_WG_ENTRY(detgemm_wg128x128s_tn_f16_f32, T128x128S, wg::F16, wg::F32, false, true, wg::INIT_OLD)
DETGEMM_WG_ENTRY(detgemm_wg128x192s_nn_bf16_f32, T128x192S, wg::BF16, wg::F32, true, true, wg::INIT_BIAS)
DETGEMM_WG_ENTRY(detgemm_wg128x192s_nn_f16_f32, T128x192S, wg::F16, wg::F32, true, true, wg::INIT_BIAS)
DETGEMM_WG_ENTRY(detgemm_wg128x192s_nt_bf16_f32, T128x192S, wg::BF16, wg::F32, true, false, wg::INIT_ZERO)
DETGEMM_WG_ENTRY(detgemm_wg128x192s_nt_f16_f32, T128x192S, wg::F16, wg::F32, true, false, wg::INIT_ZERO)
DETGEMM_WG_ENTRY(detgemm_wg128x192s_tn_bf16_f32, T128x192S, wg::BF16, wg::F32, false, true, wg::INIT_OLD)
DETGEMM_WG_ENTRY(detgemm_wg128x192s_tn_f16_f32, T128x192S, wg::F16, wg::F32, false, true, wg::INIT_OLD)
DETGEMM_WG_ENTRY(detgemm_wg128x256s_nn_bf16_f32, T128x256S, wg::BF16, wg::F32, true, true, wg::INIT_BIAS)
DETGEMM_WG_ENTRY(detgemm_wg128x256s_nn_f16_f32, T128x256S, wg::F16, wg::F32, true, true, wg::INIT_BIAS)
DETGEMM_WG_ENTRY(detgemm_wg128x256s_nt_bf16_f32, T128x256S, wg::BF16, wg::F32, true, false, wg::INIT_ZERO)
DETGEMM_WG_ENTRY(detgemm_wg128x256s_nt_f16_f32, T128x256S, wg::F16, wg::F32, true, false, wg::INIT_ZERO)
DETGEMM_WG_ENTRY(detgemm_wg128x256s_tn_bf16_f32, T128x256S, wg::BF16, wg::F32, false, true, wg::INIT_OLD)
DETGEMM_WG_ENTRY(detgemm_wg128x256s_tn_f16_f32, T128x256S, wg::F16, wg::F32, false, true, wg::INIT_OLD)
