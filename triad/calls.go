package triad

import "github.com/detgemm/detgemm/gemm"

// The engine calls of the triad's products, shape and types only. The GPU
// backend fills in the pointers of exactly these values before it launches,
// and MLP.stepCalls lists them for gemm.Engine.Presize, so the calls that
// are presized before a capture are the calls the captured step makes.

// forwardCall is y[M,N] = x[M,K]·w[K,N] (+ b).
func forwardCall(tier gemm.Tier, rows, in, out int, d DType) gemm.ForwardArgs {
	return gemm.ForwardArgs{Tier: tier, M: rows, K: in, N: out, In: d, Out: d}
}

// dwCall is dw[K,N] += x[M,K]ᵀ·dy[M,N].
func dwCall(tier gemm.Tier, rows, in, out int, d DType) gemm.DWArgs {
	return gemm.DWArgs{Tier: tier, M: rows, K: in, N: out, In: d}
}

// dxCall is dx[M,K] = dy[M,N]·w[K,N]ᵀ.
func dxCall(tier gemm.Tier, rows, in, out int, d DType) gemm.DXArgs {
	return gemm.DXArgs{Tier: tier, M: rows, N: out, K: in, In: d, Out: d}
}

// forwardCallOf, dwCallOf and dxCallOf are the calls of the backend
// operations forward(x, w, ...), dw(x, dy, ...) and dx(dy, w, ...).
func forwardCallOf(tier gemm.Tier, x, w *Tensor) gemm.ForwardArgs {
	return forwardCall(tier, x.rows, x.cols, w.cols, x.dtype)
}

func dwCallOf(tier gemm.Tier, x, dy *Tensor) gemm.DWArgs {
	return dwCall(tier, x.rows, x.cols, dy.cols, x.dtype)
}

func dxCallOf(tier gemm.Tier, dy, w *Tensor) gemm.DXArgs {
	return dxCall(tier, dy.rows, w.rows, dy.cols, dy.dtype)
}

// stepCalls lists every engine call one Step on a batch of rows makes, in
// the order Step makes them: each layer's Forward, then, from the last
// layer back, its dW and (but for the first layer) its dX. The triad's own
// kernels need no scratch memory, so these calls are all the workspace a
// step uses.
func (m *MLP) stepCalls(rows int) []gemm.Call {
	var calls []gemm.Call
	tier, d := m.cfg.Tier, m.cfg.DType
	for _, l := range m.layers {
		calls = append(calls, forwardCall(tier, rows, l.cfg.In, l.cfg.Out, d))
	}
	for i := len(m.layers) - 1; i >= 0; i-- {
		in, out := m.layers[i].cfg.In, m.layers[i].cfg.Out
		calls = append(calls, dwCall(tier, rows, in, out, d))
		if i > 0 {
			calls = append(calls, dxCall(tier, rows, in, out, d))
		}
	}
	return calls
}
