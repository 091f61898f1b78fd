package gemm

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/detgemm/detgemm/cudaload"
	"github.com/detgemm/detgemm/gemm/ref"
	"github.com/stretchr/testify/require"
)

// spfAdversarial draws n values of type d for the sparse tests: mostly
// magnitudes over a wide exponent range (60 binades for bf16, 12 for f16),
// with zeros, subnormals of the type, exact cancellation partners and a few
// of the contract's specials (NaN, ±Inf) where specials is set.
func spfAdversarial(r *rand.Rand, d DType, n int, specials bool) operand {
	spread := 60
	sub := math.Ldexp(1, -130)
	if d == F16 {
		spread, sub = 12, math.Ldexp(1, -20)
	}
	v := make([]float32, n)
	for i := range v {
		switch k := r.IntN(20); {
		case k == 0:
			v[i] = 0
		case k == 1:
			v[i] = float32(sub * float64(1+r.IntN(7)) * float64(1-2*r.IntN(2)))
		case k == 2 && i > 0:
			v[i] = -v[i-1] // cancellation
		case k < 10:
			v[i] = float32((r.Float64()*2 - 1) * math.Ldexp(1, r.IntN(2*spread+1)-spread))
		default:
			v[i] = float32(r.Float64()*2 - 1)
		}
	}
	o := fromValues(d, v)
	if specials {
		o = withSpecials(r, o, 1+n/997)
	}
	return o
}

// spfWeight is a random compressed weight: values (N × K/2) and valid
// metadata (N × ceil(K/32)), uploaded.
type spfWeight struct {
	values operand
	meta   []uint32
	dv, dm cudaload.DevicePtr
}

func newSpfWeight(t *testing.T, ctx *cudaload.Context, r *rand.Rand, d DType, K, N int, specials bool) spfWeight {
	t.Helper()
	kw := (K + 31) / 32
	pats := []uint32{0x4, 0x8, 0xC, 0x9, 0xD, 0xE}
	w := spfWeight{values: spfAdversarial(r, d, N*K/2, specials), meta: make([]uint32, N*kw)}
	for n := 0; n < N; n++ {
		for g := 0; g < kw*8; g++ {
			p := uint32(4)
			if 4*g < K {
				p = pats[r.IntN(len(pats))]
			}
			w.meta[n*kw+g/8] |= p << (4 * (g % 8))
		}
	}
	w.dv = upload(t, ctx, w.values)
	w.dm = alloc(t, ctx, uint64(4*len(w.meta)))
	require.NoError(t, cudaload.CopyToDevice(ctx, w.dm, w.meta))
	return w
}

type spfCase struct {
	M, N, K    int
	padX, padY int
	in, out    DType
	ep         Epilogue
}

// spfCheck runs one case on the GPU and compares Y (and the aux) with
// ref.Options.Sparse24Forward bit for bit, padding included (poisoned
// first, untouched after). It returns Y's bits for batch checks.
func spfCheck(t *testing.T, eng *Engine, ctx *cudaload.Context, r *rand.Rand, model ref.TCModel, c spfCase, x mmMat, w spfWeight, bias []float32, dbias cudaload.DevicePtr) []uint32 {
	t.Helper()
	name := fmt.Sprintf("%v→%v M=%d N=%d K=%d %v pad %d/%d", c.in, c.out, c.M, c.N, c.K, c.ep, c.padX, c.padY)
	spec := sp24Spec[c.ep]
	desc := Sparse24Desc{In: c.in, Out: c.out, M: c.M, N: c.N, K: c.K, LDX: x.ld, LDY: c.N + c.padY, Epilogue: c.ep}
	y := newMMOutput(t, ctx, c.out, c.M, c.N, desc.LDY)
	args := Sparse24Args{X: x.dev, Values: w.dv, Meta: w.dm, Y: y.dev}
	req := ref.Sparse24Request{M: c.M, N: c.N, K: c.K, X: x.refOperand(), LDX: x.ld, Values: w.values.half, Meta: w.meta,
		Y: y.refOperand(), LDY: desc.LDY, Epilogue: c.ep}
	if spec.bias {
		args.Bias, req.Bias = dbias, bias[:c.N]
	}
	var aux mmMat
	var mask []uint8
	var dmask cudaload.DevicePtr
	if spec.aux {
		desc.LDAux = c.N + 1
		if spec.act == 1 {
			mask = make([]uint8, (c.M-1)*desc.LDAux+c.N)
			for i := range mask {
				mask[i] = 0xEE
			}
			dmask = alloc(t, ctx, uint64(len(mask)))
			require.NoError(t, ctx.MemsetD8(dmask, 0xEE, uint64(len(mask))))
			args.Aux, req.ReluMask = dmask, mask
		} else {
			aux = newMMOutput(t, ctx, c.out, c.M, c.N, desc.LDAux)
			args.Aux, req.Aux = aux.dev, aux.refOperand()
		}
		req.LDAux = desc.LDAux
	}
	require.NoError(t, eng.Sparse24Forward(desc, args), name)
	o := ref.Options{Tier: ref.TensorCore, In: c.in, Out: c.out, Model: model}
	require.NoError(t, o.Sparse24Forward(req), name)
	got := readBits(t, eng, ctx, y.dev, c.out, y.n())
	want := y.bits()
	requireSameBits(t, want, got, desc.LDY, name+" Y")
	if spec.aux && spec.act == 1 {
		gm := make([]uint8, len(mask))
		require.NoError(t, cudaload.CopyFromDevice(ctx, gm, dmask))
		require.Equal(t, mask, gm, name+" mask")
	} else if spec.aux {
		requireSameBits(t, aux.bits(), readBits(t, eng, ctx, aux.dev, c.out, aux.n()), desc.LDAux, name+" aux")
	}
	return got
}

var spfEpilogues = []Epilogue{Default, Bias, Relu, ReluBias, ReluAux, ReluAuxBias, Gelu, GeluBias, GeluAux, GeluAuxBias}

// TestSparse24MatchesReference: the sparse forward on the GPU equals the
// CPU model bit for bit over a shape sweep (odd M and N, every tile, K not
// a multiple of 32 or of the pipeline's stage, padded leading dimensions),
// both input types, both outputs, every epilogue, on adversarial data
// (exponent spreads, cancellation, subnormals, NaN, ±Inf).
func TestSparse24MatchesReference(t *testing.T) {
	eng, ctx, model := tcEngine(t)
	r := newRand(t)
	shapes := [][3]int{{1, 7, 16}, {3, 33, 48}, {16, 64, 64}, {17, 100, 96}, {5, 129, 4096}, {100, 72, 208},
		{128, 40, 272}, {129, 130, 160}, {257, 96, 1040}, {300, 520, 544}, {1, 4096, 4096}}
	i := 0
	for _, in := range []DType{BF16, F16} {
		for _, out := range []DType{in, F32} {
			for si, s := range shapes {
				M, N, K := s[0], s[1], s[2]
				padX, padY := 8*(si%3), si%4
				x := spfInput(t, ctx, spfAdversarial(r, in, (M-1)*(K+padX)+K, true), in, M, K, K+padX)
				w := newSpfWeight(t, ctx, r, in, K, N, true)
				bias := spfAdversarial(r, F32, N, false).values
				dbias := upload(t, ctx, fromValues(F32, bias))
				eps := []Epilogue{spfEpilogues[i%len(spfEpilogues)]}
				if si == 3 {
					eps = spfEpilogues
				}
				for _, ep := range eps {
					spfCheck(t, eng, ctx, r, model, spfCase{M, N, K, padX, padY, in, out, ep}, x, w, bias, dbias)
				}
				i++
			}
		}
	}
}

// TestSparse24HopperTilesMatchReference: gemm_sp24_wg's wgmma.sp tiles
// and gemm_sp24_rows' TMA-fed few-row tiles, forced for every M (the
// planner takes the first past 64 rows, the second up to 32), equal the
// CPU model bit for bit: odd M and N, K a multiple of 16 but not of 32 or
// of the stage's 64, rows and columns past a tile, padded leading
// dimensions, both input and output types, every epilogue (GELU on the
// 128-row tile, the only one that has it), adversarial data with
// specials. This is also the measurement of wgmma.sp's metadata layout and
// step: any other register layout or addition would differ here.
func TestSparse24HopperTilesMatchReference(t *testing.T) {
	eng, ctx, model := tcEngine(t)
	if !eng.hasWG {
		t.Skip("gemm_sp24_wg and gemm_sp24_rows run on sm_90a")
	}
	t.Cleanup(func() { sp24ForceTile = "" })
	r := newRand(t)
	shapes := [][3]int{{64, 128, 64}, {1, 7, 16}, {3, 33, 48}, {17, 100, 96}, {129, 130, 160}, {257, 96, 1040},
		{300, 520, 544}, {130, 129, 272}, {513, 257, 208}, {64, 64, 4096}, {129, 130, 128}, {300, 264, 512},
		{77, 257, 1280},
		// Whole tiles beside partial ones, and reductions whose last stage
		// ends three quarters in (K % 128 = 112: the wgmma.sp tiles' last
		// step half inside K); other K leave the wgmma.sp tiles unless
		// K % 128 = 0.
		{300, 383, 512}, {520, 262, 1136}, {256, 133, 112},
		// Enough row tiles for the metadata to be staged (sp24StageMTiles),
		// w256 included, N odd (staged rows past N repeat row N - 1's).
		{1030, 77, 256}, {777, 100, 384}}
	// The rows tiles: few rows and every kind of K (a stage of 128 cut
	// short, a last step of 16, metadata rows of 1, 3, 33 words, copied a
	// word at a time, and of multiples of 4, copied 16 bytes at a time),
	// and more rows than a tile (several row tiles).
	rowShapes := [][3]int{{1, 40, 128}, {1, 7, 16}, {3, 33, 48}, {8, 100, 96}, {16, 130, 272}, {9, 257, 1040},
		{32, 96, 128}, {31, 544, 512}, {17, 40, 4096}, {64, 64, 256}, {2, 1280, 208}, {33, 77, 160}, {77, 300, 1024}}
	i := 0
	for _, tile := range []string{"w64", "w128", "w256", "w64x64", "r8", "r16", "r32"} {
		tileShapes := shapes
		if sp24Tiles[tile].rows {
			tileShapes = rowShapes
		}
		for _, in := range []DType{BF16, F16} {
			for _, out := range []DType{in, F32} {
				for si, s := range tileShapes {
					M, N, K := s[0], s[1], s[2]
					padX, padY := 8*(si%3), si%4
					x := spfInput(t, ctx, spfAdversarial(r, in, (M-1)*(K+padX)+K, si > 0), in, M, K, K+padX)
					w := newSpfWeight(t, ctx, r, in, K, N, si > 0)
					bias := spfAdversarial(r, F32, N, false).values
					dbias := upload(t, ctx, fromValues(F32, bias))
					eps := []Epilogue{spfEpilogues[i%len(spfEpilogues)]}
					if si == 0 {
						eps = []Epilogue{Default}
					}
					if si == 3 || si == 5 || si == 13 {
						eps = spfEpilogues
					}
					for _, ep := range eps {
						if tile == "w256" && sp24Spec[ep].act == 2 {
							continue
						}
						sp24ForceTile = tile
						spfCheck(t, eng, ctx, r, model, spfCase{M, N, K, padX, padY, in, out, ep}, x, w, bias, dbias)
						sp24ForceTile = ""
					}
					i++
				}
			}
		}
	}
}

// spfInput uploads a given operand as an mmMat (rows × cols, ld).
func spfInput(t *testing.T, ctx *cudaload.Context, o operand, d DType, rows, cols, ld int) mmMat {
	m := mmMat{d: d, rows: rows, cols: cols, ld: ld, op: o}
	m.dev = upload(t, ctx, o)
	return m
}

// TestSparse24BatchInvariance: rows computed in a batch of 1, 7, 16, 40,
// 128 or all 600 (every tile) have the same bits; so do rows of a chunked
// call.
func TestSparse24BatchInvariance(t *testing.T) {
	eng, ctx, _ := tcEngine(t)
	r := newRand(t)
	const M, N, K = 600, 136, 1008
	for _, d := range []DType{BF16, F16} {
		x := spfInput(t, ctx, spfAdversarial(r, d, M*K, false), d, M, K, K)
		w := newSpfWeight(t, ctx, r, d, K, N, false)
		bias := spfAdversarial(r, F32, N, false).values
		dbias := upload(t, ctx, fromValues(F32, bias))
		full := alloc(t, ctx, uint64(M*N*d.Size()))
		run := func(row0, rows int, y cudaload.DevicePtr) {
			desc := Sparse24Desc{In: d, Out: d, M: rows, N: N, K: K, Epilogue: GeluBias}
			xp := x.dev + cudaload.DevicePtr(row0*K*d.Size())
			require.NoError(t, eng.Sparse24Forward(desc, Sparse24Args{X: xp, Values: w.dv, Meta: w.dm, Y: y, Bias: dbias}))
		}
		run(0, M, full)
		all := readBits(t, eng, ctx, full, d, M*N)
		for _, b := range [][2]int{{0, 1}, {599, 1}, {3, 7}, {100, 16}, {17, 40}, {200, 128}, {450, 150}} {
			y := poisoned(t, ctx, uint64(b[1]*N*d.Size()))
			run(b[0], b[1], y)
			got := readBits(t, eng, ctx, y, d, b[1]*N)
			requireSameBits(t, all[b[0]*N:(b[0]+b[1])*N], got, N, fmt.Sprintf("%v rows [%d, +%d)", d, b[0], b[1]))
		}
	}
}
