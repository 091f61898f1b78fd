package gemm_test

import (
	"errors"
	"fmt"
	"os"

	"github.com/detgemm/detgemm/cudaload"
	"github.com/detgemm/detgemm/gemm"
	"github.com/detgemm/detgemm/gemm/ref"
)

// A weight pruned to 2:4 along K, compressed, and multiplied on the sparse
// tensor cores; without a GPU, gemm/ref computes the same bits.
func ExampleEngine_Sparse24Forward() {
	const M, K, N = 2, 32, 3
	w := make([]uint16, K*N) // W[K,N], bf16
	for k := range K {
		for n := range N {
			w[k*N+n] = ref.BF16FromF32(float32((k*7+n*3)%9 - 4)) // magnitudes 0..4: the pruning keeps the two largest of every 4 rows
		}
	}
	x := make([]uint16, M*K)
	for i := range x {
		x[i] = ref.BF16FromF32(float32(i%5) - 2)
	}
	y := make([]float32, M*N)
	ctx, err := openGPU()
	switch {
	case errors.Is(err, errNoGPU) && os.Getenv("DETGEMM_REQUIRE_GPU") != "1":
		var s ref.Sparse24
		if err = ref.Prune24(ref.BF16, ref.Bits(w), K, N, N); err != nil {
			break
		}
		if s, err = ref.Compress24(ref.BF16, ref.Bits(w), K, N, N); err != nil {
			break
		}
		o := ref.Options{Tier: ref.TensorCore, In: ref.BF16, Out: ref.F32, Model: ref.Hopper}
		err = o.Sparse24Forward(ref.Sparse24Request{M: M, N: N, K: K, X: ref.Bits(x), Values: s.Values, Meta: s.Meta, Y: ref.Values(y)})
	case err == nil:
		err = sparse24Forward(ctx, M, K, N, w, x, y)
	}
	if err != nil {
		fmt.Println(err)
		return
	}
	for m := range M {
		fmt.Println(y[m*N : (m+1)*N])
	}
	// Output:
	// [-2 -11 23]
	// [-16 29 -11]
}

func sparse24Forward(ctx *cudaload.Context, M, K, N int, w, x []uint16, y []float32) error {
	eng, err := gemm.New(ctx)
	if err != nil {
		return err
	}
	defer eng.Close()
	wb, err := cudaload.NewBufferFrom(ctx, w)
	if err != nil {
		return err
	}
	defer wb.Close()
	xb, err := cudaload.NewBufferFrom(ctx, x)
	if err != nil {
		return err
	}
	defer xb.Close()
	vn, mn := gemm.Sparse24Bytes(gemm.BF16, K, N)
	vb, err := cudaload.NewBuffer[uint16](ctx, int(vn/2))
	if err != nil {
		return err
	}
	defer vb.Close()
	mb, err := cudaload.NewBuffer[uint32](ctx, int(mn/4))
	if err != nil {
		return err
	}
	defer mb.Close()
	yb, err := cudaload.NewBuffer[float32](ctx, len(y))
	if err != nil {
		return err
	}
	defer yb.Close()
	if err := eng.PruneCompress24(gemm.BF16, wb.Ptr(), K, N, 0, vb.Ptr(), mb.Ptr()); err != nil {
		return err
	}
	p, err := eng.PlanSparse24(gemm.Sparse24Desc{In: gemm.BF16, Out: gemm.F32, M: M, N: N, K: K})
	if err != nil {
		return err
	}
	if err := p.Run(gemm.Sparse24Args{X: xb.Ptr(), Values: vb.Ptr(), Meta: mb.Ptr(), Y: yb.Ptr()}); err != nil {
		return err
	}
	if err := eng.Synchronize(); err != nil {
		return err
	}
	return yb.CopyToHost(y)
}
