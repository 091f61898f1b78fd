package cudaload_test

import (
	"errors"
	"runtime"
	"sync"
	"testing"

	"github.com/detgemm/detgemm/cudaload"
	"github.com/detgemm/detgemm/internal/gputest"
	"github.com/stretchr/testify/require"
)

// captureFillAddOne records fill(v) then two add_one on s into a graph.
func captureFillAddOne(t *testing.T, k *testKernels, s *cudaload.Stream, buf cudaload.DevicePtr, n uint32, v uint32) *cudaload.Graph {
	t.Helper()
	cfg := grid1D(int(n))
	cfg.Stream = s
	var args cudaload.Args
	g, err := s.Capture(func() error {
		if err := k.fill.Launch(cfg, args.Reset().Ptr(buf).Uint32(n).Uint32(v)); err != nil {
			return err
		}
		for range 2 {
			if err := k.addOne.Launch(cfg, args.Reset().Ptr(buf).Uint32(n)); err != nil {
				return err
			}
		}
		return nil
	})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, g.Close()) })
	return g
}

func readU32(t *testing.T, s *cudaload.Stream, ctx *cudaload.Context, buf cudaload.DevicePtr, n int) []uint32 {
	t.Helper()
	require.NoError(t, s.Synchronize())
	got := make([]uint32, n)
	require.NoError(t, cudaload.CopyFromDevice(ctx, got, buf))
	return got
}

func TestGPUGraphCaptureRecordsWithoutRunningAndReplays(t *testing.T) {
	ctx := gputest.Context(t)
	k := loadKernels(t, ctx)
	s, err := ctx.NewStream()
	require.NoError(t, err)
	defer s.Close()
	const n = 70_001
	buf := alloc(t, ctx, 4*n)
	require.NoError(t, s.MemsetD32Async(buf, 7, n))
	require.NoError(t, s.Synchronize())

	g := captureFillAddOne(t, k, s, buf, n, 40)
	requireAll(t, readU32(t, s, ctx, buf, n), 7) // captured, not run

	exec, err := g.Instantiate()
	require.NoError(t, err)
	defer exec.Close()
	require.NoError(t, g.Close(), "the exec does not need the graph")
	for range 3 {
		require.NoError(t, exec.Launch(s))
	}
	requireAll(t, readU32(t, s, ctx, buf, n), 42)
}

// The capture is RELAXED so it can begin and end on different OS threads:
// this package binds the context per call and does not keep the goroutine
// on one thread.
func TestGPUGraphCaptureSpansOSThreads(t *testing.T) {
	ctx := gputest.Context(t)
	k := loadKernels(t, ctx)
	s, err := ctx.NewStream()
	require.NoError(t, err)
	defer s.Close()
	const n = 4096
	buf := alloc(t, ctx, 4*n)
	cfg := grid1D(n)
	cfg.Stream = s

	// Each step runs on a goroutine that locks its thread and exits
	// locked, so the runtime retires that thread: the next step gets
	// another one. Errors come back to the test goroutine.
	onFreshThread := func(fn func() error) error {
		var err error
		var wg sync.WaitGroup
		wg.Go(func() {
			runtime.LockOSThread()
			err = fn()
		})
		wg.Wait()
		return err
	}
	require.NoError(t, onFreshThread(s.BeginCapture))
	require.NoError(t, onFreshThread(func() error {
		var args cudaload.Args
		return k.fill.Launch(cfg, args.Reset().Ptr(buf).Uint32(n).Uint32(9))
	}))
	var g *cudaload.Graph
	require.NoError(t, onFreshThread(func() (err error) {
		g, err = s.EndCapture()
		return err
	}))
	defer g.Close()
	exec, err := g.Instantiate()
	require.NoError(t, err)
	defer exec.Close()
	require.NoError(t, exec.Launch(s))
	requireAll(t, readU32(t, s, ctx, buf, n), 9)
}

func TestGPUGraphSynchronizeDuringCaptureInvalidatesIt(t *testing.T) {
	ctx := gputest.Context(t)
	s, err := ctx.NewStream()
	require.NoError(t, err)
	defer s.Close()
	require.NoError(t, s.BeginCapture())
	err = s.Synchronize()
	require.True(t, errors.Is(err, cudaload.ErrStreamCaptureUnsupported) || errors.Is(err, cudaload.ErrStreamCaptureInvalidated), "%v", err)
	g, err := s.EndCapture()
	require.Nil(t, g)
	require.ErrorIs(t, err, cudaload.ErrStreamCaptureInvalidated)
	require.NoError(t, s.Synchronize(), "the stream is usable after the failed capture")
}

func TestGPUGraphEndWithoutBeginIsTyped(t *testing.T) {
	ctx := gputest.Context(t)
	s, err := ctx.NewStream()
	require.NoError(t, err)
	defer s.Close()
	g, err := s.EndCapture()
	require.Nil(t, g)
	// The driver documents 903 (unmatched); some versions answer 401.
	require.True(t, errors.Is(err, cudaload.ErrStreamCaptureUnmatched) || errors.Is(err, cudaload.ErrIllegalState), "%v", err)
}

func TestGPUGraphUseAfterClose(t *testing.T) {
	ctx := gputest.Context(t)
	k := loadKernels(t, ctx)
	s, err := ctx.NewStream()
	require.NoError(t, err)
	defer s.Close()
	buf := alloc(t, ctx, 4*256)
	g := captureFillAddOne(t, k, s, buf, 256, 1)
	exec, err := g.Instantiate()
	require.NoError(t, err)
	require.NoError(t, exec.Close())
	require.NoError(t, exec.Close())
	require.ErrorIs(t, exec.Launch(s), cudaload.ErrClosed)
	require.NoError(t, g.Close())
	_, err = g.Instantiate()
	require.ErrorIs(t, err, cudaload.ErrClosed)
}
