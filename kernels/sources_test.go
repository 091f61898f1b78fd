package kernels

import (
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// kernelNames lists the kernels a family's source defines.
func kernelNames(t *testing.T, family string) []string {
	t.Helper()
	src, err := Source(family)
	require.NoError(t, err)
	// Entry points are written either directly (DETGEMM_KERNEL void name(...),
	// optionally with __launch_bounds__) or through a family's entry macro,
	// DETGEMM_<FAMILY>_ENTRY(name, ...), whose first argument is the name.
	direct := regexp.MustCompile(`(?m)^DETGEMM_KERNEL\s+void\s+(?:__launch_bounds__\([^)]*\)\s*)?(\w+)\s*\(`)
	macro := regexp.MustCompile(`(?m)^DETGEMM_\w+_ENTRY\((\w+),`)
	var out []string
	for _, re := range []*regexp.Regexp{direct, macro} {
		for _, m := range re.FindAllStringSubmatch(src, -1) {
			out = append(out, m[1])
		}
	}
	return out
}

func TestFamiliesAreTheEmbeddedSources(t *testing.T) {
	fams := Families()
	require.Contains(t, fams, "util")
	require.IsIncreasing(t, fams)
	for _, f := range fams {
		src, err := Source(f)
		require.NoError(t, err)
		require.Contains(t, src, `#include "prelude.cuh"`, "family %s must include the prelude", f)
		require.NotEmpty(t, kernelNames(t, f), "family %s defines kernels with DETGEMM_KERNEL", f)
		require.NotContains(t, src, "__global__ void", "family %s: declare kernels with DETGEMM_KERNEL (extern \"C\")", f)
	}
}

func TestUtilFamilyHasTheEngineHelpers(t *testing.T) {
	require.ElementsMatch(t, []string{
		"detgemm_fill_u32", "detgemm_fill_u16",
		"detgemm_f32_to_bf16_rne", "detgemm_f32_to_f16_rne",
		"detgemm_bf16_to_f32", "detgemm_f16_to_f32",
		"detgemm_read_xor",
	}, kernelNames(t, "util"))
}

func TestSourceRejectsUnknownFamilies(t *testing.T) {
	for _, f := range []string{"", "nope", "util.cu", "../kernels", "prelude"} {
		_, err := Source(f)
		require.ErrorIs(t, err, ErrUnknownFamily, "%q", f)
	}
}

func TestHeadersHoldThePrelude(t *testing.T) {
	hs := headers()
	require.NotEmpty(t, hs)
	require.Equal(t, "prelude.cuh", hs[0].Name)
	require.True(t, strings.Contains(hs[0].Source, "#pragma once"))
}

// TestArchSpecificFamiliesAreBuiltForTheirTargetsOnly: the wgmma family is
// marked sm_90a-only, so it is in sm_90a's set and in no other, and asking
// for it elsewhere is a typed error (TestWithFamilies...), not a compile
// failure.
func TestArchSpecificFamiliesAreBuiltForTheirTargetsOnly(t *testing.T) {
	targets, err := FamilyTargets("gemm_wgmma")
	require.NoError(t, err)
	require.Equal(t, []Arch{{Major: 9, Minor: 0, Specific: true}}, targets)
	targets, err = FamilyTargets("gemm_tc")
	require.NoError(t, err)
	require.Nil(t, targets, "gemm_tc builds everywhere")
	for _, a := range SupportedArchs() {
		fams := FamiliesFor(a)
		require.Equal(t, a.Specific, slices.Contains(fams, "gemm_wgmma"), "%s", a)
		require.Contains(t, fams, "gemm_tc")
	}
	require.Len(t, FamiliesFor(Arch{Major: 9, Minor: 0, Specific: true}), len(Families()))
}
