package main

import "strings"

// peaks are datasheet dense throughputs in TFLOP/s (no sparsity), by input
// type: tensor-core bf16/f16, TF32 and fp8, and f32 FMA on the CUDA cores.
// They are the vendor's numbers at boost clock, not measured here, so the
// table labels them "datasheet".
type peaks struct {
	GPU  string  `json:"gpu"` // the datasheet entry matched, e.g. "H200 SXM"
	BF16 float64 `json:"bf16_tflops"`
	F16  float64 `json:"f16_tflops"`
	TF32 float64 `json:"tf32_tflops"`
	F32  float64 `json:"f32_fma_tflops"`
	// FP8 is the fp8 (E4M3, E5M2) tensor peak; absent before schema 5.
	FP8 float64 `json:"fp8_tflops,omitempty"`
}

// datasheetPeaks matches device names as the driver reports them ("NVIDIA
// H200", "NVIDIA H100 80GB HBM3"). Only boards whose dense peaks the bench
// trusts are listed; any other GPU gets no compute ceiling, and its rows
// are judged against the measured memory roofline alone.
var datasheetPeaks = []struct {
	all, none []string // every word of all and no word of none in the name
	peaks     peaks
}{
	// The PCIe and NVL boards run at lower clocks and power: other peaks.
	// FP8: 1979 dense (the datasheets' 3958 is with 2:4 sparsity).
	{[]string{"H200"}, []string{"NVL", "PCIE"}, peaks{GPU: "H200 SXM", BF16: 989, F16: 989, TF32: 494, F32: 67, FP8: 1979}},
	{[]string{"H100", "HBM3"}, []string{"NVL", "PCIE"}, peaks{GPU: "H100 SXM", BF16: 989, F16: 989, TF32: 494, F32: 67, FP8: 1979}},
	{[]string{"H100", "SXM"}, []string{"NVL", "PCIE"}, peaks{GPU: "H100 SXM", BF16: 989, F16: 989, TF32: 494, F32: 67, FP8: 1979}},
}

// lookupPeaks returns the datasheet entry for a device name.
func lookupPeaks(name string) (peaks, bool) {
	up := strings.ToUpper(name)
next:
	for _, e := range datasheetPeaks {
		for _, w := range e.all {
			if !strings.Contains(up, w) {
				continue next
			}
		}
		for _, w := range e.none {
			if strings.Contains(up, w) {
				continue next
			}
		}
		return e.peaks, true
	}
	return peaks{}, false
}

// peakFor picks the ceiling that applies to a row: the tensor-core peak of
// the input type for bf16 and f16, TF32 for f32 in tf32 mode, the fp8
// tensor peak for the fp8 products (filed under bf16, their output), and
// f32 FMA otherwise (IEEE f32 never runs on tensor cores). 0 means
// unknown.
func (p peaks) peakFor(dt dtype, mode string) (tflops float64, unit string) {
	switch {
	case isFP8Product(mode):
		return p.FP8, "fp8 tensor"
	case mode == modeFwd || mode == modeDX || mode == modeDW || isIEEEMatmul(mode):
		// The engine's IEEE tiers run f32 FMAs on CUDA cores whatever the
		// input type.
		return p.F32, "f32 FMA"
	case (mode == modeTCFwd || mode == modeTCDX || mode == modeTCDW) && dt == f16:
		return p.F16, "f16 tensor"
	case mode == modeTCFwd || mode == modeTCDX || mode == modeTCDW:
		return p.BF16, "bf16 tensor"
	case dt == bf16:
		return p.BF16, "bf16 tensor"
	case dt == f16:
		return p.F16, "f16 tensor"
	case mode == modeTF32:
		return p.TF32, "tf32 tensor"
	default:
		return p.F32, "f32 FMA"
	}
}

// roofline compares one measured time with the two ceilings.
type roofline struct {
	// MemoryUS is the time to read A and B once and write C once at the
	// measured copy bandwidth.
	MemoryUS float64 `json:"memory_floor_us"`
	// ComputeUS is 2·M·N·K at the datasheet peak; 0 when no peak is known.
	ComputeUS float64 `json:"compute_floor_us,omitempty"`
	// FloorUS is the larger of the two: no kernel can beat it.
	FloorUS float64 `json:"floor_us"`
	// Bound names the larger ceiling: "memory" or the peak used ("bf16
	// tensor", "f32 FMA", ...).
	Bound string `json:"bound"`
	// Fraction is FloorUS / measured: 1 is at the roofline.
	Fraction float64 `json:"roofline_fraction"`
	// MemoryFraction and PeakFraction are each ceiling on its own.
	MemoryFraction float64 `json:"memory_fraction"`
	PeakFraction   float64 `json:"peak_fraction,omitempty"`
}

// rooflineOf computes the floors of a GEMM and how close measuredUS comes.
// copyBW is bytes moved (read + written) per second; peakTFLOPS may be 0.
func rooflineOf(s shape, dt dtype, measuredUS, copyBW, peakTFLOPS float64, peakName string) roofline {
	var r roofline
	if copyBW > 0 {
		r.MemoryUS = float64(gemmBytes(s, dt)) / copyBW * 1e6
	}
	r.FloorUS, r.Bound = r.MemoryUS, "memory"
	if peakTFLOPS > 0 {
		r.ComputeUS = s.FLOPs() / (peakTFLOPS * 1e12) * 1e6
		if r.ComputeUS > r.FloorUS {
			r.FloorUS, r.Bound = r.ComputeUS, peakName
		}
	}
	if measuredUS > 0 {
		r.Fraction = r.FloorUS / measuredUS
		r.MemoryFraction = r.MemoryUS / measuredUS
		r.PeakFraction = r.ComputeUS / measuredUS
	}
	return r
}

// gemmBytes is the least traffic of a GEMM: A and B read once, C written
// once, all in the input type.
func gemmBytes(s shape, dt dtype) int64 {
	m, k, n := int64(s.M), int64(s.K), int64(s.N)
	return (m*k + k*n + m*n) * int64(dt.Size())
}

// tflops converts a time per GEMM into TFLOP/s.
func tflops(s shape, us float64) float64 {
	if us <= 0 {
		return 0
	}
	return s.FLOPs() / (us * 1e-6) / 1e12
}
