package triad

import (
	"errors"

	"github.com/detgemm/detgemm/internal/argerr"
)

// Sentinels matched with errors.Is. Every argument problem is an *Error
// wrapping one of them; nothing is queued when a call returns one.
// ErrDType and ErrClosed are shared with gemm and gemm/ref (the same
// variables).
var (
	ErrNilTensor = errors.New("nil tensor")
	ErrShape     = errors.New("shape mismatch")
	ErrDType     = argerr.ErrDType
	ErrBackend   = errors.New("tensor of another backend")
	ErrConfig    = errors.New("invalid configuration")
	ErrNoGraphs  = errors.New("backend cannot capture CUDA graphs")
	ErrClosed    = argerr.ErrClosed
)

// Error says which operation and argument were wrong, and how. It is the
// module's one argument-error type, also gemm.ArgError and ref.ArgError: its
// fields are Pkg ("triad"), Op (e.g. "Linear.Forward"), Arg (e.g. "x"),
// Reason, and Err (one of the sentinels above, or a gemm sentinel for
// tiers). Its message reads "triad.Linear.Forward: x: 3 columns, want 4".
type Error = argerr.Error

func argErr(op, arg string, sentinel error, format string, a ...any) error {
	return argerr.New("triad", op, arg, sentinel, format, a...)
}
