package ref

// The typed tier: 16-bit inputs are widened exactly to float32, the f32 plan
// runs unchanged, and the only rounding to the 16-bit type is at the store.
// So a typed result is bit-identical to Upcast, then the f32 operation, then
// Round, by construction.

// ForwardTyped computes Y[M,N] = X[M,K] @ W[K,N] (+ bias[N]) for 16-bit x, w
// and dst of type d (BF16 or F16), with Options' parallelism. The bias stays
// float32 and is added in float32 before the one rounding to d.
func (o Options) ForwardTyped(d DType, dst, x, w []uint16, bias []float32, M, K, N int) error {
	const op = "ForwardTyped"
	if err := checkHalf(op, d); err != nil {
		return err
	}
	if err := checkForward(op, len(dst), len(x), len(w), len(bias), M, K, N); err != nil {
		return err
	}
	xf, wf, y := make([]float32, M*K), make([]float32, K*N), make([]float32, M*N)
	_ = Upcast(d, xf, x[:M*K])
	_ = Upcast(d, wf, w[:K*N])
	if err := o.Forward(y, xf, wf, bias, M, K, N); err != nil {
		return err
	}
	return Round(d, dst, y)
}

// DXTyped computes dX[M,K] = dY[M,N] @ W[K,N]ᵀ for 16-bit dy, w and dst of
// type d (BF16 or F16), with Options' parallelism.
func (o Options) DXTyped(d DType, dst, dy, w []uint16, M, N, K int) error {
	const op = "DXTyped"
	if err := checkHalf(op, d); err != nil {
		return err
	}
	if err := checkDX(op, len(dst), len(dy), len(w), M, N, K); err != nil {
		return err
	}
	dyf, wf, dx := make([]float32, M*N), make([]float32, K*N), make([]float32, M*K)
	_ = Upcast(d, dyf, dy[:M*N])
	_ = Upcast(d, wf, w[:K*N])
	if err := o.DX(dx, dyf, wf, M, N, K); err != nil {
		return err
	}
	return Round(d, dst, dx)
}

// DWTyped accumulates dW[K,N] += X[M,K]ᵀ @ dY[M,N] for 16-bit x and dy of
// type d (BF16 or F16) into the float32 master buffer dw, with Options'
// parallelism. dW is always float32: there is no narrow store.
func (o Options) DWTyped(d DType, dw []float32, x, dy []uint16, M, K, N int) error {
	const op = "DWTyped"
	if err := checkHalf(op, d); err != nil {
		return err
	}
	if err := checkDW(op, len(dw), len(x), len(dy), M, K, N); err != nil {
		return err
	}
	xf, dyf := make([]float32, M*K), make([]float32, M*N)
	_ = Upcast(d, xf, x[:M*K])
	_ = Upcast(d, dyf, dy[:M*N])
	return o.DW(dw, xf, dyf, M, K, N)
}

// ForwardTyped is Options{}.ForwardTyped: the typed forward on all CPUs.
func ForwardTyped(d DType, dst, x, w []uint16, bias []float32, M, K, N int) error {
	return Options{}.ForwardTyped(d, dst, x, w, bias, M, K, N)
}

// DXTyped is Options{}.DXTyped: the typed dX on all CPUs.
func DXTyped(d DType, dst, dy, w []uint16, M, N, K int) error {
	return Options{}.DXTyped(d, dst, dy, w, M, N, K)
}

// DWTyped is Options{}.DWTyped: the typed dW on all CPUs.
func DWTyped(d DType, dw []float32, x, dy []uint16, M, K, N int) error {
	return Options{}.DWTyped(d, dw, x, dy, M, K, N)
}
