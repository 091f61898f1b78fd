package triad

import (
	"testing"

	"github.com/detgemm/detgemm/gemm"
	"github.com/detgemm/detgemm/internal/gputest"
	"github.com/detgemm/detgemm/kernels"
	"github.com/stretchr/testify/require"
)

// The options are checked before the context, so these need no GPU.
func TestNewGPURefusesContradictoryEngineOptions(t *testing.T) {
	for _, c := range []struct {
		name string
		opts []GPUOption
	}{
		{"nil engine", []GPUOption{WithEngine(nil)}},
		{"options for a made engine", []GPUOption{WithEngine(new(gemm.Engine)), WithEngineOptions(gemm.WithKernels(kernels.ModeAuto))}},
		{"no context", nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			g, err := NewGPU(nil, c.opts...)
			require.Nil(t, g)
			require.ErrorIs(t, err, ErrConfig)
			var e *Error
			require.ErrorAs(t, err, &e)
		})
	}
}

// A backend on the caller's engine queues on the engine's stream, trains
// to the golden digests, and leaves the engine open when it closes.
func TestGPUWithEngineUsesTheCallersEngine(t *testing.T) {
	ctx := gputest.Context(t)
	gpuBackend(t) // the kernels built once
	eng, err := gemm.New(ctx)
	require.NoError(t, err)
	defer func() { require.NoError(t, eng.Close()) }()
	gpu, err := NewGPU(ctx, WithEngine(eng))
	require.NoError(t, err)
	require.Same(t, eng, gpu.Engine())
	require.Same(t, eng.Stream(), gpu.Stream())
	file := readGolden(t)
	tc := tierCases[0]
	require.NoError(t, file.Check(goldenKey(tc), trainDigest(t, gpu, shortConfig(tc), shortEpochs)))
	require.NoError(t, gpu.Close())
	require.NoError(t, eng.Synchronize(), "the caller's engine stays open")
}

// The engine NewGPU makes takes WithEngineOptions' options, but always the
// backend's stream, so the products and the triad's kernels stay in order.
func TestGPUWithEngineOptionsKeepsOneStream(t *testing.T) {
	ctx := gputest.Context(t)
	gpuBackend(t)
	other, err := ctx.NewStream()
	require.NoError(t, err)
	defer func() { require.NoError(t, other.Close()) }()
	gpu, err := NewGPU(ctx, WithEngineOptions(gemm.WithKernels(kernels.ModeAuto), gemm.WithStream(other)))
	require.NoError(t, err)
	defer func() { require.NoError(t, gpu.Close()) }()
	require.Equal(t, kernels.ModeAuto, gpu.Engine().BuildReport().Mode)
	require.Same(t, gpu.Stream(), gpu.Engine().Stream())
	require.NotSame(t, other, gpu.Stream())
}
