package gemm

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/detgemm/detgemm/cudaload"
	"github.com/detgemm/detgemm/gemm/ref"
	"github.com/stretchr/testify/require"
)

var gatedGates = []Gate{GLU, ReGLU, SwiGLU, GeGLU}

// gatedCol is the column of index j of half h (0: a, 1: b) in layout l of
// a tensor n wide a half (GatedSeparate: each its own tensor).
func gatedCol(l GatedLayout, n, j, h int) int {
	switch l {
	case GatedHalves:
		return j + h*n
	case GatedBlocks8:
		return j/8*16 + j%8 + 8*h
	}
	return j
}

// gatedShape is a standalone sweep shape: rows × n, padding added to
// every leading dimension.
type gatedShape struct{ rows, n, pad int }

// TestGatedMatchesReference: every gate × type × layout, forward and
// backward, over odd and vector-friendly shapes with padded leading
// dimensions and special values (NaN, ±Inf, subnormals, exponent spreads),
// gives ref.GatedForward's / ref.GatedBackward's bits in every output and
// leaves the padding untouched (outputs poisoned first).
func TestGatedMatchesReference(t *testing.T) {
	eng, ctx := gpuEngine(t)
	r := newRand(t)
	shapes := []gatedShape{{1, 8, 0}, {37, 24, 3}, {130, 200, 0}, {9, 1000, 4}, {64, 4096, 0}, {5, 13, 1}, {3, 33, 0}}
	for _, g := range gatedGates {
		for _, d := range []DType{F32, BF16, F16} {
			for _, l := range []GatedLayout{GatedHalves, GatedBlocks8, GatedSeparate} {
				for _, s := range shapes {
					if l == GatedBlocks8 && s.n%8 != 0 {
						continue
					}
					for _, bwd := range []bool{false, true} {
						name := fmt.Sprintf("%v/%v/%v/%dx%d+%d/bwd=%v", g, d, l, s.rows, s.n, s.pad, bwd)
						gatedCheck(t, eng, ctx, r, g, d, l, s, bwd, name)
					}
				}
			}
		}
	}
}

func gatedCheck(t *testing.T, eng *Engine, ctx *cudaload.Context, r *rand.Rand, g Gate, d DType, l GatedLayout, s gatedShape, bwd bool, name string) {
	t.Helper()
	rows, n, pad := s.rows, s.n, s.pad
	joined := l != GatedSeparate
	inCols := n
	if joined {
		inCols = 2 * n
	}
	desc := GatedDesc{Gate: g, Type: d, Layout: l, Rows: rows, N: n, LDX: inCols + pad, LDY: n + pad}
	if !joined {
		desc.LDXB = n + 2*pad
	}
	// Inputs: b spread over the gates' interesting range.
	x := newMMInput(t, ctx, r, d, rows, inCols, desc.LDX, true)
	var xb mmMat
	if !joined {
		xb = newMMInput(t, ctx, r, d, rows, n, desc.LDXB, true)
	}
	scaleB := func(m *mmMat, h int) {
		for i := range rows {
			for j := range n {
				c := j
				if joined {
					c = gatedCol(l, n, j, h)
				}
				m.op.values[i*m.ld+c] *= 8
			}
		}
		m.op = fromValues(d, m.op.values)
		m.dev = upload(t, ctx, m.op)
	}
	if joined {
		scaleB(&x, 1)
	} else {
		scaleB(&xb, 0)
	}
	at := func(i, j, h int) float32 {
		if joined {
			return x.op.values[i*x.ld+gatedCol(l, n, j, h)]
		}
		if h == 0 {
			return x.op.values[i*x.ld+j]
		}
		return xb.op.values[i*xb.ld+j]
	}
	a, b := make([]float32, rows*n), make([]float32, rows*n)
	for i := range rows {
		for j := range n {
			a[i*n+j], b[i*n+j] = at(i, j, 0), at(i, j, 1)
		}
	}
	args := GatedArgs{X: x.dev, XB: xb.dev}
	if !bwd {
		y := newMMOutput(t, ctx, d, rows, n, desc.LDY)
		args.Y = y.dev
		require.NoError(t, eng.GatedForward(desc, args), name)
		want := make([]float32, rows*n)
		require.NoError(t, ref.GatedForward(g, d, want, a, b))
		for i := range rows {
			for j := range n {
				y.set(i*y.ld+j, want[i*n+j])
			}
		}
		requireSameBits(t, y.bits(), readBits(t, eng, ctx, y.dev, d, y.n()), y.ld, name+" y")
		return
	}
	dy := newMMInput(t, ctx, r, d, rows, n, desc.LDY, true)
	args.Y = dy.dev
	desc.LDG = inCols + 2*pad
	G := newMMOutput(t, ctx, d, rows, inCols, desc.LDG)
	args.G = G.dev
	var GB mmMat
	if !joined {
		desc.LDGB = n + pad
		GB = newMMOutput(t, ctx, d, rows, n, desc.LDGB)
		args.GB = GB.dev
	}
	require.NoError(t, eng.GatedBackward(desc, args), name)
	dyv := make([]float32, rows*n)
	for i := range rows {
		copy(dyv[i*n:(i+1)*n], dy.op.values[i*dy.ld:i*dy.ld+n])
	}
	da, db := make([]float32, rows*n), make([]float32, rows*n)
	require.NoError(t, ref.GatedBackward(g, d, da, db, dyv, a, b))
	for i := range rows {
		for j := range n {
			if joined {
				G.set(i*G.ld+gatedCol(l, n, j, 0), da[i*n+j])
				G.set(i*G.ld+gatedCol(l, n, j, 1), db[i*n+j])
			} else {
				G.set(i*G.ld+j, da[i*n+j])
				GB.set(i*GB.ld+j, db[i*n+j])
			}
		}
	}
	requireSameBits(t, G.bits(), readBits(t, eng, ctx, G.dev, d, G.n()), G.ld, name+" G")
	if !joined {
		requireSameBits(t, GB.bits(), readBits(t, eng, ctx, GB.dev, d, GB.n()), GB.ld, name+" GB")
	}
}

// set stores the exact value v (already rounded to m's type) at element o
// of m's reference copy, leaving the poison elsewhere as it is.
func (m *mmMat) set(o int, v float32) {
	m.op.values[o] = v
	if m.d.Half() {
		m.op.half[o] = m.d.FromF32(v)
	}
}

// gatedEpilogues is every gated epilogue.
var gatedEpilogues = []Epilogue{
	GatedGLU, GatedGLUBias, GatedGLUAux, GatedGLUAuxBias, GatedReGLU, GatedReGLUBias, GatedReGLUAux, GatedReGLUAuxBias,
	GatedSwiGLU, GatedSwiGLUBias, GatedSwiGLUAux, GatedSwiGLUAuxBias, GatedGeGLU, GatedGeGLUBias, GatedGeGLUAux, GatedGeGLUAuxBias,
	DGatedGLU, DGatedReGLU, DGatedSwiGLU, DGatedGeGLU,
}

// gatedMMCheck runs one gated Matmul on the GPU and on gemm/ref and
// requires the same bits in D (and its padding) and the aux.
func gatedMMCheck(t *testing.T, eng *Engine, ctx *cudaload.Context, r *rand.Rand, model ref.TCModel, c mmRun) {
	t.Helper()
	M, N, K, pad := c.s.m, c.s.n, c.s.k, c.s.pad
	_, bwd, bias, aux := gatedEpi(c.ep)
	dCols, auxCols := gatedCols(c.ep, N)
	desc := MatmulDesc{Tier: c.tc.tier, In: c.tc.in, Out: c.tc.out, M: M, N: N, K: K, TransA: c.ta, TransB: c.tb,
		LDD: dCols + 2*pad, Alpha: c.alpha, Epilogue: c.ep}
	_, aCols, _, bCols := desc.stored()
	desc.LDA, desc.LDB = aCols+pad, bCols+pad
	if aux {
		desc.LDAux = auxCols + pad
	}
	aRows, _, bRows, _ := desc.stored()
	A := newMMInput(t, ctx, r, c.tc.in, aRows, aCols, desc.LDA, c.specials)
	B := newMMInput(t, ctx, r, c.tc.in, bRows, bCols, desc.LDB, c.specials)
	c.refill(t, ctx, "A", &A)
	c.refill(t, ctx, "B", &B)
	D := newMMOutput(t, ctx, c.tc.out, M, dCols, desc.LDD)
	args := MatmulArgs{A: A.dev, B: B.dev, D: D.dev}
	req := ref.MatmulRequest{M: M, N: N, K: K, TransA: c.ta, TransB: c.tb, A: A.refOperand(), B: B.refOperand(),
		LDA: desc.LDA, LDB: desc.LDB, Alpha: c.alpha, D: D.refOperand(), LDD: desc.LDD, Epilogue: c.ep, LDAux: desc.LDAux}
	if bias {
		b := randomOperand(r, F32, N)
		args.Bias, req.Bias = upload(t, ctx, b), b.values
	}
	var X mmMat
	switch {
	case aux && !bwd:
		X = newMMOutput(t, ctx, c.tc.out, M, auxCols, desc.LDAux)
		args.Aux, req.Aux = X.dev, X.refOperand()
	case bwd:
		X = newMMInput(t, ctx, r, c.tc.out, M, auxCols, desc.LDAux, c.specials)
		for i := range X.op.values {
			X.op.values[i] *= 6
		}
		X.op = fromValues(c.tc.out, X.op.values)
		X.dev = upload(t, ctx, X.op)
		c.refill(t, ctx, "aux", &X)
		args.Aux, req.Aux = X.dev, X.refOperand()
	}
	p, err := eng.Plan(desc)
	require.NoError(t, err, "%v", c)
	if eng.mmForce != 0 && c.tc.tier == TierTensorCore && c.tc.out == c.tc.in && !c.ta && desc.LDA%8 == 0 && desc.LDB%8 == 0 {
		require.True(t, strings.HasPrefix(p.Kernels()[0], "detgemm_wgmm"), "%v: %v", c, p.Kernels())
	}
	require.NoError(t, p.Run(args), "%v %v", c, p)
	o := ref.Options{Tier: ref.IEEE, In: c.tc.in, Out: c.tc.out}
	if c.tc.tier == TierTensorCore {
		o.Tier, o.Model = ref.TensorCore, model
	}
	require.NoError(t, o.Matmul(req), "%v", c)
	requireSameBits(t, D.bits(), readBits(t, eng, ctx, D.dev, D.d, D.n()), desc.LDD, c.String()+" D")
	if aux && !bwd {
		requireSameBits(t, X.bits(), readBits(t, eng, ctx, X.dev, X.d, X.n()), desc.LDAux, c.String()+" aux")
	}
}

// TestMatmulGatedMatchesReference: every gated epilogue × tier × types ×
// layout on ragged shapes with padded leading dimensions, alpha 1 and
// scaled, special inputs, gives gemm/ref's bits in D, its padding and the
// aux.
func TestMatmulGatedMatchesReference(t *testing.T) {
	eng, ctx := gpuEngine(t)
	model, tcOK := mmModel(eng)
	r := newRand(t)
	shapes := []mmShape{{37, 48, 70, 0}, {130, 64, 300, 8}, {200, 272, 264, 0}, {5, 32, 33, 3}}
	for _, tc := range mmTierCases {
		if tc.tier == TierTensorCore && !tcOK {
			continue
		}
		for _, ep := range gatedEpilogues {
			for i, s := range shapes {
				ta, tb := i%2 == 1, i/2 == 1
				alpha := float32(1)
				if i == 3 {
					alpha = -0.75
				}
				gatedMMCheck(t, eng, ctx, r, model, mmRun{tc: tc, s: s, ta: ta, tb: tb, ep: ep, alpha: alpha, specials: i%2 == 0})
			}
		}
	}
}

// TestMatmulGatedFusedKernelsMatchReference: the same with
// DETGEMM_MATMUL_FUSED naming each tile with gated kernels (wg128x256,
// the ping-pong wg128x128p), so that the tensor-core requests the fused
// wgmma kernels can run (NN, NT, 16-bit out, leading dimensions multiples
// of 8) run them.
func TestMatmulGatedFusedKernelsMatchReference(t *testing.T) {
	for _, tile := range []tcTile{tcTileWG128x256, tcTileWG128x128P} {
		t.Run(wgGeometries[tile].name, func(t *testing.T) { gatedFusedKernelsMatchReference(t, tile) })
	}
}

func gatedFusedKernelsMatchReference(t *testing.T, tile tcTile) {
	eng, ctx, model := fusedEngineOn(t, tile)
	r := newRand(t)
	shapes := []mmShape{{200, 272, 136, 0}, {72, 304, 64, 8}, {2200, 4112, 32, 0}, {5, 32, 40, 0}}
	for _, tc := range mmTierCases[3:5] {
		for _, ep := range gatedEpilogues {
			for i, s := range shapes {
				alpha := float32(1)
				if i == 1 {
					alpha = 1.5
				}
				gatedMMCheck(t, eng, ctx, r, model, mmRun{tc: tc, s: s, tb: i%2 == 1, ep: ep, alpha: alpha, specials: i != 2})
			}
		}
	}
}

// TestMatmulGatedBatchInvariance: a gated forward's rows computed with M =
// 1 and inside M = 700 (and a backward's) have the same bits.
func TestMatmulGatedBatchInvariance(t *testing.T) {
	eng, ctx := gpuEngine(t)
	_, tcOK := mmModel(eng)
	r := newRand(t)
	for _, tc := range mmTierCases {
		if tc.tier == TierTensorCore && !tcOK {
			continue
		}
		for _, ep := range []Epilogue{GatedSwiGLUAuxBias, GatedGeGLU, DGatedSwiGLU, DGatedGeGLU} {
			_, bwd, bias, aux := gatedEpi(ep)
			const M, N, K = 700, 128, 320
			dCols, auxCols := gatedCols(ep, N)
			A := newMMInput(t, ctx, r, tc.in, M, K, K, false)
			B := newMMInput(t, ctx, r, tc.in, K, N, N, false)
			var biasDev, auxIn cudaload.DevicePtr
			if bias {
				biasDev = upload(t, ctx, randomOperand(r, F32, N))
			}
			if bwd {
				auxIn = newMMInput(t, ctx, r, tc.out, M, auxCols, auxCols, false).dev
			}
			run := func(rows int, row0 int) []uint32 {
				d := MatmulDesc{Tier: tc.tier, In: tc.in, Out: tc.out, M: rows, N: N, K: K, Alpha: 1, Epilogue: ep}
				D := newMMOutput(t, ctx, tc.out, rows, dCols, dCols)
				a := MatmulArgs{A: A.dev + cudaload.DevicePtr(row0*K*tc.in.Size()), B: B.dev, D: D.dev, Bias: biasDev}
				switch {
				case bwd:
					a.Aux = auxIn + cudaload.DevicePtr(row0*auxCols*tc.out.Size())
				case aux:
					a.Aux = newMMOutput(t, ctx, tc.out, rows, auxCols, auxCols).dev
				}
				require.NoError(t, eng.Matmul(MatmulRequest{d, a}))
				return readBits(t, eng, ctx, D.dev, tc.out, D.n())
			}
			all := run(M, 0)
			for _, row := range []int{0, 1, 355, M - 1} {
				one := run(1, row)
				require.Equal(t, all[row*dCols:(row+1)*dCols], one, "%v %v row %d alone", tc, ep, row)
			}
		}
	}
}

// gatedSweepInputs is the b of TestGatedVectorPathEveryPattern for type
// d: f32 every high half (so every sign, exponent and leading mantissa
// bits: every bf16 value) with 64 low halves each (0, 1, 0x7fff, 0x8000,
// 0xffff and random ones); bf16 and f16 every 16-bit pattern. a and dy are
// every pattern again in another order (16-bit types) or random values
// with specials (f32).
func gatedSweepInputs(r *rand.Rand, d DType) (a, b, dy operand) {
	bits := func(n int, f func(i int) uint32) operand {
		op := operand{d: d, values: make([]float32, n)}
		if !d.Half() {
			for i := range op.values {
				op.values[i] = math.Float32frombits(f(i))
			}
			return op
		}
		op.half = make([]uint16, n)
		for i := range op.half {
			op.half[i] = uint16(f(i))
		}
		if err := ref.Upcast(d, op.values, op.half); err != nil {
			panic(err)
		}
		return op
	}
	if d.Half() {
		return bits(1<<16, func(i int) uint32 { return uint32(i) * 40503 }), bits(1<<16, func(i int) uint32 { return uint32(i) }),
			bits(1<<16, func(i int) uint32 { return uint32(i) * 21845 })
	}
	low := [64]uint32{0, 1, 0x7fff, 0x8000, 0xffff}
	for i := 5; i < len(low); i++ {
		low[i] = r.Uint32() & 0xffff
	}
	n := 1 << 16 * len(low)
	b = bits(n, func(i int) uint32 { return uint32(i/len(low))<<16 | low[i%len(low)] })
	a = withSpecials(r, randomOperand(r, d, n), n/97)
	dy = withSpecials(r, randomOperand(r, d, n), n/97)
	return a, b, dy
}

// TestGatedVectorPathEveryPattern: the vector kernels (gated.cu's _v4
// entries: eight indices a thread, the activations' branches as selects,
// the division without its slow path) give the contract's
// bits, forward and backward, for every gate, on gatedSweepInputs: every
// exponent and sign of b, every NaN, infinity and subnormal class, the
// thresholds of the exponential and of GELU, and every 16-bit pattern of
// the half types' a, b and dy (their widening and rounding).
func TestGatedVectorPathEveryPattern(t *testing.T) {
	eng, ctx := gpuEngine(t)
	r := newRand(t)
	for _, d := range []DType{F32, BF16, F16} {
		a, b, dy := gatedSweepInputs(r, d)
		const n = 4096
		rows := len(b.values) / n
		desc := GatedDesc{Type: d, Layout: GatedSeparate, Rows: rows, N: n, LDX: n, LDXB: n, LDY: n}
		da, db, ddy := upload(t, ctx, a), upload(t, ctx, b), upload(t, ctx, dy)
		for _, g := range gatedGates {
			desc.Gate = g
			name := fmt.Sprintf("%v/%v", g, d)
			y := newMMOutput(t, ctx, d, rows, n, n)
			require.NoError(t, eng.GatedForward(desc, GatedArgs{X: da, XB: db, Y: y.dev}), name)
			want := make([]float32, len(b.values))
			require.NoError(t, ref.GatedForward(g, d, want, a.values, b.values))
			for i, v := range want {
				y.set(i, v)
			}
			requireSameBits(t, y.bits(), readBits(t, eng, ctx, y.dev, d, y.n()), n, name+" forward")

			ga, gb := newMMOutput(t, ctx, d, rows, n, n), newMMOutput(t, ctx, d, rows, n, n)
			bd := desc
			bd.LDG, bd.LDGB = n, n
			require.NoError(t, eng.GatedBackward(bd, GatedArgs{X: da, XB: db, Y: ddy, G: ga.dev, GB: gb.dev}), name)
			wa, wb := make([]float32, len(b.values)), make([]float32, len(b.values))
			require.NoError(t, ref.GatedBackward(g, d, wa, wb, dy.values, a.values, b.values))
			for i := range wa {
				ga.set(i, wa[i])
				gb.set(i, wb[i])
			}
			requireSameBits(t, ga.bits(), readBits(t, eng, ctx, ga.dev, d, ga.n()), n, name+" da")
			requireSameBits(t, gb.bits(), readBits(t, eng, ctx, gb.dev, d, gb.n()), n, name+" db")
		}
	}
}

// TestGatedThroughput times the standalone gated kernels beside a
// device-to-device copy of the same bytes (DETGEMM_GATED_PERF=1; the bench
// measures them for the record). DETGEMM_GATED_PERF_N lists the widths n
// (default "11008 5504"), rows 4096, bf16 unless DETGEMM_GATED_PERF_TYPES
// names others ("bf16 f16 f32"); DETGEMM_GATED_PERF_DIRS "fwd" or "bwd"
// keeps one direction; DETGEMM_GATED_PERF_PER lists grids (blocks a
// multiprocessor) to time in turn.
func TestGatedThroughput(t *testing.T) {
	eng, ctx := perfEngine(t, "DETGEMM_GATED_PERF", "the gated kernels")
	r := newRand(t)
	start, end := mustEvent(t, ctx), mustEvent(t, ctx)
	widths := strings.Fields(os.Getenv("DETGEMM_GATED_PERF_N"))
	if len(widths) == 0 {
		widths = []string{"11008", "5504"}
	}
	types := strings.Fields(os.Getenv("DETGEMM_GATED_PERF_TYPES"))
	if len(types) == 0 {
		types = []string{"bf16"}
	}
	// DETGEMM_GATED_PERF_PER lists blocks a multiprocessor to time in turn
	// (default the engine's, gatedPerSM).
	engines := gatedPerSM
	t.Cleanup(func() { gatedPerSM = engines }) // also if a timing fails mid-loop
	pers := []int64{engines}
	if v := strings.Fields(os.Getenv("DETGEMM_GATED_PERF_PER")); len(v) > 0 {
		pers = nil
		for _, f := range v {
			n, err := strconv.Atoi(f)
			require.NoError(t, err, "DETGEMM_GATED_PERF_PER")
			pers = append(pers, int64(n))
		}
	}
	const rows = 4096
	for _, ts := range types {
		d := map[string]DType{"bf16": BF16, "f16": F16, "f32": F32}[ts]
		for _, w := range widths {
			n, err := strconv.Atoi(w)
			require.NoError(t, err)
			block := upload(t, ctx, randomOperand(r, d, 1<<20))
			fill := func(elems int) cudaload.DevicePtr { return tiledRandom(t, ctx, block, 1<<20, d, elems) }
			h, dy := fill(rows*2*n), fill(rows*n)
			y := alloc(t, ctx, uint64(rows*n*d.Size()))
			g := alloc(t, ctx, uint64(rows*2*n*d.Size()))
			bytes := func(bwd bool) int {
				if bwd {
					return 5 * n * rows * d.Size()
				}
				return 3 * n * rows * d.Size()
			}
			// The copy moves as many bytes as the gated call reads and writes.
			cpSrc, cpDst := alloc(t, ctx, uint64(bytes(true)/2)), alloc(t, ctx, uint64(bytes(true)/2))
			for _, bwd := range []bool{false, true} {
				if dirs := os.Getenv("DETGEMM_GATED_PERF_DIRS"); dirs != "" && !strings.Contains(dirs, map[bool]string{false: "fwd", true: "bwd"}[bwd]) {
					continue // "fwd", "bwd" or both
				}
				cp := bestPerLaunch(t, eng, start, end, 20, func(int) error {
					return eng.Stream().MemcpyDtoDAsync(cpDst, cpSrc, uint64(bytes(bwd)/2))
				})
				cpGB := float64(bytes(bwd)) / float64(cp.Nanoseconds())
				for _, gate := range gatedGates {
					desc := GatedDesc{Gate: gate, Type: d, Layout: GatedHalves, Rows: rows, N: n}
					run := func(int) error { return eng.GatedForward(desc, GatedArgs{X: h, Y: y}) }
					if bwd {
						run = func(int) error { return eng.GatedBackward(desc, GatedArgs{X: h, Y: dy, G: g}) }
					}
					for _, per := range pers {
						gatedPerSM = per
						best := bestPerLaunch(t, eng, start, end, 20, run)
						gatedPerSM = engines
						gb := float64(bytes(bwd)) / float64(best.Nanoseconds())
						t.Logf("gatedperf %v %5dx%5d %-6v bwd=%-5v per=%-4d %8.1f us %6.0f GB/s  copy %6.0f GB/s  %5.1f %% of copy", d, rows, n, gate, bwd,
							per, float64(best.Nanoseconds())/1e3, gb, cpGB, 100*gb/cpGB)
					}
				}
			}
		}
	}
}
