package main

import (
	"encoding/csv"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/detgemm/detgemm/bench/cusparselt"
	"github.com/detgemm/detgemm/gemm"
)

func TestSparseGroupIsIssue24sComparison(t *testing.T) {
	c, err := parseFlags([]string{"--modes", "sparse,tc-fwd,default", "--shapes-set", "sparse", "--dtypes", "bf16"}, io.Discard)
	require.NoError(t, err)
	require.Equal(t, []string{modeDefault, modeLt, modeTCFwd, modeSP24, modeCuSPARSELt, modeSP24Prune, modeCopy}, c.modes,
		"a mode named twice is measured once")
	require.Equal(t, sparseGroup(), c.modes)
	require.True(t, wantsLt(c.modes), "cuBLASLt's dense product is in the group")
	require.True(t, wantsCuSPARSELt(c.modes))
	require.False(t, wantsMatmul(c.modes))
	for _, m := range c.modes {
		require.Contains(t, allModes, m)
	}
	_, err = parseFlags([]string{"--modes", "sparse24"}, io.Discard)
	require.ErrorContains(t, err, "or a group: fp8, gated, matmul, sparse")
}

func TestSparseModesAreOptIn(t *testing.T) {
	c, err := parseFlags(nil, io.Discard)
	require.NoError(t, err)
	for _, m := range []string{modeSP24, modeSP24Prune, modeCuSPARSELt} {
		require.NotContains(t, c.modes, m)
		require.NotContains(t, defaultModes, m)
		require.Contains(t, allModes, m)
	}
	require.False(t, wantsCuSPARSELt(c.modes), "a plain run does not look for cuSPARSELt")
	c, err = parseFlags([]string{"--modes", "sp24-prune,sp24"}, io.Discard)
	require.NoError(t, err)
	require.Equal(t, []string{modeSP24Prune, modeSP24}, c.modes)
}

func TestSparseShapeSetIsIssue24s(t *testing.T) {
	s, src, err := loadShapesOrSet("", "", "sparse")
	require.NoError(t, err)
	require.Equal(t, "--shapes-set sparse", src)
	require.Equal(t, shape{8192, 8192, 8192}, s[0])
	require.Equal(t, shape{M: 4096, K: 4096, N: 11008}, s[1])
	var decode []shape
	for _, x := range s {
		require.Zero(t, x.K%16, "%v: the sparse forward needs K a multiple of 16", x)
		if x.M <= decodeMaxM {
			decode = append(decode, x)
		}
	}
	require.ElementsMatch(t, []shape{{1, 4096, 4096}, {1, 4096, 11008}, {16, 4096, 4096}, {16, 4096, 11008},
		{128, 4096, 4096}, {128, 4096, 11008}}, decode)
	_, err = parseFlags([]string{"--shapes-set", "sparse", "--shapes", "1x16x16"}, io.Discard)
	require.Error(t, err)
}

func TestSparseBytes(t *testing.T) {
	s := shape{M: 1, K: 4096, N: 11008}
	// values 11008 × 2048 bf16, metadata 11008 × 128 words.
	w := int64(11008*2048*2 + 11008*128*4)
	require.Equal(t, w, sparseWeightBytes(4096, 11008, bf16))
	require.Equal(t, int64(4096*2+11008*2)+w, sp24Bytes(s, bf16), "X read, W compressed read, Y written")
	require.Equal(t, int64(4096*11008*2)+w, sp24PruneBytes(s, bf16), "W read, values and metadata written")
	require.Equal(t, int64(11008*((4100+31)/32)*4), sparseMetaBytes(4100, 11008), "a partial word of groups still takes a word")
	vb, mb := gemm.Sparse24Bytes(gemm.BF16, 4096, 11008)
	require.Equal(t, w, int64(vb+mb), "the engine's sizes")
	for _, mode := range []string{modeSP24, modeCuSPARSELt} {
		b, ok := movedBytes(s, bf16, mode)
		require.True(t, ok, mode)
		require.Equal(t, sp24Bytes(s, bf16), b, mode)
	}
	b, ok := movedBytes(s, bf16, modeSP24Prune)
	require.True(t, ok)
	require.Equal(t, sp24PruneBytes(s, bf16), b)
	require.True(t, noProduct(modeSP24Prune))
	require.False(t, noProduct(modeSP24), "the sparse forward is a product")
}

func TestSparseCopiesSpanThreeL2s(t *testing.T) {
	const l2 = 50 << 20
	s := shape{M: 1, K: 4096, N: 4096}
	n := sparseCopies(s, bf16, 5, l2, 0)
	require.GreaterOrEqual(t, int64(n)*sp24Bytes(s, bf16), int64(3*l2))
	require.Less(t, int64(n-1)*sp24Bytes(s, bf16), int64(3*l2), "no more than needed")
	require.Equal(t, 7, sparseCopies(shape{8192, 8192, 8192}, bf16, 7, l2, 0), "never fewer than the sets")
	require.Equal(t, 5, sparseCopies(s, bf16, 5, l2, 2*sparseWeightBytes(4096, 4096, bf16)), "the budget caps the extra copies")
}

func TestSparsePrepareRejectsWithoutTouchingTheGPU(t *testing.T) {
	b := &sparseBackend{}
	require.Empty(t, b.Modes(f32))
	require.Equal(t, []string{modeSP24, modeSP24Prune}, b.Modes(bf16))
	sets := []inputSet{{}}
	for _, tc := range []struct {
		p    problem
		want string
	}{
		{problem{Shape: shape{16, 64, 64}, DType: bf16, Mode: modeTCFwd}, "no sparse mode"},
		{problem{Shape: shape{16, 64, 64}, DType: f32, Mode: modeSP24}, "bf16 or f16"},
		{problem{Shape: shape{16, 72, 64}, DType: bf16, Mode: modeSP24Prune}, "multiple of 16"},
	} {
		_, err := b.Prepare(nil, nil, tc.p, sets)
		require.ErrorContains(t, err, tc.want, tc.p.Mode)
	}
	_, err := b.Prepare(nil, nil, problem{Shape: shape{16, 64, 64}, DType: bf16, Mode: modeSP24}, nil)
	require.ErrorContains(t, err, "no input sets")
	d, err := sp24Desc(problem{Shape: shape{M: 16, K: 4096, N: 11008}, DType: f16})
	require.NoError(t, err)
	require.Equal(t, gemm.Sparse24Desc{In: gemm.F16, Out: gemm.F16, M: 16, N: 11008, K: 4096, Epilogue: gemm.Default}, d)
}

func TestCuSPARSELtRowsCarryTheLoadError(t *testing.T) {
	b := &cusparseltBackend{openErr: errors.New("cusparselt: made up")}
	require.Equal(t, []string{modeCuSPARSELt}, b.Modes(bf16))
	require.Empty(t, b.Modes(f32))
	require.Nil(t, b.Info())
	_, err := b.Prepare(nil, nil, problem{Shape: shape{16, 64, 64}, DType: bf16, Mode: modeCuSPARSELt}, []inputSet{{}})
	require.ErrorContains(t, err, "made up")
	_, err = b.Prepare(nil, nil, problem{Shape: shape{16, 64, 64}, DType: bf16, Mode: modeSP24}, []inputSet{{}})
	require.ErrorContains(t, err, "no mode")
	require.NoError(t, b.Close(), "no handle: nothing to release")
	require.Equal(t, "0.8.1", cusparselt.FormatVersion(801))
}

func TestFillSparse(t *testing.T) {
	s := shape{M: 4096, K: 4096, N: 11008}
	r := row{Shape: s, DType: bf16, Mode: modeSP24, MedianUS: 200, PeakName: "bf16 tensor", PeakTFLOPS: 989}
	r.TFLOPS = tflops(s, r.MedianUS)
	fillBandwidth(&r, 3e12)
	fillSparse(&r, 3e12)
	require.InDelta(t, float64(sp24Bytes(s, bf16))/200e-6, r.BytesPerSec, 1)
	require.InDelta(t, tflops(s, 200), r.TFLOPS, 1e-9, "TFLOP/s stays dense-equivalent")
	require.Equal(t, 1978.0, r.PeakTFLOPS)
	require.Equal(t, "bf16 tensor 2:4 sparse", r.PeakName)
	require.Equal(t, r.PeakName, r.Roofline.Bound, "compute-bound at 4096×4096×11008")
	require.InDelta(t, s.FLOPs()/1978e12*1e6, r.Roofline.ComputeUS, 1e-9)
	require.InDelta(t, r.Roofline.ComputeUS/200, r.Roofline.Fraction, 1e-12)

	d := row{Shape: shape{1, 4096, 11008}, DType: bf16, Mode: modeSP24, MedianUS: 20, PeakName: "bf16 tensor", PeakTFLOPS: 989}
	fillSparse(&d, 3e12)
	require.Equal(t, "memory", d.Roofline.Bound)
	require.InDelta(t, float64(sp24Bytes(d.Shape, bf16))/3e12*1e6, d.Roofline.MemoryUS, 1e-9, "its own bytes, not the dense W's")

	p := row{Shape: s, DType: bf16, Mode: modeSP24Prune, MedianUS: 80, TFLOPS: 5, PeakName: "bf16 tensor", PeakTFLOPS: 989}
	fillBandwidth(&p, 3e12)
	fillSparse(&p, 3e12)
	require.Zero(t, p.TFLOPS, "prune + compress computes no product")
	require.Equal(t, "memory", p.Roofline.Bound)
	require.InDelta(t, float64(sp24PruneBytes(s, bf16))/80e-6, p.BytesPerSec, 1)

	dense := row{Shape: s, DType: bf16, Mode: modeTCFwd, MedianUS: 200, PeakTFLOPS: 989}
	fillSparse(&dense, 3e12)
	require.Equal(t, 989.0, dense.PeakTFLOPS, "dense rows keep the dense peak")
	require.Equal(t, modeDefault, fairReference(modeSP24))
	require.Equal(t, modeDefault, fairReference(modeCuSPARSELt))
}

// sparseReport is a made-up report with the sparse group's rows on a
// large and a decode-like problem.
func sparseReport() *report {
	big, dec := shape{4096, 4096, 11008}, shape{1, 4096, 11008}
	mk := func(s shape, backend, mode string, us float64) row {
		r := row{Shape: s, DType: bf16, Backend: backend, Mode: mode, MedianUS: us, MinUS: us, MaxUS: us,
			TFLOPS: tflops(s, us), PeakName: "bf16 tensor", PeakTFLOPS: 989}
		fillBandwidth(&r, 3e12)
		fillSparse(&r, 3e12)
		return r
	}
	rows := []row{
		mk(big, referenceBackend, modeDefault, 500), mk(big, ltBackendName, modeLt, 490), mk(big, "detgemm", modeTCFwd, 550),
		mk(big, "detgemm", modeSP24, 400), mk(big, cusparseltBackendName, modeCuSPARSELt, 420),
		mk(big, "detgemm", modeSP24Prune, 90), mk(big, "copy", modeCopy, 80),
		mk(dec, referenceBackend, modeDefault, 40), mk(dec, ltBackendName, modeLt, 41), mk(dec, "detgemm", modeTCFwd, 36),
		mk(dec, "detgemm", modeSP24, 20), mk(dec, cusparseltBackendName, modeCuSPARSELt, 0),
		mk(dec, "detgemm", modeSP24Prune, 95), mk(dec, "copy", modeCopy, 32),
	}
	rows[11].Error = "cusparseLtMatmulPlanInit: CUSPARSE_STATUS_INVALID_VALUE"
	fillRatios(rows)
	return &report{Schema: reportSchema, Date: "2026-11-27T00:00:00Z", GPU: gpuInfo{Name: "TEST"}, Rows: rows,
		Config: runConfig{Repeats: 15}, Copy: copyBandwidth{BytesPerSec: 3e12},
		CuSPARSELt: &libraryInfo{Version: "0.8.1", Code: 801, Path: "libcusparseLt.so.0"}}
}

func renderSparse(t *testing.T, format string) string {
	return renderSavedReport(t, sparseReport(), format)
}

func TestFromSparseMarkdown(t *testing.T) {
	md := renderSparse(t, formatMD)
	require.Contains(t, md, "**2:4 sparse forward**")
	var sparse, prune []string
	for _, tb := range tablesOf(md) {
		switch {
		case strings.Contains(tb[0], "sp24 vs tc-fwd"):
			sparse = tb
		case strings.Contains(tb[0], "K×N weight"):
			prune = tb
		}
	}
	require.Len(t, sparse, 2+2)
	require.Equal(t, "| M×K×N | dtype | detgemm sp24 | detgemm tc-fwd (dense) | cuBLAS (dense) | cuBLASLt (dense) | cuSPARSELt (2:4) | "+
		"sp24 vs tc-fwd | sp24 vs cuBLAS | sp24 vs cuSPARSELt | sp24 GB/s | tc-fwd GB/s | copy GB/s |", sparse[0])
	// 2·4096·4096·11008 = 369.4 GFLOP: 923.4 TFLOP/s in 400 µs; 550 / 400 = 1.38×.
	require.Equal(t, "| 4096×4096×11008 | bf16 | 400.0 (923.4) | 550.0 (671.6) | 500.0 (738.7) | 490.0 (753.8) | 420.0 (879.4) | "+
		"1.38× | 1.25× | 1.05× | — | — | — |", sparse[2])
	// M = 1: sp24 moves 8192 + 22016 + 50724864 bytes in 20 µs (2538 GB/s);
	// tc-fwd 8192 + 90177536 + 22016 in 36 µs (2506 GB/s), the copy the same in 32 µs.
	require.Equal(t, "| 1×4096×11008 | bf16 | 20.0 (4.5) | 36.0 (2.5) | 40.0 (2.3) | 41.0 (2.2) | error | "+
		"1.80× | 2.00× | — | 2538 | 2506 | 2819 |", sparse[3])
	// Each weight once: 4096×11008 from the first problem that has it.
	require.Len(t, prune, 2+1)
	// 90177536 + 50724864 bytes in 90 µs: 1566 GB/s; that problem's copy
	// moves 213909504 bytes in 80 µs: 2674 GB/s.
	require.Equal(t, "| 4096×11008 | bf16 | 90.0 | 1566 | 2674 | 59 % |", prune[2])
	require.Contains(t, md, "≤ 100 µs at 4096×11008")
	require.Contains(t, md, "- 1×4096×11008 bf16 cuSPARSELt cusparselt: cusparseLtMatmulPlanInit: CUSPARSE_STATUS_INVALID_VALUE")
}

func TestSparseTableHasColumnsOnlyForModesMeasured(t *testing.T) {
	rep := sparseReport()
	var rows []row
	for _, r := range rep.Rows {
		if r.Mode != modeCuSPARSELt && r.Mode != modeLt && r.Mode != modeCopy {
			rows = append(rows, r)
		}
	}
	head, lines := sparseTable(indexRows(rows), rateCell)
	require.Equal(t, []string{"M×K×N", "dtype", "detgemm sp24", "detgemm tc-fwd (dense)", "cuBLAS (dense)",
		"sp24 vs tc-fwd", "sp24 vs cuBLAS", "sp24 GB/s", "tc-fwd GB/s", "copy GB/s"}, head)
	require.Len(t, lines, 2)
	require.Equal(t, "—", lines[1][len(head)-1], "no copy row: no copy GB/s")
	head, lines = sparseTable(indexRows(rows[:2]), rateCell)
	require.Nil(t, head, "no sp24 row: no table")
	require.Nil(t, lines)
}

func TestFromSparseTableAndCSV(t *testing.T) {
	table := renderSparse(t, formatTable)
	require.Contains(t, table, "cuSPARSELt 0.8.1 (libcusparseLt.so.0)")
	require.Contains(t, table, "2:4 sparse forward (µs, dense-equivalent TFLOP/s")
	require.Regexp(t, `1×4096×11008\s+bf16\s+20\.00 \(4\.5\)\s+36\.00 \(2\.5\)`, table)
	require.Regexp(t, `4096×11008\s+bf16\s+90\.00\s+1566\s+2674\s+59 %`, table)

	recs, err := csv.NewReader(strings.NewReader(renderSparse(t, formatCSV))).ReadAll()
	require.NoError(t, err)
	col := map[string]int{}
	for i, h := range recs[0] {
		col[h] = i
	}
	var sp []string
	for _, r := range recs[1:] {
		if r[col["mode"]] == modeSP24 && r[col["m"]] == "1" {
			sp = r
		}
	}
	require.NotNil(t, sp)
	require.Equal(t, modeDefault, sp[col["reference"]])
	require.Equal(t, "2", sp[col["vs_reference"]], "cuBLAS's 40 µs over sp24's 20")
	require.Equal(t, "2537.7536", sp[col["gb_per_s"]][:9])
}

// TestRunSparseModesOnGPU runs --modes sparse on one small shape: the
// engine's and the dense libraries' rows measured, cuSPARSELt's measured
// or refused with the library's reason, and the sparse tables rendered
// from the saved JSON.
func TestRunSparseModesOnGPU(t *testing.T) {
	rep, md := runModesOnGPU(t, "sparse", "sparse")
	require.Len(t, rep.Rows, len(sparseGroup()))
	var failed []string
	for _, r := range rep.Rows {
		switch {
		case r.Backend == cusparseltBackendName && r.Error != "":
			t.Logf("cuSPARSELt: %s", r.Error)
		case r.Error != "":
			failed = append(failed, r.Mode+": "+r.Error)
		default:
			require.Positive(t, r.MedianUS, r.Mode)
		}
	}
	require.Empty(t, failed, "rows that failed")
	require.Contains(t, md, "| 256×128×256 | bf16 | ")
	require.Contains(t, md, "| 128×256 | bf16 | ")
}
