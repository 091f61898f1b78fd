package ref_test

import (
	"math"
	"os"
	"strings"
	"testing"

	"github.com/detgemm/detgemm/cudaload"
	"github.com/detgemm/detgemm/gemm/ref"
	"github.com/detgemm/detgemm/internal/gputest"
	"github.com/detgemm/detgemm/kernels"
	"github.com/detgemm/detgemm/nvrtc"
)

// cudaTranscendentals is the CUDA block of docs/contract.md, section
// "Transcendentals": the text the device epilogue copies.
func cudaTranscendentals(t *testing.T) string {
	doc, err := os.ReadFile("../../docs/contract.md")
	if err != nil {
		t.Fatal(err)
	}
	s := string(doc)
	i := strings.Index(s, "## Transcendentals")
	if i < 0 {
		t.Fatal("docs/contract.md has no section Transcendentals")
	}
	s = s[i:]
	j := strings.Index(s, "```cuda\n")
	k := strings.Index(s[j+8:], "```")
	if j < 0 || k < 0 {
		t.Fatal("no ```cuda block in section Transcendentals")
	}
	return s[j+8 : j+8+k]
}

// dgOuts is the number of results dgEval writes per input: the six
// functions, SiLU and its derivative, and the gate functions (act, grad,
// and act_grad's pair) for every g of 0 (invalid) to 5 (invalid); dgEval's
// stride.
const dgOuts = 8 + 4*6

// dgEval evaluates every function of the block on every input.
const dgEval = `
extern "C" __global__ void dg_eval(const float *x, unsigned *out, unsigned n) {
  unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float v = x[i];
  unsigned *o = out + 32 * i;
  o[0] = __float_as_uint(dg_exp(v));
  o[1] = __float_as_uint(dg_tanh(v));
  o[2] = __float_as_uint(dg_sigmoid(v));
  o[3] = __float_as_uint(dg_gelu(v));
  o[4] = __float_as_uint(dg_gelu_grad(v));
  o[5] = __float_as_uint(dg_relu(v));
  o[6] = __float_as_uint(dg_silu(v));
  o[7] = __float_as_uint(dg_silu_grad(v));
  for (int g = 0; g <= 5; g++) {
    o[8 + 2 * g] = __float_as_uint(dg_gate_act(g, v));
    o[9 + 2 * g] = __float_as_uint(dg_gate_grad(g, v));
    float a, d;
    dg_gate_act_grad(g, v, &a, &d);
    o[20 + 2 * g] = __float_as_uint(a);
    o[21 + 2 * g] = __float_as_uint(d);
  }
}
`

// TestTranscendentalsCUDATextMatchesGo compiles the CUDA text of
// docs/contract.md with NVRTC and the engine's flags (skipped without
// NVRTC) and, where a GPU is present, runs it on every bf16 value, float32
// specials and a sample of float32 bit patterns of every binade: each
// function's bits must equal the Go definition's (Exp32, Tanh32,
// Sigmoid32, Gelu32, GeluGrad32, the epilogues' ReLU, Silu32, SiluGrad32,
// and GateAct32 and GateGrad32 of every gate, and of the invalid codes 0
// and 5).
func TestTranscendentalsCUDATextMatchesGo(t *testing.T) {
	comp, err := nvrtc.Open()
	if err != nil {
		t.Skipf("no NVRTC: %v", err)
	}
	arch := kernels.Arch{Major: 9}
	drv, drvErr := cudaload.Open()
	var dev *cudaload.Device
	if drvErr == nil {
		if dev, err = drv.Device(0); err == nil {
			arch.Major, arch.Minor = dev.ComputeCapability()
		}
	}
	res, err := comp.Compile(cudaTranscendentals(t)+dgEval, "transcendentals.cu", kernels.Flags(arch))
	if err != nil {
		t.Fatalf("the contract's CUDA text does not compile: %v", err)
	}
	if drvErr != nil || dev == nil {
		t.Skipf("compiled for %v; no GPU to run it (%v)", arch, drvErr)
	}
	ctx, err := dev.PrimaryContext()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ctx.Close() }) // after the module's (cleanups run last first)
	fn := gputest.Kernel(t, ctx, res.CUBIN, "dg_eval")
	var xs []float32
	for h := range 1 << 16 {
		xs = append(xs, ref.F32FromBF16(uint16(h)))
	}
	for u := uint32(0); u < 0xFF800000; u += 4093 {
		xs = append(xs, math.Float32frombits(u))
	}
	xs = append(xs, 0, float32(math.Copysign(0, -1)), float32(math.Inf(1)), float32(math.Inf(-1)), 89, -104, 16, -16,
		0x1.19p3, 0.55, math.SmallestNonzeroFloat32, math.MaxFloat32, -math.MaxFloat32, -0.7518, -1.2785, -0x1p-149,
		math.Float32frombits(0xFFC00000), math.Float32frombits(0x7FA00001))
	n := len(xs)
	in, err := cudaload.NewBufferFrom(ctx, xs)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := cudaload.NewBuffer[uint32](ctx, dgOuts*n)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	var args cudaload.Args
	args.Reset().Ptr(in.Ptr()).Ptr(out.Ptr()).Uint32(uint32(n))
	cfg := cudaload.LaunchConfig{Grid: cudaload.Dim3{X: uint32((n + 255) / 256), Y: 1, Z: 1}, Block: cudaload.Dim3{X: 256, Y: 1, Z: 1}}
	if err := fn.Launch(cfg, &args); err != nil {
		t.Fatal(err)
	}
	if err := ctx.Synchronize(); err != nil {
		t.Fatal(err)
	}
	got := make([]uint32, dgOuts*n)
	if err := out.CopyToHost(got); err != nil {
		t.Fatal(err)
	}
	relu := func(x float32) float32 {
		// The epilogues' ReLU, as ReluAux stores it (Matmul with K = 1).
		switch {
		case x > 0:
			return x
		case x != x:
			return math.Float32frombits(ref.CanonicalNaN32)
		}
		return 0
	}
	type goFn struct {
		name string
		f    func(float32) float32
	}
	fns := []goFn{{"Exp32", ref.Exp32}, {"Tanh32", ref.Tanh32}, {"Sigmoid32", ref.Sigmoid32},
		{"Gelu32", ref.Gelu32}, {"GeluGrad32", ref.GeluGrad32}, {"relu", relu},
		{"Silu32", ref.Silu32}, {"SiluGrad32", ref.SiluGrad32}}
	for g := range ref.Gate(6) {
		fns = append(fns,
			goFn{"GateAct32(" + g.String() + ")", func(b float32) float32 { return ref.GateAct32(g, b) }},
			goFn{"GateGrad32(" + g.String() + ")", func(b float32) float32 { return ref.GateGrad32(g, b) }})
	}
	for g := range ref.Gate(6) {
		fns = append(fns,
			goFn{"GateActGrad32(" + g.String() + ").act", func(b float32) float32 { a, _ := ref.GateActGrad32(g, b); return a }},
			goFn{"GateActGrad32(" + g.String() + ").grad", func(b float32) float32 { _, d := ref.GateActGrad32(g, b); return d }})
	}
	if len(fns) != dgOuts {
		t.Fatalf("%d Go functions for %d GPU results", len(fns), dgOuts)
	}
	bad := 0
	for i, x := range xs {
		for j, f := range fns {
			if w := math.Float32bits(f.f(x)); got[dgOuts*i+j] != w {
				if bad++; bad <= 10 {
					t.Errorf("%s(%v = %#08x): GPU %#08x, Go %#08x", f.name, x, math.Float32bits(x), got[dgOuts*i+j], w)
				}
			}
		}
	}
	if bad > 0 {
		t.Fatalf("%d of %d results differ", bad, dgOuts*n)
	}
	t.Logf("%d inputs × %d functions: GPU (%s, %v) and Go agree bit for bit", n, len(fns), dev.Name(), arch)
}

// TestActivationHeaderIsTheContractText: the kernels' transcendentals
// (kernels/cuda/activation.cuh, below its pragma) are the CUDA block of
// docs/contract.md character for character, so the device epilogue runs
// the text TestTranscendentalsCUDATextMatchesGo checks against Go.
func TestActivationHeaderIsTheContractText(t *testing.T) {
	h, err := os.ReadFile("../../kernels/cuda/activation.cuh")
	if err != nil {
		t.Fatal(err)
	}
	const pragma = "#pragma once\n\n"
	i := strings.Index(string(h), pragma)
	if i < 0 {
		t.Fatal("kernels/cuda/activation.cuh has no #pragma once line")
	}
	if got, want := string(h)[i+len(pragma):], cudaTranscendentals(t); got != want {
		t.Fatal("kernels/cuda/activation.cuh differs from docs/contract.md's CUDA block (section Transcendentals): copy the block")
	}
}
