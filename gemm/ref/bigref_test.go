package ref

import (
	"math"
	"math/big"
)

// The exact reference for the tests: math/big arithmetic with enough
// precision to be exact, and one explicit rounding to a binary format,
// written without sharing any code or trick with the package under test.

// exactPrec is far more than any a*b + c of float32 values needs: their
// exact sum spans at most 2^255 down to 2^-298, about 560 bits.
const exactPrec = 1200

// binFormat describes a binary floating-point format by its precision in
// bits (the implicit bit included), the exponent of its smallest subnormal
// ulp and the exponent of its largest binade.
type binFormat struct {
	prec int // significant bits
	qmin int // exponent of the smallest subnormal
	emax int // largest finite values are below 2^(emax+1)
}

var (
	fmtF32  = binFormat{prec: 24, qmin: -149, emax: 127}
	fmtBF16 = binFormat{prec: 8, qmin: -133, emax: 127}
	fmtF16  = binFormat{prec: 11, qmin: -24, emax: 15}
)

// roundBig rounds the finite x to format f, round to nearest, ties to even,
// and returns the result as a float64 (every value of the three formats is a
// float64), ±Inf on overflow. A zero x keeps its sign; a nonzero x that
// rounds to zero gets x's sign.
func roundBig(x *big.Float, f binFormat) float64 {
	neg := x.Signbit()
	if x.Sign() == 0 {
		return math.Copysign(0, sgn(neg))
	}
	// |x| in [2^(e-1), 2^e): its ulp in f is 2^(e-prec), or the subnormal
	// ulp when that is coarser.
	e := x.MantExp(nil)
	q := max(e-f.prec, f.qmin)
	// n = |x| / 2^q, split into integer part and fraction.
	n := new(big.Float).SetPrec(exactPrec).Abs(x)
	n.SetMantExp(n, -q)
	ip, _ := n.Int(nil) // toward zero
	frac := new(big.Float).SetPrec(exactPrec).Sub(n, new(big.Float).SetInt(ip))
	switch frac.Cmp(big.NewFloat(0.5)) {
	case 1:
		ip.Add(ip, big.NewInt(1))
	case 0:
		if ip.Bit(0) == 1 {
			ip.Add(ip, big.NewInt(1))
		}
	}
	// ip < 2^(prec+1), exact in float64; so is ip * 2^q.
	v := math.Ldexp(float64(ip.Int64()), q)
	if v >= math.Ldexp(1, f.emax+1) {
		v = math.Inf(1)
	}
	return math.Copysign(v, sgn(neg))
}

func sgn(neg bool) float64 {
	if neg {
		return -1
	}
	return 1
}

// refFMA32 returns the bits of the IEEE 754 binary32 fusedMultiplyAdd of
// a*b + c, round to nearest even, with NaN results canonical, from first
// principles: the IEEE special-case rules, then exact big arithmetic.
func refFMA32(a, b, c float32) uint32 {
	fa, fb, fc := float64(a), float64(b), float64(c)
	if math.IsNaN(fa) || math.IsNaN(fb) || math.IsNaN(fc) {
		return CanonicalNaN32
	}
	prodNeg := math.Signbit(fa) != math.Signbit(fb)
	prodInf := math.IsInf(fa, 0) || math.IsInf(fb, 0)
	prodZero := fa == 0 || fb == 0
	if prodInf && prodZero {
		return CanonicalNaN32 // Inf * 0
	}
	if prodInf {
		if math.IsInf(fc, 0) && math.Signbit(fc) != prodNeg {
			return CanonicalNaN32 // Inf - Inf
		}
		return math.Float32bits(float32(math.Copysign(math.Inf(1), sgn(prodNeg))))
	}
	if math.IsInf(fc, 0) {
		return math.Float32bits(c)
	}
	// Finite: the exact sum, and IEEE's sign rule for an exact zero sum.
	p := new(big.Float).SetPrec(exactPrec).SetFloat64(fa)
	p.Mul(p, new(big.Float).SetPrec(exactPrec).SetFloat64(fb))
	x := new(big.Float).SetPrec(exactPrec).Add(p, new(big.Float).SetPrec(exactPrec).SetFloat64(fc))
	if x.Sign() == 0 {
		// Both addends zero: -0 only if both are -0. Otherwise an exact
		// cancellation: +0 in round to nearest.
		if prodZero && fc == 0 && prodNeg && math.Signbit(fc) {
			return 0x80000000
		}
		return 0
	}
	return math.Float32bits(float32(roundBig(x, fmtF32)))
}

// naiveFMA32 is the tempting wrong implementation: the float64 fma, then a
// second rounding to float32. Tests show it differs from refFMA32.
func naiveFMA32(a, b, c float32) uint32 {
	r := float32(math.FMA(float64(a), float64(b), float64(c)))
	if r != r {
		return CanonicalNaN32
	}
	return math.Float32bits(r)
}

// decodeBF16 and decodeF16 give a 16-bit pattern's value from the format's
// definition, independently of the package's bit tricks.
func decodeBF16(h uint16) float64 {
	s := sgn(h&0x8000 != 0)
	e, m := int(h>>7&0xFF), float64(h&0x7F)
	switch e {
	case 0xFF:
		if m != 0 {
			return math.NaN()
		}
		return math.Inf(int(s))
	case 0:
		return s * math.Ldexp(m, -133)
	}
	return s * math.Ldexp(128+m, e-134)
}

func decodeF16(h uint16) float64 {
	s := sgn(h&0x8000 != 0)
	e, m := int(h>>10&0x1F), float64(h&0x3FF)
	switch e {
	case 0x1F:
		if m != 0 {
			return math.NaN()
		}
		return math.Inf(int(s))
	case 0:
		return s * math.Ldexp(m, -24)
	}
	return s * math.Ldexp(1024+m, e-25)
}

// halfRef rounds float32 values to a 16-bit format by the big reference and
// encodes the result through a table built from the format's decoder.
type halfRef struct {
	f      binFormat
	encode map[uint64]uint16 // float64 bits of a value -> its pattern
}

func newHalfRef(f binFormat, decode func(uint16) float64) *halfRef {
	r := &halfRef{f: f, encode: make(map[uint64]uint16, 1<<16)}
	for h := range 1 << 16 {
		v := decode(uint16(h))
		if !math.IsNaN(v) {
			r.encode[math.Float64bits(v)] = uint16(h)
		}
	}
	return r
}

// round returns the pattern nearest x (RNE), or the canonical NaN.
func (r *halfRef) round(x float32) uint16 {
	fx := float64(x)
	switch {
	case math.IsNaN(fx):
		return 0x7FFF
	case math.IsInf(fx, 0):
		return r.encode[math.Float64bits(fx)]
	}
	v := roundBig(new(big.Float).SetPrec(exactPrec).SetFloat64(fx), r.f)
	h, ok := r.encode[math.Float64bits(v)]
	if !ok {
		panic("halfRef: rounded value not in the format")
	}
	return h
}
