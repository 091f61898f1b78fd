package ref

import "math"

// Canonical NaN bit patterns of the 16-bit formats: what the GPU's
// round-to-nearest conversions (cvt.rn.bf16.f32, cvt.rn.f16.f32) store for
// any NaN input, whatever its sign or payload.
const (
	CanonicalNaNBF16 uint16 = 0x7FFF
	CanonicalNaNF16  uint16 = 0x7FFF
)

// BF16FromF32 rounds f to bfloat16 (8 significant bits, float32's exponent
// range), round to nearest, ties to even. ±Inf stay ±Inf, finite values past
// the largest bfloat16 round to ±Inf as RNE says, subnormals round on the
// subnormal grid, -0 stays -0 and every NaN becomes CanonicalNaNBF16.
func BF16FromF32(f float32) uint16 {
	u := math.Float32bits(f)
	if u&0x7FFFFFFF > 0x7F800000 {
		return CanonicalNaNBF16
	}
	// Adding 0x7FFF plus the lowest kept bit rounds the dropped 16 bits to
	// nearest with ties to even; a carry walks into the exponent (and from
	// the largest finite value into Inf) exactly as rounding must. Inf
	// itself has zero low bits and cannot carry.
	return uint16((u + 0x7FFF + (u >> 16 & 1)) >> 16)
}

// F32FromBF16 widens a bfloat16 to float32, exactly. A NaN input gives the
// canonical float32 NaN (CanonicalNaN32), so that NaNs the reference carries
// compare bit for bit with the GPU's arithmetic results.
func F32FromBF16(h uint16) float32 {
	if h&0x7FFF > 0x7F80 {
		return canonicalNaN
	}
	return math.Float32frombits(uint32(h) << 16)
}

// F16FromF32 rounds f to IEEE binary16 (11 significant bits, exponents -14 to
// 15, subnormals down to 2^-24), round to nearest, ties to even, including
// results in the subnormal range. |f| >= 65520 (the midpoint past 65504, the
// largest half) rounds to ±Inf; -0 stays -0; every NaN becomes
// CanonicalNaNF16.
func F16FromF32(f float32) uint16 {
	u := math.Float32bits(f)
	sign := uint16(u >> 16 & 0x8000)
	abs := u & 0x7FFFFFFF
	switch {
	case abs > 0x7F800000:
		return CanonicalNaNF16
	case abs >= 0x47800000: // 2^16 and beyond, Inf included
		return sign | 0x7C00
	case abs < 0x33000000: // below 2^-25, half the smallest half: rounds to ±0
		return sign
	}
	// Now 2^-25 <= |f| < 2^16, so f is a normal float32.
	e := int(abs>>23) - 127         // unbiased exponent, -25..15
	mant := abs&0x7FFFFF | 0x800000 // 24-bit significand
	if e < -14 {
		// Subnormal half, grid 2^-24: keep mant * 2^(e+1) of 24-bit units.
		// Rounding up from the largest subnormal gives 0x400, the smallest
		// normal half, which is right.
		shift := uint(-e - 1) // 14..24
		q := mant >> shift
		return sign | uint16(q+roundBit(mant, shift, q))
	}
	// Normal half: drop 13 bits and the implicit one. A carry out of the
	// fraction lands in the exponent field, and from the largest finite half
	// (0x7BFF) into Inf (0x7C00): RNE's overflow rule.
	q := mant>>13 - 0x400
	return sign | uint16(uint32(e+15)<<10+q+roundBit(mant, 13, q))
}

// roundBit says whether dropping the low shift bits of mant (keeping q, whose
// parity is that of mant>>shift) must round up: round to nearest, ties to even.
func roundBit(mant uint32, shift uint, q uint32) uint32 {
	rem := mant & (1<<shift - 1)
	half := uint32(1) << (shift - 1)
	if rem > half || rem == half && q&1 == 1 {
		return 1
	}
	return 0
}

// F32FromF16 widens an IEEE binary16 to float32, exactly, subnormals included.
// A NaN input gives the canonical float32 NaN (CanonicalNaN32): the reference
// never carries a NaN payload, as the GPU's arithmetic never does.
func F32FromF16(h uint16) float32 {
	sign := uint32(h&0x8000) << 16
	e := uint32(h >> 10 & 0x1F)
	m := uint32(h & 0x3FF)
	switch {
	case e == 0x1F && m != 0:
		return canonicalNaN
	case e == 0x1F:
		return math.Float32frombits(sign | 0x7F800000)
	case e == 0:
		// Zero or subnormal: m * 2^-24 is a normal (or zero) float32, exact.
		v := float32(m) * 0x1p-24
		return math.Float32frombits(sign | math.Float32bits(v))
	}
	return math.Float32frombits(sign | (e+127-15)<<23 | m<<13)
}
