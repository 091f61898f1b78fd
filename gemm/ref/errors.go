package ref

import (
	"errors"
	"fmt"
)

// Sentinel errors, matched with errors.Is against any *ArgError.
var (
	// ErrDim: a dimension is zero, negative, or its products overflow int.
	ErrDim = errors.New("invalid dimension")
	// ErrLength: a slice is shorter than the shape needs.
	ErrLength = errors.New("slice too short")
	// ErrDType: a dtype is unknown or not allowed where it was given.
	ErrDType = errors.New("invalid dtype")
)

// ArgError reports a bad argument to one of the package's operations. Its
// Err is one of ErrDim, ErrLength or ErrDType.
type ArgError struct {
	Op  string // the operation, e.g. "Forward"
	Arg string // the argument, e.g. "x" or "K"
	Msg string // what is wrong with it
	Err error  // the sentinel
}

// Error says which operation and argument, and what is wrong.
func (e *ArgError) Error() string {
	return fmt.Sprintf("ref.%s: %s: %s", e.Op, e.Arg, e.Msg)
}

// Unwrap returns the sentinel, for errors.Is.
func (e *ArgError) Unwrap() error { return e.Err }

// checkDims rejects non-positive dimensions and shapes whose element counts
// overflow int (every pairwise product of the dims is an element count).
func checkDims(op string, names string, dims ...int) error {
	for i, d := range dims {
		if d <= 0 {
			return &ArgError{Op: op, Arg: string(names[i]), Msg: fmt.Sprintf("%d is not positive", d), Err: ErrDim}
		}
	}
	for i := range dims {
		for j := i + 1; j < len(dims); j++ {
			if _, ok := mul(dims[i], dims[j]); !ok {
				return &ArgError{Op: op, Arg: string(names[i]) + "*" + string(names[j]),
					Msg: fmt.Sprintf("%d*%d overflows int", dims[i], dims[j]), Err: ErrDim}
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
		return &ArgError{Op: op, Arg: arg, Msg: fmt.Sprintf("length %d < %s = %d", have, what, need), Err: ErrLength}
	}
	return nil
}
