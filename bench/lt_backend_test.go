package main

import (
	"bytes"
	"io"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/detgemm/detgemm/bench/cublaslt"
)

func TestLtModesAreOptIn(t *testing.T) {
	c, err := parseFlags(nil, io.Discard)
	require.NoError(t, err)
	require.False(t, wantsLt(c.modes), "the default run loads no cuBLASLt")
	for _, m := range ltModes {
		require.NotContains(t, c.modes, m)
	}
	c, err = parseFlags([]string{"--modes", "default,lt,lt-gelu-bias,lt-dgelu-bgrad"}, io.Discard)
	require.NoError(t, err)
	require.Equal(t, []string{modeDefault, modeLt, modeLtGELUBias, modeLtDGELUBGrad}, c.modes)
	require.True(t, wantsLt(c.modes))
}

func TestLtModesMapToTheirEpilogues(t *testing.T) {
	require.Len(t, ltEpilogues, len(ltModes), "every mode has an epilogue")
	for _, tc := range []struct {
		mode string
		epi  cublaslt.Epilogue
	}{
		{modeLt, cublaslt.EpilogueDefault},
		{modeLtBias, cublaslt.EpilogueBias},
		{modeLtGELUBias, cublaslt.EpilogueGELUBias},
		{modeLtGELUAuxBias, cublaslt.EpilogueGELUAuxBias},
		{modeLtReLUBias, cublaslt.EpilogueReLUBias},
		{modeLtDGELUBGrad, cublaslt.EpilogueDGELUBGrad},
		{modeLtBGradA, cublaslt.EpilogueBGradA},
		{modeLtBGradB, cublaslt.EpilogueBGradB},
	} {
		require.Equal(t, tc.epi, ltEpilogues[tc.mode], tc.mode)
	}
	b := &ltBackend{}
	require.Equal(t, ltModes, b.Modes(bf16))
	require.Equal(t, ltModes, b.Modes(f16))
	require.Empty(t, b.Modes(f32), "cuBLASLt rows are bf16/f16 only")
	for _, m := range ltModes {
		peak, name := (peaks{BF16: 1, F16: 2, F32: 4}).peakFor(f16, m)
		require.Equal(t, 2.0, peak, m)
		require.Equal(t, "f16 tensor", name, m)
	}
}

func TestLtPrepareRejectsF32AndUnknownModes(t *testing.T) {
	b := &ltBackend{}
	sets := []inputSet{{}}
	_, err := b.Prepare(nil, nil, problem{Shape: shape{8, 8, 8}, DType: f32, Mode: modeLt}, sets)
	require.ErrorContains(t, err, "no mode")
	_, err = b.Prepare(nil, nil, problem{Shape: shape{8, 8, 8}, DType: bf16, Mode: modeDefault}, sets)
	require.ErrorContains(t, err, "no mode")
}

func TestShapesSetTransformerIsOptIn(t *testing.T) {
	s, src, err := loadShapesOrSet("", "", "transformer")
	require.NoError(t, err)
	require.Equal(t, "--shapes-set transformer", src)
	require.Equal(t, []shape{{4096, 4096, 12288}, {4096, 4096, 4096}, {4096, 4096, 14336}, {4096, 14336, 4096}}, s)
	require.NotContains(t, standardShapes, shape{4096, 4096, 12288}, "the default list is unchanged")

	_, err = parseFlags([]string{"--shapes-set", "nope"}, io.Discard)
	require.ErrorContains(t, err, "want one of fp8, matmul, sparse, transformer")
	_, err = parseFlags([]string{"--shapes-set", "transformer", "--shapes", "8x8x8"}, io.Discard)
	require.ErrorContains(t, err, "does not go with")
	c, err := parseFlags([]string{"--shapes-set", "transformer"}, io.Discard)
	require.NoError(t, err)
	require.Equal(t, "transformer", c.shapesSet)
}

func TestTableHeaderNamesCuBLASLtOnlyWhenItRan(t *testing.T) {
	rep := &report{Schema: reportSchema, CUBLAS: libraryInfo{Version: "13.1.0", Path: "/x/libcublas.so.13"}}
	var without bytes.Buffer
	printReport(&without, rep)
	require.NotContains(t, without.String(), "cuBLASLt")
	rep.CUBLASLt = &libraryInfo{Version: "13.1.0", Path: "/x/libcublasLt.so.13"}
	var with bytes.Buffer
	printReport(&with, rep)
	require.Contains(t, with.String(), "cuBLASLt 13.1.0 (/x/libcublasLt.so.13)")
}
