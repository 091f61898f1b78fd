package triad

import (
	"fmt"
	"testing"

	"github.com/detgemm/detgemm/internal/gputest"
	"github.com/stretchr/testify/require"
)

// A 2:4 sparse network trains on the GPU to the CPU backend's digests
// (weights and loss bits), with ReLU and GELU, bf16 and f16.
func TestGPUSparse24TrainingGivesTheCPUDigests(t *testing.T) {
	gpu := gpuBackend(t)
	for _, act := range acts {
		for _, tc := range sparseCases {
			t.Run(act.String()+"/"+tc.String(), func(t *testing.T) {
				skipTCOffHopper(t, gpu, tc)
				cfg := sparseConfig(tc.d, act)
				want := trainDigest(t, NewCPU(0), cfg, shortEpochs)
				got := trainDigest(t, gpu, cfg, shortEpochs)
				require.Equal(t, want, got, "GPU vs CPU backend")
			})
		}
	}
}

// sparseSizes are the network of the state test: input widths 48 and 80
// (K not a multiple of 32: the metadata's unused nibbles), an odd output.
var sparseSizes = []int{48, 80, 32, 9}

const sparseRows = 301

// The whole 2:4 state after SetParams and after each of three steps —
// every layer's master, working copy, fixed pattern, compressed values and
// metadata — and the forward's outputs and aux on an odd batch equal the
// CPU backend's bits; on the GPU too every pruned element of the masters
// and working copies is +0 after every step.
func TestGPUSparse24StateAndForwardEqualCPU(t *testing.T) {
	gpu := gpuBackend(t)
	// The small network runs gemm_sp24's mma.sp tiles (K not a multiple of
	// 128); the wide one, on Hopper, the wgmma.sp tiles with the metadata
	// staged in the workspace (600 rows: five row tiles or more).
	for _, net := range []struct {
		sizes []int
		rows  int
	}{{sparseSizes, sparseRows}, {[]int{256, 128, 16}, 600}} {
		for _, act := range acts {
			for _, tc := range sparseCases {
				t.Run(fmt.Sprintf("%v/%v/%v", net.sizes, act, tc), func(t *testing.T) {
					skipTCOffHopper(t, gpu, tc)
					run := func(be Backend) []map[string][]uint32 {
						m, err := NewMLP(be, MLPConfig{Sizes: net.sizes, Tier: tc.tier, DType: tc.d, MaxRows: net.rows, Seed: 5,
							Opt: SGD{LR: 0.02, Momentum: 0.9}, Act: act, Sparse24: true})
						require.NoError(t, err)
						defer m.Close()
						in, out := net.sizes[0], net.sizes[len(net.sizes)-1]
						x := tensorOf(t, be, tc.d, net.rows, in, randValues(7, net.rows*in, 1))
						tg := tensorOf(t, be, tc.d, net.rows, out, randValues(8, net.rows*out, 1))
						states := []map[string][]uint32{sparseState(t, m, x)}
						for range 3 {
							require.NoError(t, m.Step(x, tg))
							st := sparseState(t, m, x)
							for i, l := range m.layers {
								p := string(rune('0' + i))
								requireMasked(t, st["pattern"+p], st["W"+p], l.cfg.In, l.cfg.Out, be.Name()+" master "+p)
								requireMasked(t, st["pattern"+p], st["work"+p], l.cfg.In, l.cfg.Out, be.Name()+" work "+p)
							}
							states = append(states, st)
						}
						return states
					}
					want, got := run(NewCPU(0)), run(gpu)
					for s := range want {
						for k, w := range want[s] {
							requireSameBits(t, w, got[s][k], fmt.Sprintf("after %d steps: %s", s, k))
						}
					}
				})
			}
		}
	}
}

// A sparse step captured as a CUDA graph on a fresh engine (no plans yet)
// replays with the bits of direct steps and of the CPU backend; and the
// sparse network's rows are batch invariant on the GPU.
func TestGPUSparse24GraphReplayAndBatchInvariance(t *testing.T) {
	ctx := gputest.Context(t)
	gpuBackend(t) // builds the kernels once
	for _, act := range acts {
		for _, tc := range sparseCases {
			t.Run(act.String()+"/"+tc.String(), func(t *testing.T) {
				replayAndInvariance(t, ctx, sparseConfig(tc.d, act), tc)
			})
		}
	}
}
