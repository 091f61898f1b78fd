package gemm

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/detgemm/detgemm/cudaload"
	"github.com/detgemm/detgemm/gemm/internal/entries"
	"github.com/detgemm/detgemm/gemm/ref"
	"github.com/stretchr/testify/require"
)

// mmDesc is a valid description to vary in the tables.
func mmDesc() MatmulDesc {
	return MatmulDesc{Tier: TierTensorCore, In: BF16, Out: BF16, M: 300, N: 256, K: 512, Alpha: 1, Epilogue: GeluAuxBias}
}

// TestMatmulPlanRefusesBadDescriptions: each bad field is a typed error
// naming it, and nothing is planned.
func TestMatmulPlanRefusesBadDescriptions(t *testing.T) {
	e, _ := fakeEngine(fakeDevices[0])
	for _, c := range []struct {
		name string
		mod  func(*MatmulDesc)
		arg  string
		err  error
	}{
		{"zero M", func(d *MatmulDesc) { d.M = 0 }, "M", ErrDimension},
		{"negative K", func(d *MatmulDesc) { d.K = -3 }, "K", ErrDimension},
		{"lda below the row", func(d *MatmulDesc) { d.LDA = 511 }, "LDA", ErrLeadingDim},
		{"lda negative", func(d *MatmulDesc) { d.LDA = -1 }, "LDA", ErrLeadingDim},
		{"transposed lda below M", func(d *MatmulDesc) { d.TransA, d.LDA = true, 299 }, "LDA", ErrLeadingDim},
		{"ldb transposed below K", func(d *MatmulDesc) { d.TransB, d.LDB = true, 500 }, "LDB", ErrLeadingDim},
		{"ldd below N", func(d *MatmulDesc) { d.LDD = 255 }, "LDD", ErrLeadingDim},
		{"ldaux below N", func(d *MatmulDesc) { d.LDAux = 100 }, "LDAux", ErrLeadingDim},
		{"ldc below N with beta", func(d *MatmulDesc) { d.Beta, d.LDC = 1, 100 }, "LDC", ErrLeadingDim},
		{"ld overflowing", func(d *MatmulDesc) { d.LDD = math.MaxInt64 / 2 }, "LDD", ErrLeadingDim},
		{"unknown epilogue", func(d *MatmulDesc) { d.Epilogue = 99 }, "Epilogue", ErrEpilogue},
		{"f32 in the tensor-core tier", func(d *MatmulDesc) { d.In, d.Out = F32, F32 }, "In", ErrDType},
		{"f16 out of bf16", func(d *MatmulDesc) { d.Out = F16 }, "Out", ErrDType},
		{"no tier", func(d *MatmulDesc) { d.Tier = 0 }, "Tier", ErrTier},
		{"alpha NaN", func(d *MatmulDesc) { d.Alpha = float32(math.NaN()) }, "Alpha", ErrDimension},
		{"too many columns", func(d *MatmulDesc) { d.N = 65536 * 128 }, "N", ErrTooLarge},
	} {
		t.Run(c.name, func(t *testing.T) {
			d := mmDesc()
			c.mod(&d)
			p, err := e.Plan(d)
			require.Nil(t, p)
			require.ErrorIs(t, err, c.err)
			var ae *ArgError
			require.True(t, errors.As(err, &ae), "%v", err)
			require.Equal(t, c.arg, ae.Arg, "%v", err)
			require.ErrorIs(t, e.CanImplement(d), c.err)
		})
	}
}

// TestMatmulRunRefusesBadPointers: missing, superfluous, misaligned and
// overlapping buffers are typed errors naming the field, before anything
// is launched.
func TestMatmulRunRefusesBadPointers(t *testing.T) {
	e, _ := fakeEngine(fakeDevices[0])
	const base = cudaload.DevicePtr(1 << 40)
	good := MatmulArgs{A: base, B: base + 1<<30, D: base + 2<<30, Bias: base + 3<<30, Aux: base + 4<<30}
	for _, c := range []struct {
		name string
		desc func(*MatmulDesc)
		mod  func(*MatmulArgs)
		arg  string
		err  error
	}{
		{"no A", nil, func(a *MatmulArgs) { a.A = 0 }, "A", ErrNilPointer},
		{"no bias", nil, func(a *MatmulArgs) { a.Bias = 0 }, "Bias", ErrOperand},
		{"no aux", nil, func(a *MatmulArgs) { a.Aux = 0 }, "Aux", ErrOperand},
		{"bias unused", func(d *MatmulDesc) { d.Epilogue = GeluAux }, nil, "Bias", ErrOperand},
		{"bias gradient unused", nil, func(a *MatmulArgs) { a.BiasGrad = base + 5<<30 }, "BiasGrad", ErrOperand},
		{"no bias gradient", func(d *MatmulDesc) { d.Epilogue = BgradB }, func(a *MatmulArgs) { a.Bias, a.Aux = 0, 0 }, "BiasGrad", ErrOperand},
		{"beta without C", func(d *MatmulDesc) { d.Beta = 1 }, nil, "C", ErrOperand},
		{"misaligned D", nil, func(a *MatmulArgs) { a.D++ }, "D", ErrMisaligned},
		{"D over A", nil, func(a *MatmulArgs) { a.D = a.A + 64 }, "D", ErrAlias},
		{"aux over D", nil, func(a *MatmulArgs) { a.Aux = a.D + 2 }, "D", ErrAlias},
		{"D inside C with another ld", func(d *MatmulDesc) { d.Beta, d.LDC = 1, 512 }, func(a *MatmulArgs) { a.C = a.D }, "D", ErrAlias},
	} {
		t.Run(c.name, func(t *testing.T) {
			d := mmDesc()
			if c.desc != nil {
				c.desc(&d)
			}
			p, err := e.Plan(d)
			require.NoError(t, err)
			a := good
			if c.mod != nil {
				c.mod(&a)
			}
			err = p.Run(a)
			require.ErrorIs(t, err, c.err)
			var ae *ArgError
			require.True(t, errors.As(err, &ae), "%v", err)
			require.Equal(t, c.arg, ae.Arg, "%v", err)
		})
	}
	// In place: D == C with the same leading dimension is allowed.
	d := mmDesc()
	d.Beta = 0.5
	p, err := e.Plan(d)
	require.NoError(t, err)
	a := good
	a.C = a.D
	require.NoError(t, p.p.checkArgs(a))
}

// TestMatmulPlansRouteAndReport: requests that are Forward, DX or DW run
// those ops' kernels; the rest the general path or, on Hopper with one
// slab, the fused wgmma kernel; the precision report says the tier's
// contract.
func TestMatmulPlansRouteAndReport(t *testing.T) {
	h200, _ := fakeEngine(fakeDevices[0])
	a100, _ := fakeEngine(fakeDevices[1])
	for _, c := range []struct {
		name  string
		e     *Engine
		d     MatmulDesc
		route mmRoute
		first string
	}{
		{"forward", h200, MatmulDesc{Tier: TierTensorCore, In: BF16, Out: BF16, M: 4096, N: 4096, K: 4096, Alpha: 1, Epilogue: Bias}, mmForward, "detgemm_wg"},
		{"dx", a100, MatmulDesc{Tier: TierF32, In: F32, Out: F32, M: 512, N: 768, K: 3072, TransB: true, Alpha: 1}, mmDX, ""},
		{"dw", a100, MatmulDesc{Tier: TierTyped, In: BF16, Out: F32, M: 768, N: 3072, K: 512, TransA: true, Alpha: 1, Beta: 1}, mmDW, ""},
		// GELU and ReLU without its mask on a grid of at least a round of
		// fused tiles: the fused kernel (mmFusedMinRounds); on fewer tiles,
		// for the ReLU mask and for the bias gradients, the op's kernels
		// and the epilogue pass.
		{"forward gelu, fused", h200, MatmulDesc{Tier: TierTensorCore, In: BF16, Out: BF16, M: 4096, N: 4096, K: 4096, Alpha: 1, Epilogue: GeluAuxBias}, mmGeneral, "detgemm_wgmm128x256_gelu_nn_bf16_bf16"},
		{"forward gelu, mid", h200, MatmulDesc{Tier: TierTensorCore, In: BF16, Out: BF16, M: 2048, N: 3072, K: 768, Alpha: 1, Epilogue: GeluAuxBias}, mmGeneral, "detgemm_wgmm128x192_gelu_nn_bf16_bf16"},
		{"forward then gelu, few rows", h200, MatmulDesc{Tier: TierTensorCore, In: BF16, Out: BF16, M: 128, N: 4096, K: 4096, Alpha: 1, Epilogue: GeluAuxBias}, mmForwardEpi, "detgemm_wg"},
		// The ping-pong tile (prefersPingPong): the ReLU mask and DReLU to
		// K = 4096, GELU to K = 2048, on at least 4 rounds of its tiles.
		{"dx drelu, ping-pong", h200, MatmulDesc{Tier: TierTensorCore, In: BF16, Out: BF16, M: 4096, N: 4096, K: 4096, TransB: true, Alpha: 1, Epilogue: DReluBgrad}, mmGeneral, "detgemm_wgmm128x128p_drelu_nt_bf16_bf16"},
		{"forward gelu, ping-pong", h200, MatmulDesc{Tier: TierTensorCore, In: BF16, Out: BF16, M: 4096, N: 3072, K: 1536, Alpha: 1, Epilogue: GeluAuxBias}, mmGeneral, "detgemm_wgmm128x128p_gelu_nn_bf16_bf16"},
		{"dx then drelu, long", h200, MatmulDesc{Tier: TierTensorCore, In: BF16, Out: BF16, M: 4096, N: 4096, K: 8192, TransB: true, Alpha: 1, Epilogue: DReluBgrad}, mmDXEpi, "detgemm_wg"},
		{"forward then relu with its mask, few rounds", h200, MatmulDesc{Tier: TierTensorCore, In: BF16, Out: BF16, M: 2048, N: 3072, K: 768, Alpha: 1, Epilogue: ReluAuxBias}, mmForwardEpi, "detgemm_wg"},
		{"dx dgelu, fused", h200, MatmulDesc{Tier: TierTensorCore, In: BF16, Out: BF16, M: 4096, N: 4096, K: 4096, TransB: true, Alpha: 1, Epilogue: DGelu}, mmGeneral, "detgemm_wgmm128x256_dgelu_nt_bf16_bf16"},
		{"forward relu with its mask, ping-pong", h200, MatmulDesc{Tier: TierTensorCore, In: BF16, Out: BF16, M: 4096, N: 4096, K: 4096, Alpha: 1, Epilogue: ReluAuxBias}, mmGeneral, "detgemm_wgmm128x128p_relu_nn_bf16_bf16"},
		{"forward relu, fused", h200, MatmulDesc{Tier: TierTensorCore, In: BF16, Out: BF16, M: 2048, N: 3072, K: 768, Alpha: 1, Epilogue: ReluBias}, mmGeneral, "detgemm_wgmm128x192_relu_nn_bf16_bf16"},
		{"dx then dgelu", h200, MatmulDesc{Tier: TierTensorCore, In: BF16, Out: BF16, M: 4096, N: 4096, K: 4096, TransB: true, Alpha: 1, Epilogue: DGeluBgrad}, mmDXEpi, "detgemm_wg"},
		{"dx then drelu, f32 out", h200, MatmulDesc{Tier: TierTensorCore, In: BF16, Out: F32, M: 4096, N: 4096, K: 4096, TransB: true, Alpha: 1, Epilogue: DReluBgrad}, mmDXEpi, "detgemm_wg"},
		{"dx with a bias: fused", h200, MatmulDesc{Tier: TierTensorCore, In: BF16, Out: BF16, M: 4096, N: 4096, K: 4096, TransB: true, Alpha: 1, Epilogue: GeluBias}, mmGeneral, "detgemm_wgmm128x256_gelu_nt_bf16_bf16"},
		{"fused gelu, scaled", h200, MatmulDesc{Tier: TierTensorCore, In: BF16, Out: BF16, M: 4096, N: 4096, K: 4096, Alpha: 0.5, Epilogue: GeluAuxBias}, mmGeneral, "detgemm_wgmm128x256_gelu_nn_bf16_bf16"},
		{"fused tt", h200, MatmulDesc{Tier: TierTensorCore, In: F16, Out: F16, M: 104, N: 64, K: 64, TransA: true, TransB: true, Alpha: 2, Beta: 1}, mmGeneral, "detgemm_wgmm128x192_none_tt_f16_f16"},
		// The fused tile by rounds: 2048×3072 is 192 tiles of 128×256 on
		// 132 SMs (two rounds, the second half empty) and 256 of 128×192;
		// 4096² is 4 rounds of 128×256 and 6 of 128×192.
		{"fused tn, mid", h200, MatmulDesc{Tier: TierTensorCore, In: BF16, Out: BF16, M: 2048, N: 3072, K: 768, TransA: true, Alpha: 1, Epilogue: ReluBias}, mmGeneral, "detgemm_wgmm128x192_relu_tn_bf16_bf16"},
		{"fused tn, large", h200, MatmulDesc{Tier: TierTensorCore, In: BF16, Out: BF16, M: 4096, N: 4096, K: 4096, TransA: true, Alpha: 1, Epilogue: ReluBias}, mmGeneral, "detgemm_wgmm128x256_relu_tn_bf16_bf16"},
		{"f32 out: general", h200, MatmulDesc{Tier: TierTensorCore, In: F16, Out: F32, M: 104, N: 64, K: 64, TransA: true, TransB: true, Alpha: 2, Beta: 1}, mmGeneral, "detgemm_tc"},
		{"general on Ampere", a100, MatmulDesc{Tier: TierTensorCore, In: BF16, Out: BF16, M: 4096, N: 4096, K: 4096, TransA: true, Alpha: 1, Epilogue: GeluAuxBias}, mmGeneral, "detgemm_mm_start_bf16"},
		{"ieee gelu", a100, MatmulDesc{Tier: TierF32, In: F32, Out: F32, M: 33, N: 70, K: 600, Alpha: 1, Epilogue: Gelu}, mmForwardEpi, "detgemm_"},
		{"ieee gelu, strided", a100, MatmulDesc{Tier: TierF32, In: F32, Out: F32, M: 33, N: 70, K: 600, LDA: 601, Alpha: 1, Epilogue: Gelu}, mmGeneral, "detgemm_slabs_nn_f32"},
	} {
		t.Run(c.name, func(t *testing.T) {
			p, err := c.e.Plan(c.d)
			require.NoError(t, err)
			require.Equal(t, c.route, p.p.route)
			require.NotEmpty(t, p.Kernels())
			require.True(t, strings.HasPrefix(p.Kernels()[0], c.first), "%v", p.Kernels())
			pr := p.Precision()
			require.True(t, pr.Deterministic)
			require.Equal(t, c.d.Tier != TierTensorCore, pr.GPUIndependent)
			require.True(t, pr.BatchInvariant)
			require.NotEmpty(t, pr.Reduction)
			require.Contains(t, p.String(), "Matmul")
		})
	}
}

// FuzzMatmulPlan: any description and pointers either plan and check or
// give a typed error — never a panic — and Plan accepts a small
// description exactly when the CPU reference accepts the same request.
func FuzzMatmulPlan(f *testing.F) {
	f.Add(uint8(3), uint8(2), uint8(2), 300, 256, 512, 0, 0, 0, 0, 0, uint8(0), uint8(9), float32(1), float32(0), uint64(1<<40), uint8(0))
	f.Add(uint8(1), uint8(1), uint8(1), 7, 5, 3, 3, 0, 9, 5, 5, uint8(3), uint8(11), float32(0.5), float32(1), uint64(1<<40), uint8(1))
	f.Add(uint8(2), uint8(3), uint8(1), 1, 1, 1, 1, 1, 1, 1, 1, uint8(1), uint8(15), float32(0), float32(0), uint64(3), uint8(2))
	f.Add(uint8(3), uint8(2), uint8(2), 0, -1, math.MaxInt32, -5, math.MaxInt, 0, 0, 0, uint8(2), uint8(200), float32(1), float32(2), uint64(0), uint8(3))
	f.Add(uint8(3), uint8(3), uint8(3), 1<<20, 1<<20, 1<<20, 0, 0, 0, 0, 0, uint8(0), uint8(13), float32(-1), float32(0), uint64(1<<44), uint8(0))
	// Gated epilogues: a forward with aux and bias, a backward, a width
	// that is no multiple of 16, beta != 0.
	f.Add(uint8(3), uint8(2), uint8(2), 64, 64, 32, 0, 0, 0, 0, 0, uint8(0), uint8(27), float32(1), float32(0), uint64(1<<40), uint8(0))
	f.Add(uint8(2), uint8(2), uint8(2), 9, 24, 5, 0, 0, 0, 0, 0, uint8(2), uint8(34), float32(0.5), float32(0), uint64(1<<40), uint8(1))
	f.Add(uint8(1), uint8(1), uint8(1), 3, 24, 5, 0, 0, 0, 13, 0, uint8(0), uint8(16), float32(1), float32(0), uint64(1<<40), uint8(2))
	f.Add(uint8(3), uint8(3), uint8(3), 16, 32, 16, 0, 0, 0, 0, 0, uint8(1), uint8(31), float32(1), float32(1), uint64(1<<40), uint8(0))
	f.Fuzz(func(t *testing.T, tier, in, out uint8, m, n, k, lda, ldb, ldc, ldd, ldaux int, trans, ep uint8, alpha, beta float32, base uint64, dev uint8) {
		dt := func(x uint8) DType { return []DType{0, F32, BF16, F16}[x%4] }
		d := MatmulDesc{Tier: Tier(tier % 5), In: dt(in), Out: dt(out), M: m, N: n, K: k, TransA: trans&1 != 0, TransB: trans&2 != 0,
			LDA: lda, LDB: ldb, LDC: ldc, LDD: ldd, LDAux: ldaux, Alpha: alpha, Beta: beta, Epilogue: Epilogue(ep % 40)}
		e, _ := fakeEngine(fakeDevices[int(dev)%len(fakeDevices)])
		p, err := e.Plan(d)
		if err != nil {
			var ae *ArgError
			if !errors.As(err, &ae) {
				t.Fatalf("%+v: untyped error %v", d, err)
			}
		} else {
			// Pointers derived from base: every check returns nil or a
			// typed error.
			b := cudaload.DevicePtr(base)
			a := MatmulArgs{A: b, B: b + 1<<36, C: b + 2<<36, D: b + 3<<36, Bias: b + 4<<36, Aux: b + 5<<36, BiasGrad: b + 6<<36}
			if err := p.p.checkArgs(a); err != nil {
				var ae *ArgError
				if !errors.As(err, &ae) {
					t.Fatalf("%+v: untyped error %v", d, err)
				}
			}
		}
		// The reference agrees on small requests (it allocates them).
		if m < 1 || n < 1 || k < 1 || m*n > 1<<12 || m*k > 1<<12 || n*k > 1<<12 || d.Tier == 0 || d.Tier > TierTensorCore {
			return
		}
		for _, x := range []int{lda, ldb, ldc, ldd, ldaux} {
			if x < 0 || x > 1<<8 {
				return
			}
		}
		o := ref.Options{Tier: ref.IEEE, In: d.In, Out: d.Out}
		if d.Tier == TierTensorCore {
			o.Tier, o.Model = ref.TensorCore, ref.Hopper
		}
		if d.Tier == TierF32 && (d.In != F32 || d.Out != F32) || d.Tier == TierTyped && !d.In.Half() || d.Out == 0 {
			return // the reference's IEEE tier takes every type, and Out 0 as In; the engine's tiers are narrower
		}
		refErr := refAccepts(o, d)
		if (err == nil) != (refErr == nil) {
			t.Fatalf("%+v: engine %v, reference %v", d, err, refErr)
		}
	})
}

// refAccepts runs the CPU reference on buffers of the description's
// extents (the engine's contract for ld 0, and the epilogue's operands).
func refAccepts(o ref.Options, d MatmulDesc) error {
	ld := func(ld, rows, cols int) (int, int) {
		if ld == 0 {
			ld = cols
		}
		if ld < cols {
			return ld, 1
		}
		return ld, (rows-1)*ld + cols
	}
	aRows, aCols, bRows, bCols := d.stored()
	mk := func(t DType, n int) ref.Operand {
		if t.Half() {
			return ref.Bits(make([]uint16, n))
		}
		return ref.Values(make([]float32, n))
	}
	_, na := ld(d.LDA, aRows, aCols)
	_, nb := ld(d.LDB, bRows, bCols)
	_, nc := ld(d.LDC, d.M, d.N)
	dCols, auxCols := d.N, d.N
	if d.Epilogue.Valid() && d.Epilogue.Gate() != 0 {
		dCols, auxCols = gatedCols(d.Epilogue, d.N)
	}
	_, nd := ld(d.LDD, d.M, dCols)
	_, nx := ld(d.LDAux, d.M, auxCols)
	s := specOf(d.Epilogue)
	r := ref.MatmulRequest{M: d.M, N: d.N, K: d.K, TransA: d.TransA, TransB: d.TransB, A: mk(d.In, na), B: mk(d.In, nb),
		LDA: d.LDA, LDB: d.LDB, Alpha: d.Alpha, Beta: d.Beta, LDC: d.LDC, D: mk(d.Out, nd), LDD: d.LDD,
		Epilogue: d.Epilogue, LDAux: d.LDAux, ReduceOverBatch: d.ReduceOverBatch}
	if d.Beta != 0 {
		r.C = mk(d.Out, nc)
	}
	if d.Epilogue.Valid() {
		if s.bias {
			r.Bias = make([]float32, d.N)
		}
		switch {
		case s.mask:
			r.ReluMask = make([]uint8, nx)
		case s.aux():
			r.Aux = mk(d.Out, nx)
		}
		switch s.bgrad {
		case 'A':
			r.BiasGrad = make([]float32, d.M)
		case 'B', 'D':
			r.BiasGrad = make([]float32, d.N)
		}
	}
	return o.Matmul(r)
}

// TestMatmulFusedSetting: EnvMatmulFused's values, and a forced tile that
// takes requests Forward's kernels could run (a typo is an error, never
// ignored).
func TestMatmulFusedSetting(t *testing.T) {
	for _, c := range []struct {
		v     string
		off   bool
		force tcTile
		bad   bool
	}{
		{"", false, 0, false}, {"1", false, 0, false}, {"auto", false, 0, false}, {"0", true, 0, false},
		{"wg128x256", false, tcTileWG128x256, false}, {"wg128x192", false, tcTileWG128x192, false}, {"wg128x128p", false, tcTileWG128x128P, false}, {"wgp64x256", false, 0, true},
		{"wg128x128", false, 0, true}, {" 0", false, 0, true},
	} {
		t.Run(c.v, func(t *testing.T) {
			off, force, err := mmFusedSetting(c.v)
			if c.bad {
				require.Error(t, err)
				require.Contains(t, err.Error(), EnvMatmulFused)
				return
			}
			require.NoError(t, err)
			require.Equal(t, c.off, off)
			require.Equal(t, c.force, force)
		})
	}
	h200, _ := fakeEngine(fakeDevices[0])
	h200.mmForce = tcTileWG128x256
	d := MatmulDesc{Tier: TierTensorCore, In: BF16, Out: BF16, M: 4096, N: 4096, K: 4096, Alpha: 1, Epilogue: GeluAuxBias}
	p, err := h200.Plan(d)
	require.NoError(t, err)
	require.Equal(t, mmGeneral, p.p.route)
	require.Equal(t, []string{"detgemm_wgmm128x256_gelu_nn_bf16_bf16"}, p.Kernels())
	require.Zero(t, p.WorkspaceBytes())
	d.Epilogue = DGeluBgrad
	p, err = h200.Plan(d)
	require.NoError(t, err)
	require.Equal(t, "detgemm_wgmm128x256_dgelu_nn_bf16_bf16", p.Kernels()[0])
	// No fused kernel for an f32 output: Forward's route stays.
	d.Out = F32
	p, err = h200.Plan(d)
	require.NoError(t, err)
	require.Equal(t, mmForwardEpi, p.p.route)
}

// TestMatmulActsMatchTheKernelCodes: the fused kernels' activation names
// (entries.MatmulActs, which also name epilogue.cuh's ACT_ constants in the
// generated entries) index the engine's activation codes.
func TestMatmulActsMatchTheKernelCodes(t *testing.T) {
	for code, name := range map[int]string{mmActNone: "none", mmActRelu: "relu", mmActGelu: "gelu", mmActDRelu: "drelu", mmActDGelu: "dgelu"} {
		require.Equal(t, name, entries.MatmulActs[code])
	}
	require.Len(t, entries.MatmulActs, 5)
	// The gates' codes are ref.Gate's, offset as epilogue.cuh's ACT_GATE
	// and ACT_DGATE.
	for i, name := range entries.MatmulGates {
		g := Gate(i + 1)
		require.Equal(t, strings.ToLower(g.String()), name)
		require.Equal(t, entries.ActGate+int(g), entries.ActCode(name))
		require.Equal(t, entries.ActDGate+int(g), entries.ActCode("d"+name))
	}
	require.Equal(t, -1, entries.ActCode("dnone"))
}

// TestMatmulEpilogueVectorConditions: the epilogue kernel takes its vector
// path only where every 4-wide access stays aligned.
func TestMatmulEpilogueVectorConditions(t *testing.T) {
	const p, d = cudaload.DevicePtr(1 << 20), cudaload.DevicePtr(1 << 21)
	for _, c := range []struct {
		name            string
		n, ldd, ldaux   int64
		P, D, aux, mask cudaload.DevicePtr
		out             uint64
		want            bool
	}{
		{"aligned, no aux", 64, 64, 0, p, d, 0, 0, 2, true},
		{"aligned aux", 64, 72, 68, p, d, d + 4096, 0, 2, true},
		{"aligned mask", 64, 64, 64, p, d, 0, d + 4096, 4, true},
		{"N odd", 63, 64, 0, p, d, 0, 0, 2, false},
		{"ldd not 4", 64, 66, 0, p, d, 0, 0, 2, false},
		{"planes off 16 bytes", 64, 64, 0, p + 8, d, 0, 0, 4, false},
		{"D off 4 elements", 64, 64, 0, p, d + 4, 0, 0, 2, false},
		{"aux ld not 4", 64, 64, 66, p, d, d + 4096, 0, 2, false},
		{"aux off 4 elements", 64, 64, 64, p, d, d + 4098, 0, 2, false},
		{"mask off 4 bytes", 64, 64, 64, p, d, 0, d + 4097, 2, false},
		{"mask ld not 4", 64, 64, 65, p, d, 0, d + 4096, 2, false},
	} {
		require.Equal(t, c.want, mmEpiVec(c.n, c.ldd, c.ldaux, c.P, c.D, c.aux, c.mask, c.out), c.name)
	}
}

// TestMatmulEpilogueSweepRunsTheEpilogueKernel: the shapes that
// TestMatmulEpilogueVectorPathEveryPattern sweeps on the GPU run their
// activation through the epilogue kernel, with leading dimensions that
// let it take the vector path, so that test checks that path.
func TestMatmulEpilogueSweepRunsTheEpilogueKernel(t *testing.T) {
	e, _ := fakeEngine(fakeDevices[0])
	for _, tc := range []struct {
		tier    Tier
		in, out DType
	}{{TierF32, F32, F32}, {TierTyped, BF16, BF16}, {TierTyped, F16, F16}} {
		for _, ep := range []Epilogue{Relu, ReluAux, ReluAuxBias, Gelu, GeluAux, GeluAuxBias, DRelu, DReluBgrad, DGelu, DGeluBgrad} {
			const M, N = 1 << 16, 8
			d := MatmulDesc{Tier: tc.tier, In: tc.in, Out: tc.out, M: M, N: N, K: 1, LDD: N, LDAux: N, Alpha: 1, Epilogue: ep}
			p, err := e.Plan(d)
			require.NoError(t, err, "%v %v", tc, ep)
			require.Contains(t, p.Kernels(), "detgemm_mm_epilogue_"+tc.out.String(), "%v %v", tc, ep)
			require.True(t, mmEpiVec(N, N, N, 1<<20, 1<<21, 1<<22, 0, uint64(tc.out.Size())), "%v %v", tc, ep)
		}
	}
}
