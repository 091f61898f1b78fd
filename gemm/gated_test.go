package gemm

import (
	"errors"
	"math"
	"testing"

	"github.com/detgemm/detgemm/cudaload"
	"github.com/stretchr/testify/require"
)

// TestCheckGatedRefuses: each bad standalone gated request is an *ArgError
// naming the field, with its sentinel.
func TestCheckGatedRefuses(t *testing.T) {
	ok := GatedDesc{Gate: SwiGLU, Type: BF16, Layout: GatedHalves, Rows: 4, N: 16}
	args := GatedArgs{X: 1 << 30, Y: 2 << 30}
	bwdArgs := GatedArgs{X: 1 << 30, Y: 2 << 30, G: 3 << 30}
	for _, c := range []struct {
		name string
		d    func(*GatedDesc)
		a    func(*GatedArgs)
		bwd  bool
		arg  string
		err  error
	}{
		{"no gate", func(d *GatedDesc) { d.Gate = 0 }, nil, false, "Gate", ErrGate},
		{"gate 9", func(d *GatedDesc) { d.Gate = 9 }, nil, false, "Gate", ErrGate},
		{"type", func(d *GatedDesc) { d.Type = 0 }, nil, false, "Type", ErrDType},
		{"layout", func(d *GatedDesc) { d.Layout = 7 }, nil, false, "Layout", ErrDimension},
		{"negative rows", func(d *GatedDesc) { d.Rows = -1 }, nil, false, "Rows", ErrDimension},
		{"blocks of 8, N 12", func(d *GatedDesc) { d.Layout, d.N = GatedBlocks8, 12 }, nil, false, "N", ErrDimension},
		{"LDX below 2N", func(d *GatedDesc) { d.LDX = 31 }, nil, false, "LDX", ErrLeadingDim},
		{"LDY below N", func(d *GatedDesc) { d.LDY = 15 }, nil, false, "LDY", ErrLeadingDim},
		{"LDXB joined", func(d *GatedDesc) { d.LDXB = 16 }, nil, false, "LDXB", ErrLeadingDim},
		{"LDG forward", func(d *GatedDesc) { d.LDG = 32 }, nil, false, "LDG", ErrLeadingDim},
		{"huge stride", func(d *GatedDesc) { d.LDX = math.MaxInt64 / 2 }, nil, false, "LDX", ErrTooLarge},
		{"nil X", nil, func(a *GatedArgs) { a.X = 0 }, false, "X", ErrNilPointer},
		{"nil Y", nil, func(a *GatedArgs) { a.Y = 0 }, false, "Y", ErrNilPointer},
		{"XB joined", nil, func(a *GatedArgs) { a.XB = 4 << 30 }, false, "XB", ErrOperand},
		{"G forward", nil, func(a *GatedArgs) { a.G = 4 << 30 }, false, "G", ErrOperand},
		{"misaligned X", nil, func(a *GatedArgs) { a.X++ }, false, "X", ErrMisaligned},
		{"Y over X", nil, func(a *GatedArgs) { a.Y = a.X + 8 }, false, "Y", ErrAlias},
		{"separate, nil XB", func(d *GatedDesc) { d.Layout = GatedSeparate }, nil, false, "XB", ErrNilPointer},
		{"backward, nil G", nil, func(a *GatedArgs) { a.G = 0 }, true, "G", ErrNilPointer},
		{"backward, G over dy", nil, func(a *GatedArgs) { a.G = a.Y }, true, "G", ErrAlias},
		{"backward, G over X", nil, func(a *GatedArgs) { a.G = a.X + 64 }, true, "G", ErrAlias},
		{"backward separate, dB over dA", func(d *GatedDesc) { d.Layout = GatedSeparate }, func(a *GatedArgs) { a.XB, a.GB = 5<<30, a.G+2 }, true, "G", ErrAlias},
		{"backward, LDG below 2N", func(d *GatedDesc) { d.LDG = 20 }, nil, true, "LDG", ErrLeadingDim},
	} {
		t.Run(c.name, func(t *testing.T) {
			d, a := ok, args
			if c.bwd {
				a = bwdArgs
			}
			if c.d != nil {
				c.d(&d)
			}
			if c.a != nil {
				c.a(&a)
			}
			_, err := checkGated("GatedForward", d, a, c.bwd)
			require.Error(t, err)
			var ae *ArgError
			require.True(t, errors.As(err, &ae), "%v", err)
			require.Equal(t, c.arg, ae.Arg, "%v", err)
			require.ErrorIs(t, err, c.err)
		})
	}
	// The good ones resolve the halves.
	c, err := checkGated("GatedForward", ok, args, false)
	require.NoError(t, err)
	require.Equal(t, args.X+16*2, c.b)
	require.Equal(t, int64(32), c.lda)
	d := ok
	d.Layout = GatedBlocks8
	c, err = checkGated("GatedBackward", d, bwdArgs, true)
	require.NoError(t, err)
	require.Equal(t, bwdArgs.X+8*2, c.b)
	require.Equal(t, bwdArgs.G+8*2, c.gb)
	require.True(t, c.blk)
}

// TestMatmulGatedPlans: on a Hopper, tensor-core gated requests on grids
// of gatedFusedMinRounds rounds or more take the one fused kernel (no
// workspace), smaller ones the product onto f32 and the gated kernel,
// unless DETGEMM_MATMUL_FUSED says 0 (never fused) or wg128x256 (always);
// the other tiers and an f32 output take the two kernels; bad requests are
// typed errors.
func TestMatmulGatedPlans(t *testing.T) {
	h200, _ := fakeEngine(fakeDevices[0])
	d := MatmulDesc{Tier: TierTensorCore, In: BF16, Out: BF16, M: 4096, N: 22016, K: 4096, Alpha: 1, Epilogue: GatedSwiGLUAux}
	for _, c := range []struct {
		name  string
		m     int
		off   bool
		fused bool
	}{
		{"21 rounds", 4096, false, true},
		{"10.4 rounds", 2048, false, true},                  // 16 × 86 = 1376 tiles on 132 SMs
		{"9.8 rounds", 1920, false, false},                  // 15 × 86 = 1290
		{"21 rounds, fused kernels off", 4096, true, false}, // DETGEMM_MATMUL_FUSED=0
		{"one round", 128, false, false},
	} {
		d := d
		d.M = c.m
		h200.mmUnfused = c.off
		p, err := h200.Plan(d)
		require.NoError(t, err, c.name)
		if c.fused {
			require.Equal(t, []string{"detgemm_wgmm128x256_swiglu_nn_bf16_bf16"}, p.Kernels(), c.name)
			require.Zero(t, p.WorkspaceBytes(), c.name)
		} else {
			require.Equal(t, "detgemm_gated_fwd_f32_bf16_v4", p.Kernels()[len(p.Kernels())-1], c.name)
			require.NotZero(t, p.WorkspaceBytes(), c.name)
		}
	}
	h200.mmUnfused = false
	// DETGEMM_MATMUL_FUSED=wg128x256: the one fused kernel, whatever the grid.
	h200.mmForce = tcTileWG128x256
	d.M = 128
	p, err := h200.Plan(d)
	require.NoError(t, err)
	require.Equal(t, []string{"detgemm_wgmm128x256_swiglu_nn_bf16_bf16"}, p.Kernels())
	d.M = 4096
	p, err = h200.Plan(d)
	require.NoError(t, err)
	require.Equal(t, []string{"detgemm_wgmm128x256_swiglu_nn_bf16_bf16"}, p.Kernels())
	require.Zero(t, p.WorkspaceBytes())
	require.Equal(t, 11008, p.Desc().LDD)
	require.Equal(t, 22016, p.Desc().LDAux)
	d.Epilogue, d.TransB, d.N = DGatedGeGLU, true, 11008
	p, err = h200.Plan(d)
	require.NoError(t, err)
	require.Equal(t, []string{"detgemm_wgmm128x256_dgeglu_nt_bf16_bf16"}, p.Kernels())
	require.Equal(t, 22016, p.Desc().LDD)
	// DETGEMM_MATMUL_FUSED=wg128x128p forces the ping-pong tile; left to
	// choose, the engine takes it for the gated backward to K = 4096
	// (prefersPingPong) and keeps 128×256 for the forward and past it.
	long := d
	long.K = 8192
	fwd := MatmulDesc{Tier: TierTensorCore, In: BF16, Out: BF16, M: 4096, N: 22016, K: 4096, Alpha: 1, Epilogue: GatedSwiGLU}
	for _, c := range []struct {
		force  tcTile
		d      MatmulDesc
		kernel string
	}{
		{tcTileWG128x128P, d, "detgemm_wgmm128x128p_dgeglu_nt_bf16_bf16"},
		{0, d, "detgemm_wgmm128x128p_dgeglu_nt_bf16_bf16"},
		{0, long, "detgemm_wgmm128x256_dgeglu_nt_bf16_bf16"},
		{0, fwd, "detgemm_wgmm128x256_swiglu_nn_bf16_bf16"},
	} {
		h200.mmForce = c.force
		p, err := h200.Plan(c.d)
		require.NoError(t, err, "%v", c)
		require.Equal(t, []string{c.kernel}, p.Kernels(), "%v", c)
	}
	h200.mmForce = tcTileWG128x256
	// An f32 output, and the IEEE tiers: two kernels.
	d.Out = F32
	p, err = h200.Plan(d)
	require.NoError(t, err)
	require.Equal(t, "detgemm_gated_bwd_f32_f32_v4", p.Kernels()[len(p.Kernels())-1])
	require.NotZero(t, p.WorkspaceBytes())
	d = MatmulDesc{Tier: TierTyped, In: F16, Out: F16, M: 100, N: 64, K: 40, Alpha: 2, Epilogue: GatedGeGLUAuxBias}
	p, err = h200.Plan(d)
	require.NoError(t, err)
	require.Equal(t, "detgemm_gated_fwd_f32_f16_v4", p.Kernels()[len(p.Kernels())-1])
	b := cudaload.DevicePtr(1 << 40)
	ok := MatmulArgs{A: b, B: b + 1<<36, D: b + 2<<36, Bias: b + 3<<36, Aux: b + 4<<36}
	require.NoError(t, p.p.checkArgs(ok))
	for _, c := range []struct {
		name string
		a    func(*MatmulArgs)
		arg  string
		err  error
	}{
		{"no aux", func(a *MatmulArgs) { a.Aux = 0 }, "Aux", ErrOperand},
		{"no bias", func(a *MatmulArgs) { a.Bias = 0 }, "Bias", ErrOperand},
		{"bias gradient", func(a *MatmulArgs) { a.BiasGrad = b + 5<<36 }, "BiasGrad", ErrOperand},
		{"D over aux", func(a *MatmulArgs) { a.D = a.Aux + 100*32*2 - 2 }, "D", ErrAlias},
	} {
		a := ok
		c.a(&a)
		err := p.p.checkArgs(a)
		require.ErrorIs(t, err, c.err, c.name)
		var ae *ArgError
		require.True(t, errors.As(err, &ae))
		require.Equal(t, c.arg, ae.Arg, c.name)
	}
	for _, c := range []struct {
		name string
		d    func(*MatmulDesc)
		arg  string
		err  error
	}{
		{"N not a multiple of 16", func(d *MatmulDesc) { d.N = 24 }, "N", ErrDimension},
		{"backward N not a multiple of 8", func(d *MatmulDesc) { d.Epilogue, d.N = DGatedGLU, 12 }, "N", ErrDimension},
		{"beta", func(d *MatmulDesc) { d.Beta = 1 }, "Beta", ErrOperand},
		{"over the batch", func(d *MatmulDesc) { d.ReduceOverBatch = true }, "ReduceOverBatch", ErrEpilogue},
		{"LDD below N/2", func(d *MatmulDesc) { d.LDD = 31 }, "LDD", ErrLeadingDim},
		{"LDAux below N", func(d *MatmulDesc) { d.LDAux = 63 }, "LDAux", ErrLeadingDim},
		{"backward LDD below 2N", func(d *MatmulDesc) { d.Epilogue, d.LDD = DGatedSwiGLU, 127 }, "LDD", ErrLeadingDim},
	} {
		x := d
		c.d(&x)
		_, err := h200.Plan(x)
		require.ErrorIs(t, err, c.err, c.name)
		var ae *ArgError
		require.True(t, errors.As(err, &ae))
		require.Equal(t, c.arg, ae.Arg, c.name)
	}
}

// TestGatedEpilogueParts: gatedEpi reads the gate, direction, bias and aux
// of every gated epilogue as its name says.
func TestGatedEpilogueParts(t *testing.T) {
	for _, ep := range gatedEpilogues {
		g, bwd, bias, aux := gatedEpi(ep)
		name := ep.String()
		require.Equal(t, ep.Gate(), g, name)
		require.Equal(t, name[0] == 'D', bwd, name)
		require.Equal(t, len(name) > 4 && name[len(name)-4:] == "Bias", bias, name)
		require.Equal(t, bwd || containsAux(name), aux, name)
	}
	g, _, _, _ := gatedEpi(GeluAux)
	require.Zero(t, g)
}

func containsAux(s string) bool {
	for i := 0; i+3 <= len(s); i++ {
		if s[i:i+3] == "Aux" {
			return true
		}
	}
	return false
}

// FuzzGated: the standalone gated activations' checks never panic; they
// return a typed error, or resolved operands inside the buffers' extents.
func FuzzGated(f *testing.F) {
	f.Add(uint8(3), uint8(2), uint8(0), 4, 16, 0, 0, 0, 0, 0, uint64(1<<30), false)
	f.Add(uint8(4), uint8(1), uint8(1), 7, 24, 48, 0, 30, 64, 0, uint64(1<<30), true)
	f.Add(uint8(1), uint8(3), uint8(2), 1, 13, 13, 14, 13, 13, 13, uint64(1<<30), true)
	f.Add(uint8(0), uint8(0), uint8(9), -1, -5, -1, -1, -1, -1, -1, uint64(0), false)
	f.Add(uint8(2), uint8(1), uint8(0), math.MaxInt32, math.MaxInt32, math.MaxInt, 0, 0, 0, 0, uint64(math.MaxUint64-64), true)
	f.Fuzz(func(t *testing.T, g, ty, lay uint8, rows, n, ldx, ldxb, ldy, ldg, ldgb int, base uint64, bwd bool) {
		d := GatedDesc{Gate: Gate(g % 6), Type: []DType{0, F32, BF16, F16}[ty%4], Layout: GatedLayout(lay % 4),
			Rows: rows, N: n, LDX: ldx, LDXB: ldxb, LDY: ldy, LDG: ldg, LDGB: ldgb}
		b := cudaload.DevicePtr(base)
		a := GatedArgs{X: b, Y: b + 1<<40, XB: b + 2<<40, G: b + 3<<40, GB: b + 4<<40}
		if d.Layout != GatedSeparate {
			a.XB, a.GB = 0, 0
		}
		if !bwd {
			a.G, a.GB = 0, 0
		}
		c, err := checkGated("Gated", d, a, bwd)
		if err != nil {
			var ae *ArgError
			if !errors.As(err, &ae) {
				t.Fatalf("%+v: untyped error %v", d, err)
			}
			return
		}
		if c.d.LDX < c.d.N || c.d.LDY < c.d.N || c.lda < 0 || c.ldb < 0 {
			t.Fatalf("%+v: leading dimensions resolved to %+v", d, c)
		}
		if bwd && (c.ga == 0 || c.gb == 0) {
			t.Fatalf("%+v: backward without outputs: %+v", d, c)
		}
	})
}

// TestGatedGridIsFinerThanMmGrid: the gated kernels' grid (mmGridPer at
// gatedPerSM) has three times mmGrid's row blocks at the probe's shapes,
// and both stay within the rows and the grid's y limit.
func TestGatedGridIsFinerThanMmGrid(t *testing.T) {
	require.Equal(t, int64(48), gatedPerSM)
	for _, c := range []struct {
		rows, groups int64
		sms          int
		want, old    cudaload.Dim3
	}{
		{4096, 1376, 132, cudaload.Dim3{X: 6, Y: 1056, Z: 1}, cudaload.Dim3{X: 6, Y: 352, Z: 1}}, // n = 11008, 8 a thread
		{4096, 688, 132, cudaload.Dim3{X: 3, Y: 2112, Z: 1}, cudaload.Dim3{X: 3, Y: 704, Z: 1}},  // n = 5504
		{7, 1376, 132, cudaload.Dim3{X: 6, Y: 7, Z: 1}, cudaload.Dim3{X: 6, Y: 7, Z: 1}},         // fewer rows than row blocks
		{1 << 20, 1, 132, cudaload.Dim3{X: 1, Y: 6336, Z: 1}, cudaload.Dim3{X: 1, Y: 2112, Z: 1}},
		{1 << 20, 1, 2000, cudaload.Dim3{X: 1, Y: maxGridYZ, Z: 1}, cudaload.Dim3{X: 1, Y: 32000, Z: 1}},
	} {
		require.Equal(t, c.want, mmGridPer(c.rows, c.groups, c.sms, gatedPerSM), "%+v", c)
		require.Equal(t, c.old, mmGrid(c.rows, c.groups, c.sms), "%+v", c)
	}
}
