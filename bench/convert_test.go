package main

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// f16ToF64 decodes an IEEE half exactly.
func f16ToF64(h uint16) float64 {
	sign := 1.0
	if h&0x8000 != 0 {
		sign = -1
	}
	e, m := int(h>>10)&0x1f, float64(h&0x3ff)
	switch e {
	case 0x1f:
		if m != 0 {
			return math.NaN()
		}
		return sign * math.Inf(1)
	case 0:
		return sign * m * math.Pow(2, -24)
	}
	return sign * (1 + m/1024) * math.Pow(2, float64(e-15))
}

func bf16ToF64(b uint16) float64 { return float64(math.Float32frombits(uint32(b) << 16)) }

func TestF32ToHalfKnownValues(t *testing.T) {
	for _, tc := range []struct {
		in        float32
		bf16, f16 uint16
	}{
		{0, 0x0000, 0x0000},
		{float32(math.Copysign(0, -1)), 0x8000, 0x8000},
		{1, 0x3f80, 0x3c00},
		{-2, 0xc000, 0xc000},
		{65504, 0x4780, 0x7bff},                     // largest half (bf16 rounds it up to 2^16)
		{65520, 0x4780, 0x7c00},                     // halfway to 2^16 rounds (to even) to infinity
		{float32(math.Pow(2, -24)), 0x3380, 0x0001}, // smallest half subnormal
		{float32(math.Pow(2, -25)), 0x3300, 0x0000}, // exactly half of it: ties to even (0)
		{float32(math.Pow(2, -14)), 0x3880, 0x0400}, // smallest half normal
		{float32(math.Inf(1)), 0x7f80, 0x7c00},
		{1 + 1.0/2048, 0x3f80, 0x3c00},                     // half tie: to even
		{1 + 3.0/2048, 0x3f80, 0x3c02},                     // half tie: to even (up)
		{math.Float32frombits(0x3f808000), 0x3f80, 0x3c04}, // bf16 tie: to even (down)
		{math.Float32frombits(0x3f818000), 0x3f82, 0x3c0c}, // bf16 tie: to even (up)
	} {
		require.Equal(t, tc.bf16, f32ToBF16(tc.in), "bf16(%g)", tc.in)
		require.Equal(t, tc.f16, f32ToF16(tc.in), "f16(%g)", tc.in)
	}
	require.True(t, math.IsNaN(bf16ToF64(f32ToBF16(float32(math.NaN())))))
	require.True(t, math.IsNaN(f16ToF64(f32ToF16(float32(math.NaN())))))
}

// TestF32ToHalfRoundsToNearest checks, over values spread across every
// half binade and subnormals, that the result is a nearest representable
// value and that ties go to the even one.
func TestF32ToHalfRoundsToNearest(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 50000; i++ {
		f := float32(math.Ldexp(r.Float64()*2-1, r.IntN(44)-28))
		x := float64(f)
		for _, c := range []struct {
			name   string
			h      uint16
			decode func(uint16) float64
		}{{"f16", f32ToF16(f), f16ToF64}, {"bf16", f32ToBF16(f), bf16ToF64}} {
			got := c.decode(c.h)
			if math.IsInf(got, 0) {
				continue
			}
			// The neighbours one code up and down bracket x no closer.
			for _, nb := range []uint16{c.h + 1, c.h - 1} {
				n := c.decode(nb)
				if math.IsNaN(n) || math.IsInf(n, 0) || (nb&0x7fff) == 0x7fff {
					continue
				}
				dg, dn := math.Abs(got-x), math.Abs(n-x)
				require.LessOrEqual(t, dg, dn, "%s(%g) = %#04x (%g), neighbour %#04x (%g) is closer", c.name, f, c.h, got, nb, n)
				if dg == dn && (c.h^nb)&0x8000 == 0 {
					require.Zero(t, c.h&1, "%s(%g): tie must go to the even code", c.name, f)
				}
			}
		}
	}
}
