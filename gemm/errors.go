package gemm

import (
	"errors"

	"github.com/detgemm/detgemm/internal/argerr"
)

// Sentinels matched with errors.Is. Every argument problem is an *ArgError
// wrapping one of them; nothing is launched when a call returns one.
// ErrDimension, ErrDType, ErrTier and ErrClosed are shared with gemm/ref and
// triad (the same variables), so one check covers all three packages.
var (
	ErrDimension  = argerr.ErrDimension
	ErrTooLarge   = errors.New("problem too large")
	ErrNilPointer = errors.New("nil device pointer")
	ErrMisaligned = errors.New("misaligned device pointer")
	ErrDType      = argerr.ErrDType
	ErrTier       = argerr.ErrTier
	ErrAlias      = errors.New("output overlaps an input")
	ErrArch       = errors.New("unsupported GPU architecture")
	ErrClosed     = argerr.ErrClosed
	// ErrWorkspace: a call needs more workspace than was presized while its
	// stream is capturing a CUDA graph (or the workspace could not be
	// allocated). Presize the call's shape before capturing.
	ErrWorkspace = errors.New("workspace not presized")
)

// ArgError says which operation and argument were wrong, and how. It is the
// module's one argument-error type, also ref.ArgError and triad.Error: its
// fields are Pkg ("gemm"), Op ("Forward", "DW", "DX"), Arg (e.g. "K", "X",
// "Tier"), Reason, and Err (one of the sentinels above). Its message reads
// "gemm.Forward: K: 0 is not positive".
type ArgError = argerr.Error

func argErr(op, arg string, sentinel error, format string, a ...any) error {
	return argerr.New("gemm", op, arg, sentinel, format, a...)
}
