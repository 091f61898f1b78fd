package ref

import "math"

// The transcendental functions of the epilogues, each defined once as a
// fixed sequence of float32 operations: FMA32 (__fmaf_rn), add32
// (__fadd_rn), sub32 (__fsub_rn), mul32 (__fmul_rn), div32 (__fdiv_rn),
// sign and exponent bit operations, and comparisons. Every operation rounds
// once, to nearest even, with subnormals kept; no libm call is made, so a
// CUDA transcription of the same sequence (docs/contract.md, section
// "Transcendentals") gives the same bits on the GPU. Libraries' tanhf,
// expf or math.Tanh would not: their bits differ between CUDA and Go.
//
// Their accuracy against float64 is measured by TestActivationAccuracy
// (every bf16 input and a sample of float32 inputs) and stated in
// docs/contract.md; the test fails if it regresses.

// Constants, as float32 bit patterns so that the CUDA text uses the same
// values (__uint_as_float of the same hex).
const (
	bitsLog2E   = 0x3FB8AA3B // log2(e)
	bitsLn2Hi   = 0x3F317200 // ln(2), high part: 16 significant bits, so k·ln2Hi is exact for |k| < 2^8
	bitsLn2Lo   = 0x35BFBE8E // ln(2) - ln2Hi
	bitsShifter = 0x4B400000 // 1.5·2^23: t + shifter rounds t to an integer in the low bits
	bitsTanhLo  = 0x3F0CCCCD // 0.55: below it tanh uses expm1, above exp
	bitsTanhSat = 0x41108000 // 9.03125: from here on tanh rounds to ±1
	bitsGeluK0  = 0x3FCC422A // K0 = 2·sqrt(2/π), high part
	bitsGeluK0l = 0xB342BC9B // K0, low part: K0 - high, rounded
	bitsGeluK1  = 0x3D922279 // K1 = K0·0.044715, high part
	bitsGeluK1l = 0x3124D8B5 // K1, low part
	bitsGeluK2  = 0x3E5B33B6 // 3·K1: the derivative's
	bitsGeluSat = 0x41800000 // 16: from here on Gelu32 is x or -0, GeluGrad32 1 or -0
)

// The coefficients of expm1 on the reduced range |r| <= ln(2)/2: the Taylor
// coefficients 1/n!, n = 2..9, rounded to float32.
var expm1Coef = [...]uint32{
	0x3638EF1D, // 1/9!
	0x37D00D01, // 1/8!
	0x39500D01, // 1/7!
	0x3AB60B61, // 1/6!
	0x3C088889, // 1/5!
	0x3D2AAAAB, // 1/4!
	0x3E2AAAAB, // 1/3!
	0x3F000000, // 1/2
}

func f32of(bits uint32) float32 { return math.Float32frombits(bits) }

// canon32 returns the canonical NaN for any NaN, x otherwise.
func canon32(x float32) float32 {
	if x != x {
		return canonicalNaN
	}
	return x
}

// sub32, mul32 and div32 are __fsub_rn, __fmul_rn and __fdiv_rn: one IEEE
// operation rounded once. The explicit float32 conversion is the rounding
// barrier the Go specification defines: no fusion into an FMA.
func sub32(a, b float32) float32 { return canon32(float32(a - b)) }
func mul32(a, b float32) float32 { return canon32(float32(a * b)) }
func div32(a, b float32) float32 { return canon32(float32(a / b)) }

// add32 is Add32 under the name the sequences use.
func add32(a, b float32) float32 { return Add32(a, b) }

// abs32 clears the sign bit (exact).
func abs32(x float32) float32 { return math.Float32frombits(math.Float32bits(x) &^ 0x80000000) }

// copySign32 returns |x| with the sign of s (exact).
func copySign32(x, s float32) float32 {
	return math.Float32frombits(math.Float32bits(x)&^0x80000000 | math.Float32bits(s)&0x80000000)
}

// pow2 returns 2^k as a float32 for -126 <= k <= 127 (exact).
func pow2f(k int32) float32 { return math.Float32frombits(uint32(k+127) << 23) }

// expReduce splits e^(y+yl), for |y| < 2^21 and a correction |yl| far
// below |y|'s last bit (0 where y is exact), as 2^k·(1 + q): k is y/ln2
// rounded to the nearest integer (ties to even), r = y - k·ln2 + yl is
// computed with two FMAs (the first exact) and one addition, and q =
// expm1(r) = r + r²·P(r), P the Taylor polynomial of degree 7 by Horner's
// rule.
func expReduce(y, yl float32) (q float32, k int32) {
	t := mul32(y, f32of(bitsLog2E))
	j := add32(t, f32of(bitsShifter)) // the integer nearest t, in j's low bits
	kf := sub32(j, f32of(bitsShifter))
	k = int32(math.Float32bits(j)) - bitsShifter
	r := FMA32(-kf, f32of(bitsLn2Hi), y)
	r = FMA32(-kf, f32of(bitsLn2Lo), r)
	r = add32(r, yl)
	s := mul32(r, r)
	p := f32of(expm1Coef[0])
	for _, c := range expm1Coef[1:] {
		p = FMA32(p, r, f32of(c))
	}
	return FMA32(s, p, r), k
}

// Exp32 returns e^x as a fixed sequence of float32 operations (see
// docs/contract.md, section "Transcendentals"). NaN gives the canonical
// NaN, x >= 89 (and +Inf) gives +Inf, x < -104 (and -Inf) gives +0;
// results below 2^-126 are rounded once on the subnormal grid.
func Exp32(x float32) float32 {
	switch {
	case x != x:
		return canonicalNaN
	case x >= 89:
		return float32(math.Inf(1))
	case x < -104:
		return 0
	}
	return expScale(expReduce(x, 0))
}

// expScale returns (1 + q)·2^k: two exact power-of-two factors, the first
// product exact, so one rounding only, also where the result is
// subnormal or overflows (-151 <= k <= 129).
func expScale(q float32, k int32) float32 {
	e := add32(1, q)
	k1 := k >> 1 // an arithmetic shift: floor(k/2)
	return mul32(mul32(e, pow2f(k1)), pow2f(k-k1))
}

// Tanh32 returns tanh(x) as a fixed sequence of float32 operations (see
// docs/contract.md, section "Transcendentals"): for |x| < 0.55,
// em/(em+2) with em = expm1(2|x|); below 9.03125, 1 - 2/(e^(2|x|)+1);
// from there on 1; the sign of x put back. NaN gives the canonical NaN,
// ±Inf gives ±1, -0 gives -0.
func Tanh32(x float32) float32 {
	if x != x {
		return canonicalNaN
	}
	a := abs32(x)
	var t float32
	switch {
	case a >= f32of(bitsTanhSat):
		t = 1
	case a < f32of(bitsTanhLo):
		q, k := expReduce(add32(a, a), 0) // k is 0, 1 or 2: 2^k - 1 is exact
		p := pow2f(k)
		em := add32(mul32(q, p), sub32(p, 1))
		t = div32(em, add32(em, 2))
	default:
		q, k := expReduce(add32(a, a), 0)
		e := mul32(add32(1, q), pow2f(k))
		t = sub32(1, div32(2, add32(e, 1)))
	}
	return copySign32(t, x)
}

// sigmoidParts returns σ(|z|) and σ(-|z|) for z + zl (zl a correction far
// below z's last bit, 0 where z is exact) from one exponential, e =
// e^-|z+zl|: 1/(1+e) and e/(1+e), neither with a cancellation.
func sigmoidParts(z, zl float32) (pos, neg float32) {
	y, yl := z, zl
	if z >= 0 {
		y, yl = -z, -zl
	}
	var e float32
	if y >= -104 {
		e = expScale(expReduce(y, yl))
	} // else e = +0: e^y is below half the smallest subnormal
	d := add32(1, e)
	return div32(1, d), div32(e, d)
}

// sigmoidOne returns σ(z + zl) as sigmoidParts would give it, pos for z >= 0
// and neg for z < 0, with only that one division.
func sigmoidOne(z, zl float32) float32 {
	y, yl := z, zl
	if z >= 0 {
		y, yl = -z, -zl
	}
	var e float32
	if y >= -104 {
		e = expScale(expReduce(y, yl))
	}
	num := e
	if z >= 0 {
		num = 1
	}
	return div32(num, add32(1, e))
}

// Sigmoid32 returns σ(x) = 1/(1+e^-x) as a fixed sequence of float32
// operations: with e = Exp32(-|x|), 1/(1+e) for x >= 0 (-0 included) and
// e/(1+e) for x < 0. NaN gives the canonical NaN, +Inf 1, -Inf +0.
func Sigmoid32(x float32) float32 {
	if x != x {
		return canonicalNaN
	}
	return sigmoidOne(x, 0)
}

// geluArg returns x² and z + zl = x·(K0 + K1·x²), the argument of σ in
// GELU's tanh form, 0.5·x·(1 + tanh(sqrt(2/π)·(x + 0.044715·x³))) = x·σ(z),
// with about twice float32's precision: the exponential magnifies an error
// of z by |z| (up to about 100 where σ(z) is still above float32's
// subnormals), so a z rounded once would cost up to hundreds of ulps. The
// constants are pairs (high, low); the products' errors are taken exactly
// with FMAs and the sum's with TwoSum; the small terms are summed in plain
// float32. |x| < 16, so nothing overflows.
func geluArg(x float32) (x2, z, zl float32) {
	k0, k0l := f32of(bitsGeluK0), f32of(bitsGeluK0l)
	k1, k1l := f32of(bitsGeluK1), f32of(bitsGeluK1l)
	x2 = mul32(x, x)
	x2l := FMA32(x, x, -x2) // x² = x2 + x2l exactly
	p := mul32(k1, x2)
	pl := FMA32(k1, x2, -p) // k1·x2 = p + pl exactly
	w := add32(k0, p)       // TwoSum: k0 + p = w + wl exactly
	t := sub32(w, k0)
	wl := add32(sub32(k0, sub32(w, t)), sub32(p, t))
	wl = add32(wl, add32(pl, FMA32(k1, x2l, FMA32(k1l, x2, k0l))))
	z = mul32(x, w)
	zl = FMA32(x, w, -z) // x·w = z + zl exactly
	zl = FMA32(x, wl, zl)
	return x2, z, zl
}

// Gelu32 returns GELU's tanh approximation (cuBLASLt's and PyTorch's
// approximate="tanh"), 0.5·x·(1 + tanh(sqrt(2/π)·(x + 0.044715·x³))),
// evaluated in the equal form x·σ(z), z = x·(K0 + K1·x²), K0 = 2·sqrt(2/π),
// K1 = K0·0.044715, which has no cancellation for negative x (1 + tanh
// would lose every digit there), with z to about twice float32's precision
// (geluArg). For |x| >= 16 it is x (x > 0) or -0 (x < 0: the exact value is
// a negative number far below float32's range). NaN gives the canonical
// NaN, ±Inf +Inf and -0, -0 gives -0.
func Gelu32(x float32) float32 {
	switch {
	case x != x:
		return canonicalNaN
	case abs32(x) >= f32of(bitsGeluSat):
		if x > 0 {
			return x
		}
		return float32(math.Copysign(0, -1))
	}
	_, z, zl := geluArg(x)
	return mul32(x, sigmoidOne(z, zl))
}

// GeluGrad32 returns the derivative of Gelu32's function,
// σ(z)·(1 + x·σ(-z)·z'), z' = K0 + 3·K1·x², σ(z) and σ(-z) from one
// exponential of geluArg's z. For |x| >= 16 it is 1 (x > 0) or -0 (x < 0:
// the exact value is a negative number far below float32's range). NaN
// gives the canonical NaN. Near its root (x ≈ -0.7518) the result is
// small and its error, measured in its own ulps, large; docs/contract.md
// states the absolute error there.
func GeluGrad32(x float32) float32 {
	switch {
	case x != x:
		return canonicalNaN
	case abs32(x) >= f32of(bitsGeluSat):
		if x > 0 {
			return 1
		}
		return float32(math.Copysign(0, -1))
	}
	x2, z, zl := geluArg(x)
	zp := FMA32(f32of(bitsGeluK2), x2, f32of(bitsGeluK0))
	pos, neg := sigmoidParts(z, zl)
	s, sm := pos, neg
	if z < 0 {
		s, sm = neg, pos
	}
	return mul32(s, FMA32(mul32(x, sm), zp, 1))
}

// Relu32 is the ReLU of the epilogues (and of triad): x when x > 0, the
// canonical NaN for a NaN, +0 otherwise (so -0 gives +0).
func Relu32(x float32) float32 {
	switch {
	case x > 0:
		return x
	case x != x:
		return canonicalNaN
	}
	return 0
}
