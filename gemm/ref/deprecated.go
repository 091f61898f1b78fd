package ref

// The entry points before Options: one function per op, element type and
// tier. Each is now a call of Options.Forward, DX or DW with the same
// arguments, and gives the same bits (TestOptionsMatchLegacy* compare them
// with the old implementation).

// Forward computes Y[M,N] = X[M,K] @ W[K,N] (+ bias[N]) by the f32 plan on
// all CPUs.
//
// Deprecated: use Options{Tier: IEEE, In: F32}.Forward.
func Forward(dst, x, w, bias []float32, M, K, N int) error {
	return Options{Tier: IEEE, In: F32}.Forward(Values(dst), Values(x), Values(w), bias, M, K, N)
}

// DX computes dX[M,K] = dY[M,N] @ W[K,N]ᵀ by the f32 plan on all CPUs.
//
// Deprecated: use Options{Tier: IEEE, In: F32}.DX.
func DX(dst, dy, w []float32, M, N, K int) error {
	return Options{Tier: IEEE, In: F32}.DX(Values(dst), Values(dy), Values(w), M, N, K)
}

// DW accumulates dW[K,N] += X[M,K]ᵀ @ dY[M,N] into dw by the f32 plan on
// all CPUs.
//
// Deprecated: use Options{Tier: IEEE, In: F32}.DW.
func DW(dw, x, dy []float32, M, K, N int) error {
	return Options{Tier: IEEE, In: F32}.DW(dw, Values(x), Values(dy), M, K, N)
}

// with is o with the tier, types and model of an old entry point.
func (o Options) with(t Tier, in, out DType, m TCModel) Options {
	o.Tier, o.In, o.Out, o.Model = t, in, out, m
	return o
}

// ForwardTyped computes Y = X @ W (+ bias) for 16-bit x, w and dst of type
// d by the typed tier.
//
// Deprecated: use Options{Tier: IEEE, In: d}.Forward with Bits operands.
func (o Options) ForwardTyped(d DType, dst, x, w []uint16, bias []float32, M, K, N int) error {
	return o.with(IEEE, d, d, TCModel{}).Forward(Bits(dst), Bits(x), Bits(w), bias, M, K, N)
}

// DXTyped computes dX = dY @ Wᵀ for 16-bit dy, w and dst of type d by the
// typed tier.
//
// Deprecated: use Options{Tier: IEEE, In: d}.DX with Bits operands.
func (o Options) DXTyped(d DType, dst, dy, w []uint16, M, N, K int) error {
	return o.with(IEEE, d, d, TCModel{}).DX(Bits(dst), Bits(dy), Bits(w), M, N, K)
}

// DWTyped accumulates dW += Xᵀ @ dY for 16-bit x and dy of type d into the
// float32 master dw by the typed tier.
//
// Deprecated: use Options{Tier: IEEE, In: d}.DW with Bits operands.
func (o Options) DWTyped(d DType, dw []float32, x, dy []uint16, M, K, N int) error {
	return o.with(IEEE, d, d, TCModel{}).DW(dw, Bits(x), Bits(dy), M, K, N)
}

// TCForward computes Y = X @ W (+ bias) by the tensor-core plan of model m,
// inputs of type d given as float32 values, storing float32.
//
// Deprecated: use Options{Tier: TensorCore, In: d, Out: F32, Model: m}.Forward.
func (o Options) TCForward(m TCModel, d DType, dst, x, w, bias []float32, M, K, N int) error {
	return o.with(TensorCore, d, F32, m).Forward(Values(dst), Values(x), Values(w), bias, M, K, N)
}

// TCDX computes dX = dY @ Wᵀ by the tensor-core plan of model m, inputs of
// type d given as float32 values, storing float32.
//
// Deprecated: use Options{Tier: TensorCore, In: d, Out: F32, Model: m}.DX.
func (o Options) TCDX(m TCModel, d DType, dst, dy, w []float32, M, N, K int) error {
	return o.with(TensorCore, d, F32, m).DX(Values(dst), Values(dy), Values(w), M, N, K)
}

// TCDW accumulates dW += Xᵀ @ dY into dw by the tensor-core plan of model
// m, inputs of type d given as float32 values.
//
// Deprecated: use Options{Tier: TensorCore, In: d, Model: m}.DW.
func (o Options) TCDW(m TCModel, d DType, dw, x, dy []float32, M, K, N int) error {
	return o.with(TensorCore, d, F32, m).DW(dw, Values(x), Values(dy), M, K, N)
}

// TCForwardTyped computes Y = X @ W (+ bias) by the tensor-core plan of
// model m for x, w and dst of type d.
//
// Deprecated: use Options{Tier: TensorCore, In: d, Model: m}.Forward with Bits operands.
func (o Options) TCForwardTyped(m TCModel, d DType, dst, x, w []uint16, bias []float32, M, K, N int) error {
	return o.with(TensorCore, d, d, m).Forward(Bits(dst), Bits(x), Bits(w), bias, M, K, N)
}

// TCDXTyped computes dX = dY @ Wᵀ by the tensor-core plan of model m for
// dy, w and dst of type d.
//
// Deprecated: use Options{Tier: TensorCore, In: d, Model: m}.DX with Bits operands.
func (o Options) TCDXTyped(m TCModel, d DType, dst, dy, w []uint16, M, N, K int) error {
	return o.with(TensorCore, d, d, m).DX(Bits(dst), Bits(dy), Bits(w), M, N, K)
}

// TCDWTyped accumulates dW += Xᵀ @ dY by the tensor-core plan of model m
// for x and dy of type d into the float32 master dw.
//
// Deprecated: use Options{Tier: TensorCore, In: d, Model: m}.DW with Bits operands.
func (o Options) TCDWTyped(m TCModel, d DType, dw []float32, x, dy []uint16, M, K, N int) error {
	return o.with(TensorCore, d, d, m).DW(dw, Bits(x), Bits(dy), M, K, N)
}

// ForwardTyped is Options{}.ForwardTyped on all CPUs.
//
// Deprecated: use Options{Tier: IEEE, In: d}.Forward with Bits operands.
func ForwardTyped(d DType, dst, x, w []uint16, bias []float32, M, K, N int) error {
	return Options{}.ForwardTyped(d, dst, x, w, bias, M, K, N)
}

// DXTyped is Options{}.DXTyped on all CPUs.
//
// Deprecated: use Options{Tier: IEEE, In: d}.DX with Bits operands.
func DXTyped(d DType, dst, dy, w []uint16, M, N, K int) error {
	return Options{}.DXTyped(d, dst, dy, w, M, N, K)
}

// DWTyped is Options{}.DWTyped on all CPUs.
//
// Deprecated: use Options{Tier: IEEE, In: d}.DW with Bits operands.
func DWTyped(d DType, dw []float32, x, dy []uint16, M, K, N int) error {
	return Options{}.DWTyped(d, dw, x, dy, M, K, N)
}

// TCForward is Options{}.TCForward on all CPUs.
//
// Deprecated: use Options{Tier: TensorCore, In: d, Out: F32, Model: m}.Forward.
func TCForward(m TCModel, d DType, dst, x, w, bias []float32, M, K, N int) error {
	return Options{}.TCForward(m, d, dst, x, w, bias, M, K, N)
}

// TCDX is Options{}.TCDX on all CPUs.
//
// Deprecated: use Options{Tier: TensorCore, In: d, Out: F32, Model: m}.DX.
func TCDX(m TCModel, d DType, dst, dy, w []float32, M, N, K int) error {
	return Options{}.TCDX(m, d, dst, dy, w, M, N, K)
}

// TCDW is Options{}.TCDW on all CPUs.
//
// Deprecated: use Options{Tier: TensorCore, In: d, Model: m}.DW.
func TCDW(m TCModel, d DType, dw, x, dy []float32, M, K, N int) error {
	return Options{}.TCDW(m, d, dw, x, dy, M, K, N)
}

// TCForwardTyped is Options{}.TCForwardTyped on all CPUs.
//
// Deprecated: use Options{Tier: TensorCore, In: d, Model: m}.Forward with Bits operands.
func TCForwardTyped(m TCModel, d DType, dst, x, w []uint16, bias []float32, M, K, N int) error {
	return Options{}.TCForwardTyped(m, d, dst, x, w, bias, M, K, N)
}

// TCDXTyped is Options{}.TCDXTyped on all CPUs.
//
// Deprecated: use Options{Tier: TensorCore, In: d, Model: m}.DX with Bits operands.
func TCDXTyped(m TCModel, d DType, dst, dy, w []uint16, M, N, K int) error {
	return Options{}.TCDXTyped(m, d, dst, dy, w, M, N, K)
}

// TCDWTyped is Options{}.TCDWTyped on all CPUs.
//
// Deprecated: use Options{Tier: TensorCore, In: d, Model: m}.DW with Bits operands.
func TCDWTyped(m TCModel, d DType, dw []float32, x, dy []uint16, M, K, N int) error {
	return Options{}.TCDWTyped(m, d, dw, x, dy, M, K, N)
}
