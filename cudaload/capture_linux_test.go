package cudaload

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestCaptureStatusNamesTheDriverStates(t *testing.T) {
	for st, want := range map[CaptureStatus]string{
		CaptureNone: "none", CaptureActive: "active", CaptureInvalidated: "invalidated", 7: "CaptureStatus(7)",
	} {
		require.Equal(t, want, st.String())
	}
}

// The fake driver answers CUDA_SUCCESS and leaves the status untouched
// (zero), which reads as "not capturing".
func TestFakeDriverStreamIsNotCapturing(t *testing.T) {
	ctx := fakeContext(t)
	s, err := ctx.NewStream()
	require.NoError(t, err)
	st, err := s.CaptureStatus()
	require.NoError(t, err)
	require.Equal(t, CaptureNone, st)
	capturing, err := s.IsCapturing()
	require.NoError(t, err)
	require.False(t, capturing)
}

func TestCaptureStatusOnAClosedStreamIsErrClosed(t *testing.T) {
	ctx := fakeContext(t)
	s, err := ctx.NewStream()
	require.NoError(t, err)
	require.NoError(t, s.Close())
	_, err = s.IsCapturing()
	require.ErrorIs(t, err, ErrClosed)
	var nilStream *Stream
	_, err = nilStream.CaptureStatus()
	require.ErrorIs(t, err, ErrClosed)
}
