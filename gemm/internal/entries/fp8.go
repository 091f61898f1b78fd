package entries

import (
	"fmt"
	"strings"
)

// FP8Family holds the fp8 product's kernels (gemm_fp8.cu): wgmma k32 steps
// on E4M3/E5M2 operands, both K-major, in 128 × 128 tiles.
const FP8Family = "gemm_fp8"

// FP8QuantFamily holds the quantization to fp8 (fp8_quant.cu): group
// maxima, the quantization, the scales.
const FP8QuantFamily = "fp8_quant"

// FP8Pairs are the operand type pairs the fp8 product takes (A, B): those
// cuBLASLt takes (E5M2 × E5M2 is not among them).
var FP8Pairs = [][2]string{{"e4m3", "e4m3"}, {"e4m3", "e5m2"}, {"e5m2", "e4m3"}}

// FP8Outs are the fp8 product's output types.
var FP8Outs = []string{"bf16", "f16", "f32", "e4m3", "e5m2"}

// FP8Tiles are the fp8 product's kernels by accumulation mode and tile
// width: one chain over K ("fast"), or a chain per 128 positions of K
// promoted into f32 ("prom"), each in 128 × BN tiles (gemm_fp8.cu's T32,
// T64, T128, T256; the promoted mode's three accumulator sets leave no
// registers for 256 columns). The 256-column tile has no activation.
var FP8Tiles = []string{"fast32", "fast64", "fast128", "fast256", "prom32", "prom64", "prom128"}

// FP8Acts are the activations compiled into the fp8 product's epilogue.
var FP8Acts = []string{"none", "relu", "gelu"}

// f8Type is a type's code in gemm_fp8.cu and fp8_quant.cu.
func f8Type(ns, d string) string {
	switch d {
	case "e4m3":
		return ns + "::E4M3"
	case "e5m2":
		return ns + "::E5M2"
	}
	return up("epi", d)
}

// f8Out is an output type's code in gemm_fp8.cu and fp8_quant.cu.
func f8Out(ns, d string) string {
	switch d {
	case "e4m3":
		return ns + "::OUT_E4M3"
	case "e5m2":
		return ns + "::OUT_E5M2"
	}
	return up("epi", d)
}

// fp8: the fp8 product by mode, activation, operand pair (In "a_b") and
// output type.
func fp8() (out []Entry) {
	for _, m := range FP8Tiles {
		prom := strings.HasPrefix(m, "prom")
		tile := "f8::T" + strings.TrimLeft(m, "fastprom")
		for _, act := range FP8Acts {
			if m == "fast256" && act != "none" {
				continue // their stores spilled at 256 columns; the activations take the 128 tile
			}
			for _, p := range FP8Pairs {
				for _, o := range FP8Outs {
					out = append(out, Entry{Key: Key{Kind: "fp8", In: p[0] + "_" + p[1], Out: o, Tile: m, Act: act},
						Family: FP8Family, Header: HeaderFor(FP8Family), Macro: "DETGEMM_F8_ENTRY",
						Name: fmt.Sprintf("detgemm_fp8_%s_%s_%s%s_%s", m, act, p[0], p[1], o),
						Args: []string{tile, f8Type("f8", p[0]), f8Type("f8", p[1]), f8Out("f8", o), fmt.Sprint(prom), "epi::ACT_" + map[string]string{"none": "NONE", "relu": "RELU", "gelu": "GELU"}[act]}})
				}
			}
		}
	}
	return out
}

// fp8Quant: the group maxima by input type (kind "fp8amax"), the
// quantization by input and output type ("fp8quant"), and the scales
// ("fp8scales").
func fp8Quant() (out []Entry) {
	h := HeaderFor(FP8QuantFamily)
	for _, in := range ieeeIn {
		out = append(out, Entry{Key: Key{Kind: "fp8amax", In: in}, Family: FP8QuantFamily, Header: h,
			Macro: "DETGEMM_F8Q_AMAX_ENTRY", Name: "detgemm_fp8_amax_" + in, Args: []string{up("epi", in)}})
		for _, o := range []string{"e4m3", "e5m2"} {
			out = append(out, Entry{Key: Key{Kind: "fp8quant", In: in, Out: o}, Family: FP8QuantFamily, Header: h,
				Macro: "DETGEMM_F8Q_QUANT_ENTRY", Name: fmt.Sprintf("detgemm_fp8_quant_%s_%s", in, o),
				Args: []string{up("epi", in), f8Out("f8q", o)}})
		}
	}
	out = append(out, Entry{Key: Key{Kind: "fp8scales"}, Family: FP8QuantFamily, Header: h,
		Macro: "DETGEMM_F8Q_SCALES_ENTRY", Name: "detgemm_fp8_scales"})
	return out
}
