package ref_test

import (
	"fmt"
	"math"

	"github.com/detgemm/detgemm/gemm/ref"
)

func ExampleOptions_Forward() {
	// Y[2,2] = X[2,3] @ W[3,2] + bias by the f32 plan.
	x := []float32{1, 2, 3, 4, 5, 6}
	w := []float32{1, 0, 0, 1, 1, 1}
	bias := []float32{0.5, -0.5}
	y := make([]float32, 4)
	o := ref.Options{Tier: ref.IEEE, In: ref.F32}
	if err := o.Forward(ref.Values(y), ref.Values(x), ref.Values(w), bias, 2, 3, 2); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(y)
	// Output: [4.5 4.5 10.5 10.5]
}

func ExampleOptions_Forward_window() {
	// Row 2 of Y[4,3] = X[4,2] @ W[2,3], columns 1 and 2 only: dst holds the
	// window, and its bits are those of the same elements of the whole Y.
	x := []float32{1, 0, 0, 1, 2, 3, 5, 7}
	w := []float32{1, 2, 3, 10, 20, 30}
	o := ref.Options{Tier: ref.IEEE, In: ref.F32, Rows: ref.Span{Lo: 2, Hi: 3}, Cols: ref.Span{Lo: 1, Hi: 3}}
	y := make([]float32, 2)
	if err := o.Forward(ref.Values(y), ref.Values(x), ref.Values(w), nil, 4, 2, 3); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(y)
	// Output: [64 96]
}

func ExampleOptions_Forward_typed() {
	// bf16 inputs as bit patterns, a float32 bias, a bf16 output rounded once
	// at the store.
	x := []uint16{ref.BF16FromF32(1.5), ref.BF16FromF32(2)}
	w := []uint16{ref.BF16FromF32(3), ref.BF16FromF32(0.25)}
	y := make([]uint16, 1)
	o := ref.Options{Tier: ref.IEEE, In: ref.BF16}
	if err := o.Forward(ref.Bits(y), ref.Bits(x), ref.Bits(w), []float32{0.001}, 1, 2, 1); err != nil {
		fmt.Println(err)
		return
	}
	// 1.5*3 + 2*0.25 + 0.001 = 5.001 in float32, 5 in bf16.
	fmt.Printf("%#04x = %v\n", y[0], ref.F32FromBF16(y[0]))
	// Output: 0x40a0 = 5
}

func ExampleOptions_DX() {
	// dX[1,2] = dY[1,3] @ W[2,3]ᵀ: W is read in place, row k giving column k.
	dy := []float32{1, 2, 3}
	w := []float32{1, 1, 1, 1, 0, -1}
	dx := make([]float32, 2)
	o := ref.Options{Tier: ref.IEEE, In: ref.F32}
	if err := o.DX(ref.Values(dx), ref.Values(dy), ref.Values(w), 1, 3, 2); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(dx)
	// Output: [6 -2]
}

func ExampleOptions_DW() {
	// dW[2,1] += X[2,2]ᵀ @ dY[2,1], onto a master that holds 0.5 already.
	x := []float32{1, 2, 3, 4}
	dy := []float32{1, -1}
	dw := []float32{0.5, 0.5}
	o := ref.Options{Tier: ref.IEEE, In: ref.F32}
	if err := o.DW(dw, ref.Values(x), ref.Values(dy), 2, 2, 1); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(dw)
	// Output: [-1.5 -1.5]
}

func ExampleFMA32() {
	// (1+2^-12)^2 - 1 = 2^-11 + 2^-24 exactly: one rounding keeps the last
	// bit that a separate multiply would have rounded away. (The float32
	// conversion stops Go from fusing a*a-1 into an FMA itself.)
	a := float32(1 + 0x1p-12)
	fmt.Println(ref.FMA32(a, a, -1) == 0x1p-11+0x1p-24, float32(a*a)-1 == 0x1p-11)
	// Output: true true
}

func ExampleDigest() {
	// SHA-256 of the bytes 00 00 00 80: the float32 -0, little-endian.
	fmt.Println(ref.Digest([]float32{float32(math.Copysign(0, -1))})[:16])
	// Output: 6d58692645c9d1cf
}

// The tensor-core plan's cut of a reduction: one slab for most shapes; a
// long reduction into a narrow output (dX of an 11008 → 4096 projection) in
// a few slabs; dW by its batch and master size.
func ExampleTCSlabs() {
	for _, s := range [][2]int{{4096, 4096}, {11008, 4096}, {8192, 8192}} {
		n, l := ref.TCSlabs(s[0], s[1])
		fmt.Printf("reduction %d into %d columns: %d slab(s) of %d\n", s[0], s[1], n, l)
	}
	n, l := ref.TCDWSlabs(2048, 768, 512)
	fmt.Printf("dW of 2048 rows into 768×512: %d slabs of %d\n", n, l)
	// Output:
	// reduction 4096 into 4096 columns: 1 slab(s) of 4096
	// reduction 11008 into 4096 columns: 3 slab(s) of 3840
	// reduction 8192 into 8192 columns: 1 slab(s) of 8192
	// dW of 2048 rows into 768×512: 4 slabs of 512
}

func ExampleOptions_Matmul() {
	// D[2,3] = relu(2·A·Bᵀ + 1·C + bias) with B stored 3×2 (NT), A's rows
	// padded to a leading dimension of 4, the ReLU's mask kept for the
	// backward pass (one byte per element).
	a := []float32{1, 2, -9, -9, 3, -4, -9, -9} // 2×2, lda 4 (the -9s are padding)
	b := []float32{1, 0, 0, 1, 1, 1}            // 3×2: op(B) = Bᵀ is 2×3
	c := []float32{0.5, 0.5, 0.5, 0, 0, 0}
	d := make([]float32, 6)
	mask := make([]uint8, 6)
	o := ref.Options{Tier: ref.IEEE, In: ref.F32}
	err := o.Matmul(ref.MatmulRequest{
		M: 2, N: 3, K: 2, TransB: true,
		A: ref.Values(a), LDA: 4, B: ref.Values(b),
		Alpha: 2, Beta: 1, C: ref.Values(c), D: ref.Values(d),
		Bias: []float32{0, -1, 0}, Epilogue: ref.ReluAuxBias, ReluMask: mask,
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(d, mask)
	// Output: [2.5 3.5 6.5 6 0 0] [1 1 1 1 0 0]
}

func ExampleGelu32() {
	// GELU's tanh approximation as the epilogues compute it, bit for bit
	// the same on the GPU.
	for _, x := range []float32{-3, -1, 0, 1, 3} {
		fmt.Printf("%v %.7g\n", x, ref.Gelu32(x))
	}
	// Output:
	// -3 -0.003637392
	// -1 -0.158808
	// 0 0
	// 1 0.841192
	// 3 2.996363
}

func ExampleGatedForward() {
	// SwiGLU: y = a·silu(b), silu(b) = b·σ(b), each product rounded once,
	// here to bf16 (y holds the bf16 values as exact float32s).
	a := []float32{1, 2, -3, 4}
	b := []float32{0, 1, 2, float32(math.Inf(-1))}
	y := make([]float32, 4)
	if err := ref.GatedForward(ref.SwiGLU, ref.BF16, y, a, b); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(y)
	// A zero gate is not a gate: a typed error, nothing written.
	fmt.Println(ref.GatedForward(0, ref.F32, y, a, b))
	// Output:
	// [0 1.4609375 -5.28125 -0]
	// ref.GatedForward: g: Gate(0) is not GLU, ReGLU, SwiGLU or GeGLU
}
