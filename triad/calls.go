package triad

import "github.com/detgemm/detgemm/gemm"

// The engine calls of the triad's products, shape and types only. The GPU
// backend fills in the pointers of exactly these values before it launches
// (the CPU backend runs the same requests on gemm/ref), and MLP.stepWork
// lists them for a capture, which presizes the calls (gemm.Engine.Presize)
// and plans the fused Matmuls (gemm.Engine.Plan) before it begins: so the
// work prepared before a capture is the work the captured step does.

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

// forwardActDesc is a hidden layer's fused forward, NN:
// y[M,N] = act(x[M,K]·w[K,N] + b), with the aux of y (the ReLU mask, or the
// GELU pre-activation of the layer's dtype). For a gated act N is the
// projection's width, 2·width: y is [M,N/2] = a·act(b) of the halves, the
// aux [M,N] the pre-activation.
func forwardActDesc(tier gemm.Tier, act Act, rows, in, out int, d DType) gemm.MatmulDesc {
	return gemm.MatmulDesc{Tier: tier, In: d, Out: d, M: rows, N: out, K: in, Alpha: 1, Epilogue: act.forwardEpilogue()}
}

// dxActDesc is the fused product that flows back into a hidden layer, NT:
// dx[M,K] = act′(dy[M,N]·w[K,N]ᵀ) from the forward's aux [M,K], and
// db[K] += Σ_rows dx. (In Matmul's names: M rows, N = the layer's In, K =
// its Out, B = w with TransB.) For a gated act, K is the block's width
// and dx [M,2K] the gradient of both halves of its pre-activation, read
// from the aux [M,2K]; no db.
func dxActDesc(tier gemm.Tier, act Act, rows, in, out int, d DType) gemm.MatmulDesc {
	return gemm.MatmulDesc{Tier: tier, In: d, Out: d, M: rows, N: in, K: out, TransB: true, Alpha: 1, Epilogue: act.backwardEpilogue()}
}

// forwardActDescOf and dxActDescOf are the requests of the backend
// operations forwardAct(x, w, ...) and dxAct(dy, w, ...).
func forwardActDescOf(tier gemm.Tier, act Act, x, w *Tensor) gemm.MatmulDesc {
	return forwardActDesc(tier, act, x.rows, x.cols, w.cols, x.dtype)
}

func dxActDescOf(tier gemm.Tier, act Act, dy, w *Tensor) gemm.MatmulDesc {
	return dxActDesc(tier, act, dy.rows, w.rows, dy.cols, dy.dtype)
}

// product is one engine product of a step: a Forward, DW or DX call, a
// fused Matmul, a 2:4 sparse forward or an fp8 product.
type product struct {
	call   gemm.Call          // Forward, DW or DX; nil for a Matmul, a sparse forward or an fp8 product
	desc   gemm.MatmulDesc    // the Matmul's description, where call, sparse and fp8 are nil
	sparse *gemm.Sparse24Desc // a 2:4 sparse forward's description, or nil
	fp8    *gemm.FP8Desc      // an fp8 product's description, or nil
}

// fp8Desc is an fp8 layer's product d[M,N] = ep(a[M,K]·b[N,K]ᵀ (+ b)) on
// the fp8 tensor cores: a and b quantized a scale per row (ScaleRow),
// a chain per 128 positions of K promoted into f32 (AccumPromoted), d of
// the activations' dtype.
func fp8Desc(ep gemm.Epilogue, a, b DType, rows, n, k int, d DType) gemm.FP8Desc {
	return gemm.FP8Desc{A: a, B: b, Out: d, M: rows, N: n, K: k, Scaling: gemm.ScaleRow, Accum: gemm.AccumPromoted, Epilogue: ep}
}

// fp8ForwardDesc is an fp8 layer's forward, y[M,out] = ep(x·W + b) as
// x[M,in] (E4M3) times Wᵀ [out,in] (E4M3): ep is gemm.Bias for a Linear's
// Forward, ReluBias or GeluBias (and Bias for the GELU aux) for an MLP's
// hidden layer.
func fp8ForwardDesc(ep gemm.Epilogue, rows, in, out int, d DType) gemm.FP8Desc {
	return fp8Desc(ep, gemm.E4M3, gemm.E4M3, rows, out, in, d)
}

// fp8DXDesc is an fp8 layer's dX, dx[M,in] = dy·Wᵀ as dy[M,out] (E5M2)
// times W [in,out] (E4M3, already N × K).
func fp8DXDesc(rows, in, out int, d DType) gemm.FP8Desc {
	return fp8Desc(gemm.Default, gemm.E5M2, gemm.E4M3, rows, in, out, d)
}

// fp8DescOf is the request of the backend operation fp8Matmul(ep, a, ...,
// b, ..., d).
func fp8DescOf(ep gemm.Epilogue, a, b, d *Tensor) gemm.FP8Desc {
	return fp8Desc(ep, a.dtype, b.dtype, a.rows, b.rows, a.cols, d.dtype)
}

// sparseDesc is a 2:4 sparse layer's forward, y[M,N] = ep(x[M,K]·w[K,N]
// (+ b)), with w compressed: ep is gemm.Bias for a Linear's Forward, the
// activation's forward epilogue (ReluAuxBias, GeluAuxBias) for an MLP's
// hidden layer.
func sparseDesc(ep gemm.Epilogue, rows, in, out int, d DType) gemm.Sparse24Desc {
	return gemm.Sparse24Desc{In: d, Out: d, M: rows, N: out, K: in, Epilogue: ep}
}

// sparseDescOf is the request of the backend operation forward24(ep, x,
// ..., y, ...).
func sparseDescOf(ep gemm.Epilogue, x, y *Tensor) gemm.Sparse24Desc {
	return sparseDesc(ep, x.rows, x.cols, y.cols, x.dtype)
}

// stepWork lists every engine product one Step on a batch of rows makes,
// in the order Step makes them: each layer's forward (a fused Matmul for a
// hidden layer, Forward for the last; a sparse forward for every layer of
// a 2:4 sparse network; fp8 products for an fp8 network, two for a GELU
// hidden layer), then, from the last layer back, its
// dW and (but for the first layer) its dX, fused with the activation's
// gradient and (but for a gated act) the bias gradient of the layer
// before (an fp8 network's dX is an fp8 product, the activation's and
// bias gradients separate passes). The triad's own kernels (the gated blocks' bias gradients among
// them) need no scratch memory, so these products are all the workspace a
// step uses.
func (m *MLP) stepWork(rows int) []product {
	var work []product
	tier, d, act, last := m.cfg.Tier, m.cfg.DType, m.cfg.Act, len(m.layers)-1
	for i, l := range m.layers {
		switch {
		case l.cfg.FP8:
			ep := gemm.Bias
			if i < last {
				ep = act.fp8Epilogue()
			}
			fd := fp8ForwardDesc(ep, rows, l.cfg.In, l.cfg.Out, d)
			work = append(work, product{fp8: &fd})
			if i < last && act == ActGELU {
				ad := fp8ForwardDesc(gemm.Bias, rows, l.cfg.In, l.cfg.Out, d)
				work = append(work, product{fp8: &ad})
			}
		case l.cfg.Sparse24:
			ep := gemm.Bias
			if i < last {
				ep = act.forwardEpilogue()
			}
			sd := sparseDesc(ep, rows, l.cfg.In, l.cfg.Out, d)
			work = append(work, product{sparse: &sd})
		case i < last:
			work = append(work, product{desc: forwardActDesc(tier, act, rows, l.cfg.In, l.cfg.Out, d)})
		default:
			work = append(work, product{call: forwardCall(tier, rows, l.cfg.In, l.cfg.Out, d)})
		}
	}
	for i := last; i >= 0; i-- {
		in, out := m.layers[i].cfg.In, m.layers[i].cfg.Out
		work = append(work, product{call: dwCall(tier, rows, in, out, d)})
		switch {
		case i > 0 && m.layers[i].cfg.FP8:
			xd := fp8DXDesc(rows, in, out, d)
			work = append(work, product{fp8: &xd})
		case i > 0:
			work = append(work, product{desc: dxActDesc(tier, act, rows, in, out, d)})
		}
	}
	return work
}
