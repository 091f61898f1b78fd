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

#include "zgemm_wgmma_slabs_entries.cuh"
