package main

import (
	"bytes"
	"encoding/csv"
	"errors"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/detgemm/detgemm/bench/cublas"
	"github.com/detgemm/detgemm/bench/cublaslt"
	"github.com/detgemm/detgemm/gemm"
	"github.com/detgemm/detgemm/internal/gputest"
)

func TestMatmulModesAreOptIn(t *testing.T) {
	c, err := parseFlags(nil, io.Discard)
	require.NoError(t, err)
	require.False(t, wantsMatmul(c.modes), "the default run measures no Matmul mode")
	require.False(t, wantsLt(c.modes))
	c, err = parseFlags([]string{"--modes", "tc-mm,mm-gelu-bias"}, io.Discard)
	require.NoError(t, err)
	require.Equal(t, []string{"tc-mm", "mm-gelu-bias"}, c.modes)
	require.True(t, wantsMatmul(c.modes))
}

func TestMatmulGroupIsEveryTensorCoreModeBesideItsCuBLASLtPair(t *testing.T) {
	c, err := parseFlags([]string{"--modes", "matmul,lt,default"}, io.Discard)
	require.NoError(t, err)
	require.Equal(t, matmulGroup(), c.modes, "a mode named twice is measured once")
	require.Equal(t, modeDefault, c.modes[0])
	for i, m := range mmModes {
		if m.gated {
			require.NotContains(t, c.modes, tcPrefix+m.name, "the gated modes are issue 23's group, not issue 21's")
			continue
		}
		require.Contains(t, c.modes, tcPrefix+m.name)
		if m.lt != "" {
			require.Contains(t, ltModes, m.lt, "%s's pair is a cuBLASLt mode", m.name)
			require.Less(t, slices.Index(c.modes, tcPrefix+m.name), slices.Index(c.modes, m.lt), "pairs sit together")
		}
		for _, other := range []string{m.plain, m.unfused} {
			if other != "" {
				_, _, ok := lookupMM(other)
				require.True(t, ok, "mode %d (%s) refers to %s", i, m.name, other)
			}
		}
	}
	require.True(t, wantsLt(c.modes))
	require.NotContains(t, c.modes, "mm", "the group is the tensor-core tier's")
}

func TestMatmulModesNameBothTiers(t *testing.T) {
	b := &matmulBackend{}
	all := b.Modes(bf16)
	require.Len(t, all, 2*len(mmModes))
	require.Equal(t, all[:len(mmModes)], b.Modes(f32), "f32 has the IEEE tier only")
	for _, name := range all {
		require.Contains(t, allModes, name)
		require.NotContains(t, defaultModes, name)
	}
	for _, tc := range []struct {
		mode      string
		ieee      bool
		lt, plain string
		reference string
		peak      string
	}{
		{"tc-mm", false, modeLt, "", modeLt, "bf16 tensor"},
		{"tc-mm-gelu-aux-bias", false, modeLtGELUAuxBias, "tc-mm", modeLtGELUAuxBias, "bf16 tensor"},
		{"tc-mm-bgradb", false, modeLtTNBGradA, "tc-mm-tn", modeLtTNBGradA, "bf16 tensor"},
		{"tc-mm-gelu-bias-strided", false, modeLtGELUBiasStrided, "tc-mm-gelu-bias", modeLtGELUBiasStrided, "bf16 tensor"},
		{"tc-mm-bias-then-relu", false, "", "tc-mm-bias", modeDefault, "bf16 tensor"},
		{"tc-mm-swiglu", false, modeLt, "tc-mm", modeLt, "bf16 tensor"},
		{"tc-mm-swiglu-aux", false, "", "tc-mm", modeDefault, "bf16 tensor"},
		{"tc-mm-then-swiglu", false, "", "tc-mm", modeDefault, "bf16 tensor"},
		{"tc-mm-dswiglu", false, "", "tc-mm", modeDefault, "bf16 tensor"},
		{"mm-geglu-aux", true, "", "mm", modePedantic, "f32 FMA"},
		{"mm-gelu-bias", true, "", "mm", modePedantic, "f32 FMA"},
		{"mm", true, "", "", modePedantic, "f32 FMA"},
	} {
		require.Equal(t, tc.ieee, isIEEEMatmul(tc.mode), tc.mode)
		require.Equal(t, tc.lt, mmPair(tc.mode, ltOf), tc.mode)
		require.Equal(t, tc.plain, mmPair(tc.mode, plainOf), tc.mode)
		require.Equal(t, tc.plain, plainModeOf(tc.mode), tc.mode)
		require.Equal(t, tc.reference, fairReference(tc.mode), tc.mode)
		_, name := (peaks{BF16: 1, F16: 2, F32: 4}).peakFor(bf16, tc.mode)
		require.Equal(t, tc.peak, name, tc.mode)
	}
	require.Equal(t, modeLt, plainModeOf(modeLtGELUAuxBias), "a cuBLASLt pair's plain product is cuBLASLt's")
	require.Equal(t, modeLtTN, plainModeOf(modeLtTNBGradA))
	require.Empty(t, plainModeOf(modeLt), "lt is its own plain product, though mm-swiglu's pair is lt")
	require.Empty(t, plainModeOf(modeTCFwd))
	require.Equal(t, "tc-mm-bias-then-relu", mmPair("tc-mm-relu-bias", unfusedOf))
	require.Equal(t, "tc-mm-then-swiglu", mmPair("tc-mm-swiglu", unfusedOf))
	require.Equal(t, "mm-then-swiglu", mmPair("mm-swiglu", unfusedOf))
}

// TestMatmulModesMatchTheirCuBLASLtPairs: a pair runs the same epilogue
// on the same layout, so their ratio compares like with like.
func TestMatmulModesMatchTheirCuBLASLtPairs(t *testing.T) {
	epi := map[gemm.Epilogue][]cublaslt.Epilogue{
		gemm.Default:     {cublaslt.EpilogueDefault},
		gemm.Bias:        {cublaslt.EpilogueBias},
		gemm.GeluBias:    {cublaslt.EpilogueGELUBias},
		gemm.GeluAuxBias: {cublaslt.EpilogueGELUAuxBias},
		gemm.ReluBias:    {cublaslt.EpilogueReLUBias},
		gemm.ReluAuxBias: {cublaslt.EpilogueReLUAuxBias},
		gemm.DGeluBgrad:  {cublaslt.EpilogueDGELUBGrad},
		gemm.DReluBgrad:  {cublaslt.EpilogueDReLUBGrad},
		// Our B is cuBLASLt's A (the row-major swap): our BgradB is its BGRADA.
		gemm.BgradB: {cublaslt.EpilogueBGradA},
		// cuBLASLt has no gated epilogue: the pair is its plain product.
		gemm.GatedSwiGLU: {cublaslt.EpilogueDefault},
	}
	for _, m := range mmModes {
		if m.lt == "" {
			require.True(t, m.separatePass() || m.gated, "%s: only the separate-pass and gated modes have no cuBLASLt pair", m.name)
			continue
		}
		require.Contains(t, epi[m.epi], ltEpilogues[m.lt], m.name)
		lay := ltLayouts[m.lt]
		require.Equal(t, ltLayout{m.transA, m.transB, m.strided}, lay, m.name)
	}
}

func TestMatmulDescriptions(t *testing.T) {
	p := problem{Shape: shape{M: 256, K: 512, N: 384}, DType: bf16}
	for _, tc := range []struct {
		mode string
		want gemm.MatmulDesc
	}{
		{"tc-mm", gemm.MatmulDesc{Tier: gemm.TierTensorCore, In: gemm.BF16, Out: gemm.BF16, M: 256, N: 384, K: 512, Alpha: 1}},
		{"mm", gemm.MatmulDesc{Tier: gemm.TierTyped, In: gemm.BF16, Out: gemm.BF16, M: 256, N: 384, K: 512, Alpha: 1}},
		{"tc-mm-tt", gemm.MatmulDesc{Tier: gemm.TierTensorCore, In: gemm.BF16, Out: gemm.BF16, M: 256, N: 384, K: 512, Alpha: 1, TransA: true, TransB: true}},
		{"tc-mm-bgradb", gemm.MatmulDesc{Tier: gemm.TierTensorCore, In: gemm.BF16, Out: gemm.BF16, M: 256, N: 384, K: 512, Alpha: 1, TransA: true,
			Epilogue: gemm.BgradB, ReduceOverBatch: true}},
		{"tc-mm-gelu-bias-strided", gemm.MatmulDesc{Tier: gemm.TierTensorCore, In: gemm.BF16, Out: gemm.BF16, M: 256, N: 384, K: 512, Alpha: 1,
			Epilogue: gemm.GeluBias, LDA: 512 + 64, LDB: 384 + 64, LDD: 384 + 64}},
	} {
		m, tcTier, ok := lookupMM(tc.mode)
		require.True(t, ok, tc.mode)
		require.Equal(t, tc.want, mmDesc(m, tcTier, p), tc.mode)
	}
	f := problem{Shape: shape{M: 8, K: 8, N: 8}, DType: f32}
	m, _, _ := lookupMM("mm")
	require.Equal(t, gemm.TierF32, mmDesc(m, false, f).Tier, "f32 inputs run the f32 tier")
	// Strided rows stay 16-byte aligned where the row lengths are.
	require.Zero(t, stridePad*2%16)
}

func TestMatmulEpilogueBuffers(t *testing.T) {
	for _, tc := range []struct {
		e               gemm.Epilogue
		bias, bgrad     bool
		aux, mask, read bool
		fwd             gemm.Epilogue
	}{
		{e: gemm.Default},
		{e: gemm.Bias, bias: true},
		{e: gemm.GeluBias, bias: true},
		{e: gemm.GeluAuxBias, bias: true, aux: true},
		{e: gemm.ReluAuxBias, bias: true, aux: true, mask: true},
		{e: gemm.DGeluBgrad, bgrad: true, aux: true, read: true, fwd: gemm.GeluAuxBias},
		{e: gemm.DReluBgrad, bgrad: true, aux: true, mask: true, read: true, fwd: gemm.ReluAuxBias},
		{e: gemm.BgradB, bgrad: true},
		{e: gemm.GatedSwiGLU},
		{e: gemm.GatedSwiGLUAux},
		{e: gemm.GatedGeGLUAuxBias, bias: true},
		{e: gemm.DGatedSwiGLU},
	} {
		require.Equal(t, tc.bias, epiBias(tc.e), tc.e.String())
		require.Equal(t, tc.bgrad, epiBiasGrad(tc.e), tc.e.String())
		aux, mask, read, fwd := epiAux(tc.e)
		require.Equal(t, [3]bool{tc.aux, tc.mask, tc.read}, [3]bool{aux, mask, read}, tc.e.String())
		require.Equal(t, tc.fwd, fwd, tc.e.String())
	}
}

func TestMatmulPrepareRejectsWithoutTouchingTheGPU(t *testing.T) {
	b := &matmulBackend{}
	sets := []inputSet{{}}
	_, err := b.Prepare(nil, nil, problem{Shape: shape{8, 8, 8}, DType: f32, Mode: "tc-mm"}, sets)
	require.ErrorContains(t, err, "bf16 or f16")
	_, err = b.Prepare(nil, nil, problem{Shape: shape{8, 8, 8}, DType: bf16, Mode: modeLt}, sets)
	require.ErrorContains(t, err, "no Matmul mode")
	_, err = b.Prepare(nil, nil, problem{Shape: shape{8, 8, 8}, DType: bf16, Mode: "tc-mm"}, nil)
	require.ErrorContains(t, err, "no input sets")
}

// TestMatmulPanicBecomesTheRowsError: the engine is young; a panic in it
// must fail one row, not the run.
func TestMatmulPanicBecomesTheRowsError(t *testing.T) {
	b := &matmulBackend{} // no engine: Plan panics on the nil engine
	_, err := b.Prepare(nil, nil, problem{Shape: shape{8, 8, 8}, DType: bf16, Mode: "tc-mm"}, []inputSet{{}})
	require.ErrorContains(t, err, "panicked")
}

func TestShapesSetMatmulCoversIssue21(t *testing.T) {
	s, src, err := loadShapesOrSet("", "", "matmul")
	require.NoError(t, err)
	require.Equal(t, "--shapes-set matmul", src)
	require.Equal(t, []shape{{4096, 4096, 4096}, {8192, 8192, 8192}, {2048, 768, 3072}, {4096, 4096 * 3 / 8, 3072}}, s)
}

// matmulReport is a made-up report with Matmul rows and their pairs on
// one problem, one failed row among them.
func matmulReport() *report {
	s := shape{4096, 4096, 4096}
	mk := func(backend, mode string, us float64) row {
		return row{Shape: s, DType: bf16, Backend: backend, Mode: mode, MedianUS: us, MinUS: us, MaxUS: us}
	}
	rows := []row{
		mk(referenceBackend, modeDefault, 200),
		mk("detgemm", "tc-mm", 240), mk(ltBackendName, modeLt, 200),
		mk("detgemm", "tc-mm-gelu-aux-bias", 246), mk(ltBackendName, modeLtGELUAuxBias, 220),
		mk("detgemm", "tc-mm-gelu-bias", 250), mk(ltBackendName, modeLtGELUBias, 204),
		mk("detgemm", "tc-mm-relu-bias", 242),
		mk("detgemm", "tc-mm-bias", 241),
		mk("detgemm", "tc-mm-bias-then-relu", 275),
		mk("detgemm", "tc-mm-tt", 0),
	}
	rows[len(rows)-1].Error = "gemm.Matmul: made up"
	return &report{Schema: reportSchema, Date: "2026-11-26T00:00:00Z", GPU: gpuInfo{Name: "TEST"}, Rows: rows,
		Config: runConfig{Repeats: 15}}
}

// renderSavedReport saves rep and renders it with --from in format, as a user
// renders a saved run.
func renderSavedReport(t *testing.T, rep *report, format string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "run.json")
	require.NoError(t, writeJSON(path, rep))
	args := []string{"--from", path, "--format", format}
	cfg, err := parseFlags(args, io.Discard)
	require.NoError(t, err)
	cfg.args = append([]string{"bench"}, args...)
	var out bytes.Buffer
	require.NoError(t, renderSaved(cfg, &out, io.Discard))
	return out.String()
}

func renderMatmul(t *testing.T, format string) string {
	return renderSavedReport(t, matmulReport(), format)
}

func TestFromMatmulMarkdownPairsEachModeWithCuBLASLt(t *testing.T) {
	md := renderMatmul(t, formatMD)
	require.Contains(t, md, "**Matmul**")
	var mm, fused []string
	for _, tb := range tablesOf(md) {
		switch {
		case strings.Contains(tb[0], "cuBLASLt mode"):
			mm = tb
		case strings.Contains(tb[0], "separate pass"):
			fused = tb
		}
	}
	require.Len(t, mm, 2+7, "every Matmul row")
	// 200 / 240 = 0.83×; nothing over plain on the plain row.
	require.Equal(t, "| 4096×4096×4096 | bf16 | tc-mm | 240.0 | lt | 200.0 | 0.83× | — | — | — |", mm[2])
	// 246 / 240 - 1 = +2.5 %; cuBLASLt 220 / 200 - 1 = +10.0 %.
	require.Equal(t, "| 4096×4096×4096 | bf16 | tc-mm-gelu-aux-bias | 246.0 | lt-gelu-aux-bias | 220.0 | 0.89× | tc-mm | +2.5 % | +10.0 % |", mm[5],
		"rows in mode order: tc-mm, tc-mm-bias, tc-mm-gelu-bias, tc-mm-gelu-aux-bias")
	require.Contains(t, mm[3], "| tc-mm-bias | 241.0 | lt-bias | — | — | tc-mm | +0.4 % | — |", "a pair not measured shows as —")
	require.Contains(t, md, "| tc-mm-tt | error | lt-tt | — |")
	require.Contains(t, md, "tc-mm-tt: gemm.Matmul: made up", "the failed row is listed with its error")
	require.Len(t, fused, 2+2)
	// 275 / 242 = 1.14: the fused ReluBias is faster.
	require.Contains(t, md, "| tc-mm-relu-bias | 242.0 | tc-mm-bias-then-relu | 275.0 | 1.14× | ReLU: the same result |")
	require.Contains(t, md, "| tc-mm-gelu-bias | 250.0 | tc-mm-bias-then-relu | 275.0 | 1.10× | ReLU for GELU: a lower bound |")
}

func TestFromMatmulTableAndCSV(t *testing.T) {
	table := renderMatmul(t, formatTable)
	require.Contains(t, table, "Matmul beside cuBLASLt")
	require.Contains(t, table, "Fused epilogue against the product and a separate pass")
	require.Regexp(t, `tc-mm-gelu-aux-bias\s+246\.0\s+lt-gelu-aux-bias\s+220\.0\s+0\.89×\s+tc-mm\s+\+2\.5 %\s+\+10\.0 %`, table)

	recs, err := csv.NewReader(strings.NewReader(renderMatmul(t, formatCSV))).ReadAll()
	require.NoError(t, err)
	col := map[string]int{}
	for i, h := range recs[0] {
		col[h] = i
	}
	byMode := map[string][]string{}
	for _, r := range recs[1:] {
		byMode[r[col["mode"]]] = r
	}
	g := byMode["tc-mm-gelu-aux-bias"]
	require.Equal(t, modeLtGELUAuxBias, g[col["reference"]])
	require.Equal(t, "0.8943089430894309", g[col["vs_reference"]])
	require.Equal(t, "tc-mm", g[col["plain"]])
	require.Equal(t, "0.02499999999999991", g[col["over_plain"]])
	l := byMode[modeLtGELUAuxBias]
	require.Equal(t, modeLt, l[col["plain"]])
	require.Equal(t, "0.10000000000000009", l[col["over_plain"]])
	require.Empty(t, byMode["tc-mm-tt"][col["over_plain"]], "a failed row has no ratio")
}

// runModesOnGPU runs the bench with modes (--modes; the report's command
// names group) on one small bf16 shape and returns the saved report and
// its Markdown rendering. It skips without a GPU, cuBLAS or cuBLASLt, and
// in -short.
func runModesOnGPU(t *testing.T, modes, group string) (*report, string) {
	t.Helper()
	gputest.Context(t)
	if testing.Short() {
		t.Skip("builds every kernel family; skipped in -short")
	}
	path := filepath.Join(t.TempDir(), "bench.json")
	c, err := parseFlags([]string{"--quick", "--modes", modes, "--dtypes", "bf16",
		"--shapes", "256x128x256", "--startup=false", "--json", path}, io.Discard)
	require.NoError(t, err)
	c.args = []string{"bench", "--modes", group}
	var out, errb bytes.Buffer
	err = run(c, &out, &errb)
	if errors.Is(err, cublas.ErrNotFound) || errors.Is(err, cublaslt.ErrNotFound) {
		t.Skipf("no cuBLAS or cuBLASLt: %v", err)
	}
	require.NoError(t, err, "stderr: %s", errb.String())
	t.Log("\n" + out.String())
	rep, _, err := readReport(path)
	require.NoError(t, err)
	cfg, err := parseFlags([]string{"--from", path, "--format", "md"}, io.Discard)
	require.NoError(t, err)
	var md bytes.Buffer
	require.NoError(t, renderSaved(cfg, &md, io.Discard))
	return rep, md.String()
}

// TestRunMatmulModesOnGPU runs --modes matmul (and two IEEE-tier modes)
// on one small shape: every engine row measured (a failure names its
// rows and errors), every cuBLASLt row measured or refused by cuBLASLt
// itself, and the Matmul tables rendered from the saved JSON.
func TestRunMatmulModesOnGPU(t *testing.T) {
	// N a multiple of 128: cuBLASLt's ReLU bit-mask needs its aux ld so.
	rep, md := runModesOnGPU(t, "matmul,mm,mm-gelu-aux-bias", "matmul")
	require.Len(t, rep.Rows, len(matmulGroup())+2, "cuBLAS default, the tc-mm modes, their cuBLASLt pairs, two IEEE modes")
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
		}
	}
	require.Empty(t, failed, "engine rows that failed")
	require.Contains(t, md, "| 256×128×256 | bf16 | tc-mm-gelu-aux-bias |")
	require.Contains(t, md, "| 256×128×256 | bf16 | tc-mm-relu-bias |")
}
