package triad

import (
	"errors"
	"slices"
	"testing"

	"github.com/detgemm/detgemm/gemm"
	"github.com/detgemm/detgemm/gemm/ref"
	"github.com/stretchr/testify/require"
)

// sparseCases are the activation dtypes of the 2:4 sparse tests (the
// tensor-core tier only).
var sparseCases = []tierCase{{gemm.TierTensorCore, BF16}, {gemm.TierTensorCore, F16}}

// sparseConfig is a short 2:4 sparse run: widths multiples of 16, 300 rows
// a step (two slabs in the dW, db and loss plans).
func sparseConfig(d DType, act Act) TrainConfig {
	return TrainConfig{In: 16, Hidden: 32, Out: 5, Tier: gemm.TierTensorCore, DType: d, Batch: 300, Steps: 3, Seed: 42,
		Opt: SGD{LR: 0.05, Momentum: 0.9}, Act: act, Sparse24: true}
}

// kept24 reports whether row k of column n is kept by the pattern of a
// K×N weight.
func kept24(pattern []uint32, K, n, k int) bool {
	mw := ref.Meta24Words(K)
	q := k / 4
	b := pattern[n*mw+q/8] >> (4 * uint(q%8))
	return k%4 == int(b&3) || k%4 == int(b>>2&3)
}

// requireMasked fails unless every element of w (bits of a K×N weight) at
// a row the pattern drops is +0, and returns how many kept elements are
// nonzero.
func requireMasked(t *testing.T, pattern, w []uint32, K, N int, what string) (nonzeroKept int) {
	t.Helper()
	require.Len(t, w, K*N, what)
	for k := range K {
		for n := range N {
			switch v := w[k*N+n]; {
			case !kept24(pattern, K, n, k):
				require.Zerof(t, v, "%s: pruned element (%d, %d) is %#x, not +0", what, k, n, v)
			case v&0x7FFFFFFF != 0:
				nonzeroKept++
			}
		}
	}
	return nonzeroKept
}

// A sparse layer is refused outside the tensor-core tier and for widths
// that are not multiples of 16, with the field named; a sparse network
// also for a gated activation. Nothing falls back to a dense layer.
func TestSparse24RefusesWhatItCannotRun(t *testing.T) {
	be := NewCPU(1)
	for _, c := range []struct {
		name     string
		err      error
		sentinel error
		arg      string
	}{
		{"linear f32 tier", second(NewLinear(be, LinearConfig{In: 16, Out: 4, Tier: gemm.TierF32, DType: F32, Sparse24: true})), gemm.ErrTier, "Tier"},
		{"linear typed tier", second(NewLinear(be, LinearConfig{In: 16, Out: 4, Tier: gemm.TierTyped, DType: BF16, Sparse24: true})), gemm.ErrTier, "Tier"},
		{"linear In 24", second(NewLinear(be, LinearConfig{In: 24, Out: 4, Tier: gemm.TierTensorCore, DType: BF16, Sparse24: true})), ErrShape, "In"},
		{"mlp typed tier", second(NewMLP(be, MLPConfig{Sizes: []int{16, 16, 4}, Tier: gemm.TierTyped, DType: F16, MaxRows: 4, Sparse24: true})), gemm.ErrTier, "Tier"},
		{"mlp hidden 24", second(NewMLP(be, MLPConfig{Sizes: []int{16, 24, 4}, Tier: gemm.TierTensorCore, DType: BF16, MaxRows: 4, Sparse24: true})), ErrShape, "Sizes"},
		{"mlp gated", second(NewMLP(be, MLPConfig{Sizes: []int{16, 16, 4}, Tier: gemm.TierTensorCore, DType: BF16, MaxRows: 4, Act: ActSwiGLU, Sparse24: true})), ErrConfig, "Act"},
		{"run In 12", second(NewRun(be, func() TrainConfig { c := sparseConfig(BF16, ActReLU); c.In = 12; return c }())), ErrShape, "In"},
		{"run Hidden 24", second(NewRun(be, func() TrainConfig { c := sparseConfig(BF16, ActReLU); c.Hidden = 24; return c }())), ErrShape, "Hidden"},
		{"run typed", second(NewRun(be, func() TrainConfig { c := sparseConfig(BF16, ActReLU); c.Tier = gemm.TierTyped; return c }())), gemm.ErrTier, "Tier"},
	} {
		t.Run(c.name, func(t *testing.T) {
			require.ErrorIs(t, c.err, c.sentinel)
			var e *Error
			require.True(t, errors.As(c.err, &e), "%v", c.err)
			require.Equal(t, c.arg, e.Arg)
		})
	}
	dense, err := NewLinear(be, LinearConfig{In: 16, Out: 4, Tier: gemm.TierTensorCore, DType: BF16})
	require.NoError(t, err)
	_, err = dense.Pattern24()
	require.ErrorIs(t, err, ErrConfig)
}

func second[T any](_ T, err error) error { return err }

// A sparse Linear prunes its weight by magnitude (ref.Prune24), keeps that
// pattern, and forwards with ref's sparse forward on the rounded pruned
// weight compressed (the Hopper model); dX reads the dense masked weight.
func TestSparse24LinearIsTheSparseReference(t *testing.T) {
	const M, In, Out = 37, 48, 21
	for _, tc := range sparseCases {
		t.Run(tc.String(), func(t *testing.T) {
			be := NewCPU(2)
			l, err := NewLinear(be, LinearConfig{In: In, Out: Out, Tier: tc.tier, DType: tc.d, Sparse24: true})
			require.NoError(t, err)
			w, b := randValues(1, In*Out, 0.5), randValues(2, Out, 0.1)
			require.NoError(t, l.SetParams(w, b))

			pruned := slices.Clone(w)
			require.NoError(t, ref.Prune24(ref.F32, ref.Values(pruned), In, Out, Out))
			requireSameBits(t, f32Bits(pruned), bitsOf(t, be, l.W()), "master = Prune24(w)")
			requireSameBits(t, refRound(tc.d, pruned), bitsOf(t, be, l.Work()), "work = RNE(master)")
			pattern, err := l.Pattern24()
			require.NoError(t, err)
			require.Positive(t, requireMasked(t, pattern, f32Bits(pruned), In, Out, "master"))

			xv, dyv := randValues(3, M*In, 1), randValues(4, M*Out, 1)
			x, dy := tensorOf(t, be, tc.d, M, In, xv), tensorOf(t, be, tc.d, M, Out, dyv)
			y, err := be.Alloc(tc.d, M, Out)
			require.NoError(t, err)
			dx, err := be.Alloc(tc.d, M, In)
			require.NoError(t, err)
			require.NoError(t, l.Forward(x, y))
			require.NoError(t, l.Backward(x, dy, dx))

			wr := make([]uint16, In*Out)
			require.NoError(t, ref.Round(tc.d, wr, pruned))
			s, err := ref.Compress24(tc.d, ref.Bits(wr), In, Out, Out)
			require.NoError(t, err)
			require.Equal(t, pattern, s.Meta, "the pattern is the compressed pruned weight's metadata")
			xr := make([]uint16, M*In)
			require.NoError(t, ref.Round(tc.d, xr, xv))
			wantY := make([]uint16, M*Out)
			o := ref.Options{Tier: ref.TensorCore, In: tc.d, Out: tc.d, Model: ref.Hopper}
			require.NoError(t, o.Sparse24Forward(ref.Sparse24Request{M: M, N: Out, K: In, X: ref.Bits(xr), Values: s.Values, Meta: s.Meta,
				Y: ref.Bits(wantY), Bias: b, Epilogue: ref.Bias}))
			requireSameBits(t, u16Bits(wantY), bitsOf(t, be, y), "y")

			wantDX := make([]float32, M*In)
			od := ref.Options{Tier: ref.TensorCore, In: tc.d, Out: ref.F32, Model: ref.Hopper}
			require.NoError(t, od.DX(ref.Values(wantDX), ref.Values(rounded(tc.d, dyv)), ref.Bits(wr), M, Out, In))
			requireSameBits(t, refRound(tc.d, wantDX), bitsOf(t, be, dx), "dx (dense, masked weight)")
		})
	}
}

func u8Bits(v []uint8) []uint32 {
	out := make([]uint32, len(v))
	for i, h := range v {
		out[i] = uint32(h)
	}
	return out
}

func u16Bits(v []uint16) []uint32 {
	out := make([]uint32, len(v))
	for i, h := range v {
		out[i] = uint32(h)
	}
	return out
}

// sparseState is a sparse network's 2:4 state and forward outputs, as
// bits: per layer the master, the working copy, the pattern, the
// compressed values and metadata; and the forward's hidden outputs, aux
// and output on x.
func sparseState(t *testing.T, m *MLP, x *Tensor) map[string][]uint32 {
	t.Helper()
	be := m.be
	out := map[string][]uint32{}
	for i, l := range m.layers {
		p := string(rune('0' + i))
		out["W"+p], out["work"+p], out["values"+p] = bitsOf(t, be, l.W()), bitsOf(t, be, l.Work()), bitsOf(t, be, l.sp.values)
		pattern, err := be.readWords(l.sp.pattern)
		require.NoError(t, err)
		meta, err := be.readWords(l.sp.meta)
		require.NoError(t, err)
		out["pattern"+p], out["meta"+p] = pattern, meta
	}
	y, err := m.Forward(x)
	require.NoError(t, err)
	out["y"] = bitsOf(t, be, y)
	for i := range m.a {
		p := string(rune('0' + i))
		out["a"+p] = bitsOf(t, be, rowsOf(m.a[i], x.rows))
		if m.aux[i].mask {
			out["aux"+p] = u8Bits(maskOf(t, rowsOf(m.aux[i], x.rows)))
		} else {
			out["aux"+p] = bitsOf(t, be, rowsOf(m.aux[i], x.rows))
		}
	}
	return out
}

// After every step the master's and the working copy's pruned elements are
// +0 and the pattern is the one SetParams fixed, while the kept weights
// train; the forward's compressed weight is the working copy's.
func TestSparse24MaskIsKeptByEveryStep(t *testing.T) {
	for _, act := range []Act{ActReLU, ActGELU} {
		t.Run(act.String(), func(t *testing.T) {
			cfg := sparseConfig(BF16, act)
			r, err := NewRun(NewCPU(0), cfg)
			require.NoError(t, err)
			defer r.Close()
			var patterns [][]uint32
			for _, l := range r.Model.layers {
				p, err := l.Pattern24()
				require.NoError(t, err)
				patterns = append(patterns, p)
			}
			first := slices.Clone(bitsOf(t, r.be, r.Model.layers[0].W()))
			for s := range 6 {
				x, tt := r.Batch(s % cfg.Steps)
				require.NoError(t, r.Model.Step(x, tt))
				for i, l := range r.Model.layers {
					K, N := l.cfg.In, l.cfg.Out
					p, err := l.Pattern24()
					require.NoError(t, err)
					require.Equal(t, patterns[i], p, "the pattern is fixed")
					require.Positive(t, requireMasked(t, p, bitsOf(t, r.be, l.W()), K, N, "master"))
					requireMasked(t, p, bitsOf(t, r.be, l.Work()), K, N, "work")
					// The velocity of a pruned weight is not zero: the
					// gradient is dense, and the mask undoes its step.
					w16 := make([]uint16, K*N)
					for j, v := range bitsOf(t, r.be, l.Work()) {
						w16[j] = uint16(v)
					}
					require.NoError(t, ref.Prune24(l.cfg.DType, ref.Bits(w16), K, N, N))
					c, err := ref.Compress24(l.cfg.DType, ref.Bits(w16), K, N, N)
					require.NoError(t, err)
					require.Equal(t, u16Bits(c.Values), bitsOf(t, r.be, l.sp.values), "values = PruneCompress24(work)")
				}
			}
			require.NotEqual(t, first, bitsOf(t, r.be, r.Model.layers[0].W()), "the kept weights train")
			nz := 0
			for _, v := range bitsOf(t, r.be, r.Model.layers[0].vw) {
				if v&0x7FFFFFFF != 0 {
					nz++
				}
			}
			require.Greater(t, nz, r.Model.layers[0].cfg.In*r.Model.layers[0].cfg.Out/2, "dense gradients: pruned weights have velocities too")
		})
	}
}

// Sparse training is run-to-run identical (1 and 2 workers), batch
// invariant, reduces the loss, and is not the dense network's.
func TestSparse24TrainingIsDeterministicAndBatchInvariant(t *testing.T) {
	for _, act := range []Act{ActReLU, ActGELU} {
		for _, tc := range sparseCases {
			t.Run(act.String()+"/"+tc.String(), func(t *testing.T) {
				cfg := sparseConfig(tc.d, act)
				a := trainDigest(t, NewCPU(1), cfg, shortEpochs)
				require.Equal(t, a, trainDigest(t, NewCPU(2), cfg, shortEpochs), "two runs (1 and 2 workers) from one seed")
				dense := cfg
				dense.Sparse24 = false
				require.NotEqual(t, a, trainDigest(t, NewCPU(0), dense, shortEpochs), "the sparse network is not the dense one")

				requireLearnsInvariantly(t, NewCPU(2), cfg, 3)
			})
		}
	}
}

// A sparse layer whose parameters were never set holds the zero weight's
// 2:4 state (every group keeps rows 0 and 1) and forwards to +0 (found by
// FuzzTriadCPU: the metadata was all zero, which no pattern is).
func TestSparse24LayerRunsBeforeSetParams(t *testing.T) {
	be := NewCPU(1)
	l, err := NewLinear(be, LinearConfig{In: 48, Out: 3, Tier: gemm.TierTensorCore, DType: BF16, Sparse24: true})
	require.NoError(t, err)
	defer l.Close()
	p, err := l.Pattern24()
	require.NoError(t, err)
	require.Equal(t, []uint32{0x44444444, 0x44444444, 0x44444444, 0x44444444, 0x44444444, 0x44444444}, p)
	x := tensorOf(t, be, BF16, 2, 48, randValues(1, 96, 1))
	y := poisoned(t, be, BF16, 2, 3)
	require.NoError(t, l.Forward(x, y))
	require.Equal(t, make([]uint32, 6), bitsOf(t, be, y))
}
