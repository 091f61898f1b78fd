// async_copy.cuh: the cp.async wrappers every family that stages through
// shared memory uses (sm_80 and newer), written once.
//
// The forms differ on purpose and are not interchangeable: the L2::256B
// hint makes L2 fetch the whole 256-byte sector group from memory at once
// (a win for streams that read whole rows, a loss for tiles that read
// short pieces of many rows); the zero-fill forms (src_bytes) let edge
// copies stage zeros without a branch; the "memory" clobber orders a copy
// against the thread's surrounding memory accesses where a family relies
// on it. Each family keeps the form it was tuned with (bench/NOTES-*.md).
#pragma once
#include "prelude.cuh"

namespace dgcp {

// The shared-memory address of a generic pointer into shared memory.
DETGEMM_INLINE dg_u32 smem_addr(const void* p) {
    return static_cast<dg_u32>(__cvta_generic_to_shared(p));
}

// 16-byte async copy; bytes beyond src_bytes (0..16) are zero-filled.
DETGEMM_INLINE void cp_async16(void* dst, const void* src, int src_bytes) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem_addr(dst)), "l"(src), "r"(src_bytes));
}

// cp_async16 with the L2::256B prefetch hint.
DETGEMM_INLINE void cp_async16_l2(void* dst, const void* src, int src_bytes) {
    asm volatile("cp.async.cg.shared.global.L2::256B [%0], [%1], 16, %2;\n" ::"r"(smem_addr(dst)), "l"(src), "r"(src_bytes));
}

// A whole 16-byte copy with the L2::256B hint, ordered as a memory access
// (both addresses 16-byte aligned).
DETGEMM_INLINE void cp_async16_l2_whole(void* dst, const void* src) {
    asm volatile("cp.async.cg.shared.global.L2::256B [%0], [%1], 16;\n" ::"r"(smem_addr(dst)), "l"(src) : "memory");
}

// A whole 4-byte copy (through L1), ordered as a memory access.
DETGEMM_INLINE void cp_async4_whole(void* dst, const void* src) {
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4;\n" ::"r"(smem_addr(dst)), "l"(src) : "memory");
}

// 4-byte async copy (through L1); bytes past src_bytes (0 or 4) are
// zero-filled.
DETGEMM_INLINE void cp_async4(void* dst, const void* src, int src_bytes) {
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(smem_addr(dst)), "l"(src), "r"(src_bytes));
}

// Closes the thread's group of copies issued since the last commit.
DETGEMM_INLINE void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }

// Waits until at most N of the thread's committed groups are in flight.
template <int N>
DETGEMM_INLINE void cp_async_wait() { asm volatile("cp.async.wait_group %0;\n" ::"n"(N)); }

// Waits for every copy the thread issued, committed or not.
DETGEMM_INLINE void cp_async_wait_all() { asm volatile("cp.async.wait_all;\n" ::: "memory"); }

}  // namespace dgcp
