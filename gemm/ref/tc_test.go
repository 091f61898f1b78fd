package ref

import (
	"errors"
	"fmt"
	"math"
	"math/big"
	"math/rand/v2"
	"testing"
)

// The independent reference of the tensor-core model: the model's text
// evaluated with math/big, sharing no code with tc.go or tcplan.go. Every
// finite value here is an integer multiple of 2^-refScale (the smallest
// product of two float32 values is 2^-298), so it is held exactly as the
// big.Int value·2^refScale.
const refScale = 400

// refExact returns x·2^refScale as a big.Int, exactly, for a finite x.
func refExact(x float64) *big.Int {
	if x == 0 {
		return new(big.Int)
	}
	fr, ex := math.Frexp(x) // x = fr·2^ex, 0.5 <= |fr| < 1
	m := int64(fr * (1 << 53))
	v := big.NewInt(m)
	return v.Lsh(v, uint(ex-53+refScale)) // ex-53+refScale > 0 for float32 values
}

// refNominalExp is floor(log2|x|) from Frexp, clamped up to emin.
func refNominalExp(x float64, emin int) int {
	_, ex := math.Frexp(x)
	return max(ex-1, emin)
}

// refOpts switches the reference's literal rules, to test that they are
// what they claim.
type refOpts struct {
	noDropRule bool // leave out "more than 31 places below emax contributes 0"
}

// refTCStep is one 16-wide step of model m for input type d, from the model's
// text: blocks of m.BlockTerms, each aligned, truncated, summed and
// rounded toward zero.
func refTCStep(m TCModel, d DType, c float32, a, b []float32, o refOpts) float32 {
	emin := -126
	if d == F16 {
		emin = -14
	}
	for k := 0; k < 16; k += m.BlockTerms {
		c = refTCBlock(m, emin, c, a[k:k+m.BlockTerms], b[k:k+m.BlockTerms], o)
	}
	return c
}

func refTCBlock(m TCModel, emin int, c float32, a, b []float32, o refOpts) float32 {
	// NaN and Inf: the IEEE float64 sum of c and the float64 products has
	// the right special value (finite products never overflow float64).
	special := !isFinite32(c)
	s := float64(c)
	for i := range a {
		special = special || !isFinite32(a[i]) || !isFinite32(b[i])
		s += float64(a[i]) * float64(b[i])
	}
	if special {
		if math.IsNaN(s) {
			return math.Float32frombits(CanonicalNaN32)
		}
		if math.IsInf(s, 0) {
			return float32(s)
		}
		panic("refTCBlock: special operands gave a finite sum")
	}

	type term struct {
		v   *big.Int // exact value · 2^refScale
		e   int      // nominal exponent
		neg bool     // sign (of a zero too)
	}
	terms := []term{{refExact(float64(c)), refNominalExp(float64(c), -126), math.Signbit(float64(c))}}
	for i := range a {
		v := new(big.Int).Mul(refExact(float64(a[i])), refExact(float64(b[i])))
		v.Rsh(v, refScale) // exact: the product is a multiple of 2^-298
		e := refNominalExp(float64(a[i]), emin) + refNominalExp(float64(b[i]), emin)
		terms = append(terms, term{v, e, math.Signbit(float64(a[i])) != math.Signbit(float64(b[i]))})
	}
	emax := m.MinAlignExp
	for _, t := range terms {
		if t.v.Sign() != 0 {
			emax = max(emax, t.e)
		}
	}
	g := emax - 23 - m.ExtraBits
	unit := new(big.Int).Lsh(big.NewInt(1), uint(g+refScale))
	sum := new(big.Int)
	for _, t := range terms {
		q := new(big.Int)
		if t.v.Sign() != 0 && (o.noDropRule || emax-t.e <= 31) {
			q.Quo(t.v, unit) // truncated division: toward zero
		}
		sum.Add(sum, q)
	}
	if sum.Sign() == 0 {
		return 0 // an exact zero is +0, whatever the signs
	}
	neg := sum.Sign() < 0
	mag := new(big.Int).Abs(sum)
	// value = mag·2^g. Round toward zero to 24 bits, then check the range.
	f := new(big.Float).SetPrec(24).SetMode(big.ToZero).SetInt(mag)
	f.SetMantExp(f, g)
	var r float32
	switch {
	case f.Cmp(new(big.Float).SetMantExp(big.NewFloat(1), 128)) >= 0:
		r = float32(math.Inf(1)) // overflow gives ±Inf, as the H200 does
	case f.Cmp(new(big.Float).SetMantExp(big.NewFloat(1), -126)) < 0:
		// Subnormal: truncate the exact value to whole units of 2^-149.
		k := new(big.Int)
		if g+149 >= 0 {
			k.Lsh(mag, uint(g+149))
		} else {
			k.Quo(mag, new(big.Int).Lsh(big.NewInt(1), uint(-g-149)))
		}
		r = float32(math.Ldexp(float64(k.Int64()), -149))
	default:
		r, _ = f.Float32() // exact: f has 24 bits and a normal exponent
	}
	if neg && r != 0 { // a sum truncated to nothing is +0
		r = -r
	}
	return r
}

func isFinite32(x float32) bool { return !math.IsInf(float64(x), 0) && x == x }

// tcCase is one step: accumulator and 16 operand pairs.
type tcCase struct {
	name string
	d    DType
	c    float32
	a, b [16]float32
}

// halfVal returns the value of type d nearest x (RNE).
func halfVal(d DType, x float64) float32 { return d.ToF32(d.FromF32(float32(x))) }

// randHalfBits returns a random finite value of type d from a uniform bit
// pattern: every exponent, subnormals included.
func randHalfBits(rng *rand.Rand, d DType) float32 {
	for {
		v := d.ToF32(uint16(rng.Uint32()))
		if isFinite32(v) {
			return v
		}
	}
}

// randHalfExp returns a random normal value of type d, random sign, with
// exponent e (clamped into d's normal range).
func randHalfExp(rng *rand.Rand, d DType, e int) float32 {
	lo, hi := -126, 127
	if d == F16 {
		lo, hi = -14, 15
	}
	e = min(max(e, lo), hi)
	for {
		if v := halfVal(d, float64(randSign(rng))*math.Ldexp(1+rng.Float64(), e)); isFinite32(v) {
			return v // (rounding near the top of f16 can reach Inf: draw again)
		}
	}
}

// randHalfSub returns a random subnormal of type d.
func randHalfSub(rng *rand.Rand, d DType) float32 {
	if d == F16 {
		return d.ToF32(uint16(1+rng.IntN(0x3FF)) | uint16(rng.IntN(2))<<15)
	}
	return d.ToF32(uint16(1+rng.IntN(0x7F)) | uint16(rng.IntN(2))<<15)
}

// randAcc returns a random float32 accumulator near 2^e (any f32 bits).
func randAcc(rng *rand.Rand, e int) float32 {
	e = min(max(e, -149), 127)
	if e < -126 {
		return randSign(rng) * math.Float32frombits(1+rng.Uint32N(0x7FFFFF))
	}
	return randSign(rng) * float32(math.Ldexp(1+float64(rng.Uint32N(1<<23))*0x1p-23, e))
}

// randomTCCases returns n random steps of the given kinds, for type d.
func randomTCCases(rng *rand.Rand, d DType, n int) []tcCase {
	hiE := 127
	if d == F16 {
		hiE = 15
	}
	cs := make([]tcCase, n)
	for k := range cs {
		tc := tcCase{d: d}
		center := rng.IntN(2*hiE+1) - hiE
		if d == F16 {
			center = rng.IntN(30) - 14
		}
		switch kind := k % 10; kind {
		case 0:
			tc.name = "uniform bits"
			for i := range 16 {
				tc.a[i], tc.b[i] = randHalfBits(rng, d), randHalfBits(rng, d)
			}
		case 1:
			tc.name = "spread ±60 binades"
			for i := range 16 {
				tc.a[i] = randHalfExp(rng, d, center/2+rng.IntN(61)-30)
				tc.b[i] = randHalfExp(rng, d, center/2+rng.IntN(61)-30)
			}
		case 2:
			tc.name = "narrow spread"
			for i := range 16 {
				tc.a[i] = randHalfExp(rng, d, center/2+rng.IntN(7)-3)
				tc.b[i] = randHalfExp(rng, d, center/2+rng.IntN(7)-3)
			}
		case 3:
			tc.name = "near cancellation"
			for i := 0; i < 16; i += 2 {
				x, y := randHalfExp(rng, d, center/2), randHalfExp(rng, d, rng.IntN(9)-4)
				tc.a[i], tc.b[i] = x, y
				// The partner product is -x·y give or take an ulp of one factor.
				u := d.FromF32(-x) + uint16(rng.IntN(3)) - 1
				tc.a[i+1], tc.b[i+1] = d.ToF32(u), y
				if !isFinite32(tc.a[i+1]) {
					tc.a[i+1] = -x
				}
			}
		case 4:
			tc.name = "subnormal inputs"
			for i := range 16 {
				tc.a[i], tc.b[i] = randHalfSub(rng, d), randHalfExp(rng, d, rng.IntN(21)-10)
				if rng.IntN(3) == 0 {
					tc.b[i] = randHalfSub(rng, d)
				}
				if rng.IntN(2) == 0 {
					tc.a[i], tc.b[i] = tc.b[i], tc.a[i]
				}
			}
		case 5:
			tc.name = "sparse zeros"
			for i := range 16 {
				tc.a[i], tc.b[i] = randHalfExp(rng, d, center/2+rng.IntN(21)-10), randHalfExp(rng, d, rng.IntN(5)-2)
				if rng.IntN(3) == 0 {
					tc.a[i] = float32(math.Copysign(0, float64(randSign(rng))))
				}
			}
		case 6:
			tc.name = "all-zero products"
			for i := range 16 {
				tc.a[i] = float32(math.Copysign(0, float64(randSign(rng))))
				tc.b[i] = randHalfBits(rng, d)
				if rng.IntN(2) == 0 {
					tc.a[i], tc.b[i] = tc.b[i], tc.a[i]
				}
			}
		case 7:
			tc.name = "mixed subnormal and normal"
			for i := range 16 {
				if rng.IntN(2) == 0 {
					tc.a[i] = randHalfSub(rng, d)
				} else {
					tc.a[i] = randHalfExp(rng, d, rng.IntN(2*hiE)-hiE)
				}
				tc.b[i] = randHalfExp(rng, d, rng.IntN(2*hiE)-hiE)
			}
		case 8:
			tc.name = "alignment clamp zone"
			// bf16 products around 2^-133, where emax is clamped, and f16's
			// smallest; the accumulator is set tiny below.
			for i := range 16 {
				if d == BF16 {
					tc.a[i], tc.b[i] = randHalfExp(rng, d, -64-rng.IntN(12)), randHalfExp(rng, d, -64-rng.IntN(12))
				} else {
					tc.a[i], tc.b[i] = randHalfSub(rng, d), randHalfExp(rng, d, -14+rng.IntN(4))
				}
				if rng.IntN(4) == 0 {
					tc.a[i] = randHalfSub(rng, d)
				}
			}
		case 9:
			tc.name = "negative zeros"
			// Zero or tiny negative products beside a -0 or tiny negative
			// accumulator: the sign of a zero result.
			for i := range 16 {
				tc.a[i] = float32(math.Copysign(0, -1))
				tc.b[i] = float32(math.Abs(float64(randHalfExp(rng, d, rng.IntN(10)))))
				switch rng.IntN(8) {
				case 0:
					tc.a[i] = -float32(math.Abs(float64(randHalfSub(rng, d))))
				case 1:
					tc.a[i] = 0
				}
			}
		}
		// The accumulator: zero, near the products, far above or below
		// them, tiny (f32 subnormal) or huge.
		pe := center // the products' exponents are near 2·(center/2)
		switch rng.IntN(8) {
		case 0:
			tc.c = float32(math.Copysign(0, float64(randSign(rng))))
		case 1, 2, 3:
			tc.c = randAcc(rng, pe+rng.IntN(11)-5)
		case 4:
			tc.c = randAcc(rng, pe+rng.IntN(81)-40)
		case 5:
			tc.c = randAcc(rng, -149+rng.IntN(30))
		case 6:
			tc.c = randAcc(rng, 127-rng.IntN(10))
		case 7:
			tc.c = math.Float32frombits(rng.Uint32() &^ 0x40000000) // any bits with |c| < 2
		}
		switch tc.name {
		case "alignment clamp zone":
			tc.c = []float32{0, randAcc(rng, -149+rng.IntN(25)), randAcc(rng, -126-rng.IntN(8))}[rng.IntN(3)]
		case "negative zeros":
			switch rng.IntN(4) {
			case 0:
				tc.c = 0
			case 1:
				tc.c = -float32(math.Abs(float64(randAcc(rng, -149+rng.IntN(10)))))
			default:
				tc.c = float32(math.Copysign(0, -1))
			}
		}
		if tc.name == "near cancellation" && rng.IntN(2) == 0 {
			// c cancelling most of the products' sum.
			s := 0.0
			for i := range 16 {
				s += float64(tc.a[i]) * float64(tc.b[i])
			}
			tc.c = -float32(s)
		}
		cs[k] = tc
	}
	return cs
}

// specialTCCases are NaN and Inf steps, with the expected results written
// out by IEEE rules.
func specialTCCases() []struct {
	tcCase
	want uint32
} {
	inf, nan := float32(math.Inf(1)), math.Float32frombits(0x7FC00001)
	type sc = struct {
		tcCase
		want uint32
	}
	mk := func(name string, c float32, pairs [][2]float32, want uint32) sc {
		t := sc{tcCase: tcCase{name: name, d: BF16, c: c}, want: want}
		for i := range 16 {
			t.a[i], t.b[i] = 1, 0x1p-10
		}
		for i, p := range pairs {
			t.a[i], t.b[i] = p[0], p[1]
		}
		return t
	}
	return []sc{
		mk("NaN in a", 1, [][2]float32{{nan, 1}}, CanonicalNaN32),
		mk("NaN times zero", 1, [][2]float32{{0, nan}}, CanonicalNaN32),
		mk("NaN accumulator", nan, nil, CanonicalNaN32),
		mk("Inf times zero", 1, [][2]float32{{inf, 0}}, CanonicalNaN32),
		mk("-0 times -Inf", 1, [][2]float32{{float32(math.Copysign(0, -1)), -inf}}, CanonicalNaN32),
		mk("Inf minus Inf in products", 1, [][2]float32{{inf, 2}, {inf, -3}}, CanonicalNaN32),
		mk("Inf accumulator minus Inf product", inf, [][2]float32{{-inf, 1}}, CanonicalNaN32),
		mk("Inf product", 1, [][2]float32{{inf, 1e-30}}, 0x7F800000),
		mk("-Inf product beside huge finite ones", 3e38, [][2]float32{{-inf, 2}, {3e38, 3e38}}, 0xFF800000),
		mk("two +Inf products", -1, [][2]float32{{inf, 1}, {-inf, -1}}, 0x7F800000),
		mk("Inf accumulator, finite products", float32(math.Inf(-1)), nil, 0xFF800000),
	}
}

func checkStepCase(t *testing.T, m TCModel, tc tcCase, got float32) {
	t.Helper()
	want := refTCStep(m, tc.d, tc.c, tc.a[:], tc.b[:], refOpts{})
	if math.Float32bits(got) != math.Float32bits(want) {
		t.Fatalf("%s %s %s: c=%v (%08x) a=%v b=%v: got %v (%08x), want %v (%08x)", m.Name, tc.d, tc.name,
			tc.c, math.Float32bits(tc.c), tc.a, tc.b, got, math.Float32bits(got), want, math.Float32bits(want))
	}
}

// TestTCStepMatchesBigReference: Step equals the model evaluated with
// math/big on random bf16 and f16 steps of every kind, for both models.
func TestTCStepMatchesBigReference(t *testing.T) {
	n := 60000
	if testing.Short() {
		n = 6000
	}
	for _, m := range []TCModel{Hopper, Ampere} {
		for _, d := range []DType{BF16, F16} {
			rng := rand.New(rand.NewPCG(uint64(m.BlockTerms), uint64(d)))
			cnt := n
			if m != Hopper {
				cnt = n / 6
			}
			for _, tc := range randomTCCases(rng, d, cnt) {
				checkStepCase(t, m, tc, m.Step(d, tc.c, tc.a[:], tc.b[:]))
			}
		}
	}
}

// fastStep is the plans' fast path on one step of finite operands.
func fastStep(m TCModel, d DType, c float32, a, b []float32) float32 {
	var fa, fb [16]float64
	var ea, eb [16]int32
	emin := int32(minNormalExp(d))
	for i := range 16 {
		fa[i], ea[i] = tcPack(a[i], emin)
		fb[i], eb[i] = tcPack(b[i], emin)
	}
	return m.fast().step(c, &fa, &fb, &ea, &eb)
}

// TestTCFastPathMatchesStep: the plans' packed float64 step equals Step on
// the same random cases (it is what the plans run for finite operands).
func TestTCFastPathMatchesStep(t *testing.T) {
	n := 200000
	if testing.Short() {
		n = 20000
	}
	for _, m := range []TCModel{Hopper, Ampere, {Name: "x7", BlockTerms: 4, ExtraBits: 7, MinAlignExp: -300}} {
		for _, d := range []DType{BF16, F16} {
			rng := rand.New(rand.NewPCG(uint64(m.ExtraBits)+10, uint64(d)))
			for _, tc := range randomTCCases(rng, d, n) {
				got := fastStep(m, d, tc.c, tc.a[:], tc.b[:])
				want := m.Step(d, tc.c, tc.a[:], tc.b[:])
				if math.Float32bits(got) != math.Float32bits(want) {
					t.Fatalf("%v %s %s: c=%v a=%v b=%v: fast %v (%08x), Step %v (%08x)", m, d, tc.name,
						tc.c, tc.a, tc.b, got, math.Float32bits(got), want, math.Float32bits(want))
				}
			}
		}
	}
}

// TestTCStepHandComputedCases pins results worked out by hand from the
// model's text, each showing one of its rules.
func TestTCStepHandComputedCases(t *testing.T) {
	negZero := float32(math.Copysign(0, -1))
	type hc struct {
		name string
		d    DType
		c    float32
		a, b []float32
		want float32
	}
	cases := []hc{
		{name: "grid 2^-25 keeps 1.5·2^-24, the final truncation drops it", d: BF16, c: 1,
			a: []float32{1.5}, b: []float32{0x1p-24}, want: 1},
		{name: "each term truncated toward zero before the sum", d: BF16, c: 1,
			// Four products -1.5·2^-25: each truncates to -2^-25, so the
			// sum is 1-2^-23, where the exact 1-3·2^-24 is a float32.
			a: []float32{-1.5, -1.5, -1.5, -1.5}, b: []float32{0x1p-25, 0x1p-25, 0x1p-25, 0x1p-25}, want: 1 - 0x1p-23},
		{name: "nominal exponent: 1.5·1.5 aligns at 2^0, not 2^1", d: BF16, c: 0,
			// Grid 2^-25 keeps the eight 2^-25 products: 2.25 + 2^-22.
			a: append([]float32{1.5}, repN(8, 1)...), b: append([]float32{1.5}, repN(8, 0x1p-25)...), want: 2.25 + 0x1p-22},
		{name: "emax clamped at -133", d: BF16, c: 0,
			// emax would be -140 (grid 2^-165); clamped to -133 the grid is
			// 2^-158 and the fifteen -2^-162 products vanish.
			a: append([]float32{0x1p-70}, repN(15, -0x1p-81)...), b: append([]float32{0x1p-70}, repN(15, 0x1p-81)...), want: 0x1p-140},
		{name: "f16 subnormal clamped to exponent -14", d: F16, c: 0,
			// 2^-24 (subnormal) · 2^10 has nominal exponent -14+10 = -4, so
			// the grid is 2^-29 and the 2^-30 products (2^-15 is an f16
			// subnormal too) vanish; unclamped, the grid would be 2^-39.
			a: append([]float32{0x1p-24}, repN(8, 0x1p-15)...), b: append([]float32{1024}, repN(8, 0x1p-15)...), want: 0x1p-14},
		{name: "subnormal result truncated to the 2^-149 grid", d: BF16, c: 0,
			a: []float32{1.75 * 0x1p-75}, b: []float32{0x1p-74}, want: 0x1p-149},
		{name: "negative subnormal below the grid gives +0 (as the H100 does)", d: BF16, c: 0,
			a: []float32{-0x1p-75}, b: []float32{0x1p-76}, want: 0},
		{name: "overflow gives +Inf (as the H200 does)", d: BF16, c: 0,
			a: []float32{0x1p127}, b: []float32{2}, want: float32(math.Inf(1))},
		{name: "negative overflow gives -Inf", d: BF16, c: -math.MaxFloat32,
			a: []float32{0x1p127}, b: []float32{-1}, want: float32(math.Inf(-1))},
		{name: "exact cancellation gives +0", d: F16, c: 1, a: []float32{-1}, b: []float32{1}, want: 0},
		{name: "-0 accumulator and -0 products give +0 (as the H100 does)", d: F16, c: negZero,
			a: repN(16, negZero), b: repN(16, 1), want: 0},
		{name: "-0 accumulator and a +0 product give +0", d: F16, c: negZero,
			a: []float32{0}, b: []float32{1}, want: 0},
		{name: "accumulator alone is kept exactly", d: BF16, c: 1 + 0x1p-23, want: 1 + 0x1p-23},
		{name: "subnormal accumulator alone is kept exactly", d: BF16, c: 0x1p-149, want: 0x1p-149},
		{name: "a tiny accumulator is truncated by a big product", d: F16, c: 0x1p-30,
			a: []float32{1}, b: []float32{1}, want: 1},
	}
	for _, tc := range cases {
		for i := len(tc.a); i < 16; i++ { // fill with zeros of tc.want's zero sign where needed
			tc.a, tc.b = append(tc.a, negZeroIf(tc.want)), append(tc.b, 1)
		}
		got := Hopper.Step(tc.d, tc.c, tc.a, tc.b)
		if math.Float32bits(got) != math.Float32bits(tc.want) {
			t.Errorf("%s: got %v (%08x), want %v (%08x)", tc.name, got, math.Float32bits(got), tc.want, math.Float32bits(tc.want))
		}
		ref := refTCStep(Hopper, tc.d, tc.c, tc.a, tc.b, refOpts{})
		if math.Float32bits(ref) != math.Float32bits(tc.want) {
			t.Errorf("%s: reference %v (%08x), want %v", tc.name, ref, math.Float32bits(ref), tc.want)
		}
		if fast := fastStep(Hopper, tc.d, tc.c, tc.a, tc.b); math.Float32bits(fast) != math.Float32bits(tc.want) {
			t.Errorf("%s: fast path %v (%08x), want %v", tc.name, fast, math.Float32bits(fast), tc.want)
		}
	}
}

func repN(n int, x float32) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = x
	}
	return v
}

// negZeroIf returns -0 when want is -0 (so that filler products keep an
// all-negative-zero block), else +0.
func negZeroIf(want float32) float32 {
	if want == 0 && math.Signbit(float64(want)) {
		return float32(math.Copysign(0, -1))
	}
	return 0
}

// TestTCStepSpecialValues: NaN and Inf by IEEE rules, NaN canonical.
func TestTCStepSpecialValues(t *testing.T) {
	for _, m := range []TCModel{Hopper, Ampere} {
		for _, tc := range specialTCCases() {
			got := m.Step(tc.d, tc.c, tc.a[:], tc.b[:])
			if math.Float32bits(got) != tc.want {
				t.Errorf("%s %s: got %08x, want %08x", m.Name, tc.name, math.Float32bits(got), tc.want)
			}
			checkStepCase(t, m, tc.tcCase, got)
		}
	}
}

// TestTCStepWithZeroProductsReturnsC: a step whose products are all zero
// returns c bit for bit (c alone is aligned at its own exponent, where the
// grid 2^(e_c-25) is finer than c's last bit), except that a -0 accumulator
// becomes +0: an exact zero sum is +0 whatever the signs of its addends.
func TestTCStepWithZeroProductsReturnsC(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 22))
	cs := []float32{0, 1, -1, math.MaxFloat32, -math.MaxFloat32, 0x1p-149, -0x1p-149, 0x1p-126, 1e-40, 3.14159}
	for range 2000 {
		cs = append(cs, randBits(rng))
	}
	for _, m := range []TCModel{Hopper, Ampere} {
		for _, d := range []DType{BF16, F16} {
			for _, c := range cs {
				if c == 0 && math.Signbit(float64(c)) {
					continue // -0: the two cases below
				}
				var a, b [16]float32
				for i := range 16 {
					a[i], b[i] = float32(math.Copysign(0, float64(randSign(rng)))), randHalfBits(rng, d)
				}
				if got := m.Step(d, c, a[:], b[:]); math.Float32bits(got) != math.Float32bits(c) {
					t.Fatalf("%s %s: c=%v (%08x): got %v (%08x)", m.Name, d, c, math.Float32bits(c), got, math.Float32bits(got))
				}
			}
			negZero := float32(math.Copysign(0, -1))
			if got := m.Step(d, negZero, repN(16, negZero), repN(16, 1)); math.Float32bits(got) != 0 {
				t.Errorf("%s %s: -0 with sixteen -0 products: got %08x, want +0", m.Name, d, math.Float32bits(got))
			}
			if got := m.Step(d, negZero, repN(16, negZero), append(repN(15, 1), -1)); math.Float32bits(got) != 0 {
				t.Errorf("%s %s: -0 with a +0 product: got %08x, want +0", m.Name, d, math.Float32bits(got))
			}
		}
	}
}

// TestTCHopperStepIsPermutationInvariant: the 16 products of a Hopper step
// form one block, so their order cannot matter. (Ampere's two blocks are
// chained: order between them does.)
func TestTCHopperStepIsPermutationInvariant(t *testing.T) {
	rng := rand.New(rand.NewPCG(23, 24))
	for _, d := range []DType{BF16, F16} {
		for _, tc := range randomTCCases(rng, d, 20000) {
			want := Hopper.Step(d, tc.c, tc.a[:], tc.b[:])
			p := rng.Perm(16)
			var a, b [16]float32
			for i, j := range p {
				a[i], b[i] = tc.a[j], tc.b[j]
			}
			if got := Hopper.Step(d, tc.c, a[:], b[:]); math.Float32bits(got) != math.Float32bits(want) {
				t.Fatalf("%s %s: permutation %v changed %08x to %08x", d, tc.name, p, math.Float32bits(want), math.Float32bits(got))
			}
		}
	}
}

// TestTCAmpereBlocksAreOrdered: in the two-block model the block boundary
// is visible. Eight products 2^-26 summed in a block of their own are exact
// (2^-23) and survive the next block's alignment at 2^0 (grid 2^-24); beside
// the product 1 in the same block each is a quarter unit and vanishes.
// Hopper, one block, gives 1 both ways.
func TestTCAmpereBlocksAreOrdered(t *testing.T) {
	smallFirst := append(repN(8, 0x1p-13), 1)
	bigFirst := append([]float32{1}, repN(8, 0x1p-13)...)
	cases := []struct {
		m    TCModel
		a    []float32
		want float32
	}{
		{Ampere, smallFirst, 1 + 0x1p-23},
		{Ampere, bigFirst, 1},
		{Hopper, smallFirst, 1},
		{Hopper, bigFirst, 1},
	}
	for _, tc := range cases {
		got := tc.m.Step(BF16, 0, tc.a, tc.a) // products a[i]·a[i]: 2^-26 and 1
		if got != tc.want {
			t.Errorf("%s %v: got %v, want %v", tc.m.Name, tc.a, got, tc.want)
		}
		if ref := refTCStep(tc.m, BF16, 0, pad16(tc.a), pad16(tc.a), refOpts{}); ref != tc.want {
			t.Errorf("%s %v: reference %v, want %v", tc.m.Name, tc.a, ref, tc.want)
		}
	}
}

func pad16(v []float32) []float32 {
	return append(append([]float32(nil), v...), make([]float32, 16-len(v))...)
}

// TestTCDropRuleIsImpliedByTruncation: the literal rule "an addend more than
// 31 binades below emax contributes 0" never changes a result for a valid
// model: such an addend is below one grid unit. The reference with and
// without the rule agrees on random steps, for the largest ExtraBits too.
func TestTCDropRuleIsImpliedByTruncation(t *testing.T) {
	rng := rand.New(rand.NewPCG(25, 26))
	for _, m := range []TCModel{Hopper, Ampere, {Name: "x7", BlockTerms: 16, ExtraBits: 7, MinAlignExp: -300}} {
		for _, d := range []DType{BF16, F16} {
			for _, tc := range randomTCCases(rng, d, 3000) {
				with := refTCStep(m, d, tc.c, tc.a[:], tc.b[:], refOpts{})
				without := refTCStep(m, d, tc.c, tc.a[:], tc.b[:], refOpts{noDropRule: true})
				if math.Float32bits(with) != math.Float32bits(without) {
					t.Fatalf("%v %s %s: rule changes %08x to %08x", m, d, tc.name, math.Float32bits(without), math.Float32bits(with))
				}
			}
		}
	}
}

// TestTCStepDiffersFromIEEEPlan: the tensor-core chain is not the f32 plan,
// so tests can tell the tiers apart. 1 + 1.5·2^-24: the FMA chain rounds to
// nearest (1 + 2^-23); the tensor-core step truncates (1).
func TestTCStepDiffersFromIEEEPlan(t *testing.T) {
	x := []float32{1, 1.5}
	w := []float32{1, 0x1p-24}
	ieee, tc := make([]float32, 1), make([]float32, 1)
	if err := ieee32.Forward(Values(ieee), Values(x), Values(w), nil, 1, 2, 1); err != nil {
		t.Fatal(err)
	}
	if err := tc32(Hopper, BF16).Forward(Values(tc), Values(x), Values(w), nil, 1, 2, 1); err != nil {
		t.Fatal(err)
	}
	if ieee[0] != 1+0x1p-23 || tc[0] != 1 {
		t.Fatalf("IEEE plan %v (want 1+2^-23), TC plan %v (want 1)", ieee[0], tc[0])
	}
}

// TestTCModelValid: the shipped models are valid; out-of-range parameters
// are rejected with ErrTCModel, and Step answers NaN for them.
func TestTCModelValid(t *testing.T) {
	for _, m := range []TCModel{Hopper, Ampere} {
		if err := m.Valid(); err != nil {
			t.Errorf("%v: %v", m, err)
		}
	}
	bad := []TCModel{
		{BlockTerms: 0, ExtraBits: 2, MinAlignExp: -133},
		{BlockTerms: 3, ExtraBits: 2, MinAlignExp: -133},
		{BlockTerms: 32, ExtraBits: 2, MinAlignExp: -133},
		{BlockTerms: 16, ExtraBits: -1, MinAlignExp: -133},
		{BlockTerms: 16, ExtraBits: 8, MinAlignExp: -133},
		{BlockTerms: 16, ExtraBits: 2, MinAlignExp: -301},
		{BlockTerms: 16, ExtraBits: 2, MinAlignExp: 128},
	}
	for _, m := range bad {
		if err := m.Valid(); !errors.Is(err, ErrTCModel) {
			t.Errorf("%v: Valid = %v, want ErrTCModel", m, err)
		}
		if r := m.Step(BF16, 1, []float32{1}, []float32{1}); math.Float32bits(r) != CanonicalNaN32 {
			t.Errorf("%v: Step = %v, want NaN", m, r)
		}
	}
	if r := Hopper.Step(F32, 1, nil, nil); math.Float32bits(r) != CanonicalNaN32 {
		t.Errorf("Step with dtype f32 = %v, want NaN", r)
	}
}

// TestTCStepZeroFillsShortInputs: pairs past the end of a or b are +0·+0
// (a NaN in a beyond len(b) is not used), and only 16 pairs count.
func TestTCStepZeroFillsShortInputs(t *testing.T) {
	nan := float32(math.NaN())
	a := []float32{1, 2, 3, nan}
	b := []float32{1, 1, 1}
	if got, want := Hopper.Step(BF16, 0, a, b), Hopper.Step(BF16, 0, pad16(a[:3]), pad16(b)); got != want || got != 6 {
		t.Errorf("short inputs: got %v, want %v (6)", got, want)
	}
	long := append(repN(16, 1), nan)
	if got := Hopper.Step(BF16, 0, long, long); got != 16 {
		t.Errorf("17 pairs: got %v, want 16 (the 17th ignored)", got)
	}
}

func ExampleTCModel_Step() {
	// 1 + 1.5·2^-24 in one tensor-core step: the product lies on the grid
	// 2^-25 of the alignment (emax = 0), the exact sum is truncated to
	// float32: 1. The IEEE FMA would round it to nearest: 1 + 2^-23.
	a := []float32{1, 1.5}
	b := []float32{1, 0x1p-24}
	fmt.Println(Hopper.Step(BF16, 0, a, b), FMA32(1.5, 0x1p-24, 1) == 1+0x1p-23)
	// Output: 1 true
}

func benchmarkTCFast(b *testing.B, m TCModel) {
	rng := rand.New(rand.NewPCG(27, 28))
	const n = 256
	fa, fb := make([]float64, n*16), make([]float64, n*16)
	ea, eb := make([]int32, n*16), make([]int32, n*16)
	for i := range fa {
		fa[i], ea[i] = tcPack(halfVal(BF16, rng.NormFloat64()), -126)
		fb[i], eb[i] = tcPack(halfVal(BF16, rng.NormFloat64()), -126)
	}
	f := m.fast()
	b.ResetTimer()
	var c float32
	for i := 0; i < b.N; i++ {
		k := i % n * 16
		c = f.step(c, (*[16]float64)(fa[k:]), (*[16]float64)(fb[k:]), (*[16]int32)(ea[k:]), (*[16]int32)(eb[k:]))
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds()/1e6, "Msteps/s")
	sinkF32 = c
}

var sinkF32 float32

func BenchmarkTCStepFastHopper(b *testing.B) { benchmarkTCFast(b, Hopper) }
func BenchmarkTCStepFastAmpere(b *testing.B) { benchmarkTCFast(b, Ampere) }

func BenchmarkTCStepExact(b *testing.B) {
	rng := rand.New(rand.NewPCG(29, 30))
	cs := randomTCCases(rng, BF16, 256)
	b.ResetTimer()
	var c float32
	for i := 0; i < b.N; i++ {
		tc := &cs[i%len(cs)]
		c = Hopper.Step(BF16, c, tc.a[:], tc.b[:])
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds()/1e6, "Msteps/s")
	sinkF32 = c
}
