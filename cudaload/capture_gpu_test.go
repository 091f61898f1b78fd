package cudaload_test

import (
	"testing"

	"github.com/detgemm/detgemm/cudaload"
	"github.com/detgemm/detgemm/internal/gputest"
	"github.com/stretchr/testify/require"
)

// A fresh stream, in use or idle, is not capturing a graph.
func TestGPUStreamCaptureStatusIsNoneOutsideCapture(t *testing.T) {
	ctx := gputest.Context(t)
	s, err := ctx.NewStream()
	require.NoError(t, err)
	defer func() { require.NoError(t, s.Close()) }()
	st, err := s.CaptureStatus()
	require.NoError(t, err)
	require.Equal(t, cudaload.CaptureNone, st)
	require.NoError(t, s.MemsetD32Async(alloc(t, ctx, 1024), 1, 256))
	capturing, err := s.IsCapturing()
	require.NoError(t, err)
	require.False(t, capturing)
	require.NoError(t, s.Synchronize())
}
