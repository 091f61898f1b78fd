package triad

import (
	"fmt"
	"testing"

	"github.com/detgemm/detgemm/gemm"
	"github.com/detgemm/detgemm/internal/gputest"
	"github.com/stretchr/testify/require"
)

// The capture sweep: every batch size below and every width below, in
// every tier and dtype. A network is in → hidden → out (two layers, so the
// step has every kind of product: Forward, dW, and the second layer's dX).
var (
	sweepBatches = []int{1, 7, 255, 256, 257, 300, 1000, 4097}
	sweepWidths  = []int{1, 6, 24, 64, 1000}
)

// sweepNets pairs each batch with a network, rotating through the widths
// so that, for every tier case, each width takes each position (in, hidden,
// out) at least once across the batches, and no network has two layers of
// width 1000 (which only makes the CPU comparison slow). The network of
// the bug report (24 → 64 → 6 at batch 300) is added to every case.
func sweepNets(tierIndex int) []sweepCase {
	n := len(sweepWidths)
	var out []sweepCase
	for j, rows := range sweepBatches {
		k := j + tierIndex
		out = append(out, sweepCase{rows: rows, sizes: []int{sweepWidths[k%n], sweepWidths[(k+2)%n], sweepWidths[(k+4)%n]}})
	}
	return append(out, sweepCase{rows: 300, sizes: []int{24, 64, 6}})
}

type sweepCase struct {
	rows  int
	sizes []int
}

func (c sweepCase) String() string {
	return fmt.Sprintf("rows%d_%dx%dx%d", c.rows, c.sizes[0], c.sizes[1], c.sizes[2])
}

const sweepSteps = 2

// sweepBits trains a fresh network of sc on be for sweepSteps steps on one
// fixed batch, directly or by replaying a step captured first (before
// anything else runs on the backend's engine), and returns the bits of
// every parameter and of the loss.
func sweepBits(t *testing.T, be Backend, tc tierCase, act Act, sc sweepCase, replay bool) []uint32 {
	t.Helper()
	in, out := sc.sizes[0], sc.sizes[len(sc.sizes)-1]
	m, err := NewMLP(be, MLPConfig{Sizes: sc.sizes, Tier: tc.tier, DType: tc.d, MaxRows: sc.rows, Seed: 19,
		Opt: SGD{LR: 0.01, Momentum: 0.9}, Act: act})
	require.NoError(t, err)
	defer m.Close()
	x := tensorOf(t, be, tc.d, sc.rows, in, randValues(uint64(sc.rows)*7+1, sc.rows*in, 1))
	y := tensorOf(t, be, tc.d, sc.rows, out, randValues(uint64(sc.rows)*7+2, sc.rows*out, 1))
	defer x.Free()
	defer y.Free()
	if replay {
		g, err := m.CaptureStep(x, y)
		require.NoError(t, err)
		defer g.Close()
		for range sweepSteps {
			require.NoError(t, g.Replay())
		}
	} else {
		for range sweepSteps {
			require.NoError(t, m.Step(x, y))
		}
	}
	var bits []uint32
	for _, p := range m.Params() {
		bits = append(bits, bitsOf(t, be, p)...)
	}
	return append(bits, bitsOf(t, be, m.loss)...)
}

// A step captured as a CUDA graph on an engine that has allocated no
// workspace yet (and a backend with no Matmul plans) replays with the bits
// of direct steps, and of the CPU backend (every tier on sm_90; the f32
// and typed tiers on any GPU), for every batch size and width of the
// sweep, with each activation.
func TestGPUCaptureStepSweep(t *testing.T) {
	ctx := gputest.Context(t)
	gpuBackend(t) // builds the kernels once, so each fresh backend below loads them from the cache
	for _, act := range acts {
		for ti, tc := range tierCases {
			t.Run(act.String()+"/"+tc.String(), func(t *testing.T) {
				for _, sc := range sweepNets(ti) {
					t.Run(sc.String(), func(t *testing.T) {
						// A fresh backend: its engine's workspace is empty, so the
						// capture must presize and plan whatever the step needs.
						gpu, err := NewGPU(ctx)
						require.NoError(t, err)
						defer func() { require.NoError(t, gpu.Close()) }()
						replayed := sweepBits(t, gpu, tc, act, sc, true)
						direct := sweepBits(t, gpu, tc, act, sc, false)
						requireSameBits(t, direct, replayed, "graph replay vs direct steps")
						if a := gpu.Engine().Arch(); tc.tier == gemm.TierTensorCore && (a.Major != 9 || a.Minor != 0) {
							t.Logf("not compared with the CPU backend: it models the tensor cores of sm_90, this GPU is %v", a)
							return
						}
						requireSameBits(t, sweepBits(t, NewCPU(0), tc, act, sc, false), replayed, "graph replay vs CPU backend")
					})
				}
			})
		}
	}
}

// The run of issue 19: GraphReplay (the demo's check) of a 24 → 64 → 64 → 6
// student at batch 300, on an engine with no workspace yet, failed in the
// IEEE tiers with "workspace not presized".
// With GELU too.
func TestGPUGraphReplayOnAFreshEngine(t *testing.T) {
	ctx := gputest.Context(t)
	gpuBackend(t)
	for _, act := range acts {
		for _, tc := range tierCases {
			t.Run(act.String()+"/"+tc.String(), func(t *testing.T) {
				gpu, err := NewGPU(ctx)
				require.NoError(t, err)
				defer func() { require.NoError(t, gpu.Close()) }()
				cfg := TrainConfig{In: 24, Hidden: 64, Out: 6, Tier: tc.tier, DType: tc.d, Batch: 300, Steps: 1, Seed: 5,
					Opt: SGD{LR: 0.05, Momentum: 0.9}, Act: act}
				direct, replay, err := GraphReplay(gpu, cfg, 3)
				require.NoError(t, err)
				require.Equal(t, direct, replay, "graph replay vs direct steps")
			})
		}
	}
}
