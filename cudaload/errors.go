package cudaload

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/detgemm/detgemm/internal/argerr"
	"github.com/detgemm/detgemm/internal/dynlib"
)

var (
	// ErrDriverNotFound is matched by the error Open returns when no
	// candidate library could be loaded and initialised, and on macOS,
	// where CUDA does not exist. The error lists every candidate tried and
	// why each failed, and the folders skipped because they are not
	// present. It is the driver's own: a missing NVRTC or cuBLAS does not
	// match it.
	ErrDriverNotFound = errors.New("CUDA driver not found")

	// ErrStubLibrary is matched when a candidate was the CUDA toolkit's
	// link-time stub (cuInit returned CUDA_ERROR_STUB_LIBRARY, 34) rather
	// than the driver installed with the GPU. Open skips such a candidate
	// and keeps searching; the final error still matches ErrStubLibrary.
	ErrStubLibrary = errors.New("libcuda is the CUDA toolkit's stub, not the driver")

	// ErrSymbolMissing is matched when the driver lacks an entry point that
	// this package needs; the message names the symbol and the driver's
	// version. Optional entry points (cuTensorMapEncodeTiled) report it
	// when first used.
	ErrSymbolMissing = errors.New("CUDA driver lacks a required symbol")

	// ErrClosed is matched when a method is called on a Context, Stream,
	// Event, Module or Function after it (or the object it belongs to) was
	// closed. It is the module's one closed-object sentinel, the same
	// variable as gemm.ErrClosed and triad.ErrClosed.
	ErrClosed = argerr.ErrClosed

	// ErrInvalidArgument is matched when this package refuses a call before
	// reaching the driver (for example a zero grid dimension or a tensor
	// map of rank 6). Such errors also match ErrInvalidValue, the code the
	// driver would have returned, so callers need test only one.
	ErrInvalidArgument = errors.New("invalid argument")
)

// Error is a failed driver call: the entry point and its status code.
// errors.Is(err, ErrOutOfMemory) and friends match through Unwrap.
type Error struct {
	Op      string // the driver entry point, e.g. "cuMemAlloc_v2"
	Code    Result
	Name    string // e.g. "CUDA_ERROR_OUT_OF_MEMORY"
	Message string // e.g. "out of memory"
}

// newError builds an *Error with the driver's texts for code.
func newError(op string, code Result) *Error {
	t := code.texts()
	return &Error{Op: op, Code: code, Name: t[0], Message: t[1]}
}

// Error formats as "op: NAME (code): message".
func (e *Error) Error() string {
	var b strings.Builder
	if e.Op != "" {
		b.WriteString(e.Op)
		b.WriteString(": ")
	}
	name, msg := e.Name, e.Message
	if name == "" {
		name = e.Code.Name()
	}
	if msg == "" {
		msg = e.Code.Message()
	}
	b.WriteString(name)
	b.WriteString(" (")
	b.WriteString(strconv.Itoa(int(e.Code)))
	b.WriteString("): ")
	b.WriteString(msg)
	return b.String()
}

// Unwrap returns the status code, so errors.Is matches Result values.
func (e *Error) Unwrap() error { return e.Code }

// check turns a status into nil or an *Error naming op.
func check(op string, r Result) error {
	if r == Success {
		return nil
	}
	return newError(op, r)
}

// ArgumentError is a call refused by this package before it reached the
// driver. It matches ErrInvalidArgument and ErrInvalidValue.
type ArgumentError struct {
	Op     string // the method or driver entry point refused
	Reason string
}

// Error implements the error interface.
func (e *ArgumentError) Error() string {
	return "cudaload: " + e.Op + ": invalid argument: " + e.Reason
}

// Is matches ErrInvalidArgument and ErrInvalidValue.
func (e *ArgumentError) Is(target error) bool {
	return target == ErrInvalidArgument || target == ErrInvalidValue
}

func argError(op, format string, a ...any) error {
	return &ArgumentError{Op: op, Reason: fmt.Sprintf(format, a...)}
}

// ClosedError is a method call on a closed object (or one whose Context
// was closed). It matches ErrClosed.
type ClosedError struct {
	Op     string // the method called
	Object string // "context", "stream", "event", "module", "function"
}

// Error implements the error interface.
func (e *ClosedError) Error() string { return "cudaload: " + e.Op + ": " + e.Object + " is closed" }

// Is matches ErrClosed.
func (e *ClosedError) Is(target error) bool { return target == ErrClosed }

// SymbolMissingError says that the driver at Path, of version Version,
// lacks Symbol. It matches ErrSymbolMissing and dynlib.ErrSymbolNotFound.
type SymbolMissingError struct {
	Symbol  string
	Path    string
	Version int // cuDriverGetVersion, 0 if unknown
	Err     error
}

// Error implements the error interface.
func (e *SymbolMissingError) Error() string {
	if e.Version <= 0 {
		return fmt.Sprintf("cudaload: %s does not export %s: not a CUDA driver, or a very old one", e.Path, e.Symbol)
	}
	return fmt.Sprintf("cudaload: CUDA driver %s (%s) lacks %s; a newer driver is needed", FormatVersion(e.Version), e.Path, e.Symbol)
}

// Is matches ErrSymbolMissing.
func (e *SymbolMissingError) Is(target error) bool { return target == ErrSymbolMissing }

// Unwrap returns the loader's error.
func (e *SymbolMissingError) Unwrap() error { return e.Err }

// DriverNotFoundError is Open's failure: every candidate and why it did not
// load, the folders skipped because they are not present, and what to do.
// It matches ErrDriverNotFound and each candidate's own reason
// (ErrStubLibrary, ErrSymbolMissing, a Result such as ErrNoDevice), so a
// caller can ask why without parsing text. It never matches another
// library's not-found sentinel (nvrtc.ErrNotFound). On macOS, where CUDA
// does not exist, it says so and lists no candidates.
type DriverNotFoundError struct {
	Search *dynlib.NotFoundError
}

// Error implements the error interface.
func (e *DriverNotFoundError) Error() string { return e.Search.Error() }

// Is matches ErrDriverNotFound.
func (e *DriverNotFoundError) Is(target error) bool { return target == ErrDriverNotFound }

// Unwrap returns the search error, which unwraps to every candidate's
// reason.
func (e *DriverNotFoundError) Unwrap() []error { return []error{e.Search} }

// stubError is a candidate that turned out to be the toolkit stub.
type stubError struct{ path string }

func (e *stubError) Error() string {
	return ErrStubLibrary.Error() + " (cuInit returned " + ErrStub.Error() + "); install the NVIDIA driver or point " + EnvLibraryPath + " at the library it installed"
}

func (e *stubError) Unwrap() []error { return []error{ErrStubLibrary, ErrStub} }

// FormatVersion renders a cuDriverGetVersion number: 13000 -> "13.0",
// 12080 -> "12.8"; 0 -> "(unknown version)".
func FormatVersion(v int) string {
	if v <= 0 {
		return "(unknown version)"
	}
	return strconv.Itoa(v/1000) + "." + strconv.Itoa(v%1000/10)
}
