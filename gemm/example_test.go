package gemm_test

import (
	"fmt"

	"github.com/detgemm/detgemm/cudaload"
	"github.com/detgemm/detgemm/gemm"
)

// ExampleEngine_Forward runs Y = X@W + bias in the f32 tier on device 0.
// Without a GPU it prints why and stops.
func ExampleEngine_Forward() {
	const M, K, N = 2, 3, 4
	drv, err := cudaload.Open()
	if err != nil {
		fmt.Println("no CUDA driver:", err != nil)
		return
	}
	dev, err := drv.Device(0)
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx, err := dev.PrimaryContext()
	if err != nil {
		fmt.Println(err)
		return
	}
	defer ctx.Close()
	eng, err := gemm.New(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer eng.Close()

	x := []float32{1, 2, 3, 4, 5, 6}
	w := []float32{1, 0, 0, 1, 0, 1, 0, 1, 0, 0, 1, 1}
	bias := []float32{0.5, 0.5, 0.5, 0.5}
	alloc := func(n int) cudaload.DevicePtr {
		p, err := ctx.MemAlloc(uint64(4 * n))
		if err != nil {
			panic(err)
		}
		return p
	}
	dx, dw, db, dy := alloc(M*K), alloc(K*N), alloc(N), alloc(M*N)
	defer func() {
		for _, p := range []cudaload.DevicePtr{dx, dw, db, dy} {
			_ = ctx.MemFree(p)
		}
	}()
	_ = cudaload.CopyToDevice(ctx, dx, x)
	_ = cudaload.CopyToDevice(ctx, dw, w)
	_ = cudaload.CopyToDevice(ctx, db, bias)

	err = eng.Forward(gemm.ForwardArgs{Tier: gemm.TierF32, M: M, K: K, N: N,
		X: dx, W: dw, Bias: db, Y: dy, In: gemm.F32, Out: gemm.F32})
	if err == nil {
		err = eng.Synchronize()
	}
	if err != nil {
		fmt.Println(err)
		return
	}
	y := make([]float32, M*N)
	_ = cudaload.CopyFromDevice(ctx, y, dy)
	for i := 0; i < M; i++ {
		fmt.Println(y[i*N : (i+1)*N])
	}
}
