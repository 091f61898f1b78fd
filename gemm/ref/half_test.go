package ref

import (
	"math"
	"math/big"
	"math/rand/v2"
	"testing"
)

// TestRoundBigAgreesWithBigFloat32 cross-checks the tests' own rounding
// reference with math/big's float32 conversion on random exact sums.
func TestRoundBigAgreesWithBigFloat32(t *testing.T) {
	for _, c := range randomFMA(20000) {
		p := new(big.Float).SetPrec(exactPrec).SetFloat64(float64(c.a))
		p.Mul(p, new(big.Float).SetPrec(exactPrec).SetFloat64(float64(c.b)))
		x := new(big.Float).SetPrec(exactPrec).Add(p, new(big.Float).SetPrec(exactPrec).SetFloat64(float64(c.c)))
		want, _ := x.Float32()
		if got := float32(roundBig(x, fmtF32)); math.Float32bits(got) != math.Float32bits(want) && x.Sign() != 0 {
			t.Fatalf("roundBig(%v) = %v, big.Float.Float32 = %v", x, got, want)
		}
	}
}

func TestUpcastExhaustive(t *testing.T) {
	tests := []struct {
		name   string
		up     func(uint16) float32
		decode func(uint16) float64
	}{
		{"bf16", F32FromBF16, decodeBF16},
		{"f16", F32FromF16, decodeF16},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for h := range 1 << 16 {
				got := tc.up(uint16(h))
				want := tc.decode(uint16(h))
				if math.IsNaN(want) {
					if math.Float32bits(got) != CanonicalNaN32 {
						t.Fatalf("%04x: got %08x, want canonical NaN", h, math.Float32bits(got))
					}
					continue
				}
				if math.Float32bits(got) != math.Float32bits(float32(want)) {
					t.Fatalf("%04x: got %v (%08x), want %v", h, got, math.Float32bits(got), want)
				}
			}
		})
	}
}

// TestRoundTripExhaustive: every non-NaN 16-bit pattern survives widening
// and rounding back unchanged; every NaN comes back canonical.
func TestRoundTripExhaustive(t *testing.T) {
	for _, d := range []DType{BF16, F16} {
		for h := range 1 << 16 {
			f := d.ToF32(uint16(h))
			back := d.FromF32(f)
			if math.IsNaN(float64(f)) {
				if back != 0x7FFF {
					t.Fatalf("%v %04x: NaN came back as %04x", d, h, back)
				}
				continue
			}
			if back != uint16(h) {
				t.Fatalf("%v %04x: round trip gives %04x", d, h, back)
			}
		}
	}
}

// boundaryInputs lists every float32 bit pattern within spread of each
// 16-bit value and of each midpoint between neighbours, both signs.
func boundaryInputs(d DType, spread uint32) []float32 {
	var out []float32
	inf := 0x7C00 // F16
	if d == BF16 {
		inf = 0x7F80
	}
	for h := range inf { // every finite non-negative value
		lo := d.ToF32(uint16(h))
		hi := d.ToF32(uint16(h + 1)) // the next value up (Inf after the largest)
		var mid float32
		if math.IsInf(float64(hi), 0) {
			// The overflow threshold: largest + half its ulp.
			ulp := float64(lo) - float64(d.ToF32(uint16(h-1)))
			mid = float32(float64(lo) + ulp/2)
		} else {
			mid = float32((float64(lo) + float64(hi)) / 2) // exact: a midpoint of a 16-bit format is a float32
		}
		for _, centre := range []float32{lo, mid} {
			cb := math.Float32bits(centre)
			for db := -int64(spread); db <= int64(spread); db++ {
				b := int64(cb) + db
				if b < 0 || b > 0x7F7FFFFF {
					continue
				}
				v := f32(uint32(b))
				out = append(out, v, -v)
			}
		}
	}
	return out
}

func TestDowncastMatchesExactReference(t *testing.T) {
	nRandom := 1_000_000
	spread := uint32(3)
	if testing.Short() {
		nRandom, spread = 100_000, 1
	}
	tests := []struct {
		d   DType
		ref *halfRef
	}{
		{BF16, newHalfRef(fmtBF16, decodeBF16)},
		{F16, newHalfRef(fmtF16, decodeF16)},
	}
	rng := rand.New(rand.NewPCG(5, 6))
	for _, tc := range tests {
		t.Run(tc.d.String(), func(t *testing.T) {
			check := func(x float32) {
				if got, want := tc.d.FromF32(x), tc.ref.round(x); got != want {
					t.Fatalf("%v(%v = %08x) = %04x, want %04x", tc.d, x, math.Float32bits(x), got, want)
				}
			}
			inputs := boundaryInputs(tc.d, spread)
			for _, x := range inputs {
				check(x)
			}
			for range nRandom {
				check(f32(rng.Uint32())) // NaN and Inf patterns included
			}
			// f16's small values live far inside float32's range: sweep
			// its whole subnormal and underflow region randomly too.
			for range nRandom / 10 {
				check(randSign(rng) * float32(math.Ldexp(rng.Float64(), -rng.IntN(30))))
			}
			t.Logf("%d boundary and %d random inputs", len(inputs), nRandom+nRandom/10)
		})
	}
}

func TestDowncastTable(t *testing.T) {
	inf, nan := float32(math.Inf(1)), f32(0xFFC00001)
	tests := []struct {
		name string
		d    DType
		in   float32
		want uint16
	}{
		{"bf16 1", BF16, 1, 0x3F80},
		{"bf16 tie to even down", BF16, f32(0x3F808000), 0x3F80},
		{"bf16 tie to even up", BF16, f32(0x3F818000), 0x3F82},
		{"bf16 max float32 overflows", BF16, math.MaxFloat32, 0x7F80},
		{"bf16 -Inf", BF16, -inf, 0xFF80},
		{"bf16 NaN canonical", BF16, nan, 0x7FFF},
		{"bf16 -0", BF16, f32(0x80000000), 0x8000},
		{"bf16 subnormal tie", BF16, f32(0x00008000), 0x0000},
		{"f16 1", F16, 1, 0x3C00},
		{"f16 65504 max", F16, 65504, 0x7BFF},
		{"f16 65519 rounds down", F16, 65519.99, 0x7BFF},
		{"f16 65520 overflows", F16, 65520, 0x7C00},
		{"f16 2^-24 smallest subnormal", F16, 0x1p-24, 0x0001},
		{"f16 2^-25 ties to 0", F16, 0x1p-25, 0x0000},
		{"f16 just above 2^-25", F16, f32(0x33000001), 0x0001},
		{"f16 3*2^-25 ties to 2*2^-24", F16, 3 * 0x1p-25, 0x0002},
		{"f16 largest subnormal rounds up to smallest normal", F16, 0x1p-14 - 0x1p-26, 0x0400},
		{"f16 -0", F16, f32(0x80000000), 0x8000},
		{"f16 NaN canonical", F16, nan, 0x7FFF},
		{"f16 -Inf", F16, -inf, 0xFC00},
		{"f16 float32 subnormal", F16, -math.SmallestNonzeroFloat32, 0x8000},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.d.FromF32(tc.in); got != tc.want {
				t.Errorf("got %04x, want %04x", got, tc.want)
			}
		})
	}
}
