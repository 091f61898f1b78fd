package main

import (
	"encoding/json"
	"flag"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

var updateFixture = flag.Bool("update", false, "rewrite the test fixtures in testdata/ from the code that generates them")

// fixtureV1 is a version-1 report, as the bench wrote it before version 2
// added command, commit and go_version.
var fixtureV1 = filepath.Join("testdata", "fixture-v1.json")

// fixtureNote marks the fixture's figures as made up, in fields that every
// rendering shows.
const fixtureNote = "TEST FIXTURE: made-up figures in the shape of a real run, not a measurement"

// fixtureReport builds the test fixture. Its times are made up: each row
// is its roofline floor over a fixed, invented fraction, so the figures
// hang together (TFLOP/s, %roof and ratios agree with the times) without
// being anyone's measurement.
func fixtureReport() *report {
	const copyBW = 4.0e12
	peaks := peaks{GPU: "H200 SXM", BF16: 989, F16: 989, TF32: 494, F32: 67}
	shapes := []shape{{1, 4096, 4096}, {2048, 768, 3072}, {4096, 4096, 4096}}
	dtypes := []dtype{bf16, f32}
	// Invented fractions of the roofline, per mode.
	frac := map[string]float64{
		modeDefault: 0.80, modePedantic: 0.55, modeTF32: 0.60,
		modeFwd: 0.70, modeDX: 0.66, modeDW: 0.62,
		modeTCFwd: 0.72, modeTCDX: 0.70, modeTCDW: 0.50,
		modeCopy: 0.90, modeRead: 0.95,
	}
	modes := func(dt dtype) [][2]string { // backend, mode
		out := [][2]string{{referenceBackend, modeDefault}, {referenceBackend, modePedantic}}
		if dt == f32 {
			out = append(out, [2]string{referenceBackend, modeTF32})
		}
		out = append(out, [2]string{"detgemm", modeFwd}, [2]string{"detgemm", modeDX}, [2]string{"detgemm", modeDW})
		if dt != f32 {
			out = append(out, [2]string{"detgemm", modeTCFwd}, [2]string{"detgemm", modeTCDX}, [2]string{"detgemm", modeTCDW})
		}
		return append(out, [2]string{"copy", modeCopy}, [2]string{"copy", modeRead})
	}
	var rows []row
	for _, s := range shapes {
		for _, dt := range dtypes {
			for _, bm := range modes(dt) {
				r := row{Shape: s, DType: dt, Backend: bm[0], Mode: bm[1], Launches: 8, Sets: 4, SetBytes: setBytes(s, dt)}
				if s.M == 1 && bm[1] == modeTF32 {
					r.Error = "fixture: a made-up failure, to show how one renders"
					rows = append(rows, r)
					continue
				}
				peak, name := peaks.peakFor(dt, r.Mode)
				floor := rooflineOf(s, dt, 1, copyBW, peak, name).FloorUS
				if r.Mode == modePedantic {
					// Pedantic cuBLAS runs FMAs on CUDA cores whatever the type.
					floor = rooflineOf(s, dt, 1, copyBW, peaks.F32, "f32 FMA").FloorUS
				}
				t := floor / frac[r.Mode]
				r.MedianUS, r.MinUS, r.MaxUS = t, 0.99*t, 1.02*t
				r.SamplesUS = []float64{0.99 * t, t, 1.02 * t}
				r.TFLOPS = tflops(s, t)
				r.PeakName, r.PeakTFLOPS = name, peak
				r.Roofline = rooflineOf(s, dt, t, copyBW, peak, name)
				rows = append(rows, r)
			}
		}
	}
	fillRatios(rows)
	return &report{
		Schema: schemaPrefix + "1",
		Date:   "2026-11-20T12:00:00Z",
		GPU: gpuInfo{Name: "NVIDIA H200 (" + fixtureNote + ")", ComputeCapability: "9.0", SMs: 132,
			L2Bytes: 60 << 20, MemoryBytes: 141 << 30},
		Driver: libraryInfo{Version: "13.0", Code: 13000, Release: "580.159", Path: "libcuda.so.1",
			Comment: "CUDA driver API version (cuDriverGetVersion)"},
		CUBLAS: libraryInfo{Version: "13.1.0", Code: 130100, Path: "libcublas.so.13"},
		Config: runConfig{Shapes: shapes, ShapesSource: fixtureNote, DTypes: dtypes,
			Modes:   []string{modeDefault, modePedantic, modeTF32, modeFwd, modeDX, modeDW, modeTCFwd, modeTCDX, modeTCDW, modeCopy, modeRead},
			Repeats: 15, MinTimeUS: 2000, Seed: 1, MemoryBudget: 35 << 30},
		Inputs:  fixtureNote,
		Copy:    copyBandwidth{Bytes: 960 << 20, BytesPerSec: copyBW, TimeUS: stats{Median: 503.3, Min: 501, Max: 507, N: 15}, Launches: 4},
		Peaks:   &peaks,
		Startup: startup{Arch: "sm_90a", NVRTC: "13.0", Families: 12, ColdBuildMS: 60000, Warm: &warmStart{TotalMS: 250, Hits: 12}, WarmMethod: "fresh process"},
		Rows:    rows,
	}
}

// TestFixtureIsGenerated keeps testdata/fixture-v1.json equal to what
// fixtureReport writes (go test -run TestFixtureIsGenerated -update
// rewrites it).
func TestFixtureIsGenerated(t *testing.T) {
	rep := fixtureReport()
	if *updateFixture {
		require.NoError(t, writeJSON(fixtureV1, rep))
	}
	want := filepath.Join(t.TempDir(), "f.json")
	require.NoError(t, writeJSON(want, rep))
	a, err := os.ReadFile(want)
	require.NoError(t, err)
	b, err := os.ReadFile(fixtureV1)
	require.NoError(t, err)
	var got, wantv any
	require.NoError(t, json.Unmarshal(b, &got))
	require.NoError(t, json.Unmarshal(a, &wantv))
	// Within rounding: some compilers fuse a*b+c where amd64's does not.
	require.True(t, approxEqual(wantv, got), "%s is stale: go test -run TestFixtureIsGenerated -update", fixtureV1)
	require.NotContains(t, string(b), `"command"`, "a version-1 report has no command")
}

// approxEqual compares decoded JSON, numbers to a relative 1e-12.
func approxEqual(a, b any) bool {
	switch a := a.(type) {
	case map[string]any:
		bm, ok := b.(map[string]any)
		if !ok || len(a) != len(bm) {
			return false
		}
		for k, v := range a {
			if !approxEqual(v, bm[k]) {
				return false
			}
		}
		return true
	case []any:
		bs, ok := b.([]any)
		if !ok || len(a) != len(bs) {
			return false
		}
		for i := range a {
			if !approxEqual(a[i], bs[i]) {
				return false
			}
		}
		return true
	case float64:
		bf, ok := b.(float64)
		return ok && math.Abs(a-bf) <= 1e-12*max(math.Abs(a), math.Abs(bf))
	default:
		return a == b
	}
}
