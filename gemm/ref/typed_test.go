package ref

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// randHalf returns n random values of type d: rounded normals, with a few
// zeros, infinities and NaNs mixed in.
func randHalf(rng *rand.Rand, d DType, n int, specials bool) []uint16 {
	v := make([]uint16, n)
	for i := range v {
		v[i] = d.FromF32(float32(rng.NormFloat64()))
		if specials && rng.IntN(500) == 0 {
			v[i] = []uint16{0x8000, 0x7C00, 0x7F80, 0x7E01, 0xFFFF}[rng.IntN(5)]
		}
	}
	return v
}

// TestTypedEqualsUpcastF32Round: the typed tier gives the bits of "widen
// exactly, run the f32 plan, round once at the store".
func TestTypedEqualsUpcastF32Round(t *testing.T) {
	rng := rand.New(rand.NewPCG(15, 16))
	const M, K, N = 9, 520, 37
	for _, d := range []DType{BF16, F16} {
		for _, specials := range []bool{false, true} {
			x, w, dy := randHalf(rng, d, M*K, specials), randHalf(rng, d, K*N, specials), randHalf(rng, d, M*N, specials)
			bias := randNormal(rng, N)
			xf, wf, dyf := make([]float32, M*K), make([]float32, K*N), make([]float32, M*N)
			for _, e := range []error{Upcast(d, xf, x), Upcast(d, wf, w), Upcast(d, dyf, dy)} {
				if e != nil {
					t.Fatal(e)
				}
			}

			y, yf, yr := make([]uint16, M*N), make([]float32, M*N), make([]uint16, M*N)
			if err := typed(d).Forward(Bits(y), Bits(x), Bits(w), bias, M, K, N); err != nil {
				t.Fatal(err)
			}
			_ = ieee32.Forward(Values(yf), Values(xf), Values(wf), bias, M, K, N)
			_ = Round(d, yr, yf)
			if !slices.Equal(y, yr) {
				t.Errorf("%v forward: typed differs from upcast+f32+round", d)
			}

			dx, dxf, dxr := make([]uint16, M*K), make([]float32, M*K), make([]uint16, M*K)
			if err := typed(d).DX(Bits(dx), Bits(dy), Bits(w), M, N, K); err != nil {
				t.Fatal(err)
			}
			_ = ieee32.DX(Values(dxf), Values(dyf), Values(wf), M, N, K)
			_ = Round(d, dxr, dxf)
			if !slices.Equal(dx, dxr) {
				t.Errorf("%v dX: typed differs from upcast+f32+round", d)
			}

			dw0 := randNormal(rng, K*N)
			dw, dwf := slices.Clone(dw0), slices.Clone(dw0)
			if err := typed(d).DW(dw, Bits(x), Bits(dy), M, K, N); err != nil {
				t.Fatal(err)
			}
			_ = ieee32.DW(dwf, Values(xf), Values(dyf), M, K, N)
			sameBits(t, d.String()+" dW", dw, dwf)
		}
	}
}

func TestDTypeBasics(t *testing.T) {
	tests := []struct {
		d    DType
		size int
		name string
	}{
		{F32, 4, "f32"}, {BF16, 2, "bf16"}, {F16, 2, "f16"}, {0, 0, "DType(0)"}, {7, 0, "DType(7)"},
	}
	for _, tc := range tests {
		if tc.d.Size() != tc.size || tc.d.String() != tc.name || tc.d.Valid() != (tc.size != 0) {
			t.Errorf("%d: Size %d String %q Valid %v", uint8(tc.d), tc.d.Size(), tc.d.String(), tc.d.Valid())
		}
	}
}
