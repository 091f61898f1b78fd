package triad

import (
	"errors"
	"fmt"
)

// Sentinels matched with errors.Is. Every argument problem is an *Error
// wrapping one of them; nothing is queued when a call returns one.
var (
	ErrNilTensor = errors.New("nil tensor")
	ErrShape     = errors.New("shape mismatch")
	ErrDType     = errors.New("wrong dtype")
	ErrBackend   = errors.New("tensor of another backend")
	ErrConfig    = errors.New("invalid configuration")
	ErrNoGraphs  = errors.New("backend cannot capture CUDA graphs")
	ErrClosed    = errors.New("use of closed object")
)

// Error says which operation and argument were wrong, and how.
type Error struct {
	Op     string // e.g. "Linear.Forward"
	Arg    string // e.g. "x"
	Reason string
	Err    error // one of the sentinels above, or a gemm sentinel for tiers
}

// Error reads "triad.Linear.Forward: x: 3 columns, want 4".
func (e *Error) Error() string { return fmt.Sprintf("triad.%s: %s: %s", e.Op, e.Arg, e.Reason) }

// Unwrap returns the sentinel.
func (e *Error) Unwrap() error { return e.Err }

func argErr(op, arg string, sentinel error, format string, a ...any) error {
	return &Error{Op: op, Arg: arg, Reason: fmt.Sprintf(format, a...), Err: sentinel}
}
