package gemm

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/detgemm/detgemm/cudaload"
	"github.com/detgemm/detgemm/gemm/ref"
	"github.com/stretchr/testify/require"
)

// sp24Specials are each type's adversarial bit patterns: ±0, NaNs with
// payloads (kept bit for bit), ±Inf, the smallest subnormals, ±1, 2.
var sp24Specials = map[DType][]uint32{
	F32:  {0, 0x80000000, 0x7FC00001, 0xFFC00000, 0x7F800000, 0xFF800000, 1, 0x80000001, 0x3F800000, 0xBF800000, 0x40000000},
	BF16: {0, 0x8000, 0x7FC1, 0xFFC0, 0x7F80, 0xFF80, 1, 0x8001, 0x3F80, 0xBF80, 0x4000},
	F16:  {0, 0x8000, 0x7E01, 0xFE00, 0x7C00, 0xFC00, 1, 0x8001, 0x3C00, 0xBC00, 0x4000},
}

// sp24Weight draws the bits of a K×N weight of type d with leading
// dimension ld (the padding random too): specials, ties (a few magnitudes
// of both signs, often), random bits; with sparse, every group holds at
// most 2 nonzeros and its other rows ±0.
func sp24Weight(r *rand.Rand, d DType, K, N, ld int, sparse bool) []uint32 {
	sp := sp24Specials[d]
	mask := uint32(0xFFFF)
	if d == F32 {
		mask = math.MaxUint32
	}
	w := make([]uint32, (K-1)*ld+N)
	for i := range w {
		switch r.IntN(3) {
		case 0:
			w[i] = sp[r.IntN(len(sp))]
		case 1:
			w[i] = sp[8+r.IntN(3)] ^ uint32(r.IntN(2))<<(d.Size()*8-1) // ±1, ±2: ties
		default:
			w[i] = r.Uint32() & mask
		}
	}
	if sparse {
		for q := range K / 4 {
			for n := range N {
				a, b := r.IntN(4), r.IntN(4)
				for k := range 4 {
					if k != a && k != b {
						w[(4*q+k)*ld+n] = sp[r.IntN(2)] // ±0
					}
				}
			}
		}
	}
	return w
}

// sp24Dev is a weight's bits on the device and as the reference takes them.
type sp24Dev struct {
	d    DType
	bits []uint32
	ptr  cudaload.DevicePtr
}

func (w sp24Dev) operand() ref.Operand {
	if w.d == F32 {
		v := make([]float32, len(w.bits))
		for i, b := range w.bits {
			v[i] = math.Float32frombits(b)
		}
		return ref.Values(v)
	}
	h := make([]uint16, len(w.bits))
	for i, b := range w.bits {
		h[i] = uint16(b)
	}
	return ref.Bits(h)
}

func operandBits(o ref.Operand) []uint32 {
	if o.Bits != nil {
		out := make([]uint32, len(o.Bits))
		for i, h := range o.Bits {
			out[i] = uint32(h)
		}
		return out
	}
	out := make([]uint32, len(o.Values))
	for i, v := range o.Values {
		out[i] = math.Float32bits(v)
	}
	return out
}

// upload24 puts bits of type d on the device, past an offset of off
// elements (a misaligned start for the one-column-a-thread kernels).
func upload24(t *testing.T, ctx *cudaload.Context, d DType, bits []uint32, off int) cudaload.DevicePtr {
	t.Helper()
	size := d.Size()
	p := alloc(t, ctx, uint64((len(bits)+off)*size))
	p += cudaload.DevicePtr(off * size)
	if d == F32 {
		require.NoError(t, cudaload.CopyToDevice(ctx, p, bits))
	} else {
		h := make([]uint16, len(bits))
		for i, b := range bits {
			h[i] = uint16(b)
		}
		require.NoError(t, cudaload.CopyToDevice(ctx, p, h))
	}
	return p
}

func download24(t *testing.T, eng *Engine, ctx *cudaload.Context, d DType, p cudaload.DevicePtr, n int) []uint32 {
	t.Helper()
	return readBits(t, eng, ctx, p, d, n)
}

func readU32(t *testing.T, eng *Engine, ctx *cudaload.Context, p cudaload.DevicePtr, n int) []uint32 {
	t.Helper()
	require.NoError(t, eng.Synchronize())
	out := make([]uint32, n)
	require.NoError(t, cudaload.CopyFromDevice(ctx, out, p))
	return out
}

func readU16(t *testing.T, eng *Engine, ctx *cudaload.Context, p cudaload.DevicePtr, n int) []uint16 {
	t.Helper()
	require.NoError(t, eng.Synchronize())
	out := make([]uint16, n)
	require.NoError(t, cudaload.CopyFromDevice(ctx, out, p))
	return out
}

// sp24Shape is a weight's K, N, leading dimension and the element offset
// of its start.
type sp24Shape struct{ K, N, ld, off int }

// sp24Shapes: odd N, K % 32 != 0, ld > N, even and odd (the two-column
// kernels and the one-column ones), misaligned starts, one column, many
// group tiles.
var sp24Shapes = []sp24Shape{
	{16, 1, 1, 0}, {16, 7, 9, 0}, {32, 33, 33, 0}, {48, 64, 64, 0}, {80, 17, 20, 1}, {128, 130, 130, 0},
	{144, 66, 70, 0}, {160, 1000, 1001, 0}, {272, 96, 96, 1}, {4, 5, 5, 0}, {12, 64, 64, 0}, {1040, 258, 260, 0},
	{4096, 70, 72, 0},
}

// TestSparse24FormatMatchesReference: Prune24, PruneCompress24,
// Compress24, Decompress24 and Mask24 give gemm/ref's bits in every
// output, over types × shapes with adversarial data; outputs are poisoned
// first and the padding past N is never touched.
func TestSparse24FormatMatchesReference(t *testing.T) {
	eng, ctx := gpuEngine(t)
	r := newRand(t)
	for _, d := range []DType{F32, BF16, F16} {
		for _, s := range sp24Shapes {
			name := fmt.Sprintf("%v/%dx%d/ld%d+%d", d, s.K, s.N, s.ld, s.off)
			sp24Check(t, eng, ctx, r, d, s, name)
		}
	}
}

func sp24Check(t *testing.T, eng *Engine, ctx *cudaload.Context, r *rand.Rand, d DType, s sp24Shape, name string) {
	K, N, ld := s.K, s.N, s.ld
	n := (K-1)*ld + N
	w0 := sp24Weight(r, d, K, N, ld, false)

	// Prune24 in place.
	wp := upload24(t, ctx, d, w0, s.off)
	require.NoError(t, eng.Prune24(d, wp, K, N, ld), name)
	want := sp24Dev{d: d, bits: w0}.operand()
	require.NoError(t, ref.Prune24(d, want, K, N, ld), name)
	pruned := operandBits(want)
	sameBits(t, pruned, download24(t, eng, ctx, d, wp, n), "%s: Prune24", name)

	// Mask24 of the original with the kept rows' metadata is the prune;
	// metadata of a random valid pattern, as ref.Mask24.
	meta := sp24RandomMeta(r, K, N)
	wm := upload24(t, ctx, d, w0, s.off)
	mp := upload24(t, ctx, F32, meta, 0)
	require.NoError(t, eng.Mask24(d, wm, K, N, ld, mp), name)
	masked := sp24Dev{d: d, bits: w0}.operand()
	require.NoError(t, ref.Mask24(d, masked, meta, K, N, ld), name)
	sameBits(t, operandBits(masked), download24(t, eng, ctx, d, wm, n), "%s: Mask24", name)

	if !d.Half() || K%16 != 0 {
		return
	}
	vb, mb := Sparse24Bytes(d, K, N)
	nv, nm := ref.Sparse24Len(K, N)

	// PruneCompress24 of the original: ref's compress of the prune, W unchanged.
	wc := upload24(t, ctx, d, w0, s.off)
	vals, mt := poisoned(t, ctx, vb), poisoned(t, ctx, mb)
	require.NoError(t, eng.PruneCompress24(d, wc, K, N, ld, vals, mt), name)
	sp, err := ref.Compress24(d, sp24Dev{d: d, bits: pruned}.operand(), K, N, ld)
	require.NoError(t, err, name)
	sameBits(t, sp.Values, readU16(t, eng, ctx, vals, nv), "%s: PruneCompress24 values", name)
	sameBits(t, sp.Meta, readU32(t, eng, ctx, mt, nm), "%s: PruneCompress24 meta", name)
	sameBits(t, w0, download24(t, eng, ctx, d, wc, n), "%s: PruneCompress24 leaves W", name)

	// Compress24 of the pruned weight (on the device) and of a 2:4 weight
	// with ±0 at its dropped rows.
	for _, src := range []struct {
		what string
		bits []uint32
		ptr  cudaload.DevicePtr
	}{{"pruned", pruned, wp}, {"sparse", nil, 0}} {
		if src.bits == nil {
			src.bits = sp24Weight(r, d, K, N, ld, true)
			src.ptr = upload24(t, ctx, d, src.bits, s.off)
		}
		vals, mt := poisoned(t, ctx, vb), poisoned(t, ctx, mb)
		require.NoError(t, eng.Compress24(d, src.ptr, K, N, ld, vals, mt), "%s: %s", name, src.what)
		c, err := ref.Compress24(d, sp24Dev{d: d, bits: src.bits}.operand(), K, N, ld)
		require.NoError(t, err, name)
		sameBits(t, c.Values, readU16(t, eng, ctx, vals, nv), "%s: Compress24 values of the %s weight", name, src.what)
		sameBits(t, c.Meta, readU32(t, eng, ctx, mt, nm), "%s: Compress24 meta of the %s weight", name, src.what)

		// Decompress24 back, into a poisoned W whose padding stays.
		wd := upload24(t, ctx, d, slices.Repeat([]uint32{0xFFFF}, n), s.off)
		require.NoError(t, eng.Decompress24(d, vals, mt, K, N, wd, ld), name)
		dst := make([]uint16, n)
		for i := range dst {
			dst[i] = 0xFFFF
		}
		require.NoError(t, c.Decompress(ref.Bits(dst), ld), name)
		sameBits(t, operandBits(ref.Bits(dst)), download24(t, eng, ctx, d, wd, n), "%s: Decompress24 of the %s weight", name, src.what)
	}

	// A weight with groups of 3 and 4 nonzeros: the first in (q, n) order
	// is reported as ref reports it.
	bad := sp24Weight(r, d, K, N, ld, true)
	for range 1 + r.IntN(4) {
		q, col := r.IntN(K/4), r.IntN(N)
		for k := range 3 + r.IntN(2) {
			bad[(4*q+k)*ld+col] = sp24Specials[d][8+r.IntN(3)]
		}
	}
	bp := upload24(t, ctx, d, bad, s.off)
	gotErr := eng.Compress24(d, bp, K, N, ld, poisoned(t, ctx, vb), poisoned(t, ctx, mb))
	_, wantErr := ref.Compress24(d, sp24Dev{d: d, bits: bad}.operand(), K, N, ld)
	require.ErrorIs(t, gotErr, ErrNot24, name)
	require.Equal(t, reasonOf(t, wantErr), reasonOf(t, gotErr), name)
}

// sameBits fails t at the first elements where got differs from want (a
// diff of millions of elements would not help).
func sameBits[T comparable](t *testing.T, want, got []T, format string, args ...any) {
	t.Helper()
	require.Len(t, got, len(want), fmt.Sprintf(format, args...))
	var bad []string
	for i := range want {
		if want[i] != got[i] {
			if len(bad) < 8 {
				bad = append(bad, fmt.Sprintf("[%d] want %#x got %#x", i, any(want[i]), any(got[i])))
			} else {
				bad = append(bad, "...")
				break
			}
		}
	}
	if len(bad) > 0 {
		t.Fatalf("%s: %v", fmt.Sprintf(format, args...), bad)
	}
}

func reasonOf(t *testing.T, err error) string {
	t.Helper()
	var ae *ArgError
	require.True(t, errors.As(err, &ae), "%v is an *ArgError", err)
	return ae.Reason
}

// sp24RandomMeta is valid metadata of a K×N weight: a random pattern a
// group, 0x4 past K/4.
func sp24RandomMeta(r *rand.Rand, K, N int) []uint32 {
	pats := []uint32{0x4, 0x8, 0xC, 0x9, 0xD, 0xE}
	mw := ref.Meta24Words(K)
	m := make([]uint32, N*mw)
	for n := range N {
		for i := range mw {
			var w uint32
			for g := range 8 {
				p := uint32(0x4)
				if 8*i+g < K/4 {
					p = pats[r.IntN(len(pats))]
				}
				w |= p << (4 * g)
			}
			m[n*mw+i] = w
		}
	}
	return m
}

// TestSparse24MetaCheckAndInvalidPatterns: CheckMeta24 accepts valid
// metadata and names the first bad word as ref does; Decompress24 writes
// +0 over a group whose pattern is invalid and Mask24 masks it whole,
// every other element as ref gives it.
func TestSparse24MetaCheckAndInvalidPatterns(t *testing.T) {
	eng, ctx := gpuEngine(t)
	r := newRand(t)
	for _, s := range []sp24Shape{{16, 5, 5, 0}, {48, 64, 64, 0}, {96, 33, 40, 0}, {1040, 130, 130, 0}} {
		K, N, ld := s.K, s.N, s.ld
		meta := sp24RandomMeta(r, K, N)
		mp := upload24(t, ctx, F32, meta, 0)
		require.NoError(t, eng.CheckMeta24(mp, K, N))
		nv, _ := ref.Sparse24Len(K, N)
		values := make([]uint16, nv)
		for i := range values {
			values[i] = uint16(r.Uint32())
		}
		for range 6 {
			bad := slices.Clone(meta)
			// Corrupt up to three nibbles: an invalid pattern, or an unused one.
			var groups [][2]int
			for range 1 + r.IntN(3) {
				n, q := r.IntN(N), r.IntN(ref.Meta24Words(K)*8)
				i, sh := n*ref.Meta24Words(K)+q/8, 4*uint(q%8)
				nib := []uint32{0x0, 0x5, 0xA, 0xF, 0x1, 0x6, 0xB, 0x2, 0x3, 0x7}[r.IntN(10)]
				if q >= K/4 {
					nib = []uint32{0x0, 0x8, 0xE, 0xF}[r.IntN(4)]
				} else {
					groups = append(groups, [2]int{q, n})
				}
				bad[i] = bad[i]&^(0xF<<sh) | nib<<sh
			}
			bp := upload24(t, ctx, F32, bad, 0)
			gotErr := eng.CheckMeta24(bp, K, N)
			wantErr := ref.Sparse24{Type: BF16, K: K, N: N, Values: values, Meta: bad}.Validate()
			require.ErrorIs(t, gotErr, ErrMeta24)
			require.Equal(t, reasonOf(t, wantErr), reasonOf(t, gotErr))

			// Decompress24 and Mask24 with it: the bad groups all +0, the
			// rest as ref with the good metadata.
			fixed := slices.Clone(bad)
			for i := range fixed {
				for g := range 8 {
					q := i%ref.Meta24Words(K)*8 + g
					b := fixed[i] >> (4 * g) & 0xF
					if q >= K/4 || b&3 >= b>>2&3 {
						fixed[i] = fixed[i]&^(0xF<<(4*g)) | 0x4<<(4*g)
					}
				}
			}
			n := (K-1)*ld + N
			dst := make([]uint16, n)
			require.NoError(t, ref.Sparse24{Type: BF16, K: K, N: N, Values: values, Meta: fixed}.Decompress(ref.Bits(dst), ld))
			w0 := sp24Weight(r, BF16, K, N, ld, false)
			m := sp24Dev{d: BF16, bits: w0}.operand()
			require.NoError(t, ref.Mask24(BF16, m, fixed, K, N, ld))
			mask := operandBits(m)
			for _, g := range groups {
				for k := range 4 {
					dst[(4*g[0]+k)*ld+g[1]] = 0
					mask[(4*g[0]+k)*ld+g[1]] = 0
				}
			}
			vp := upload24(t, ctx, BF16, operandBits(ref.Bits(values)), 0)
			wd := upload24(t, ctx, BF16, slices.Repeat([]uint32{0xFFFF}, n), 0)
			require.NoError(t, eng.Decompress24(BF16, vp, bp, K, N, wd, ld))
			for i := range dst {
				if i%ld >= N {
					dst[i] = 0xFFFF
				}
			}
			sameBits(t, operandBits(ref.Bits(dst)), download24(t, eng, ctx, BF16, wd, n), "decompress %dx%d", K, N)
			wm := upload24(t, ctx, BF16, w0, 0)
			require.NoError(t, eng.Mask24(BF16, wm, K, N, ld, bp))
			sameBits(t, mask, download24(t, eng, ctx, BF16, wm, n), "mask %dx%d", K, N)
		}
	}
}

// TestSparse24ManyGroupTiles: a weight of more than 65535 · 32 groups
// along K (the kernels loop over the grid's y) and two columns.
func TestSparse24ManyGroupTiles(t *testing.T) {
	if testing.Short() {
		t.Skip("a 16 M-element weight")
	}
	eng, ctx := gpuEngine(t)
	r := newRand(t)
	s := sp24Shape{K: 4*32*65536 + 64, N: 2, ld: 2}
	sp24Check(t, eng, ctx, r, BF16, s, "bf16/many-tiles")
}

// TestSparse24FormatSpeed times, on a 4096 × 11008 bf16 weight (K = 4096,
// N = 11008; 90 MB), PruneCompress24 (the dense weight only read), Prune24
// of a dense weight (a device copy restores it before each; the copy alone
// is timed too), the compress kernel on the pruned weight (no read-back)
// and Compress24 (synchronous), Decompress24, and Mask24 of an f32 master
// (restored by a copy before each), each the median of runs of
// back-to-back launches between two events, two weights alternating; and
// checks the fused result's bits against gemm/ref.
func TestSparse24FormatSpeed(t *testing.T) {
	if testing.Short() {
		t.Skip("timing")
	}
	eng, ctx := gpuEngine(t)
	r := newRand(t)
	const K, N = 4096, 11008
	const wBytes, mBytes = K * N * 2, K * N * 4
	vb, mb := Sparse24Bytes(BF16, K, N)
	var orig, work, msrc [2]cudaload.DevicePtr
	var w0 []uint32
	for i := range orig {
		bits := make([]uint32, K*N)
		for j := range bits {
			bits[j] = uint32(ref.BF16FromF32(float32(r.NormFloat64())))
		}
		if i == 0 {
			w0 = bits
		}
		orig[i] = upload24(t, ctx, BF16, bits, 0)
		work[i] = alloc(t, ctx, wBytes)
		msrc[i] = alloc(t, ctx, mBytes)
		require.NoError(t, ctx.MemsetD32(msrc[i], 0x3F800000, K*N)) // 1.0f everywhere: every dropped row changes
	}
	master := alloc(t, ctx, mBytes)
	vals, mt := alloc(t, ctx, vb), alloc(t, ctx, mb)
	dense := alloc(t, ctx, wBytes)
	flag := alloc(t, ctx, 8)
	st := eng.Stream()

	const reps, runs = 20, 7
	timeIt := func(what string, launch func(i int) error) time.Duration {
		start, err := ctx.NewEvent()
		require.NoError(t, err)
		end, err := ctx.NewEvent()
		require.NoError(t, err)
		defer start.Close()
		defer end.Close()
		for i := range 4 {
			require.NoError(t, launch(i))
		}
		var ds []time.Duration
		for range runs {
			require.NoError(t, start.Record(st))
			for i := range reps {
				require.NoError(t, launch(i))
			}
			require.NoError(t, end.Record(st))
			require.NoError(t, end.Synchronize())
			d, err := cudaload.ElapsedTime(start, end)
			require.NoError(t, err)
			ds = append(ds, d/reps)
		}
		sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
		t.Logf("%s: median %.1f µs a call (min %.1f, max %.1f; %d runs of %d)", what,
			us(ds[runs/2]), us(ds[0]), us(ds[runs-1]), runs, reps)
		return ds[runs/2]
	}
	compress := func(i int) error {
		c, err := checkSp24("Compress24", BF16, K, N, N, work[i%2], vals, mt,
			sp24Uses{kmul: 16, types: sp24Half, w: true, vals: true, meta: true, compOut: true})
		if err != nil {
			return err
		}
		eng.mu.Lock()
		defer eng.mu.Unlock()
		return eng.sp24Launch(c, sp24CompressIDs[sp24FKey{c.t, c.v2}], c.grid(), func(a *cudaload.Args) {
			a.Int64(c.K).Int64(c.N).Ptr(c.w).Int64(c.ldw).Ptr(c.values).Ptr(c.meta).Ptr(flag)
		})
	}
	fused := timeIt("PruneCompress24 4096x11008 bf16", func(i int) error {
		return eng.PruneCompress24(BF16, orig[i%2], K, N, N, vals, mt)
	})
	// The fused result of weight 0 against the reference.
	require.NoError(t, eng.PruneCompress24(BF16, orig[0], K, N, N, vals, mt))
	pw := sp24Dev{d: BF16, bits: w0}.operand()
	require.NoError(t, ref.Prune24(BF16, pw, K, N, N))
	want, err := ref.Compress24(BF16, pw, K, N, N)
	require.NoError(t, err)
	nv, nm := ref.Sparse24Len(K, N)
	sameBits(t, want.Values, readU16(t, eng, ctx, vals, nv), "PruneCompress24 4096x11008 values")
	sameBits(t, want.Meta, readU32(t, eng, ctx, mt, nm), "PruneCompress24 4096x11008 meta")

	cp := timeIt("copy 90 MB (device to device)", func(i int) error { return st.MemcpyDtoDAsync(work[i%2], orig[i%2], wBytes) })
	cpPrune := timeIt("copy 90 MB + Prune24 4096x11008 bf16", func(i int) error {
		if err := st.MemcpyDtoDAsync(work[i%2], orig[i%2], wBytes); err != nil {
			return err
		}
		return eng.Prune24(BF16, work[i%2], K, N, N)
	})
	comp := timeIt("compress kernel on the pruned 4096x11008 bf16 (no read-back)", compress)
	syncC := timeIt("Compress24 4096x11008 bf16 (synchronous: flag allocated, read back)", func(i int) error {
		return eng.Compress24(BF16, work[i%2], K, N, N, vals, mt)
	})
	dec := timeIt("Decompress24 4096x11008 bf16", func(int) error { return eng.Decompress24(BF16, vals, mt, K, N, dense, N) })
	cpm := timeIt("copy 180 MB (device to device)", func(i int) error { return st.MemcpyDtoDAsync(master, msrc[i%2], mBytes) })
	cpMask := timeIt("copy 180 MB + Mask24 4096x11008 f32", func(i int) error {
		if err := st.MemcpyDtoDAsync(master, msrc[i%2], mBytes); err != nil {
			return err
		}
		return eng.Mask24(F32, master, K, N, N, mt)
	})
	gb := func(bytes float64, d time.Duration) float64 { return bytes / d.Seconds() / 1e9 }
	in, out := float64(wBytes), float64(vb+mb)
	prune, mask := cpPrune-cp, cpMask-cpm
	t.Logf("fused prune+compress %.1f µs (%.0f GB/s of %.0f MB); prune %.1f µs (copy subtracted) + compress %.1f µs = %.1f µs; "+
		"Compress24 synchronous %.1f µs; decompress %.1f µs (%.0f GB/s); mask f32 %.1f µs (copy subtracted); copy %.0f GB/s",
		us(fused), gb(in+out, fused), (in+out)/1e6, us(prune), us(comp), us(prune+comp), us(syncC), us(dec), gb(in+out, dec), us(mask),
		gb(2*in, cp))
	require.Less(t, fused, 100*time.Microsecond, "issue 24's target: prune + compress of a 4096 x 11008 weight within 100 µs")
}

func us(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e3 }
