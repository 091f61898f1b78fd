package ref

import (
	"math"
	"math/rand/v2"
	"testing"
)

func f32(bits uint32) float32 { return math.Float32frombits(bits) }

// fmaCase is one a*b + c to check against the exact reference.
type fmaCase struct{ a, b, c float32 }

// specialValues covers zeros, infinities, NaNs with payloads and signs, the
// extremes of the normal and subnormal ranges.
var specialValues = []float32{
	0, f32(0x80000000), 1, -1, 0.5, 3,
	float32(math.Inf(1)), float32(math.Inf(-1)),
	f32(0x7FC00000), f32(0xFFC00001), f32(0x7F800001), // quiet, negative, signalling NaN
	math.MaxFloat32, -math.MaxFloat32,
	math.SmallestNonzeroFloat32, -math.SmallestNonzeroFloat32,
	0x1p-126, -0x1p-126, f32(0x007FFFFF), // smallest normal, largest subnormal
	0x1p64, 0x1p-75,
}

// adversarialFMA builds cases aimed at FMA32's weak spots: sums whose
// float64 rounding lands exactly on a float32 midpoint (normal, subnormal and
// at the overflow threshold), true ties, cancellation, subnormal results,
// crossings of the normal/subnormal boundary, overflow, signed zeros.
func adversarialFMA() []fmaCase {
	var cs []fmaCase
	for _, a := range specialValues {
		for _, b := range specialValues {
			for _, c := range specialValues {
				cs = append(cs, fmaCase{a, b, c})
			}
		}
	}
	rng := rand.New(rand.NewPCG(1, 2))
	const (
		onePlus  = 1 + 0x1p-23 // (1+2^-23)(1-2^-23) = 1 - 2^-46: a product
		oneMinus = 1 - 0x1p-23 // with a tail far below float64's reach of c
	)
	// Midpoint families: c = ±m*2^(E+1) on a grid whose midpoints are odd
	// multiples of 2^E, plus a product p = ±2^E*(1 - 2^-46) (tie broken by
	// a tail the float64 sum drops) or p = ±2^E exactly (a true tie).
	for E := -160; E <= 103; E++ {
		ea := E / 2
		eb := E - ea
		if ea < -126 || eb < -126 {
			continue
		}
		tails := [][2]float32{
			{float32(math.Ldexp(onePlus, ea)), float32(math.Ldexp(oneMinus, eb))},
			{float32(math.Ldexp(1, ea)), float32(math.Ldexp(1, eb))},
			{float32(math.Ldexp(3, ea)), float32(math.Ldexp(1, eb))},
		}
		for range 6 {
			var m float64
			if E+1 <= -149 {
				m = float64(1 + rng.Uint32N(1<<24-1)) // subnormal and low normal c
			} else {
				m = float64(1<<23 + rng.Uint32N(1<<23))
			}
			cm := math.Ldexp(m, E+1)
			if cm > math.MaxFloat32 || cm < math.SmallestNonzeroFloat32 {
				continue
			}
			for _, t := range tails {
				for _, sa := range []float32{1, -1} {
					for _, sc := range []float32{1, -1} {
						cs = append(cs, fmaCase{sa * t[0], t[1], sc * float32(cm)})
					}
				}
			}
		}
	}
	// Around the overflow threshold 2^128 - 2^103.
	big64, big52, big51 := float32(0x1p64), float32(0x1p52), float32(0x1p51)
	cs = append(cs,
		fmaCase{big64, big64, -0x1p104},                               // 2^128 - 2^104 = MaxFloat32
		fmaCase{big64, big64, -0x1p103},                               // the midpoint: tie to even, Inf
		fmaCase{big64, big64, -(0x1p103 + 0x1p80)},                    // just below: MaxFloat32
		fmaCase{onePlus * big52, oneMinus * big51, math.MaxFloat32},   // just below the midpoint
		fmaCase{-onePlus * big52, oneMinus * big51, -math.MaxFloat32}, // same, negative
		fmaCase{big52, big51, math.MaxFloat32},                        // exactly the midpoint: Inf
		fmaCase{3 * big52, big51, math.MaxFloat32},                    // past it
		fmaCase{0x1p100, 0x1p100, -math.MaxFloat32},                   // huge product wins
	)
	// Signed zeros and underflow to zero.
	negZero := f32(0x80000000)
	cs = append(cs,
		fmaCase{0, -1, 0}, fmaCase{negZero, 1, negZero}, fmaCase{1, -1, 1},
		fmaCase{-0x1p-100, 0x1p-100, 0}, fmaCase{-0x1p-100, 0x1p-100, negZero},
		fmaCase{0x1p-75, 0x1p-75, 0}, fmaCase{0x1p-75, 0x1p-76, 0}, // 2^-150: tie to 0
		fmaCase{0x1p-75, 0x1p-75 * onePlus, 0}, // just over 2^-150: 2^-149
	)
	// Random structured cases: cancellation, subnormal results, crossings.
	for range 20000 {
		a, b := randF32(rng, -126, 127), randF32(rng, -126, 127)
		p := float32(float64(a) * float64(b))
		cs = append(cs,
			fmaCase{a, b, -p}, // residual of a*b
			fmaCase{a, b, f32(math.Float32bits(-p) + 1)},                          // near-cancellation
			fmaCase{a, b, f32(math.Float32bits(-p) - 1)},                          //
			fmaCase{randF32(rng, -80, -60), randF32(rng, -80, -60), randSub(rng)}, // subnormal zone
			fmaCase{randF32(rng, -75, -63), randF32(rng, -75, -63), 0x1p-126 * randSign(rng)},
			fmaCase{randF32(rng, -80, -70), randF32(rng, -80, -70), f32(0x007FFFFF) * randSign(rng)},
		)
	}
	return cs
}

// randF32 returns a random normal float32 of random sign with exponent in
// [lo, hi].
func randF32(rng *rand.Rand, lo, hi int) float32 {
	e := lo + rng.IntN(hi-lo+1)
	return randSign(rng) * float32(math.Ldexp(1+float64(rng.Uint32N(1<<23))*0x1p-23, e))
}

// randSub returns a random subnormal float32 of random sign.
func randSub(rng *rand.Rand) float32 {
	return randSign(rng) * f32(1+rng.Uint32N(0x7FFFFF))
}

func randSign(rng *rand.Rand) float32 {
	if rng.IntN(2) == 0 {
		return -1
	}
	return 1
}

// randomFMA returns n cases over the whole float32 range: independent random
// bit patterns, and products placed near c's magnitude so cancellation and
// rounding at every exponent are exercised.
func randomFMA(n int) []fmaCase {
	rng := rand.New(rand.NewPCG(3, 4))
	cs := make([]fmaCase, n)
	for i := range cs {
		switch i % 3 {
		case 0: // raw bit patterns (finite; the specials have their own list)
			cs[i] = fmaCase{randBits(rng), randBits(rng), randBits(rng)}
		default: // c within a few binades of a*b
			a, b := randF32(rng, -126, 127), randF32(rng, -126, 127)
			pe := math.Ilogb(float64(a) * float64(b))
			ce := min(max(pe+rng.IntN(61)-30, -149), 127)
			c := randSign(rng) * float32(math.Ldexp(1+float64(rng.Uint32N(1<<23))*0x1p-23, ce))
			cs[i] = fmaCase{a, b, c}
		}
	}
	return cs
}

func randBits(rng *rand.Rand) float32 {
	for {
		f := f32(rng.Uint32())
		if !math.IsInf(float64(f), 0) && !math.IsNaN(float64(f)) {
			return f
		}
	}
}

func checkFMA(t *testing.T, cs []fmaCase) {
	t.Helper()
	bad := 0
	for _, c := range cs {
		want := refFMA32(c.a, c.b, c.c)
		got := math.Float32bits(FMA32(c.a, c.b, c.c))
		if got != want {
			if bad++; bad <= 10 {
				t.Errorf("FMA32(%x, %x, %x) = %08x, want %08x",
					math.Float32bits(c.a), math.Float32bits(c.b), math.Float32bits(c.c), got, want)
			}
		}
	}
	if bad > 10 {
		t.Errorf("%d of %d cases wrong", bad, len(cs))
	}
}

func TestFMA32MatchesExactReferenceOnAdversarialCases(t *testing.T) {
	checkFMA(t, adversarialFMA())
}

func TestFMA32MatchesExactReferenceOnRandomCases(t *testing.T) {
	n := 1_000_000
	if testing.Short() {
		n = 100_000
	}
	checkFMA(t, randomFMA(n))
}

// TestNaiveDoubleRoundingFailsAdversarialCases proves the adversarial cases
// can catch the tempting float32(math.FMA(...)) implementation.
func TestNaiveDoubleRoundingFailsAdversarialCases(t *testing.T) {
	differ := 0
	for _, c := range adversarialFMA() {
		if naiveFMA32(c.a, c.b, c.c) != refFMA32(c.a, c.b, c.c) {
			differ++
		}
	}
	if differ == 0 {
		t.Fatal("double rounding agrees with the exact reference on every adversarial case: the cases are too weak")
	}
	t.Logf("double rounding is wrong on %d adversarial cases", differ)
}

func TestFMA32SpecialValues(t *testing.T) {
	negZero := f32(0x80000000)
	inf := float32(math.Inf(1))
	tests := []struct {
		name    string
		a, b, c float32
		want    uint32
	}{
		{"+0*-1 + +0 is +0", 0, -1, 0, 0},
		{"-0*1 + -0 is -0", negZero, 1, negZero, 0x80000000},
		{"exact cancellation is +0", 3, -1, 3, 0},
		{"negative underflow keeps its sign", -0x1p-100, 0x1p-100, 0, 0x80000000},
		{"Inf*0 is canonical NaN", inf, 0, 1, CanonicalNaN32},
		{"Inf - Inf is canonical NaN", inf, 1, -inf, CanonicalNaN32},
		{"NaN payload is not propagated", f32(0xFFC01234), 1, 1, CanonicalNaN32},
		{"product overflow cancelled by c", 0x1p64, 0x1p64, -0x1p104, math.Float32bits(math.MaxFloat32)},
		{"overflow midpoint ties to Inf", 0x1p64, 0x1p64, -0x1p103, 0x7F800000},
		{"subnormal tie 2^-150 goes to +0", 0x1p-75, 0x1p-75, 0, 0},
		{"3*2^-150 ties to 2^-148 (even)", 0x1p-75, 3 * 0x1p-75, 0, 2},
		{"Inf plus finite", inf, -2, 5, 0xFF800000},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := math.Float32bits(FMA32(tc.a, tc.b, tc.c)); got != tc.want {
				t.Errorf("got %08x, want %08x", got, tc.want)
			}
			if ref := refFMA32(tc.a, tc.b, tc.c); ref != tc.want {
				t.Errorf("reference gives %08x, want %08x: the table is wrong", ref, tc.want)
			}
		})
	}
}

// TestInnerLoopsMatchFMA32 checks the hand-inlined inner loops against
// FMA32, with each adversarial case at each of fmaRows4's four steps (the
// other steps multiply zeros).
func TestInnerLoopsMatchFMA32(t *testing.T) {
	for _, c := range adversarialFMA() {
		acc := []float32{c.c}
		fmaRow(acc, []float32{c.b}, c.a)
		if got, want := math.Float32bits(acc[0]), math.Float32bits(FMA32(c.a, c.b, c.c)); got != want {
			t.Fatalf("fmaRow(%v, %v, %v) = %08x, FMA32 = %08x", c.a, c.b, c.c, got, want)
		}
		for pos := range 4 {
			var a, b [4]float32
			a[pos], b[pos] = c.a, c.b
			want := c.c
			for k := range 4 {
				want = FMA32(a[k], b[k], want)
			}
			acc := []float32{c.c}
			fmaRows4(acc, b[0:1], b[1:2], b[2:3], b[3:4], a[0], a[1], a[2], a[3])
			if math.Float32bits(acc[0]) != math.Float32bits(want) {
				t.Fatalf("fmaRows4 step %d of (%v, %v, %v) = %08x, FMA32 chain = %08x",
					pos, c.a, c.b, c.c, math.Float32bits(acc[0]), math.Float32bits(want))
			}
		}
	}
}

func TestAdd32CanonicalizesNaN(t *testing.T) {
	inf := float32(math.Inf(1))
	tests := []struct {
		a, b float32
		want uint32
	}{
		{inf, -inf, CanonicalNaN32},
		{f32(0xFFC00001), 1, CanonicalNaN32},
		{1, 0x1p-24, 0x3F800000}, // tie to even
		{f32(0x80000000), f32(0x80000000), 0x80000000},
		{f32(0x80000000), 0, 0},
		{math.MaxFloat32, 0x1p103, 0x7F800000},
	}
	for _, tc := range tests {
		if got := math.Float32bits(Add32(tc.a, tc.b)); got != tc.want {
			t.Errorf("Add32(%v, %v) = %08x, want %08x", tc.a, tc.b, got, tc.want)
		}
	}
}

var benchSink float32

func BenchmarkFMA32(b *testing.B) {
	cs := randomFMA(1024)
	for i := 0; b.Loop(); i++ {
		c := cs[i&1023]
		benchSink += FMA32(c.a, c.b, c.c)
	}
}
