package cudaload

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestFakeDriverGraphLifecycle(t *testing.T) {
	ctx := fakeContext(t)
	s, err := ctx.NewStream()
	require.NoError(t, err)
	require.NoError(t, s.BeginCapture())
	// The fake driver writes no graph handle: that reads as an invalidated
	// capture, which must be an error, not a zero Graph.
	g, err := s.EndCapture()
	require.Nil(t, g)
	require.ErrorIs(t, err, ErrStreamCaptureInvalidated)

	g = &Graph{ctx: ctx, handle: 0x1000}
	exec, err := g.Instantiate()
	require.NoError(t, err)
	require.NoError(t, exec.Launch(s))
	require.NoError(t, exec.Launch(nil))
	require.NoError(t, exec.Close())
	require.NoError(t, g.Close())
	require.ErrorIs(t, exec.Launch(s), ErrClosed)
	_, err = g.Instantiate()
	require.ErrorIs(t, err, ErrClosed)
}

func TestGraphNilObjectsAreClosedNotCrashes(t *testing.T) {
	var g *Graph
	var e *GraphExec
	require.NoError(t, g.Close())
	require.NoError(t, e.Close())
	require.Zero(t, g.Handle())
	require.Zero(t, e.Handle())
	_, err := g.Instantiate()
	require.ErrorIs(t, err, ErrClosed)
	require.ErrorIs(t, e.Launch(nil), ErrClosed)
	var s *Stream
	require.ErrorIs(t, s.BeginCapture(), ErrClosed)
	_, err = s.EndCapture()
	require.ErrorIs(t, err, ErrClosed)
}

func TestFakeDriverCaptureEndsEvenWhenTheBodyFails(t *testing.T) {
	ctx := fakeContext(t)
	s, err := ctx.NewStream()
	require.NoError(t, err)
	boom := errors.New("boom")
	g, err := s.Capture(func() error { return boom })
	require.Nil(t, g)
	require.ErrorIs(t, err, boom)
	_, err = s.Capture(nil)
	require.ErrorIs(t, err, ErrInvalidArgument)
}

func TestFakeDriverGraphLaunchRefusesForeignStream(t *testing.T) {
	a, b := fakeContext(t), fakeContext(t)
	b.handle = a.handle + 1
	sb, err := b.NewStream()
	require.NoError(t, err)
	exec := &GraphExec{ctx: a, handle: 0x2000}
	require.ErrorIs(t, exec.Launch(sb), ErrInvalidArgument)
}

func TestStreamCaptureResultsHaveDriverCodes(t *testing.T) {
	for code, want := range map[Result]int{
		ErrStreamCaptureUnsupported: 900, ErrStreamCaptureInvalidated: 901, ErrStreamCaptureUnmatched: 903,
		ErrStreamCaptureWrongThread: 908, ErrGraphExecUpdateFailure: 910,
	} {
		require.Equal(t, want, int(code))
	}
}
