package main

import (
	"bytes"
	"encoding/csv"
	"errors"
	"flag"
	"io"
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/detgemm/detgemm/bench/cublaslt"
	"github.com/detgemm/detgemm/gemm"
	"github.com/detgemm/detgemm/gemm/ref"
)

func TestFP8GroupNamesEveryFP8ModeAndItsReferences(t *testing.T) {
	c, err := parseFlags([]string{"--modes", "fp8,lt-fp8,default", "--shapes-set", "fp8", "--dtypes", "bf16"}, io.Discard)
	require.NoError(t, err)
	require.Equal(t, []string{modeDefault, modeLtFP8, modeLtFP8Fast, modeFP8Fast, modeFP8Prom, modeFP8Row, modeFP8Block,
		modeFP8Out8, modeFP8Quant}, c.modes, "a mode named twice is measured once")
	require.Equal(t, fp8Group(), c.modes)
	require.True(t, wantsLt(c.modes), "cuBLASLt's fp8 product loads cuBLASLt")
	require.True(t, wantsLtFP8(c.modes))
	require.False(t, wantsMatmul(c.modes))
	require.False(t, wantsCuSPARSELt(c.modes))
	for _, m := range c.modes {
		require.Contains(t, allModes, m)
	}
	_, err = parseFlags([]string{"--modes", "fp8-nope"}, io.Discard)
	require.ErrorContains(t, err, "fp8-quant, lt-fp8, lt-fp8-fast, or a group: fp8, gated, matmul, sparse")
}

func TestHelpExplainsTheFP8Modes(t *testing.T) {
	var buf bytes.Buffer
	_, err := parseFlags([]string{"--help"}, &buf)
	require.True(t, errors.Is(err, flag.ErrHelp))
	for _, m := range append(append([]string{}, fp8Modes...), ltFP8Modes...) {
		require.Contains(t, buf.String(), "\n                 "+m+" ", "the Columns section explains %s", m)
	}
	for _, want := range []string{"--modes fp8", "--shapes-set fp8", "CUBLASLT_MATMUL_DESC_FAST_ACCUM", "fp8 tensor", "the groups fp8, gated"} {
		require.Contains(t, buf.String(), want)
	}
}

func TestFP8ModesAreOptIn(t *testing.T) {
	c, err := parseFlags(nil, io.Discard)
	require.NoError(t, err)
	for _, m := range append(append([]string{}, fp8Modes...), ltFP8Modes...) {
		require.NotContains(t, c.modes, m)
		require.NotContains(t, defaultModes, m)
		require.Contains(t, allModes, m)
	}
	require.False(t, wantsLtFP8(c.modes))
	c, err = parseFlags([]string{"--modes", "fp8-block, LT-FP8-FAST,fp8-quant"}, io.Discard)
	require.NoError(t, err)
	require.Equal(t, []string{modeFP8Block, modeLtFP8Fast, modeFP8Quant}, c.modes)
	require.True(t, wantsLt(c.modes), "lt-fp8-fast alone still loads cuBLASLt")
	c, err = parseFlags([]string{"--modes", "fp8-prom"}, io.Discard)
	require.NoError(t, err)
	require.False(t, wantsLt(c.modes), "the engine's fp8 rows need no cuBLASLt")
}

func TestFP8ShapeSetIsMKN(t *testing.T) {
	s, src, err := loadShapesOrSet("", "", "fp8")
	require.NoError(t, err)
	require.Equal(t, "--shapes-set fp8", src)
	require.Equal(t, []shape{
		{M: 4096, K: 4096, N: 4096}, {M: 8192, K: 8192, N: 8192},
		{M: 4096, K: 16384, N: 7168}, // DeepGEMM's M = 4096, N = 7168, K = 16384
		{M: 64, K: 7168, N: 4096}, {M: 64, K: 7168, N: 7168}, {M: 64, K: 7168, N: 24576},
		{M: 128, K: 7168, N: 4096}, {M: 128, K: 7168, N: 7168}, {M: 128, K: 7168, N: 24576},
	}, s)
	// The set is written as --shapes would write it: MxKxN.
	list := make([]string, len(s))
	for i, x := range s {
		list[i] = x.String()
		require.Zero(t, x.K%128, "%v: whole 1×128 blocks of the block scales", x)
	}
	require.Equal(t, "4096x16384x7168", list[2])
	again, err := parseShapeList(strings.Join(list, ","))
	require.NoError(t, err)
	require.Equal(t, s, again)
	c, err := parseFlags([]string{"--shapes-set", "fp8"}, io.Discard)
	require.NoError(t, err)
	require.Equal(t, "fp8", c.shapesSet)
	_, err = parseFlags([]string{"--shapes-set", "fp8", "--shapes-file", "x.txt"}, io.Discard)
	require.ErrorContains(t, err, "does not go with")
}

func TestFP8ScaleCountsAreTheQuantizersGroups(t *testing.T) {
	s := shape{M: 4096, K: 16384, N: 7168}
	a, b := fp8ScaleCounts(s, gemm.ScaleTensor)
	require.Equal(t, [2]int64{1, 1}, [2]int64{a, b})
	a, b = fp8ScaleCounts(s, gemm.ScaleRow)
	require.Equal(t, [2]int64{4096, 7168}, [2]int64{a, b})
	a, b = fp8ScaleCounts(s, gemm.ScaleBlock)
	require.Equal(t, [2]int64{4096 * 128, 56 * 128}, [2]int64{a, b}, "1×128 of A, 128×128 of B")
	// What QuantizeFP8 writes for A (M×K) and for B (stored N×K).
	for _, tc := range []struct {
		scaling      gemm.FP8Scaling
		groupA, grpB gemm.FP8Groups
	}{{gemm.ScaleTensor, gemm.GroupTensor, gemm.GroupTensor}, {gemm.ScaleRow, gemm.GroupRow, gemm.GroupRow},
		{gemm.ScaleBlock, gemm.Group1x128, gemm.Group128x128}} {
		for _, x := range []shape{s, {M: 64, K: 7168, N: 24576}, {M: 200, K: 160, N: 130}} {
			a, b := fp8ScaleCounts(x, tc.scaling)
			qa := gemm.FP8QuantizeDesc{Rows: x.M, Cols: x.K, Groups: tc.groupA}
			qb := gemm.FP8QuantizeDesc{Rows: x.N, Cols: x.K, Groups: tc.grpB}
			require.Equal(t, int64(qa.ScaleCount()), a, "%v %v", x, tc.scaling)
			require.Equal(t, int64(qb.ScaleCount()), b, "%v %v", x, tc.scaling)
		}
	}
}

func TestFP8Bytes(t *testing.T) {
	s := shape{M: 64, K: 7168, N: 24576}
	ops := int64(64*7168 + 24576*7168) // A and B, a byte an element
	d := int64(64 * 24576 * 2)         // bf16 D
	for _, tc := range []struct {
		mode string
		want int64
	}{
		{modeFP8Fast, ops + 8 + d},
		{modeFP8Prom, ops + 8 + d},
		{modeLtFP8, ops + 8 + d},
		{modeLtFP8Fast, ops + 8 + d},
		{modeFP8Row, ops + 4*(64+24576) + d},
		{modeFP8Block, ops + 4*(64*56+192*56) + d},
		{modeFP8Out8, ops + 8 + d/2 + 8}, // E4M3 D, ScaleD and amax
		{modeFP8Quant, 64*7168*3 + 4*64*56},
	} {
		got, ok := fp8MovedBytes(s, tc.mode)
		require.True(t, ok, tc.mode)
		require.Equal(t, tc.want, got, tc.mode)
		m, ok := movedBytes(s, bf16, tc.mode)
		require.True(t, ok, tc.mode)
		require.Equal(t, tc.want, m, "%s: movedBytes counts the fp8 bytes", tc.mode)
	}
	_, ok := fp8MovedBytes(s, modeDefault)
	require.False(t, ok)
	require.True(t, noProduct(modeFP8Quant))
	require.False(t, noProduct(modeFP8Block))
	require.Equal(t, 1*64*56, fp8QuantDesc(s).ScaleCount())
	require.Equal(t, gemm.FP8QuantizeDesc{In: gemm.BF16, Out: gemm.E4M3, Rows: 64, Cols: 7168, Groups: gemm.Group1x128}, fp8QuantDesc(s))
}

func TestFP8CodesAreFiniteNormalsAroundOne(t *testing.T) {
	for _, typ := range []gemm.DType{gemm.E4M3, gemm.E5M2} {
		exps := map[int]bool{}
		for r := range 256 {
			c := fp8Code(typ, byte(r))
			v := float64(ref.FP8Decode(typ, c))
			require.False(t, math.IsNaN(v) || math.IsInf(v, 0), "%v: byte %#x gives code %#x", typ, r, c)
			require.GreaterOrEqual(t, math.Abs(v), 1.0/16, "%v: code %#x is %g", typ, c, v)
			require.Less(t, math.Abs(v), 16.0, "%v: code %#x is %g", typ, c, v)
			require.Equal(t, r&0x80 != 0, v < 0, "the random byte's top bit is the sign")
			_, e := math.Frexp(math.Abs(v))
			exps[e] = true
		}
		require.Len(t, exps, 8, "%v: eight binades, 2⁻⁴ to 2³", typ)
	}
	a, b := make([]byte, fillChunk+100), make([]byte, fillChunk+100)
	fillFP8Codes(a, gemm.E4M3, 1, 7)
	fillFP8Codes(b, gemm.E4M3, 1, 7)
	require.Equal(t, a, b, "seeded: the same codes for every mode and library")
	fillFP8Codes(b, gemm.E4M3, 1, 8)
	require.NotEqual(t, a, b, "another operand, other codes")
	for _, c := range a {
		require.NotEqual(t, byte(0x7f), c&0x7f, "no E4M3 NaN")
	}
	sc := make([]float32, 1000)
	fillFP8Scales(sc, 1, 9)
	for _, v := range sc {
		require.True(t, v >= 0.5 && v < 1.5, "scale %g", v)
	}
	require.InDelta(t, 1/64.0, float64(fp8OutScale(4096)), 1e-9)
}

func TestFP8CopiesSpanThreeL2s(t *testing.T) {
	const l2 = 50 << 20
	s := shape{M: 64, K: 7168, N: 4096}
	per, _ := fp8MovedBytes(s, modeFP8Prom)
	n := fp8Copies(per, per, l2, 0)
	require.GreaterOrEqual(t, int64(n)*per, int64(3*l2))
	require.Less(t, int64(n-1)*per, int64(3*l2), "no more than needed")
	require.Equal(t, 2, fp8Copies(1<<30, 1<<30, l2, 0), "at least two")
	require.Equal(t, 3, fp8Copies(per, per, l2, 3*per+1), "the budget caps the copies")
	require.Equal(t, 1, fp8Copies(1<<30, 1<<30, l2, 1), "but one is always made")
}

func TestFP8PrepareRejectsWithoutTouchingTheGPU(t *testing.T) {
	b := &fp8Backend{}
	require.Equal(t, fp8Modes, b.Modes(bf16))
	require.Empty(t, b.Modes(f16), "the fp8 rows are filed under bf16 only")
	require.Empty(t, b.Modes(f32))
	for _, tc := range []struct {
		p    problem
		want string
	}{
		{problem{Shape: shape{64, 128, 64}, DType: bf16, Mode: modeTCFwd}, "no fp8 mode"},
		{problem{Shape: shape{64, 128, 64}, DType: f16, Mode: modeFP8Prom}, "filed under bf16"},
		{problem{Shape: shape{64, 128, 64}, DType: f32, Mode: modeFP8Quant}, "filed under bf16"},
	} {
		_, err := b.Prepare(nil, nil, tc.p, nil)
		require.ErrorContains(t, err, tc.want, tc.p.Mode)
	}
	lb := &ltFP8Backend{}
	require.Equal(t, ltFP8Modes, lb.Modes(bf16))
	require.Empty(t, lb.Modes(f16))
	require.Equal(t, ltBackendName, lb.Name())
	_, err := lb.Prepare(nil, nil, problem{Shape: shape{64, 128, 64}, DType: bf16, Mode: modeLt}, nil)
	require.ErrorContains(t, err, "no fp8 mode")
	_, err = lb.Prepare(nil, nil, problem{Shape: shape{64, 128, 64}, DType: f16, Mode: modeLtFP8}, nil)
	require.ErrorContains(t, err, "no fp8 mode")

	m, ok := lookupFP8(modeFP8Block)
	require.True(t, ok)
	require.Equal(t, gemm.FP8Desc{A: gemm.E4M3, B: gemm.E4M3, Out: gemm.BF16, M: 4096, N: 7168, K: 16384,
		Scaling: gemm.ScaleBlock, Accum: gemm.AccumPromoted, Epilogue: gemm.Default}, fp8Desc(m, shape{M: 4096, K: 16384, N: 7168}))
	for _, tc := range []struct {
		mode    string
		scaling gemm.FP8Scaling
		accum   gemm.FP8Accum
		out     gemm.DType
		lt      string
	}{
		{modeFP8Fast, gemm.ScaleTensor, gemm.AccumFast, gemm.BF16, modeLtFP8Fast},
		{modeFP8Prom, gemm.ScaleTensor, gemm.AccumPromoted, gemm.BF16, modeLtFP8},
		{modeFP8Row, gemm.ScaleRow, gemm.AccumPromoted, gemm.BF16, modeLtFP8},
		{modeFP8Block, gemm.ScaleBlock, gemm.AccumPromoted, gemm.BF16, modeLtFP8},
		{modeFP8Out8, gemm.ScaleTensor, gemm.AccumPromoted, gemm.E4M3, modeLtFP8},
	} {
		m, ok := lookupFP8(tc.mode)
		require.True(t, ok, tc.mode)
		d := fp8Desc(m, shape{M: 64, K: 256, N: 128})
		require.Equal(t, [3]any{tc.scaling, tc.accum, tc.out}, [3]any{d.Scaling, d.Accum, d.Out}, tc.mode)
		require.Equal(t, tc.lt, fairReference(tc.mode), tc.mode)
	}
	require.Empty(t, fairReference(modeFP8Quant))
	require.Empty(t, fairReference(modeLtFP8))

	// cuBLASLt's fp8 product: TN (our B stored N×K), E4M3 in, bf16 out.
	a := ltFP8Args(modeLtFP8Fast, shape{M: 64, K: 7168, N: 4096})
	require.Equal(t, cublaslt.MatmulArgs{M: 64, K: 7168, N: 4096, TransB: true, In: cublaslt.R8FE4M3, Out: cublaslt.R16BF, FastAccum: true}, a)
	require.False(t, ltFP8Args(modeLtFP8, shape{M: 64, K: 7168, N: 4096}).FastAccum)
}

func TestFP8RowsUseTheFP8PeakAndTheirOwnBytes(t *testing.T) {
	p := peaks{BF16: 989, F16: 989, TF32: 494, F32: 67, FP8: 1979}
	for _, m := range append(fp8ProductNames(), ltFP8Modes...) {
		got, unit := p.peakFor(bf16, m)
		require.Equal(t, 1979.0, got, m)
		require.Equal(t, "fp8 tensor", unit, m)
	}
	got, _ := p.peakFor(bf16, modeDefault)
	require.Equal(t, 989.0, got, "cuBLAS's bf16 row keeps the bf16 peak")

	big := shape{M: 8192, K: 8192, N: 8192}
	r := row{Shape: big, DType: bf16, Mode: modeFP8Block, MedianUS: 700, PeakName: "fp8 tensor", PeakTFLOPS: 1979}
	r.TFLOPS = tflops(big, r.MedianUS)
	fillBandwidth(&r, 3e12)
	fillFP8(&r, 3e12)
	b, _ := fp8MovedBytes(big, modeFP8Block)
	require.InDelta(t, float64(b)/700e-6, r.BytesPerSec, 1)
	require.Equal(t, "fp8 tensor", r.Roofline.Bound, "compute-bound at 8192³")
	require.InDelta(t, big.FLOPs()/1979e12*1e6, r.Roofline.ComputeUS, 1e-9)
	require.InDelta(t, r.Roofline.ComputeUS/700, r.Roofline.Fraction, 1e-12)
	require.InDelta(t, tflops(big, 700), r.TFLOPS, 1e-9)

	dec := shape{M: 64, K: 7168, N: 24576}
	d := row{Shape: dec, DType: bf16, Mode: modeLtFP8, MedianUS: 70, PeakName: "fp8 tensor", PeakTFLOPS: 1979}
	fillFP8(&d, 3e12)
	b, _ = fp8MovedBytes(dec, modeLtFP8)
	require.Equal(t, "memory", d.Roofline.Bound)
	require.InDelta(t, float64(b)/3e12*1e6, d.Roofline.MemoryUS, 1e-9, "a byte an operand element, not the bf16 sets'")

	q := row{Shape: dec, DType: bf16, Mode: modeFP8Quant, MedianUS: 10, TFLOPS: 5, PeakName: "bf16 tensor", PeakTFLOPS: 989}
	fillBandwidth(&q, 3e12)
	fillFP8(&q, 3e12)
	require.Zero(t, q.TFLOPS, "the quantization computes no product")
	require.Equal(t, "memory", q.Roofline.Bound)
	require.InDelta(t, float64(fp8QuantBytes(dec))/10e-6, q.BytesPerSec, 1)

	dense := row{Shape: big, DType: bf16, Mode: modeTCFwd, MedianUS: 1500, PeakTFLOPS: 989, Roofline: roofline{Bound: "x"}}
	fillFP8(&dense, 3e12)
	require.Equal(t, "x", dense.Roofline.Bound, "dense rows are left alone")
}

// fp8Report is a made-up report with the fp8 group's rows on DeepGEMM's
// shape and a decode-like one (with a copy floor there), one cuBLASLt
// refusal among them.
func fp8Report() *report {
	big, dec := shape{M: 4096, K: 16384, N: 7168}, shape{M: 64, K: 7168, N: 24576}
	mk := func(s shape, backend, mode string, us float64) row {
		pk := peaks{BF16: 989, F16: 989, TF32: 494, F32: 67, FP8: 1979}
		peak, name := pk.peakFor(bf16, mode)
		r := row{Shape: s, DType: bf16, Backend: backend, Mode: mode, MedianUS: us, MinUS: us, MaxUS: us,
			TFLOPS: tflops(s, us), PeakName: name, PeakTFLOPS: peak}
		r.Roofline = rooflineOf(s, bf16, us, 3e12, peak, name)
		fillBandwidth(&r, 3e12)
		fillFP8(&r, 3e12)
		return r
	}
	var rows []row
	for _, s := range []shape{big, dec} {
		times := []float64{1500, 800, 700, 720, 780, 790, 850, 770, 100}
		if s == dec {
			times = []float64{120, 70, 68, 66, 67, 69, 75, 66, 10}
		}
		for i, m := range fp8Group() {
			backend := "detgemm"
			switch {
			case m == modeDefault:
				backend = referenceBackend
			case isLtFP8(m):
				backend = ltBackendName
			}
			rows = append(rows, mk(s, backend, m, times[i]))
		}
	}
	rows = append(rows, mk(dec, "copy", modeCopy, 130))
	rows[len(fp8Group())+2].MedianUS, rows[len(fp8Group())+2].Error = 0, "cublasLtMatmulAlgoGetHeuristic: CUBLAS_STATUS_NOT_SUPPORTED (15)"
	fillRatios(rows)
	return &report{Schema: reportSchema, Date: "2026-11-28T00:00:00Z", GPU: gpuInfo{Name: "TEST"}, Rows: rows,
		Config: runConfig{Repeats: 15}, Copy: copyBandwidth{BytesPerSec: 3e12},
		Peaks:    &peaks{GPU: "H100 SXM", BF16: 989, F16: 989, TF32: 494, F32: 67, FP8: 1979},
		CUBLASLt: &libraryInfo{Version: "13.1.0", Code: 130100, Path: "libcublasLt.so.13"}}
}

func TestFromFP8Markdown(t *testing.T) {
	md := renderSavedReport(t, fp8Report(), formatMD)
	require.Contains(t, md, "**fp8 products**")
	var prod, quant []string
	for _, tb := range tablesOf(md) {
		switch {
		case strings.Contains(tb[0], "fast vs Lt fast"):
			prod = tb
		case strings.Contains(tb[0], "M×K activation"):
			quant = tb
		}
	}
	require.Len(t, prod, 2+2)
	require.Equal(t, "| M×K×N | cuBLAS bf16 | cuBLASLt fp8 | cuBLASLt fp8 fast | fp8-fast | fp8-prom | fp8-row | fp8-block | fp8-out8 | "+
		"fast vs Lt fast | prom vs Lt | row vs Lt | block vs Lt | block vs cuBLAS bf16 | fp8-prom GB/s | Lt fp8 GB/s | copy GB/s |", prod[0])
	// 2·4096·7168·16384 = 962.07 GFLOP: 641.4 TFLOP/s in 1500 µs, 1131.8
	// in 850; 700 / 720 = 0.97×, 800 / 780 = 1.03×, 1500 / 850 = 1.76×.
	require.Equal(t, "| 4096×16384×7168 | 1500 (641.4) | 800.0 (1202.6) | 700.0 (1374.4) | 720.0 (1336.2) | 780.0 (1233.4) | "+
		"790.0 (1217.8) | 850.0 (1131.9) | 770.0 (1249.4) | 0.97× | 1.03× | 1.01× | 0.94× | 1.76× | — | — | — |", prod[2])
	// M = 64: fp8-prom moves 64·7168 + 24576·7168 + 8 + 64·24576·2 =
	// 179765256 bytes in 67 µs (2683 GB/s), cuBLASLt the same in 70 µs
	// (2568); the copy floor 356384768 bytes in 130 µs (2741).
	require.Equal(t, "| 64×7168×24576 | 120.0 (187.9) | 70.0 (322.1) | error | 66.0 (341.6) | 67.0 (336.5) | 69.0 (326.8) | "+
		"75.0 (300.6) | 66.0 (341.6) | — | 1.04× | 1.01× | 0.93× | 1.60× | 2683 | 2568 | 2741 |", prod[3])
	// Each activation once: 4096×16384 moves 203423744 bytes in 100 µs;
	// 64×7168 1390592 in 10 µs, 5 % of that problem's copy floor.
	require.Equal(t, []string{"| M×K activation | µs | GB/s | copy GB/s | GB/s / copy's |", "|---|---|---|---|---|",
		"| 4096×16384 | 100.0 | 2034 | — | — |", "| 64×7168 | 10.0 | 139 | 2741 | 5 % |"}, quant)
	require.Contains(t, md, "- 64×7168×24576 bf16 cuBLASLt lt-fp8-fast: cublasLtMatmulAlgoGetHeuristic: CUBLAS_STATUS_NOT_SUPPORTED (15)")
}

func TestFP8TableHasColumnsOnlyForModesMeasured(t *testing.T) {
	var rows []row
	for _, r := range fp8Report().Rows {
		if !isLtFP8(r.Mode) && r.Mode != modeCopy && r.Shape.M > decodeMaxM {
			rows = append(rows, r)
		}
	}
	head, lines := fp8Table(indexRows(rows), rateCell)
	require.Equal(t, []string{"M×K×N", "cuBLAS bf16", "fp8-fast", "fp8-prom", "fp8-row", "fp8-block", "fp8-out8", "block vs cuBLAS bf16"}, head,
		"no cuBLASLt rows: no cuBLASLt columns; no decode-like problem: no GB/s")
	require.Len(t, lines, 1)
	head, _ = fp8QuantTable(indexRows(rows), rateCell)
	require.Equal(t, []string{"M×K activation", "µs", "GB/s"}, head, "no copy rows: no copy columns")
	head, lines = fp8Table(indexRows(rows[:1]), rateCell)
	require.Nil(t, head, "no fp8 product row: no table")
	require.Nil(t, lines)
}

func TestFromFP8TableAndCSV(t *testing.T) {
	table := renderSavedReport(t, fp8Report(), formatTable)
	require.Contains(t, table, "peaks    datasheet H100 SXM, dense: bf16 989, f16 989, tf32 494, fp8 1979, f32 FMA 67 TFLOP/s")
	require.Contains(t, table, "fp8 products (µs, TFLOP/s in brackets")
	require.Regexp(t, `64×7168×24576\s+120\.0 \(187\.9\)\s+70\.00 \(322\.1\)\s+error\s+66\.00 \(341\.6\)`, table)
	require.Regexp(t, `64×7168\s+10\.00\s+139\s+2741\s+5 %`, table)

	recs, err := csv.NewReader(strings.NewReader(renderSavedReport(t, fp8Report(), formatCSV))).ReadAll()
	require.NoError(t, err)
	col := map[string]int{}
	for i, h := range recs[0] {
		col[h] = i
	}
	got := map[string][]string{}
	for _, r := range recs[1:] {
		if r[col["m"]] == "4096" {
			got[r[col["mode"]]] = r
		}
	}
	require.Equal(t, modeLtFP8Fast, got[modeFP8Fast][col["reference"]])
	require.Equal(t, modeLtFP8, got[modeFP8Block][col["reference"]])
	require.Equal(t, "0.9411764705882353", got[modeFP8Block][col["vs_reference"]], "cuBLASLt's 800 µs over fp8-block's 850")
	require.Equal(t, "fp8 tensor", got[modeFP8Block][col["bound"]])
	require.Empty(t, got[modeFP8Quant][col["tflops"]], "no FLOPs")
	require.Equal(t, "2034.23744", got[modeFP8Quant][col["gb_per_s"]][:10], "203423744 bytes in 100 µs")
}

// TestRunFP8ModesOnGPU runs --modes fp8 on one small shape: the engine's
// fp8 rows measured (a failure names its rows and errors), cuBLASLt's
// measured or refused by cuBLASLt itself, and the fp8 tables rendered from
// the saved JSON.
func TestRunFP8ModesOnGPU(t *testing.T) {
	rep, md := runModesOnGPU(t, "fp8", "fp8")
	require.Len(t, rep.Rows, len(fp8Group()))
	var failed []string
	for _, r := range rep.Rows {
		switch {
		case r.Backend == ltBackendName && r.Error != "":
			require.Contains(t, r.Error, "cublasLt", "%s: a cuBLASLt row fails only where cuBLASLt refuses", r.Mode)
			t.Logf("cuBLASLt refused %s: %s", r.Mode, r.Error)
		case r.Error != "":
			failed = append(failed, r.Mode+": "+r.Error)
		default:
			require.Positive(t, r.MedianUS, r.Mode)
			if r.Mode != modeDefault {
				require.GreaterOrEqual(t, r.Sets, 2, "%s rotates over copies of its own", r.Mode)
				b, _ := fp8MovedBytes(r.Shape, r.Mode)
				require.Equal(t, b, r.SetBytes, r.Mode)
			}
		}
	}
	require.Empty(t, failed, "rows that failed")
	require.Equal(t, reportSchema, rep.Schema)
	require.Contains(t, md, "| 256×128×256 | ")
	require.Contains(t, md, "| 256×128 | ")
}
