package gemm

import (
	"errors"
	"fmt"
)

// Sentinels matched with errors.Is. Every argument problem is an *ArgError
// wrapping one of them; nothing is launched when a call returns one.
var (
	ErrDimension  = errors.New("invalid dimension")
	ErrTooLarge   = errors.New("problem too large")
	ErrNilPointer = errors.New("nil device pointer")
	ErrMisaligned = errors.New("misaligned device pointer")
	ErrDType      = errors.New("dtype not accepted")
	ErrTier       = errors.New("invalid tier")
	ErrAlias      = errors.New("output overlaps an input")
	ErrArch       = errors.New("unsupported GPU architecture")
	ErrClosed     = errors.New("engine is closed")
	// ErrWorkspace: a call needs more workspace than was presized while its
	// stream is capturing a CUDA graph (or the workspace could not be
	// allocated). Presize the call's shape before capturing.
	ErrWorkspace = errors.New("workspace not presized")
)

// ArgError says which operation and argument were wrong, and how.
type ArgError struct {
	Op     string // "Forward", "DW", "DX"
	Arg    string // e.g. "K", "X", "Tier"
	Reason string
	Err    error // one of the sentinels above
}

// Error reads "gemm.Forward: K: 0 is not positive".
func (e *ArgError) Error() string { return fmt.Sprintf("gemm.%s: %s: %s", e.Op, e.Arg, e.Reason) }

// Unwrap returns the sentinel.
func (e *ArgError) Unwrap() error { return e.Err }

func argErr(op, arg string, sentinel error, format string, a ...any) error {
	return &ArgError{Op: op, Arg: arg, Reason: fmt.Sprintf(format, a...), Err: sentinel}
}
