package main

import "math"

// Host conversions, used only when the util kernels are unavailable (the
// bench then says so): the same single round-to-nearest-even as
// detgemm_f32_to_bf16_rne and detgemm_f32_to_f16_rne.

// f32ToBF16 rounds to the nearest bfloat16, ties to even; NaN stays a
// (quiet) NaN.
func f32ToBF16(f float32) uint16 {
	b := math.Float32bits(f)
	if b&0x7fffffff > 0x7f800000 {
		return uint16(b>>16) | 0x0040
	}
	b += 0x7fff + (b>>16)&1
	return uint16(b >> 16)
}

// f32ToF16 rounds to the nearest IEEE half, ties to even, with subnormal
// results and overflow to infinity; NaN stays a (quiet) NaN.
func f32ToF16(f float32) uint16 {
	b := math.Float32bits(f)
	sign := uint16(b>>16) & 0x8000
	exp := int(b>>23) & 0xff
	mant := b & 0x7fffff
	switch {
	case exp == 0xff && mant != 0:
		return sign | 0x7e00
	case exp == 0xff:
		return sign | 0x7c00
	case exp == 0:
		return sign // f32 subnormals are far below half's smallest subnormal
	}
	var q, rest, half uint32
	if e := exp - 127 + 15; e >= 1 {
		// Normal in half: keep 10 of 23 fraction bits; a carry out of the
		// fraction moves into the exponent, and past the top into infinity.
		q = uint32(e)<<10 | mant>>13
		rest, half = mant&0x1fff, 0x1000
	} else {
		// Subnormal in half: the value in units of 2^-24 is sig·2^(exp-126).
		shift := uint(126 - exp)
		if shift > 24 {
			return sign
		}
		sig := mant | 0x800000
		q = sig >> shift
		rest, half = sig&(1<<shift-1), 1<<(shift-1)
	}
	if rest > half || rest == half && q&1 == 1 {
		q++
	}
	if q >= 0x7c00 {
		return sign | 0x7c00
	}
	return sign | uint16(q)
}
