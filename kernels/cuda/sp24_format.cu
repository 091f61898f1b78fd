// sp24_format.cu: the 2:4 structured-sparsity format along K of a weight
// W[K,N] (row-major, leading dimension ldw): prune in place, compress to
// values + metadata, both fused, decompress, mask, and a metadata check
// (docs/contract.md, section "2:4 sparse format"; gemm/ref/sp24_format.go
// is the CPU twin, bit for bit).
//
// Group q of column n is rows 4q..4q+3 of that column. The compressed form
// (K a multiple of 16): values, N rows of K/2 16-bit elements, row n the two
// kept elements of each group of column n, ascending (one 32-bit word a
// group: the first kept element in the low half); meta, N rows of MW =
// ceil(K/32) words, group q's nibble at bits 4·(q%8) of word q/8 of its row
// (bits 0-1 the first kept row, bits 2-3 the second), 0x4 for groups past
// K/4.
//
// Every kernel works on tiles of 32·V columns × 32 groups (128 rows):
// 256 threads, thread t on column tile position t % 32 (V adjacent columns
// from there: V = 2 packs two 16-bit columns in one 32-bit access) and
// groups t / 32 + 8i, i < 4, so the loads and stores of W run along N,
// coalesced. The compressed form is transposed through shared memory and
// written as 16-byte chunks of a values row and 32-bit metadata words.
// Nothing depends on the grid: each element's result is a function of its
// own group.
#include "prelude.cuh"

namespace sp24f {

enum { F32 = 0, BF16 = 1, F16 = 2 };

constexpr int THREADS = 256;
constexpr int TQ = 32;               // groups a tile (128 rows of K)
constexpr int LANES = THREADS / 32;  // threads on one column, TQ / LANES groups each
constexpr int GPT = TQ / LANES;      // groups a thread
constexpr dg_u32 UNUSED = 0x4u;      // the nibble of a group past K/4
constexpr dg_u64 NONE = ~0ull;       // no bad group found

// The pruning key of one element's bits: |w| widened exactly to f32, as
// bits (their order is the magnitudes'), a NaN above everything.
template <int T>
DETGEMM_INLINE dg_u32 key(dg_u32 b) {
    if constexpr (T == F32) {
        const dg_u32 a = b & 0x7fffffffu;
        return a > 0x7f800000u ? 0xffffffffu : a;
    } else if constexpr (T == BF16) {
        const dg_u32 a = b & 0x7fffu;
        return a > 0x7f80u ? 0xffffffffu : a << 16;
    } else {
        // Binary16's magnitudes order as its bits do, as their exact f32
        // widenings do.
        const dg_u32 a = b & 0x7fffu;
        return a > 0x7c00u ? 0xffffffffu : a;
    }
}

// Zero: ±0 (a NaN is nonzero).
template <int T>
DETGEMM_INLINE bool is_zero(dg_u32 b) {
    return (b & (T == F32 ? 0x7fffffffu : 0x7fffu)) == 0u;
}

// The two rows pruning keeps, as a 4-bit mask: element i stays iff fewer
// than 2 elements j beat it (key j > key i, or equal and j < i).
DETGEMM_INLINE dg_u32 keep_mask(const dg_u32 (&k)[4]) {
    dg_u32 m = 0u;
#pragma unroll
    for (int i = 0; i < 4; ++i) {
        int beat = 0;
#pragma unroll
        for (int j = 0; j < 4; ++j) {
            beat += (k[j] > k[i]) || (k[j] == k[i] && j < i);
        }
        m |= beat < 2 ? 1u << i : 0u;
    }
    return m;
}

// The rows compression keeps, as a 4-bit mask with two bits set: those of
// the nonzeros (mask nz), filled with the lowest zero rows; *bad when more
// than two are nonzero (then the lowest two nonzeros, never stored).
DETGEMM_INLINE dg_u32 compress_mask(dg_u32 nz, bool* bad) {
    const int c = __popc(nz);
    *bad = c > 2;
    if (c >= 2) {
        const dg_u32 lo = nz & (0u - nz);
        const dg_u32 rest = nz & ~lo;
        return lo | (rest & (0u - rest));
    }
    const dg_u32 z = ~nz & 0xfu;
    if (c == 1) return nz | (z & (0u - z));
    return 0x3u;
}

// A two-bit mask's nibble: the first row in bits 0-1, the second in 2-3.
DETGEMM_INLINE dg_u32 nibble_of(dg_u32 m) {
    const dg_u32 p0 = (dg_u32)__ffs(m) - 1u;
    const dg_u32 p1 = (dg_u32)__ffs(m & (m - 1u)) - 1u;
    return p0 | p1 << 2;
}

// A nibble's rows as a mask, 0 for a pattern that is not two ascending rows.
DETGEMM_INLINE dg_u32 mask_of(dg_u32 nib) {
    const dg_u32 p0 = nib & 3u, p1 = (nib >> 2) & 3u;
    return p0 < p1 ? (1u << p0) | (1u << p1) : 0u;
}

// The element of rows mask m's lower (hi false) or upper kept row.
DETGEMM_INLINE dg_u32 pick(const dg_u32 (&e)[4], dg_u32 m, bool hi) {
    const dg_u32 p = hi ? (dg_u32)__ffs(m & (m - 1u)) - 1u : (dg_u32)__ffs(m) - 1u;
    return p == 0u ? e[0] : p == 1u ? e[1] : p == 2u ? e[2] : e[3];
}

// V consecutive elements of W from element index i (V = 2: i even, a
// 32-bit access), as bits.
template <int T, int V>
DETGEMM_INLINE void load(const void* DETGEMM_RESTRICT W, dg_i64 i, dg_u32 (&x)[V]) {
    if constexpr (T == F32) {
        x[0] = static_cast<const dg_u32*>(W)[i];
    } else if constexpr (V == 1) {
        x[0] = static_cast<const dg_u16*>(W)[i];
    } else {
        const dg_u32 u = static_cast<const dg_u32*>(W)[i >> 1];
        x[0] = u & 0xffffu;
        x[1] = u >> 16;
    }
}

template <int T, int V>
DETGEMM_INLINE void store(void* DETGEMM_RESTRICT W, dg_i64 i, const dg_u32 (&x)[V]) {
    if constexpr (T == F32) {
        static_cast<dg_u32*>(W)[i] = x[0];
    } else if constexpr (V == 1) {
        static_cast<dg_u16*>(W)[i] = (dg_u16)x[0];
    } else {
        static_cast<dg_u32*>(W)[i >> 1] = x[0] | x[V - 1] << 16;
    }
}

// The tile loop: column tiles on grid.x, group tiles from blockIdx.y by
// gridDim.y. n is the thread's first column, s its shared-memory column
// for column n + v: v·32 + lane.
#define SP24F_TILES(K, N, V)                                                     \
    const int lane = threadIdx.x & 31, row = threadIdx.x >> 5;                   \
    const dg_i64 n0 = (dg_i64)blockIdx.x * 32 * (V);                             \
    const dg_i64 n = n0 + (dg_i64)lane * (V);                                    \
    const dg_i64 Q = (K) / 4, QT = (Q + TQ - 1) / TQ;                            \
    (void)n;                                                                     \
    for (dg_i64 qt = blockIdx.y; qt < QT; qt += gridDim.y)

// The global column of shared-memory column s (V adjacent columns a thread).
template <int V>
DETGEMM_INLINE dg_i64 column(dg_i64 n0, int s) {
    return n0 + (dg_i64)(s & 31) * V + (s >> 5);
}

// Prune W in place: the two rows of largest magnitude of every group stay,
// the other two become +0.
template <int T, int V>
DETGEMM_INLINE void prune(dg_i64 K, dg_i64 N, void* W, dg_i64 ldw) {
    dg_grid_dependency_wait();
    SP24F_TILES(K, N, V) {
        if (n >= N) return;
        dg_u32 e[GPT][4][V];
#pragma unroll
        for (int g = 0; g < GPT; ++g) {
            const dg_i64 q = qt * TQ + row + LANES * g;
            if (q < Q) {
#pragma unroll
                for (int r = 0; r < 4; ++r) load<T, V>(W, (4 * q + r) * ldw + n, e[g][r]);
            }
        }
#pragma unroll
        for (int g = 0; g < GPT; ++g) {
            const dg_i64 q = qt * TQ + row + LANES * g;
            if (q >= Q) continue;
            dg_u32 m[V];
#pragma unroll
            for (int v = 0; v < V; ++v) {
                const dg_u32 k[4] = {key<T>(e[g][0][v]), key<T>(e[g][1][v]), key<T>(e[g][2][v]), key<T>(e[g][3][v])};
                m[v] = keep_mask(k);
            }
#pragma unroll
            for (int r = 0; r < 4; ++r) {
                dg_u32 x[V];
                bool change = false;
#pragma unroll
                for (int v = 0; v < V; ++v) {
                    const bool keep = (m[v] >> r) & 1u;
                    x[v] = keep ? e[g][r][v] : 0u;
                    change |= x[v] != e[g][r][v];
                }
                if (change) store<T, V>(W, (4 * q + r) * ldw + n, x);
            }
        }
    }
}

// Compress W (PRUNE: prune first, W only read) to values (one 32-bit word
// a group) and meta; without PRUNE, the first group in (q, n) order with
// more than two nonzeros lowers *bad to q·N + n (an atomic minimum: the
// same whatever the order).
template <int T, int V, bool PRUNE>
DETGEMM_INLINE void compress(dg_i64 K, dg_i64 N, const void* DETGEMM_RESTRICT W, dg_i64 ldw,
                             dg_u32* DETGEMM_RESTRICT values, dg_u32* DETGEMM_RESTRICT meta, dg_u64* bad) {
    __shared__ dg_u32 sv[32 * V][TQ + 1];
    __shared__ dg_u32 sn[32 * V][TQ + 1];
    dg_grid_dependency_wait();
    const dg_i64 MW = (K + 31) / 32;
    SP24F_TILES(K, N, V) {
        const dg_i64 q0 = qt * TQ;
        dg_u32 e[GPT][4][V];
#pragma unroll
        for (int g = 0; g < GPT; ++g) {
            const dg_i64 q = q0 + row + LANES * g;
            if (n < N && q < Q) {
#pragma unroll
                for (int r = 0; r < 4; ++r) load<T, V>(W, (4 * q + r) * ldw + n, e[g][r]);
            }
        }
#pragma unroll
        for (int g = 0; g < GPT; ++g) {
            const int ql = row + LANES * g;
            const dg_i64 q = q0 + ql;
            if (n >= N || q >= Q) continue;
#pragma unroll
            for (int v = 0; v < V; ++v) {
                const dg_u32 x[4] = {e[g][0][v], e[g][1][v], e[g][2][v], e[g][3][v]};
                dg_u32 m;
                if constexpr (PRUNE) {
                    const dg_u32 k[4] = {key<T>(x[0]), key<T>(x[1]), key<T>(x[2]), key<T>(x[3])};
                    m = keep_mask(k);
                } else {
                    const dg_u32 nz = (is_zero<T>(x[0]) ? 0u : 1u) | (is_zero<T>(x[1]) ? 0u : 2u) |
                                      (is_zero<T>(x[2]) ? 0u : 4u) | (is_zero<T>(x[3]) ? 0u : 8u);
                    bool b;
                    m = compress_mask(nz, &b);
                    if (b) atomicMin(reinterpret_cast<unsigned long long*>(bad), (unsigned long long)(q * N + n + v));
                }
                sv[v * 32 + lane][ql] = pick(x, m, false) | pick(x, m, true) << 16;
                sn[v * 32 + lane][ql] = nibble_of(m);
            }
        }
        __syncthreads();
        // Values: 8 chunks of 4 groups (16 bytes) a column.
        for (int j = threadIdx.x; j < 32 * V * 8; j += THREADS) {
            const int s = j >> 3, c = (j & 7) * 4;
            const dg_i64 col = column<V>(n0, s), q = q0 + c;
            if (col < N && q < Q) {
                uint4 w;
                w.x = sv[s][c]; w.y = sv[s][c + 1]; w.z = sv[s][c + 2]; w.w = sv[s][c + 3];
                *reinterpret_cast<uint4*>(values + col * Q + q) = w;
            }
        }
        // Metadata: 4 words a column.
        for (int j = threadIdx.x; j < 32 * V * 4; j += THREADS) {
            const int s = j >> 2, c = (j & 3) * 8;
            const dg_i64 col = column<V>(n0, s), word = (q0 + c) / 8;
            if (col < N && word < MW) {
                dg_u32 w = 0u;
#pragma unroll
                for (int g = 0; g < 8; ++g) w |= (q0 + c + g < Q ? sn[s][c + g] : UNUSED) << (4 * g);
                meta[col * MW + word] = w;
            }
        }
        __syncthreads();
    }
}

// Decompress values and meta into W: the kept values at their rows, +0 at
// the others (every row of a group whose pattern is not two ascending rows).
template <int T, int V>
DETGEMM_INLINE void decompress(dg_i64 K, dg_i64 N, const dg_u32* DETGEMM_RESTRICT values,
                               const dg_u32* DETGEMM_RESTRICT meta, void* DETGEMM_RESTRICT W, dg_i64 ldw) {
    __shared__ dg_u32 sv[32 * V][TQ + 1];
    __shared__ dg_u32 sm[32 * V][TQ / 8 + 1];
    dg_grid_dependency_wait();
    const dg_i64 MW = (K + 31) / 32;
    SP24F_TILES(K, N, V) {
        const dg_i64 q0 = qt * TQ;
        for (int j = threadIdx.x; j < 32 * V * 8; j += THREADS) {
            const int s = j >> 3, c = (j & 7) * 4;
            const dg_i64 col = column<V>(n0, s), q = q0 + c;
            if (col < N && q < Q) {
                const uint4 w = *reinterpret_cast<const uint4*>(values + col * Q + q);
                sv[s][c] = w.x; sv[s][c + 1] = w.y; sv[s][c + 2] = w.z; sv[s][c + 3] = w.w;
            }
        }
        for (int j = threadIdx.x; j < 32 * V * 4; j += THREADS) {
            const int s = j >> 2, c = j & 3;
            const dg_i64 col = column<V>(n0, s), word = q0 / 8 + c;
            if (col < N && word < MW) sm[s][c] = meta[col * MW + word];
        }
        __syncthreads();
#pragma unroll
        for (int g = 0; g < GPT; ++g) {
            const int ql = row + LANES * g;
            const dg_i64 q = q0 + ql;
            if (n >= N || q >= Q) continue;
            dg_u32 m[V], lo[V], hi[V];
#pragma unroll
            for (int v = 0; v < V; ++v) {
                const int s = v * 32 + lane;
                m[v] = mask_of((sm[s][ql >> 3] >> (4 * (ql & 7))) & 0xfu);
                lo[v] = sv[s][ql] & 0xffffu;
                hi[v] = sv[s][ql] >> 16;
            }
#pragma unroll
            for (int r = 0; r < 4; ++r) {
                dg_u32 x[V];
#pragma unroll
                for (int v = 0; v < V; ++v) {
                    const bool first = m[v] != 0u && (dg_u32)__ffs(m[v]) - 1u == (dg_u32)r;
                    const bool second = !first && ((m[v] >> r) & 1u);
                    x[v] = first ? lo[v] : second ? hi[v] : 0u;
                }
                store<T, V>(W, (4 * q + r) * ldw + n, x);
            }
        }
        __syncthreads();
    }
}

// Mask W in place: +0 at every row meta does not keep (every row of a group
// whose pattern is not two ascending rows).
template <int T, int V>
DETGEMM_INLINE void mask(dg_i64 K, dg_i64 N, void* W, dg_i64 ldw, const dg_u32* DETGEMM_RESTRICT meta) {
    __shared__ dg_u32 sm[32 * V][TQ / 8 + 1];
    dg_grid_dependency_wait();
    const dg_i64 MW = (K + 31) / 32;
    SP24F_TILES(K, N, V) {
        const dg_i64 q0 = qt * TQ;
        dg_u32 e[GPT][4][V];
#pragma unroll
        for (int g = 0; g < GPT; ++g) {
            const dg_i64 q = q0 + row + LANES * g;
            if (n < N && q < Q) {
#pragma unroll
                for (int r = 0; r < 4; ++r) load<T, V>(W, (4 * q + r) * ldw + n, e[g][r]);
            }
        }
        for (int j = threadIdx.x; j < 32 * V * 4; j += THREADS) {
            const int s = j >> 2, c = j & 3;
            const dg_i64 col = column<V>(n0, s), word = q0 / 8 + c;
            if (col < N && word < MW) sm[s][c] = meta[col * MW + word];
        }
        __syncthreads();
#pragma unroll
        for (int g = 0; g < GPT; ++g) {
            const int ql = row + LANES * g;
            const dg_i64 q = q0 + ql;
            if (n >= N || q >= Q) continue;
            dg_u32 m[V];
#pragma unroll
            for (int v = 0; v < V; ++v) m[v] = mask_of((sm[v * 32 + lane][ql >> 3] >> (4 * (ql & 7))) & 0xfu);
#pragma unroll
            for (int r = 0; r < 4; ++r) {
                dg_u32 x[V];
                bool change = false;
#pragma unroll
                for (int v = 0; v < V; ++v) {
                    x[v] = (m[v] >> r) & 1u ? e[g][r][v] : 0u;
                    change |= x[v] != e[g][r][v];
                }
                if (change) store<T, V>(W, (4 * q + r) * ldw + n, x);
            }
        }
        __syncthreads();
    }
}

// Check metadata: the index of the first word (row-major) holding a used
// nibble that is not two ascending rows, or an unused one (a group past
// K/4) that is not 0x4, lowers *bad (an atomic minimum).
DETGEMM_INLINE void check_meta(dg_i64 K, dg_i64 N, const dg_u32* DETGEMM_RESTRICT meta, dg_u64* bad) {
    dg_grid_dependency_wait();
    const dg_i64 MW = (K + 31) / 32, Q = K / 4, total = N * MW;
    for (dg_u64 i = dg_global_thread(); i < (dg_u64)total; i += dg_grid_stride()) {
        const dg_u32 w = meta[i];
        const dg_i64 q0 = (dg_i64)(i % (dg_u64)MW) * 8;
        bool ok = true;
#pragma unroll
        for (int g = 0; g < 8; ++g) {
            const dg_u32 b = (w >> (4 * g)) & 0xfu;
            ok &= q0 + g < Q ? mask_of(b) != 0u : b == UNUSED;
        }
        if (!ok) atomicMin(reinterpret_cast<unsigned long long*>(bad), (unsigned long long)i);
    }
}

}  // namespace sp24f

// Entry points: detgemm_sp24_{prune,mask}_{f32,bf16,f16}[_v2],
// detgemm_sp24_{compress,prunecompress,decompress}_{bf16,f16}[_v2] (V = 2:
// two columns a thread, N and ldw even, W 4-byte aligned) and
// detgemm_sp24_checkmeta. values 16-byte aligned, meta 4-byte aligned.
// Grid of the tiled ones: (ceil(N / (32·V)), min(ceil(K/4 / 32), 65535)),
// 256 threads; the check: any grid of 256 threads.
#define DETGEMM_SP24F_PRUNE_ENTRY(NAME, T, V)                                                   \
    DETGEMM_KERNEL void __launch_bounds__(sp24f::THREADS) NAME(dg_i64 K, dg_i64 N, void* W, dg_i64 ldw) { \
        sp24f::prune<T, V>(K, N, W, ldw);                                                       \
    }
#define DETGEMM_SP24F_COMPRESS_ENTRY(NAME, T, V, PRUNE)                                                   \
    DETGEMM_KERNEL void __launch_bounds__(sp24f::THREADS)                                                 \
        NAME(dg_i64 K, dg_i64 N, const void* W, dg_i64 ldw, void* values, void* meta, dg_u64* bad) {      \
        sp24f::compress<T, V, PRUNE>(K, N, W, ldw, static_cast<dg_u32*>(values), static_cast<dg_u32*>(meta), bad); \
    }
#define DETGEMM_SP24F_DECOMPRESS_ENTRY(NAME, T, V)                                                      \
    DETGEMM_KERNEL void __launch_bounds__(sp24f::THREADS)                                               \
        NAME(dg_i64 K, dg_i64 N, const void* values, const void* meta, void* W, dg_i64 ldw) {           \
        sp24f::decompress<T, V>(K, N, static_cast<const dg_u32*>(values), static_cast<const dg_u32*>(meta), W, ldw); \
    }
#define DETGEMM_SP24F_MASK_ENTRY(NAME, T, V)                                                            \
    DETGEMM_KERNEL void __launch_bounds__(sp24f::THREADS)                                               \
        NAME(dg_i64 K, dg_i64 N, void* W, dg_i64 ldw, const void* meta) {                               \
        sp24f::mask<T, V>(K, N, W, ldw, static_cast<const dg_u32*>(meta));                              \
    }
#define DETGEMM_SP24F_CHECK_ENTRY(NAME, THREADS_)                                                       \
    DETGEMM_KERNEL void __launch_bounds__(THREADS_) NAME(dg_i64 K, dg_i64 N, const void* meta, dg_u64* bad) { \
        sp24f::check_meta(K, N, static_cast<const dg_u32*>(meta), bad);                                 \
    }

#include "zsp24_format_entries.cuh"
