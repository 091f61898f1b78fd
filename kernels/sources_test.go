package kernels

import (
	"path"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/detgemm/detgemm/nvrtc"
	"github.com/stretchr/testify/require"
)

// kernelNames lists the kernels a family's source defines.
func kernelNames(t *testing.T, family string) []string {
	t.Helper()
	src, err := Source(family)
	require.NoError(t, err)
	// A family's entry list may be a generated include
	// (z<family>_entries.cuh, from gemm/internal/entries): read it in place.
	inc := regexp.MustCompile(`(?m)^#include "(z\w+_entries\.cuh)"`)
	for _, m := range inc.FindAllStringSubmatch(src, -1) {
		b, err := sources.ReadFile(path.Join(sourceDir, m[1]))
		require.NoError(t, err, "family %s includes %s", family, m[1])
		src += "\n" + string(b)
	}
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
	for _, f := range append(fams, CheckFamilies()...) {
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

// TestHeadersHoldThePrelude: every shared header goes to NVRTC, sorted by
// name (the cache key depends on the order), the prelude among them, each
// included at most once per compile.
func TestHeadersHoldThePrelude(t *testing.T) {
	hs := headers()
	require.NotEmpty(t, hs)
	var names []string
	for _, h := range hs {
		names = append(names, h.Name)
		if strings.HasPrefix(h.Name, "z") && strings.HasSuffix(h.Name, "_entries.cuh") {
			continue // a generated entry list, included once, at the end of its family
		}
		require.True(t, strings.Contains(h.Source, "#pragma once"), "%s", h.Name)
	}
	require.IsIncreasing(t, names)
	require.Contains(t, names, "prelude.cuh")
	require.Contains(t, names, "epilogue.cuh")
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

// TestCheckFamiliesAreTestOnly: a family marked //detgemm:check is a source
// like any other (Source, WithFamilies) but never one of the engine's: not
// in Families, nor in any architecture's FamiliesFor (so neither in a whole
// build nor in the embedded set, which gencubin builds from FamiliesFor).
func TestCheckFamiliesAreTestOnly(t *testing.T) {
	checks := CheckFamilies()
	require.Equal(t, []string{"check_fast16", "check_widen_f16"}, checks)
	require.Equal(t, []string{"detgemm_rows_f16_widen_check"}, kernelNames(t, "check_widen_f16"))
	require.ElementsMatch(t, []string{"detgemm_check_fast16_geglu", "detgemm_check_fast16_bound"}, kernelNames(t, "check_fast16"))
	for _, f := range checks {
		require.NotContains(t, Families(), f)
		for _, a := range SupportedArchs() {
			require.NotContains(t, FamiliesFor(a), f, "%s", a)
			got, err := NewBuilder(nil, WithFamilies(f)).familiesFor(a)
			require.NoError(t, err, "%s can still be built when named", f)
			require.Equal(t, []string{f}, got)
		}
	}
	for _, f := range Families() {
		names := kernelNames(t, f)
		require.NotContains(t, names, "detgemm_rows_f16_widen_check", "the check kernel is out of %s", f)
		require.NotContains(t, names, "detgemm_check_fast16_geglu", "the check kernel is out of %s", f)
	}
}

// TestRowsFamiliesAreSplit: the few-row IEEE kernels are one family a file:
// the two-launch partials (gemm_rows) and the one-launch kernel
// (gemm_rows_fused).
func TestRowsFamiliesAreSplit(t *testing.T) {
	for fam, prefix := range map[string]string{"gemm_rows": "detgemm_rows_", "gemm_rows_fused": "detgemm_rowsf_"} {
		names := kernelNames(t, fam)
		require.NotEmpty(t, names, fam)
		for _, k := range names {
			require.True(t, strings.HasPrefix(k, prefix), "%s holds %s", fam, k)
		}
	}
}

// TestIncludedHeadersFollowIncludes: a family's compile inputs are the
// headers it includes and those they include, no others, so an unrelated
// header (another family's entry list) never makes its CUBIN stale; and
// every family's closure is whole: each quoted include in it resolves.
func TestIncludedHeadersFollowIncludes(t *testing.T) {
	names := func(hs []nvrtc.Header) []string {
		var out []string
		for _, h := range hs {
			out = append(out, h.Name)
		}
		return out
	}
	src, err := Source("gemm_sp24")
	require.NoError(t, err)
	got := names(includedHeaders(src))
	require.IsIncreasing(t, got)
	for _, want := range []string{"prelude.cuh", "tc_common.cuh", "async_copy.cuh", "epilogue.cuh", "activation.cuh", "zgemm_sp24_entries.cuh"} {
		require.Contains(t, got, want)
	}
	for _, not := range []string{"wgmma.cuh", "tma.cuh", "zgemm_sp24_wg_entries.cuh", "zgemm_tc_entries.cuh"} {
		require.NotContains(t, got, not)
	}
	require.Equal(t, []string{"prelude.cuh"}, names(includedHeaders("// x\n  #  include \"prelude.cuh\"\n#include \"nope.cuh\"\n")))
	require.Empty(t, includedHeaders("int x;"))

	all := map[string]bool{}
	for _, h := range headers() {
		all[h.Name] = true
	}
	for _, f := range allFamilies() {
		src, err := Source(f)
		require.NoError(t, err)
		hs := includedHeaders(src)
		have := map[string]bool{}
		for _, h := range hs {
			have[h.Name] = true
		}
		require.True(t, have["prelude.cuh"], "%s", f)
		for _, text := range append([]string{src}, func() (out []string) {
			for _, h := range hs {
				out = append(out, h.Source)
			}
			return out
		}()...) {
			for _, m := range includeLine.FindAllStringSubmatch(text, -1) {
				if all[m[1]] {
					require.True(t, have[m[1]], "%s: %s is included but not hashed", f, m[1])
				}
			}
		}
	}
}
