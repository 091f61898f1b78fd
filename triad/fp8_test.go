package triad

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"testing"
	"unsafe"

	"github.com/detgemm/detgemm/gemm"
	"github.com/detgemm/detgemm/gemm/ref"
	"github.com/stretchr/testify/require"
)

// fp8Cases are the activation dtypes of the fp8 tests (the tensor-core
// tier only).
var fp8Cases = []tierCase{{gemm.TierTensorCore, BF16}, {gemm.TierTensorCore, F16}}

// fp8Config is a short fp8 run: every width a multiple of 16, 300 rows a
// step (two slabs in the dW, db and loss plans, three 128-wide blocks of
// nothing: K is at most 32 here, one promoted block).
func fp8Config(d DType, act Act) TrainConfig {
	return TrainConfig{In: 16, Hidden: 32, Out: 16, Tier: gemm.TierTensorCore, DType: d, Batch: 300, Steps: 3, Seed: 42,
		Opt: SGD{LR: 0.05, Momentum: 0.9}, Act: act, FP8: true}
}

// codesOf returns an fp8 code tensor's bytes widened to uint32.
func codesOf(t *testing.T, x *Tensor) []uint32 {
	t.Helper()
	require.True(t, x.dtype.FP8(), "%v", x.dtype)
	out := make([]uint8, x.Len())
	switch be := x.be.(type) {
	case *GPU:
		require.NoError(t, be.stream.MemcpyDtoHAsync(unsafe.Pointer(unsafe.SliceData(out)), x.dev, uint64(len(out))))
		require.NoError(t, be.Synchronize())
	default:
		copy(out, x.u8)
	}
	return u8Bits(out)
}

// halfBits returns a 16-bit tensor's bits.
func halfBits(t *testing.T, be Backend, x *Tensor) []uint16 {
	t.Helper()
	_, u, err := be.readRaw(x)
	require.NoError(t, err)
	require.Len(t, u, x.Len())
	return u
}

// refQuantize is ref.FP8Quantize of x (rows×cols bits of d), or of xᵀ, to
// out with a scale per row of the result.
func refQuantize(t *testing.T, out, d DType, x []uint16, rows, cols int, transpose bool) ([]uint8, []float32) {
	t.Helper()
	qr := rows
	if transpose {
		qr = cols
	}
	q, s := make([]uint8, rows*cols), make([]float32, qr)
	require.NoError(t, ref.FP8Quantize(ref.FP8QuantizeRequest{Out: out, Rows: rows, Cols: cols, X: ref.Bits(x), In: d,
		Transpose: transpose, Groups: ref.GroupRow, Q: q, Scales: s}))
	return q, s
}

// refFP8 is ref's fp8 product d[M,N] = ep(a[M,K]·b[N,K]ᵀ (+ bias)) with
// a scale per row, promoted accumulation, stored in d.
func refFP8(t *testing.T, ep gemm.Epilogue, at, bt DType, a []uint8, sa []float32, b []uint8, sb []float32, bias []float32, m, n, k int, d DType) []uint16 {
	t.Helper()
	out := make([]uint16, m*n)
	r := ref.FP8MatmulRequest{A: at, B: bt, Out: d, M: m, N: n, K: k, AData: a, BData: b, Scaling: ref.ScaleRow, ScaleA: sa, ScaleB: sb,
		Accum: ref.AccumPromoted, Epilogue: ep, D: ref.Bits(out)}
	if fp8HasBias(ep) {
		r.Bias = bias
	}
	require.NoError(t, ref.Options{}.FP8Matmul(r))
	return out
}

// requireFP8Weights fails unless a layer's quantized weights are its
// working copy quantized: Wᵀ per output column (the forward's) and W per
// input row (dX's).
func requireFP8Weights(t *testing.T, l *Linear, what string) {
	t.Helper()
	be, d, K, N := l.be, l.cfg.DType, l.cfg.In, l.cfg.Out
	work := halfBits(t, be, l.work)
	wt, wts := refQuantize(t, gemm.E4M3, d, work, K, N, true)
	requireSameBits(t, u8Bits(wt), codesOf(t, l.f8.wt), what+": Wᵀ codes")
	requireSameBits(t, f32Bits(wts), bitsOf(t, be, l.f8.wts), what+": Wᵀ scales")
	wq, ws := refQuantize(t, gemm.E4M3, d, work, K, N, false)
	requireSameBits(t, u8Bits(wq), codesOf(t, l.f8.wq), what+": W codes")
	requireSameBits(t, f32Bits(ws), bitsOf(t, be, l.f8.ws), what+": W scales")
}

// An fp8 layer is refused outside the tensor-core tier, with a width that
// is not a multiple of 16, without MaxRows and together with Sparse24; an
// fp8 network also for a gated activation. Each refusal names its field;
// nothing falls back to a 16-bit layer.
func TestFP8RefusesWhatItCannotRun(t *testing.T) {
	be := NewCPU(1)
	lin := func(f func(*LinearConfig)) error {
		c := LinearConfig{In: 16, Out: 16, Tier: gemm.TierTensorCore, DType: BF16, FP8: true, MaxRows: 4}
		f(&c)
		return second(NewLinear(be, c))
	}
	mlp := func(f func(*MLPConfig)) error {
		c := MLPConfig{Sizes: []int{16, 32, 16}, Tier: gemm.TierTensorCore, DType: BF16, MaxRows: 4, FP8: true}
		f(&c)
		return second(NewMLP(be, c))
	}
	run := func(f func(*TrainConfig)) error {
		c := fp8Config(BF16, ActReLU)
		f(&c)
		return second(NewRun(be, c))
	}
	for _, c := range []struct {
		name     string
		err      error
		sentinel error
		arg      string
	}{
		{"linear f32 tier", lin(func(c *LinearConfig) { c.Tier, c.DType = gemm.TierF32, F32 }), gemm.ErrTier, "Tier"},
		{"linear typed tier", lin(func(c *LinearConfig) { c.Tier = gemm.TierTyped }), gemm.ErrTier, "Tier"},
		{"linear In 24", lin(func(c *LinearConfig) { c.In = 24 }), ErrShape, "In"},
		{"linear Out 8", lin(func(c *LinearConfig) { c.Out = 8 }), ErrShape, "Out"},
		{"linear no MaxRows", lin(func(c *LinearConfig) { c.MaxRows = 0 }), ErrShape, "MaxRows"},
		{"linear sparse24", lin(func(c *LinearConfig) { c.Sparse24 = true }), ErrConfig, "FP8"},
		{"mlp typed tier", mlp(func(c *MLPConfig) { c.Tier, c.DType = gemm.TierTyped, F16 }), gemm.ErrTier, "Tier"},
		{"mlp hidden 24", mlp(func(c *MLPConfig) { c.Sizes = []int{16, 24, 16} }), ErrShape, "Sizes"},
		{"mlp output 8", mlp(func(c *MLPConfig) { c.Sizes = []int{16, 32, 8} }), ErrShape, "Sizes"},
		{"mlp input 12", mlp(func(c *MLPConfig) { c.Sizes = []int{12, 32, 16} }), ErrShape, "Sizes"},
		{"mlp gated", mlp(func(c *MLPConfig) { c.Act = ActSwiGLU }), ErrConfig, "Act"},
		{"mlp sparse24", mlp(func(c *MLPConfig) { c.Sparse24 = true }), ErrConfig, "FP8"},
		{"run In 12", run(func(c *TrainConfig) { c.In = 12 }), ErrShape, "In"},
		{"run Hidden 24", run(func(c *TrainConfig) { c.Hidden = 24 }), ErrShape, "Hidden"},
		{"run Out 5", run(func(c *TrainConfig) { c.Out = 5 }), ErrShape, "Out"},
		{"run typed", run(func(c *TrainConfig) { c.Tier = gemm.TierTyped }), gemm.ErrTier, "Tier"},
		{"run geglu", run(func(c *TrainConfig) { c.Act = ActGeGLU }), ErrConfig, "Act"},
		{"run sparse24", run(func(c *TrainConfig) { c.Sparse24 = true }), ErrConfig, "FP8"},
	} {
		t.Run(c.name, func(t *testing.T) {
			require.ErrorIs(t, c.err, c.sentinel)
			var e *Error
			require.True(t, errors.As(c.err, &e), "%v", c.err)
			require.Equal(t, c.arg, e.Arg)
		})
	}
}

// An fp8 Linear quantizes its working copy both ways (refreshed by every
// Step), forwards with ref's fp8 product on x quantized per row to E4M3,
// computes dx from dy quantized per row to E5M2, and accumulates DW and DB
// as the 16-bit layer does.
func TestFP8LinearIsTheFP8Reference(t *testing.T) {
	const M, In, Out = 37, 48, 32
	for _, tc := range fp8Cases {
		t.Run(tc.String(), func(t *testing.T) {
			be := NewCPU(2)
			l, err := NewLinear(be, LinearConfig{In: In, Out: Out, Tier: tc.tier, DType: tc.d, FP8: true, MaxRows: 40})
			require.NoError(t, err)
			defer l.Close()
			dense, err := NewLinear(be, LinearConfig{In: In, Out: Out, Tier: tc.tier, DType: tc.d})
			require.NoError(t, err)
			defer dense.Close()
			w, b := randValues(1, In*Out, 0.5), randValues(2, Out, 0.1)
			require.NoError(t, l.SetParams(w, b))
			require.NoError(t, dense.SetParams(w, b))
			requireSameBits(t, refRound(tc.d, w), bitsOf(t, be, l.Work()), "work = RNE(master)")
			requireFP8Weights(t, l, "after SetParams")

			xv, dyv := randValues(3, M*In, 1), randValues(4, M*Out, 1)
			x, dy := tensorOf(t, be, tc.d, M, In, xv), tensorOf(t, be, tc.d, M, Out, dyv)
			y, dx := poisoned(t, be, tc.d, M, Out), poisoned(t, be, tc.d, M, In)
			require.NoError(t, l.Forward(x, y))
			require.NoError(t, l.Backward(x, dy, dx))
			require.NoError(t, dense.Backward(x, dy, nil))

			work := halfBits(t, be, l.Work())
			wt, wts := refQuantize(t, gemm.E4M3, tc.d, work, In, Out, true)
			wq, ws := refQuantize(t, gemm.E4M3, tc.d, work, In, Out, false)
			xq, xs := refQuantize(t, gemm.E4M3, tc.d, halfBits(t, be, x), M, In, false)
			requireSameBits(t, u8Bits(xq), codesOf(t, rowsOf(l.f8.xq, M)), "x codes")
			requireSameBits(t, f32Bits(xs), bitsOf(t, be, rowsOf(l.f8.xs, M)), "x scales")
			wantY := refFP8(t, gemm.Bias, gemm.E4M3, gemm.E4M3, xq, xs, wt, wts, b, M, Out, In, tc.d)
			requireSameBits(t, u16Bits(wantY), bitsOf(t, be, y), "y")
			gq, gs := refQuantize(t, gemm.E5M2, tc.d, halfBits(t, be, dy), M, Out, false)
			wantDX := refFP8(t, gemm.Default, gemm.E5M2, gemm.E4M3, gq, gs, wq, ws, nil, M, In, Out, tc.d)
			requireSameBits(t, u16Bits(wantDX), bitsOf(t, be, dx), "dx")
			requireSameBits(t, bitsOf(t, be, dense.DW()), bitsOf(t, be, l.DW()), "dW: the 16-bit layer's")
			requireSameBits(t, bitsOf(t, be, dense.DB()), bitsOf(t, be, l.DB()), "db: the 16-bit layer's")

			opt := SGD{LR: 0.1, Momentum: 0.9}
			require.NoError(t, l.Step(opt))
			require.NoError(t, dense.Step(opt))
			requireSameBits(t, bitsOf(t, be, dense.W()), bitsOf(t, be, l.W()), "W after a step")
			requireSameBits(t, bitsOf(t, be, dense.Work()), bitsOf(t, be, l.Work()), "work after a step")
			require.NotEqual(t, work, halfBits(t, be, l.Work()), "the step moved the weights")
			requireFP8Weights(t, l, "after a step")
		})
	}
}

// An fp8 layer refuses a batch of more than MaxRows rows, queueing
// nothing; MaxRows rows run.
func TestFP8LinearRefusesMoreRowsThanMaxRows(t *testing.T) {
	be := NewCPU(1)
	l, err := NewLinear(be, LinearConfig{In: 16, Out: 32, Tier: gemm.TierTensorCore, DType: BF16, FP8: true, MaxRows: 5})
	require.NoError(t, err)
	defer l.Close()
	require.NoError(t, l.SetParams(randValues(1, 16*32, 0.5), randValues(2, 32, 0.5)))
	x, dy := tensorOf(t, be, BF16, 6, 16, randValues(3, 96, 1)), tensorOf(t, be, BF16, 6, 32, randValues(4, 192, 1))
	y, dx := poisoned(t, be, BF16, 6, 32), poisoned(t, be, BF16, 6, 16)
	before := bitsOf(t, be, y)
	for _, err := range []error{l.Forward(x, y), l.Backward(x, dy, dx)} {
		require.ErrorIs(t, err, ErrShape)
		var e *Error
		require.True(t, errors.As(err, &e))
		require.Equal(t, "x", e.Arg)
	}
	require.Equal(t, before, bitsOf(t, be, y))
	require.Equal(t, make([]uint32, 16*32), bitsOf(t, be, l.DW()), "nothing accumulated")
	x5, y5 := mustView(t, x, 0, 5), mustView(t, y, 0, 5)
	require.NoError(t, l.Forward(x5, y5))
	require.NoError(t, l.Backward(x5, mustView(t, dy, 0, 5), mustView(t, dx, 0, 5)))
}

// An fp8 layer whose parameters were never set holds the zero weight
// quantized (codes +0, scales 1) and forwards to +0.
func TestFP8LayerRunsBeforeSetParams(t *testing.T) {
	be := NewCPU(1)
	l, err := NewLinear(be, LinearConfig{In: 32, Out: 16, Tier: gemm.TierTensorCore, DType: F16, FP8: true, MaxRows: 2})
	require.NoError(t, err)
	defer l.Close()
	requireFP8Weights(t, l, "zero weight")
	one := math.Float32bits(1)
	require.Equal(t, slices.Repeat([]uint32{one}, 16), bitsOf(t, be, l.f8.wts))
	require.Equal(t, slices.Repeat([]uint32{one}, 32), bitsOf(t, be, l.f8.ws))
	x := tensorOf(t, be, F16, 2, 32, randValues(1, 64, 1))
	y := poisoned(t, be, F16, 2, 16)
	require.NoError(t, l.Forward(x, y))
	require.Equal(t, make([]uint32, 32), bitsOf(t, be, y))
}

// geluGrad, the fp8 network's GELU gradient pass, is RNE(dy·GeluGrad32(h))
// for every element (NaN, ±Inf and overflow among them), in both types.
func TestFP8GeluGradIsTheGELUGradient(t *testing.T) {
	const rows, cols = 130, 19
	for _, tc := range fp8Cases {
		t.Run(tc.String(), func(t *testing.T) {
			be := NewCPU(1)
			h := tensorOf(t, be, tc.d, rows, cols, adversarial(1, rows, cols))
			dy := tensorOf(t, be, tc.d, rows, cols, adversarial(2, rows, cols))
			dx := poisoned(t, be, tc.d, rows, cols)
			ones, spare := poisoned(t, be, tc.d, rows, cols), poisoned(t, be, tc.d, rows, cols)
			require.NoError(t, be.geluGrad(h, dy, dx, ones, spare))
			hv, dv := values(h), values(dy)
			want := make([]uint32, rows*cols)
			for i := range want {
				want[i] = uint32(tc.d.FromF32(mul32(dv[i], ref.GeluGrad32(hv[i]))))
			}
			requireSameBits(t, want, bitsOf(t, be, dx), "dx")
		})
	}
}

// fp8Sizes is the network of the recipe tests: K of 16 to 160 (two
// promoted 128-wide blocks), widths that are multiples of 16 only.
var fp8Sizes = []int{16, 160, 48, 32}

// newFP8MLP makes an fp8 network of fp8Sizes for rows rows, trained one
// step on x and t (so that its weights are no longer the initial ones).
func newFP8MLP(t *testing.T, be Backend, tc tierCase, act Act, rows int) (m *MLP, x, tg *Tensor) {
	t.Helper()
	m, err := NewMLP(be, MLPConfig{Sizes: fp8Sizes, Tier: tc.tier, DType: tc.d, MaxRows: rows, Seed: 5, Opt: SGD{LR: 0.02, Momentum: 0.9},
		Act: act, FP8: true})
	require.NoError(t, err)
	t.Cleanup(func() { m.Close() })
	in, out := fp8Sizes[0], fp8Sizes[len(fp8Sizes)-1]
	x = tensorOf(t, be, tc.d, rows, in, randValues(7, rows*in, 1))
	tg = tensorOf(t, be, tc.d, rows, out, randValues(8, rows*out, 1))
	require.NoError(t, m.Step(x, tg))
	return m, x, tg
}

// An fp8 network's forward is the recipe: each layer quantizes its input
// per row to E4M3 and runs ref's fp8 product with Wᵀ quantized per output
// column, epilogue ReluBias or GeluBias for a hidden layer (and for GELU a
// second product with Bias: the aux), Bias for the last.
func TestFP8MLPForwardIsTheRecipe(t *testing.T) {
	const rows = 45
	for _, act := range acts {
		for _, tc := range fp8Cases {
			t.Run(act.String()+"/"+tc.String(), func(t *testing.T) {
				be := NewCPU(0)
				m, x, _ := newFP8MLP(t, be, tc, act, rows)
				y, err := m.Forward(x)
				require.NoError(t, err)
				in := halfBits(t, be, x)
				for i, l := range m.layers {
					K, N := l.cfg.In, l.cfg.Out
					work := halfBits(t, be, l.work)
					wt, wts := refQuantize(t, gemm.E4M3, tc.d, work, K, N, true)
					xq, xs := refQuantize(t, gemm.E4M3, tc.d, in, rows, K, false)
					b, err := be.Read(l.b)
					require.NoError(t, err)
					what := fmt.Sprintf("layer %d", i)
					if i == len(m.layers)-1 {
						want := refFP8(t, gemm.Bias, gemm.E4M3, gemm.E4M3, xq, xs, wt, wts, b, rows, N, K, tc.d)
						requireSameBits(t, u16Bits(want), bitsOf(t, be, y), what+" y")
						continue
					}
					want := refFP8(t, act.fp8Epilogue(), gemm.E4M3, gemm.E4M3, xq, xs, wt, wts, b, rows, N, K, tc.d)
					a := rowsOf(m.a[i], rows)
					requireSameBits(t, u16Bits(want), bitsOf(t, be, a), what+" a")
					if act == ActGELU {
						aux := refFP8(t, gemm.Bias, gemm.E4M3, gemm.E4M3, xq, xs, wt, wts, b, rows, N, K, tc.d)
						requireSameBits(t, u16Bits(aux), bitsOf(t, be, rowsOf(m.aux[i], rows)), what+" aux")
					} else {
						require.Nil(t, m.aux[i], "an fp8 ReLU layer keeps no mask")
					}
					in = halfBits(t, be, a)
				}
			})
		}
	}
}

// An fp8 network's product back into a hidden layer is the recipe: the
// gradient quantized per row to E5M2 times the weight quantized per input
// row (those the step's forward read), then the activation's gradient as
// its own pass: ReLU's from the layer's output, GELU's RNE(dpre·
// GeluGrad32(aux)) from the stored pre-activation.
func TestFP8MLPBackwardIsTheRecipe(t *testing.T) {
	const rows = 45
	for _, act := range acts {
		for _, tc := range fp8Cases {
			t.Run(act.String()+"/"+tc.String(), func(t *testing.T) {
				be := NewCPU(0)
				m, x, tg := newFP8MLP(t, be, tc, act, rows)
				type quant struct {
					codes  []uint8
					scales []float32
				}
				var wq []quant
				for _, l := range m.layers {
					wq = append(wq, quant{slices.Clone(l.f8.wq.u8), slices.Clone(l.f8.ws.f32)})
				}
				require.NoError(t, m.Step(x, tg))
				for i := len(m.layers) - 1; i > 0; i-- {
					K, N := m.layers[i].cfg.In, m.layers[i].cfg.Out
					gq, gs := refQuantize(t, gemm.E5M2, tc.d, halfBits(t, be, rowsOf(m.dh[i], rows)), rows, N, false)
					dpre := refFP8(t, gemm.Default, gemm.E5M2, gemm.E4M3, gq, gs, wq[i].codes, wq[i].scales, nil, rows, K, N, tc.d)
					want := make([]uint32, rows*K)
					switch act {
					case ActGELU:
						aux := values(rowsOf(m.aux[i-1], rows))
						for j, p := range dpre {
							want[j] = uint32(tc.d.FromF32(mul32(tc.d.ToF32(p), ref.GeluGrad32(aux[j]))))
						}
					default:
						a := values(rowsOf(m.a[i-1], rows))
						for j, p := range dpre {
							switch {
							case a[j] > 0:
								want[j] = uint32(p)
							case a[j] != a[j]:
								want[j] = uint32(half16NaN)
							}
						}
					}
					requireSameBits(t, want, bitsOf(t, be, rowsOf(m.dh[i-1], rows)), fmt.Sprintf("dh %d", i-1))
				}
			})
		}
	}
}

// fp8StateOf is an fp8 network's state and forward outputs, as bits: per
// layer the master, the working copy, both quantized weights and their
// scales, and the last step's quantized gradient; then the forward's
// quantized inputs, hidden outputs, GELU aux and output on x.
func fp8StateOf(t *testing.T, m *MLP, x *Tensor) map[string][]uint32 {
	t.Helper()
	be, rows := m.be, x.rows
	out := map[string][]uint32{}
	for i, l := range m.layers {
		p := string(rune('0' + i))
		out["W"+p], out["work"+p] = bitsOf(t, be, l.W()), bitsOf(t, be, l.Work())
		out["Wt"+p], out["Wts"+p] = codesOf(t, l.f8.wt), bitsOf(t, be, l.f8.wts)
		out["Wq"+p], out["Ws"+p] = codesOf(t, l.f8.wq), bitsOf(t, be, l.f8.ws)
		if i > 0 {
			out["gq"+p], out["gs"+p] = codesOf(t, rowsOf(l.f8.gq, rows)), bitsOf(t, be, rowsOf(l.f8.gs, rows))
			out["dh"+p] = bitsOf(t, be, rowsOf(m.dh[i-1], rows))
		}
	}
	y, err := m.Forward(x)
	require.NoError(t, err)
	out["y"] = bitsOf(t, be, y)
	for i, l := range m.layers {
		p := string(rune('0' + i))
		out["xq"+p], out["xs"+p] = codesOf(t, rowsOf(l.f8.xq, rows)), bitsOf(t, be, rowsOf(l.f8.xs, rows))
	}
	for i := range m.a {
		p := string(rune('0' + i))
		out["a"+p] = bitsOf(t, be, rowsOf(m.a[i], rows))
		if m.aux[i] != nil {
			out["aux"+p] = bitsOf(t, be, rowsOf(m.aux[i], rows))
		}
	}
	return out
}

// After every step each layer's quantized weights are its new working copy
// quantized, and the weights train.
func TestFP8WeightsAreRequantizedByEveryStep(t *testing.T) {
	for _, act := range acts {
		t.Run(act.String(), func(t *testing.T) {
			cfg := fp8Config(BF16, act)
			r, err := NewRun(NewCPU(0), cfg)
			require.NoError(t, err)
			defer r.Close()
			first := fp8StateOf(t, r.Model, r.X)
			for s := range 4 {
				x, tt := r.Batch(s % cfg.Steps)
				require.NoError(t, r.Model.Step(x, tt))
				for i, l := range r.Model.layers {
					requireFP8Weights(t, l, fmt.Sprintf("step %d layer %d", s, i))
				}
			}
			last := fp8StateOf(t, r.Model, r.X)
			for _, k := range []string{"Wt0", "Wts0", "Wq2", "Ws2", "y"} {
				require.NotEqual(t, first[k], last[k], "%s trains", k)
			}
		})
	}
}

// fp8 training is run-to-run identical (1 and 2 workers), batch
// invariant, reduces the loss, and is not the 16-bit network's.
func TestFP8TrainingIsDeterministicAndBatchInvariant(t *testing.T) {
	for _, act := range acts {
		for _, tc := range fp8Cases {
			t.Run(act.String()+"/"+tc.String(), func(t *testing.T) {
				cfg := fp8Config(tc.d, act)
				a := trainDigest(t, NewCPU(1), cfg, shortEpochs)
				require.Equal(t, a, trainDigest(t, NewCPU(2), cfg, shortEpochs), "two runs (1 and 2 workers) from one seed")
				dense := cfg
				dense.FP8 = false
				require.NotEqual(t, a, trainDigest(t, NewCPU(0), dense, shortEpochs), "the fp8 network is not the 16-bit one")

				requireLearnsInvariantly(t, NewCPU(2), cfg, 3)
			})
		}
	}
}

// An fp8 network's rows are batch invariant however the batch is cut: every
// row computed alone, and the batch computed in two chunks, give the bits
// of the whole batch (the scales are per row).
func TestFP8RowsAreBatchInvariantInChunks(t *testing.T) {
	for _, act := range acts {
		t.Run(act.String(), func(t *testing.T) {
			be := NewCPU(2)
			r, err := NewRun(be, fp8Config(F16, act))
			require.NoError(t, err)
			defer r.Close()
			_, err = r.Epoch(nil)
			require.NoError(t, err)
			n, diff, err := BatchInvariance(r.Model, r.X, r.X.Rows())
			require.NoError(t, err)
			require.Equal(t, r.X.Rows(), n)
			require.Zero(t, diff)
			y, err := r.Model.Forward(r.X)
			require.NoError(t, err)
			whole := bitsOf(t, be, y)
			var chunks []uint32
			for _, c := range [][2]int{{0, 301}, {301, r.X.Rows() - 301}} {
				y, err := r.Model.Forward(mustView(t, r.X, c[0], c[1]))
				require.NoError(t, err)
				chunks = append(chunks, bitsOf(t, be, y)...)
			}
			requireSameBits(t, whole, chunks, "two chunks vs one batch")
		})
	}
}

// fp8Matmul records the fp8 product the GPU backend would plan.
func (r *recorder) fp8Matmul(ep gemm.Epilogue, a, sa, b, sb, bias, d *Tensor) error {
	desc := fp8DescOf(ep, a, b, d)
	r.made = append(r.made, product{fp8: &desc})
	return r.CPU.fp8Matmul(ep, a, sa, b, sb, bias, d)
}

// The work CaptureStep prepares for an fp8 network is exactly the engine
// work the captured step does: per layer an fp8 forward (two for a GELU
// hidden layer), a dW and, but for the first layer, an fp8 dX.
func TestCaptureStepPreparesEveryFP8Product(t *testing.T) {
	nets := [][]int{{16, 32, 16}, {16, 16}, {32, 16, 160, 16}}
	for _, tc := range fp8Cases {
		for _, sizes := range nets {
			for _, rows := range []int{1, 257, 300} {
				for _, act := range acts {
					t.Run(fmt.Sprintf("%v/%v/%v/rows%d", tc, act, sizes, rows), func(t *testing.T) {
						be := newRecorder()
						m, err := NewMLP(be, MLPConfig{Sizes: sizes, Tier: tc.tier, DType: tc.d, MaxRows: 300, Seed: 3, Opt: SGD{LR: 0.01}, Act: act, FP8: true})
						require.NoError(t, err)
						defer m.Close()
						x := tensorOf(t, be, tc.d, rows, sizes[0], randValues(1, rows*sizes[0], 1))
						y := tensorOf(t, be, tc.d, rows, sizes[len(sizes)-1], randValues(2, rows*sizes[len(sizes)-1], 1))

						g, err := m.CaptureStep(x, y)
						require.NoError(t, err)
						defer g.Close()
						require.Equal(t, be.captured, be.prepared, "prepared work vs products made while capturing")
						layers := len(sizes) - 1
						fp8, dws := 0, 0
						for _, p := range be.captured {
							switch {
							case p.fp8 != nil:
								fp8++
							case p.call != nil:
								_, ok := p.call.(gemm.DWArgs)
								require.True(t, ok, "the only 16-bit products are dW: %#v", p.call)
								dws++
							default:
								t.Fatalf("a 16-bit Matmul in an fp8 step: %+v", p.desc)
							}
						}
						hiddenGELU := 0
						if act == ActGELU {
							hiddenGELU = layers - 1
						}
						require.Equal(t, layers, dws)
						require.Equal(t, layers+hiddenGELU+layers-1, fp8)

						be.made = nil
						require.NoError(t, m.Step(x, y))
						require.Equal(t, be.prepared, be.made, "direct step vs prepared work")
					})
				}
			}
		}
	}
}

// The GPU tests' harnesses (fp8StatesOn, fp8OpsOn) run on the CPU backend
// and give the same bits with 1 and 3 workers.
func TestFP8StatesAndOpsDoNotDependOnWorkers(t *testing.T) {
	for _, tc := range fp8Cases {
		t.Run(tc.String(), func(t *testing.T) {
			want, got := fp8OpsOn(t, NewCPU(1), tc), fp8OpsOn(t, NewCPU(3), tc)
			require.Equal(t, len(want), len(got))
			for k, w := range want {
				requireSameBits(t, w, got[k], k)
			}
			for _, act := range acts {
				want, got := fp8StatesOn(t, NewCPU(1), tc, act), fp8StatesOn(t, NewCPU(3), tc, act)
				require.Len(t, got, len(want))
				for s := range want {
					require.Equal(t, len(want[s]), len(got[s]))
					for k, w := range want[s] {
						requireSameBits(t, w, got[s][k], fmt.Sprintf("%v after %d steps: %s", act, s, k))
					}
				}
			}
		})
	}
}
