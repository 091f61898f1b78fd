package gemm_test

import (
	"errors"
	"fmt"
	"os"

	"github.com/detgemm/detgemm/cudaload"
	"github.com/detgemm/detgemm/gemm"
	"github.com/detgemm/detgemm/gemm/ref"
)

// Y = X@W + bias in the f32 tier: buffers sized by element count, copied
// in, the product, copied out.
//
// The printed values are the device's bits. The example also runs, and
// passes, where there is no GPU: then the CPU reference (gemm/ref)
// computes Y instead. That is no pretence: the f32 tier's plan fixes every
// operation of every output element, and the reference implements it bit
// for bit, so both print the same text (the GPU tests compare the two bit
// for bit). On a GPU machine set DETGEMM_REQUIRE_GPU=1 to make a
// missing GPU fail the example rather than fall back.
func ExampleEngine_Forward() {
	const M, K, N = 2, 3, 4
	x := []float32{0.1, 0.2, 0.3, 0.4, 0.5, 0.6} // X[M,K], row-major
	// W[K,N]
	w := []float32{
		0.5, -1, 2, 0.7,
		0.25, 0.3, -2, 1,
		1, 0.5, 0.1, -1,
	}
	bias := []float32{0.125, 0, -0.5, 1} // bias[N]
	y := make([]float32, M*N)            // Y[M,N]

	ctx, err := openGPU()
	switch {
	case errors.Is(err, errNoGPU) && os.Getenv("DETGEMM_REQUIRE_GPU") != "1":
		// No GPU here: the CPU reference runs the same plan, bit for bit.
		err = ref.Options{Tier: ref.IEEE, In: ref.F32}.Forward(ref.Values(y), ref.Values(x), ref.Values(w), bias, M, K, N)
	case err == nil:
		err = forward(ctx, y, x, w, bias, M, K, N)
	}
	if err != nil {
		fmt.Println(err)
		return
	}
	for r := range M {
		fmt.Println(y[r*N : (r+1)*N])
	}
	// Output:
	// [0.525 0.11000001 -0.67 0.97]
	// [1.05 0.050000012 -0.64 1.18]
}

// forward runs Y = X@W + bias on the GPU of ctx; the README's quickstart.
func forward(ctx *cudaload.Context, y, x, w, bias []float32, M, K, N int) error {
	eng, err := gemm.New(ctx) // compiles (or loads cached) kernels for this GPU
	if err != nil {
		return err
	}
	defer eng.Close()

	X, err := cudaload.NewBufferFrom(ctx, x) // allocated by element count, copied in
	if err != nil {
		return err
	}
	defer X.Close()
	W, err := cudaload.NewBufferFrom(ctx, w)
	if err != nil {
		return err
	}
	defer W.Close()
	B, err := cudaload.NewBufferFrom(ctx, bias)
	if err != nil {
		return err
	}
	defer B.Close()
	Y, err := cudaload.NewBuffer[float32](ctx, M*N)
	if err != nil {
		return err
	}
	defer Y.Close()

	err = eng.Forward(gemm.ForwardArgs{
		Tier: gemm.TierF32, M: M, K: K, N: N,
		X: X.Ptr(), W: W.Ptr(), Bias: B.Ptr(), Y: Y.Ptr(), // row-major device buffers
		In: gemm.F32, Out: gemm.F32,
	})
	if err != nil {
		return err
	}
	if err := eng.Synchronize(); err != nil { // Forward only enqueues
		return err
	}
	return Y.CopyToHost(y)
}

// errNoGPU marks a machine without a CUDA driver or device.
var errNoGPU = errors.New("no GPU")

// openGPU returns the primary context of device 0; errNoGPU (wrapping the
// loader's reason) where the machine has no driver or no device.
func openGPU() (*cudaload.Context, error) {
	drv, err := cudaload.Open()
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errNoGPU, err)
	}
	n, err := drv.DeviceCount()
	if err != nil {
		return nil, err
	}
	if n == 0 {
		return nil, fmt.Errorf("%w: %w", errNoGPU, cudaload.ErrNoDevice)
	}
	dev, err := drv.Device(0)
	if err != nil {
		return nil, err
	}
	return dev.PrimaryContext()
}

// Presize the workspace of a model's shapes once, before timing or before
// capturing a CUDA graph: afterwards calls of those shapes allocate nothing.
// (Compiled, not run: it needs a GPU.)
func ExampleEngine_Presize() {
	drv, err := cudaload.Open()
	if err != nil {
		fmt.Println(err)
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
	eng, err := gemm.New(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer eng.Close()

	// Decoding one token (M = 1) and the backward of a 128-row micro-batch.
	calls := []gemm.Call{
		gemm.ForwardArgs{Tier: gemm.TierTyped, M: 1, K: 4096, N: 11008, In: gemm.BF16, Out: gemm.BF16},
		gemm.DXArgs{Tier: gemm.TierTyped, M: 128, N: 11008, K: 4096, In: gemm.BF16, Out: gemm.BF16},
	}
	for _, c := range calls {
		s, _ := eng.Strategy(c)
		n, _ := eng.WorkspaceBytes(c)
		fmt.Printf("%v: %d bytes of workspace\n", s, n)
	}
	if err := eng.Presize(calls...); err != nil {
		fmt.Println(err)
	}
}

// D = gelu(A·Bᵀ + bias) in the f32 tier, B stored N×K (TransB), through a
// plan: Plan validates and chooses the kernels once, Run launches. As in
// ExampleEngine_Forward, a machine without a GPU prints the CPU
// reference's bits, which are the device's by contract.
func ExampleEngine_Matmul() {
	const M, N, K = 2, 3, 4
	a := []float32{0.5, -1, 0.25, 2, 1, 0.5, -0.75, 0.125} // A[M,K]
	b := []float32{                                        // B[N,K]: op(B) = Bᵀ
		1, 0.5, -0.5, 0.25,
		-1, 2, 0.125, 1,
		0.75, -0.25, 1, -1,
	}
	bias := []float32{0.1, -0.2, 0.3}
	d := make([]float32, M*N)

	desc := gemm.MatmulDesc{Tier: gemm.TierF32, In: gemm.F32, Out: gemm.F32, M: M, N: N, K: K,
		TransB: true, Alpha: 1, Epilogue: gemm.GeluBias}
	ctx, err := openGPU()
	switch {
	case errors.Is(err, errNoGPU) && os.Getenv("DETGEMM_REQUIRE_GPU") != "1":
		err = ref.Options{Tier: ref.IEEE, In: ref.F32}.Matmul(ref.MatmulRequest{M: M, N: N, K: K, TransB: true,
			A: ref.Values(a), B: ref.Values(b), Alpha: 1, D: ref.Values(d), Bias: bias, Epilogue: ref.GeluBias})
	case err == nil:
		err = matmul(ctx, desc, d, a, b, bias)
	}
	if err != nil {
		fmt.Println(err)
		return
	}
	for r := range M {
		fmt.Println(d[r*N : (r+1)*N])
	}
	// Output:
	// [0.32422382 -0.16845721 -0.16895778]
	// [1.6867411 -0.07306845 0.025996944]
}

// matmul runs desc on the GPU of ctx with host slices a, b, bias into d.
func matmul(ctx *cudaload.Context, desc gemm.MatmulDesc, d, a, b, bias []float32) error {
	eng, err := gemm.New(ctx)
	if err != nil {
		return err
	}
	defer eng.Close()
	plan, err := eng.Plan(desc) // validated; kernels chosen; workspace allocated
	if err != nil {
		return err
	}
	var bufs []*cudaload.Buffer[float32]
	defer func() {
		for _, x := range bufs {
			x.Close()
		}
	}()
	up := func(v []float32) (cudaload.DevicePtr, error) {
		x, err := cudaload.NewBufferFrom(ctx, v)
		if err != nil {
			return 0, err
		}
		bufs = append(bufs, x)
		return x.Ptr(), nil
	}
	var args gemm.MatmulArgs
	for _, x := range []struct {
		p *cudaload.DevicePtr
		v []float32
	}{{&args.A, a}, {&args.B, b}, {&args.Bias, bias}, {&args.D, d}} {
		if *x.p, err = up(x.v); err != nil {
			return err
		}
	}
	if err := plan.Run(args); err != nil { // may be run again, or captured in a CUDA graph
		return err
	}
	if err := eng.Synchronize(); err != nil {
		return err
	}
	return bufs[len(bufs)-1].CopyToHost(d)
}

// ExampleEngine_GatedForward runs SwiGLU, y = a·silu(b), over a tensor
// whose rows are [a | b]: on the GPU where there is one, else gemm/ref's
// GatedForward on the same halves (the same bits).
func ExampleEngine_GatedForward() {
	const rows, n = 2, 3
	h := []float32{ // rows × 2n: a | b
		1, -2, 0.5, 0.25, 1, -3,
		-1.5, 4, 2, -0.5, 2.5, 8,
	}
	y := make([]float32, rows*n)
	ctx, err := openGPU()
	switch {
	case errors.Is(err, errNoGPU) && os.Getenv("DETGEMM_REQUIRE_GPU") != "1":
		for r := range rows {
			if err = ref.GatedForward(ref.SwiGLU, ref.F32, y[r*n:(r+1)*n], h[r*2*n:r*2*n+n], h[r*2*n+n:(r+1)*2*n]); err != nil {
				break
			}
		}
	case err == nil:
		err = gatedForward(ctx, gemm.GatedDesc{Gate: gemm.SwiGLU, Type: gemm.F32, Layout: gemm.GatedHalves, Rows: rows, N: n}, y, h)
	}
	if err != nil {
		fmt.Println(err)
		return
	}
	for r := range rows {
		fmt.Println(y[r*n : (r+1)*n])
	}
	// Output:
	// [0.14054413 -1.4621172 -0.071138814]
	// [0.2831555 9.241418 15.994635]
}

func gatedForward(ctx *cudaload.Context, desc gemm.GatedDesc, y, h []float32) error {
	eng, err := gemm.New(ctx)
	if err != nil {
		return err
	}
	defer eng.Close()
	hb, err := cudaload.NewBufferFrom(ctx, h)
	if err != nil {
		return err
	}
	defer hb.Close()
	yb, err := cudaload.NewBufferFrom(ctx, y)
	if err != nil {
		return err
	}
	defer yb.Close()
	if err := eng.GatedForward(desc, gemm.GatedArgs{X: hb.Ptr(), Y: yb.Ptr()}); err != nil {
		return err
	}
	if err := eng.Synchronize(); err != nil {
		return err
	}
	return yb.CopyToHost(y)
}
