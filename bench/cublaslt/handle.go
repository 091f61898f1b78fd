package cublaslt

import (
	"fmt"
	"math"
	"unsafe"

	"github.com/ebitengine/purego"
)

// Handle is a cublasLtHandle_t with the plans it has made. It is not safe
// for concurrent use.
type Handle struct {
	lib *Library
	h   uintptr
	// pref is the one preference descriptor; its workspace limit is set
	// per plan, before that plan's heuristic query.
	pref uintptr
	// plans holds each (shape, types, epilogue, aux ld, workspace)'s
	// descriptors and algorithm, so the heuristic runs once per problem and
	// a timed launch makes no descriptor and no query.
	plans map[planKey]*plan
	// scal holds alpha and beta: cuBLASLt reads them through host pointers
	// before cublasLtMatmul returns, so they only need to outlive the call.
	scal *[2]float32
}

// Create makes a handle in the CUDA context current on the calling thread
// (cublasLtCreate).
func (l *Library) Create() (*Handle, error) {
	var h uintptr
	r, _, _ := purego.SyscallN(l.create, uintptr(unsafe.Pointer(&h)))
	if err := check("cublasLtCreate", r); err != nil {
		return nil, err
	}
	var pref uintptr
	r, _, _ = purego.SyscallN(l.prefCreate, uintptr(unsafe.Pointer(&pref)))
	if err := check("cublasLtMatmulPreferenceCreate", r); err != nil {
		purego.SyscallN(l.destroy, h)
		return nil, err
	}
	return &Handle{lib: l, h: h, pref: pref, plans: map[planKey]*plan{}, scal: &[2]float32{1, 0}}, nil
}

// Destroy releases every plan, the preference and the handle; a second
// call is a no-op. The first failure is returned, after everything has
// been released.
func (h *Handle) Destroy() error {
	if h == nil || h.h == 0 {
		return nil
	}
	var first error
	keep := func(err error) {
		if first == nil {
			first = err
		}
	}
	for k, p := range h.plans {
		keep(p.release(h.lib))
		delete(h.plans, k)
	}
	r, _, _ := purego.SyscallN(h.lib.prefDestroy, h.pref)
	keep(check("cublasLtMatmulPreferenceDestroy", r))
	r, _, _ = purego.SyscallN(h.lib.destroy, h.h)
	keep(check("cublasLtDestroy", r))
	h.h, h.pref = 0, 0
	return first
}

// MatmulArgs is one row-major product D[M,N] = epilogue(op(A)·op(B)) with
// op(A) of M×K and op(B) of K×N and f32 accumulation (CUBLAS_COMPUTE_32F,
// scale type f32, alpha 1, beta 0). Pointers are device addresses;
// dimensions and leading dimensions are in elements.
type MatmulArgs struct {
	M, K, N int
	// A is stored row-major M×K, or K×M with TransA (op(A) = Aᵀ); B is
	// stored K×N, or N×K with TransB.
	A, B           uintptr
	TransA, TransB bool
	// LDA, LDB and LDD are the row strides of A, B and D as stored; 0
	// means dense (the stored row length).
	LDA, LDB, LDD int
	// In is A's and B's type: R16BF or R16F, or R8FE4M3 (fp8: see
	// ScaleA).
	In  DataType
	D   uintptr  // row-major D[M,N]
	Out DataType // D's type: In, or R32F; with fp8 In: R16BF, R16F or R32F
	// Epilogue is what runs on the product; 0 means EpilogueDefault.
	Epilogue Epilogue
	// Bias is the bias vector of N elements in Out's type (read by the
	// *_BIAS epilogues, written by the *_BGRAD ones and BGRADB); 0 when
	// the epilogue uses none.
	Bias uintptr
	// Aux is the row-major [M, N] aux matrix with row stride AuxLD
	// elements (written by the *_AUX epilogues, read by DGELU and DRELU);
	// 0 when the epilogue uses none.
	Aux   uintptr
	AuxLD int
	// Workspace is a device buffer of WorkspaceBytes that cuBLASLt may use;
	// the heuristic only offers algorithms that fit in it.
	Workspace      uintptr
	WorkspaceBytes uint64
	// Stream is the CUstream / cudaStream_t the product is enqueued on.
	Stream uintptr

	// The fp8 product (In R8FE4M3). cuBLASLt's fp8 kernels take one form
	// only, "TN" in its column-major terms: its A transposed and its B
	// not. Here that is A stored row-major M×K and B stored row-major N×K
	// (TransB true, TransA false): see the package documentation.
	//
	// ScaleA and ScaleB are device pointers to one f32 each, the
	// per-tensor scales of our A and our B (D = ScaleA·ScaleB·A·Bᵀ); 0
	// leaves that scale at 1. cuBLASLt's A is our B, so ScaleB goes to
	// CUBLASLT_MATMUL_DESC_A_SCALE_POINTER and ScaleA to
	// B_SCALE_POINTER. Both multiply the whole product, so a swap could
	// not show in D: the mapping is kept exact anyway.
	ScaleA, ScaleB uintptr
	// FastAccum sets CUBLASLT_MATMUL_DESC_FAST_ACCUM to 1: the fp8
	// kernels then skip the periodic promotion of the tensor cores'
	// partial sums into f32.
	FastAccum bool
}

// planKey is what an algorithm choice depends on; pointers are not in it,
// so rotating input sets reuse one plan.
type planKey struct {
	m, k, n        int
	transA, transB bool
	lda, ldb, ldd  int // resolved: never 0
	in, out        DataType
	epi            Epilogue
	auxLD          int
	workspace      uint64
	fastAccum      bool
}

// String names the problem in errors: "4096x4096x4096 tn lda=4096 ldb=4096
// ldd=4096 GELU_AUX_BIAS".
func (k planKey) String() string {
	l := [2]byte{'n', 'n'}
	if k.transA {
		l[0] = 't'
	}
	if k.transB {
		l[1] = 't'
	}
	s := fmt.Sprintf("%dx%dx%d %s lda=%d ldb=%d ldd=%d %v", k.m, k.k, k.n, l[:], k.lda, k.ldb, k.ldd, k.epi)
	if k.in.FP8() {
		s += " fp8"
		if k.fastAccum {
			s += " fast-accum"
		}
	}
	return s
}

// plan is one problem's descriptors and the heuristic's first algorithm.
type plan struct {
	desc       uintptr
	la, lb, ld uintptr // cuBLASLt's A (our B), its B (our A), C and D
	// algo is cublasLtMatmulAlgo_t: 8 uint64 of opaque state.
	algo [8]uint64
	// bias, aux and the fp8 scales are the pointers last written into
	// desc, so a launch on the same set skips the attribute calls.
	bias, aux      uintptr
	scaleA, scaleB uintptr // ours: scaleB is in A_SCALE_POINTER
}

// heuristicResult is cublasLtMatmulHeuristicResult_t: the algorithm, the
// workspace it needs (size_t), its status, the waves count and four
// reserved ints.
type heuristicResult struct {
	algo      [8]uint64
	workspace uint64
	state     int32
	waves     float32
	_         [4]int32
}

// Matmul enqueues one product on a.Stream. The first call for a problem
// (shape, layouts, leading dimensions, types, epilogue, aux leading
// dimension, workspace size, fast accumulation) makes its descriptors
// (with that call's fp8 scale pointers) and asks
// cublasLtMatmulAlgoGetHeuristic for one algorithm; later calls reuse
// both and only update the bias, aux and scale pointers. An
// epilogue or type combination cuBLASLt does not offer comes back as an
// *Error matching StatusNotSupported.
func (h *Handle) Matmul(a *MatmulArgs) error {
	if h.h == 0 {
		return ErrClosed
	}
	epi := a.Epilogue
	if epi == 0 {
		epi = EpilogueDefault
	}
	lda, ldb, ldd, err := validate(a, epi)
	if err != nil {
		return err
	}
	key := planKey{a.M, a.K, a.N, a.TransA, a.TransB, lda, ldb, ldd, a.In, a.Out, epi, a.AuxLD, a.WorkspaceBytes, a.FastAccum}
	p := h.plans[key]
	if p == nil {
		if p, err = h.newPlan(key, a); err != nil {
			return err
		}
		h.plans[key] = p
	}
	if err := h.setScales(p, a); err != nil {
		return err
	}
	if epi.NeedsBias() && a.Bias != p.bias {
		if err := h.setDesc(p.desc, descBiasPointer, unsafe.Pointer(&a.Bias), 8); err != nil {
			return err
		}
		p.bias = a.Bias
	}
	if epi.NeedsAux() && a.Aux != p.aux {
		if err := h.setDesc(p.desc, descAuxPointer, unsafe.Pointer(&a.Aux), 8); err != nil {
			return err
		}
		p.aux = a.Aux
	}
	// Row-major D = A·B is column-major Dᵀ = Bᵀ·Aᵀ: cuBLASLt's A is our
	// B and its B our A; C (unused, beta 0) aliases D (for fp8 inputs C
	// then has D's type, as cuBLASLt asks of a bf16, f16 or f32 D).
	r, _, _ := purego.SyscallN(h.lib.matmul, h.h, p.desc,
		uintptr(unsafe.Pointer(&h.scal[0])),
		a.B, p.la, a.A, p.lb,
		uintptr(unsafe.Pointer(&h.scal[1])),
		a.D, p.ld, a.D, p.ld,
		uintptr(unsafe.Pointer(&p.algo[0])),
		a.Workspace, uintptr(a.WorkspaceBytes), a.Stream)
	return check("cublasLtMatmul", r)
}

// validate rejects what cuBLASLt would reject less clearly, or not at all
// (a null bias or aux pointer is only caught when the kernel faults), and
// returns the leading dimensions with their defaults applied.
func validate(a *MatmulArgs, epi Epilogue) (lda, ldb, ldd int, err error) {
	for _, d := range [...]struct {
		name string
		v    int
	}{{"M", a.M}, {"K", a.K}, {"N", a.N}} {
		if d.v < 1 || d.v > math.MaxInt32 {
			return 0, 0, 0, fmt.Errorf("cublaslt: %s=%d outside 1..%d: %w", d.name, d.v, math.MaxInt32, ErrInvalidArgument)
		}
	}
	aCols, bCols := a.K, a.N
	if a.TransA {
		aCols = a.M
	}
	if a.TransB {
		bCols = a.K
	}
	lds := [3]int{a.LDA, a.LDB, a.LDD}
	for i, d := range [...]struct {
		name string
		cols int
	}{{"LDA", aCols}, {"LDB", bCols}, {"LDD", a.N}} {
		if lds[i] == 0 {
			lds[i] = d.cols
		}
		if lds[i] < d.cols || lds[i] > math.MaxInt32 {
			return 0, 0, 0, fmt.Errorf("cublaslt: %s=%d: want 0 or %d..%d: %w", d.name, lds[i], d.cols, math.MaxInt32, ErrInvalidArgument)
		}
	}
	return lds[0], lds[1], lds[2], validateTypes(a, epi)
}

// validateTypes checks the types, the epilogue and its pointers.
func validateTypes(a *MatmulArgs, epi Epilogue) error {
	if a.In.FP8() {
		return validateFP8(a, epi)
	}
	if a.ScaleA != 0 || a.ScaleB != 0 || a.FastAccum {
		return fmt.Errorf("cublaslt: ScaleA, ScaleB and FastAccum are for fp8 inputs, not type %d: %w", a.In, ErrInvalidArgument)
	}
	if a.In != R16BF && a.In != R16F {
		return fmt.Errorf("cublaslt: input type %d: want R16BF, R16F or R8FE4M3: %w", a.In, ErrInvalidArgument)
	}
	if a.Out != a.In && a.Out != R32F {
		return fmt.Errorf("cublaslt: output type %d with input %d: want the input type or R32F: %w", a.Out, a.In, ErrInvalidArgument)
	}
	if _, ok := epilogueNames[epi]; !ok {
		return fmt.Errorf("cublaslt: %v: %w", epi, ErrInvalidArgument)
	}
	if epi.NeedsBias() && a.Bias == 0 {
		return fmt.Errorf("cublaslt: epilogue %v needs a bias pointer: %w", epi, ErrInvalidArgument)
	}
	if epi.NeedsAux() {
		if a.Aux == 0 {
			return fmt.Errorf("cublaslt: epilogue %v needs an aux pointer: %w", epi, ErrInvalidArgument)
		}
		if a.AuxLD < a.N || a.AuxLD > math.MaxInt32 {
			return fmt.Errorf("cublaslt: aux leading dimension %d: want N=%d or more: %w", a.AuxLD, a.N, ErrInvalidArgument)
		}
	}
	return nil
}

// newPlan makes the descriptors of one problem and picks its algorithm;
// on failure it releases what it made. a is the call that asked: its fp8
// scale pointers are set before the heuristic runs.
func (h *Handle) newPlan(k planKey, a *MatmulArgs) (_ *plan, err error) {
	l := h.lib
	p := &plan{}
	defer func() {
		if err != nil {
			_ = p.release(l)
		}
	}()
	r, _, _ := purego.SyscallN(l.descCreate, uintptr(unsafe.Pointer(&p.desc)), computeType32F, uintptr(R32F))
	if err := check("cublasLtMatmulDescCreate", r); err != nil {
		return nil, err
	}
	epi := uint32(k.epi)
	if err := h.setDesc(p.desc, descEpilogue, unsafe.Pointer(&epi), 4); err != nil {
		return nil, err
	}
	if k.epi.NeedsAux() {
		ld := int64(k.auxLD)
		if err := h.setDesc(p.desc, descAuxLD, unsafe.Pointer(&ld), 8); err != nil {
			return nil, err
		}
	}
	if k.in.FP8() {
		var fast int8
		if k.fastAccum {
			fast = 1
		}
		if err := h.setDesc(p.desc, descFastAccum, unsafe.Pointer(&fast), 1); err != nil {
			return nil, err
		}
		if err := h.setScales(p, a); err != nil {
			return nil, err
		}
	}
	// Column-major views of the row-major operands (see the package
	// documentation): a row-major matrix stored R×C with row stride ld is
	// the column-major C×R with the same ld. cuBLASLt's A is our B: stored
	// K×N it is N×K, op N; stored N×K (TransB) it is K×N, op T. Its B is
	// our A: stored M×K it is K×M, op N; stored K×M (TransA) it is M×K,
	// op T. D[M,N] is N×M.
	la := [3]int{k.n, k.k, k.ldb}
	if k.transB {
		la = [3]int{k.k, k.n, k.ldb}
	}
	lb := [3]int{k.k, k.m, k.lda}
	if k.transA {
		lb = [3]int{k.m, k.k, k.lda}
	}
	for _, t := range []struct {
		attr  int
		trans bool
	}{{descTransA, k.transB}, {descTransB, k.transA}} {
		op := int32(opN)
		if t.trans {
			op = opT
		}
		if err := h.setDesc(p.desc, t.attr, unsafe.Pointer(&op), 4); err != nil {
			return nil, err
		}
	}
	for _, m := range []struct {
		out            *uintptr
		dt             DataType
		rows, cols, ld int
	}{
		{&p.la, k.in, la[0], la[1], la[2]},
		{&p.lb, k.in, lb[0], lb[1], lb[2]},
		{&p.ld, k.out, k.n, k.m, k.ldd},
	} {
		r, _, _ := purego.SyscallN(l.layoutCreate, uintptr(unsafe.Pointer(m.out)), uintptr(m.dt),
			uintptr(m.rows), uintptr(m.cols), uintptr(m.ld))
		if err := check("cublasLtMatrixLayoutCreate", r); err != nil {
			return nil, err
		}
		// Column order is the default; it is set anyway so the choice
		// stands in the code next to the swap it belongs to.
		order := int32(orderCol)
		r, _, _ = purego.SyscallN(l.layoutSet, *m.out, layoutOrder, uintptr(unsafe.Pointer(&order)), 4)
		if err := check("cublasLtMatrixLayoutSetAttribute", r); err != nil {
			return nil, err
		}
	}
	ws := k.workspace
	r, _, _ = purego.SyscallN(l.prefSet, h.pref, prefMaxWorkspaceBytes, uintptr(unsafe.Pointer(&ws)), 8)
	if err := check("cublasLtMatmulPreferenceSetAttribute", r); err != nil {
		return nil, err
	}
	var res heuristicResult
	var n int32
	r, _, _ = purego.SyscallN(l.heuristic, h.h, p.desc, p.la, p.lb, p.ld, p.ld, h.pref,
		1, uintptr(unsafe.Pointer(&res)), uintptr(unsafe.Pointer(&n)))
	if err := check("cublasLtMatmulAlgoGetHeuristic", r); err != nil {
		return nil, fmt.Errorf("%v: %w", k, err)
	}
	if n < 1 {
		return nil, fmt.Errorf("%v: no algorithm: %w", k,
			&Error{Op: "cublasLtMatmulAlgoGetHeuristic", Status: StatusNotSupported})
	}
	p.algo = res.algo
	return p, nil
}

// setDesc is cublasLtMatmulDescSetAttribute.
func (h *Handle) setDesc(desc uintptr, attr int, buf unsafe.Pointer, size uintptr) error {
	r, _, _ := purego.SyscallN(h.lib.descSet, desc, uintptr(attr), uintptr(buf), size)
	return check("cublasLtMatmulDescSetAttribute", r)
}

// release destroys what the plan made; the zero handles it skips.
func (p *plan) release(l *Library) error {
	var first error
	for _, lay := range []*uintptr{&p.la, &p.lb, &p.ld} {
		if *lay != 0 {
			r, _, _ := purego.SyscallN(l.layoutDestroy, *lay)
			if err := check("cublasLtMatrixLayoutDestroy", r); err != nil && first == nil {
				first = err
			}
			*lay = 0
		}
	}
	if p.desc != 0 {
		r, _, _ := purego.SyscallN(l.descDestroy, p.desc)
		if err := check("cublasLtMatmulDescDestroy", r); err != nil && first == nil {
			first = err
		}
		p.desc = 0
	}
	return first
}

// validateFP8 checks an fp8 product: E4M3 inputs (one In for both
// operands, and cuBLASLt has no E5M2 × E5M2), the TN form, a 16-bit or f32
// output, no epilogue.
func validateFP8(a *MatmulArgs, epi Epilogue) error {
	if a.In != R8FE4M3 {
		return fmt.Errorf("cublaslt: fp8 input type %d: want R8FE4M3 (In is both operands' type, and E5M2 × E5M2 is not a pair cuBLASLt offers): %w", a.In, ErrInvalidArgument)
	}
	if a.TransA || !a.TransB {
		return fmt.Errorf("cublaslt: fp8 inputs take the TN form only: A stored M×K, B stored N×K (TransB): %w", ErrInvalidArgument)
	}
	switch a.Out {
	case R16BF, R16F, R32F:
	default:
		return fmt.Errorf("cublaslt: output type %d with fp8 inputs: want R16BF, R16F or R32F: %w", a.Out, ErrInvalidArgument)
	}
	if epi != EpilogueDefault {
		return fmt.Errorf("cublaslt: epilogue %v with fp8 inputs: only DEFAULT here: %w", epi, ErrInvalidArgument)
	}
	return nil
}

// setScales writes the fp8 scale pointers of a into the plan's descriptor
// where they differ from the ones it holds: cuBLASLt's A is our B, so our
// B's scale is its A_SCALE_POINTER and our A's its B_SCALE_POINTER.
func (h *Handle) setScales(p *plan, a *MatmulArgs) error {
	if !a.In.FP8() {
		return nil
	}
	if a.ScaleB != p.scaleB {
		if err := h.setDesc(p.desc, descAScalePointer, unsafe.Pointer(&a.ScaleB), 8); err != nil {
			return err
		}
		p.scaleB = a.ScaleB
	}
	if a.ScaleA != p.scaleA {
		if err := h.setDesc(p.desc, descBScalePointer, unsafe.Pointer(&a.ScaleA), 8); err != nil {
			return err
		}
		p.scaleA = a.ScaleA
	}
	return nil
}
