package ref

import (
	"errors"

	"github.com/detgemm/detgemm/internal/argerr"
)

// Sentinel errors, matched with errors.Is against any *ArgError. ErrDim,
// ErrDType and ErrTier are the module's shared sentinels: the same variables
// as gemm.ErrDimension, gemm.ErrDType and gemm.ErrTier.
var (
	// ErrDim: a dimension is zero, negative, or its products overflow int.
	ErrDim = argerr.ErrDimension
	// ErrLength: a slice is shorter than the shape needs.
	ErrLength = errors.New("slice too short")
	// ErrDType: a dtype is unknown or not allowed where it was given, or an
	// operand is given in the wrong form for its dtype.
	ErrDType = argerr.ErrDType
	// ErrTier: Options.Tier is not IEEE or TensorCore.
	ErrTier = argerr.ErrTier
	// ErrRange: Options.Rows or Options.Cols is not inside the output.
	ErrRange = errors.New("invalid output range")
	// ErrInexact: an input of a 16-bit type given as float32 Values holds a
	// value that is not exactly of that type.
	ErrInexact = errors.New("value not exactly representable in the input type")
	// ErrScale: an fp8 operation's scaling is invalid: FP8Matmul's Scaling
	// or Accum is unknown, block scales without promoted accumulation, or
	// ScaleD for an output that is not fp8; FP8Quantize's Groups unknown.
	ErrScale = errors.New("invalid fp8 scaling")
)

// ArgError reports a bad argument to one of the package's operations. It is
// the module's one argument-error type, also gemm.ArgError and triad.Error:
// Pkg is "ref", Op the operation (e.g. "Forward"), Arg the argument (e.g.
// "x" or "K"), Reason what is wrong with it, and Err the sentinel (ErrDim,
// ErrLength, ErrDType, ErrTier, ErrRange, ErrTCModel, ErrInexact, ErrScale
// and the others the operations list). Its message reads "ref.Forward: K:
// 0 is not positive".
type ArgError = argerr.Error

// argErr returns the package's *ArgError.
func argErr(op, arg string, sentinel error, format string, a ...any) error {
	return argerr.New("ref", op, arg, sentinel, format, a...)
}

// checkDims rejects non-positive dimensions and shapes whose element counts
// overflow int (every pairwise product of the dims is an element count).
func checkDims(op string, names string, dims ...int) error {
	for i, d := range dims {
		if d <= 0 {
			return argErr(op, string(names[i]), ErrDim, "%d is not positive", d)
		}
	}
	for i := range dims {
		for j := i + 1; j < len(dims); j++ {
			if _, ok := mul(dims[i], dims[j]); !ok {
				return argErr(op, string(names[i])+"*"+string(names[j]), ErrDim, "%d*%d overflows int", dims[i], dims[j])
			}
		}
	}
	return nil
}

// mul returns a*b for positive a and b, and whether it fits in an int.
func mul(a, b int) (int, bool) {
	const maxInt = int(^uint(0) >> 1)
	if a > maxInt/b {
		return 0, false
	}
	return a * b, true
}

// checkLen rejects a slice shorter than need elements.
func checkLen(op, arg string, have, need int, what string) error {
	if have < need {
		return argErr(op, arg, ErrLength, "length %d < %s = %d", have, what, need)
	}
	return nil
}
