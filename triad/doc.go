// Package triad is the training triad as a layer: a deterministic Linear
// layer (forward, dW, db, dX) over the gemm engine, an MLP whose hidden
// layers fuse ReLU, GELU or a gated activation (GLU, ReGLU, SwiGLU, GeGLU)
// into their products, the mean squared error and SGD with momentum, on
// the GPU or the CPU with identical bits, and the training demo
// (cmd/train).
//
// # Backends
//
// A Backend owns Tensors (row-major matrices of f32, bf16 or f16) and runs
// the operations. NewGPU/OpenGPU run the products on the gemm engine and
// the rest on the triad kernels (kernels/cuda/triad.cu), queued on one
// stream: a training step is launches only, with no host round trip, and
// can be captured once as a CUDA graph and replayed (MLP.CaptureStep).
// NewCPU runs the products on gemm/ref, which implements the engine's plans
// bit for bit, and the rest in Go loops doing the kernels' float32
// operations in the kernels' order. For the f32 and typed tiers the two
// backends give identical bits, so a GPU run can be checked on a laptop;
// for the tensor-core tier they do on sm_90 (see Tiers).
//
// # Tiers
//
// A layer's tier is chosen when it is made and never switched: gemm.TierF32
// with f32 activations, or gemm.TierTyped or gemm.TierTensorCore with bf16
// or f16 activations and a 16-bit working copy of the weights. For the
// tensor-core tier the CPU backend runs the Hopper model of the tensor
// cores (ref.Hopper), so it reproduces an sm_90 GPU's bits; on other GPUs
// the two backends differ in the products' last bits (the tensor cores'
// addition differs between architectures). Parameters, their gradients
// and velocities are always f32.
//
// # Operations and their exact order
//
// Every addition, subtraction, multiplication and division below is one
// IEEE binary32 operation rounded to nearest even (CUDA's __fadd_rn,
// __fsub_rn, __fmul_rn, __fdiv_rn; fma is __fmaf_rn, one rounding); the
// kernels are compiled with --fmad=false and the CPU forces each rounding
// with an explicit float32 conversion, so nothing is contracted. A NaN
// result of arithmetic is the canonical NaN 0x7FFFFFFF; a 16-bit store
// rounds once to nearest even and stores any NaN as 0x7FFF. 16-bit inputs
// widen exactly to f32.
//
// Linear, for x [M, In], W [In, Out], b [1, Out]:
//
//	Forward   y = x·W + b           gemm Forward (plan in package gemm), y in the layer's dtype
//	Backward  DW += xᵀ·dy           gemm DW, into the f32 gradient
//	          DB += Σ_rows dy        see "Bias gradient"
//	          dx = dy·Wᵀ            gemm DX (skipped when dx is nil)
//	Step      SGD on W and b, DW = DB = +0, working copy = RNE(W)
//
// Bias gradient (the dW plan with the products replaced by the elements):
// the M rows are cut into slabs of 256 (ref.SlabLen); slab s is one
// ascending chain p_s = +0, then p_s = p_s + dy[r, c] for each row r of the
// slab; then DB[c] = ((DB[c] + p_0) + p_1) + .... Because the fold starts
// from the value already in DB, a batch split into micro-batches at
// multiples of 256 rows, each passed to Backward in order before one Step,
// gives the same DW and DB bits as one call on the whole batch.
//
// SGD with momentum, for each parameter w with gradient g and velocity v
// (both starting at +0):
//
//	v = (mu·v) + g
//	w = w − (lr·v)
//	g = +0
//
// ReLU: relu(x) = x (its bits) when x > 0, the canonical NaN when x is NaN
// (a diverged run stays visible), +0 otherwise, so relu(−0) = +0. Its
// gradient from the pre-activation h: dx = dy (its bits) when h > 0, the
// canonical NaN when h is NaN, +0 otherwise.
//
// # The MLP's fused layers
//
// An MLP's hidden layers (all but the last) run the activation
// (MLPConfig.Act: ActReLU, the zero value, or ActGELU, GELU's tanh form
// ref.Gelu32, or a gated one: see "Gated blocks") inside their products, as gemm Matmul epilogues (package gemm,
// docs/contract.md, section "Matmul"); the CPU backend runs the same
// requests on gemm/ref's Options.Matmul. For hidden layer i with input x:
//
//	forward   a_i = act(x·W_i + b_i)     ReluAuxBias or GeluAuxBias, NN; the aux is
//	                                     the ReLU mask of a_i (one byte per element)
//	                                     or the GELU pre-activation (the layer's dtype)
//	backward  dh_i = act′(dh_(i+1)·W_(i+1)ᵀ)   DReluBgrad or DGeluBgrad, NT, reading
//	          DB_i += Σ_rows dh_i               layer i's aux, in the same call
//
// The last layer runs Forward (y = x·W + b), its DB the bias gradient
// above, and every layer's DW gemm DW. So a hidden layer's step makes no
// separate activation, activation-gradient or bias-gradient pass.
//
// For ReLU the fused layers give the bits of the unfused operations
// (Forward, relu, DX, the ReLU gradient, the bias gradient), so every
// ReLU digest is what it was before they were fused: relu(RNE(v)) =
// RNE(relu(v)) for every v (rounding keeps the sign and NaN; a positive v
// that rounds to +0 gives +0 either way); the mask is taken from the
// stored output, which is > 0 exactly where the stored pre-activation is;
// DReluBgrad passes the product's stored value where the mask passes, +0
// or the canonical NaN elsewhere, as the ReLU gradient does with DX's
// output; and its bias gradient sums the stored gradient in the 256-row
// slabs above, onto the same DB. For GELU, a_i = RNE(Gelu32(v)) with v the
// unrounded pre-activation, the aux RNE(v), and dh_i = RNE(v′·GeluGrad32(aux))
// with v′ the unrounded product: one rounding each, as the contract's
// epilogue says.
//
// # Gated blocks
//
// With a gated activation (ActGLU a·σ(b), ActReGLU a·relu(b), ActSwiGLU
// a·silu(b), ActGeGLU a·gelu(b); ref.GateAct32 defines each, ref.GateGrad32
// its derivative) hidden layer i of width w is a gated block: its Linear
// projects to 2·w columns, the linear half a and the gate half b in blocks
// of 8 (column c holds a where c/8 is even and b where it is odd: output j
// takes a at column (j/8)·16 + j%8 and b 8 columns later; MLP says how
// separate W_a and W_b map to it). So w must be a multiple of 8. With
// v = x·W_i + b_i (2·w wide, unrounded) and v′ the unrounded product
// dh_(i+1)·W_(i+1)ᵀ (w wide):
//
//	forward   a_i = RNE(v_a·act(v_b))          Gated…AuxBias, NN; the aux is RNE(v),
//	                                           both halves, of the layer's dtype
//	backward  dh_i[a] = RNE(v′·act(aux_b))      DGated…, NT, reading layer i's aux;
//	          dh_i[b] = RNE((v′·aux_a)·act′(aux_b))   dh_i is 2·w wide, in the same layout
//	          DB_i += Σ_rows dh_i               the bias-gradient pass (the gated
//	                                           epilogues fuse no bias gradient)
//
// one rounding each (docs/contract.md, "Gated epilogues"). Then DW_i and
// the product back into layer i−1 read dh_i as any layer's gradient.
//
// # 2:4 sparse layers
//
// With LinearConfig.Sparse24 (MLPConfig.Sparse24 for every layer of a
// network) W [In, Out] is 2:4 sparse along In: in every group of 4
// consecutive rows of a column at most 2 elements are nonzero. Only the
// tensor-core tier runs it, with In a multiple of 16 (and, in an MLP, ReLU
// or GELU: the sparse forward has no gated epilogues); anything else is
// refused, never run dense. For such a layer:
//
//	SetParams  master = ref.Prune24(w) (magnitude, ties to the lower row);
//	           pattern = the positions kept (Pattern24), fixed from then on;
//	           working copy = RNE(master), compressed (PruneCompress24)
//	Forward    y = x·W + b on the sparse tensor cores (gemm Sparse24Forward,
//	           epilogue Bias; a hidden layer ReluAuxBias or GeluAuxBias)
//	Backward   dense: DW += xᵀ·dy, dx = dy·Wᵀ with the masked working copy
//	Step       SGD on the dense master; Mask24(master), Mask24(working copy)
//	           with the pattern (pruned elements +0); compress the working copy
//
// The CPU backend runs the same steps on gemm/ref (Prune24, Mask24,
// Compress24, Options.Sparse24Forward with the Hopper model): the bits of
// an sm_90 GPU.
//
// # fp8 layers
//
// With LinearConfig.FP8 (MLPConfig.FP8 for every layer of a network) the
// forward and dX run on Hopper's fp8 tensor cores: Transformer Engine's
// recipe (E4M3 for activations and weights, E5M2 for gradients, f32
// accumulation, dW in 16 bits), with every scale taken per row so that the
// engine's invariance survives. Only the tensor-core tier runs it, with
// bf16 or f16 activations, In and Out multiples of 16 (the K of the two
// fp8 products), MaxRows set (the quantized activations are allocated for
// it), not with Sparse24, and in an MLP with ReLU or GELU (the fp8 product
// has no gated epilogues); anything else is refused, never run in 16
// bits. On the GPU it needs sm_90 (else gemm.ErrArch). Each quantization
// is gemm QuantizeFP8 with GroupRow (a group's scale s = amax/max finite,
// q = satfinite(RNE(x/s)), q·s ≈ x); each product gemm FP8Matmul with
// ScaleRow and AccumPromoted (a tensor-core chain per 128 positions of K
// added in f32, then the two scales, the bias, the activation, one
// rounding to the activations' dtype). For a layer with working copy W
// [In, Out]:
//
//	SetParams, Step  working copy = RNE(master), as any layer; then
//	                 Wt8 = E4M3(Wᵀ), a scale per row of Wᵀ (per output column)
//	                 W8  = E4M3(W), a scale per row of W (per input)
//	Forward    x8 = E4M3(x), a scale per row of x;
//	           y = ep(x8·Wt8ᵀ + b)      FP8Matmul(A = x8, B = Wt8), ep Bias
//	Backward   DW += xᵀ·dy, DB += Σ_rows dy    as any layer, on the 16-bit x and dy
//	           dy8 = E5M2(dy), a scale per row of dy;
//	           dx = dy8·W8ᵀ             FP8Matmul(A = dy8, B = W8: W [In, Out] is
//	                                    already dX's N × K), Default
//
// An MLP's hidden layer runs its forward as FP8Matmul with ReluBias or
// GeluBias; the fp8 product writes no aux, so for GELU a second product of
// the same quantized input with Bias stores the pre-activation aux =
// RNE(x·W + b), and ReLU keeps none. The product back into hidden layer i
// is the fp8 dX into a scratch dpre (rounded once to the dtype), then the
// activation's gradient as its own pass: ReLU's from the layer's output a
// (the triad's ReLU gradient, which passes dpre where a > 0: where the
// stored pre-activation is, the dense network's mask), GELU's
// RNE(dpre·GeluGrad32(aux)) (gemm GatedBackward, GeGLU, with a = 1: one
// rounding more than the dense DGeluBgrad, which rounds the unrounded
// product once); then DB_i += Σ_rows of it, the bias-gradient pass.
//
// Why per-row scales: Transformer Engine scales a tensor by its amax, one
// scale for the whole tensor (delayed from earlier steps), so every row's
// quantization, and so its output, depends on the other rows of the batch
// and on the history. A scale per row of x depends on that row alone, and
// the weight's scales on the weight alone (per output column forward, per
// input row for dX: each is a row of the stored B, which ScaleRow scales
// per output column), so a row's output has the same bits at batch 1, in
// any batch and in any chunking; dW is computed in 16 bits, as the dense
// layer's. The CPU backend runs the same quantizations and products on
// gemm/ref (FP8Quantize, Options.FP8Matmul, the fp8 tensor-core step
// measured on sm_90): the bits of an sm_90 GPU.
//
// MSE over the n = rows·cols elements of y and t, in row-major order:
// e_i = y_i − t_i; slab s of 256 consecutive elements is the chain
// p_s = +0, p_s = fma(e_i, e_i, p_s); total = ((p_0 + p_1) + p_2) + ...;
// loss = total / float32(n). The gradient is dy_i = scale·(y_i − t_i) with
// scale = 2 / float32(n) (one division, computed on the host), stored in
// the activations' dtype. The loss stays on the device: MLP.Loss reads the
// last value and the running sum since MLP.ResetLoss.
//
// # Errors
//
// Bad arguments return an *Error matching ErrNilTensor, ErrShape, ErrDType,
// ErrBackend, ErrConfig or ErrClosed (and the gemm tier sentinels for a
// tier problem); nothing is queued then.
package triad
