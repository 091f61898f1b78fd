package triad_test

import (
	"errors"
	"fmt"

	"github.com/detgemm/detgemm/gemm"
	"github.com/detgemm/detgemm/triad"
)

// ExampleLinear runs one forward and backward pass and an SGD step of a
// 3→2 layer on the CPU backend; triad.OpenGPU gives a backend with the same
// bits on a GPU.
func ExampleLinear() {
	be := triad.NewCPU(0)
	defer be.Close()
	l, err := triad.NewLinear(be, triad.LinearConfig{In: 3, Out: 2, Tier: gemm.TierF32, DType: triad.F32})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer l.Close()
	_ = l.SetParams([]float32{1, 0, 0, 1, 1, 1}, []float32{0.5, -0.5}) // W [3,2], b [2]

	x, _ := be.Alloc(triad.F32, 2, 3)
	y, _ := be.Alloc(triad.F32, 2, 2)
	dy, _ := be.Alloc(triad.F32, 2, 2)
	_ = be.Write(x, []float32{1, 2, 3, 4, 5, 6})
	if err := l.Forward(x, y); err != nil {
		fmt.Println(err)
		return
	}
	out, _ := be.Read(y)
	fmt.Println("y  =", out)

	_ = be.Write(dy, []float32{1, 0, 0, 1})
	if err := l.Backward(x, dy, nil); err != nil {
		fmt.Println(err)
		return
	}
	db, _ := be.Read(l.DB())
	fmt.Println("db =", db)
	_ = l.Step(triad.SGD{LR: 0.5, Momentum: 0.9})
	b, _ := be.Read(l.B())
	fmt.Println("b  =", b)
	// Output:
	// y  = [4.5 4.5 10.5 10.5]
	// db = [1 1]
	// b  = [0 -1]
}

// ExampleTensor_View takes rows 1 and 2 of a 3×2 tensor without copying,
// and walks the values Read returns row by row with the view's shape.
func ExampleTensor_View() {
	be := triad.NewCPU(0)
	defer be.Close()
	t, _ := be.Alloc(triad.F32, 3, 2)
	_ = be.Write(t, []float32{1, 2, 3, 4, 5, 6})
	v, err := t.View(1, 2)
	if err != nil {
		fmt.Println(err)
		return
	}
	values, _ := be.Read(v)
	for r := range v.Rows() {
		fmt.Println(values[r*v.Cols() : (r+1)*v.Cols()])
	}
	// Output:
	// [3 4]
	// [5 6]
}

// ExampleLinear_sparse24 makes a 2:4 sparse layer (16 → 1, tensor-core
// tier) on the CPU backend: SetParams prunes W by magnitude along In, two
// of every four rows staying; the forward runs on the sparse tensor cores
// (here their CPU model); and an SGD step keeps the pruned weights at
// zero although their gradient is not. Other tiers are refused.
func ExampleLinear_sparse24() {
	be := triad.NewCPU(0)
	defer be.Close()
	l, err := triad.NewLinear(be, triad.LinearConfig{In: 16, Out: 1, Tier: gemm.TierTensorCore, DType: triad.BF16, Sparse24: true})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer l.Close()
	_ = l.SetParams([]float32{1, -4, 3, 2, 0.5, 0, 0, 0.25, 5, 6, -7, 8, 0.125, 0.25, 0.375, 0.5}, []float32{0})
	w, _ := be.Read(l.W())
	fmt.Println("W    =", w)

	x, _ := be.Alloc(triad.BF16, 1, 16)
	y, _ := be.Alloc(triad.BF16, 1, 1)
	dy, _ := be.Alloc(triad.BF16, 1, 1)
	_ = be.Write(x, []float32{1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1})
	if err := l.Forward(x, y); err != nil {
		fmt.Println(err)
		return
	}
	out, _ := be.Read(y)
	fmt.Println("y    =", out)

	_ = be.Write(dy, []float32{1})
	_ = l.Backward(x, dy, nil) // dW = 1 everywhere, pruned rows too
	_ = l.Step(triad.SGD{LR: 0.5})
	w, _ = be.Read(l.W())
	fmt.Println("W'   =", w)

	_, err = triad.NewLinear(be, triad.LinearConfig{In: 16, Out: 1, Tier: gemm.TierTyped, DType: triad.BF16, Sparse24: true})
	fmt.Println("typed:", errors.Is(err, gemm.ErrTier))
	// Output:
	// W    = [0 -4 3 0 0.5 0 0 0.25 0 0 -7 8 0 0 0.375 0.5]
	// y    = [1.625]
	// W'   = [0 -4.5 2.5 0 0 0 0 -0.25 0 0 -7.5 7.5 0 0 -0.125 0]
	// typed: true
}
