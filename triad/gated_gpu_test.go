package triad

import (
	"testing"

	"github.com/detgemm/detgemm/cudaload"
	"github.com/detgemm/detgemm/gemm"
	"github.com/detgemm/detgemm/internal/gputest"
	"github.com/stretchr/testify/require"
)

// gatedGPUTiers are the tiers the gated GPU tests run: f32, typed bf16 and
// tensor-core bf16.
var gatedGPUTiers = []tierCase{{gemm.TierF32, F32}, {gemm.TierTyped, BF16}, {gemm.TierTensorCore, BF16}}

// gatedGPUActs are the gated activations the GPU training tests run.
var gatedGPUActs = []Act{ActSwiGLU, ActGeGLU}

// A gated MLP trains on the GPU to the CPU backend's digests (weights and
// loss bits), for SwiGLU and GeGLU in each tier.
func TestGPUGatedTrainingGivesTheCPUDigests(t *testing.T) {
	gpu := gpuBackend(t)
	for _, act := range gatedGPUActs {
		for _, tc := range gatedGPUTiers {
			t.Run(act.String()+"/"+tc.String(), func(t *testing.T) {
				skipTCOffHopper(t, gpu, tc)
				cfg := shortConfigAct(tc, act)
				want := trainDigest(t, NewCPU(0), cfg, shortEpochs)
				got := trainDigest(t, gpu, cfg, shortEpochs)
				require.Equal(t, want, got, "GPU vs CPU backend")
			})
		}
	}
}

// A gated step captured as a CUDA graph on a fresh engine (no workspace,
// no plans) replays with the bits of direct steps and of the CPU backend;
// and the gated network's rows are batch invariant on the GPU.
func TestGPUGatedGraphReplayAndBatchInvariance(t *testing.T) {
	ctx := gputest.Context(t)
	gpuBackend(t) // builds the kernels once
	for _, act := range gatedGPUActs {
		for _, tc := range gatedGPUTiers {
			t.Run(act.String()+"/"+tc.String(), func(t *testing.T) {
				replayAndInvariance(t, ctx, shortConfigAct(tc, act), tc)
			})
		}
	}
}

// The gated network's forward (every block's output and aux) and the
// product back into a block equal the CPU backend's bits on adversarial
// data, every output poisoned first, for the four gates in every tier.
func TestGPUGatedFusedOpsEqualCPU(t *testing.T) {
	gpu := gpuBackend(t)
	for _, act := range gatedActs {
		for _, tc := range tierCases {
			t.Run(act.String()+"/"+tc.String(), func(t *testing.T) {
				skipTCOffHopper(t, gpu, tc)
				run := func(be Backend) map[string][]uint32 {
					m := newGatedMLP(t, be, tc, act)
					x := tensorOf(t, be, tc.d, gatedRows, gatedSizes[0], adversarial(7, gatedRows, gatedSizes[0]))
					y, err := m.Forward(x)
					require.NoError(t, err)
					w0, k := gatedSizes[1], m.layers[1].Config().Out
					dy := tensorOf(t, be, tc.d, gatedRows, k, adversarial(8, gatedRows, k))
					dh := poisoned(t, be, tc.d, gatedRows, 2*w0)
					require.NoError(t, be.dxAct(tc.tier, act, dy, m.layers[1].Work(), m.aux[0], dh, nil))
					return map[string][]uint32{"y": bitsOf(t, be, y), "a0": bitsOf(t, be, m.a[0]), "aux0": bitsOf(t, be, m.aux[0]),
						"a1": bitsOf(t, be, m.a[1]), "aux1": bitsOf(t, be, m.aux[1]), "dh0": bitsOf(t, be, dh)}
				}
				want, got := run(NewCPU(0)), run(gpu)
				for _, k := range []string{"aux0", "a0", "aux1", "a1", "y", "dh0"} {
					requireSameBits(t, want[k], got[k], k)
				}
			})
		}
	}
}

// replayAndInvariance checks, on a fresh GPU backend, that cfg's first
// steps replayed from a CUDA graph give the direct steps' bits, that a
// trained epoch's rows are batch invariant, and (on sm_90 for the
// tensor-core tier) that the replay equals the CPU backend's steps.
func replayAndInvariance(t *testing.T, ctx *cudaload.Context, cfg TrainConfig, tc tierCase) {
	t.Helper()
	gpu, err := NewGPU(ctx)
	require.NoError(t, err)
	defer func() { require.NoError(t, gpu.Close()) }()
	direct, replay, err := GraphReplay(gpu, cfg, 3)
	require.NoError(t, err)
	require.Equal(t, direct, replay, "graph replay vs direct steps")

	requireInvariantAfterEpoch(t, gpu, cfg)

	skipTCOffHopper(t, gpu, tc)
	require.Equal(t, cpuStepsDigest(t, cfg, 3), replay, "graph replay vs CPU backend")
}
