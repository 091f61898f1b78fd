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

// Error is a failed cuBLASLt call: the entry point and its status (cuBLAS's
// type: the two libraries share their status codes).
// errors.Is(err, cublaslt.StatusNotSupported) matches on the status.
type Error = cublas.Error

// check turns a raw return value into nil or an *Error.
func check(op string, r1 uintptr) error { return cublas.Check(op, r1) }

// ErrClosed is returned by calls on a destroyed Handle.
var ErrClosed = errors.New("cublaslt: handle is closed")

// ErrInvalidArgument is matched (errors.Is) by the errors Matmul returns for
// arguments it rejects before calling cuBLASLt: a dimension outside a C int,
// an epilogue without the bias or aux pointer it needs, an aux leading
// dimension below N, or an element type the call does not take.
var ErrInvalidArgument = errors.New("cublaslt: invalid argument")
