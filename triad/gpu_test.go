package triad

import (
	"math"
	"sync"
	"testing"

	"github.com/detgemm/detgemm/gemm"
	"github.com/detgemm/detgemm/internal/gputest"
	"github.com/stretchr/testify/require"
)

var gpuShared struct {
	once sync.Once
	be   *GPU
	err  error
}

// gpuBackend returns the process's GPU backend on device 0, or skips t
// with the loader's reason.
func gpuBackend(t *testing.T) *GPU {
	t.Helper()
	ctx := gputest.Context(t)
	gpuShared.once.Do(func() { gpuShared.be, gpuShared.err = NewGPU(ctx) })
	require.NoError(t, gpuShared.err)
	return gpuShared.be
}

// skipTCOffHopper skips a tensor-core case compared with the CPU backend on
// a GPU other than sm_90: the CPU reproduces Hopper's tensor cores only.
func skipTCOffHopper(t *testing.T, gpu *GPU, tc tierCase) {
	t.Helper()
	if a := gpu.Engine().Arch(); tc.tier == gemm.TierTensorCore && (a.Major != 9 || a.Minor != 0) {
		t.Skipf("the CPU backend reproduces the tensor-core tier of sm_90; this GPU is %v", a)
	}
}

// acts are the activations every GPU training test runs.
var acts = []Act{ActReLU, ActGELU}

// With each activation (fused into the hidden layers' products), GPU
// training gives the CPU backend's digests and the golden ones.
func TestGPUTrainingGivesTheCPUDigests(t *testing.T) {
	gpu := gpuBackend(t)
	for _, act := range acts {
		file := readGoldenAct(t, act)
		for _, tc := range tierCases {
			t.Run(act.String()+"/"+tc.String(), func(t *testing.T) {
				skipTCOffHopper(t, gpu, tc)
				want := trainDigest(t, NewCPU(0), shortConfigAct(tc, act), shortEpochs)
				got := trainDigest(t, gpu, shortConfigAct(tc, act), shortEpochs)
				require.Equal(t, want, got, "GPU vs CPU backend")
				require.NoError(t, file.Check(goldenKeyAct(tc, act), got), "GPU vs golden file")
			})
		}
	}
}

func TestGPUGraphReplayEqualsDirectSteps(t *testing.T) {
	gpu := gpuBackend(t)
	for _, act := range acts {
		for _, tc := range tierCases {
			t.Run(act.String()+"/"+tc.String(), func(t *testing.T) {
				skipTCOffHopper(t, gpu, tc)
				direct, replay, err := GraphReplay(gpu, shortConfigAct(tc, act), 4)
				require.NoError(t, err)
				require.Equal(t, direct, replay, "graph replay vs direct steps")

				// And the CPU backend's four direct steps.
				require.Equal(t, cpuStepsDigest(t, shortConfigAct(tc, act), 4), replay, "graph replay vs CPU backend")
			})
		}
	}
}

// requireInvariantAfterEpoch trains cfg on be for one epoch, then
// requires every row of the inputs to give the same bits alone as in the
// whole batch.
func requireInvariantAfterEpoch(t *testing.T, be Backend, cfg TrainConfig) {
	t.Helper()
	r, err := NewRun(be, cfg)
	require.NoError(t, err)
	defer r.Close()
	_, err = r.Epoch(nil)
	require.NoError(t, err)
	n, diff, err := BatchInvariance(r.Model, r.X, r.X.Rows())
	require.NoError(t, err)
	require.Equal(t, r.X.Rows(), n)
	require.Zero(t, diff)
}

func TestGPUBatchInvariance(t *testing.T) {
	gpu := gpuBackend(t)
	for _, act := range acts {
		for _, tc := range tierCases {
			t.Run(act.String()+"/"+tc.String(), func(t *testing.T) {
				requireInvariantAfterEpoch(t, gpu, shortConfigAct(tc, act))
			})
		}
	}
}

// The fused products (forward with ReluAuxBias or GeluAuxBias, the
// product back with DReluBgrad or DGeluBgrad) write every element of
// their outputs and aux (all poisoned first) with the CPU backend's bits,
// on adversarial data; and on the GPU too the fused ReLU equals the
// unfused kernels (Forward, relu, DX, the ReLU and bias gradients).
func TestGPUFusedOpsEqualCPU(t *testing.T) {
	gpu := gpuBackend(t)
	for _, tc := range tierCases {
		t.Run(tc.String(), func(t *testing.T) {
			skipTCOffHopper(t, gpu, tc)
			onGPU, onCPU := newFusedPair(t, gpu, tc), newFusedPair(t, NewCPU(0), tc)
			for _, act := range acts {
				want, got := onCPU.fused(t, act), onGPU.fused(t, act)
				for _, k := range []string{"a", "aux", "dh", "db"} {
					requireSameBits(t, want[k], got[k], act.String()+" "+k)
				}
				if act == ActReLU {
					unfused := onGPU.unfused(t)
					for _, k := range []string{"a", "aux", "dh", "db"} {
						requireSameBits(t, unfused[k], got[k], "GPU fused vs unfused relu "+k)
					}
				}
			}
		})
	}
}

// opsOnBoth runs every triad operation on one backend with fixed inputs and
// odd shapes, every output pre-filled with NaN (poison: an element a kernel
// leaves unwritten cannot match the CPU), and returns the outputs' bits.
func opsOnBoth(t *testing.T, be Backend, tc tierCase) map[string][]uint32 {
	const M, In, Out = 301, 37, 19
	poison := func(d DType, rows, cols int) *Tensor {
		v := make([]float32, rows*cols)
		for i := range v {
			v[i] = math.Float32frombits(0xFFFFFFFF)
		}
		return tensorOf(t, be, d, rows, cols, v)
	}
	l, err := NewLinear(be, LinearConfig{In: In, Out: Out, Tier: tc.tier, DType: tc.d})
	require.NoError(t, err)
	defer l.Close()
	require.NoError(t, l.SetParams(randValues(11, In*Out, 0.5), randValues(12, Out, 0.5)))
	x := tensorOf(t, be, tc.d, M, In, randValues(13, M*In, 1))
	dy := tensorOf(t, be, tc.d, M, Out, randValues(14, M*Out, 1))
	tg := tensorOf(t, be, tc.d, M, Out, randValues(15, M*Out, 1))
	y, dx := poison(tc.d, M, Out), poison(tc.d, M, In)
	a, da, g := poison(tc.d, M, Out), poison(tc.d, M, Out), poison(tc.d, M, Out)
	loss := tensorOf(t, be, F32, 1, 2, []float32{float32(math.NaN()), 0.25})

	require.NoError(t, l.Forward(x, y))
	require.NoError(t, l.Backward(x, dy, dx))
	require.NoError(t, be.relu(y, a))
	require.NoError(t, be.reluGrad(y, dy, da))
	require.NoError(t, be.mseGrad(y, tg, g))
	require.NoError(t, be.mseLoss(y, tg, loss))
	out := map[string][]uint32{}
	for name, ts := range map[string]*Tensor{"y": y, "dx": dx, "dW": l.DW(), "db": l.DB(), "relu": a, "relu'": da, "mse'": g, "loss": loss} {
		out[name] = bitsOf(t, be, ts)
	}
	require.NoError(t, l.Step(SGD{LR: 0.1, Momentum: 0.9}))
	for name, ts := range map[string]*Tensor{"W after step": l.W(), "b after step": l.B(), "work after step": l.Work(), "dW after step": l.DW()} {
		out[name] = bitsOf(t, be, ts)
	}
	return out
}

func TestGPUEveryOutputWrittenAndEqualToCPU(t *testing.T) {
	gpu := gpuBackend(t)
	for _, tc := range tierCases {
		t.Run(tc.String(), func(t *testing.T) {
			skipTCOffHopper(t, gpu, tc)
			want, got := opsOnBoth(t, NewCPU(0), tc), opsOnBoth(t, gpu, tc)
			for name, w := range want {
				requireSameBits(t, w, got[name], name)
			}
		})
	}
}

func TestGPUMicroBatchGradientsEqualOneCall(t *testing.T) {
	gpu := gpuBackend(t)
	const M, In, Out = 700, 20, 9
	for _, tc := range tierCases {
		t.Run(tc.String(), func(t *testing.T) {
			skipTCOffHopper(t, gpu, tc)
			grads := func(be Backend, spans [][2]int) []uint32 {
				x := tensorOf(t, be, tc.d, M, In, randValues(5, M*In, 1))
				dy := tensorOf(t, be, tc.d, M, Out, randValues(6, M*Out, 1))
				l, err := NewLinear(be, LinearConfig{In: In, Out: Out, Tier: tc.tier, DType: tc.d})
				require.NoError(t, err)
				defer l.Close()
				for _, s := range spans {
					require.NoError(t, l.Backward(mustView(t, x, s[0], s[1]-s[0]), mustView(t, dy, s[0], s[1]-s[0]), nil))
				}
				return append(bitsOf(t, be, l.DW()), bitsOf(t, be, l.DB())...)
			}
			one := grads(gpu, [][2]int{{0, M}})
			requireSameBits(t, one, grads(gpu, [][2]int{{0, 256}, {256, 512}, {512, M}}), "GPU micro-batches")
			requireSameBits(t, one, grads(NewCPU(0), [][2]int{{0, M}}), "GPU vs CPU")
		})
	}
}
