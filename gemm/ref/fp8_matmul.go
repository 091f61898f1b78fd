package ref

import (
	"fmt"
	"sync"
)

// FP8Scaling is how FP8Matmul's scales map onto A and B.
type FP8Scaling uint8

// The scalings. The zero FP8Scaling is invalid (ErrScale).
const (
	// ScaleTensor: one float32 scale for A (ScaleA[0]) and one for B
	// (ScaleB[0]), applied to the accumulated product.
	ScaleTensor FP8Scaling = iota + 1
	// ScaleRow: one scale per row m of A (ScaleA, M values) and one per row
	// n of the stored B (ScaleB, N values: per column of D), applied to the
	// accumulated product.
	ScaleRow
	// ScaleBlock: A in 1×128 blocks (ScaleA, M × KB values, KB =
	// ceil(K/128), row-major: ScaleA[m·KB + kb]) and the stored B in
	// 128×128 blocks (ScaleB, ceil(N/128) × KB, row-major: ScaleB[(n/128)·KB
	// + kb]), applied to each 128-wide block of the reduction as it is
	// accumulated. Needs AccumPromoted.
	ScaleBlock
)

// String returns "ScaleTensor", "ScaleRow", "ScaleBlock" or "FP8Scaling(n)".
func (s FP8Scaling) String() string {
	switch s {
	case ScaleTensor:
		return "ScaleTensor"
	case ScaleRow:
		return "ScaleRow"
	case ScaleBlock:
		return "ScaleBlock"
	}
	return fmt.Sprintf("FP8Scaling(%d)", uint8(s))
}

// FP8Accum is how FP8Matmul accumulates its tensor-core steps.
type FP8Accum uint8

// The accumulation modes. The zero FP8Accum is invalid (ErrScale).
const (
	// AccumPromoted: every 128 positions of K (four steps) are accumulated
	// from +0 on the tensor cores, and the block's result is added to a
	// float32 accumulator by an IEEE addition (or, with ScaleBlock, an
	// fma with the block's scales): cuBLASLt's default, and DeepSeek's
	// "promotion". The 14-bit step accumulator never sees more than four
	// steps.
	AccumPromoted FP8Accum = iota + 1
	// AccumFast: one chain of steps over the whole of K on the tensor
	// cores' accumulator (cuBLASLt's CUBLASLT_MATMUL_DESC_FAST_ACCUM): the
	// 14-bit accumulator runs the whole reduction.
	AccumFast
)

// String returns "AccumPromoted", "AccumFast" or "FP8Accum(n)".
func (a FP8Accum) String() string {
	switch a {
	case AccumPromoted:
		return "AccumPromoted"
	case AccumFast:
		return "AccumFast"
	}
	return fmt.Sprintf("FP8Accum(%d)", uint8(a))
}

// FP8MatmulRequest is one fp8 product in cuBLASLt's "TN" form,
//
//	D[M,N] = epilogue(scales · A[M,K] · B[N,K]ᵀ (+ bias)),
//
// A and B of 8-bit types, B stored transposed (N × K, row-major: each row
// of B is a column of the product), the scales as Scaling says, the
// accumulation as Accum says. Matrices are row-major with leading
// dimensions (0: the row length). With Options.Rows, D (or D8) holds the
// window's rows from its first row; A, B, the scales and the bias are
// always the whole operands. See docs/contract.md, section "fp8 (E4M3,
// E5M2)", for the order of operations.
type FP8MatmulRequest struct {
	// A and B are the inputs' types, E4M3 or E5M2, any pair (cuBLASLt
	// refuses E5M2 × E5M2; the reference computes it).
	A, B DType
	// Out is D's type: F32, BF16 or F16 (D), or E4M3 or E5M2 (D8).
	Out     DType
	M, N, K int
	// AData is A, M × K codes of type A, leading dimension LDA (>= K).
	AData []uint8
	LDA   int
	// BData is B stored transposed, N × K codes of type B, leading
	// dimension LDB (>= K).
	BData []uint8
	LDB   int
	// Scaling says how ScaleA and ScaleB map onto the operands.
	Scaling        FP8Scaling
	ScaleA, ScaleB []float32
	// Accum is the accumulation mode.
	Accum FP8Accum
	// Epilogue is Default, Bias, Relu, ReluBias, Gelu or GeluBias.
	Epilogue Epilogue
	// Bias, per column n of D (length N), for the epilogues with Bias in
	// the name; nil otherwise.
	Bias []float32
	// ScaleD multiplies the result before an fp8 store (D8 = FP8Encode(Out,
	// v·ScaleD)); it is used as given, so set it (1 for no scaling). It
	// must be 0 for any other Out.
	ScaleD float32
	// D is the output for Out F32 (Values), BF16 or F16 (Bits, or Values
	// that receive the rounded values); D8 the output codes for Out E4M3
	// or E5M2. LDD is the leading dimension of either (>= N).
	D   Operand
	D8  []uint8
	LDD int
	// Amax, for an fp8 Out only (nil otherwise, and nil not to ask),
	// receives the largest |v| of the window's stored elements, after the
	// activation and before ScaleD (NaNs skipped; +0 if none).
	Amax *float32
}

// fp8Epilogues are the epilogues FP8Matmul takes, with their activation
// and bias.
var fp8Epilogues = map[Epilogue]struct {
	act  activation
	bias bool
}{
	Default: {identity, false}, Bias: {identity, true},
	Relu: {actRelu, false}, ReluBias: {actRelu, true},
	Gelu: {actGelu, false}, GeluBias: {actGelu, true},
}

// FP8Matmul computes the window of rows (o.Rows; o.Cols must be zero) of
// r's fp8 product on o.Workers goroutines. It reads only those two fields
// of o: the types are r's and the arithmetic is the fp8 tensor-core step
// measured on sm_90 (FP8Step). Per element (m, n), with the steps s of K
// (32 positions each, the last zero-filled past K):
//
//   - AccumFast: v = the chain c = +0, c = FP8Step(c, A[m, 32s..],
//     B[n, 32s..]) for s ascending.
//   - AccumPromoted: acc = +0; for each block kb of 128 positions of K,
//     p = the chain of the block's steps (those that start before K) from
//     +0, then acc = Add32(acc, p), or with ScaleBlock acc = FMA32(p,
//     ScaleA[m·KB+kb]·ScaleB[(n/128)·KB+kb], acc) (the scales' product one
//     float32 multiplication); v = acc.
//   - ScaleTensor and ScaleRow: v = (v·sa)·sb, two float32
//     multiplications, sa = ScaleA[0] or ScaleA[m], sb = ScaleB[0] or
//     ScaleB[n].
//   - Bias epilogues: v = Add32(v, Bias[n]); then the activation (Relu32,
//     Gelu32).
//   - The store: F32 v; BF16, F16 v rounded once to nearest even; E4M3,
//     E5M2 FP8Encode(Out, v·ScaleD), and Amax the largest |v| (NaNs
//     skipped) of the window.
//
// Every float32 operation rounds once, to nearest even, and gives the
// canonical NaN for a NaN. The bits depend only on the data: never on M,
// the window or Workers. Errors are *ArgError (ErrDType, ErrScale, ErrDim,
// ErrEpilogue, ErrRange, ErrLeadingDim, ErrLength, ErrOperand,
// ErrOverlap), before anything is written.
func (o Options) FP8Matmul(r FP8MatmulRequest) error {
	k, err := o.fp8Check(&r)
	if err != nil {
		return err
	}
	k.run(o)
	return nil
}

// fp8Matmul is a validated FP8Matmul.
type fp8Matmul struct {
	r          *FP8MatmulRequest
	pair       fp8Pair
	out        *fp8Format // the fp8 Out's format; nil for F32, BF16, F16
	act        activation
	bias       bool
	r0, rows   int
	lda, ldb   int
	ldd        int
	steps, kbs int
	bSpecial   []bool // per row n of B and step: a NaN or Inf code
}

// fp8Check validates r and resolves it.
func (o Options) fp8Check(r *FP8MatmulRequest) (*fp8Matmul, error) {
	const op = "FP8Matmul"
	if !r.A.FP8() {
		return nil, argErr(op, "A", ErrDType, "%v: want E4M3 or E5M2", r.A)
	}
	if !r.B.FP8() {
		return nil, argErr(op, "B", ErrDType, "%v: want E4M3 or E5M2", r.B)
	}
	if !r.Out.Valid() && !r.Out.FP8() {
		return nil, argErr(op, "Out", ErrDType, "%v: want F32, BF16, F16, E4M3 or E5M2", r.Out)
	}
	switch r.Scaling {
	case ScaleTensor, ScaleRow, ScaleBlock:
	default:
		return nil, argErr(op, "Scaling", ErrScale, "%v is not ScaleTensor, ScaleRow or ScaleBlock", r.Scaling)
	}
	switch r.Accum {
	case AccumPromoted:
	case AccumFast:
		if r.Scaling == ScaleBlock {
			return nil, argErr(op, "Accum", ErrScale, "block scales need promoted accumulation (AccumPromoted)")
		}
	default:
		return nil, argErr(op, "Accum", ErrScale, "%v is not AccumPromoted or AccumFast", r.Accum)
	}
	spec, ok := fp8Epilogues[r.Epilogue]
	if !ok {
		return nil, argErr(op, "Epilogue", ErrEpilogue, "%v: the fp8 product takes Default, Bias, Relu, ReluBias, Gelu or GeluBias", r.Epilogue)
	}
	if err := checkDims(op, "MNK", r.M, r.N, r.K); err != nil {
		return nil, err
	}
	if !o.Cols.All() {
		return nil, argErr(op, "Cols", ErrRange, "the fp8 product computes whole rows; leave Cols zero")
	}
	r0, r1, err := o.Rows.bounds(op, "Rows", r.M)
	if err != nil {
		return nil, err
	}
	rows := r1 - r0
	da, err := resolveLD(op, "LDA", r.LDA, r.M, r.K)
	if err != nil {
		return nil, err
	}
	db, err := resolveLD(op, "LDB", r.LDB, r.N, r.K)
	if err != nil {
		return nil, err
	}
	dd, err := resolveLD(op, "LDD", r.LDD, rows, r.N)
	if err != nil {
		return nil, err
	}
	k := &fp8Matmul{r: r, pair: newFP8Pair(r.A, r.B), out: fp8Fmt(r.Out), act: spec.act, bias: spec.bias,
		r0: r0, rows: rows, lda: da.ld, ldb: db.ld, ldd: dd.ld,
		steps: (r.K + FP8StepK - 1) / FP8StepK, kbs: (r.K + fp8Block - 1) / fp8Block}
	var dSpan span // D's memory, to keep it apart from the float32 inputs
	if k.out != nil {
		switch {
		case r.D.Values != nil || r.D.Bits != nil:
			return nil, argErr(op, "D", ErrOperand, "%v output goes to D8; leave D empty", r.Out)
		case len(r.D8) < dd.extent():
			return nil, argErr(op, "D8", ErrLength, "%d elements, want at least %d", len(r.D8), dd.extent())
		}
		d8 := spanOfBytes(r.D8, dd.extent())
		if d8.overlaps(spanOfBytes(r.AData, da.extent())) {
			return nil, argErr(op, "D8", ErrOverlap, "shares memory with AData")
		}
		if d8.overlaps(spanOfBytes(r.BData, db.extent())) {
			return nil, argErr(op, "D8", ErrOverlap, "shares memory with BData")
		}
	} else {
		switch {
		case r.D8 != nil:
			return nil, argErr(op, "D8", ErrOperand, "%v output goes to D; leave D8 nil", r.Out)
		case r.ScaleD != 0:
			return nil, argErr(op, "ScaleD", ErrScale, "%v: ScaleD is for fp8 outputs only; leave it 0", r.ScaleD)
		case r.Amax != nil:
			return nil, argErr(op, "Amax", ErrOperand, "the amax is for fp8 outputs only; leave it nil")
		}
		if err := checkForm(op, "D", r.D, r.Out); err != nil {
			return nil, err
		}
		if err := checkLen(op, "D", r.D.len(), dd.extent(), "D's extent"); err != nil {
			return nil, err
		}
		dSpan = spanOf(r.D, 0, dd.extent())
	}
	if err := checkLen(op, "AData", len(r.AData), da.extent(), "A's extent"); err != nil {
		return nil, err
	}
	if err := checkLen(op, "BData", len(r.BData), db.extent(), "B's extent"); err != nil {
		return nil, err
	}
	na, nb := 1, 1
	switch r.Scaling {
	case ScaleRow:
		na, nb = r.M, r.N
	case ScaleBlock:
		na, nb = r.M*k.kbs, (r.N+fp8Block-1)/fp8Block*k.kbs
	}
	if err := checkLen(op, "ScaleA", len(r.ScaleA), na, "the scales of "+r.Scaling.String()); err != nil {
		return nil, err
	}
	if err := checkLen(op, "ScaleB", len(r.ScaleB), nb, "the scales of "+r.Scaling.String()); err != nil {
		return nil, err
	}
	if spec.bias {
		if err := checkLen(op, "Bias", len(r.Bias), r.N, "N"); err != nil {
			return nil, err
		}
	} else if r.Bias != nil {
		return nil, argErr(op, "Bias", ErrOperand, "%v takes no bias; pass nil", r.Epilogue)
	}
	for _, in := range []struct {
		arg string
		s   span
	}{{"ScaleA", spanOfF32(r.ScaleA, na)}, {"ScaleB", spanOfF32(r.ScaleB, nb)}, {"Bias", spanOfF32(r.Bias, len(r.Bias))}} {
		if dSpan.overlaps(in.s) {
			return nil, argErr(op, "D", ErrOverlap, "shares memory with %s", in.arg)
		}
	}
	return k, nil
}

// fp8ColChunk is how many output columns one task computes.
const fp8ColChunk = 64

// run computes the validated product.
func (k *fp8Matmul) run(o Options) {
	r := k.r
	k.bSpecial = make([]bool, r.N*k.steps)
	for n := range r.N {
		row := r.BData[n*k.ldb : n*k.ldb+r.K]
		for s := range k.steps {
			k.bSpecial[n*k.steps+s] = fp8Special(k.pair.ub, row[s*FP8StepK:min((s+1)*FP8StepK, r.K)])
		}
	}
	chunks := (r.N + fp8ColChunk - 1) / fp8ColChunk
	tasks := k.rows * chunks
	var mu sync.Mutex
	amax := float32(0)
	parallel(tasks, o.workers(tasks, workFor(k.rows, r.N, r.K)), func(lo, hi int) {
		vals := make([]float32, fp8ColChunk)
		aSpecial := make([]bool, k.steps)
		row := -1
		top := float32(0)
		for t := lo; t < hi; t++ {
			i, c := t/chunks, t%chunks
			m := k.r0 + i
			arow := r.AData[m*k.lda : m*k.lda+r.K]
			if i != row {
				row = i
				for s := range aSpecial {
					aSpecial[s] = fp8Special(k.pair.ua, arow[s*FP8StepK:min((s+1)*FP8StepK, r.K)])
				}
			}
			n0, n1 := c*fp8ColChunk, min((c+1)*fp8ColChunk, r.N)
			v := vals[:n1-n0]
			for n := n0; n < n1; n++ {
				v[n-n0] = k.element(m, n, arow, aSpecial)
			}
			top = max(top, k.finish(i, n0, v))
		}
		mu.Lock()
		amax = max(amax, top)
		mu.Unlock()
	})
	if r.Amax != nil {
		*r.Amax = amax
	}
}

// element is v of element (m, n): the accumulation and the scales.
func (k *fp8Matmul) element(m, n int, arow []uint8, aSpecial []bool) float32 {
	r := k.r
	brow := r.BData[n*k.ldb : n*k.ldb+r.K]
	bSpecial := k.bSpecial[n*k.steps : (n+1)*k.steps]
	chain := func(s0, s1 int) float32 {
		c := float32(0)
		for s := s0; s < s1; s++ {
			k0, k1 := s*FP8StepK, min((s+1)*FP8StepK, r.K)
			c = k.pair.step(c, arow[k0:k1], brow[k0:k1], aSpecial[s] || bSpecial[s])
		}
		return c
	}
	const blockSteps = fp8Block / FP8StepK
	var v float32
	if r.Accum == AccumFast {
		v = chain(0, k.steps)
	} else {
		for kb := range k.kbs {
			p := chain(kb*blockSteps, min((kb+1)*blockSteps, k.steps))
			if r.Scaling == ScaleBlock {
				s := mul32(r.ScaleA[m*k.kbs+kb], r.ScaleB[n/fp8Block*k.kbs+kb])
				v = FMA32(p, s, v)
			} else {
				v = Add32(v, p)
			}
		}
	}
	switch r.Scaling {
	case ScaleTensor:
		v = mul32(mul32(v, r.ScaleA[0]), r.ScaleB[0])
	case ScaleRow:
		v = mul32(mul32(v, r.ScaleA[m]), r.ScaleB[n])
	}
	return v
}

// finish applies the epilogue to elements [n0, n0+len(v)) of row i of the
// window and stores them; it returns their largest |v| (NaNs skipped) for
// an fp8 output.
func (k *fp8Matmul) finish(i, n0 int, v []float32) float32 {
	r := k.r
	if k.bias {
		for j := range v {
			v[j] = Add32(v[j], r.Bias[n0+j])
		}
	}
	k.act.apply(v, nil, i, n0)
	o := i*k.ldd + n0
	if k.out == nil {
		store(r.Out, r.D.Values, r.D.Bits, o, v)
		return 0
	}
	top := float32(0)
	d8 := r.D8[o : o+len(v)]
	for j, x := range v {
		if a := abs32(x); a > top { // a NaN never compares greater
			top = a
		}
		d8[j] = k.out.encode(mul32(x, r.ScaleD))
	}
	return top
}
