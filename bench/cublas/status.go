package cublas

import (
	"errors"
	"fmt"
)

// Status is a cublasStatus_t. Every value but StatusSuccess is an error.
type Status int32

// The cublasStatus_t values.
const (
	StatusSuccess         Status = 0
	StatusNotInitialized  Status = 1
	StatusAllocFailed     Status = 3
	StatusInvalidValue    Status = 7
	StatusArchMismatch    Status = 8
	StatusMappingError    Status = 11
	StatusExecutionFailed Status = 13
	StatusInternalError   Status = 14
	StatusNotSupported    Status = 15
	StatusLicenseError    Status = 16
)

var statusNames = map[Status]string{
	StatusSuccess:         "CUBLAS_STATUS_SUCCESS",
	StatusNotInitialized:  "CUBLAS_STATUS_NOT_INITIALIZED",
	StatusAllocFailed:     "CUBLAS_STATUS_ALLOC_FAILED",
	StatusInvalidValue:    "CUBLAS_STATUS_INVALID_VALUE",
	StatusArchMismatch:    "CUBLAS_STATUS_ARCH_MISMATCH",
	StatusMappingError:    "CUBLAS_STATUS_MAPPING_ERROR",
	StatusExecutionFailed: "CUBLAS_STATUS_EXECUTION_FAILED",
	StatusInternalError:   "CUBLAS_STATUS_INTERNAL_ERROR",
	StatusNotSupported:    "CUBLAS_STATUS_NOT_SUPPORTED",
	StatusLicenseError:    "CUBLAS_STATUS_LICENSE_ERROR",
}

// Name is the C enumerator's name, or CUBLAS_STATUS_UNKNOWN.
func (s Status) Name() string {
	if n, ok := statusNames[s]; ok {
		return n
	}
	return "CUBLAS_STATUS_UNKNOWN"
}

// Error reads "CUBLAS_STATUS_NOT_SUPPORTED (15)".
func (s Status) Error() string { return fmt.Sprintf("%s (%d)", s.Name(), int32(s)) }

// Error is a failed cuBLAS call: the entry point and its status.
// errors.Is(err, cublas.StatusNotSupported) matches on the status.
type Error struct {
	Op     string // the C entry point, e.g. "cublasGemmEx"
	Status Status
}

// Error reads "cublasGemmEx: CUBLAS_STATUS_NOT_SUPPORTED (15)".
func (e *Error) Error() string { return e.Op + ": " + e.Status.Error() }

// Unwrap returns the Status, so errors.Is and errors.As see it.
func (e *Error) Unwrap() error { return e.Status }

// Check turns the raw return value of the cuBLAS-family entry point op
// (cuBLAS's or cuBLASLt's, which share the status codes) into nil or an
// *Error.
func Check(op string, r1 uintptr) error {
	s := Status(int32(uint32(r1)))
	if s == StatusSuccess {
		return nil
	}
	return &Error{Op: op, Status: s}
}

// ErrClosed is returned by calls on a destroyed Handle.
var ErrClosed = errors.New("cublas: handle is closed")
