package ref

import "math"

// CanonicalNaN32 is the bit pattern of the one float32 NaN the reference
// produces. NVIDIA GPUs return this canonical NaN from arithmetic instead of
// propagating an input's payload, so the reference does the same to compare
// bit for bit.
const CanonicalNaN32 uint32 = 0x7FFFFFFF

// canonicalNaN is CanonicalNaN32 as a float32 value.
var canonicalNaN = math.Float32frombits(CanonicalNaN32)

// The float64 image of a float32 rounding problem. A float64 carries 29 more
// fraction bits than a float32; a float32 rounding midpoint in the float32
// normal range is a float64 whose low 29 fraction bits are exactly 1 followed
// by 28 zeros.
const (
	lowMask64    = 1<<29 - 1  // fraction bits a float64 has below a float32's last bit
	halfULP64    = 1 << 28    // the half-ulp bit of a float32 inside a float64
	expMinNorm   = 1023 - 126 // biased float64 exponent of 2^-126, float32's smallest normal
	expMaxFinite = 1023 + 127 // biased float64 exponent of float32's largest binade
)

// FMA32 returns a*b + c computed exactly and rounded once to float32, round to
// nearest, ties to even: the IEEE 754 fusedMultiplyAdd of binary32, the same
// as CUDA's __fmaf_rn. Subnormal inputs and results are kept (no flush to
// zero); a result too large rounds to ±Inf; signed zeros follow IEEE 754 round
// to nearest (an exact zero sum of operands of opposite signs is +0); any NaN
// result is the canonical NaN (CanonicalNaN32), including Inf*0 and Inf-Inf.
//
// Method: a*b is exact in float64 (24+24 significant bits), so s = a*b + c
// rounded once to float64 is within half a float64 ulp of the exact value.
// float32(s) rounds a second time; that double rounding can only go wrong
// when s lands exactly on a float32 rounding midpoint (every float32 midpoint
// is a float64, so rounding to float64 never crosses one). That rare case is
// settled in fmaTie by the sign of the exact error of the float64 sum.
func FMA32(a, b, c float32) float32 {
	// The explicit float64 conversion is a rounding barrier: it forbids the
	// compiler to fuse the product into the addition (the product is exact
	// anyway, but the code then means the same on every architecture).
	s := float64(float64(a)*float64(b)) + float64(c)
	if plainRounding(s) {
		return float32(s)
	}
	return fmaTie(a, b, c, s)
}

// fmaTie finishes FMA32 off the common path: NaN and Inf, zero, the overflow
// range, float32 subnormal results, and float64 sums that fall exactly on a
// float32 rounding midpoint.
func fmaTie(a, b, c float32, s float64) float32 {
	u := math.Float64bits(s)
	exp := u >> 52 & 0x7FF
	switch {
	case s != s:
		return canonicalNaN
	case s == 0, exp > expMaxFinite:
		// Zero: the float64 sum never underflows (all terms are multiples of
		// 2^-298), so s is an exact zero with IEEE's sign. Huge: |s| is at or
		// above 2^128, far past the overflow midpoint; float32 gives ±Inf.
		return float32(s)
	}
	// TwoSum: p + cf == s + e exactly (no overflow is possible here).
	p := float64(float64(a) * float64(b))
	cf := float64(c)
	bv := s - p
	e := (p - (s - bv)) + (cf - bv)
	if exp >= expMinNorm {
		if u&lowMask64 != halfULP64 || e == 0 {
			return float32(s) // not a midpoint, or a true tie: hardware RNE
		}
		// s is a midpoint and the exact value lies beside it: truncate s's
		// magnitude to the float32 grid (exact), then step away from zero if
		// the exact value is larger in magnitude than s. The step of the bit
		// pattern carries into the exponent, and from the largest finite
		// float32 into +Inf, as IEEE requires.
		t := float32(math.Float64frombits(u &^ lowMask64))
		if (e > 0) == (s > 0) {
			return math.Float32frombits(math.Float32bits(t) + 1)
		}
		return t
	}
	// |s| < 2^-126: the float32 grid is 2^-149 and a midpoint is an odd
	// multiple of 2^-150. Scaling by 2^150 is exact.
	t := math.Abs(s) * 0x1p150
	if t != math.Trunc(t) || uint64(t)&1 == 0 || e == 0 {
		return float32(s)
	}
	k := uint32(uint64(t) >> 1) // magnitude toward zero, in units of 2^-149
	if (e > 0) == (s > 0) {
		k++ // may become 2^23: the bits of 2^-126, the smallest normal
	}
	return math.Float32frombits(k | uint32(u>>32)&0x80000000)
}

// Add32 returns a + b rounded to float32 (round to nearest, ties to even), with
// any NaN result replaced by the canonical NaN. Every addition of the
// reference's plans goes through it so NaNs compare bit for bit with the GPU.
func Add32(a, b float32) float32 {
	r := a + b
	if r != r {
		return canonicalNaN
	}
	return r
}

// plainRounding reports whether float32(s) is the correctly rounded result
// for the float64 sum s of FMA32: s is in float32's normal range and not on a
// float32 rounding midpoint. It is FMA32's common path, small enough to be
// inlined into the inner loops.
func plainRounding(s float64) bool {
	u := math.Float64bits(s)
	return u&lowMask64 != halfULP64 && (u>>52&0x7FF)-expMinNorm <= expMaxFinite-expMinNorm
}

// fmaRow sets acc[j] = FMA32(a, b[j], acc[j]) for every j < len(acc); b must
// be at least as long as acc. It is FMA32 with its common path inlined by
// hand (the call to fmaTie keeps the compiler from inlining FMA32 itself).
func fmaRow(acc, b []float32, a float32) {
	b = b[:len(acc)]
	af := float64(a)
	for j, bv := range b {
		c := acc[j]
		if s := float64(af*float64(bv)) + float64(c); plainRounding(s) {
			acc[j] = float32(s)
		} else {
			acc[j] = fmaTie(a, bv, c, s)
		}
	}
}

// fmaRows4 applies four consecutive terms of a chain to every accumulator:
// acc[j] = FMA32(a3, b3[j], FMA32(a2, b2[j], FMA32(a1, b1[j],
// FMA32(a0, b0[j], acc[j])))), in that order, keeping acc[j] in a register
// across the four steps. The b slices must be at least as long as acc.
func fmaRows4(acc, b0, b1, b2, b3 []float32, a0, a1, a2, a3 float32) {
	n := len(acc)
	b0, b1, b2, b3 = b0[:n], b1[:n], b2[:n], b3[:n]
	f0, f1, f2, f3 := float64(a0), float64(a1), float64(a2), float64(a3)
	for j := range acc {
		v := acc[j]
		if s := float64(f0*float64(b0[j])) + float64(v); plainRounding(s) {
			v = float32(s)
		} else {
			v = fmaTie(a0, b0[j], v, s)
		}
		if s := float64(f1*float64(b1[j])) + float64(v); plainRounding(s) {
			v = float32(s)
		} else {
			v = fmaTie(a1, b1[j], v, s)
		}
		if s := float64(f2*float64(b2[j])) + float64(v); plainRounding(s) {
			v = float32(s)
		} else {
			v = fmaTie(a2, b2[j], v, s)
		}
		if s := float64(f3*float64(b3[j])) + float64(v); plainRounding(s) {
			v = float32(s)
		} else {
			v = fmaTie(a3, b3[j], v, s)
		}
		acc[j] = v
	}
}
