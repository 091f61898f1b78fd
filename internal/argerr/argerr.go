// Package argerr is the one argument-error type of detgemm and the sentinels
// that more than one package returns. gemm.ArgError, ref.ArgError and
// triad.Error are aliases of Error, and gemm.ErrDType, ref.ErrDType and
// triad.ErrDType (and so on) are the same variables, so that errors.Is and
// errors.As work across the packages: a caller that checks for
// gemm.ErrDimension also recognises a refusal of the CPU reference.
//
// Sentinels that only one package returns stay declared in that package.
package argerr

import (
	"errors"
	"fmt"
)

// The shared sentinels.
var (
	// ErrDimension: a dimension is zero, negative, or too large for the
	// arithmetic of its element counts.
	ErrDimension = errors.New("invalid dimension")
	// ErrDType: an element type is unknown or not accepted where it was
	// given.
	ErrDType = errors.New("invalid dtype")
	// ErrTier: a tier is unknown, or the tier cannot do what was asked.
	ErrTier = errors.New("invalid tier")
	// ErrClosed: an engine, backend, tensor or driver object was used
	// after it was closed.
	ErrClosed = errors.New("use of closed object")
)

// Error says which operation of which package refused which argument, and
// why. Err is the sentinel it matches with errors.Is.
type Error struct {
	Pkg    string // the package, the message's prefix: "gemm", "ref", "triad"
	Op     string // the operation, e.g. "Forward" or "Linear.Forward"
	Arg    string // the argument, e.g. "K" or "x"
	Reason string // what is wrong with it
	Err    error  // the sentinel
}

// Error reads "gemm.Forward: K: 0 is not positive" (without the package
// prefix where Pkg is empty).
func (e *Error) Error() string {
	if e.Pkg == "" {
		return fmt.Sprintf("%s: %s: %s", e.Op, e.Arg, e.Reason)
	}
	return fmt.Sprintf("%s.%s: %s: %s", e.Pkg, e.Op, e.Arg, e.Reason)
}

// Unwrap returns the sentinel, for errors.Is.
func (e *Error) Unwrap() error { return e.Err }

// New returns an *Error of package pkg whose Reason is format applied to a.
func New(pkg, op, arg string, sentinel error, format string, a ...any) error {
	return &Error{Pkg: pkg, Op: op, Arg: arg, Reason: fmt.Sprintf(format, a...), Err: sentinel}
}
