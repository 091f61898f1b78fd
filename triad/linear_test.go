package triad

import (
	"math"
	"testing"

	"github.com/detgemm/detgemm/gemm"
	"github.com/detgemm/detgemm/gemm/ref"
	"github.com/stretchr/testify/require"
)

// refRound returns the f32 result v stored in dtype d, widened back.
func refRound(d DType, v []float32) []uint32 {
	out := make([]uint32, len(v))
	for i, x := range v {
		if d.Half() {
			out[i] = uint32(d.FromF32(x))
		} else {
			out[i] = math.Float32bits(x)
		}
	}
	return out
}

func TestLinearMatchesTheReferenceDirectly(t *testing.T) {
	const M, In, Out = 300, 70, 33
	for _, tc := range tierCases {
		t.Run(tc.String(), func(t *testing.T) {
			be := NewCPU(2)
			l, err := NewLinear(be, LinearConfig{In: In, Out: Out, Tier: tc.tier, DType: tc.d})
			require.NoError(t, err)
			w, b := randValues(1, In*Out, 0.5), randValues(2, Out, 0.1)
			require.NoError(t, l.SetParams(w, b))
			xv, dyv := randValues(3, M*In, 1), randValues(4, M*Out, 1)
			x, dy := tensorOf(t, be, tc.d, M, In, xv), tensorOf(t, be, tc.d, M, Out, dyv)
			y, err := be.Alloc(tc.d, M, Out)
			require.NoError(t, err)
			dx, err := be.Alloc(tc.d, M, In)
			require.NoError(t, err)
			require.NoError(t, l.Forward(x, y))
			require.NoError(t, l.Backward(x, dy, dx))

			// The reference on the exact values the layer holds.
			xr, dyr, wr := rounded(tc.d, xv), rounded(tc.d, dyv), rounded(tc.d, w)
			wantY, wantDX, wantDW := make([]float32, M*Out), make([]float32, M*In), make([]float32, In*Out)
			if tc.tier == gemm.TierTensorCore { // the Hopper model, as documented for the CPU backend
				o := ref.Options{Tier: ref.TensorCore, In: tc.d, Out: ref.F32, Model: ref.Hopper}
				require.NoError(t, o.Forward(ref.Values(wantY), ref.Values(xr), ref.Values(wr), b, M, In, Out))
				require.NoError(t, o.DX(ref.Values(wantDX), ref.Values(dyr), ref.Values(wr), M, Out, In))
				require.NoError(t, o.DW(wantDW, ref.Values(xr), ref.Values(dyr), M, In, Out))
			} else {
				o := ref.Options{Tier: ref.IEEE, In: ref.F32}
				require.NoError(t, o.Forward(ref.Values(wantY), ref.Values(xr), ref.Values(wr), b, M, In, Out))
				require.NoError(t, o.DX(ref.Values(wantDX), ref.Values(dyr), ref.Values(wr), M, Out, In))
				require.NoError(t, o.DW(wantDW, ref.Values(xr), ref.Values(dyr), M, In, Out))
			}
			requireSameBits(t, refRound(tc.d, wantY), bitsOf(t, be, y), "y")
			requireSameBits(t, refRound(tc.d, wantDX), bitsOf(t, be, dx), "dx")
			requireSameBits(t, f32Bits(wantDW), bitsOf(t, be, l.DW()), "dW")
			requireSameBits(t, f32Bits(biasGradByHand(dyr, M, Out, nil)), bitsOf(t, be, l.DB()), "db")
		})
	}
}

// biasGradByHand is the documented plan written out independently: slabs of
// 256 rows, each an ascending chain from +0, folded into db in order.
func biasGradByHand(dy []float32, rows, cols int, db []float32) []float32 {
	out := make([]float32, cols)
	copy(out, db)
	for c := range cols {
		for s := 0; s*256 < rows; s++ {
			var p float32
			for r := s * 256; r < rows && r < (s+1)*256; r++ {
				p = float32(p + dy[r*cols+c])
			}
			out[c] = float32(out[c] + p)
		}
	}
	return out
}

func TestBiasGradFollowsTheSlabPlan(t *testing.T) {
	// Values whose sum depends on the order: a large value cancels only if
	// the chain meets it in the documented place.
	const rows, cols = 700, 3
	dy := make([]float32, rows*cols)
	for r := range rows {
		for c := range cols {
			dy[r*cols+c] = float32(1+r%7) * 1e-3
		}
	}
	dy[0], dy[257*cols+1], dy[600*cols+2] = 1e8, -1e8, 3e7
	be := NewCPU(1)
	x := tensorOf(t, be, F32, rows, cols, dy)
	db := tensorOf(t, be, F32, 1, cols, []float32{0.5, -0.25, 0})
	require.NoError(t, be.biasGrad(x, db))
	requireSameBits(t, f32Bits(biasGradByHand(dy, rows, cols, []float32{0.5, -0.25, 0})), bitsOf(t, be, db), "db")
}

// Gradients accumulated over micro-batches split at multiples of 256 rows
// have the bits of one call on the whole batch.
func TestGradientsOfMicroBatchesAt256RowsEqualOneCall(t *testing.T) {
	const M, In, Out = 700, 20, 9
	for _, tc := range tierCases {
		t.Run(tc.String(), func(t *testing.T) {
			be := NewCPU(2)
			x := tensorOf(t, be, tc.d, M, In, randValues(5, M*In, 1))
			dy := tensorOf(t, be, tc.d, M, Out, randValues(6, M*Out, 1))
			whole, err := NewLinear(be, LinearConfig{In: In, Out: Out, Tier: tc.tier, DType: tc.d})
			require.NoError(t, err)
			parts, err := NewLinear(be, LinearConfig{In: In, Out: Out, Tier: tc.tier, DType: tc.d})
			require.NoError(t, err)
			require.NoError(t, whole.Backward(x, dy, nil))
			for _, span := range [][2]int{{0, 256}, {256, 512}, {512, M}} {
				xs, err := x.View(span[0], span[1]-span[0])
				require.NoError(t, err)
				dys, err := dy.View(span[0], span[1]-span[0])
				require.NoError(t, err)
				require.NoError(t, parts.Backward(xs, dys, nil))
			}
			requireSameBits(t, bitsOf(t, be, whole.DW()), bitsOf(t, be, parts.DW()), "dW")
			requireSameBits(t, bitsOf(t, be, whole.DB()), bitsOf(t, be, parts.DB()), "db")
		})
	}
}

func TestSGDStepBits(t *testing.T) {
	nan := float32(math.NaN())
	negZero := float32(math.Copysign(0, -1))
	sub := math.Float32frombits(1) // smallest subnormal
	w := []float32{1, -2.5, 0.1, negZero, 3e38, sub, 7, 1e-3, 0.3}
	v := []float32{0, 0.5, -0.2, negZero, 3e38, sub, nan, 1e-3, 0.7}
	g := []float32{0.25, 1e-7, 0.3, negZero, 3e38, sub, 1, nan, -0.7}
	const lr, mu = float32(0.05), float32(0.9)
	for _, d := range []DType{F32, BF16, F16} {
		t.Run(d.String(), func(t *testing.T) {
			be := NewCPU(1)
			n := len(w)
			W, V, G := tensorOf(t, be, F32, 1, n, w), tensorOf(t, be, F32, 1, n, v), tensorOf(t, be, F32, 1, n, g)
			var work *Tensor
			if d.Half() {
				work = tensorOf(t, be, d, 1, n, make([]float32, n))
			}
			require.NoError(t, be.sgd(W, V, G, work, lr, mu))
			for i := range n {
				// The documented operations, each rounded, NaN canonical.
				vi := float32(float32(mu*v[i]) + g[i])
				wi := float32(w[i] - float32(lr*vi))
				requireSameBits(t, []uint32{canonBits(vi), canonBits(wi), 0}, []uint32{
					bitsOf(t, be, V)[i], bitsOf(t, be, W)[i], bitsOf(t, be, G)[i]}, "v, w, g")
				if work != nil {
					require.Equal(t, uint32(d.FromF32(wi)), bitsOf(t, be, work)[i], "working copy")
				}
			}
		})
	}
}

func canonBits(f float32) uint32 {
	if f != f {
		return ref.CanonicalNaN32
	}
	return math.Float32bits(f)
}

func TestReLUDefinesNaNAndNegativeZero(t *testing.T) {
	nan := float32(math.NaN())
	negZero := float32(math.Copysign(0, -1))
	in := []float32{2, -2, 0, negZero, nan, float32(math.Inf(1)), float32(math.Inf(-1)), 1e-40}
	wantF32 := []uint32{math.Float32bits(2), 0, 0, 0, ref.CanonicalNaN32, 0x7f800000, 0, math.Float32bits(1e-40)}
	dy := []float32{5, 5, 5, 5, 5, 5, 5, 5}
	for _, d := range []DType{F32, BF16, F16} {
		t.Run(d.String(), func(t *testing.T) {
			be := NewCPU(1)
			x := tensorOf(t, be, d, 1, len(in), in)
			y := tensorOf(t, be, d, 1, len(in), make([]float32, len(in)))
			require.NoError(t, be.relu(x, y))
			got := bitsOf(t, be, y)
			xs := bitsOf(t, be, x)
			gy := tensorOf(t, be, d, 1, len(in), dy)
			dx := tensorOf(t, be, d, 1, len(in), make([]float32, len(in)))
			require.NoError(t, be.reluGrad(x, gy, dx))
			gd := bitsOf(t, be, dx)
			five := bitsOf(t, be, gy)[0]
			for i := range in {
				want := wantF32[i]
				if d.Half() {
					switch {
					case i == 4:
						want = uint32(half16NaN)
					case want != 0:
						want = xs[i] // the input's own bits (0 for values that round to 0)
					}
				}
				require.Equal(t, want, got[i], "relu(%v)", in[i])
				wantGrad := uint32(0)
				switch {
				case i == 4 && d.Half():
					wantGrad = uint32(half16NaN)
				case i == 4:
					wantGrad = ref.CanonicalNaN32
				case want != 0:
					wantGrad = five
				}
				require.Equal(t, wantGrad, gd[i], "relu'(%v)", in[i])
			}
		})
	}
}

func TestMSELossAndGradientFollowTheDocumentedOrder(t *testing.T) {
	const rows, cols = 130, 5 // 650 elements: three slabs, the last partial
	yv, tv := randValues(7, rows*cols, 2), randValues(8, rows*cols, 2)
	be := NewCPU(1)
	y, tt := tensorOf(t, be, F32, rows, cols, yv), tensorOf(t, be, F32, rows, cols, tv)
	loss := tensorOf(t, be, F32, 1, 2, []float32{9, 1})
	require.NoError(t, be.mseLoss(y, tt, loss))
	n := rows * cols
	var total float32
	for s := 0; s*256 < n; s++ {
		var p float32
		for i := s * 256; i < n && i < (s+1)*256; i++ {
			e := float32(yv[i] - tv[i])
			p = ref.FMA32(e, e, p)
		}
		if s == 0 {
			total = p
		} else {
			total = float32(total + p)
		}
	}
	l := float32(total / float32(n))
	requireSameBits(t, f32Bits([]float32{l, float32(1 + l)}), bitsOf(t, be, loss), "loss")

	dy := tensorOf(t, be, F32, rows, cols, make([]float32, n))
	require.NoError(t, be.mseGrad(y, tt, dy))
	scale := float32(2) / float32(n)
	want := make([]float32, n)
	for i := range want {
		want[i] = float32(scale * float32(yv[i]-tv[i]))
	}
	requireSameBits(t, f32Bits(want), bitsOf(t, be, dy), "dy")
}

func TestBadInputsAreTypedErrors(t *testing.T) {
	be, other := NewCPU(1), NewCPU(1)
	l, err := NewLinear(be, LinearConfig{In: 4, Out: 3, Tier: gemm.TierF32, DType: F32})
	require.NoError(t, err)
	x := tensorOf(t, be, F32, 2, 4, make([]float32, 8))
	y := tensorOf(t, be, F32, 2, 3, make([]float32, 6))
	half := tensorOf(t, be, BF16, 2, 4, make([]float32, 8))
	foreign := tensorOf(t, other, F32, 2, 3, make([]float32, 6))
	wrongRows := tensorOf(t, be, F32, 3, 3, make([]float32, 9))
	for _, tt := range []struct {
		name string
		err  error
		want error
	}{
		{"nil x", l.Forward(nil, y), ErrNilTensor},
		{"nil y", l.Forward(x, nil), ErrNilTensor},
		{"nil dy", l.Backward(x, nil, nil), ErrNilTensor},
		{"x columns", l.Forward(y, y), ErrShape},
		{"y rows", l.Forward(x, wrongRows), ErrShape},
		{"dx shape", l.Backward(x, y, y), ErrShape},
		{"x dtype", l.Forward(half, y), ErrDType},
		{"other backend", l.Forward(x, foreign), ErrBackend},
		{"params length", l.SetParams(make([]float32, 3), make([]float32, 3)), ErrShape},
		{"write length", be.Write(x, make([]float32, 3)), ErrShape},
	} {
		t.Run(tt.name, func(t *testing.T) {
			require.ErrorIs(t, tt.err, tt.want)
			var e *Error
			require.ErrorAs(t, tt.err, &e)
		})
	}
	for _, tt := range []struct {
		name string
		cfg  LinearConfig
		want error
	}{
		{"f32 tier with bf16", LinearConfig{In: 1, Out: 1, Tier: gemm.TierF32, DType: BF16}, ErrDType},
		{"typed tier with f32", LinearConfig{In: 1, Out: 1, Tier: gemm.TierTyped, DType: F32}, ErrDType},
		{"tensor cores with f32", LinearConfig{In: 1, Out: 1, Tier: gemm.TierTensorCore, DType: F32}, ErrDType},
		{"no tier", LinearConfig{In: 1, Out: 1, DType: F32}, gemm.ErrTier},
		{"zero width", LinearConfig{In: 0, Out: 1, Tier: gemm.TierF32, DType: F32}, ErrShape},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := NewLinear(be, tt.cfg)
			require.ErrorIs(t, err, tt.want)
		})
	}
	_, err = be.Alloc(DType(9), 1, 1)
	require.ErrorIs(t, err, ErrDType)
	_, err = x.View(1, 2)
	require.ErrorIs(t, err, ErrShape)
	require.NoError(t, l.Close())
	require.ErrorIs(t, l.Forward(x, y), ErrClosed)
	_, err = NewMLP(be, MLPConfig{Sizes: []int{4}, Tier: gemm.TierF32, DType: F32, MaxRows: 1})
	require.ErrorIs(t, err, ErrConfig)
	m, err := NewMLP(be, MLPConfig{Sizes: []int{4, 3}, Tier: gemm.TierF32, DType: F32, MaxRows: 1})
	require.NoError(t, err)
	require.ErrorIs(t, m.Step(x, y), ErrShape, "more rows than MaxRows")
	_, err = m.CaptureStep(mustView(t, x, 0, 1), mustView(t, y, 0, 1))
	require.ErrorIs(t, err, ErrNoGraphs)
}

func mustView(t *testing.T, x *Tensor, r0, n int) *Tensor {
	v, err := x.View(r0, n)
	require.NoError(t, err)
	return v
}
