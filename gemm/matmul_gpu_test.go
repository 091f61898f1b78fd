package gemm

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/detgemm/detgemm/cudaload"
	"github.com/detgemm/detgemm/gemm/ref"
	"github.com/stretchr/testify/require"
)

// mmTierCase is one tier and its (input, output) types.
type mmTierCase struct {
	tier    Tier
	in, out DType
}

var mmTierCases = []mmTierCase{
	{TierF32, F32, F32},
	{TierTyped, BF16, BF16}, {TierTyped, F16, F32},
	{TierTensorCore, BF16, BF16}, {TierTensorCore, F16, F16}, {TierTensorCore, BF16, F32},
}

// mmMat is a stored matrix with its padding: the exact values (the
// reference's view), the device's bits, and the device copy.
type mmMat struct {
	d          DType
	rows, cols int
	ld         int
	op         operand
	dev        cudaload.DevicePtr
}

func (m mmMat) n() int { return (m.rows-1)*m.ld + m.cols }

// refOperand is m for gemm/ref: 16-bit matrices as bits.
func (m mmMat) refOperand() ref.Operand {
	if m.d.Half() {
		return ref.Bits(m.op.half)
	}
	return ref.Values(m.op.values)
}

// newMMInput draws a random matrix (padding included, so a read of the
// padding would show) with a few specials where specials is set.
func newMMInput(t *testing.T, ctx *cudaload.Context, r *rand.Rand, d DType, rows, cols, ld int, specials bool) mmMat {
	m := mmMat{d: d, rows: rows, cols: cols, ld: ld}
	m.op = randomOperand(r, d, m.n())
	if specials {
		m.op = withSpecials(r, m.op, 1+m.n()/97)
	}
	m.dev = upload(t, ctx, m.op)
	return m
}

// newMMOutput is a poisoned output (every byte 0xFF: NaN in each type)
// with the same poison in its reference copy.
func newMMOutput(t *testing.T, ctx *cudaload.Context, d DType, rows, cols, ld int) mmMat {
	m := mmMat{d: d, rows: rows, cols: cols, ld: ld}
	v := make([]float32, m.n())
	for i := range v {
		v[i] = math.Float32frombits(0xFFFFFFFF)
	}
	m.op = operand{d: d, values: v}
	if d.Half() {
		m.op.half = make([]uint16, len(v))
		for i := range m.op.half {
			m.op.half[i] = 0xFFFF
		}
	}
	m.dev = poisoned(t, ctx, uint64(m.n()*d.Size()))
	return m
}

// bits is m's reference copy as raw bits, for comparison with readBits.
func (m mmMat) bits() []uint32 {
	out := make([]uint32, m.n())
	for i := range out {
		if m.d.Half() {
			out[i] = uint32(m.op.half[i])
		} else {
			out[i] = math.Float32bits(m.op.values[i])
		}
	}
	return out
}

// mmScalars is the (alpha, beta) pairs the sweep cycles through: the plain
// product, accumulation onto C, general scales, alpha = 0 (no product).
var mmScalars = [][2]float32{{1, 0}, {1, 1}, {0.75, -1.5}, {1, 0.5}, {-1.25, 0}, {0, 0.625}}

// mmShape is a sweep shape with its padding (added to each leading
// dimension; 0: contiguous).
type mmShape struct{ m, n, k, pad int }

// Shapes whose leading dimensions are multiples of 8 take Hopper's fused
// wgmma kernel in the tensor-core tier; the others the general path.
var mmShapes = []mmShape{{37, 45, 70, 0}, {96, 40, 72, 8}, {130, 72, 300, 3}, {200, 136, 264, 0}, {5, 200, 33, 8}, {300, 24, 600, 1}}

// mmRun runs one request on the GPU and on the CPU reference and requires
// the same bits in D (and its padding), the aux, and the bias gradient.
type mmRun struct {
	tc        mmTierCase
	s         mmShape
	ta, tb    bool
	ep        Epilogue
	alpha     float32
	beta      float32
	inPlace   bool
	specials  bool
	overBatch bool
	// misalignA moves A's pointer by one element: the fused kernel's TMA
	// cannot stage it, so a plan made for it takes the general path.
	misalignA bool
	// bits, when set, gives the bits of element o of the named input ("A",
	// "B", "aux") in place of random values.
	bits func(name string, o int) uint32
}

func (c mmRun) String() string {
	l := mmLayout{!c.ta, !c.tb}
	return fmt.Sprintf("%v/%v→%v/%s/%v/%dx%dx%d+%d/a%g_b%g/inplace=%v", c.tc.tier, c.tc.in, c.tc.out, l, c.ep, c.s.m, c.s.n, c.s.k, c.s.pad, c.alpha, c.beta, c.inPlace)
}

// desc is c's description as mmCheck runs it: A and B padded by pad, D by
// 2·pad, C (beta != 0, not in place) and the aux by pad; in place, C is D.
func (c mmRun) desc() MatmulDesc {
	M, N, K, pad := c.s.m, c.s.n, c.s.k, c.s.pad
	d := MatmulDesc{Tier: c.tc.tier, In: c.tc.in, Out: c.tc.out, M: M, N: N, K: K, TransA: c.ta, TransB: c.tb,
		LDD: N + 2*pad, LDAux: N + pad, Alpha: c.alpha, Beta: c.beta, Epilogue: c.ep, ReduceOverBatch: c.overBatch}
	_, aCols, _, bCols := d.stored()
	d.LDA, d.LDB, d.LDC = aCols+pad, bCols+pad, d.LDD
	if !c.inPlace && c.beta != 0 {
		d.LDC = N + pad
	}
	return d
}

func mmCheck(t *testing.T, eng *Engine, ctx *cudaload.Context, r *rand.Rand, model ref.TCModel, c mmRun) {
	t.Helper()
	M, N, K := c.s.m, c.s.n, c.s.k
	desc := c.desc()
	aRows, aCols, bRows, bCols := desc.stored()
	spec := specOf(c.ep)
	A := newMMInput(t, ctx, r, c.tc.in, aRows, aCols, desc.LDA, c.specials)
	B := newMMInput(t, ctx, r, c.tc.in, bRows, bCols, desc.LDB, c.specials)
	c.refill(t, ctx, "A", &A)
	c.refill(t, ctx, "B", &B)
	ldd, ldc := desc.LDD, desc.LDC
	D := newMMOutput(t, ctx, c.tc.out, M, N, ldd)
	var C mmMat
	if c.inPlace {
		// C is D: fill D with C's values first.
		C = newMMInput(t, ctx, r, c.tc.out, M, N, ldd, false)
		D = C
	} else if c.beta != 0 {
		C = newMMInput(t, ctx, r, c.tc.out, M, N, ldc, c.specials)
	}
	args := MatmulArgs{A: A.dev, B: B.dev, D: D.dev}
	if c.misalignA {
		// A copy one element further on: the same values at an address
		// 2 (or 4) bytes past a 16-byte boundary.
		shifted := operand{d: A.op.d, values: append([]float32{0}, A.op.values...)}
		if A.op.half != nil {
			shifted.half = append([]uint16{0}, A.op.half...)
		}
		args.A = upload(t, ctx, shifted) + cudaload.DevicePtr(A.d.Size())
	}
	req := ref.MatmulRequest{M: M, N: N, K: K, TransA: c.ta, TransB: c.tb, A: A.refOperand(), B: B.refOperand(),
		LDA: desc.LDA, LDB: desc.LDB, Alpha: c.alpha, Beta: c.beta, LDD: ldd, Epilogue: c.ep, ReduceOverBatch: c.overBatch}
	if c.beta != 0 {
		args.C, req.C, req.LDC = C.dev, C.refOperand(), ldc
	}
	req.D = D.refOperand()
	if spec.bias {
		bias := randomOperand(r, F32, N)
		args.Bias, req.Bias = upload(t, ctx, bias), bias.values
	}
	ldaux := desc.LDAux
	req.LDAux = ldaux
	var aux mmMat
	var mask []uint8
	var maskDev cudaload.DevicePtr
	switch {
	case spec.mask:
		mask = make([]uint8, (M-1)*ldaux+N)
		if spec.auxOut {
			for i := range mask {
				mask[i] = 0xFF
			}
			maskDev = poisoned(t, ctx, uint64(len(mask)))
		} else {
			for i := range mask {
				mask[i] = []uint8{0, 1, 1, 0, 1, 2, 0, 1, 7}[r.IntN(9)]
			}
			maskDev = alloc(t, ctx, uint64(len(mask)))
			require.NoError(t, cudaload.CopyToDevice(ctx, maskDev, mask))
		}
		args.Aux, req.ReluMask = maskDev, mask
	case spec.auxOut:
		aux = newMMOutput(t, ctx, c.tc.out, M, N, ldaux)
		args.Aux, req.Aux = aux.dev, aux.refOperand()
	case spec.auxIn:
		aux = newMMInput(t, ctx, r, c.tc.out, M, N, ldaux, c.specials)
		for i := range aux.op.values { // pre-activations spread over GELU's range
			aux.op.values[i] *= 6
		}
		aux.op = fromValues(c.tc.out, aux.op.values)
		aux.dev = upload(t, ctx, aux.op)
		c.refill(t, ctx, "aux", &aux)
		args.Aux, req.Aux = aux.dev, aux.refOperand()
	}
	var bg operand
	if spec.bgrad != 0 {
		n := N
		if spec.bgrad == 'A' {
			n = M
		}
		bg = randomOperand(r, F32, n)
		args.BiasGrad, req.BiasGrad = upload(t, ctx, bg), bg.values
	}

	require.NoError(t, eng.Matmul(MatmulRequest{desc, args}), "%v", c)
	o := ref.Options{Tier: ref.IEEE, In: c.tc.in, Out: c.tc.out}
	if c.tc.tier == TierTensorCore {
		o.Tier, o.Model = ref.TensorCore, model
	}
	require.NoError(t, o.Matmul(req), "%v", c)

	requireSameBits(t, D.bits(), readBits(t, eng, ctx, D.dev, D.d, D.n()), ldd, c.String()+" D")
	switch {
	case spec.mask && spec.auxOut:
		got := make([]uint8, len(mask))
		require.NoError(t, cudaload.CopyFromDevice(ctx, got, maskDev))
		for i := range mask {
			if got[i] != mask[i] {
				t.Fatalf("%v: mask byte %d: want %d, got %d", c, i, mask[i], got[i])
			}
		}
	case spec.auxOut:
		requireSameBits(t, aux.bits(), readBits(t, eng, ctx, aux.dev, aux.d, aux.n()), ldaux, c.String()+" aux")
	}
	if spec.bgrad != 0 {
		want := refBits(F32, bg.values)
		requireSameBits(t, want, readBits(t, eng, ctx, args.BiasGrad, F32, len(bg.values)), len(want), c.String()+" bias gradient")
	}
}

// refill replaces m's values by c.bits's (every element, padding
// included) and uploads them again; without c.bits it does nothing.
func (c mmRun) refill(t *testing.T, ctx *cudaload.Context, name string, m *mmMat) {
	t.Helper()
	if c.bits == nil {
		return
	}
	op := operand{d: m.d, values: make([]float32, len(m.op.values))}
	if m.d.Half() {
		op.half = make([]uint16, len(op.values))
		for o := range op.half {
			op.half[o] = uint16(c.bits(name, o))
		}
		require.NoError(t, ref.Upcast(m.d, op.values, op.half))
	} else {
		for o := range op.values {
			op.values[o] = math.Float32frombits(c.bits(name, o))
		}
	}
	m.op = op
	m.dev = upload(t, ctx, op)
}

// TestMatmulEpilogueVectorPathEveryPattern: the epilogue kernel's vector
// path (four columns a thread, GELU and its gradient as selects) gives
// gemm/ref's bits for every activation epilogue when its inputs sweep
// every pattern: the IEEE tiers with K = 1, so that an element's
// pre-activation is A's row value times B's column value (1, −1, 0.5, 2,
// ...), A over every 16-bit pattern (bf16, f16 in and out) or every high
// half of an f32 with random low halves (f32) — every sign, exponent, NaN
// and infinity class and the GELU thresholds — and the backward's aux over
// every 16-bit pattern (or f32 high half) again.
func TestMatmulEpilogueVectorPathEveryPattern(t *testing.T) {
	eng, ctx := gpuEngine(t)
	r := newRand(t)
	low := make([]uint32, 1<<16)
	for i := range low {
		low[i] = r.Uint32() & 0xffff
	}
	scale := map[DType][]uint32{
		F32:  {0x3f800000, 0xbf800000, 0x3f000000, 0x40000000, 0x3f800000, 0xbf800000, 0x3e800000, 0xc0000000},
		BF16: {0x3f80, 0xbf80, 0x3f00, 0x4000, 0x3f80, 0xbf80, 0x3e80, 0xc000},
		F16:  {0x3c00, 0xbc00, 0x3800, 0x4000, 0x3c00, 0xbc00, 0x3400, 0xc000},
	}
	const M, N = 1 << 16, 8
	for _, tc := range []mmTierCase{{TierF32, F32, F32}, {TierTyped, BF16, BF16}, {TierTyped, F16, F16}} {
		bits := func(name string, o int) uint32 {
			wide := tc.in == F32
			switch {
			case name == "A" && wide:
				return uint32(o)<<16 | low[o%len(low)]
			case name == "A":
				return uint32(o)
			case name == "B":
				return scale[tc.in][o%N]
			case wide: // aux: f32 high halves in another order
				return (uint32(o)*40503)<<16 | low[(o/N)%len(low)]
			}
			return uint32(o) * 40503 // aux: every 16-bit pattern, N times
		}
		for _, ep := range []Epilogue{Default, Bias, Relu, ReluAux, ReluAuxBias, Gelu, GeluAux, GeluAuxBias, DRelu, DReluBgrad, DGelu, DGeluBgrad} {
			mmCheck(t, eng, ctx, r, ref.TCModel{}, mmRun{tc: tc, s: mmShape{M, N, 1, 0}, ep: ep, alpha: 1, bits: bits})
		}
	}
}

// TestMatmulFusedEpiloguesEveryPattern: the fused wgmma kernels'
// activation epilogues (elementwise.cuh's select forms inside the tile)
// against gemm/ref on every 16-bit pre-activation and aux pattern. K = 16
// with A's first column every pattern and the rest +0, and B's first row
// exact scales, so that row i's products are pattern i scaled (every sign,
// exponent, NaN and infinity class, GELU's ±16 and the exponential's
// thresholds); the backward epilogues' aux is every pattern again in
// another order. The gated ones see a and b from the same pattern.
func TestMatmulFusedEpiloguesEveryPattern(t *testing.T) {
	for _, tile := range mmWGForceable {
		t.Run(wgGeometries[tile].name, func(t *testing.T) { fusedEpiloguesEveryPattern(t, tile) })
	}
}

// fusedEpiloguesEveryPattern is TestMatmulFusedEpiloguesEveryPattern on
// the fused kernels of one tile.
func fusedEpiloguesEveryPattern(t *testing.T, tile tcTile) {
	eng, ctx, model := fusedEngineOn(t, tile)
	r := newRand(t)
	scale := map[DType][]uint32{
		BF16: {0x3f80, 0xbf80, 0x3f00, 0x4000, 0x3f80, 0xbf80, 0x3e80, 0xc000},
		F16:  {0x3c00, 0xbc00, 0x3800, 0x4000, 0x3c00, 0xbc00, 0x3400, 0xc000},
	}
	const M, N, K = 1 << 16, 16, 16
	for _, tc := range []mmTierCase{{TierTensorCore, BF16, BF16}, {TierTensorCore, F16, F16}} {
		bits := func(name string, o int) uint32 {
			switch name {
			case "A":
				if o%K == 0 {
					return uint32(o / K)
				}
				return 0
			case "B":
				return scale[tc.in][o%len(scale[tc.in])]
			}
			return uint32(o) * 40503 // aux: every 16-bit pattern
		}
		for _, ep := range []Epilogue{Relu, ReluAuxBias, Gelu, GeluAuxBias, DRelu, DReluBgrad, DGelu, DGeluBgrad} {
			for _, alpha := range []float32{1, -0.5} {
				c := mmRun{tc: tc, s: mmShape{M, N, K, 0}, ep: ep, alpha: alpha, bits: bits}
				p, err := eng.Plan(c.desc())
				require.NoError(t, err, "%v", c)
				require.True(t, strings.HasPrefix(p.Kernels()[0], "detgemm_wgmm"+wgGeometries[tile].name[2:]+"_"), "%v: %v", c, p.Kernels())
				mmCheck(t, eng, ctx, r, model, c)
			}
		}
		if tile != tcTileWG128x256 {
			continue // the gated epilogues' fused kernels are 128×256's
		}
		for _, ep := range gatedEpilogues {
			gatedMMCheck(t, eng, ctx, r, model, mmRun{tc: tc, s: mmShape{M, N, K, 0}, ep: ep, alpha: 1, bits: bits})
		}
	}
}

// fusedEngine is a fresh engine made with DETGEMM_MATMUL_FUSED=wg128x256,
// so that every Matmul request a fused wgmma kernel can run runs it, and
// its GPU's tensor-core model; the test is skipped off Hopper.
func fusedEngine(t *testing.T) (*Engine, *cudaload.Context, ref.TCModel) {
	return fusedEngineOn(t, tcTileWG128x256)
}

// fusedEngineOn is fusedEngine with the fused kernels of tile forced.
func fusedEngineOn(t *testing.T, tile tcTile) (*Engine, *cudaload.Context, ref.TCModel) {
	t.Helper()
	_, ctx := gpuEngine(t)
	t.Setenv(EnvMatmulFused, wgGeometries[tile].name)
	eng, err := New(ctx)
	require.NoError(t, err)
	t.Cleanup(func() { _ = eng.Close() })
	model, ok := mmModel(eng)
	if !ok {
		t.Skipf("the fused kernels are Hopper's; this GPU is %v", eng.Arch())
	}
	return eng, ctx, model
}

// mmModel is the tensor-core model of eng's GPU, or ok false where none is
// verified (the IEEE tiers still run).
func mmModel(eng *Engine) (ref.TCModel, bool) {
	if a := eng.Arch(); a.Major == 9 && a.Minor == 0 {
		return ref.Hopper, true
	}
	return ref.TCModel{}, false
}

// TestMatmulMatchesReferenceEverywhere: every tier × types × layout ×
// epilogue over odd shapes with padded leading dimensions, alpha and beta
// cycling through the plain, accumulating, scaled and alpha = 0 forms, some
// in place (C == D), some with NaN, Inf and subnormal inputs, gives
// gemm/ref's bits in D, its padding (untouched), the aux and the bias
// gradient.
func TestMatmulMatchesReferenceEverywhere(t *testing.T) {
	eng, ctx := gpuEngine(t)
	model, tcOK := mmModel(eng)
	r := newRand(t)
	i := 0
	for _, tc := range mmTierCases {
		if tc.tier == TierTensorCore && !tcOK {
			continue
		}
		for _, l := range []mmLayout{{true, true}, {true, false}, {false, true}, {false, false}} {
			for ep := Epilogue(0); ep.Valid() && ep.Gate() == 0; ep++ { // the sixteen (the gated ones: gated_gpu_test.go)
				for range 2 {
					sc := mmScalars[i%len(mmScalars)]
					c := mmRun{tc: tc, s: mmShapes[i%len(mmShapes)], ta: !l.aRC, tb: !l.bJC, ep: ep, alpha: sc[0], beta: sc[1],
						inPlace: sc[1] != 0 && i%3 == 0, specials: i%5 == 2, misalignA: i%11 == 1}
					i++
					t.Run(c.String(), func(t *testing.T) { mmCheck(t, eng, ctx, r, model, c) })
				}
			}
		}
	}
}

// TestMatmulCutReductions: tensor-core plans of several slabs (K ≥ 8192
// with few columns; ReduceOverBatch's dW cut) and the IEEE plan's many
// slabs, in the start and fold forms.
func TestMatmulCutReductions(t *testing.T) {
	eng, ctx := gpuEngine(t)
	model, tcOK := mmModel(eng)
	r := newRand(t)
	for _, tc := range mmTierCases {
		if tc.tier == TierTensorCore && !tcOK {
			continue
		}
		for i, c := range []mmRun{
			{s: mmShape{40, 24, 8448, 0}, ep: GeluAuxBias, alpha: 1, beta: 0.5},
			{s: mmShape{33, 40, 9000, 2}, ta: true, ep: DGeluBgrad, alpha: -0.5, beta: 0},
			{s: mmShape{64, 16, 4096, 0}, ta: true, ep: Default, alpha: 1, beta: 1, overBatch: true, inPlace: true},
			{s: mmShape{2048, 64, 1024, 0}, ta: true, ep: BgradB, alpha: 1, beta: 1, overBatch: true},
		} {
			c.tc = tc
			if c.inPlace && tc.out != F32 {
				continue
			}
			c.specials = i == 1
			t.Run(c.String(), func(t *testing.T) { mmCheck(t, eng, ctx, r, model, c) })
		}
	}
}

// TestMatmulBatchInvariance: for every epilogue, a row of D and of the aux
// computed alone (M = 1) has the bits of the same row inside M = 4096, in
// every tier and layout of A.
func TestMatmulBatchInvariance(t *testing.T) {
	eng, ctx := gpuEngine(t)
	_, tcOK := mmModel(eng)
	r := newRand(t)
	const M, N, K = 4096, 96, 200
	for _, tc := range mmTierCases {
		if tc.tier == TierTensorCore && !tcOK {
			continue
		}
		for _, ta := range []bool{false, true} {
			for ep := Epilogue(0); ep.Valid() && ep.Gate() == 0; ep++ { // the sixteen (the gated ones: gated_gpu_test.go)
				spec := specOf(ep)
				if spec.bgrad == 'D' || spec.bgrad == 'A' {
					continue // sums over rows, or over op(A)'s rows' own k: D's rows are Default's/DRelu's/DGelu's
				}
				t.Run(fmt.Sprintf("%v/%v/ta=%v/%v", tc.tier, tc.in, ta, ep), func(t *testing.T) {
					aRows, aCols := M, K
					if ta {
						aRows, aCols = K, M
					}
					A := newMMInput(t, ctx, r, tc.in, aRows, aCols, aCols, false)
					B := newMMInput(t, ctx, r, tc.in, K, N, N, false)
					C := newMMInput(t, ctx, r, tc.out, M, N, N, false)
					bias := upload(t, ctx, randomOperand(r, F32, N))
					auxIn := newMMInput(t, ctx, r, tc.out, M, N, N, false)
					maskIn := alloc(t, ctx, M*N)
					mb := make([]uint8, M*N)
					for i := range mb {
						mb[i] = uint8(r.IntN(3))
					}
					require.NoError(t, cudaload.CopyToDevice(ctx, maskIn, mb))
					row := 1 + r.IntN(M-2)
					run := func(rows int, a cudaload.DevicePtr, lda int, off int) ([]uint32, []uint32) {
						D := poisoned(t, ctx, uint64(rows*N*tc.out.Size()))
						auxSize := tc.out.Size()
						if spec.mask {
							auxSize = 1
						}
						var aux cudaload.DevicePtr
						switch {
						case spec.auxOut:
							aux = poisoned(t, ctx, uint64(rows*N*auxSize))
						case spec.auxIn && spec.mask:
							aux = maskIn + cudaload.DevicePtr(off*N)
						case spec.auxIn:
							aux = auxIn.dev + cudaload.DevicePtr(off*N*tc.out.Size())
						}
						args := MatmulArgs{A: a, B: B.dev, C: C.dev + cudaload.DevicePtr(off*N*tc.out.Size()), D: D, Aux: aux}
						if spec.bias {
							args.Bias = bias
						}
						if spec.bgrad != 0 {
							args.BiasGrad = alloc(t, ctx, uint64(4*N))
							require.NoError(t, ctx.MemsetD8(args.BiasGrad, 0, uint64(4*N)))
						}
						desc := MatmulDesc{Tier: tc.tier, In: tc.in, Out: tc.out, M: rows, N: N, K: K, TransA: ta, LDA: lda,
							Alpha: 1, Beta: 0.5, Epilogue: ep}
						require.NoError(t, eng.Matmul(MatmulRequest{desc, args}))
						d := readBits(t, eng, ctx, D, tc.out, rows*N)
						var x []uint32
						if spec.auxOut && !spec.mask {
							x = readBits(t, eng, ctx, aux, tc.out, rows*N)
						}
						if spec.auxOut && spec.mask {
							b := make([]uint8, rows*N)
							require.NoError(t, cudaload.CopyFromDevice(ctx, b, aux))
							for _, v := range b {
								x = append(x, uint32(v))
							}
						}
						return d, x
					}
					dAll, xAll := run(M, A.dev, aCols, 0)
					aRow := A.dev + cudaload.DevicePtr(row*aCols*tc.in.Size())
					if ta {
						aRow = A.dev + cudaload.DevicePtr(row*tc.in.Size())
					}
					dOne, xOne := run(1, aRow, aCols, row)
					requireSameBits(t, dAll[row*N:(row+1)*N], dOne, N, "D row")
					if xAll != nil {
						requireSameBits(t, xAll[row*N:(row+1)*N], xOne, N, "aux row")
					}
				})
			}
		}
	}
}

// TestMatmulRoutesMatchReference: every epilogue on requests that are
// otherwise Forward (NN) or DX (NT, no bias) — alpha 1, beta 0, contiguous
// A and B — runs Forward's or DX's kernels onto an f32 plane and then the
// epilogue kernel (or the op itself for Default/Bias), in every tier, and
// gives gemm/ref's bits (outputs poisoned first, as in mmCheck).
func TestMatmulRoutesMatchReference(t *testing.T) {
	eng, ctx := gpuEngine(t)
	model, tcOK := mmModel(eng)
	r := newRand(t)
	for _, tc := range mmTierCases {
		if tc.tier == TierTensorCore && !tcOK {
			continue
		}
		for _, tb := range []bool{false, true} {
			for ep := Epilogue(0); ep.Valid() && ep.Gate() == 0; ep++ { // the sixteen (the gated ones: gated_gpu_test.go)
				if tb && specOf(ep).bias {
					continue // DX has no bias: the general or fused path
				}
				for _, s := range []mmShape{{130, 72, 300, 0}, {1, 200, 64, 0}, {300, 24, 600, 0}} {
					c := mmRun{tc: tc, s: s, tb: tb, ep: ep, alpha: 1}
					p, err := eng.Plan(c.desc())
					require.NoError(t, err)
					require.NotEqual(t, mmGeneral, p.p.route, "%v: %v", c, p)
					t.Run(c.String(), func(t *testing.T) { mmCheck(t, eng, ctx, r, model, c) })
				}
			}
		}
	}
}

// TestMatmulFusedKernelsMatchReference: with the fused wgmma kernels
// forced (EnvMatmulFused, so that they also take the requests Forward's and
// DX's kernels could run), every layout × epilogue gives gemm/ref's bits,
// on shapes with ragged edges and on a grid of several tiles a block.
func TestMatmulFusedKernelsMatchReference(t *testing.T) {
	for _, tile := range mmWGForceable {
		t.Run(wgGeometries[tile].name, func(t *testing.T) { fusedKernelsMatchReference(t, tile) })
	}
}

// fusedKernelsMatchReference is TestMatmulFusedKernelsMatchReference on
// the fused kernels of one tile.
func fusedKernelsMatchReference(t *testing.T, tile tcTile) {
	eng, ctx, model := fusedEngineOn(t, tile)
	name := wgGeometries[tile].name
	r := newRand(t)
	i := 0
	for _, l := range []mmLayout{{true, true}, {true, false}, {false, true}, {false, false}} {
		for ep := Epilogue(0); ep.Valid() && ep.Gate() == 0; ep++ { // the sixteen (the gated ones: gated_gpu_test.go)
			shapes := []mmShape{{200, 264, 136, 0}, {72, 296, 64, 8}} // leading dimensions multiples of 8 in every layout
			if i%16 == 0 {
				shapes = append(shapes, mmShape{2200, 4104, 32, 0}) // 306 tiles: two or three a block
			}
			for _, s := range shapes {
				tc := mmTierCases[3+i%2]
				sc := mmScalars[i%len(mmScalars)]
				if sc[0] == 0 || (sc[0] == 1 && sc[1] != 0) {
					sc = [2]float32{1, 0} // forms the fused kernels do not take
				}
				c := mmRun{tc: tc, s: s, ta: !l.aRC, tb: !l.bJC, ep: ep, alpha: sc[0], beta: sc[1], specials: i%3 == 1}
				i++
				p, err := eng.Plan(c.desc())
				require.NoError(t, err)
				require.True(t, strings.HasPrefix(p.Kernels()[0], "detgemm_wgmm"+name[2:]+"_"), "%v: %v", c, p.Kernels())
				t.Run(c.String(), func(t *testing.T) { mmCheck(t, eng, ctx, r, model, c) })
			}
		}
	}
}
