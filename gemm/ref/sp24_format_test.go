package ref

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

var (
	qnan32 = float32(math.NaN())
	pinf32 = float32(math.Inf(1))
	negz32 = float32(math.Copysign(0, -1))
	tiny32 = float32(math.SmallestNonzeroFloat32)
)

// TestKeep24EveryTieNaNZeroAndInfinity: hand-made groups, each with the
// two rows the rule keeps.
func TestKeep24EveryTieNaNZeroAndInfinity(t *testing.T) {
	for _, c := range []struct {
		g    [4]float32
		want [2]int
	}{
		{[4]float32{1, 2, 3, 4}, [2]int{2, 3}},
		{[4]float32{4, 3, 2, 1}, [2]int{0, 1}},
		{[4]float32{-3, 2, 1, 2.5}, [2]int{0, 3}},        // magnitude, not value
		{[4]float32{1, 1, 1, 1}, [2]int{0, 1}},           // all tie: the lowest rows
		{[4]float32{1, 2, 2, 1}, [2]int{1, 2}},           // the larger pair
		{[4]float32{2, 1, 1, 2}, [2]int{0, 3}},           //
		{[4]float32{1, -2, 2, 1}, [2]int{1, 2}},          // -2 and 2 tie
		{[4]float32{3, 1, -1, 1}, [2]int{0, 1}},          // second place tied three ways: the lowest
		{[4]float32{0, 0, 0, 0}, [2]int{0, 1}},           // all zeros
		{[4]float32{negz32, 0, negz32, 0}, [2]int{0, 1}}, // ±0 tie
		{[4]float32{negz32, 0, 1, 0}, [2]int{0, 2}},      // one nonzero, then the lowest zero
		{[4]float32{0, tiny32, 0, 0}, [2]int{0, 1}},      // a subnormal beats zero
		{[4]float32{tiny32, 0, 2 * tiny32, 0}, [2]int{0, 2}},
		{[4]float32{0x1p-130, -0x1p-129, 0x1p-126, 0}, [2]int{1, 2}},
		{[4]float32{qnan32, 1, 2, 3}, [2]int{0, 3}}, // NaN above every number
		{[4]float32{pinf32, qnan32, -pinf32, 5}, [2]int{0, 1}},
		{[4]float32{-pinf32, 5, pinf32, 7}, [2]int{0, 2}}, // ±Inf tie
		{[4]float32{1, qnan32, qnan32, qnan32}, [2]int{1, 2}},
		{[4]float32{qnan32, qnan32, 0, 0}, [2]int{0, 1}},
		{[4]float32{0, 0, -qnan32, qnan32}, [2]int{2, 3}},
		{[4]float32{math.MaxFloat32, -pinf32, 1, math.MaxFloat32}, [2]int{0, 1}},
	} {
		p0, p1 := Keep24(c.g)
		require.Equal(t, c.want, [2]int{p0, p1}, "%v", c.g)
		// Every type that holds the group exactly prunes it the same.
		for _, d := range []DType{F32, BF16, F16} {
			w := slices.Clone(c.g[:])
			o := Values(w)
			if d.Half() {
				b := narrow(d, w)
				if !slices.EqualFunc(widen(d, b), w, func(a, b float32) bool {
					return math.Float32bits(a) == math.Float32bits(b) || a != a && b != b
				}) {
					continue // not exactly of type d
				}
				o = Bits(b)
			}
			in := bitsOf(d, o)
			require.NoError(t, Prune24(d, o, 4, 1, 1))
			out := bitsOf(d, o)
			for r := range 4 {
				if r == p0 || r == p1 {
					require.Equal(t, in[r], out[r], "%v %v: row %d kept", d, c.g, r)
				} else {
					require.Zero(t, out[r], "%v %v: row %d pruned to +0", d, c.g, r)
				}
			}
		}
	}
}

// TestCompress24Groups: hand-made bf16 groups, their kept rows, stored
// bits and nibble, and the error naming a 3-nonzero group.
func TestCompress24Groups(t *testing.T) {
	const (
		one  = 0x3F80
		two  = 0x4000
		negz = 0x8000
		qnan = 0x7FC0
	)
	for _, c := range []struct {
		g      [4]uint16
		vals   [2]uint16
		nibble uint32
	}{
		{[4]uint16{0, 0, 0, 0}, [2]uint16{0, 0}, 0x4},
		{[4]uint16{negz, 0, 0, negz}, [2]uint16{negz, 0}, 0x4}, // a -0 kept by the fill stays -0
		{[4]uint16{0, 0, 0, two}, [2]uint16{0, two}, 0xC},
		{[4]uint16{0, 0, two, negz}, [2]uint16{0, two}, 0x8},
		{[4]uint16{negz, one, 0, 0}, [2]uint16{negz, one}, 0x4},
		{[4]uint16{0, one, two, 0}, [2]uint16{one, two}, 0x9},
		{[4]uint16{0, one, 0, two}, [2]uint16{one, two}, 0xD},
		{[4]uint16{0, 0, one, two}, [2]uint16{one, two}, 0xE},
		{[4]uint16{one, 0, two, 0}, [2]uint16{one, two}, 0x8},
		{[4]uint16{qnan, 0, 0, 1}, [2]uint16{qnan, 1}, 0xC}, // NaN and a subnormal are nonzero
		{[4]uint16{0, negz, 0xFF80, 0}, [2]uint16{0, 0xFF80}, 0x8},
	} {
		// K = 16: the group at q = 1 of column 0, zeros elsewhere.
		w := make([]uint16, 16)
		copy(w[4:], c.g[:])
		s, err := Compress24(BF16, Bits(w), 16, 1, 1)
		require.NoError(t, err, "%x", c.g)
		require.Equal(t, c.vals[:], s.Values[2:4], "%x", c.g)
		require.Equal(t, uint32(0x44444404)|c.nibble<<4, s.Meta[0], "%x", c.g)
	}
	// The first bad group in the order (q, then n).
	const K, N = 32, 6
	w := make([]uint16, K*(N+1))
	set3 := func(q, n int) {
		for r := range 3 {
			w[(4*q+r)*(N+1)+n] = one
		}
	}
	set3(5, 1)
	set3(3, 4)
	set3(3, 5)
	_, err := Compress24(BF16, Bits(w), K, N, N+1)
	require.ErrorIs(t, err, ErrNot24)
	var ae *ArgError
	require.ErrorAs(t, err, &ae)
	require.Contains(t, err.Error(), "rows 12..15 of column 4 hold 3 nonzeros")
	w[(4*3+3)*(N+1)+4] = negz // -0 is zero: still 3
	_, err = Compress24(BF16, Bits(w), K, N, N+1)
	require.Contains(t, err.Error(), "rows 12..15 of column 4 hold 3 nonzeros")
	w[(4*3+3)*(N+1)+4] = qnan
	_, err = Compress24(BF16, Bits(w), K, N, N+1)
	require.Contains(t, err.Error(), "rows 12..15 of column 4 hold 4 nonzeros")
}

// sp24Data draws a K×N weight of type d with leading dimension ld, full
// of what the format must handle: ties, ±0, NaN, ±Inf, subnormals; with
// sparse set, already 2:4 (at most 2 nonzeros a group, dropped rows ±0).
func sp24Data(r *rand.Rand, d DType, K, N, ld int, sparse bool) []float32 {
	w := make([]float32, (K-1)*ld+N)
	pick := []float32{0, negz32, 1, -1, 2, qnan32, pinf32, -pinf32, tiny32, 0x1p-130, 0.5, -0.5}
	for i := range w {
		if r.IntN(3) == 0 {
			w[i] = pick[r.IntN(len(pick))]
		} else {
			w[i] = float32(r.NormFloat64()) * float32(math.Ldexp(1, r.IntN(21)-10))
		}
		if d == F16 && r.IntN(8) == 0 {
			w[i] = float32(math.Ldexp(float64(r.IntN(1024)), -24)) // f16 subnormals
		}
		if d.Half() {
			w[i] = d.ToF32(d.FromF32(w[i]))
		}
	}
	if sparse {
		for q := range K / 4 {
			for n := range N {
				keep := r.IntN(4)
				other := (keep + 1 + r.IntN(3)) % 4
				for k := range 4 {
					if k != keep && k != other {
						w[(4*q+k)*ld+n] = []float32{0, negz32}[r.IntN(2)]
					}
				}
			}
		}
	}
	return w
}

// operandOf is w as Bits (a half type, half the time) or Values.
func operandOf(r *rand.Rand, d DType, w []float32) Operand {
	if d.Half() && r.IntN(2) == 0 {
		return Bits(narrow(d, w))
	}
	return Values(slices.Clone(w))
}

// bitsOf reads an operand's elements as bits of d.
func bitsOf(d DType, o Operand) []uint32 {
	if o.Bits != nil {
		out := make([]uint32, len(o.Bits))
		for i, h := range o.Bits {
			out[i] = uint32(h)
		}
		return out
	}
	out := make([]uint32, len(o.Values))
	for i, v := range o.Values {
		if d.Half() {
			out[i] = uint32(d.FromF32(v))
		} else {
			out[i] = math.Float32bits(v)
		}
	}
	return out
}

var sp24Shapes = [][3]int{{16, 1, 1}, {16, 7, 9}, {32, 5, 5}, {48, 3, 4}, {64, 33, 40}, {80, 17, 17}, {4, 3, 3}, {12, 2, 5}}

// TestPruneCompressDecompressRoundTrip: on random weights, compress keeps
// exactly prune's rows, and decompress gives the pruned weight back bit
// for bit; the padding past N is never touched; Mask24 with the metadata
// is prune again (F32 too).
func TestPruneCompressDecompressRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(24, 1))
	for _, d := range []DType{F32, BF16, F16} {
		for _, sh := range sp24Shapes {
			K, N, ld := sh[0], sh[1], sh[2]
			for range 4 {
				name := fmt.Sprintf("%v/%dx%d/ld%d", d, K, N, ld)
				w0 := sp24Data(r, d, K, N, ld, false)
				p := operandOf(r, d, w0)
				require.NoError(t, Prune24(d, p, K, N, ld), name)
				pruned := bitsOf(d, p)
				in := bitsOf(d, operandOf(r, d, w0))
				for k := range K {
					for n := range ld {
						i := k*ld + n
						if i >= len(in) {
							continue
						}
						if n >= N {
							require.Equal(t, in[i], pruned[i], "%s: padding (%d, %d) untouched", name, k, n)
							continue
						}
						q := k / 4
						p0, p1 := Keep24([4]float32{w0[4*q*ld+n], w0[(4*q+1)*ld+n], w0[(4*q+2)*ld+n], w0[(4*q+3)*ld+n]})
						switch {
						case k%4 == p0 || k%4 == p1:
							require.Equal(t, in[i], pruned[i], "%s: (%d, %d) kept", name, k, n)
						default:
							require.Zero(t, pruned[i], "%s: (%d, %d) pruned to +0", name, k, n)
						}
					}
				}
				// Mask24 with the kept rows' metadata prunes the original the same.
				m := operandOf(r, d, w0)
				require.NoError(t, Mask24(d, m, metaOfKept(K, N, ld, w0), K, N, ld), name)
				require.Equal(t, pruned, bitsOf(d, m), "%s: mask", name)
				if !d.Half() || K%16 != 0 {
					continue
				}
				s, err := Compress24(d, p, K, N, ld)
				require.NoError(t, err, name)
				require.NoError(t, s.Validate())
				require.Equal(t, metaOfKept(K, N, ld, w0), s.Meta, "%s: compress keeps prune's rows", name)
				dst := make([]uint16, len(pruned))
				for i := range dst {
					dst[i] = 0xFFFF
				}
				require.NoError(t, s.Decompress(Bits(dst), ld), name)
				for i := range dst {
					if i%ld < N {
						require.Equal(t, pruned[i], uint32(dst[i]), "%s: element %d", name, i)
					} else {
						require.Equal(t, uint16(0xFFFF), dst[i], "%s: padding %d", name, i)
					}
				}
				// Baracuda's metadata and back.
				b, err := MetaToBaracuda(s.Meta, K, N)
				require.NoError(t, err)
				require.Len(t, b, N*K/8)
				back, err := MetaFromBaracuda(b, K, N)
				require.NoError(t, err)
				require.Equal(t, s.Meta, back)
			}
		}
	}
}

// metaOfKept is the metadata of Keep24's rows of w.
func metaOfKept(K, N, ld int, w []float32) []uint32 {
	mw := Meta24Words(K)
	meta := make([]uint32, N*mw)
	for i := range meta {
		meta[i] = 0x44444444
	}
	for q := range K / 4 {
		for n := range N {
			p0, p1 := Keep24([4]float32{w[4*q*ld+n], w[(4*q+1)*ld+n], w[(4*q+2)*ld+n], w[(4*q+3)*ld+n]})
			sh := 4 * uint(q%8)
			meta[n*mw+q/8] = meta[n*mw+q/8]&^(0xF<<sh) | uint32(p0|p1<<2)<<sh
		}
	}
	return meta
}

// TestCompressDecompressSparseWeights: a weight already 2:4 (dropped rows
// ±0) comes back from compress and decompress with every bit, except that
// a -0 at a row compression dropped comes back +0.
func TestCompressDecompressSparseWeights(t *testing.T) {
	r := rand.New(rand.NewPCG(24, 2))
	for _, d := range []DType{BF16, F16} {
		for _, sh := range sp24Shapes {
			K, N, ld := sh[0], sh[1], sh[2]
			if K%16 != 0 {
				continue
			}
			w := sp24Data(r, d, K, N, ld, true)
			in := narrow(d, w)
			s, err := Compress24(d, operandOf(r, d, w), K, N, ld)
			require.NoError(t, err)
			out := make([]float32, len(w))
			require.NoError(t, s.Decompress(Values(out), ld))
			mw := Meta24Words(K)
			for k := range K {
				for n := range N {
					i := k*ld + n
					b := s.Meta[n*mw+k/32] >> (4 * uint(k/4%8))
					kept := k%4 == int(b&3) || k%4 == int(b>>2&3)
					want := in[i]
					if !kept {
						require.Equal(t, uint16(0), want&0x7FFF, "a dropped row is zero")
						want = 0
					}
					got := d.FromF32(out[i])
					if want&0x7FFF > 0x7C00 && d == F16 || want&0x7FFF > 0x7F80 && d == BF16 {
						require.True(t, out[i] != out[i], "NaN stays NaN")
						continue
					}
					require.Equal(t, want, got, "%v %dx%d (%d, %d)", d, K, N, k, n)
				}
			}
		}
	}
}

// TestSparse24Refusals: bad shapes, lengths, leading dimensions, types,
// forms and metadata are typed errors with their sentinels, and nothing
// is written.
func TestSparse24Refusals(t *testing.T) {
	w := make([]uint16, 64*8)
	f := make([]float32, 64*8)
	good, err := Compress24(BF16, Bits(w), 64, 8, 8)
	require.NoError(t, err)
	dst := make([]uint16, 64*8)
	meta := func(i int, v uint32) []uint32 {
		m := slices.Clone(good.Meta)
		m[i] = v
		return m
	}
	for _, c := range []struct {
		name string
		err  error
		want error
		msg  string
	}{
		{"prune K%4", Prune24(BF16, Bits(w), 6, 8, 8), ErrDim, "multiple of 4"},
		{"prune K 0", Prune24(BF16, Bits(w), 0, 8, 8), ErrDim, ""},
		{"prune N<0", Prune24(BF16, Bits(w), 8, -1, 8), ErrDim, ""},
		{"prune ld<N", Prune24(BF16, Bits(w), 8, 8, 7), ErrLeadingDim, "below N"},
		{"prune short", Prune24(BF16, Bits(w), 64, 8, 9), ErrLength, ""},
		{"prune overflow", Prune24(BF16, Bits(w), 64, 8, math.MaxInt/8), ErrLeadingDim, ""},
		{"prune dtype", Prune24(DType(9), Values(f), 8, 8, 8), ErrDType, ""},
		{"prune bits f32", Prune24(F32, Bits(w), 8, 8, 8), ErrDType, ""},
		{"prune both", Prune24(BF16, Operand{Bits: w, Values: f}, 8, 8, 8), ErrDType, ""},
		{"prune none", Prune24(BF16, Operand{}, 8, 8, 8), ErrLength, ""},
		{"compress K%16", second(Compress24(BF16, Bits(w), 8, 8, 8)), ErrDim, "16"},
		{"compress f32", second(Compress24(F32, Values(f), 16, 8, 8)), ErrDType, ""},
		{"compress inexact", second(Compress24(F16, Values(append([]float32{0.1}, f[1:]...)), 16, 8, 8)), ErrInexact, ""},
		{"decompress meta", Sparse24{BF16, 64, 8, good.Values, meta(3, 0x44444445)}.Decompress(Bits(dst), 8), ErrMeta24, "column 1"},
		{"decompress unused", Sparse24{BF16, 48, 8, good.Values, meta(3, 0x54444444)}.Decompress(Bits(dst), 8), ErrMeta24, "past K/4"},
		{"decompress short values", Sparse24{BF16, 64, 8, good.Values[1:], good.Meta}.Decompress(Bits(dst), 8), ErrLength, ""},
		{"decompress short meta", Sparse24{BF16, 64, 8, good.Values, good.Meta[1:]}.Decompress(Bits(dst), 8), ErrLength, ""},
		{"decompress short dst", good.Decompress(Bits(dst[1:]), 8), ErrLength, ""},
		{"decompress type", Sparse24{F32, 64, 8, good.Values, good.Meta}.Decompress(Bits(dst), 8), ErrDType, ""},
		{"decompress K", Sparse24{BF16, 60, 8, good.Values, good.Meta}.Decompress(Bits(dst), 8), ErrDim, ""},
		{"mask meta", Mask24(F32, Values(f), meta(0, 0x4444444F), 64, 8, 8), ErrMeta24, "0xf"},
		{"mask meta 0", Mask24(F32, Values(f), meta(5, 0x44404444), 64, 8, 8), ErrMeta24, "rows 48..51"},
		{"mask short meta", Mask24(F32, Values(f), good.Meta[:3], 64, 8, 8), ErrLength, ""},
		{"to baracuda K%8", second(MetaToBaracuda(good.Meta, 4, 8)), ErrDim, ""},
		{"to baracuda bad", second(MetaToBaracuda(meta(0, 0x44444433), 64, 8)), ErrMeta24, ""},
		{"from baracuda upper", second(MetaFromBaracuda(append([]uint16{0x1404}, make([]uint16, 63)...), 64, 8)), ErrMeta24, "0x14"},
		{"from baracuda order", second(MetaFromBaracuda(append([]uint16{0x0401}, make([]uint16, 63)...), 64, 8)), ErrMeta24, "byte 0x01"},
		{"from baracuda short", second(MetaFromBaracuda(make([]uint16, 63), 64, 8)), ErrLength, ""},
	} {
		require.ErrorIs(t, c.err, c.want, c.name)
		var ae *ArgError
		require.ErrorAs(t, c.err, &ae, c.name)
		require.True(t, strings.Contains(c.err.Error(), c.msg), "%s: %v", c.name, c.err)
	}
	require.Equal(t, make([]uint16, len(dst)), dst, "nothing written")
	require.Equal(t, make([]float32, len(f)), f)
}

func second[T any](_ T, err error) error { return err }

// TestBaracudaMetaLayout: the byte of each group lands where baracuda
// reads it.
func TestBaracudaMetaLayout(t *testing.T) {
	const K, N = 64, 2
	meta := []uint32{0x44448CD9, 0xE4444444, 0x44444444, 0x4444444E}
	b, err := MetaToBaracuda(meta, K, N)
	require.NoError(t, err)
	require.Equal(t, []uint16{0x0D09, 0x080C, 0x0404, 0x0404, 0x0404, 0x0404, 0x0404, 0x0E04,
		0x0404, 0x0404, 0x0404, 0x0404, 0x040E, 0x0404, 0x0404, 0x0404}, b)
	m, err := MetaFromBaracuda(b, K, N)
	require.NoError(t, err)
	require.Equal(t, meta, m)
	// K = 40: one word a row, nibbles past group 9 are 0x4.
	m, err = MetaFromBaracuda([]uint16{0x0E09, 0x0404, 0x0404, 0x0404, 0x0C08}, 40, 1)
	require.NoError(t, err)
	require.Equal(t, []uint32{0x444444E9, 0x444444C8}, m)
}

// FuzzSparse24Format: the format functions never panic; each returns a
// typed error, or a result that round-trips: prune then compress keeps
// prune's rows and decompresses to the pruned weight; compress of any
// weight decompresses to it (dropped -0 as +0); metadata converts to
// baracuda's layout and back.
func FuzzSparse24Format(f *testing.F) {
	f.Add(uint8(1), 16, 4, 4, []byte{1, 2, 3, 4, 5, 6, 7, 8}, uint8(0))
	f.Add(uint8(2), 32, 3, 5, []byte{0, 0x80, 0, 0, 0xC0, 0x7F, 0, 0}, uint8(1))
	f.Add(uint8(3), 12, 2, 2, []byte{0xFF}, uint8(2))
	f.Add(uint8(2), 20, 2, 2, []byte{1}, uint8(0))
	f.Add(uint8(2), 48, 5, 4, []byte{1, 2}, uint8(3))
	f.Add(uint8(2), 16, 1, 1, []byte{1, 0, 1, 0, 1, 0, 0, 0}, uint8(1)) // a 3-nonzero group
	f.Add(uint8(2), 64, 2, 2, []byte{0x05, 0xA0, 0xFF}, uint8(4))       // invalid nibbles
	f.Add(uint8(1), 40, 1, 1, []byte{0x15, 0x04}, uint8(5))
	f.Add(uint8(0), -4, 0, -1, []byte{}, uint8(6))
	f.Add(uint8(2), 1<<40, 1<<40, 1<<41, []byte{}, uint8(1))
	f.Fuzz(func(t *testing.T, ty uint8, K, N, ld int, data []byte, mode uint8) {
		d := DType(ty % 4)
		// Bound the work; the sizes near the limits are refused before any
		// allocation matters (the slices come from data, not the shape).
		n := 0
		if K > 0 && N > 0 && ld > 0 && K <= 256 && ld <= 64 {
			n = (K-1)*ld + N
		}
		if n <= 0 || n > 1<<14 {
			n = len(data)
		}
		if mode&0x80 != 0 && n > 0 {
			n-- // a short slice
		}
		u := make([]uint16, n)
		for i := range u {
			if len(data) > 0 {
				u[i] = uint16(data[i%len(data)]) << (8 * (i / len(data) % 2))
				if data[i%len(data)]&1 == 0 {
					u[i] = 0
				}
			}
		}
		typed := func(err error) {
			var ae *ArgError
			if !errors.As(err, &ae) {
				t.Fatalf("untyped error %v", err)
			}
		}
		var o Operand
		if d == F32 {
			v := make([]float32, n)
			for i, h := range u {
				v[i] = BF16.ToF32(h)
			}
			o = Values(v)
		} else {
			o = Bits(u)
		}
		switch mode % 8 {
		case 0, 1: // prune, then compress
			if err := Prune24(d, o, K, N, ld); err != nil {
				typed(err)
				return
			}
			pruned := bitsOf(d, o)
			s, err := Compress24(d, o, K, N, ld)
			if err != nil {
				typed(err)
				if errors.Is(err, ErrNot24) {
					t.Fatalf("a pruned weight is not 2:4: %v", err)
				}
				return
			}
			dst := make([]uint16, len(pruned))
			if err := s.Decompress(Bits(dst), ld); err != nil {
				t.Fatalf("decompress of a compressed weight: %v", err)
			}
			for i := range (K-1)*ld + N {
				if i%ld < N && uint32(dst[i]) != pruned[i] {
					t.Fatalf("element %d: %#x, pruned %#x", i, dst[i], pruned[i])
				}
			}
		case 2, 3: // compress as it is
			s, err := Compress24(d, o, K, N, ld)
			if err != nil {
				typed(err)
				return
			}
			dst := make([]uint16, len(u))
			if err := s.Decompress(Bits(dst), ld); err != nil {
				t.Fatalf("decompress of a compressed weight: %v", err)
			}
			for i := range (K-1)*ld + N {
				if i%ld < N && dst[i] != u[i] && !(dst[i] == 0 && u[i] == 0x8000) {
					t.Fatalf("element %d: %#x, was %#x", i, dst[i], u[i])
				}
			}
		case 4, 5: // raw metadata from the data
			m := make([]uint32, (n+1)/2)
			for i := range m {
				m[i] = uint32(u[2*i%max(n, 1)]) | 0x4444<<16
			}
			if err := Mask24(d, o, m, K, N, ld); err != nil {
				typed(err)
			}
			s := Sparse24{Type: d, K: K, N: N, Values: u, Meta: m}
			if err := s.Decompress(Bits(make([]uint16, n)), ld); err != nil {
				typed(err)
			}
			b, err := MetaToBaracuda(m, K, N)
			if err != nil {
				typed(err)
				return
			}
			back, err := MetaFromBaracuda(b, K, N)
			if err != nil {
				t.Fatalf("back from baracuda: %v", err)
			}
			mw := Meta24Words(K)
			if !slices.Equal(back, m[:N*mw]) {
				t.Fatalf("metadata round trip: %x -> %x", m[:N*mw], back)
			}
		default: // baracuda bytes from the data
			m, err := MetaFromBaracuda(u, K, N)
			if err != nil {
				typed(err)
				return
			}
			b, err := MetaToBaracuda(m, K, N)
			if err != nil || !slices.Equal(b, u[:N*(K/8)]) {
				t.Fatalf("baracuda round trip: %v %x -> %x", err, u[:N*(K/8)], b)
			}
		}
	})
}
