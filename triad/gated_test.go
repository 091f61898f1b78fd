package triad

import (
	"fmt"
	"math"
	"testing"

	"github.com/detgemm/detgemm/gemm"
	"github.com/detgemm/detgemm/gemm/ref"
	"github.com/stretchr/testify/require"
)

// gatedActs are the gated activations.
var gatedActs = []Act{ActGLU, ActReGLU, ActSwiGLU, ActGeGLU}

// gatedCols are the product columns of output j of a gated block: a at
// (j/8)·16 + j%8, b 8 columns later (the blocks-of-8 layout).
func gatedCols(j int) (ca, cb int) {
	ca = j/8*16 + j%8
	return ca, ca + 8
}

// Training a gated MLP on the CPU is deterministic (two runs, 1 and 2
// workers, one digest), lowers the loss, and keeps its rows batch
// invariant, for each gated activation and tier.
func TestGatedTrainingIsDeterministicAndBatchInvariant(t *testing.T) {
	for _, act := range gatedActs {
		for _, tc := range tierCases {
			t.Run(act.String()+"/"+tc.String(), func(t *testing.T) {
				cfg := shortConfigAct(tc, act)
				require.Equal(t, trainDigest(t, NewCPU(1), cfg, shortEpochs), trainDigest(t, NewCPU(2), cfg, shortEpochs),
					"two runs (1 and 2 workers) from one seed")
				requireLearnsInvariantly(t, NewCPU(0), cfg, 3)
			})
		}
	}
}

// The gated activations train to digests of their own: a gated act is not
// quietly run as another.
func TestGatedActsGiveTheirOwnDigests(t *testing.T) {
	seen := map[string]Act{}
	for _, act := range append([]Act{ActReLU, ActGELU}, gatedActs...) {
		d := trainDigest(t, NewCPU(0), shortConfigAct(tierCases[0], act), 1)
		prev, dup := seen[d]
		require.False(t, dup, "%v and %v give one digest", prev, act)
		seen[d] = act
	}
}

// The gated network's shapes: 19 → 40 → 24 → 11, so both hidden layers
// are gated blocks (of 80 and 48 projected columns) and the second block's
// input is the first's output; the rows cross a slab boundary.
const gatedRows = 300

var gatedSizes = []int{19, 40, 24, 11}

// newGatedMLP makes the gated network on be with random weights and
// biases (so the bias is exercised), every aux and output poisoned.
func newGatedMLP(t *testing.T, be Backend, tc tierCase, act Act) *MLP {
	t.Helper()
	m, err := NewMLP(be, MLPConfig{Sizes: gatedSizes, Tier: tc.tier, DType: tc.d, MaxRows: gatedRows, Seed: 3, Act: act})
	require.NoError(t, err)
	t.Cleanup(func() { m.Close() })
	for i, l := range m.layers {
		in, out := l.Config().In, l.Config().Out
		b := randValues(uint64(100+i), out, 0.5)
		if i == 0 {
			copy(b, adversarialBias()[:13]) // ±0, values that round to 0 or overflow at a 16-bit store, NaN, ±Inf
		}
		require.NoError(t, l.SetParams(randValues(uint64(90+i), in*out, 0.5), b))
	}
	for _, ts := range [][]*Tensor{m.a, m.aux, m.dh, {m.out}} {
		for _, x := range ts {
			v := make([]float32, x.Len())
			for i := range v {
				v[i] = math.Float32frombits(0xFFFFFFFF)
			}
			require.NoError(t, be.Write(x, v))
		}
	}
	return m
}

// refMatmulF32 is the hand-composed product of a gated epilogue: the same
// request with the Default (or Bias) epilogue onto an f32 output.
func refMatmulF32(t *testing.T, tc tierCase, r ref.MatmulRequest) []float32 {
	t.Helper()
	out := make([]float32, r.M*r.N)
	r.D = ref.Values(out)
	o := NewCPU(2).refOptions(tc.tier, tc.d)
	o.Out = ref.F32
	require.NoError(t, o.Matmul(r))
	return out
}

// halves gathers a block's a and b [rows, w] from a product [rows, 2w] in
// the blocks-of-8 layout.
func halves(v []float32, rows, w int) (a, b []float32) {
	a, b = make([]float32, rows*w), make([]float32, rows*w)
	for r := range rows {
		for j := range w {
			ca, cb := gatedCols(j)
			a[r*w+j], b[r*w+j] = v[r*2*w+ca], v[r*2*w+cb]
		}
	}
	return a, b
}

// storedBits are values rounded once to d, as a tensor of d stores them
// (f32: their bits).
func storedBits(d DType, v []float32) []uint32 {
	out := make([]uint32, len(v))
	for i, x := range v {
		if d == F32 {
			out[i] = math.Float32bits(x)
		} else {
			out[i] = uint32(d.FromF32(x))
		}
	}
	return out
}

// A gated MLP's forward is, bit for bit, the composition by hand: per
// block the product with the Bias epilogue onto f32 (ref.Options.Matmul),
// ref.GatedForward of its gathered halves rounded to the layer's dtype
// (and the aux the product rounded to that dtype); then the last layer's
// Forward. And the product back into a block (DGated…) is the product
// onto f32 followed by ref.GatedBackward from the block's aux, scattered
// to the layout. Every tier, every gated activation, every output
// poisoned first.
func TestGatedMLPForwardEqualsHandComposedReference(t *testing.T) {
	for _, act := range gatedActs {
		for _, tc := range tierCases {
			t.Run(act.String()+"/"+tc.String(), func(t *testing.T) {
				be := NewCPU(2)
				m := newGatedMLP(t, be, tc, act)
				x := tensorOf(t, be, tc.d, gatedRows, gatedSizes[0], adversarial(7, gatedRows, gatedSizes[0]))
				y, err := m.Forward(x)
				require.NoError(t, err)

				in := x
				last := len(m.layers) - 1
				for i, l := range m.layers[:last] {
					w := gatedSizes[i+1]
					h := refMatmulF32(t, tc, ref.MatmulRequest{M: gatedRows, N: 2 * w, K: l.Config().In, A: operand(in), B: operand(l.Work()),
						Alpha: 1, Bias: l.B().f32, Epilogue: ref.Bias})
					requireSameBits(t, storedBits(tc.d, h), bitsOf(t, be, m.aux[i]), fmt.Sprintf("block %d aux", i))
					a, b := halves(h, gatedRows, w)
					out := make([]float32, gatedRows*w)
					require.NoError(t, ref.GatedForward(act.gate(), tc.d, out, a, b))
					requireSameBits(t, storedBits(tc.d, out), bitsOf(t, be, m.a[i]), fmt.Sprintf("block %d output", i))
					in = tensorOf(t, be, tc.d, gatedRows, w, out) // exact: out holds values of d
				}
				l := m.layers[last]
				want := poisoned(t, be, tc.d, gatedRows, l.Config().Out)
				require.NoError(t, be.refOptions(tc.tier, tc.d).Forward(operand(want), operand(in), operand(l.Work()), l.B().f32,
					gatedRows, l.Config().In, l.Config().Out))
				requireSameBits(t, bitsOf(t, be, want), bitsOf(t, be, y), "the network's output")

				// The product back into block 0 from block 1's projection
				// gradient: dh0 = DGated(dy·W1ᵀ) from block 0's aux.
				w0, k := gatedSizes[1], m.layers[1].Config().Out
				dy := tensorOf(t, be, tc.d, gatedRows, k, adversarial(8, gatedRows, k))
				dh := poisoned(t, be, tc.d, gatedRows, 2*w0)
				require.NoError(t, be.dxAct(tc.tier, act, dy, m.layers[1].Work(), m.aux[0], dh, nil))
				v := refMatmulF32(t, tc, ref.MatmulRequest{M: gatedRows, N: w0, K: k, TransB: true, A: operand(dy), B: operand(m.layers[1].Work()),
					Alpha: 1, Epilogue: ref.Default})
				auxA, auxB := halves(values(m.aux[0]), gatedRows, w0)
				da, db := make([]float32, len(v)), make([]float32, len(v))
				require.NoError(t, ref.GatedBackward(act.gate(), tc.d, da, db, v, auxA, auxB))
				grad := make([]float32, gatedRows*2*w0)
				for r := range gatedRows {
					for j := range w0 {
						ca, cb := gatedCols(j)
						grad[r*2*w0+ca], grad[r*2*w0+cb] = da[r*w0+j], db[r*w0+j]
					}
				}
				requireSameBits(t, storedBits(tc.d, grad), bitsOf(t, be, dh), "dh of block 0")
			})
		}
	}
}

// A gated MLP's hidden widths must be multiples of 8 (the input and output
// widths need not be): NewMLP names Sizes, NewRun names Hidden, both with
// ErrShape. The same widths are fine for ReLU and GELU.
func TestGatedMLPRefusesBadWidths(t *testing.T) {
	cpu := NewCPU(1)
	for _, c := range []struct {
		sizes []int
		ok    bool
	}{
		{[]int{4, 12, 3}, false},
		{[]int{4, 16, 20, 3}, false},
		{[]int{4, 20, 16, 3}, false},
		{[]int{4, 1, 3}, false},
		{[]int{5, 16, 3}, true},
		{[]int{5, 8, 24, 7}, true},
		{[]int{5, 3}, true}, // no hidden layer
	} {
		for _, act := range append([]Act{ActReLU, ActGELU}, gatedActs...) {
			t.Run(fmt.Sprint(act, c.sizes), func(t *testing.T) {
				m, err := NewMLP(cpu, MLPConfig{Sizes: c.sizes, Tier: gemm.TierF32, DType: F32, MaxRows: 4, Act: act})
				if c.ok || !act.Gated() {
					require.NoError(t, err)
					require.NoError(t, m.Close())
					return
				}
				require.ErrorIs(t, err, ErrShape)
				var e *Error
				require.ErrorAs(t, err, &e)
				require.Equal(t, "Sizes", e.Arg)
				require.Equal(t, "NewMLP", e.Op)
			})
		}
	}
	for _, act := range gatedActs {
		cfg := shortConfigAct(tierCases[0], act)
		cfg.Hidden = 20
		_, err := NewRun(cpu, cfg)
		require.ErrorIs(t, err, ErrShape)
		var e *Error
		require.ErrorAs(t, err, &e)
		require.Equal(t, "Hidden", e.Arg)
	}
}

// Each gated block's Linear is In → 2·width and its output width wide;
// the block's aux and gradient are 2·width wide.
func TestGatedMLPShapes(t *testing.T) {
	m := newGatedMLP(t, NewCPU(1), tierCases[0], ActSwiGLU)
	for i, l := range m.layers {
		require.Equal(t, gatedSizes[i], l.Config().In, "layer %d", i)
		if i == len(m.layers)-1 {
			require.Equal(t, gatedSizes[i+1], l.Config().Out)
			continue
		}
		require.Equal(t, 2*gatedSizes[i+1], l.Config().Out, "layer %d", i)
		require.Equal(t, gatedSizes[i+1], m.a[i].Cols())
		require.Equal(t, 2*gatedSizes[i+1], m.aux[i].Cols())
		require.Equal(t, 2*gatedSizes[i+1], m.dh[i].Cols())
	}
}
