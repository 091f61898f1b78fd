package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/detgemm/detgemm/cudaload"
	"github.com/detgemm/detgemm/kernels"
	"github.com/detgemm/detgemm/nvrtc"
)

// startup is what detgemm's start-up costs: compiling every kernel family
// with an empty cache, and a warm start (driver, context, build from the
// cache, module loads) in a process that has done none of it before.
type startup struct {
	Arch        string  `json:"arch,omitempty"`
	NVRTC       string  `json:"nvrtc_version,omitempty"`
	NVRTCPath   string  `json:"nvrtc_path,omitempty"`
	Families    int     `json:"families,omitempty"`
	ColdBuildMS float64 `json:"cold_build_ms,omitempty"` // kernels.Build with an empty cache
	ColdMisses  int     `json:"cold_misses,omitempty"`
	BuildError  string  `json:"build_error,omitempty"`

	// EmbeddedBuildMS is kernels.Build from the embedded set alone (no
	// NVRTC, no cache), in the bench's process; EmbeddedModules counts what
	// it loaded from there. EmbeddedError says why it could not.
	EmbeddedBuildMS float64 `json:"embedded_build_ms,omitempty"`
	EmbeddedModules int     `json:"embedded_modules,omitempty"`
	EmbeddedError   string  `json:"embedded_error,omitempty"`

	Skipped bool `json:"skipped,omitempty"` // --startup=false: built from the usual cache, untimed

	Warm       *warmStart `json:"warm_start,omitempty"`
	WarmMethod string     `json:"warm_method,omitempty"` // "fresh process" or "in-process (driver already loaded)"
	WarmError  string     `json:"warm_error,omitempty"`
}

// warmStart times a start with the kernel cache already filled.
type warmStart struct {
	TotalMS   float64 `json:"total_ms"`
	DriverMS  float64 `json:"driver_ms"`      // cudaload.Open: dlopen, cuInit
	ContextMS float64 `json:"context_ms"`     // device and primary context
	BuildMS   float64 `json:"build_ms"`       // nvrtc.Open and kernels.Build from the cache
	LoadMS    float64 `json:"module_load_ms"` // cuModuleLoadData of every family
	Hits      int     `json:"cache_hits"`
	Misses    int     `json:"cache_misses"`
}

// Environment variables by which the bench starts itself as a warm-start
// probe. They are private to the bench: the probe prints one JSON line.
const (
	envProbe       = "DETGEMM_BENCH_PROBE"
	envProbeDevice = "DETGEMM_BENCH_PROBE_DEVICE"
	probeWarmStart = "warm-start"
)

// coldBuild compiles every family for the device into a fresh cache dir and
// returns the bundle (for the util kernels) with the figures filled in.
func coldBuild(ccMajor, ccMinor, driver int, cacheDir string, st *startup) (*kernels.Bundle, error) {
	c, err := nvrtc.Open()
	if err != nil {
		return nil, err
	}
	nvMajor, nvMinor := c.Version()
	st.NVRTC, st.NVRTCPath = fmt.Sprintf("%d.%d", nvMajor, nvMinor), c.Path()
	arch := kernels.ArchFor(ccMajor, ccMinor, nvMajor)
	st.Arch = arch.String()
	t0 := time.Now()
	// ModeNVRTC: the cold figure is NVRTC compiling every family, which the
	// embedded kernel set would otherwise skip (embeddedBuild times that).
	b, err := kernels.Build(arch, kernels.WithCompiler(c), kernels.WithCacheDir(cacheDir), kernels.WithCache(true),
		kernels.WithMode(kernels.ModeNVRTC))
	if err != nil {
		return nil, err
	}
	st.ColdBuildMS = ms(time.Since(t0))
	st.ColdMisses = b.Misses
	st.Families = len(b.Modules)
	embeddedBuild(arch, driver, st)
	return b, nil
}

// embeddedBuild times Build from the embedded kernel set alone (no NVRTC,
// no cache), in this process: the variant that driver (its CUDA version,
// as gemm.New passes it) loads.
func embeddedBuild(arch kernels.Arch, driver int, st *startup) {
	t0 := time.Now()
	b, err := kernels.Build(arch, kernels.WithMode(kernels.ModeEmbedded), kernels.WithCache(false), kernels.WithDriverVersion(driver))
	if err != nil {
		st.EmbeddedError = oneLine(err.Error())
		return
	}
	st.EmbeddedBuildMS = ms(time.Since(t0))
	st.EmbeddedModules = b.Embedded
}

// warmStartChild runs the bench binary again as a probe, with the cache
// that coldBuild filled, so the figure includes what a real first call in
// a new process pays (loading libcuda and libnvrtc, cuInit, the context).
func warmStartChild(device int, cacheDir string) (*warmStart, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, exe)
	cmd.Env = append(os.Environ(),
		envProbe+"="+probeWarmStart,
		envProbeDevice+"="+strconv.Itoa(device),
		kernels.EnvCacheDir+"="+cacheDir,
	)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("probe: %v: %s", err, oneLine(errb.String()))
	}
	var w warmStart
	if err := json.Unmarshal(bytes.TrimSpace(out.Bytes()), &w); err != nil {
		return nil, fmt.Errorf("probe output %q: %w", oneLine(out.String()), err)
	}
	return &w, nil
}

// runProbe is the child's side: time a warm start on the device named by
// the environment and print it as JSON.
func runProbe() int {
	dev, _ := strconv.Atoi(os.Getenv(envProbeDevice))
	w, err := measureWarmStart(dev)
	if err != nil {
		fmt.Fprintln(os.Stderr, oneLine(err.Error()))
		return 1
	}
	if err := json.NewEncoder(os.Stdout).Encode(w); err != nil {
		return 1
	}
	return 0
}

// measureWarmStart opens the driver, the device's primary context and NVRTC,
// builds every family from the cache named by DETGEMM_CACHE_DIR and loads
// each module, timing each step. In the bench's own process the driver and
// NVRTC are already loaded, so the child-process figure is the real one.
func measureWarmStart(device int) (*warmStart, error) {
	var w warmStart
	t0 := time.Now()
	drv, err := cudaload.Open()
	if err != nil {
		return nil, err
	}
	t1 := time.Now()
	dev, err := drv.Device(device)
	if err != nil {
		return nil, err
	}
	cctx, err := dev.PrimaryContext()
	if err != nil {
		return nil, err
	}
	defer cctx.Close()
	if err := cctx.Synchronize(); err != nil { // the context is live once a call succeeds
		return nil, err
	}
	t2 := time.Now()
	c, err := nvrtc.Open()
	if err != nil {
		return nil, err
	}
	nvMajor, _ := c.Version()
	ccMajor, ccMinor := dev.ComputeCapability()
	b, err := kernels.Build(kernels.ArchFor(ccMajor, ccMinor, nvMajor), kernels.WithCompiler(c), kernels.WithCache(true),
		kernels.WithMode(kernels.ModeNVRTC))
	if err != nil {
		return nil, err
	}
	t3 := time.Now()
	var mods []*cudaload.Module
	for _, m := range b.Modules {
		mod, err := cctx.LoadModule(m.CUBIN)
		if err != nil {
			return nil, fmt.Errorf("loading %s: %w", m.Family, err)
		}
		mods = append(mods, mod)
	}
	t4 := time.Now()
	for _, m := range mods {
		_ = m.Close()
	}
	w.DriverMS, w.ContextMS, w.BuildMS, w.LoadMS = ms(t1.Sub(t0)), ms(t2.Sub(t1)), ms(t3.Sub(t2)), ms(t4.Sub(t3))
	w.TotalMS = ms(t4.Sub(t0))
	w.Hits, w.Misses = b.Hits, b.Misses
	return &w, nil
}

// measureStartup fills startup and returns the bundle (nil when the build
// failed: the bench then narrows inputs on the host and says so).
func measureStartup(dev *cudaload.Device, driver int) (*kernels.Bundle, startup) {
	var st startup
	dir, err := os.MkdirTemp("", "detgemm-bench-cache-")
	if err != nil {
		st.BuildError = err.Error()
		return nil, st
	}
	defer os.RemoveAll(dir)
	ccMajor, ccMinor := dev.ComputeCapability()
	b, err := coldBuild(ccMajor, ccMinor, driver, dir, &st)
	if err != nil {
		st.BuildError = oneLine(err.Error())
		return nil, st
	}
	w, err := warmStartChild(dev.Ordinal(), dir)
	if err == nil {
		st.Warm, st.WarmMethod = w, "fresh process"
		return b, st
	}
	st.WarmError = oneLine(err.Error())
	// The child could not run (no exec, exclusive-process GPU): time it
	// here, knowing the driver and NVRTC are already loaded.
	prev, had := os.LookupEnv(kernels.EnvCacheDir)
	_ = os.Setenv(kernels.EnvCacheDir, dir)
	w, err = measureWarmStart(dev.Ordinal())
	if had {
		_ = os.Setenv(kernels.EnvCacheDir, prev)
	} else {
		_ = os.Unsetenv(kernels.EnvCacheDir)
	}
	if err != nil {
		st.WarmError += "; in-process: " + oneLine(err.Error())
		return b, st
	}
	st.Warm, st.WarmMethod = w, "in-process (driver already loaded)"
	return b, st
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1e3 }

// oneLine folds a multi-line error (a library search lists one candidate
// per line) into one line.
func oneLine(s string) string {
	s = strings.TrimSpace(s)
	s = strings.ReplaceAll(s, ":\n  ", ": ")
	s = strings.ReplaceAll(s, "\n  ", "; ")
	return strings.ReplaceAll(s, "\n", "; ")
}

// buildUntimed builds every family through the usual cache (compiling only
// what is missing), for the util kernels, timing nothing (--startup=false).
// The driver's CUDA version picks the embedded variant, as in gemm.New:
// without it a binary that embeds only the cuda13 set (the GPU machine's
// GPU_TAGS) found no base CUBINs and compiled every family with NVRTC.
func buildUntimed(dev *cudaload.Device, driver int) (*kernels.Bundle, startup) {
	st := startup{Skipped: true}
	c, err := nvrtc.Open()
	if err != nil {
		st.BuildError = oneLine(err.Error())
		return nil, st
	}
	nvMajor, nvMinor := c.Version()
	st.NVRTC, st.NVRTCPath = fmt.Sprintf("%d.%d", nvMajor, nvMinor), c.Path()
	ccMajor, ccMinor := dev.ComputeCapability()
	arch := kernels.ArchFor(ccMajor, ccMinor, nvMajor)
	st.Arch = arch.String()
	b, err := kernels.Build(arch, kernels.WithCompiler(c), kernels.WithDriverVersion(driver))
	if err != nil {
		st.BuildError = oneLine(err.Error())
		return nil, st
	}
	st.Families = len(b.Modules)
	return b, st
}
