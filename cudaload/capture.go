package cudaload

import (
	"strconv"
	"unsafe"
)

// CaptureStatus is a stream's CUDA-graph capture state
// (CUstreamCaptureStatus).
type CaptureStatus int

// The capture states (the driver's values).
const (
	CaptureNone        CaptureStatus = 0 // not capturing
	CaptureActive      CaptureStatus = 1 // work queued now is recorded into a graph, not run
	CaptureInvalidated CaptureStatus = 2 // capturing, but the capture failed; it must be ended
)

// String returns "none", "active", "invalidated" or "CaptureStatus(n)".
func (c CaptureStatus) String() string {
	switch c {
	case CaptureNone:
		return "none"
	case CaptureActive:
		return "active"
	case CaptureInvalidated:
		return "invalidated"
	}
	return "CaptureStatus(" + strconv.Itoa(int(c)) + ")"
}

// CaptureStatus reports whether the stream is capturing a CUDA graph
// (cuStreamIsCapturing). Code that must not allocate or synchronise during
// a capture (both would invalidate it) asks first.
func (s *Stream) CaptureStatus() (CaptureStatus, error) {
	if err := s.enter("Stream.CaptureStatus"); err != nil {
		return CaptureNone, err
	}
	var st int32
	r := callKeep(s.ctx.drv.sym.cuStreamIsCapturing, unsafe.Pointer(&st), s.handle, uintptr(unsafe.Pointer(&st)))
	s.ctx.exit()
	if err := check("cuStreamIsCapturing", r); err != nil {
		return CaptureNone, err
	}
	return CaptureStatus(st), nil
}

// IsCapturing is CaptureStatus() != CaptureNone: true while a capture is
// active or invalidated but not yet ended.
func (s *Stream) IsCapturing() (bool, error) {
	st, err := s.CaptureStatus()
	return st != CaptureNone, err
}
