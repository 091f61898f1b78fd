package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/detgemm/detgemm/bench/cublas"
	"github.com/detgemm/detgemm/cudaload"
	"github.com/detgemm/detgemm/internal/gputest"
)

// TestMain lets the test binary serve as the warm-start probe that run
// starts (it re-executes os.Executable(), which is this binary in tests).
func TestMain(m *testing.M) {
	if os.Getenv(envProbe) == probeWarmStart {
		os.Exit(runProbe())
	}
	os.Exit(m.Run())
}

func TestParseFlagsDefaults(t *testing.T) {
	c, err := parseFlags(nil, io.Discard)
	require.NoError(t, err)
	require.Equal(t, []dtype{bf16, f16, f32}, c.dtypes)
	require.Equal(t, []string{modeDefault, modePedantic, modeTF32, modeFwd, modeDX, modeDW, modeTCFwd, modeTCDX, modeTCDW, modeCopy, modeRead}, c.modes)
	require.Equal(t, 15, c.repeats)
	require.Equal(t, 2*time.Millisecond, c.minTime)
	require.Equal(t, "bench-results.json", c.jsonPath)
}

func TestParseFlagsQuickAndLists(t *testing.T) {
	c, err := parseFlags([]string{"--quick", "--dtypes", "f32, bf16", "--modes=pedantic", "--shapes", "1x2x3", "--device", "1"}, io.Discard)
	require.NoError(t, err)
	require.Equal(t, 3, c.repeats)
	require.Equal(t, []dtype{f32, bf16}, c.dtypes)
	require.Equal(t, []string{modePedantic}, c.modes)
	require.Equal(t, "1x2x3", c.shapes)
	require.Equal(t, 1, c.device)
}

func TestParseFlagsRejectsBadValues(t *testing.T) {
	for _, args := range [][]string{
		{"--dtypes", "f64"}, {"--modes", "fast"}, {"--repeats", "0"}, {"--device", "-1"}, {"extra"}, {"--nope"},
	} {
		_, err := parseFlags(args, io.Discard)
		require.Error(t, err, "%v", args)
	}
}

func TestHelpExplainsColumns(t *testing.T) {
	var buf bytes.Buffer
	_, err := parseFlags([]string{"--help"}, &buf)
	require.True(t, errors.Is(err, flag.ErrHelp))
	for _, want := range []string{"-shapes", "-json", "%roof", "vs-cuBLAS", "TFLOP/s", "copy bandwidth", "datasheet"} {
		require.Contains(t, buf.String(), want)
	}
}

// TestRunWithoutGPUFailsWithLoaderReason is the no-GPU path of go run
// ./bench: an error naming the library, not a panic.
func TestRunWithoutGPUFailsWithLoaderReason(t *testing.T) {
	if _, err := cudaload.Open(); err == nil {
		t.Skip("a CUDA driver is present; the no-GPU path cannot be shown here")
	}
	c, err := parseFlags([]string{"--quick", "--json", ""}, io.Discard)
	require.NoError(t, err)
	var out, errb bytes.Buffer
	err = run(c, &out, &errb)
	require.Error(t, err)
	require.ErrorIs(t, err, cudaload.ErrDriverNotFound)
	require.Contains(t, err.Error(), "libcuda")
	require.NotContains(t, oneLine(err.Error()), "\n")
	require.Empty(t, out.String())
}

// TestRunQuickOnGPU runs the whole bench on small shapes: every row
// measured, figures positive, inputs narrowed on the device, start-up
// timed, and the JSON file readable.
func TestRunQuickOnGPU(t *testing.T) {
	gputest.Context(t)
	if testing.Short() {
		t.Skip("builds every kernel family; skipped in -short")
	}
	path := filepath.Join(t.TempDir(), "bench.json")
	c, err := parseFlags([]string{"--quick", "--shapes", "64x48x80,512x512x512", "--json", path}, io.Discard)
	require.NoError(t, err)
	c.args = []string{"bench", "--quick"}
	var out, errb bytes.Buffer
	err = run(c, &out, &errb)
	if errors.Is(err, cublas.ErrNotFound) {
		t.Skipf("no cuBLAS: %v", err)
	}
	require.NoError(t, err, "stderr: %s", errb.String())
	t.Log("\n" + out.String())

	b, err := os.ReadFile(path)
	require.NoError(t, err)
	var rep report
	require.NoError(t, json.Unmarshal(b, &rep))
	require.Len(t, rep.Rows, 2*(7+9+6+6), "2 shapes × (cuBLAS bf16, f16: default, pedantic; f32: default, pedantic, tf32) + (detgemm fwd, dx, dw × 3 types) + (detgemm tc-fwd, tc-dx, tc-dw × bf16, f16) + (copy floors copy, read × 3 types)")
	require.Greater(t, rep.Copy.BytesPerSec, 1e11)
	require.Empty(t, rep.Startup.BuildError, "kernels.Build failed")
	require.NotNil(t, rep.Startup.Warm, "warm start: %s", rep.Startup.WarmError)
	require.Equal(t, "fresh process", rep.Startup.WarmMethod)
	require.Zero(t, rep.Startup.Warm.Misses, "the warm start builds from the cache")
	require.Contains(t, rep.Inputs, "on the device")
	for _, r := range rep.Rows {
		require.Empty(t, r.Error, "%s %s %s", r.Shape, r.DType, r.Mode)
		require.Greater(t, r.MedianUS, 0.0)
		require.LessOrEqual(t, r.MinUS, r.MedianUS)
		require.GreaterOrEqual(t, r.MaxUS, r.MedianUS)
		require.Len(t, r.SamplesUS, 3)
		require.Greater(t, r.TFLOPS, 0.0)
		require.Greater(t, r.Roofline.Fraction, 0.0)
		require.GreaterOrEqual(t, r.Sets, 2)
		require.GreaterOrEqual(t, r.Launches, 1)
	}
	require.Contains(t, errb.String(), "[6/6]", "progress counts problems: 2 shapes × 3 types, each measured in turns")
	require.NotContains(t, errb.String(), "\r", "stderr is no terminal here: plain lines")

	// The saved run carries its provenance and renders without the GPU.
	require.Equal(t, reportSchema, rep.Schema)
	require.Equal(t, []string{"bench", "--quick"}, rep.Command)
	require.NotEmpty(t, rep.GoVersion)
	require.NotEmpty(t, rep.Driver.Release, "the NVIDIA driver release, for the README header")
	for _, format := range []string{formatMD, formatCSV} {
		var buf bytes.Buffer
		require.NoError(t, renderReport(&buf, &rep, format, "bench --from x.json"))
		require.Contains(t, buf.String(), "512")
	}
	var md bytes.Buffer
	require.NoError(t, writeMarkdown(&md, &rep, "bench --from x.json --format md"))
	require.Contains(t, md.String(), "| M×K×N | dtype | cuBLAS pedantic | detgemm fwd |")
	require.Contains(t, md.String(), "| M×K×N | dtype | cuBLAS default | detgemm tc-fwd |")
	require.Contains(t, md.String(), rep.GPU.Name)
	t.Log("\n" + md.String())
}
