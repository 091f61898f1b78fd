package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func sampleReport() *report {
	s := shape{4096, 4096, 4096}
	rows := []row{
		{Shape: s, DType: bf16, Backend: referenceBackend, Mode: modeDefault, MedianUS: 200, MinUS: 190, MaxUS: 230,
			SamplesUS: []float64{190, 200, 230}, TFLOPS: tflops(s, 200), PeakName: "bf16 tensor", PeakTFLOPS: 989,
			Roofline: rooflineOf(s, bf16, 200, 4.2e12, 989, "bf16 tensor"), Launches: 10, Sets: 2, SetBytes: setBytes(s, bf16)},
		{Shape: s, DType: bf16, Backend: "detgemm tc", Mode: "tc", MedianUS: 400, MinUS: 400, MaxUS: 400,
			SamplesUS: []float64{400}, TFLOPS: tflops(s, 400), Launches: 5, Sets: 2},
		{Shape: s, DType: f32, Backend: referenceBackend, Mode: modePedantic, Error: "cublasGemmEx: CUBLAS_STATUS_NOT_SUPPORTED (15)"},
	}
	fillRatios(rows)
	return &report{
		Schema: reportSchema, Date: "2026-11-21T10:00:00Z",
		GPU:    gpuInfo{Name: "NVIDIA H200", ComputeCapability: "9.0", SMs: 132, L2Bytes: 60 << 20, MemoryBytes: 141 << 30},
		Driver: libraryInfo{Version: "13.0", Code: 13000, Path: "libcuda.so.1"},
		CUBLAS: libraryInfo{Version: "13.1.0", Code: 130100, Path: "libcublas.so.13"},
		Config: runConfig{Shapes: []shape{s}, ShapesSource: "built-in", DTypes: []dtype{bf16, f32}, Modes: []string{modeDefault, modePedantic, modeTF32},
			Repeats: 15, MinTimeUS: 2000, Seed: 1, MemoryBudget: 35 << 30},
		Inputs:  "uniform",
		Copy:    copyBandwidth{Bytes: 1 << 30, BytesPerSec: 4.2e12, TimeUS: stats{Median: 511, Min: 510, Max: 515, N: 15}, Launches: 4},
		Peaks:   &peaks{GPU: "H200 SXM", BF16: 989, F16: 989, TF32: 494, F32: 67},
		Startup: startup{Arch: "sm_90a", NVRTC: "13.0", Families: 3, ColdBuildMS: 1234, Warm: &warmStart{TotalMS: 90, Hits: 3}, WarmMethod: "fresh process"},
		Rows:    rows,
	}
}

func TestReportJSONRoundTrip(t *testing.T) {
	rep := sampleReport()
	path := filepath.Join(t.TempDir(), "r.json")
	require.NoError(t, writeJSON(path, rep))
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	var back report
	require.NoError(t, json.Unmarshal(b, &back))
	require.Equal(t, *rep, back)
}

// TestReportJSONFieldNames pins the names that scripts read.
func TestReportJSONFieldNames(t *testing.T) {
	b, err := json.Marshal(sampleReport())
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(b, &m))
	for _, k := range []string{"schema", "date", "gpu", "driver", "cublas", "config", "inputs", "copy_bandwidth", "datasheet_peaks", "startup", "rows"} {
		require.Contains(t, m, k)
	}
	require.Equal(t, reportSchema, m["schema"])
	require.Contains(t, m["gpu"], "compute_capability")
	require.Contains(t, m["copy_bandwidth"], "bytes_per_sec")
	row := m["rows"].([]any)[0].(map[string]any)
	for _, k := range []string{"shape", "dtype", "backend", "mode", "median_us", "min_us", "max_us", "samples_us", "tflops",
		"roofline", "launches_per_measurement", "input_sets", "bytes_per_set"} {
		require.Contains(t, row, k)
	}
	require.NotContains(t, row, "vs_cublas", "cuBLAS rows have no ratio")
	require.Contains(t, row["roofline"], "roofline_fraction")
	require.Contains(t, m["rows"].([]any)[1], "vs_cublas")
}

func TestFillRatiosDividesByCublasDefault(t *testing.T) {
	rows := sampleReport().Rows
	require.Zero(t, rows[0].VsCUBLAS)
	require.InDelta(t, 0.5, rows[1].VsCUBLAS, 1e-12, "twice cuBLAS's time is 0.5×")
	require.Zero(t, rows[2].VsCUBLAS)
}

func TestPrintReportTable(t *testing.T) {
	var buf bytes.Buffer
	printReport(&buf, sampleReport())
	out := buf.String()
	for _, want := range []string{"NVIDIA H200", "CUDA 13.0", "cuBLAS   13.1.0", "4.20 TB/s", "datasheet H200 SXM",
		"cold build 1234 ms", "warm start 90 ms", "shape MxKxN", "TFLOP/s", "%roof", "vs-cuBLAS",
		"4096x4096x4096", "687.2", "0.50×", "error: cublasGemmEx"} {
		require.Contains(t, out, want)
	}
}

func TestProgressRewritesOneLine(t *testing.T) {
	var buf bytes.Buffer
	p := &progress{w: &buf, tty: true, total: 2}
	p.step("4096x4096x4096 bf16 cuBLAS default")
	p.step("1x2x3 f32 cuBLAS tf32")
	p.finish()
	out := buf.String()
	require.True(t, strings.HasPrefix(out, "\r[1/2] 4096x4096x4096 bf16 cuBLAS default\r[2/2] 1x2x3 f32 cuBLAS tf32 "), "%q", out)
	require.True(t, strings.HasSuffix(out, "\n"))
	require.Len(t, strings.Split(strings.Split(out, "\r")[2], "\n")[0], len("[1/2] 4096x4096x4096 bf16 cuBLAS default"),
		"a shorter line is padded over the longer one")
}
