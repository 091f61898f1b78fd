package ref

import (
	"math"
	"math/bits"
)

// The 8-bit floating-point types (E4M3, E5M2): their encoding, and the
// tensor-core step that multiplies them (FP8Step). See docs/contract.md,
// section "fp8 (E4M3, E5M2)".

// The NaN codes FP8Encode stores for a NaN input, one per format, whatever
// the input's sign or payload: what PTX's cvt.rn.satfinite.{e4m3x2,e5m2x2}.f32
// is taken to produce (0x7F is a NaN of both formats; to be confirmed on
// hardware, hence one constant each).
const (
	CanonicalNaNE4M3 uint8 = 0x7F
	CanonicalNaNE5M2 uint8 = 0x7F
)

// fp8Format is the layout of one 8-bit type: a sign bit, an exponent field
// and mbits fraction bits; exponent field 0 holds the subnormals
// m/2^mbits · 2^emin.
type fp8Format struct {
	mbits   uint
	bias    int
	emin    int   // the smallest normal exponent, 1 - bias
	maxCode uint8 // the code of the largest finite magnitude
	nanCode uint8 // what FP8Encode stores for a NaN
	inf     bool  // the all-ones exponent field holds ±Inf (m = 0) and NaNs; else only S.1111.111 is NaN
	max     float32
}

var (
	fmtE4M3 = fp8Format{mbits: 3, bias: 7, emin: -6, maxCode: 0x7E, nanCode: CanonicalNaNE4M3, max: 448}
	fmtE5M2 = fp8Format{mbits: 2, bias: 15, emin: -14, maxCode: 0x7B, nanCode: CanonicalNaNE5M2, inf: true, max: 57344}
)

// fp8Fmt returns d's format, or nil for a d that is not E4M3 or E5M2.
func fp8Fmt(d DType) *fp8Format {
	switch d {
	case E4M3:
		return &fmtE4M3
	case E5M2:
		return &fmtE5M2
	}
	return nil
}

// fp8Index is the index of an 8-bit type in the package's tables.
func fp8Index(d DType) int { return int(d - E4M3) }

// fp8Values holds every code's value as a float32 (NaN: the canonical NaN),
// per type: fp8Values[fp8Index(d)][code].
var fp8Values = func() (t [2][256]float32) {
	for i, f := range []*fp8Format{&fmtE4M3, &fmtE5M2} {
		for c := range 256 {
			t[i][c] = f.decode(uint8(c))
		}
	}
	return t
}()

// decode returns the value of code, exactly (a NaN code: the canonical
// float32 NaN).
func (f *fp8Format) decode(code uint8) float32 {
	mag := code & 0x7F
	e := int(mag >> f.mbits)
	m := uint64(mag) & (1<<f.mbits - 1)
	top := int(0x7F >> f.mbits) // the all-ones exponent field
	var v float32
	switch {
	case f.inf && e == top && m != 0, !f.inf && mag == 0x7F:
		return canonicalNaN
	case f.inf && e == top:
		v = float32(math.Inf(1))
	case e == 0:
		v = float32(math.Ldexp(float64(m), f.emin-int(f.mbits))) // exact: at most 3 bits
	default:
		v = float32(math.Ldexp(float64(m|1<<f.mbits), e-f.bias-int(f.mbits)))
	}
	if code&0x80 != 0 {
		v = math.Float32frombits(math.Float32bits(v) | 1<<31) // -0 for the code 0x80
	}
	return v
}

// FP8Decode returns the value of the code of the 8-bit type d (E4M3 or
// E5M2) as a float32, exactly: every finite code, subnormals included, and
// E5M2's infinities are float32 values; a NaN code gives the canonical
// float32 NaN (CanonicalNaN32). It returns the canonical NaN for a d that
// is not E4M3 or E5M2.
func FP8Decode(d DType, code uint8) float32 {
	if !d.FP8() {
		return canonicalNaN
	}
	return fp8Values[fp8Index(d)][code]
}

// FP8Max returns the largest finite value of the 8-bit type d: 448 for
// E4M3, 57344 for E5M2, and the canonical NaN for any other d.
func FP8Max(d DType) float32 {
	if f := fp8Fmt(d); f != nil {
		return f.max
	}
	return canonicalNaN
}

// FP8Encode converts x to the 8-bit type d (E4M3 or E5M2) as PTX's
// cvt.rn.satfinite.{e4m3x2,e5m2x2}.f32 does: round to nearest, ties to
// even, on the format's grid (subnormals included; a value that rounds to
// zero keeps its sign, 0x00 or 0x80), then saturate: a magnitude that
// rounds beyond the largest finite value, and ±Inf, give ±FP8Max(d) (0x7E,
// 0xFE for E4M3; 0x7B, 0xFB for E5M2). Every NaN gives CanonicalNaNE4M3 or
// CanonicalNaNE5M2. The rounding is exact integer arithmetic on x's bits.
// It returns 0x7F for a d that is not E4M3 or E5M2.
func FP8Encode(d DType, x float32) uint8 {
	f := fp8Fmt(d)
	if f == nil {
		return 0x7F
	}
	return f.encode(x)
}

func (f *fp8Format) encode(x float32) uint8 {
	u := math.Float32bits(x)
	sign := uint8(u >> 24 & 0x80)
	abs := u & 0x7FFFFFFF
	switch {
	case abs > 0x7F800000:
		return f.nanCode
	case abs >= math.Float32bits(f.max):
		// Inf, the largest finite value and everything between: rounding
		// gives the largest finite value or a magnitude beyond it, and
		// beyond saturates to it.
		return sign | f.maxCode
	case abs == 0:
		return sign
	}
	// x = sig·2^lsb exactly, 0 < |x| < max.
	sig := abs & 0x7FFFFF
	lsb := -149
	if ex := int(abs >> 23); ex != 0 {
		sig |= 1 << 23
		lsb = ex - 150
	}
	e := bits.Len32(sig) - 1 + lsb // floor(log2|x|)
	// q is the exponent of the last bit of the result: mbits fraction bits
	// below e, or the subnormal grid. A float32 has 23 fraction bits, so
	// q > lsb always: the result is sig / 2^(q-lsb), rounded.
	q := max(e, f.emin) - int(f.mbits)
	d := uint(q - lsb)
	if d >= 25 {
		// sig < 2^24 <= half a unit of 2^q: rounds to zero, keeping the sign.
		return sign
	}
	k := sig >> d
	rem, half := sig&(1<<d-1), uint32(1)<<(d-1)
	if rem > half || rem == half && k&1 == 1 {
		k++
	}
	if k == 0 {
		return sign
	}
	if k == 1<<(f.mbits+1) { // the rounding carried into the next binade
		k >>= 1
		q++
	}
	// Now k < 2^(mbits+1): a normal significand (k >= 2^mbits, including
	// a subnormal that rounded up to the smallest normal) or a subnormal's
	// fraction (then q = emin - mbits and the exponent field is 0).
	code := int(k)
	if k >= 1<<f.mbits {
		code = (q+int(f.mbits)+f.bias)<<f.mbits | int(k-1<<f.mbits)
	}
	if code > int(f.maxCode) {
		return sign | f.maxCode // rounded beyond the largest finite value
	}
	return sign | uint8(code)
}

// FP8StepK is the reduction extent of one fp8 tensor-core step: wgmma's
// m64nNk32 with 8-bit inputs consumes 32 products of every output
// element's reduction at a time.
const FP8StepK = 32

// The fp8 step's grid and result precision: addends are cut to multiples
// of 2^(emax-fp8GridBits), the sum is kept to fp8SumBits significant bits.
const (
	fp8GridBits = 13
	fp8SumBits  = 14
)

// fp8MinNormalExp is the exponent an fp8 subnormal is clamped up to when
// its nominal exponent is taken: the format's smallest normal exponent
// (E4M3 -6, E5M2 -14).
func fp8MinNormalExp(d DType) int { return fp8Fmt(d).emin }

// FP8Step returns the accumulator after one fp8 tensor-core step, as
// measured on an H100 (wgmma.m64n8k32, f32 accumulator): c plus the
// products a[i]·b[i], a of the 8-bit type ta and b of tb (E4M3 or E5M2,
// any pair), at most FP8StepK of them; pairs past the end of a or b are +0
// on both operands (the zero-filled tail of a reduction). Per output
// element:
//
//  1. Specials by IEEE rules: a NaN operand, Inf·0, or infinities of both
//     signs give the canonical NaN; otherwise an infinite addend gives that
//     infinity. Otherwise:
//  2. Nominal exponents: for an input x, floor(log2|x|) with subnormals
//     clamped up to the format's smallest normal exponent (E4M3 -6, E5M2
//     -14); a product's is the sum of its factors'; c's is floor(log2|c|),
//     float32 subnormals clamped to -126.
//  3. emax is the largest nominal exponent of a nonzero addend (zero
//     addends take no part).
//  4. Every addend's exact value is truncated toward zero, on its
//     magnitude, to a multiple of 2^(emax-13).
//  5. The truncated addends are summed exactly.
//  6. The sum is rounded toward zero to 14 significant bits (13 fraction
//     bits; never below float32's subnormal grid 2^-149, which cannot bind).
//  7. A nonzero sum keeps its sign; an exactly zero sum is -0 only when c
//     and every product (zero-filled ones included) are negative or -0, and
//     +0 otherwise (so c = +0 is the same as no accumulator).
//
// So the accumulator never carries more than 14 significant bits after a
// step. FP8Step evaluates the rules literally with exact integer
// arithmetic; it returns the canonical NaN for a ta or tb that is not E4M3
// or E5M2.
func FP8Step(c float32, ta DType, a []uint8, tb DType, b []uint8) float32 {
	if !ta.FP8() || !tb.FP8() {
		return canonicalNaN
	}
	var av, bv [FP8StepK]float32 // +0 beyond the inputs: the zero-filled tail
	n := min(len(a), len(b), FP8StepK)
	for i := range n {
		av[i] = FP8Decode(ta, a[i])
		bv[i] = FP8Decode(tb, b[i])
	}
	if r, special := tcSpecial(c, av[:], bv[:]); special {
		return r
	}
	ea, eb := fp8MinNormalExp(ta), fp8MinNormalExp(tb)
	var ad [FP8StepK + 1]tcAddend
	neg, sig, lsb, e := f32Parts(c, -126)
	ad[0] = tcAddend{neg, sig, lsb, e}
	for i := range av {
		na, sa, la, xa := f32Parts(av[i], ea)
		nb, sb, lb, xb := f32Parts(bv[i], eb)
		// sa, sb < 2^24: the product is exact in uint64.
		ad[i+1] = tcAddend{na != nb, sa * sb, la + lb, xa + xb}
	}
	return fp8SumAddends(ad[:])
}

// fp8SumAddends aligns, truncates and sums finite addends and rounds the
// sum toward zero to 14 significant bits: steps 3 to 7 of FP8Step.
func fp8SumAddends(ad []tcAddend) float32 {
	emax, found := 0, false // with every addend zero the grid does not matter
	for _, t := range ad {
		if t.sig != 0 && (!found || t.e > emax) { // zero addends take no part
			emax, found = t.e, true
		}
	}
	g := emax - fp8GridBits // exponent of one grid unit
	// Bound: an addend of nominal exponent e <= emax is below 2^(e+2) (a
	// product of two significands below 2; c is below 2^(e+1)), so its
	// truncated magnitude is below 2^(e+2-g) <= 2^15 units: at most 33 of
	// them, |sum| < 2^21. The left shift below cannot overflow either.
	neg, mag, zero := truncSum(ad, emax, g, math.MaxInt)
	if zero {
		if neg {
			return float32(math.Copysign(0, -1))
		}
		return 0
	}
	return fp8RZ(neg, mag, g)
}

// fp8RZ returns (-1)^neg · mag · 2^g rounded toward zero to 14 significant
// bits, for a nonzero mag, never below the grid 2^-149. The magnitude of a
// step's sum stays below 2^128 (an accumulator near MaxFloat32 is cut to
// its top 14 bits and every product is far below its grid), so the
// overflow branch is defensive: ±Inf as the bf16 model's rzF32 gives.
func fp8RZ(neg bool, mag uint64, g int) float32 { return rzSig(neg, mag, g, fp8SumBits) }

// fp8Unit is one code of an 8-bit type unpacked for the fast step: the
// value (-1)^neg · sig · 2^lsb with nominal exponent e, or special for NaN
// and Inf. A zero has sig = 0 and e = fp8ZeroExp, so that a product with a
// zero factor has a nominal exponent far below any other's and never sets
// emax.
type fp8Unit struct {
	sig     uint32
	lsb, e  int32
	neg     uint32 // 1 for a negative code, -0 included
	special bool
}

// fp8ZeroExp is the nominal exponent fp8Units gives a zero: a product
// with a zero factor has one below fp8NoExp, every other product one of
// at least -28 (two E5M2 subnormals).
const (
	fp8ZeroExp = -1 << 20
	fp8NoExp   = -1 << 19
)

// fp8Units unpacks every code of both types from the format's fields (not
// from the float32 value, as FP8Step does: the two are checked against each
// other).
var fp8Units = func() (t [2][256]fp8Unit) {
	for i, f := range []*fp8Format{&fmtE4M3, &fmtE5M2} {
		for c := range 256 {
			v := f.decode(uint8(c))
			mag := uint8(c) & 0x7F
			ex := int32(mag >> f.mbits)
			m := uint32(mag) & (1<<f.mbits - 1)
			u := fp8Unit{neg: uint32(c >> 7), special: v != v || math.IsInf(float64(v), 0)}
			switch {
			case u.special:
			case mag == 0:
				u.e = fp8ZeroExp
			case ex == 0:
				u.sig, u.e = m, int32(f.emin)
				u.lsb = u.e - int32(f.mbits)
			default:
				u.sig, u.e = m|1<<f.mbits, ex-int32(f.bias)
				u.lsb = u.e - int32(f.mbits)
			}
			t[i][c] = u
		}
	}
	return t
}()

// fp8Pair is the fast form of FP8Step for one pair of types.
type fp8Pair struct {
	ta, tb DType
	ua, ub *[256]fp8Unit
}

func newFP8Pair(ta, tb DType) fp8Pair {
	return fp8Pair{ta, tb, &fp8Units[fp8Index(ta)], &fp8Units[fp8Index(tb)]}
}

// fp8Special reports whether any of the codes is a NaN or an infinity.
func fp8Special(u *[256]fp8Unit, codes []uint8) bool {
	for _, c := range codes {
		if u[c].special {
			return true
		}
	}
	return false
}

// step is FP8Step(c, p.ta, a, p.tb, b) for len(a) == len(b) <= FP8StepK;
// maySpecial says whether a or b may hold a NaN or an infinity (false:
// known not to). It computes the same rules from the unpacked codes,
// without data-dependent branches in its loops, and hands a NaN or
// infinite operand to FP8Step.
func (p fp8Pair) step(c float32, a, b []uint8, maySpecial bool) float32 {
	if isInfNaN(c) || maySpecial && (fp8Special(p.ua, a) || fp8Special(p.ub, b)) {
		return FP8Step(c, p.ta, a, p.tb, b)
	}
	n := len(a)
	b = b[:n]
	var sig [FP8StepK]uint32
	var lsb [FP8StepK]int32
	var neg [FP8StepK]uint32
	// -0 needs every addend negative, the zero-filled products (+0) too.
	allNeg := uint32(0)
	if n == FP8StepK {
		allNeg = 1
	}
	emax := int32(fp8ZeroExp * 2)
	for i := range n {
		x, y := &p.ua[a[i]], &p.ub[b[i]]
		sig[i], lsb[i], neg[i] = x.sig*y.sig, x.lsb+y.lsb, x.neg^y.neg
		allNeg &= neg[i]
		emax = max(emax, x.e+y.e)
	}
	cneg, csig, clsb, ce := f32Parts(c, -126)
	if csig != 0 {
		emax = max(emax, int32(ce))
	}
	if !cneg {
		allNeg = 0
	}
	if emax < fp8NoExp { // every addend is zero
		if allNeg != 0 {
			return float32(math.Copysign(0, -1))
		}
		return 0
	}
	g := emax - fp8GridBits
	var sum int64
	var nonzero uint64
	if csig != 0 {
		// c's last bit is 23 binades below ce <= emax (or, subnormal, at
		// 2^-149 with ce = -126): at least 10 below the grid, so this is
		// always a right shift, truncating.
		var u uint64
		if sh := int32(clsb) - g; sh >= 0 {
			u = csig << uint(sh)
		} else if sh > -64 {
			u = csig >> uint(-sh)
		}
		nonzero = u
		if cneg {
			sum = -int64(u)
		} else {
			sum = int64(u)
		}
	}
	for i := range n {
		// A nonzero product is below 2^(e+2) <= 2^(emax+2), at most 2^15
		// units, and its last bit is at most 13-4 = 9 binades above the
		// grid (both types' fraction bits: at least 2+2): sig·2^16 fits
		// 32 bits and the right shift is by at least 7 (a shift by 32 or
		// more, as for a product far below the grid, gives 0 in Go). A
		// zero product has sig = 0.
		u := sig[i] << 16 >> uint32(16-(lsb[i]-g))
		nonzero |= uint64(u)
		m := -int64(neg[i]) // 0, or -1 to negate
		sum += (int64(u) ^ m) - m
	}
	switch {
	case sum > 0:
		return fp8RZ(false, uint64(sum), int(g))
	case sum < 0:
		return fp8RZ(true, uint64(-sum), int(g))
	case allNeg != 0 && nonzero == 0:
		return float32(math.Copysign(0, -1))
	}
	return 0
}
