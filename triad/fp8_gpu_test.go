package triad

import (
	"errors"
	"fmt"
	"testing"

	"github.com/detgemm/detgemm/gemm"
	"github.com/detgemm/detgemm/internal/gputest"
	"github.com/stretchr/testify/require"
)

// skipFP8OffHopper skips an fp8 test on a GPU other than sm_90: the fp8
// products run on Hopper's wgmma only (elsewhere an fp8 layer is refused
// with gemm.ErrArch, which the test checks first).
func skipFP8OffHopper(t *testing.T, gpu *GPU) {
	t.Helper()
	if a := gpu.Engine().Arch(); a.Major != 9 || a.Minor != 0 {
		_, err := NewLinear(gpu, LinearConfig{In: 16, Out: 16, Tier: gemm.TierTensorCore, DType: BF16, FP8: true, MaxRows: 1})
		require.ErrorIs(t, err, gemm.ErrArch, "an fp8 layer off Hopper is refused, never run otherwise")
		t.Skipf("the fp8 products run on sm_90 (Hopper) only; this GPU is %v", a)
	}
}

// An fp8 network trains on the GPU to the CPU backend's digests (weights
// and loss bits), with ReLU and GELU, bf16 and f16.
func TestGPUFP8TrainingGivesTheCPUDigests(t *testing.T) {
	gpu := gpuBackend(t)
	skipFP8OffHopper(t, gpu)
	for _, act := range acts {
		for _, tc := range fp8Cases {
			t.Run(act.String()+"/"+tc.String(), func(t *testing.T) {
				cfg := fp8Config(tc.d, act)
				want := trainDigest(t, NewCPU(0), cfg, shortEpochs)
				got := trainDigest(t, gpu, cfg, shortEpochs)
				require.Equal(t, want, got, "GPU vs CPU backend")
			})
		}
	}
}

// fp8StateRows is the batch of the state test: odd, two bias-gradient
// slabs, three 128-row tiles.
const fp8StateRows = 301

// The whole fp8 state after construction and after each of three steps —
// every layer's master, working copy, both quantized weights and their
// scales, the last step's quantized gradients and the gradients of the
// hidden layers' pre-activations — and the forward's quantized inputs,
// outputs and aux on an odd batch equal the CPU backend's bits.
func TestGPUFP8StateAndForwardEqualCPU(t *testing.T) {
	gpu := gpuBackend(t)
	skipFP8OffHopper(t, gpu)
	for _, act := range acts {
		for _, tc := range fp8Cases {
			t.Run(act.String()+"/"+tc.String(), func(t *testing.T) {
				want, got := fp8StatesOn(t, NewCPU(0), tc, act), fp8StatesOn(t, gpu, tc, act)
				for s := range want {
					for k, w := range want[s] {
						requireSameBits(t, w, got[s][k], fmt.Sprintf("after %d steps: %s", s, k))
					}
				}
			})
		}
	}
}

// An fp8 Linear's forward, backward and step on adversarial data (zero
// rows, NaN, ±Inf, a value beyond f16's range) write every output, all
// poisoned first, with the CPU backend's bits; and the GELU gradient pass
// (the engine's GatedBackward with a = 1) equals the CPU's.
func TestGPUFP8OpsEqualCPU(t *testing.T) {
	gpu := gpuBackend(t)
	skipFP8OffHopper(t, gpu)
	for _, tc := range fp8Cases {
		t.Run(tc.String(), func(t *testing.T) {
			want, got := fp8OpsOn(t, NewCPU(0), tc), fp8OpsOn(t, gpu, tc)
			for k, w := range want {
				requireSameBits(t, w, got[k], k)
			}
		})
	}
}

// An fp8 step captured as a CUDA graph on a fresh engine (no plans yet)
// replays with the bits of direct steps and of the CPU backend; and the
// fp8 network's rows are batch invariant on the GPU.
func TestGPUFP8GraphReplayAndBatchInvariance(t *testing.T) {
	ctx := gputest.Context(t)
	skipFP8OffHopper(t, gpuBackend(t)) // builds the kernels once
	for _, act := range acts {
		for _, tc := range fp8Cases {
			t.Run(act.String()+"/"+tc.String(), func(t *testing.T) {
				replayAndInvariance(t, ctx, fp8Config(tc.d, act), tc)
			})
		}
	}
}

// The GPU backend refuses what the CPU backend refuses, with the same
// field named, before asking the engine.
func TestGPUFP8RefusesWhatItCannotRun(t *testing.T) {
	gpu := gpuBackend(t)
	for _, c := range []struct {
		cfg      LinearConfig
		sentinel error
		arg      string
	}{
		{LinearConfig{In: 16, Out: 16, Tier: gemm.TierTyped, DType: BF16, FP8: true, MaxRows: 4}, gemm.ErrTier, "Tier"},
		{LinearConfig{In: 24, Out: 16, Tier: gemm.TierTensorCore, DType: BF16, FP8: true, MaxRows: 4}, ErrShape, "In"},
		{LinearConfig{In: 16, Out: 16, Tier: gemm.TierTensorCore, DType: BF16, FP8: true}, ErrShape, "MaxRows"},
	} {
		_, err := NewLinear(gpu, c.cfg)
		require.ErrorIs(t, err, c.sentinel)
		var e *Error
		require.True(t, errors.As(err, &e), "%v", err)
		require.Equal(t, c.arg, e.Arg)
	}
}

// fp8StatesOn is fp8StateOf of an fp8 network of fp8Sizes on be after
// construction and after each of three steps on one odd batch.
func fp8StatesOn(t *testing.T, be Backend, tc tierCase, act Act) []map[string][]uint32 {
	t.Helper()
	m, err := NewMLP(be, MLPConfig{Sizes: fp8Sizes, Tier: tc.tier, DType: tc.d, MaxRows: fp8StateRows, Seed: 5,
		Opt: SGD{LR: 0.02, Momentum: 0.9}, Act: act, FP8: true})
	require.NoError(t, err)
	defer m.Close()
	in, out := fp8Sizes[0], fp8Sizes[len(fp8Sizes)-1]
	x := tensorOf(t, be, tc.d, fp8StateRows, in, randValues(7, fp8StateRows*in, 1))
	tg := tensorOf(t, be, tc.d, fp8StateRows, out, randValues(8, fp8StateRows*out, 1))
	states := []map[string][]uint32{fp8StateOf(t, m, x)}
	for range 3 {
		require.NoError(t, m.Step(x, tg))
		states = append(states, fp8StateOf(t, m, x))
	}
	return states
}

// fp8OpsOn runs an fp8 Linear's forward, backward and step and the GELU
// gradient pass on be with adversarial data, every output poisoned first,
// and returns the outputs' bits.
func fp8OpsOn(t *testing.T, be Backend, tc tierCase) map[string][]uint32 {
	t.Helper()
	const M, In, Out = 301, 160, 48
	l, err := NewLinear(be, LinearConfig{In: In, Out: Out, Tier: tc.tier, DType: tc.d, FP8: true, MaxRows: M})
	require.NoError(t, err)
	defer l.Close()
	require.NoError(t, l.SetParams(adversarial(11, In, Out), randValues(12, Out, 0.5)))
	x := tensorOf(t, be, tc.d, M, In, adversarial(13, M, In))
	dy := tensorOf(t, be, tc.d, M, Out, adversarial(14, M, Out))
	y, dx := poisoned(t, be, tc.d, M, Out), poisoned(t, be, tc.d, M, In)
	require.NoError(t, l.Forward(x, y))
	require.NoError(t, l.Backward(x, dy, dx))
	h, g := tensorOf(t, be, tc.d, M, Out, adversarial(15, M, Out)), poisoned(t, be, tc.d, M, Out)
	ones := tensorOf(t, be, tc.d, M, Out, func() []float32 {
		v := make([]float32, M*Out)
		for i := range v {
			v[i] = 1
		}
		return v
	}())
	require.NoError(t, be.geluGrad(h, dy, g, ones, poisoned(t, be, tc.d, M, Out)))
	out := map[string][]uint32{"y": bitsOf(t, be, y), "dx": bitsOf(t, be, dx), "dW": bitsOf(t, be, l.DW()), "db": bitsOf(t, be, l.DB()),
		"xq": codesOf(t, l.f8.xq), "xs": bitsOf(t, be, l.f8.xs), "gq": codesOf(t, l.f8.gq), "gs": bitsOf(t, be, l.f8.gs),
		"gelu'": bitsOf(t, be, g)}
	require.NoError(t, l.Step(SGD{LR: 0.1, Momentum: 0.9}))
	out["W after step"], out["work after step"] = bitsOf(t, be, l.W()), bitsOf(t, be, l.Work())
	out["Wt after step"], out["Wts after step"] = codesOf(t, l.f8.wt), bitsOf(t, be, l.f8.wts)
	out["Wq after step"], out["Ws after step"] = codesOf(t, l.f8.wq), bitsOf(t, be, l.f8.ws)
	return out
}
