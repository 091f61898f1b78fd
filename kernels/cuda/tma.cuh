// tma.cuh: the bulk tensor copy engine (TMA, sm_90) as the Hopper families
// use it: a CUtensorMap passed by value, 2-D and 3-D tile copies into
// shared memory completing on an mbarrier by transaction bytes.
#pragma once
#include "prelude.cuh"

namespace tma {

// A TMA descriptor (CUtensorMap) passed by value as a __grid_constant__
// parameter, so the copy engine reads it from the parameter space.
struct __align__(64) tensor_map {
    dg_u64 opaque[16];
};

// The producer's arrival on a full barrier, announcing the bytes its
// copies will complete.
DETGEMM_INLINE void mbar_expect_tx(dg_u32 bar, dg_u32 bytes) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar), "r"(bytes) : "memory");
}

// One 2-D TMA copy of the box at (c0 innermost, c1) into shared memory dst,
// completing on bar; elements past the matrix arrive as zeros.
DETGEMM_INLINE void load_2d(dg_u32 dst, const tensor_map& map, int c0, int c1, dg_u32 bar) {
    asm volatile(
        "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];\n" ::"r"(dst),
        "l"(reinterpret_cast<dg_u64>(&map)), "r"(c0), "r"(c1), "r"(bar)
        : "memory");
}

// load_2d's copy multicast: the box lands at dst, and completes on bar, in
// every block of the cluster named in cta_mask (bit r: rank r).
DETGEMM_INLINE void load_2d_multicast(dg_u32 dst, const tensor_map& map, int c0, int c1, dg_u32 bar, dg_u16 cta_mask) {
    asm volatile(
        "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.multicast::cluster [%0], [%1, {%2, %3}], [%4], %5;\n" ::"r"(dst),
        "l"(reinterpret_cast<dg_u64>(&map)), "r"(c0), "r"(c1), "r"(bar), "h"(cta_mask)
        : "memory");
}

// One 3-D TMA copy of the box at (c0 innermost, c1, c2): with a map that
// reads a matrix as (chunk of a row, row, chunk index), one copy lays
// several neighbouring 2-D boxes one after another in shared memory.
DETGEMM_INLINE void load_3d(dg_u32 dst, const tensor_map& map, int c0, int c1, int c2, dg_u32 bar) {
    asm volatile(
        "cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4}], [%5];\n" ::"r"(dst),
        "l"(reinterpret_cast<dg_u64>(&map)), "r"(c0), "r"(c1), "r"(c2), "r"(bar)
        : "memory");
}

// Fetches the descriptor ahead of the first copy.
DETGEMM_INLINE void prefetch_map(const tensor_map& map) {
    asm volatile("prefetch.tensormap [%0];\n" ::"l"(reinterpret_cast<dg_u64>(&map)) : "memory");
}

// Makes freshly initialised mbarriers visible to the copy engine (the
// async proxy).
DETGEMM_INLINE void fence_barrier_init() { asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory"); }

}  // namespace tma
