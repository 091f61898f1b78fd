package gemm

import (
	"fmt"
	"math/rand/v2"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/detgemm/detgemm/cudaload"
	"github.com/detgemm/detgemm/internal/nvrtctest"
	"github.com/detgemm/detgemm/kernels"
	"github.com/detgemm/detgemm/nvrtc"
)

// TestEngineFromEmbeddedNeedsNoNVRTC: on a shipped architecture an engine
// forced to the embedded set starts with NVRTC pointed at a path that does
// not exist and no usable cache directory, reports every family as
// embedded, and computes (the bits are checked by the golden tests, which
// run through the embedded set by default).
func TestEngineFromEmbeddedNeedsNoNVRTC(t *testing.T) {
	eng0, ctx := gpuEngine(t)
	if !kernels.Embedded(eng0.Arch(), engineFamilies(eng0.Arch())...) {
		t.Skipf("%s is not in the embedded set %v", eng0.Arch(), kernels.EmbeddedArchs())
	}
	t.Setenv(nvrtc.EnvLibrary, "/nonexistent/libnvrtc.so")
	t.Setenv(kernels.EnvCacheDir, "/nonexistent/cache")
	eng, err := New(ctx, WithKernels(kernels.ModeEmbedded), WithBuildOptions(kernels.WithCache(false)))
	require.NoError(t, err)
	defer func() { require.NoError(t, eng.Close()) }()
	rep := eng.BuildReport()
	t.Log(rep)
	require.Equal(t, "embedded", rep.Start())
	require.Equal(t, len(engineFamilies(eng.Arch())), rep.Embedded)
	require.Zero(t, rep.Compiled+rep.CacheHits)
	require.Empty(t, rep.NVRTCVersion)
	require.Empty(t, rep.Warnings)
	for _, f := range rep.Families {
		require.Equal(t, kernels.OriginEmbedded, f.Origin, f.Family)
	}
	r := newRand(t)
	want, got, cols := runOp(t, eng, ctx, r, "Forward", TierF32, F32, F32, 7, 300, 33, true)
	requireSameBits(t, want, got, cols, "Forward f32 from the embedded set")
}

// TestEmbeddedAndNVRTCEnginesGiveSameBits runs the same calls through an
// engine on the embedded CUBINs and one compiled by the NVRTC on the
// machine: every tier, op and dtype gives the same bits (and the IEEE
// tiers the CPU reference's).
func TestEmbeddedAndNVRTCEnginesGiveSameBits(t *testing.T) {
	_, ctx := gpuEngine(t)
	nvrtctest.Compiler(t)
	emb, err := New(ctx, WithKernels(kernels.ModeEmbedded))
	if err != nil {
		t.Skipf("no embedded set for this device: %v", err)
	}
	defer func() { require.NoError(t, emb.Close()) }()
	nv, err := New(ctx, WithKernels(kernels.ModeNVRTC), WithBuildOptions(kernels.WithCacheDir(t.TempDir())))
	require.NoError(t, err)
	defer func() { require.NoError(t, nv.Close()) }()
	t.Log("embedded: ", emb.BuildReport())
	t.Log("NVRTC:    ", nv.BuildReport())
	require.Equal(t, emb.Arch(), nv.Arch(), "both paths build for one architecture")
	require.Positive(t, nv.BuildReport().Compiled)

	requireEnginesAgree(t, ctx, emb, nv, "embedded vs NVRTC", []engineCombo{{TierTensorCore, BF16, BF16}, {TierTensorCore, F16, F32}},
		[][3]int{{1, 4097, 5}, {7, 300, 33}, {16, 4096, 4096}, {130, 1000, 17}, {512, 768, 1024}})
}

// engineCombo is a tier with its input and output types.
type engineCombo struct {
	tier    Tier
	in, out DType
}

// requireEnginesAgree runs every op of every combo (and of every IEEE
// combo) on each shape through a and b with the same inputs: the bits must
// be equal, and the IEEE tiers' equal to the CPU reference's.
func requireEnginesAgree(t *testing.T, ctx *cudaload.Context, a, b *Engine, label string, combos []engineCombo, shapes [][3]int) {
	t.Helper()
	for _, c := range ieeeCombos {
		combos = append(combos, engineCombo{c.tier, c.in, c.out})
	}
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	for _, op := range []string{"Forward", "DX", "DW"} {
		for _, c := range combos {
			if op == "DW" && c.out != F32 {
				continue
			}
			for i, s := range shapes {
				name := fmt.Sprintf("%s/%v/%v-%v/%dx%dx%d", op, c.tier, c.in, c.out, s[0], s[1], s[2])
				t.Run(name, func(t *testing.T) {
					wantA, gotA, cols := runOp(t, a, ctx, rand.New(rand.NewPCG(seed, uint64(i))), op, c.tier, c.in, c.out, s[0], s[1], s[2], i%2 == 0)
					_, gotB, _ := runOp(t, b, ctx, rand.New(rand.NewPCG(seed, uint64(i))), op, c.tier, c.in, c.out, s[0], s[1], s[2], i%2 == 0)
					requireSameBits(t, gotA, gotB, cols, name+" "+label)
					if c.tier != TierTensorCore {
						requireSameBits(t, wantA, gotA, cols, name)
					}
				})
			}
		}
	}
}

// TestSecondEngineSharesTheModules: a second engine on the context loads
// nothing; the time it takes is logged (the goal is 5 ms).
func TestSecondEngineSharesTheModules(t *testing.T) {
	first, ctx := gpuEngine(t)
	t0 := time.Now()
	second, err := New(ctx)
	elapsed := time.Since(t0)
	require.NoError(t, err)
	rep := second.BuildReport()
	require.True(t, rep.Shared)
	require.Equal(t, "shared", rep.Start())
	require.Same(t, first.mods, second.mods)
	t.Logf("second engine on the context: %v (%s)", elapsed, rep)
	require.NoError(t, second.Close())
	require.True(t, first.mods.ready, "the first engine's modules stay loaded")
	r := newRand(t)
	want, got, cols := runOp(t, first, ctx, r, "DX", TierTyped, BF16, F32, 5, 256, 64, false)
	requireSameBits(t, want, got, cols, "first engine after the second closed")
	if os.Getenv(kernels.EnvKernels) == "" && kernels.Embedded(first.Arch(), engineFamilies(first.Arch())...) {
		require.Equal(t, "embedded", first.BuildReport().Start(), "by default a shipped architecture starts from the embedded set")
	}
}

// TestEmbeddedVariantsGiveSameBits: on a driver that loads the cuda13
// variant (CUDA 13, R580+), an engine's embedded modules are that
// variant's by default, and engines forced to the base variant (NVRTC 12)
// and to cuda13 (NVRTC 13) give the same bits on every tier, op and dtype.
func TestEmbeddedVariantsGiveSameBits(t *testing.T) {
	eng0, ctx := gpuEngine(t)
	driver := ctx.Driver().Version()
	arch := eng0.Arch()
	cudaOpts := []kernels.BuildOption{kernels.WithDriverVersion(driver), kernels.WithEmbeddedVariant("cuda13"),
		kernels.WithFamilies(engineFamilies(arch)...)}
	if !kernels.EmbeddedFor(arch, cudaOpts...) {
		t.Skipf("no cuda13 variant for %s with driver %d (variants %v)", arch, driver, kernels.EmbeddedVariants())
	}
	if os.Getenv(kernels.EnvKernels) == "" && os.Getenv(kernels.EnvEmbeddedVariant) == "" {
		rep := eng0.BuildReport()
		t.Log("default: ", rep)
		require.Equal(t, "cuda13", rep.EmbeddedVariant, "the newest variant the driver loads is the default")
		require.Equal(t, driver, rep.DriverVersion)
		require.Contains(t, rep.String(), "variant cuda13")
	}
	if !kernels.EmbeddedFor(arch, kernels.WithEmbeddedVariant("base"), kernels.WithFamilies(engineFamilies(arch)...)) {
		t.Skipf("this binary embeds no base variant for %s (built with -tags detgemm_only_sm90a? build the test without it)", arch)
	}
	base, err := New(ctx, WithKernels(kernels.ModeEmbedded), WithBuildOptions(kernels.WithEmbeddedVariant("base")))
	require.NoError(t, err)
	defer func() { require.NoError(t, base.Close()) }()
	c13, err := New(ctx, WithKernels(kernels.ModeEmbedded), WithBuildOptions(kernels.WithEmbeddedVariant("cuda13")))
	require.NoError(t, err)
	defer func() { require.NoError(t, c13.Close()) }()
	t.Log("base:   ", base.BuildReport())
	t.Log("cuda13: ", c13.BuildReport())
	require.Equal(t, "base", base.BuildReport().EmbeddedVariant)
	require.Equal(t, "cuda13", c13.BuildReport().EmbeddedVariant)
	require.Empty(t, c13.BuildReport().Warnings)

	requireEnginesAgree(t, ctx, base, c13, "base vs cuda13",
		[]engineCombo{{TierTensorCore, BF16, BF16}, {TierTensorCore, BF16, F32}, {TierTensorCore, F16, F32}},
		[][3]int{{1, 4097, 5}, {7, 300, 33}, {16, 4096, 4096}, {130, 1000, 17}, {512, 768, 1024}, {128, 4096, 1100}})
}
