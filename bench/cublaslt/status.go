package cublaslt

import (
	"errors"

	"github.com/detgemm/detgemm/bench/cublas"
)

// Status is cuBLASLt's return code: cuBLASLt returns cublasStatus_t, the
// same enumeration as cuBLAS, so the cuBLAS binding's type (with its names)
// serves both, and errors.Is(err, cublaslt.StatusNotSupported) and
// errors.Is(err, cublas.StatusNotSupported) are the same test.
type Status = cublas.Status

// The statuses callers of this package test for.
const (
	StatusSuccess        = cublas.StatusSuccess
	StatusNotInitialized = cublas.StatusNotInitialized
	StatusInvalidValue   = cublas.StatusInvalidValue
	StatusNotSupported   = cublas.StatusNotSupported
	StatusInternalError  = cublas.StatusInternalError
)

// Error is a failed cuBLASLt call: the entry point and its status.
// errors.Is(err, cublaslt.StatusNotSupported) matches on the status.
type Error struct {
	Op     string // the C entry point, e.g. "cublasLtMatmul"
	Status Status
}

// Error reads "cublasLtMatmul: CUBLAS_STATUS_NOT_SUPPORTED (15)".
func (e *Error) Error() string { return e.Op + ": " + e.Status.Error() }

// Unwrap returns the Status, so errors.Is and errors.As see it.
func (e *Error) Unwrap() error { return e.Status }

// check turns a raw return value into nil or an *Error.
func check(op string, r1 uintptr) error {
	s := Status(int32(uint32(r1)))
	if s == StatusSuccess {
		return nil
	}
	return &Error{Op: op, Status: s}
}

// ErrClosed is returned by calls on a destroyed Handle.
var ErrClosed = errors.New("cublaslt: handle is closed")

// ErrInvalidArgument is matched (errors.Is) by the errors Matmul returns for
// arguments it rejects before calling cuBLASLt: a dimension outside a C int,
// an epilogue without the bias or aux pointer it needs, an aux leading
// dimension below N, or an element type the call does not take.
var ErrInvalidArgument = errors.New("cublaslt: invalid argument")
