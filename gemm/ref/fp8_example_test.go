package ref_test

import (
	"fmt"

	"github.com/detgemm/detgemm/gemm/ref"
)

func ExampleOptions_FP8Matmul() {
	// D[2,2] = A[2,3] · B[2,3]ᵀ + bias with A and B quantised to E4M3, one
	// scale a row: each row's amax is 7, so its scale is 7/448 = 1/64 and
	// these values quantise exactly (x = q·s).
	a := []float32{1, 2, 7, -3, 0.5, 7}
	b := []float32{7, 1, 0, 0.25, 7, -2} // B is stored N × K: D = A·Bᵀ
	qa, qb := make([]uint8, 6), make([]uint8, 6)
	sa, sb := make([]float32, 2), make([]float32, 2)
	for _, q := range []ref.FP8QuantizeRequest{
		{Out: ref.E4M3, Rows: 2, Cols: 3, X: ref.Values(a), In: ref.F32, Groups: ref.GroupRow, Q: qa, Scales: sa},
		{Out: ref.E4M3, Rows: 2, Cols: 3, X: ref.Values(b), In: ref.F32, Groups: ref.GroupRow, Q: qb, Scales: sb},
	} {
		if err := ref.FP8Quantize(q); err != nil {
			fmt.Println(err)
			return
		}
	}
	d := make([]float32, 4)
	err := ref.Options{}.FP8Matmul(ref.FP8MatmulRequest{
		A: ref.E4M3, B: ref.E4M3, Out: ref.F32, M: 2, N: 2, K: 3,
		AData: qa, BData: qb, Scaling: ref.ScaleRow, ScaleA: sa, ScaleB: sb,
		Accum: ref.AccumPromoted, Epilogue: ref.Bias, Bias: []float32{1, 0},
		D: ref.Values(d),
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("A codes % x, scales %v\n", qa, sa)
	fmt.Println(d)
	// Output:
	// A codes 68 70 7e f4 60 7e, scales [0.015625 0.015625]
	// [10 0.25 -19.5 -11.25]
}
