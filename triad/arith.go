package triad

import (
	"math"

	"github.com/detgemm/detgemm/gemm/ref"
)

// The CPU side of every rounding the triad kernels spell out. Each helper
// is one IEEE binary32 operation, rounded to nearest even, with a NaN result
// replaced by the canonical NaN (0x7FFFFFFF) as NVIDIA GPUs produce it. The
// explicit float32 conversions are rounding barriers: Go may otherwise fuse
// a multiplication into a following addition (it does on arm64), which the
// GPU kernels, compiled with --fmad=false, never do.

var canonicalNaN = math.Float32frombits(ref.CanonicalNaN32)

func canon(r float32) float32 {
	if r != r {
		return canonicalNaN
	}
	return r
}

// add32 is __fadd_rn.
func add32(a, b float32) float32 { return canon(float32(a + b)) }

// sub32 is __fsub_rn.
func sub32(a, b float32) float32 { return canon(float32(a - b)) }

// mul32 is __fmul_rn.
func mul32(a, b float32) float32 { return canon(float32(a * b)) }

// div32 is __fdiv_rn (IEEE division, as the kernels are built with
// --prec-div=true).
func div32(a, b float32) float32 { return canon(float32(a / b)) }

// fma32 is __fmaf_rn.
func fma32(a, b, c float32) float32 { return ref.FMA32(a, b, c) }

// reluF32 is the activation on one value: the epilogues' ReLU (x when
// x > 0, the canonical NaN for a NaN, +0 otherwise), so the CPU backend and
// gemm/ref agree by construction.
func reluF32(x float32) float32 { return ref.Relu32(x) }

// half16NaN is the 16-bit canonical NaN the kernels store.
const half16NaN uint16 = 0x7FFF

// sgdStep is one parameter's update: v' = mu·v + g; w' = w − lr·v'.
func sgdStep(w, v, g, lr, mu float32) (wNew, vNew float32) {
	vNew = add32(mul32(mu, v), g)
	wNew = sub32(w, mul32(lr, vNew))
	return wNew, vNew
}

// mseScale is the gradient's factor 2/n, one float32 division of 2 by n
// converted to float32; the host computes it for both backends.
func mseScale(n int) float32 { return div32(2, float32(n)) }

// mseDivisor is n as a float32, the loss's divisor.
func mseDivisor(n int) float32 { return float32(n) }
