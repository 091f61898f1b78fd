package gemm

import (
	"fmt"
	"slices"

	"github.com/detgemm/detgemm/cudaload"
	"github.com/detgemm/detgemm/gemm/ref"
)

// Epilogue is what a Matmul does after the product: cuBLASLt's sixteen
// epilogues under the names a cuBLASLt user searches for, and the gated ones. It is gemm/ref's
// type, so a request passes between the engine and the CPU reference
// unchanged. docs/contract.md, section "Matmul", gives the order of
// operations and what each one reads and writes.
type Epilogue = ref.Epilogue

// The sixteen epilogues (see ref.Epilogue for each one's definition).
const (
	Default     = ref.Default     // D = alpha·op(A)·op(B) + beta·C
	Relu        = ref.Relu        // relu(D)
	Bias        = ref.Bias        // D + bias[n]
	ReluBias    = ref.ReluBias    // relu(D + bias[n])
	ReluAux     = ref.ReluAux     // Relu, and its mask to Aux
	ReluAuxBias = ref.ReluAuxBias // ReluBias, and its mask to Aux
	Gelu        = ref.Gelu        // gelu(D), the tanh form
	GeluBias    = ref.GeluBias    // gelu(D + bias[n])
	GeluAux     = ref.GeluAux     // Gelu, and its input to Aux
	GeluAuxBias = ref.GeluAuxBias // GeluBias, and its input to Aux
	DRelu       = ref.DRelu       // D where the forward's mask passes, +0 or NaN elsewhere
	DReluBgrad  = ref.DReluBgrad  // DRelu, and BiasGrad[n] += Σ_m D[m,n]
	DGelu       = ref.DGelu       // D·gelu′(Aux)
	DGeluBgrad  = ref.DGeluBgrad  // DGelu, and BiasGrad[n] += Σ_m D[m,n]
	BgradA      = ref.BgradA      // Default, and BiasGrad[m] += Σ_k op(A)[m,k]
	BgradB      = ref.BgradB      // Default, and BiasGrad[n] += Σ_k op(B)[k,n]
)

// The gated epilogues (docs/contract.md, section "Gated epilogues"): the
// product is the projection [a | b] with its 8-column blocks alternating a
// and b (GatedBlocks8); the forward ones write D = a·act(b), N/2 wide (with
// the bias added to the product first, and the product, rounded to Out,
// to Aux); the backward ones read that aux and turn the product dy into the
// gradient [da | db], 2N wide, in the same layout.
const (
	GatedGLU           = ref.GatedGLU
	GatedGLUBias       = ref.GatedGLUBias
	GatedGLUAux        = ref.GatedGLUAux
	GatedGLUAuxBias    = ref.GatedGLUAuxBias
	GatedReGLU         = ref.GatedReGLU
	GatedReGLUBias     = ref.GatedReGLUBias
	GatedReGLUAux      = ref.GatedReGLUAux
	GatedReGLUAuxBias  = ref.GatedReGLUAuxBias
	GatedSwiGLU        = ref.GatedSwiGLU
	GatedSwiGLUBias    = ref.GatedSwiGLUBias
	GatedSwiGLUAux     = ref.GatedSwiGLUAux
	GatedSwiGLUAuxBias = ref.GatedSwiGLUAuxBias
	GatedGeGLU         = ref.GatedGeGLU
	GatedGeGLUBias     = ref.GatedGeGLUBias
	GatedGeGLUAux      = ref.GatedGeGLUAux
	GatedGeGLUAuxBias  = ref.GatedGeGLUAuxBias
	DGatedGLU          = ref.DGatedGLU
	DGatedReGLU        = ref.DGatedReGLU
	DGatedSwiGLU       = ref.DGatedSwiGLU
	DGatedGeGLU        = ref.DGatedGeGLU
)

// The bytes of a ReLU mask (one per element; see docs/contract.md).
const (
	ReluMaskZero = ref.ReluMaskZero // the forward stored +0: the gradient is +0
	ReluMaskPass = ref.ReluMaskPass // the forward stored its input: the gradient passes
	ReluMaskNaN  = ref.ReluMaskNaN  // the forward stored NaN: the gradient is NaN
)

// MatmulDesc is everything a Matmul plan depends on: the tier and types,
// the shape, the layouts and leading dimensions, alpha and beta, and the
// epilogue. It describes
//
//	D = epilogue(alpha·op(A)·op(B) + beta·C (+ bias))
//
// with op(A) of M×K, op(B) of K×N and C, D of M×N. Matrices are row-major
// with a leading dimension (row r starts at element r·ld; 0 means the row
// length, any larger value is allowed): A is stored M×K (LDA ≥ K), or K×M
// with TransA (LDA ≥ M); B is stored K×N (LDB ≥ N), or N×K with TransB
// (LDB ≥ K); C, D and the aux M×N (LDC, LDD, LDAux ≥ N).
//
// Types: A and B of In; C, D and a GELU aux of Out (In or F32); bias,
// bias gradients, alpha and beta f32; a ReLU mask one byte per element.
// The tier's contract holds for every field: the IEEE tiers' bits do not
// depend on the GPU, the tensor-core tier's follow its architecture's
// addition model, and a row of D depends only on the same row of op(A), C
// and the aux, never on M (unless ReduceOverBatch). gemm/ref's
// Options.Matmul computes the same bits on the CPU.
type MatmulDesc struct {
	Tier    Tier
	In, Out DType
	M, N, K int
	// TransA and TransB select op(A) = Aᵀ and op(B) = Bᵀ.
	TransA, TransB bool
	// Leading dimensions in elements; 0 means the row length.
	LDA, LDB, LDC, LDD int
	// LDAux is the aux's (GELU pre-activation or ReLU mask) leading
	// dimension; 0 means N.
	LDAux int
	// Alpha scales the product; set it (1 for a plain product): with 0,
	// as in BLAS, the product is not computed and A and B are not read
	// (except by BgradA and BgradB).
	Alpha float32
	// Beta scales C; 0 means C is not read (a NaN there is ignored).
	Beta float32
	// Epilogue is what follows the product (the zero value is Default).
	Epilogue Epilogue
	// ReduceOverBatch says K is the batch, as in a weight gradient: the
	// tensor-core tier then cuts the reduction by dW's plan
	// (ref.TCDWSlabs(K, M, N), a function of the whole shape, so rows of
	// D then depend on M) instead of ref.TCSlabs(K, N). The IEEE tiers
	// have one plan for both.
	ReduceOverBatch bool
}

// MatmulArgs is the device memory of one Matmul run.
type MatmulArgs struct {
	A, B cudaload.DevicePtr // op(A), op(B) as MatmulDesc stores them, of In
	// C is read where Beta != 0 (else it may be 0). D may be C itself
	// (in place: the same pointer and LDC == LDD); no other output may
	// share memory with any operand.
	C, D cudaload.DevicePtr
	Bias cudaload.DevicePtr // N f32, for the epilogues with Bias in the name; else 0
	// Aux is the GELU pre-activation (of Out: written by GeluAux and
	// GeluAuxBias, read by DGelu and DGeluBgrad) or the ReLU mask (bytes:
	// written by ReluAux and ReluAuxBias, read by DRelu and DReluBgrad);
	// else 0.
	Aux cudaload.DevicePtr
	// BiasGrad accumulates the bias gradient (f32; M of them for BgradA,
	// N for BgradB, DReluBgrad and DGeluBgrad); else 0. Zero it first to
	// overwrite.
	BiasGrad cudaload.DevicePtr
}

// MatmulRequest is one Matmul: its description and its memory.
type MatmulRequest struct {
	MatmulDesc
	MatmulArgs
}

// Precision says what arithmetic a plan runs and what its bits depend on.
type Precision struct {
	// Math is "IEEE f32 FMA chains" or "tensor-core k16 chains".
	Math string
	// Accumulator is the type every chain accumulates in (F32).
	Accumulator DType
	// Reduction is the plan's cut of K and its fold order, in words.
	Reduction string
	// Deterministic: the same inputs give the same bits on every run.
	// Always true.
	Deterministic bool
	// BatchInvariant: a row of D (and of its aux) depends only on the
	// same rows of the inputs, never on M. False only with
	// ReduceOverBatch in the tensor-core tier. (Bias gradients over rows
	// are sums over the batch by nature; their slab order is fixed, see
	// docs/contract.md.)
	BatchInvariant bool
	// GPUIndependent: the bits are the same on every GPU (the IEEE
	// tiers). The tensor-core tier's follow the architecture's addition
	// model (Arch), which gemm/ref reproduces.
	GPUIndependent bool
	// Arch is the architecture the kernels were built for.
	Arch string
}

// Matmul enqueues one general product on the engine's stream: Plan, then
// Run. A caller that repeats a description should keep its plan.
func (e *Engine) Matmul(r MatmulRequest) error {
	p, err := e.Plan(r.MatmulDesc)
	if err != nil {
		return err
	}
	return p.Run(r.MatmulArgs)
}

// CanImplement reports whether this engine can run d, and if not, why: the
// error Plan would return (an *ArgError naming the field, matched with
// errors.Is against ErrDimension, ErrLeadingDim, ErrDType, ErrTier,
// ErrEpilogue, ErrTooLarge). It allocates nothing.
func (e *Engine) CanImplement(d MatmulDesc) error {
	_, err := e.newMatmulPlan(d)
	return err
}

// MatmulPlan is a validated Matmul description bound to an engine, with
// its kernels chosen and its workspace allocated: Run launches it without
// planning or allocating, so a plan is cheap to reuse and may be run while
// the stream captures a CUDA graph. Plans are safe for concurrent use.
type MatmulPlan struct {
	e *Engine
	p mmPlan
}

// Plan validates d and plans it on this engine: the kernels, the
// workspace (allocated now, so Run never allocates), the precision. Its
// errors are CanImplement's, or the allocation's.
func (e *Engine) Plan(d MatmulDesc) (*MatmulPlan, error) {
	p, err := e.newMatmulPlan(d)
	if err != nil {
		return nil, err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return nil, ErrClosed
	}
	if err := e.ws.ensure("Plan", p.wsBytes, e.stream.IsCapturing, e.ctx.MemAlloc); err != nil {
		return nil, err
	}
	if err := e.ws.ensureCounters("Plan", p.ctrBytes, e.stream.IsCapturing, e.ctx.MemAlloc, e.zero); err != nil {
		return nil, err
	}
	return &MatmulPlan{e: e, p: p}, nil
}

// Desc returns the description the plan was made for (leading dimensions
// resolved: no zeros).
func (p *MatmulPlan) Desc() MatmulDesc { return p.p.d }

// WorkspaceBytes is the engine workspace the plan uses, its arrival
// counters included (allocated by Plan; engines share none).
func (p *MatmulPlan) WorkspaceBytes() uint64 { return p.p.wsBytes + p.p.ctrBytes }

// Kernels names the entry points a Run launches, in order, as the kernel
// registry names them (for buffers aligned to 16 bytes; a Run with less
// aligned operands may take a tile's element-wise twin, with the same
// bits). Routes through Forward, DX or DW list that op's kernels.
func (p *MatmulPlan) Kernels() []string { return slices.Clone(p.p.kernels) }

// Precision reports the plan's arithmetic and what its bits depend on.
func (p *MatmulPlan) Precision() Precision { return p.p.precision }

// String describes the plan in one line.
func (p *MatmulPlan) String() string {
	d := p.p.d
	return fmt.Sprintf("Matmul %s %s %v→%v M=%d N=%d K=%d %s alpha=%g beta=%g: %v; %s; workspace %d B",
		d.Tier, p.p.layoutName(), d.In, d.Out, d.M, d.N, d.K, d.Epilogue, d.Alpha, d.Beta, p.p.kernels, p.p.precision.Reduction, p.p.wsBytes)
}

// Run enqueues the plan on a's memory. It checks the pointers (present
// where the epilogue needs them, absent where it does not, aligned to
// their elements, outputs disjoint from every input except D == C) and
// launches nothing on a bad one.
func (p *MatmulPlan) Run(a MatmulArgs) error {
	if err := p.p.checkArgs(a); err != nil {
		return err
	}
	e := p.e
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return ErrClosed
	}
	// Another plan on this engine may have grown the workspace since.
	if err := e.ws.holds("Matmul", "", p.p.wsBytes); err != nil {
		return err
	}
	return p.p.run(e, a)
}
