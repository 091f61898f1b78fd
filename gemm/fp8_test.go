package gemm

import (
	"errors"
	"math"
	"testing"

	"github.com/detgemm/detgemm/cudaload"
	"github.com/detgemm/detgemm/gemm/ref"
	"github.com/detgemm/detgemm/kernels"
	"github.com/stretchr/testify/require"
)

func TestFP8Refuses(t *testing.T) {
	e := sp24TestEngine(hopper)
	good := FP8Desc{A: E4M3, B: E4M3, Out: BF16, M: 5, N: 24, K: 64, Scaling: ScaleRow, Accum: AccumPromoted}
	args := FP8Args{A: 1 << 40, B: 2 << 40, D: 3 << 40, ScaleA: 4 << 40, ScaleB: 5 << 40}
	for _, c := range []struct {
		name string
		d    func(*FP8Desc)
		a    func(*FP8Args)
		want error
	}{
		{"ampere", nil, nil, ErrArch},
		{"bf16 operand", func(d *FP8Desc) { d.A = BF16 }, nil, ErrDType},
		{"e5m2 pair", func(d *FP8Desc) { d.A, d.B = E5M2, E5M2 }, nil, ErrDType},
		{"output", func(d *FP8Desc) { d.Out = DType(99) }, nil, ErrDType},
		{"epilogue", func(d *FP8Desc) { d.Epilogue = DGeluBgrad }, nil, ErrEpilogue},
		{"accum", func(d *FP8Desc) { d.Accum = 0 }, nil, ErrScale},
		{"scaling", func(d *FP8Desc) { d.Scaling = 7 }, nil, ErrScale},
		{"block fast", func(d *FP8Desc) { d.Scaling, d.Accum = ScaleBlock, AccumFast }, nil, ErrScale},
		{"K odd", func(d *FP8Desc) { d.K = 40 }, nil, ErrDimension},
		{"N zero", func(d *FP8Desc) { d.N = 0 }, nil, ErrDimension},
		{"M negative", func(d *FP8Desc) { d.M = -1 }, nil, ErrDimension},
		{"LDA short", func(d *FP8Desc) { d.LDA = 48 }, nil, ErrLeadingDim},
		{"LDB pitch", func(d *FP8Desc) { d.LDB = 72 }, nil, ErrLeadingDim},
		{"LDD short", func(d *FP8Desc) { d.LDD = 20 }, nil, ErrLeadingDim},
		{"huge", func(d *FP8Desc) { d.M = math.MaxInt32 }, nil, ErrTooLarge},
		{"nil A", nil, func(a *FP8Args) { a.A = 0 }, ErrNilPointer},
		{"A misaligned", nil, func(a *FP8Args) { a.A += 8 }, ErrMisaligned},
		{"D misaligned", nil, func(a *FP8Args) { a.D++ }, ErrMisaligned},
		{"bias unused", nil, func(a *FP8Args) { a.Bias = 6 << 40 }, ErrOperand},
		{"amax unused", nil, func(a *FP8Args) { a.Amax = 6 << 40 }, ErrOperand},
		{"D over A", nil, func(a *FP8Args) { a.D = a.A + 16 }, ErrAlias},
		{"D over ScaleB", nil, func(a *FP8Args) { a.D = a.ScaleB }, ErrAlias},
	} {
		t.Run(c.name, func(t *testing.T) {
			eng := e
			if c.name == "ampere" {
				eng = sp24TestEngine(kernels.Arch{Major: 8})
			}
			d, a := good, args
			if c.d != nil {
				c.d(&d)
			}
			if c.a != nil {
				c.a(&a)
			}
			p, err := eng.PlanFP8(d)
			if err == nil {
				err = p.Run(a)
			}
			require.ErrorIs(t, err, c.want)
			var ae *ArgError
			require.ErrorAs(t, err, &ae)
		})
	}
	p, err := e.PlanFP8(good)
	require.NoError(t, err)
	require.ErrorIs(t, p.Run(args), ErrClosed)
	require.Equal(t, []string{"detgemm_fp8_prom32_none_e4m3e4m3_bf16"}, p.Kernels()) // one wave of 32-column tiles
}

func TestFP8TileChoice(t *testing.T) {
	for _, c := range []struct {
		M, N int64
		fast bool
		act  string
		want int64
	}{
		{64, 4096, true, "none", 32},     // 128 tiles of 32 columns: one wave on 132 SMs
		{128, 4096, false, "gelu", 32},   // the same, promoted, with an activation
		{64, 7168, false, "none", 64},    // 224 tiles of 32 columns: two waves; 56 of 128 leave SMs idle
		{1, 4224, true, "none", 32},      // 132 tiles of 32 columns
		{1, 4256, true, "none", 64},      // 133
		{128, 24576, false, "none", 64},  // 192 tiles of 128 in two rounds 73 % full; 384 of 64 in three 97 % full
		{64, 24576, true, "none", 64},    // the same for the fast chain (96 tiles of 256 leave SMs idle)
		{128, 32768, false, "none", 128}, // 256 of 128 and 512 of 64: both 97 % full, 128 kept
		{129, 24576, false, "none", 128}, // two rows of tiles: 384 tiles of 128
		{128, 16896, false, "none", 128}, // 132 tiles of 128: one full round
		{4096, 4096, true, "none", 256},  // 512 tiles of 256 columns
		{4096, 4096, true, "gelu", 128},  // no activation at 256 columns
		{4096, 4096, false, "none", 128}, // promoted: no 256 tile
		{1024, 4096, true, "none", 128},  // 128 tiles of 256 columns would leave SMs idle
		{8192, 8192, true, "relu", 128},
	} {
		require.Equal(t, c.want, fp8TileFor(c.M, c.N, 132, c.fast, c.act), "%+v", c)
	}
	// gemm_fp8.cu's F8Tile::SMEM.
	require.Equal(t, uint32(10*(128+32)*128+1024+160+32*4+128+16384+10*528), fp8SharedBytes(32))
	require.Equal(t, uint32(8*(128+64)*128+1024+128+64*4+128+16384+8*528), fp8SharedBytes(64))
	require.Equal(t, uint32(4*(128+256)*128+1024+64+256*4+128+16384+4*528), fp8SharedBytes(256))
	for _, w := range []int64{32, 64, 128, 256} {
		require.LessOrEqual(t, fp8SharedBytes(w), uint32(227<<10), "tile %d fits a Hopper block", w)
	}
}

func TestQuantizeFP8Refuses(t *testing.T) {
	e := sp24TestEngine(hopper)
	good := FP8QuantizeDesc{In: BF16, Out: E4M3, Rows: 64, Cols: 300, Groups: Group1x128}
	args := FP8QuantizeArgs{X: 1 << 40, Q: 2 << 40, Scales: 3 << 40}
	for _, c := range []struct {
		name string
		d    func(*FP8QuantizeDesc)
		a    func(*FP8QuantizeArgs)
		want error
	}{
		{"in", func(d *FP8QuantizeDesc) { d.In = E4M3 }, nil, ErrDType},
		{"out", func(d *FP8QuantizeDesc) { d.Out = F16 }, nil, ErrDType},
		{"groups", func(d *FP8QuantizeDesc) { d.Groups = 0 }, nil, ErrScale},
		{"rows", func(d *FP8QuantizeDesc) { d.Rows = -2 }, nil, ErrDimension},
		{"ldx", func(d *FP8QuantizeDesc) { d.LDX = 299 }, nil, ErrLeadingDim},
		{"ldq transposed", func(d *FP8QuantizeDesc) { d.Transpose, d.LDQ = true, 63 }, nil, ErrLeadingDim},
		{"nil X", nil, func(a *FP8QuantizeArgs) { a.X = 0 }, ErrNilPointer},
		{"X misaligned", nil, func(a *FP8QuantizeArgs) { a.X++ }, ErrMisaligned},
		{"scales misaligned", nil, func(a *FP8QuantizeArgs) { a.Scales += 2 }, ErrMisaligned},
		{"Q over X", nil, func(a *FP8QuantizeArgs) { a.Q = a.X + 100 }, ErrAlias},
	} {
		t.Run(c.name, func(t *testing.T) {
			d, a := good, args
			if c.d != nil {
				c.d(&d)
			}
			if c.a != nil {
				c.a(&a)
			}
			err := e.QuantizeFP8(d, a)
			require.ErrorIs(t, err, c.want)
			var ae *ArgError
			require.ErrorAs(t, err, &ae)
		})
	}
	require.ErrorIs(t, e.QuantizeFP8(good, args), ErrClosed)
	require.ErrorIs(t, sp24TestEngine(kernels.Arch{Major: 8, Minor: 9}).QuantizeFP8(good, args), ErrArch)
	require.Equal(t, 64*3, good.ScaleCount())
}

// FuzzFP8Matmul: PlanFP8 and Run never panic; they return a typed error,
// or a plan whose resolved description gemm/ref accepts.
func FuzzFP8Matmul(f *testing.F) {
	f.Add(uint8(0), uint8(0), uint8(0), uint8(1), uint8(1), uint8(0), 5, 24, 64, 0, 0, 0, uint64(1<<40), uint64(0))
	f.Add(uint8(1), uint8(0), uint8(3), uint8(3), uint8(1), uint8(5), 1, 7, 48, 64, 16, 9, uint64(1<<40), uint64(1))
	f.Add(uint8(2), uint8(1), uint8(4), uint8(3), uint8(2), uint8(2), 3, 130, 272, 288, 272, 131, uint64(1<<40), uint64(3))
	f.Add(uint8(2), uint8(2), uint8(2), uint8(2), uint8(0), uint8(9), -1, 0, 8, -1, -1, -1, uint64(0), uint64(3))
	f.Add(uint8(0), uint8(1), uint8(1), uint8(1), uint8(1), uint8(1), math.MaxInt32, math.MaxInt32, 1<<30, math.MaxInt, 0, 0, uint64(math.MaxUint64-64), uint64(4))
	f.Add(uint8(0), uint8(0), uint8(0), uint8(3), uint8(1), uint8(0), 300, 250, 656, 0, 0, 0, uint64(1<<40), uint64(0)) // block scales past 128 rows
	f.Fuzz(func(t *testing.T, ta, tb, out, sc, acc, ep uint8, M, N, K, lda, ldb, ldd int, base, shift uint64) {
		types := []DType{E4M3, E5M2, BF16, 0}
		outs := []DType{BF16, F16, F32, E4M3, E5M2, 0}
		d := FP8Desc{A: types[ta%4], B: types[tb%4], Out: outs[out%6], M: M, N: N, K: K, LDA: lda, LDB: ldb, LDD: ldd,
			Scaling: FP8Scaling(sc % 5), Accum: FP8Accum(acc % 4), Epilogue: Epilogue(ep % 40)}
		e := sp24TestEngine(hopper)
		p, err := e.PlanFP8(d)
		var ae *ArgError
		if err != nil {
			if !errors.As(err, &ae) {
				t.Fatalf("untyped error %v", err)
			}
			return
		}
		b := cudaload.DevicePtr(base)
		a := FP8Args{A: b, B: b + 1<<44, D: b + 2<<44 + cudaload.DevicePtr(shift%64), ScaleA: b + 3<<44, ScaleB: b + 4<<44}
		if p.bias {
			a.Bias = b + 5<<44
		}
		if d.Out.FP8() && shift%2 == 0 {
			a.ScaleD, a.Amax = b+6<<44, b+7<<44
		}
		if err := p.Run(a); !errors.Is(err, ErrClosed) && !errors.As(err, &ae) {
			t.Fatalf("run: untyped error %v", err)
		}
		pd := p.Desc()
		if pd.LDA < pd.K || pd.LDB < pd.K || pd.LDD < pd.N || pd.K%16 != 0 || pd.LDA%16 != 0 || pd.LDB%16 != 0 {
			t.Fatalf("accepted %+v", pd)
		}
		if M < 1 || M > 4 || N > 24 || K > 64 || pd.LDA > 128 || pd.LDB > 128 || pd.LDD > 64 {
			return
		}
		sa, sb := pd.scaleLens()
		req := ref.FP8MatmulRequest{A: pd.A, B: pd.B, Out: pd.Out, M: M, N: N, K: K, AData: make([]uint8, (M-1)*pd.LDA+K), LDA: pd.LDA,
			BData: make([]uint8, (N-1)*pd.LDB+K), LDB: pd.LDB, Scaling: pd.Scaling, ScaleA: make([]float32, sa), ScaleB: make([]float32, sb),
			Accum: pd.Accum, Epilogue: pd.Epilogue, LDD: pd.LDD}
		if p.bias {
			req.Bias = make([]float32, N)
		}
		switch {
		case pd.Out.FP8():
			req.D8, req.ScaleD = make([]uint8, (M-1)*pd.LDD+N), 1
		case pd.Out == F32:
			req.D = ref.Values(make([]float32, (M-1)*pd.LDD+N))
		default:
			req.D = ref.Bits(make([]uint16, (M-1)*pd.LDD+N))
		}
		if err := (ref.Options{}).FP8Matmul(req); err != nil {
			t.Fatalf("the engine accepts %+v, gemm/ref refuses: %v", pd, err)
		}
	})
}

// FuzzQuantizeFP8: QuantizeFP8 never panics; it returns a typed error, or
// (on an engine without a GPU) ErrClosed after every check passed, for a
// description gemm/ref accepts.
func FuzzQuantizeFP8(f *testing.F) {
	f.Add(uint8(0), uint8(0), uint8(1), false, 64, 300, 0, 0, uint64(1<<40))
	f.Add(uint8(1), uint8(1), uint8(3), true, 3, 129, 130, 4, uint64(1<<40+2))
	f.Add(uint8(2), uint8(0), uint8(4), true, 1, 1, 1, 1, uint64(1))
	f.Add(uint8(3), uint8(2), uint8(0), false, -1, 0, -5, 0, uint64(0))
	f.Add(uint8(0), uint8(1), uint8(2), false, math.MaxInt32, 2, 0, 0, uint64(math.MaxUint64-3))
	f.Fuzz(func(t *testing.T, in, out, g uint8, tr bool, rows, cols, ldx, ldq int, base uint64) {
		d := FP8QuantizeDesc{In: []DType{F32, BF16, F16, E4M3}[in%4], Out: []DType{E4M3, E5M2, BF16}[out%3], Rows: rows, Cols: cols,
			LDX: ldx, LDQ: ldq, Transpose: tr, Groups: FP8Groups(g % 6)}
		b := cudaload.DevicePtr(base)
		err := sp24TestEngine(hopper).QuantizeFP8(d, FP8QuantizeArgs{X: b, Q: b + 1<<44, Scales: b + 2<<44})
		var ae *ArgError
		if !errors.Is(err, ErrClosed) {
			if !errors.As(err, &ae) {
				t.Fatalf("untyped error %v", err)
			}
			return
		}
		if rows < 1 || cols < 1 || rows*cols > 4096 || ldx > 256 || ldq > 256 {
			return
		}
		lx := max(d.LDX, cols)
		qr, qc := d.qShape()
		lq := max(d.LDQ, qc)
		req := ref.FP8QuantizeRequest{Out: d.Out, Rows: rows, Cols: cols, In: d.In, LDX: lx, Transpose: tr, Groups: d.Groups,
			Q: make([]uint8, (qr-1)*lq+qc), LDQ: lq, Scales: make([]float32, d.ScaleCount())}
		if d.In == F32 {
			req.X = ref.Values(make([]float32, (rows-1)*lx+cols))
		} else {
			req.X = ref.Bits(make([]uint16, (rows-1)*lx+cols))
		}
		if err := ref.FP8Quantize(req); err != nil {
			t.Fatalf("the engine accepts %+v, gemm/ref refuses: %v", d, err)
		}
	})
}

// TestFP8PlansTakeNoWorkspace: PlanFP8 needs no device memory (it
// succeeds on a closed engine, where reserving a workspace would fail
// with ErrClosed), and a plan runs one kernel, the one its tile names —
// block scales included, past 128 rows too (the product reads them where
// the caller put them), and 64 columns at M <= 128 where they fill the
// SMs' rounds better (N = 24576 on 132 SMs).
func TestFP8PlansTakeNoWorkspace(t *testing.T) {
	e := sp24TestEngine(hopper)
	e.sms = 132 // an H100 SXM's
	for _, c := range []struct {
		M, N, K int
		s       FP8Scaling
		kernel  string
	}{
		{128, 4096, 7168, ScaleBlock, "detgemm_fp8_prom32_none_e4m3e4m3_bf16"},
		{129, 4096, 7168, ScaleBlock, "detgemm_fp8_prom64_none_e4m3e4m3_bf16"},
		{128, 24576, 7168, ScaleBlock, "detgemm_fp8_prom64_none_e4m3e4m3_bf16"},
		{4096, 7168, 16384, ScaleBlock, "detgemm_fp8_prom128_none_e4m3e4m3_bf16"},
		{333, 250, 656, ScaleBlock, "detgemm_fp8_prom32_none_e4m3e4m3_bf16"},
		{4096, 7168, 16384, ScaleRow, "detgemm_fp8_prom128_none_e4m3e4m3_bf16"},
	} {
		p, err := e.PlanFP8(FP8Desc{A: E4M3, B: E4M3, Out: BF16, M: c.M, N: c.N, K: c.K, Scaling: c.s, Accum: AccumPromoted})
		require.NoError(t, err, "%+v", c)
		require.Zero(t, p.WorkspaceBytes(), "%+v", c)
		require.Equal(t, []string{c.kernel}, p.Kernels(), "%+v", c)
	}
}
