package main

import (
	"encoding/csv"
	"io"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/detgemm/detgemm/gemm"
)

func TestGatedGroupIsIssue23sComparison(t *testing.T) {
	c, err := parseFlags([]string{"--modes", "gated,lt,default"}, io.Discard)
	require.NoError(t, err)
	require.Equal(t, []string{modeDefault, modeCopy, "tc-mm", "tc-mm-swiglu", "tc-mm-swiglu-aux", "tc-mm-then-swiglu", "tc-mm-geglu-aux",
		"tc-mm-dswiglu", modeLt, "gated-glu-fwd", "gated-glu-bwd", "gated-reglu-fwd", "gated-reglu-bwd", "gated-swiglu-fwd", "gated-swiglu-bwd", "gated-geglu-fwd", "gated-geglu-bwd"}, c.modes,
		"a mode named twice is measured once")
	require.Equal(t, gatedGroup(), c.modes)
	require.True(t, wantsMatmul(c.modes))
	require.True(t, wantsLt(c.modes))
	for _, m := range c.modes {
		require.Contains(t, allModes, m)
	}
	_, err = parseFlags([]string{"--modes", "swiglu"}, io.Discard)
	require.ErrorContains(t, err, "or a group: fp8, gated, matmul")
}

func TestGatedModesAreOptIn(t *testing.T) {
	c, err := parseFlags(nil, io.Discard)
	require.NoError(t, err)
	for _, m := range append(gatedModeNames(), "tc-mm-swiglu", "mm-dswiglu") {
		require.NotContains(t, c.modes, m)
		require.NotContains(t, defaultModes, m)
		require.Contains(t, allModes, m)
	}
	c, err = parseFlags([]string{"--modes", "gated-geglu-bwd,mm-swiglu"}, io.Discard)
	require.NoError(t, err)
	require.Equal(t, []string{"gated-geglu-bwd", "mm-swiglu"}, c.modes)
}

func TestGatedMatmulModes(t *testing.T) {
	p := problem{Shape: shape{M: 256, K: 512, N: 384}, DType: bf16}
	for _, tc := range []struct {
		mode           string
		epi            gemm.Epilogue
		plain, unfused string
		dCols, auxCols int
	}{
		{"tc-mm-swiglu", gemm.GatedSwiGLU, "tc-mm", "tc-mm-then-swiglu", 192, 0},
		{"tc-mm-swiglu-aux", gemm.GatedSwiGLUAux, "tc-mm", "", 192, 384},
		{"tc-mm-geglu-aux", gemm.GatedGeGLUAux, "tc-mm", "", 192, 384},
		{"tc-mm-dswiglu", gemm.DGatedSwiGLU, "tc-mm", "", 768, 768},
		{"mm-swiglu", gemm.GatedSwiGLU, "mm", "mm-then-swiglu", 192, 0},
	} {
		m, tcTier, ok := lookupMM(tc.mode)
		require.True(t, ok, tc.mode)
		require.True(t, m.gated, tc.mode)
		d := mmDesc(m, tcTier, p)
		require.Equal(t, tc.epi, d.Epilogue, tc.mode)
		require.Zero(t, d.Beta, "%s: gated epilogues take no C", tc.mode)
		require.Equal(t, 384, d.N, "%s: N is the product's width", tc.mode)
		require.Equal(t, tc.plain, mmPair(tc.mode, plainOf), tc.mode)
		require.Equal(t, tc.unfused, mmPair(tc.mode, unfusedOf), tc.mode)
		dCols, auxCols, ok := epiGated(d.Epilogue, d.N)
		require.True(t, ok, tc.mode)
		require.Equal(t, [2]int{tc.dCols, tc.auxCols}, [2]int{dCols, auxCols}, tc.mode)
		uses, _, _, _ := epiAux(d.Epilogue)
		require.False(t, uses, "%s: the gated aux is epiGated's, not epiAux's", tc.mode)
	}
	_, _, ok := epiGated(gemm.GeluAuxBias, 384)
	require.False(t, ok)

	// mm-then-swiglu: the plain product, then the gate over D's blocks.
	m, tcTier, ok := lookupMM("tc-mm-then-swiglu")
	require.True(t, ok)
	require.Equal(t, gemm.Default, mmDesc(m, tcTier, p).Epilogue)
	require.True(t, m.separatePass())
	require.Equal(t, gemm.GatedDesc{Gate: gemm.SwiGLU, Type: gemm.BF16, Layout: gemm.GatedBlocks8, Rows: 256, N: 192}, gatePassDesc(m, p))
	require.Equal(t, gemm.F32, gatePassDesc(m, problem{Shape: p.Shape, DType: f32}).Type)
}

func TestGatedStandaloneModes(t *testing.T) {
	b := &gatedBackend{}
	for _, dt := range []dtype{f32, bf16, f16} {
		require.Equal(t, []string{"gated-glu-fwd", "gated-glu-bwd", "gated-reglu-fwd", "gated-reglu-bwd", "gated-swiglu-fwd",
			"gated-swiglu-bwd", "gated-geglu-fwd", "gated-geglu-bwd"}, b.Modes(dt))
	}
	s := shape{M: 4096, K: 4096, N: 22016}
	for _, tc := range []struct {
		mode  string
		gate  gemm.Gate
		bwd   bool
		bytes int64
	}{
		{"gated-glu-fwd", gemm.GLU, false, (2*11008 + 11008) * 4096 * 2},
		{"gated-reglu-bwd", gemm.ReGLU, true, (2*11008 + 11008 + 2*11008) * 4096 * 2},
		{"gated-swiglu-fwd", gemm.SwiGLU, false, (2*11008 + 11008) * 4096 * 2},
		{"gated-swiglu-bwd", gemm.SwiGLU, true, (2*11008 + 11008 + 2*11008) * 4096 * 2},
		{"gated-geglu-fwd", gemm.GeGLU, false, (2*11008 + 11008) * 4096 * 2},
		{"gated-geglu-bwd", gemm.GeGLU, true, (2*11008 + 11008 + 2*11008) * 4096 * 2},
	} {
		m, ok := lookupGated(tc.mode)
		require.True(t, ok, tc.mode)
		require.Equal(t, tc.gate, m.gate, tc.mode)
		require.Equal(t, tc.bwd, m.backward, tc.mode)
		d, err := gatedDesc(m, problem{Shape: s, DType: bf16, Mode: tc.mode})
		require.NoError(t, err)
		require.Equal(t, gemm.GatedDesc{Gate: tc.gate, Type: gemm.BF16, Layout: gemm.GatedHalves, Rows: 4096, N: 11008}, d, tc.mode)
		require.Equal(t, tc.bytes, gatedBytes(m, s, bf16), tc.mode)
		got, ok := movedBytes(s, bf16, tc.mode)
		require.True(t, ok)
		require.Equal(t, tc.bytes, got)
		require.Equal(t, 2*tc.bytes, gatedBytes(m, s, f32), "f32 moves twice the bytes")
		_, _, isMM := lookupMM(tc.mode)
		require.False(t, isMM)
	}
	_, ok := lookupGated("tc-mm-swiglu")
	require.False(t, ok)
	m, _ := lookupGated("gated-swiglu-fwd")
	_, err := gatedDesc(m, problem{Shape: shape{M: 8, K: 8, N: 7}, DType: bf16})
	require.ErrorContains(t, err, "not even")
}

func TestGatedPrepareRejectsWithoutTouchingTheGPU(t *testing.T) {
	b := &gatedBackend{}
	sets := []inputSet{{}}
	_, err := b.Prepare(nil, nil, problem{Shape: shape{8, 8, 16}, DType: bf16, Mode: "tc-mm-swiglu"}, sets)
	require.ErrorContains(t, err, "no gated mode")
	_, err = b.Prepare(nil, nil, problem{Shape: shape{8, 8, 16}, DType: bf16, Mode: modeGatedSwiGLUFwd}, nil)
	require.ErrorContains(t, err, "no input sets")
	_, err = b.Prepare(nil, nil, problem{Shape: shape{8, 8, 15}, DType: bf16, Mode: modeGatedGeGLUBwd}, sets)
	require.ErrorContains(t, err, "not even")
	// The forward allocates nothing: its runner takes the sets' C and Y;
	// with no engine its launch fails on the row, not the run.
	r, err := b.Prepare(nil, nil, problem{Shape: shape{8, 8, 16}, DType: bf16, Mode: modeGatedSwiGLUFwd}, []inputSet{{C: 0x1000, Y: 0x2000}})
	require.NoError(t, err)
	gr := r.(*gatedRunner)
	require.Equal(t, gemm.GatedArgs{X: 0x1000, Y: 0x2000}, gr.args[0])
	require.ErrorContains(t, r.Launch(0), "panicked")
	require.NoError(t, r.Close())
}

func TestFillBandwidth(t *testing.T) {
	s := shape{M: 4096, K: 4096, N: 22016}
	g := row{Shape: s, DType: bf16, Mode: modeGatedSwiGLUFwd, MedianUS: 100, TFLOPS: 7, PeakName: "bf16 tensor", PeakTFLOPS: 989,
		Roofline: rooflineOf(s, bf16, 100, 3e12, 989, "bf16 tensor")}
	fillBandwidth(&g, 3e12)
	require.InDelta(t, 270532608/100e-6, g.BytesPerSec, 1)
	require.Zero(t, g.TFLOPS, "no product, no FLOPs")
	require.Empty(t, g.PeakName)
	require.Equal(t, "memory", g.Roofline.Bound)
	require.InDelta(t, 270532608/3e12*1e6, g.Roofline.FloorUS, 1e-9)
	require.InDelta(t, g.BytesPerSec/3e12, g.Roofline.Fraction, 1e-12, "%roof: the fraction of the run's copy bandwidth")

	c := row{Shape: s, DType: bf16, Mode: modeCopy, MedianUS: 140, TFLOPS: 3}
	fillBandwidth(&c, 3e12)
	require.InDelta(t, 394264576/140e-6, c.BytesPerSec, 1, "the copy moves the GEMM's bytes: half read, half written")
	require.Equal(t, 3.0, c.TFLOPS, "the floors keep their GEMM figures")

	mm := row{Shape: s, DType: bf16, Mode: "tc-mm-swiglu", MedianUS: 100}
	fillBandwidth(&mm, 3e12)
	require.Zero(t, mm.BytesPerSec, "a GEMM row has none")
	bad := row{Shape: s, DType: bf16, Mode: modeGatedGeGLUFwd, Error: "x"}
	fillBandwidth(&bad, 3e12)
	require.Zero(t, bad.BytesPerSec)

	// A version-2 report's copy row has no bytes_per_sec: it is computed.
	require.InDelta(t, 394264576/140e-6, rowBandwidth(&row{Shape: s, DType: bf16, Mode: modeCopy, MedianUS: 140}), 1)
	require.Zero(t, rowBandwidth(&row{Shape: s, DType: bf16, Mode: "tc-mm", MedianUS: 140}))
	require.Zero(t, rowBandwidth(nil))
}

// gatedReport is a made-up report with the gated group's rows on one
// problem.
func gatedReport() *report {
	s := shape{4096, 4096, 22016}
	mk := func(backend, mode string, us float64) row {
		r := row{Shape: s, DType: bf16, Backend: backend, Mode: mode, MedianUS: us, MinUS: us, MaxUS: us}
		fillBandwidth(&r, 3e12)
		return r
	}
	rows := []row{
		mk(referenceBackend, modeDefault, 1000),
		mk("detgemm", "tc-mm", 1000), mk("detgemm", "tc-mm-swiglu", 1050), mk("detgemm", "tc-mm-then-swiglu", 1200),
		mk("detgemm", "tc-mm-dswiglu", 0),
		mk(ltBackendName, modeLt, 900),
		mk("detgemm", modeGatedSwiGLUFwd, 100), mk("detgemm", modeGatedSwiGLUBwd, 180),
		mk("copy", modeCopy, 140),
	}
	rows[4].Error = "gemm.Matmul: made up"
	return &report{Schema: reportSchema, Date: "2026-11-27T00:00:00Z", GPU: gpuInfo{Name: "TEST"}, Rows: rows,
		Config: runConfig{Repeats: 15}, Copy: copyBandwidth{BytesPerSec: 3e12}}
}

func renderGated(t *testing.T, format string) string {
	return renderSavedReport(t, gatedReport(), format)
}

func TestFromGatedMarkdown(t *testing.T) {
	md := renderGated(t, formatMD)
	require.Contains(t, md, "**Gated activations, standalone**")
	var gated []string
	for _, tb := range tablesOf(md) {
		if strings.Contains(tb[0], "copy GB/s") {
			gated = tb
		}
	}
	require.Len(t, gated, 2+2)
	// 270532608 bytes in 100 µs: 2705 GB/s; the copy's 394264576 in 140 µs: 2816 GB/s.
	require.Equal(t, "| 4096×4096×22016 | bf16 | gated-swiglu-fwd | 4096 × 11008 | 100.0 | 2705 | 2816 | 96 % |", gated[2])
	require.Equal(t, "| 4096×4096×22016 | bf16 | gated-swiglu-bwd | 4096 × 11008 | 180.0 | 2505 | 2816 | 89 % |", gated[3])
	// The Matmul table: mm-swiglu's pair is cuBLASLt's plain product, so
	// cuBLASLt has no cost over plain there.
	require.Contains(t, md, "| tc-mm-swiglu | 1050 | lt | 900.0 | 0.86× | tc-mm | +5.0 % | — |")
	require.Contains(t, md, "| tc-mm-dswiglu | error | — | — | — | tc-mm | — | — |")
	// 1200 / 1050 = 1.14: fusing wins.
	require.Contains(t, md, "| tc-mm-swiglu | 1050 | tc-mm-then-swiglu | 1200 | 1.14× | SwiGLU: the same gate, from D rounded |")
	require.Contains(t, md, "mm-then-swiglu: the plain product, then the engine's GatedForward")
}

func TestFromGatedTableAndCSV(t *testing.T) {
	table := renderGated(t, formatTable)
	require.Contains(t, table, "Gated activations, standalone")
	require.Regexp(t, `gated-swiglu-fwd\s+4096 × 11008\s+100\.0\s+2705\s+2816\s+96 %`, table)

	recs, err := csv.NewReader(strings.NewReader(renderGated(t, formatCSV))).ReadAll()
	require.NoError(t, err)
	col := map[string]int{}
	for i, h := range recs[0] {
		col[h] = i
	}
	byMode := map[string][]string{}
	for _, r := range recs[1:] {
		byMode[r[col["mode"]]] = r
	}
	require.Equal(t, "2705.32608", byMode[modeGatedSwiGLUFwd][col["gb_per_s"]])
	require.NotEmpty(t, byMode[modeCopy][col["gb_per_s"]])
	require.Empty(t, byMode["tc-mm-swiglu"][col["gb_per_s"]], "GEMM rows have no GB/s")
	require.Equal(t, modeLt, byMode["tc-mm-swiglu"][col["reference"]])
	require.Empty(t, byMode[modeLt][col["plain"]], "lt is its own plain product")
}

// TestRunGatedModesOnGPU runs --modes gated on one small shape: every
// engine row measured, the standalone rows with their bandwidth, and the
// gated tables rendered from the saved JSON.
func TestRunGatedModesOnGPU(t *testing.T) {
	rep, md := runModesOnGPU(t, "gated,mm-swiglu,mm-then-swiglu", "gated")
	require.Len(t, rep.Rows, len(gatedGroup())+2)
	var failed []string
	for _, r := range rep.Rows {
		switch {
		case r.Error != "":
			failed = append(failed, r.Mode+": "+r.Error)
		default:
			require.Positive(t, r.MedianUS, r.Mode)
			if _, ok := movedBytes(r.Shape, r.DType, r.Mode); ok {
				require.Positive(t, r.BytesPerSec, r.Mode)
			}
		}
	}
	require.Empty(t, failed, "rows that failed")
	require.Contains(t, md, "| 256×128×256 | bf16 | gated-swiglu-bwd | 256 × 128 |")
	require.Contains(t, md, "| 256×128×256 | bf16 | tc-mm-swiglu | ")
}
