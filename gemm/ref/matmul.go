package ref

import (
	"errors"
	"fmt"
	"unsafe"
)

// Sentinels of Options.Matmul's refusals, beside the package's others.
var (
	// ErrLeadingDim: a leading dimension is negative, smaller than the
	// row it strides over, or makes the matrix's extent overflow int.
	ErrLeadingDim = errors.New("invalid leading dimension")
	// ErrOperand: an operand the request needs is missing (C with beta !=
	// 0, a bias, aux or bias-gradient buffer the epilogue uses), or one is
	// given to an epilogue that does not use it.
	ErrOperand = errors.New("operand missing or not used")
	// ErrOverlap: an output shares memory with an input or another output
	// (C and D may be the same matrix, element for element).
	ErrOverlap = errors.New("output overlaps another operand")
	// ErrEpilogue: the Epilogue is not one of the package's, or the
	// request asks it for something it does not do (ReduceOverBatch with a
	// gated epilogue).
	ErrEpilogue = errors.New("invalid epilogue")
)

// Epilogue is what a Matmul does after the product: cuBLASLt's sixteen
// epilogues, under the names a cuBLASLt user searches for, and twenty
// gated ones (GLU, ReGLU, SwiGLU, GeGLU, fused into the product's
// epilogue). The zero value is Default. See MatmulRequest for the operands
// each one uses, and docs/contract.md, section "Matmul", for the order of
// operations.
type Epilogue uint8

// The epilogues. Forward ones (bias, activation, aux output), backward
// ones (the activation's gradient from the forward's aux, and a bias
// gradient), and the bias gradients of a weight-gradient product.
const (
	// Default: D = alpha·op(A)·op(B) + beta·C.
	Default Epilogue = iota
	// Relu: D = relu(...), relu(x) = x for x > 0, NaN for NaN, else +0.
	Relu
	// Bias: D = ... + bias[n].
	Bias
	// ReluBias: D = relu(... + bias[n]).
	ReluBias
	// ReluAux: Relu, and the mask of the stored D in ReluMask.
	ReluAux
	// ReluAuxBias: ReluBias, and the mask of the stored D in ReluMask.
	ReluAuxBias
	// Gelu: D = Gelu32(...), GELU's tanh approximation.
	Gelu
	// GeluBias: D = Gelu32(... + bias[n]).
	GeluBias
	// GeluAux: Gelu, and its input (the pre-activation, rounded to Out)
	// in Aux.
	GeluAux
	// GeluAuxBias: GeluBias, and its input (with the bias) in Aux.
	GeluAuxBias
	// DRelu: D = the ReLU's gradient applied to the product: the product
	// where ReluMask passes, +0 where it is zero, NaN where it is NaN.
	DRelu
	// DReluBgrad: DRelu, and BiasGrad[n] += the sum over rows m of the
	// stored D[m,n].
	DReluBgrad
	// DGelu: D = product · GeluGrad32(Aux[m,n]).
	DGelu
	// DGeluBgrad: DGelu, and BiasGrad[n] += the sum over rows m of the
	// stored D[m,n].
	DGeluBgrad
	// BgradA: Default, and BiasGrad[m] += the sum over k of op(A)[m,k].
	BgradA
	// BgradB: Default, and BiasGrad[n] += the sum over k of op(B)[k,n].
	BgradB
	// numEpilogues is the number of cuBLASLt's sixteen, the epilogues of
	// epilogueSpecs; the gated ones follow.
	numEpilogues
)

// The gated epilogues (docs/contract.md, section "Matmul", "Gated
// epilogues"). The product, of width N, holds a gate's two halves in
// blocks of 8 columns: output j's a at column ca(j) = (j/8)·16 + j%8, its
// b at cb(j) = ca(j) + 8. Forward: v, the product as Default (or, for the
// *Bias ones, Bias) would leave it before the store, gives D[m,j] =
// a·act(b) for j < N/2 (D is M × N/2), and the *Aux ones store v itself
// in Aux (M × N). Backward: v, the product dy of width N, and the
// forward's aux (M × 2N) give D (M × 2N): D[m,ca(j)] = dy·act(b),
// D[m,cb(j)] = (dy·a)·act′(b). Every gated epilogue takes beta = 0 and
// no Cols window; see Gate and GatedBackward.
const (
	// GatedGLU: D[m,j] = a·σ(b). GatedGLUBias: the same of the product
	// + bias; GatedGLUAux, GatedGLUAuxBias: and that in Aux.
	GatedGLU Epilogue = numEpilogues + iota
	GatedGLUBias
	GatedGLUAux
	GatedGLUAuxBias
	// GatedReGLU: D[m,j] = a·relu(b); the others as GatedGLU's.
	GatedReGLU
	GatedReGLUBias
	GatedReGLUAux
	GatedReGLUAuxBias
	// GatedSwiGLU: D[m,j] = a·silu(b) (Silu32); the others as GatedGLU's.
	GatedSwiGLU
	GatedSwiGLUBias
	GatedSwiGLUAux
	GatedSwiGLUAuxBias
	// GatedGeGLU: D[m,j] = a·gelu(b) (Gelu32); the others as GatedGLU's.
	GatedGeGLU
	GatedGeGLUBias
	GatedGeGLUAux
	GatedGeGLUAuxBias
	// DGatedGLU: from the forward's Aux (a, b) and the product dy,
	// D[m,ca(j)] = dy·act(b), D[m,cb(j)] = (dy·a)·act′(b) (GateAct32,
	// GateGrad32); DGatedReGLU, DGatedSwiGLU, DGatedGeGLU likewise.
	DGatedGLU
	DGatedReGLU
	DGatedSwiGLU
	DGatedGeGLU
	numAllEpilogues
)

// bgradKind is which sum an epilogue's bias gradient is.
type bgradKind uint8

const (
	noBgrad   bgradKind = iota
	bgradRows           // over the rows m of the stored D, per column n
	bgradA              // over k of op(A), per row m
	bgradB              // over k of op(B), per column n
)

// epilogueSpec is what an epilogue reads and writes.
type epilogueSpec struct {
	name   string
	bias   bool // reads Bias
	act    activation
	auxOut bool // writes the aux (a ReluMask for actRelu, Aux for actGelu)
	auxIn  bool // reads the aux (a ReluMask for actDRelu, Aux for actDGelu)
	bgrad  bgradKind
}

var epilogueSpecs = [numEpilogues]epilogueSpec{
	Default:     {name: "Default"},
	Relu:        {name: "Relu", act: actRelu},
	Bias:        {name: "Bias", bias: true},
	ReluBias:    {name: "ReluBias", bias: true, act: actRelu},
	ReluAux:     {name: "ReluAux", act: actRelu, auxOut: true},
	ReluAuxBias: {name: "ReluAuxBias", bias: true, act: actRelu, auxOut: true},
	Gelu:        {name: "Gelu", act: actGelu},
	GeluBias:    {name: "GeluBias", bias: true, act: actGelu},
	GeluAux:     {name: "GeluAux", act: actGelu, auxOut: true},
	GeluAuxBias: {name: "GeluAuxBias", bias: true, act: actGelu, auxOut: true},
	DRelu:       {name: "DRelu", act: actDRelu, auxIn: true},
	DReluBgrad:  {name: "DReluBgrad", act: actDRelu, auxIn: true, bgrad: bgradRows},
	DGelu:       {name: "DGelu", act: actDGelu, auxIn: true},
	DGeluBgrad:  {name: "DGeluBgrad", act: actDGelu, auxIn: true, bgrad: bgradRows},
	BgradA:      {name: "BgradA", bgrad: bgradA},
	BgradB:      {name: "BgradB", bgrad: bgradB},
}

// Valid reports whether e is one of the thirty-six epilogues: cuBLASLt's
// sixteen and the twenty gated ones.
func (e Epilogue) Valid() bool { return e < numAllEpilogues }

// String returns the epilogue's name (its Go name), or "Epilogue(n)".
func (e Epilogue) String() string {
	switch {
	case e < numEpilogues:
		return epilogueSpecs[e].name
	case e < DGatedGLU:
		return "Gated" + e.Gate().String() + [...]string{"", "Bias", "Aux", "AuxBias"}[(e-GatedGLU)%4]
	case e.Valid():
		return "DGated" + e.Gate().String()
	}
	return fmt.Sprintf("Epilogue(%d)", uint8(e))
}

// Gate returns a gated epilogue's gate, 0 (not a gate) for the others.
func (e Epilogue) Gate() Gate {
	switch {
	case e >= GatedGLU && e < DGatedGLU:
		return GLU + Gate((e-GatedGLU)/4)
	case e >= DGatedGLU && e < numAllEpilogues:
		return GLU + Gate(e-DGatedGLU)
	}
	return 0
}

// GatedBackward reports whether e is a gated backward epilogue (DGatedGLU,
// DGatedReGLU, DGatedSwiGLU, DGatedGeGLU).
func (e Epilogue) GatedBackward() bool { return e >= DGatedGLU && e < numAllEpilogues }

// gatedBias and gatedAux report whether a gated forward epilogue adds the
// bias, and writes the aux.
func (e Epilogue) gatedBias() bool { return e >= GatedGLU && e < DGatedGLU && (e-GatedGLU)&1 != 0 }
func (e Epilogue) gatedAux() bool  { return e >= GatedGLU && e < DGatedGLU && (e-GatedGLU)&2 != 0 }

// usesMask reports whether e writes or reads a ReLU mask.
func (e Epilogue) usesMask() bool {
	if e >= numEpilogues {
		return false
	}
	s := epilogueSpecs[e]
	return (s.auxOut || s.auxIn) && (s.act == actRelu || s.act == actDRelu)
}

// MatmulRequest is one general product in cuBLASLt's shape,
//
//	D = epilogue(alpha·op(A)·op(B) + beta·C (+ bias))
//
// with op(A) of M×K, op(B) of K×N, and C, D of M×N. Matrices are row-major
// with a leading dimension: row r of a matrix with leading dimension ld
// starts at element r·ld; ld 0 means the row length (contiguous rows), and
// any ld >= the row length is allowed. A is stored M×K (lda >= K), or K×M
// with TransA (lda >= M); B is stored K×N (ldb >= N), or N×K with TransB
// (ldb >= K). So the engine's Forward is NN, its dX NT (B = W) and its dW
// TN (A = X) with beta = 1 and C = D = the master.
//
// Types (Options): A and B are of type In; C, D and a GELU aux of type Out
// (Values, or for a 16-bit Out Bits or exact Values); an aux given as Bits
// is always of type In (Out is F32 or In). Alpha, Beta, Bias and BiasGrad
// are float32.
//
// With Options.Rows and Cols, only that window of D is computed: D, an
// output aux and BiasGrad then hold the window (D's element (m, n) at
// (m-Rows.Lo)·LDD + n-Cols.Lo; BiasGrad's from the window's first row or
// column), while A, B, C, Bias and an input aux are always the whole
// matrices. The window's bits are those of the same elements of the whole
// result. LDD (and LDAux for an output aux) must be at least the window's
// width. The epilogues DReluBgrad and DGeluBgrad sum every row of D, so
// they take no Rows window.
//
// See docs/contract.md, section "Matmul", for the order of operations.
type MatmulRequest struct {
	M, N, K int
	// TransA and TransB select op(A) = Aᵀ and op(B) = Bᵀ.
	TransA, TransB bool
	A, B           Operand
	LDA, LDB       int
	// Alpha scales the product; it is used as given, so set it (1 for a
	// plain product): its zero value gives D = beta·C (+ bias), and then,
	// as in BLAS, the product is not computed and A and B are not read
	// (except by BgradA and BgradB).
	Alpha float32
	// Beta scales C; beta = 0 means C is not read (a NaN in C is
	// ignored), and C may then be empty.
	Beta float32
	C    Operand
	LDC  int
	// D is the output; it may be C itself, element for element (in
	// place), and must not otherwise share memory with any operand.
	D   Operand
	LDD int
	// Bias, per column n of D (length N): cuBLASLt's bias runs along the
	// rows of its column-major D, which is a row-major D's columns. Only
	// the epilogues with Bias in their name take it.
	Bias []float32
	// Epilogue is what follows the product; the zero value is Default.
	Epilogue Epilogue
	// Aux is the GELU pre-activation: written by GeluAux and GeluAuxBias,
	// read by DGelu and DGeluBgrad; or a gated activation's input, the
	// product (M × N, the window's rows): written by the Gated*Aux*
	// epilogues, read by DGated* (the forward's, M × 2N, whole).
	Aux Operand
	// ReluMask is the ReLU mask, one byte per element (ReluMaskZero,
	// ReluMaskPass, ReluMaskNaN): written by ReluAux and ReluAuxBias, read
	// by DRelu and DReluBgrad.
	ReluMask []uint8
	// LDAux is the leading dimension of Aux or ReluMask (0: the row
	// length).
	LDAux int
	// BiasGrad receives the bias gradient of BgradA (length M), BgradB,
	// DReluBgrad and DGeluBgrad (length N): it is accumulated, float32,
	// like dW's master (see docs/contract.md for the order).
	BiasGrad []float32
	// ReduceOverBatch says that K is the batch, as in a weight gradient:
	// the tensor-core tier then cuts the reduction by TCDWSlabs(K, M, N),
	// dW's plan, a function of the whole shape, instead of TCSlabs(K, N).
	// The IEEE tiers have one plan for both.
	ReduceOverBatch bool
}

// matDims is a stored matrix: rows × cols, leading dimension ld.
type matDims struct{ rows, cols, ld int }

// operandDims is A's and B's stored shapes (op(A) is M×K and op(B) K×N,
// each transposed where the request says) with their leading dimensions
// resolved and checked.
func (r *MatmulRequest) operandDims(op string) (da, db matDims, err error) {
	aRows, aCols := r.M, r.K
	if r.TransA {
		aRows, aCols = r.K, r.M
	}
	bRows, bCols := r.K, r.N
	if r.TransB {
		bRows, bCols = r.N, r.K
	}
	if da, err = resolveLD(op, "LDA", r.LDA, aRows, aCols); err != nil {
		return da, db, err
	}
	db, err = resolveLD(op, "LDB", r.LDB, bRows, bCols)
	return da, db, err
}

// extent is the number of elements from the first to past the last.
func (d matDims) extent() int { return (d.rows-1)*d.ld + d.cols }

// lenCheck is one operand's length against its extent.
type lenCheck struct {
	arg  string
	have int
	d    matDims
}

// resolveLD applies ld's default and checks it, and that the extent fits
// int.
func resolveLD(op, arg string, ld, rows, cols int) (matDims, error) {
	switch {
	case ld == 0:
		ld = cols
	case ld < 0:
		return matDims{}, argErr(op, arg, ErrLeadingDim, "%d is negative", ld)
	case ld < cols:
		return matDims{}, argErr(op, arg, ErrLeadingDim, "%d < the row length %d", ld, cols)
	}
	if e, ok := mul(rows-1, max(ld, 1)); rows > 1 && (!ok || e > int(^uint(0)>>1)-cols) {
		return matDims{}, argErr(op, arg, ErrLeadingDim, "%d rows of stride %d overflow int", rows, ld)
	}
	return matDims{rows, cols, ld}, nil
}

// checkForm rejects an operand given in a form its type does not allow.
func checkForm(op, arg string, x Operand, d DType) error {
	switch {
	case x.Values != nil && x.Bits != nil:
		return argErr(op, arg, ErrDType, "both Values and Bits are set")
	case x.Bits != nil && !d.Half():
		return argErr(op, arg, ErrDType, "Bits given for %v (want Values)", d)
	}
	return nil
}

// Matmul computes the window of D = epilogue(alpha·op(A)·op(B) + beta·C
// (+ bias)) described by r, and the epilogue's aux and bias gradient, in
// the tier and types of o. A gated epilogue's D has another width than
// the product (see GatedGLU). It refuses bad arguments with an *ArgError
// (ErrDim, ErrLeadingDim, ErrLength, ErrDType, ErrTier, ErrTCModel,
// ErrRange, ErrInexact, ErrOperand, ErrOverlap, ErrEpilogue) before
// writing anything. With alpha = 1, beta = 0, no transposes and the Bias
// (or Default) epilogue it is Options.Forward bit for bit, in every tier;
// NT is DX, and TN with beta = 1 onto C = D the master (and
// ReduceOverBatch) is DW.
func (o Options) Matmul(r MatmulRequest) error {
	const op = "Matmul"
	out, err := o.check(op, false)
	if err != nil {
		return err
	}
	if !r.Epilogue.Valid() {
		return argErr(op, "Epilogue", ErrEpilogue, "%v is not one of the thirty-six epilogues", r.Epilogue)
	}
	if r.Epilogue.Gate() != 0 {
		return o.matmulGated(r, out)
	}
	spec := epilogueSpecs[r.Epilogue]
	if err := checkDims(op, "MNK", r.M, r.N, r.K); err != nil {
		return err
	}
	M, N, K := r.M, r.N, r.K
	m0, m1, err := o.Rows.bounds(op, "Rows", M)
	if err != nil {
		return err
	}
	n0, n1, err := o.Cols.bounds(op, "Cols", N)
	if err != nil {
		return err
	}
	if spec.bgrad == bgradRows && (m0 != 0 || m1 != M) {
		return argErr(op, "Rows", ErrRange, "%v sums every row of D: no row window", r.Epilogue)
	}

	// Forms and presence.
	aux := spec.auxOut || spec.auxIn
	mask := r.Epilogue.usesMask()
	readC := r.Beta != 0
	for _, c := range []struct {
		arg  string
		x    Operand
		d    DType
		used bool
	}{
		{"A", r.A, o.In, true}, {"B", r.B, o.In, true}, {"C", r.C, out, readC},
		{"D", r.D, out, true}, {"Aux", r.Aux, out, aux && !mask},
	} {
		if c.arg == "Aux" && c.x.Bits != nil {
			c.d = o.In // a 16-bit aux is of the 16-bit input type
		}
		if err := checkForm(op, c.arg, c.x, c.d); err != nil {
			return err
		}
		if c.used && c.x.len() == 0 {
			return argErr(op, c.arg, ErrOperand, "missing (%s)", presenceWhy(c.arg, r.Epilogue))
		}
		if !c.used && c.arg == "Aux" && c.x.len() != 0 {
			return argErr(op, c.arg, ErrOperand, "%v writes or reads no GELU aux", r.Epilogue)
		}
	}
	for _, c := range []struct {
		arg  string
		n    int
		want bool
		what string
	}{
		{"Bias", len(r.Bias), spec.bias, "a bias"},
		{"ReluMask", len(r.ReluMask), mask, "a ReLU mask"},
		{"BiasGrad", len(r.BiasGrad), spec.bgrad != noBgrad, "a bias gradient"},
	} {
		switch {
		case c.want && c.n == 0:
			return argErr(op, c.arg, ErrOperand, "%v needs %s", r.Epilogue, c.what)
		case !c.want && c.n != 0:
			return argErr(op, c.arg, ErrOperand, "%v does not use %s", r.Epilogue, c.what)
		}
	}

	// Leading dimensions and lengths.
	I, J := m1-m0, n1-n0
	da, db, err := r.operandDims(op)
	if err != nil {
		return err
	}
	dd, err := resolveLD(op, "LDD", r.LDD, I, J)
	if err != nil {
		return err
	}
	var dc, dx matDims
	if readC {
		if dc, err = resolveLD(op, "LDC", r.LDC, M, N); err != nil {
			return err
		}
	}
	if aux {
		rows, cols := M, N // an input aux is whole
		if spec.auxOut {
			rows, cols = I, J
		}
		if dx, err = resolveLD(op, "LDAux", r.LDAux, rows, cols); err != nil {
			return err
		}
	}
	auxArg := "Aux"
	if mask {
		auxArg = "ReluMask"
	}
	lens := []lenCheck{{"A", r.A.len(), da}, {"B", r.B.len(), db}, {"D", r.D.len(), dd}}
	if readC {
		lens = append(lens, lenCheck{"C", r.C.len(), dc})
	}
	switch {
	case mask:
		lens = append(lens, lenCheck{auxArg, len(r.ReluMask), dx})
	case aux:
		lens = append(lens, lenCheck{auxArg, r.Aux.len(), dx})
	}
	for _, l := range lens {
		if err := checkLen(op, l.arg, l.have, l.d.extent(), fmt.Sprintf("(%d-1)*%d+%d", l.d.rows, l.d.ld, l.d.cols)); err != nil {
			return err
		}
	}
	if spec.bias {
		if err := checkLen(op, "Bias", len(r.Bias), N, "N"); err != nil {
			return err
		}
	}
	switch spec.bgrad {
	case bgradA:
		if err := checkLen(op, "BiasGrad", len(r.BiasGrad), I, "the window's rows"); err != nil {
			return err
		}
	case bgradB, bgradRows:
		if err := checkLen(op, "BiasGrad", len(r.BiasGrad), J, "the window's columns"); err != nil {
			return err
		}
	}

	// Inputs given as Values of a 16-bit type must be exact where read.
	product := r.Alpha != 0
	if product || spec.bgrad == bgradA {
		if r.TransA {
			err = checkExact(op, "A", o.In, r.A, 0, K, da.ld, m0, m1)
		} else {
			err = checkExact(op, "A", o.In, r.A, m0, m1, da.ld, 0, K)
		}
		if err != nil {
			return err
		}
	}
	if product || spec.bgrad == bgradB {
		if r.TransB {
			err = checkExact(op, "B", o.In, r.B, n0, n1, db.ld, 0, K)
		} else {
			err = checkExact(op, "B", o.In, r.B, 0, K, db.ld, n0, n1)
		}
		if err != nil {
			return err
		}
	}
	if readC {
		if err := checkExact(op, "C", out, r.C, m0, m1, dc.ld, n0, n1); err != nil {
			return err
		}
	}
	if err := r.checkOverlap(op, spec, auxArg, mask, readC, da, db, dc, dd, dx, m0, n0, I, J); err != nil {
		return err
	}

	// The epilogue.
	ep := &epilogue{act: spec.act, out: out, f: r.D.Values, h: r.D.Bits, ld: dd.ld}
	if aux {
		a := &auxBuf{mask: r.ReluMask, f: r.Aux.Values, h: r.Aux.Bits, d: out, ld: dx.ld}
		if r.Aux.Bits != nil {
			a.d = o.In
		}
		if spec.auxOut {
			ep.auxOut = a
		} else {
			a.r0, a.c0 = m0, n0
			ep.auxIn = a
		}
	}
	var bias []float32
	if spec.bias {
		bias = r.Bias[n0:n1]
	}
	// The tensor-core tier with alpha = 1 starts slab 0's chain at beta·C
	// and the bias; every other case folds the slabs onto beta·C, alpha
	// scaling each, and adds the bias after.
	start := o.Tier == TensorCore && r.Alpha == 1
	var src *cSource
	if readC {
		src = &cSource{c: r.C.mat(out), ld: dc.ld, beta: r.Beta, r0: m0, c0: n0}
		ep.c = src
	}
	var tcStart []float32
	if start {
		if src != nil {
			src.bias = bias
		} else {
			tcStart = bias
		}
	} else {
		ep.bias = bias
		ep.scaled, ep.alpha = r.Alpha != 1, r.Alpha
		ep.preFold = readC && o.Tier == TensorCore
	}

	switch {
	case !product:
		matmulNoProduct(ep, readC, I, J)
	case o.Tier == TensorCore:
		_, l := TCSlabs(K, N)
		if r.ReduceOverBatch {
			_, l = TCDWSlabs(K, M, N)
		}
		p := tcPlan{m: o.Model, emin: int32(minNormalExp(o.In)), I: I, J: J, R: K, L: l, start: tcStart}
		p.a, p.ai, p.ar = opA(r, o.In, da.ld, m0)
		p.b, p.br, p.bj = opB(r, o.In, db.ld, n0)
		p.run(o, ep, readC && start)
	default:
		rd := reduction{I: I, J: J, R: K}
		rd.a, rd.ai, rd.ar = opA(r, o.In, da.ld, m0)
		rd.b, rd.br, rd.bj = opB(r, o.In, db.ld, n0)
		rd.run(o, ep, readC)
	}

	switch spec.bgrad {
	case bgradRows:
		d := r.D.mat(out)
		biasGrad(o, r.BiasGrad[:J], M, func(n, m int) float32 { return d.at(m*dd.ld + n) })
	case bgradA:
		a, ai, ar := opA(r, o.In, da.ld, m0)
		biasGrad(o, r.BiasGrad[:I], K, func(i, k int) float32 { return a.at(i*ai + k*ar) })
	case bgradB:
		b, br, bj := opB(r, o.In, db.ld, n0)
		biasGrad(o, r.BiasGrad[:J], K, func(j, k int) float32 { return b.at(k*br + j*bj) })
	}
	return nil
}

// opA returns op(A) from window row m0 on, as the plans read it: element
// (i, k) at a[i*ai + k*ar].
func opA(r MatmulRequest, in DType, ld, m0 int) (a mat, ai, ar int) {
	if r.TransA {
		return r.A.mat(in).from(m0), 1, ld
	}
	return r.A.mat(in).from(m0 * ld), ld, 1
}

// opB returns op(B) from window column n0 on: element (k, j) at b[k*br +
// j*bj].
func opB(r MatmulRequest, in DType, ld, n0 int) (b mat, br, bj int) {
	if r.TransB {
		return r.B.mat(in).from(n0 * ld), 1, ld
	}
	return r.B.mat(in).from(n0), ld, 1
}

// matmulNoProduct finishes a Matmul with alpha = 0: v = beta·C (+0 without
// C), then the epilogue.
func matmulNoProduct(ep *epilogue, readC bool, I, J int) {
	v := make([]float32, J)
	for i := range I {
		if readC {
			ep.load(i, 0, v)
		} else {
			clear(v)
		}
		ep.apply(i, 0, v)
	}
}

// presenceWhy says why a matrix operand is needed.
func presenceWhy(arg string, e Epilogue) string {
	switch arg {
	case "C":
		return "beta != 0 reads C"
	case "Aux":
		return e.String() + " writes or reads the GELU pre-activation"
	}
	return "every product has " + arg
}

// span is the bytes an operand's elements occupy, from its first to past
// its last: lo == hi for none.
type span struct{ lo, hi uintptr }

func (s span) overlaps(t span) bool { return s.lo < t.hi && t.lo < s.hi }

// spanOf is the span of elements [first, first+n) of x.
func spanOf(x Operand, first, n int) span {
	switch {
	case n <= 0:
		return span{}
	case x.Values != nil:
		p := uintptr(unsafe.Pointer(unsafe.SliceData(x.Values))) + uintptr(first)*4
		return span{p, p + uintptr(n)*4}
	case x.Bits != nil:
		p := uintptr(unsafe.Pointer(unsafe.SliceData(x.Bits))) + uintptr(first)*2
		return span{p, p + uintptr(n)*2}
	}
	return span{}
}

func spanOfBytes(b []uint8, n int) span {
	if len(b) == 0 || n <= 0 {
		return span{}
	}
	p := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	return span{p, p + uintptr(n)}
}

func spanOfF32(b []float32, n int) span { return spanOf(Values(b), 0, n) }

// checkOverlap refuses an output (D, an output aux, BiasGrad) that shares
// memory with an input (A, B, C when read, Bias, an input aux) or with
// another output, except D and C being the same elements.
func (r *MatmulRequest) checkOverlap(op string, spec epilogueSpec, auxArg string, mask, readC bool,
	da, db, dc, dd, dx matDims, m0, n0, I, J int) error {
	type named struct {
		arg string
		s   span
	}
	auxSpan := spanOf(r.Aux, 0, dx.extent())
	if mask {
		auxSpan = spanOfBytes(r.ReluMask, dx.extent())
	}
	inputs := []named{{"A", spanOf(r.A, 0, da.extent())}, {"B", spanOf(r.B, 0, db.extent())}}
	if spec.bias {
		inputs = append(inputs, named{"Bias", spanOfF32(r.Bias, r.N)})
	}
	if spec.auxIn {
		inputs = append(inputs, named{auxArg, auxSpan})
	}
	var cSpan span
	if readC {
		cSpan = spanOf(r.C, m0*dc.ld+n0, (I-1)*dc.ld+J)
	}
	outputs := []named{{"D", spanOf(r.D, 0, dd.extent())}}
	if spec.auxOut {
		outputs = append(outputs, named{auxArg, auxSpan})
	}
	if spec.bgrad != noBgrad {
		n := J
		if spec.bgrad == bgradA {
			n = I
		}
		outputs = append(outputs, named{"BiasGrad", spanOfF32(r.BiasGrad, n)})
	}
	for i, w := range outputs {
		for _, x := range inputs {
			if w.s.overlaps(x.s) {
				return argErr(op, w.arg, ErrOverlap, "shares memory with %s", x.arg)
			}
		}
		for _, x := range outputs[:i] {
			if w.s.overlaps(x.s) {
				return argErr(op, w.arg, ErrOverlap, "shares memory with %s", x.arg)
			}
		}
		if readC && w.s.overlaps(cSpan) {
			// In place is D = C element for element: the same first
			// element, form and row stride.
			same := w.arg == "D" && w.s.lo == cSpan.lo && (r.D.Values == nil) == (r.C.Values == nil) && (I == 1 || dd.ld == dc.ld)
			if !same {
				return argErr(op, w.arg, ErrOverlap, "shares memory with C, but is not C element for element")
			}
		}
	}
	return nil
}
