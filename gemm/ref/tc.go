package ref

import (
	"errors"
	"fmt"
	"math"
	"math/bits"
)

// TCStepK is the reduction extent of one tensor-core step: mma.sync.m16n8k16
// consumes 16 terms of every output element's reduction at a time.
const TCStepK = 16

// ErrTCModel: a TCModel's parameters are outside the range the model (and
// its int64 and float64 arithmetic) is defined for. See TCModel.Valid.
var ErrTCModel = errors.New("invalid tensor-core model")

// TCModel is the arithmetic of one 16-wide tensor-core step of one GPU
// architecture, bf16 or f16 inputs and float32 accumulation, per output
// element. A step is cut into blocks of BlockTerms products that are
// chained; one block is:
//
//  1. Alignment exponent: emax = max(MinAlignExp, the nominal exponent of
//     every nonzero addend). The addends are the incoming accumulator c and
//     the block's products. A product's nominal exponent is ea + eb, where ea
//     = floor(log2 |a|) with a subnormal a clamped up to the input format's
//     smallest normal exponent (-126 for bf16, -14 for f16); so a product may
//     come close to 4·2^(ea+eb). c's is floor(log2 |c|), f32 subnormals
//     clamped to -126.
//  2. Truncation: every addend's exact value is cut toward zero (on its
//     magnitude) to a multiple of 2^(emax-23-ExtraBits); an addend whose
//     nominal exponent is more than 31 below emax contributes 0.
//  3. The truncated addends are summed exactly, and the sum is rounded
//     toward zero to float32 (24 significant bits, the subnormal grid
//     2^-149, ±Inf for a sum of magnitude 2^128 or more, as measured on
//     the H200).
//
// See the package documentation, section "Tensor-core tier", for the
// details (signed zeros, NaN and Inf) and for what is verified on hardware.
type TCModel struct {
	Name        string // the architecture, e.g. "sm_90"
	BlockTerms  int    // products per block: 16 (one block per step) or 8 (two chained blocks)
	ExtraBits   int    // bits kept below float32's 23 fraction bits: the grid is 2^(emax-23-ExtraBits)
	MinAlignExp int    // lower clamp of the alignment exponent emax
}

// Hopper is the sm_90 model: one 16-term block per step, two extra bits,
// emax clamped at -133. It reproduced mma.sync and wgmma (bf16 and f16 in,
// f32 accumulate) bit for bit on an H200 on about 330 000 outputs.
var Hopper = TCModel{Name: "sm_90", BlockTerms: 16, ExtraBits: 2, MinAlignExp: -133}

// Ampere is the sm_80 model as published (two chained 8-term blocks per
// step, one extra bit, emax clamped at -132). It is NOT verified on hardware
// by this project.
var Ampere = TCModel{Name: "sm_80", BlockTerms: 8, ExtraBits: 1, MinAlignExp: -132}

// Limits of TCModel.Valid. ExtraBits <= 7 keeps every truncated addend
// below 2^32 grid units (products are below 2^(25+ExtraBits) units), so the
// exact sums fit int64 with room to spare and float64 exactly (the plans'
// fast path), and it makes the 31-place rule a consequence of truncation
// (see sumAddends). The MinAlignExp range keeps every scale factor of the fast path
// a normal float64.
const (
	tcMaxExtraBits  = 7
	tcMinAlignFloor = -300
	tcMinAlignCeil  = 127
	tcDropShift     = 31 // an addend more than this many binades below emax vanishes
)

// Valid reports whether m is a model the package can evaluate: BlockTerms
// divides 16 (1, 2, 4, 8 or 16), 0 <= ExtraBits <= 7, and -300 <=
// MinAlignExp <= 127. The error wraps ErrTCModel.
func (m TCModel) Valid() error {
	bad := func(arg, msg string) error {
		return argErr("TCModel", arg, ErrTCModel, "%s", msg)
	}
	switch {
	case m.BlockTerms <= 0 || m.BlockTerms > TCStepK || TCStepK%m.BlockTerms != 0:
		return bad("BlockTerms", fmt.Sprintf("%d does not divide %d", m.BlockTerms, TCStepK))
	case m.ExtraBits < 0 || m.ExtraBits > tcMaxExtraBits:
		return bad("ExtraBits", fmt.Sprintf("%d is outside [0, %d]", m.ExtraBits, tcMaxExtraBits))
	case m.MinAlignExp < tcMinAlignFloor || m.MinAlignExp > tcMinAlignCeil:
		return bad("MinAlignExp", fmt.Sprintf("%d is outside [%d, %d]", m.MinAlignExp, tcMinAlignFloor, tcMinAlignCeil))
	}
	return nil
}

// String returns the model's name and parameters.
func (m TCModel) String() string {
	return fmt.Sprintf("%s(block %d, extra bits %d, emax >= %d)", m.Name, m.BlockTerms, m.ExtraBits, m.MinAlignExp)
}

// minNormalExp is the exponent a subnormal of type d is clamped up to when
// its nominal exponent is taken: the format's smallest normal exponent.
func minNormalExp(d DType) int {
	if d == F16 {
		return -14
	}
	return -126 // bf16 and f32 share float32's exponent range
}

// Step returns the accumulator after one 16-wide tensor-core step of model
// m: c plus the 16 products a[i]*b[i], added by m's rules (see TCModel and
// the package documentation). d is the input type, BF16 or F16: it fixes the
// exponent a subnormal input is clamped to. Pairs past the end of a or b are
// zero (the zero-filled tail of a reduction); only the first 16 are used.
//
// The inputs are meant to be values of type d, widened to float32; the model
// is defined, and Step evaluates it, for any float32 values. Step returns the
// canonical NaN for an m that is not Valid or a d that is not BF16 or F16.
//
// Step is exact integer arithmetic following the model's text literally; the
// plans (Options with Tier TensorCore) use a faster float64 form of the same
// arithmetic for finite operands, and Step for the rest.
func (m TCModel) Step(d DType, c float32, a, b []float32) float32 {
	if m.Valid() != nil || !d.Half() {
		return canonicalNaN
	}
	var as, bs [TCStepK]float32 // +0 beyond the inputs: the zero-filled tail
	n := min(len(a), len(b), TCStepK)
	copy(as[:n], a)
	copy(bs[:n], b)
	return m.step(minNormalExp(d), c, &as, &bs)
}

// step is Step for a valid m, with d given by its smallest normal exponent.
func (m TCModel) step(emin int, c float32, a, b *[TCStepK]float32) float32 {
	for k := 0; k < TCStepK; k += m.BlockTerms {
		c = m.block(emin, c, a[k:k+m.BlockTerms], b[k:k+m.BlockTerms])
	}
	return c
}

// tcAddend is one addend of a block in exact form: (-1)^neg · sig · 2^lsb,
// with nominal exponent e (meaningful when sig != 0).
type tcAddend struct {
	neg bool
	sig uint64
	lsb int
	e   int
}

// f32Parts splits a finite float32 into sign, integer significand and the
// exponent of its last bit, and returns its nominal exponent floor(log2|x|)
// clamped up to emin (meaningless for zero).
func f32Parts(x float32, emin int) (neg bool, sig uint64, lsb, e int) {
	u := math.Float32bits(x)
	neg = u>>31 != 0
	f := int(u >> 23 & 0xFF)
	sig = uint64(u & 0x7FFFFF)
	lsb = -149
	if f != 0 {
		sig |= 1 << 23
		lsb = f - 150
	}
	return neg, sig, lsb, max(bits.Len64(sig)-1+lsb, emin)
}

// block adds one block of products a[i]*b[i] to c (len(a) == len(b) <= 16)
// by the model; emin is the input type's smallest normal exponent.
func (m TCModel) block(emin int, c float32, a, b []float32) float32 {
	if r, special := tcSpecial(c, a, b); special {
		return r
	}
	var ad [TCStepK + 1]tcAddend
	n := 0
	neg, sig, lsb, e := f32Parts(c, -126)
	ad[n] = tcAddend{neg, sig, lsb, e}
	n++
	for i := range a {
		na, sa, la, ea := f32Parts(a[i], emin)
		nb, sb, lb, eb := f32Parts(b[i], emin)
		// sa, sb < 2^24: the product is exact in uint64.
		ad[n] = tcAddend{na != nb, sa * sb, la + lb, ea + eb}
		n++
	}
	return m.sumAddends(ad[:n])
}

// sumAddends aligns, truncates and sums finite addends and rounds the sum
// toward zero to float32: steps 1 to 3 of the model.
func (m TCModel) sumAddends(ad []tcAddend) float32 {
	emax := m.MinAlignExp
	for _, t := range ad {
		if t.sig != 0 { // zero addends take no part in the alignment
			emax = max(emax, t.e)
		}
	}
	g := emax - 23 - m.ExtraBits // exponent of one grid unit
	// Bound: an addend of nominal exponent e is below 2^(e+2) (a product of
	// two significands below 2; c is below 2^(e+1)), and e <= emax, so its
	// truncated magnitude is below 2^(e+2-g) <= 2^(25+ExtraBits) <= 2^32
	// units. At most 17 addends: |sum| < 17·2^32 < 2^37, far inside int64.
	// The same bound shows the left shift below cannot overflow.
	// The 31-place rule, literally. It never changes a result of a valid
	// model: an addend more than 25+ExtraBits <= 32 binades below emax is
	// below one grid unit and truncates to 0 anyway.
	neg, mag, zero := truncSum(ad, emax, g, tcDropShift)
	if zero {
		// An exact zero is +0, whatever the signs of c and the products
		// (measured on the H100, mma.sync and wgmma alike: c = -0 with
		// every product -0 gives +0, where an IEEE sum would give -0).
		return 0
	}
	return rzF32(neg, mag, g)
}

// truncSum truncates every addend toward zero (on its magnitude) to a
// multiple of 2^g, dropping those more than drop binades below emax, and
// sums them exactly: the sum's sign and magnitude (in units of 2^g), or
// zero set with neg telling whether the zero is -0 (every addend -0 or a
// negative addend truncated to 0: IEEE's sign, which only the fp8 step
// keeps; the bf16/f16 step returns +0 for every zero). The tensor-core
// models' step 2 and 3, for the bf16/f16 and the fp8 steps alike.
func truncSum(ad []tcAddend, emax, g, drop int) (neg bool, mag uint64, zero bool) {
	var sum int64
	allNegZero := true
	for _, t := range ad {
		var u uint64
		if t.sig != 0 && emax-t.e <= drop {
			if sh := t.lsb - g; sh >= 0 {
				u = t.sig << uint(sh)
			} else if sh > -64 {
				u = t.sig >> uint(-sh) // toward zero, on the magnitude
			}
		}
		if u != 0 || !t.neg {
			allNegZero = false
		}
		if t.neg {
			sum -= int64(u)
		} else {
			sum += int64(u)
		}
	}
	switch {
	case sum == 0:
		return allNegZero, 0, true
	case sum < 0:
		return true, uint64(-sum), false
	}
	return false, uint64(sum), false
}

// rzF32 returns (-1)^neg · mag · 2^g rounded toward zero to float32, for a
// nonzero mag: 24 significant bits, the subnormal grid 2^-149, and
// ±Inf when the exact magnitude is 2^128 or more (what the H200's tensor
// cores do, measured 2026-11-21; IEEE round-toward-zero would give
// ±MaxFloat32). A magnitude that truncates to nothing gives +0, whatever
// the sum's sign (measured on the H100 with mma.sync and wgmma, 2026-11-28).
func rzF32(neg bool, mag uint64, g int) float32 { return rzSig(neg, mag, g, 24) }

// rzSig is rzF32 keeping sig <= 24 significant bits (the fp8 step's 14).
func rzSig(neg bool, mag uint64, g, sig int) float32 {
	top := g + bits.Len64(mag) - 1 // floor(log2 |value|)
	var r float32
	switch {
	case top >= 128:
		r = float32(math.Inf(1)) // measured on the H200: overflow gives ±Inf
	default:
		// t is the exponent of the result's last bit: sig bits below top,
		// or the subnormal grid. Dropping the bits below it truncates.
		if t := max(top-(sig-1), -149); t > g {
			if t-g >= 64 {
				mag = 0
			} else {
				mag >>= uint(t - g)
			}
			g = t
		}
		if mag == 0 {
			return 0 // truncated to nothing: +0, whatever the sign (measured on the H100)
		}
		// mag < 2^sig and g >= -149: mag·2^g is a float32, exactly.
		r = float32(math.Ldexp(float64(mag), g))
	}
	if neg {
		r = -r
	}
	return r
}

// tcSpecial settles a block with a NaN or an infinite operand by IEEE
// rules: any NaN, Inf·0, or infinities of both signs give the canonical NaN;
// otherwise an infinity gives that infinity. special is false when every
// operand is finite.
func tcSpecial(c float32, a, b []float32) (r float32, special bool) {
	nan, pinf, ninf := false, false, false
	inf := func(x float32) bool { return math.IsInf(float64(x), 0) }
	switch {
	case c != c:
		nan = true
	case inf(c):
		pinf, ninf = c > 0, c < 0
	}
	for i := range a {
		x, y := a[i], b[i]
		switch {
		case x != x || y != y:
			nan = true
		case inf(x) || inf(y):
			if x == 0 || y == 0 {
				nan = true
			} else if (x < 0) != (y < 0) {
				ninf = true
			} else {
				pinf = true
			}
		}
	}
	switch {
	case nan || pinf && ninf:
		return canonicalNaN, true
	case pinf:
		return float32(math.Inf(1)), true
	case ninf:
		return float32(math.Inf(-1)), true
	}
	return 0, false
}
