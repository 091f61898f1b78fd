package main

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/detgemm/detgemm/cudaload"
	"github.com/detgemm/detgemm/gemm"
	"github.com/detgemm/detgemm/kernels"
)

// mmMode is one of the engine's Matmul modes (issue 21): a product with
// alpha 1 and beta 0, an epilogue, a layout, and what it is judged
// against. Each exists in two tiers: as named, the IEEE tier the engine's
// fwd mode uses (f32 for f32 inputs, typed for bf16 and f16), and with
// the tc- prefix, the tensor-core tier (bf16 and f16).
type mmMode struct {
	name           string
	epi            gemm.Epilogue
	transA, transB bool
	strided        bool // rows of A, B and D padded by stridePad elements
	// batch sets ReduceOverBatch: the product is a weight gradient whose
	// K is the batch.
	batch bool
	// reluPass: after the product, the triad's ReLU kernel reads D and
	// writes another M×N buffer: an activation as a separate pass.
	reluPass bool
	// lt is the cuBLASLt mode of the same problem (tensor-core tier only);
	// plain the mode whose time this one's extra cost is measured against
	// ("" for the plain product itself).
	lt, plain string
	// unfused names the mode that computes the same result (or, for GELU,
	// a stand-in: see NOTES-matmul.md) as a product and a separate pass.
	unfused string
	// standIn: the unfused mode computes a different activation (a ReLU
	// pass for a GELU: the same bytes, less arithmetic, so its time is a
	// lower bound of a real GELU pass's).
	standIn bool
	// gated: a gated-activation mode (issue 23): in the gated group
	// (gatedGroup), not in the matmul group (issue 21's).
	gated bool
	// gatePass: after the product (D, M×N), the engine's GatedForward
	// with this gate (GatedBlocks8, Rows M, N/2 outputs a row) reads D
	// and writes another M×N/2 buffer: a gated activation as a separate
	// pass. 0: none.
	gatePass gemm.Gate
}

// The Matmul modes' names, IEEE tier (the tensor-core tier's add "tc-").
const (
	modeMM               = "mm"
	modeMMBias           = "mm-bias"
	modeMMGeluBias       = "mm-gelu-bias"
	modeMMGeluAuxBias    = "mm-gelu-aux-bias"
	modeMMReluBias       = "mm-relu-bias"
	modeMMReluAuxBias    = "mm-relu-aux-bias"
	modeMMDGeluBgrad     = "mm-dgelu-bgrad"
	modeMMDReluBgrad     = "mm-drelu-bgrad"
	modeMMBgradB         = "mm-bgradb"
	modeMMNT             = "mm-nt"
	modeMMTN             = "mm-tn"
	modeMMTT             = "mm-tt"
	modeMMStrided        = "mm-strided"
	modeMMGeluBiasStride = "mm-gelu-bias-strided"
	modeMMBiasThenRelu   = "mm-bias-then-relu"
	// Gated activations (issue 23): the product is N wide (the joined a
	// and b, in 8-column blocks), D N/2 wide; the backward's D is 2N wide.
	modeMMSwiGLU     = "mm-swiglu"
	modeMMSwiGLUAux  = "mm-swiglu-aux"
	modeMMThenSwiGLU = "mm-then-swiglu"
	modeMMGeGLUAux   = "mm-geglu-aux"
	modeMMDSwiGLU    = "mm-dswiglu"
)

// tcPrefix marks the tensor-core tier's modes, as in tc-fwd.
const tcPrefix = "tc-"

// mmModes is every Matmul mode in table order.
var mmModes = []mmMode{
	{name: modeMM, epi: gemm.Default, lt: modeLt},                                                                             // Default, NN: D = A·B (runs Forward's kernels)
	{name: modeMMBias, epi: gemm.Bias, lt: modeLtBias, plain: modeMM},                                                         // Bias: D = A·B + bias (runs Forward's kernels)
	{name: modeMMGeluBias, epi: gemm.GeluBias, lt: modeLtGELUBias, plain: modeMM, unfused: modeMMBiasThenRelu, standIn: true}, // GeluBias: D = gelu(A·B + bias)
	{name: modeMMGeluAuxBias, epi: gemm.GeluAuxBias, lt: modeLtGELUAuxBias, plain: modeMM},                                    // GeluAuxBias: as GeluBias, and aux = A·B + bias
	{name: modeMMReluBias, epi: gemm.ReluBias, lt: modeLtReLUBias, plain: modeMM, unfused: modeMMBiasThenRelu},                // ReluBias: D = relu(A·B + bias)
	{name: modeMMReluAuxBias, epi: gemm.ReluAuxBias, lt: modeLtReLUAuxBias, plain: modeMM},                                    // ReluAuxBias: as ReluBias, and its byte mask to aux
	{name: modeMMDGeluBgrad, epi: gemm.DGeluBgrad, lt: modeLtDGELUBGrad, plain: modeMM},                                       // DGeluBgrad: D = A·B ⊙ gelu'(aux), BiasGrad += column sums (aux from a GeluAuxBias run)
	{name: modeMMDReluBgrad, epi: gemm.DReluBgrad, lt: modeLtDReLUBGrad, plain: modeMM},                                       // DReluBgrad: D = A·B where the mask passes, BiasGrad += column sums (mask from a ReluAuxBias run)
	{name: modeMMBgradB, epi: gemm.BgradB, transA: true, batch: true, lt: modeLtTNBGradA, plain: modeMMTN},                    // BgradB, TN, ReduceOverBatch: D = Aᵀ·B, BiasGrad += B's column sums (a weight gradient)
	{name: modeMMNT, epi: gemm.Default, transB: true, lt: modeLtNT, plain: modeMM},                                            // Default, NT: D = A·Bᵀ (runs DX's kernels)
	{name: modeMMTN, epi: gemm.Default, transA: true, lt: modeLtTN, plain: modeMM},                                            // Default, TN: D = Aᵀ·B
	{name: modeMMTT, epi: gemm.Default, transA: true, transB: true, lt: modeLtTT, plain: modeMM},                              // Default, TT: D = Aᵀ·Bᵀ
	{name: modeMMStrided, epi: gemm.Default, strided: true, lt: modeLtStrided, plain: modeMM},                                 // Default, NN, ld = row length + 64 for A, B, D
	{name: modeMMGeluBiasStride, epi: gemm.GeluBias, strided: true, lt: modeLtGELUBiasStrided, plain: modeMMGeluBias},         // GeluBias with the strided rows
	{name: modeMMBiasThenRelu, epi: gemm.Bias, reluPass: true, plain: modeMMBias},                                             // Bias, then the triad's ReLU kernel as a second launch (D → another M×N buffer)
	// The gated activations. cuBLASLt has no gated epilogue: mm-swiglu's
	// cuBLASLt pair is its plain product (lt, DEFAULT), so the cuBLASLt
	// side of the comparison is lt plus a separate pass (mm-then-swiglu's
	// pass, or gated-swiglu-fwd alone).
	{name: modeMMSwiGLU, epi: gemm.GatedSwiGLU, lt: modeLt, plain: modeMM, unfused: modeMMThenSwiGLU, gated: true}, // GatedSwiGLU: D (M×N/2) = a·silu(b) of the product's blocks
	{name: modeMMSwiGLUAux, epi: gemm.GatedSwiGLUAux, plain: modeMM, gated: true},                                  // GatedSwiGLUAux: as GatedSwiGLU, and aux (M×N) = the product
	{name: modeMMThenSwiGLU, epi: gemm.Default, gatePass: gemm.SwiGLU, plain: modeMM, gated: true},                 // Default into D (M×N), then GatedForward (SwiGLU, GatedBlocks8) D → another M×N/2 buffer
	{name: modeMMGeGLUAux, epi: gemm.GatedGeGLUAux, plain: modeMM, gated: true},                                    // GatedGeGLUAux: D (M×N/2) = a·gelu(b), aux (M×N) = the product
	{name: modeMMDSwiGLU, epi: gemm.DGatedSwiGLU, plain: modeMM, gated: true},                                      // DGatedSwiGLU: D (M×2N) = [da | db] blocks from dy = A·B and aux (M×2N, random)
}

// mmModeNames lists the Matmul modes of both tiers: the IEEE tier's, then
// the tensor-core tier's.
func mmModeNames() []string {
	var out []string
	for _, m := range mmModes {
		out = append(out, m.name)
	}
	for _, m := range mmModes {
		out = append(out, tcPrefix+m.name)
	}
	return out
}

// lookupMM finds a Matmul mode by its name in either tier.
func lookupMM(mode string) (mmMode, bool, bool) {
	name, tc := strings.CutPrefix(mode, tcPrefix)
	for _, m := range mmModes {
		if m.name == name {
			return m, tc, true
		}
	}
	return mmMode{}, false, false
}

// isIEEEMatmul reports whether mode is an IEEE-tier Matmul mode (its FMAs
// run on CUDA cores whatever the input type).
func isIEEEMatmul(mode string) bool {
	_, tc, ok := lookupMM(mode)
	return ok && !tc
}

// mmPair is the mode a Matmul mode's row is judged against on the same
// problem, written in the mode's own tier: field picks lt, plain or
// unfused. The cuBLASLt pair exists for the tensor-core tier only.
func mmPair(mode string, field func(mmMode) string) string {
	m, tc, ok := lookupMM(mode)
	if !ok {
		return ""
	}
	p := field(m)
	switch {
	case p == "":
		return ""
	case strings.HasPrefix(p, "lt"):
		if !tc {
			return ""
		}
		return p
	case tc:
		return tcPrefix + p
	}
	return p
}

// The fields mmPair picks.
func ltOf(m mmMode) string      { return m.lt }
func plainOf(m mmMode) string   { return m.plain }
func unfusedOf(m mmMode) string { return m.unfused }

// matmulBackend measures the engine's Matmul (Plan once, Run per launch)
// on the engine the engine backend made; its rows are "detgemm" rows.
type matmulBackend struct {
	eng    *gemm.Engine
	stream *cudaload.Stream
	im     *inputMaker // fills the epilogues' buffers; set by run
	// relu holds the triad's ReLU kernels by element type, for the
	// separate-pass mode; nil until useTriad, reluErr why they are not
	// there when loading them failed.
	relu    map[dtype]*cudaload.Function
	reluErr error
}

// Name implements backend.
func (b *matmulBackend) Name() string { return "detgemm" }

// Modes implements backend: the IEEE tier's modes for every type, the
// tensor-core tier's for bf16 and f16.
func (b *matmulBackend) Modes(dt dtype) []string {
	all := mmModeNames()
	if dt == f32 {
		return all[:len(mmModes)]
	}
	return all
}

// Close implements backend; the engine belongs to the engine backend.
func (b *matmulBackend) Close() error { return nil }

// The triad family's ReLU kernels (kernels/cuda/triad.cu).
const (
	triadFamily    = "triad"
	kernTriadRelu  = "detgemm_triad_relu_"
	triadThreads   = 256
	triadMaxBlocks = 1 << 16
)

// useTriad finds the triad's ReLU kernels in the bundle and loads their
// module; the module stays loaded for the run (closed by the caller). On
// failure the error is also kept for the rows that needed the kernels.
func (b *matmulBackend) useTriad(ctx *cudaload.Context, bundle *kernels.Bundle) (mod *cudaload.Module, err error) {
	defer func() { b.reluErr = err }()
	return b.loadTriad(ctx, bundle)
}

func (b *matmulBackend) loadTriad(ctx *cudaload.Context, bundle *kernels.Bundle) (*cudaload.Module, error) {
	if bundle == nil {
		return nil, errors.New("no kernel bundle")
	}
	m, ok := bundle.Modules[triadFamily]
	if !ok {
		return nil, fmt.Errorf("kernel family %s missing from the build", triadFamily)
	}
	mod, err := ctx.LoadModule(m.CUBIN)
	if err != nil {
		return nil, fmt.Errorf("loading %s: %w", triadFamily, err)
	}
	b.relu = map[dtype]*cudaload.Function{}
	for _, dt := range []dtype{bf16, f16, f32} {
		fn, err := mod.Function(kernTriadRelu + string(dt))
		if err != nil {
			_ = mod.Close()
			b.relu = nil
			return nil, err
		}
		b.relu[dt] = fn
	}
	return mod, nil
}

// separatePass reports whether the mode adds a second launch after the
// product (the unfused pairs).
func (m mmMode) separatePass() bool { return m.reluPass || m.gatePass != 0 }

// wantsMatmul reports whether --modes asked for a Matmul mode.
func wantsMatmul(modes []string) bool {
	for _, m := range modes {
		if _, _, ok := lookupMM(m); ok {
			return true
		}
	}
	return false
}

// mmDesc is the description a mode plans for a problem.
func mmDesc(m mmMode, tc bool, p problem) gemm.MatmulDesc {
	in, tier := engineDType(p.DType)
	if tc {
		tier = gemm.TierTensorCore
	}
	s := p.Shape
	d := gemm.MatmulDesc{Tier: tier, In: in, Out: in, M: s.M, N: s.N, K: s.K, TransA: m.transA, TransB: m.transB,
		Alpha: 1, Epilogue: m.epi, ReduceOverBatch: m.batch}
	if m.strided {
		d.LDA, d.LDB, d.LDD = s.K+stridePad, s.N+stridePad, s.N+stridePad
	}
	return d
}

// The buffers each epilogue uses, beside A, B and D (docs/contract.md,
// section Matmul).
func epiBias(e gemm.Epilogue) bool {
	return slices.Contains([]gemm.Epilogue{gemm.Bias, gemm.ReluBias, gemm.ReluAuxBias, gemm.GeluBias, gemm.GeluAuxBias,
		gemm.GatedGLUBias, gemm.GatedGLUAuxBias, gemm.GatedReGLUBias, gemm.GatedReGLUAuxBias,
		gemm.GatedSwiGLUBias, gemm.GatedSwiGLUAuxBias, gemm.GatedGeGLUBias, gemm.GatedGeGLUAuxBias}, e)
}

func epiBiasGrad(e gemm.Epilogue) bool {
	return slices.Contains([]gemm.Epilogue{gemm.DReluBgrad, gemm.DGeluBgrad, gemm.BgradA, gemm.BgradB}, e)
}

// epiAux says whether the epilogue uses an aux, whether it is a ReLU mask
// (bytes) rather than a GELU pre-activation (of Out), and whether it is
// read (made first by the forward epilogue fwd) rather than written.
func epiAux(e gemm.Epilogue) (uses, mask, read bool, fwd gemm.Epilogue) {
	switch e {
	case gemm.ReluAux, gemm.ReluAuxBias:
		return true, true, false, 0
	case gemm.GeluAux, gemm.GeluAuxBias:
		return true, false, false, 0
	case gemm.DRelu, gemm.DReluBgrad:
		return true, true, true, gemm.ReluAuxBias
	case gemm.DGelu, gemm.DGeluBgrad:
		return true, false, true, gemm.GeluAuxBias
	}
	return false, false, false, 0
}

// epiGated gives a gated epilogue's D and aux widths (docs/contract.md,
// "Gated epilogues") on a product n wide: the forward writes n/2 outputs
// and, with an aux, the n pre-activations; the backward reads 2n
// pre-activations and writes 2n gradients. auxCols is 0 without an aux;
// ok is false for every other epilogue (D n wide, epiAux's aux).
func epiGated(e gemm.Epilogue, n int) (dCols, auxCols int, ok bool) {
	switch {
	case e.Gate() == 0:
		return 0, 0, false
	case e.GatedBackward():
		return 2 * n, 2 * n, true
	case slices.Contains([]gemm.Epilogue{gemm.GatedGLUAux, gemm.GatedGLUAuxBias, gemm.GatedReGLUAux, gemm.GatedReGLUAuxBias,
		gemm.GatedSwiGLUAux, gemm.GatedSwiGLUAuxBias, gemm.GatedGeGLUAux, gemm.GatedGeGLUAuxBias}, e):
		return n / 2, n, true
	}
	return n / 2, 0, true
}

// gatePassDesc is the separate pass of a gatePass mode: the gate over the
// product D (M×N, its 8-column blocks alternating a and b, as the gated
// epilogues read it), M rows of N/2 outputs.
func gatePassDesc(m mmMode, p problem) gemm.GatedDesc {
	in, _ := engineDType(p.DType)
	return gemm.GatedDesc{Gate: m.gatePass, Type: in, Layout: gemm.GatedBlocks8, Rows: p.Shape.M, N: p.Shape.N / 2}
}

// Prepare implements backend: the plan (made once here, so a timed launch
// only runs it), and the epilogue's buffers, random: one f32 bias and one
// f32 bias gradient per problem (vectors that stay in L2 in real use
// too); one aux per input set, so it rotates with the inputs: written by
// the Aux epilogues (filled first with random values, or random mask
// bytes 0 and 1), or, for DGelu and DRelu, written by a GeluAuxBias or
// ReluAuxBias run of the same tier on that set before any timing; the
// gated epilogues' as gatedBuffers says, with the backward's wider D. The
// strided modes get padded copies of the sets; the ReLU separate-pass mode
// one more M×N output per set, the gated one an M×N/2 output. A panic inside the engine becomes the row's
// error, so one failing mode does not end the run.
func (b *matmulBackend) Prepare(ctx *cudaload.Context, _ *cudaload.Stream, p problem, sets []inputSet) (_ runner, err error) {
	m, tc, ok := lookupMM(p.Mode)
	if !ok {
		return nil, fmt.Errorf("detgemm has no Matmul mode %q", p.Mode)
	}
	if tc && p.DType == f32 {
		return nil, fmt.Errorf("the tensor-core tier takes bf16 or f16, not f32")
	}
	if len(sets) == 0 {
		return nil, fmt.Errorf("no input sets")
	}
	r := &mmRunner{b: b, bufs: deviceBuffers{ctx: ctx}}
	defer func() {
		if v := recover(); v != nil {
			err = fmt.Errorf("gemm panicked: %v", v)
		}
		if err != nil {
			err = errors.Join(err, r.Close())
		}
	}()
	if err := r.prepare(m, tc, p, sets); err != nil {
		return nil, err
	}
	return r, nil
}

type mmRunner struct {
	b    *matmulBackend
	plan *gemm.MatmulPlan
	args []gemm.MatmulArgs // one per input set, made by Prepare
	bufs deviceBuffers
	// The separate pass: the kernel, its output per set (reluStride
	// bytes apart) and its element count.
	relu       *cudaload.Function
	reluOut    cudaload.DevicePtr
	reluStride uint64
	reluN      uint64
	reluArgs   cudaload.Args
	// The gated separate pass: its description (Gate 0: none) and its
	// output per set (gateStride bytes apart).
	gate       gemm.GatedDesc
	gateOut    cudaload.DevicePtr
	gateStride uint64
}

func (r *mmRunner) prepare(m mmMode, tc bool, p problem, sets []inputSet) error {
	b, s := r.b, p.Shape
	desc := mmDesc(m, tc, p)
	plan, err := b.eng.Plan(desc)
	if err != nil {
		return fmt.Errorf("Plan: %w", err)
	}
	r.plan = plan
	r.args = make([]gemm.MatmulArgs, len(sets))
	for i, set := range sets {
		r.args[i] = gemm.MatmulArgs{A: set.A, B: set.B, D: set.Y}
	}
	if m.strided {
		pad, err := makePadded(&r.bufs, b.im, s, p.DType, len(sets))
		if err != nil {
			return err
		}
		for i, ps := range pad.sets {
			r.args[i].A, r.args[i].B, r.args[i].D = ps.A, ps.B, ps.D
		}
	}
	N := uint64(s.N)
	mn := uint64(s.M) * N
	var bias cudaload.DevicePtr
	if epiBias(m.epi) || epiBiasGrad(m.epi) {
		// The read epilogues' forward run needs a bias too.
		if bias, err = r.bufs.alloc("bias", N*4); err != nil {
			return err
		}
		if err := b.im.fillRandom(bias, s, f32, 1, N, N*4, 'v'); err != nil {
			return err
		}
	}
	if epiBias(m.epi) {
		for i := range r.args {
			r.args[i].Bias = bias
		}
	}
	if epiBiasGrad(m.epi) {
		bg, err := r.bufs.alloc("bias gradient", N*4)
		if err != nil {
			return err
		}
		if err := b.im.fillRandom(bg, s, f32, 1, N, N*4, 'g'); err != nil {
			return err
		}
		for i := range r.args {
			r.args[i].BiasGrad = bg
		}
	}
	if dCols, auxCols, ok := epiGated(m.epi, s.N); ok {
		if err := r.gatedBuffers(p, len(sets), dCols, auxCols); err != nil {
			return err
		}
	}
	if uses, mask, read, fwd := epiAux(m.epi); uses {
		esize := uint64(p.DType.Size())
		if mask {
			esize = 1
		}
		aux, stride, err := r.bufs.perSet("aux", len(sets), mn*esize)
		if err != nil {
			return err
		}
		for i := range r.args {
			r.args[i].Aux = aux + cudaload.DevicePtr(uint64(i)*stride)
		}
		switch {
		case read:
			if err := r.forwardAux(desc, fwd, bias, sets); err != nil {
				return err
			}
		case mask:
			err = b.im.fillMask(aux, s, len(sets), mn, stride, 'x')
		default:
			err = b.im.fillRandom(aux, s, p.DType, len(sets), mn, stride, 'x')
		}
		if err != nil {
			return err
		}
	}
	if m.reluPass {
		if r.relu = b.relu[p.DType]; r.relu == nil {
			return fmt.Errorf("the triad's ReLU kernel for %s is not loaded: %w", p.DType, b.reluErr)
		}
		out, stride, err := r.bufs.perSet("ReLU output", len(sets), mn*uint64(p.DType.Size()))
		if err != nil {
			return err
		}
		r.reluOut, r.reluStride, r.reluN = out, stride, mn
	}
	if m.gatePass != 0 {
		if s.N%2 != 0 {
			return fmt.Errorf("%s: N = %d is not even", m.name, s.N)
		}
		out, stride, err := r.bufs.perSet("gated output", len(sets), mn/2*uint64(p.DType.Size()))
		if err != nil {
			return err
		}
		r.gate, r.gateOut, r.gateStride = gatePassDesc(m, p), out, stride
	}
	return nil
}

// gatedBuffers readies a gated epilogue's D and aux per set. The forward's
// D (M × N/2) fits in the set's Y (M × N); the backward's (M × 2N) gets a
// buffer per set. The aux (M × auxCols of the output type) is one per set,
// random in [-1, 1): the forward's is written by every launch; the
// backward's is read, and holds random pre-activations rather than a
// forward run's, since that run's product would be 2N wide and the sets'
// B is K × N (the gate's arithmetic does not depend on where its inputs
// came from, only their range; [-1, 1) is a sane one).
func (r *mmRunner) gatedBuffers(p problem, nsets, dCols, auxCols int) error {
	s, size := p.Shape, uint64(p.DType.Size())
	if dCols > s.N {
		d, stride, err := r.bufs.perSet("gated D", nsets, uint64(s.M)*uint64(dCols)*size)
		if err != nil {
			return err
		}
		for i := range r.args {
			r.args[i].D = d + cudaload.DevicePtr(uint64(i)*stride)
		}
	}
	if auxCols == 0 {
		return nil
	}
	elems := uint64(s.M) * uint64(auxCols)
	aux, stride, err := r.bufs.perSet("aux", nsets, elems*size)
	if err != nil {
		return err
	}
	for i := range r.args {
		r.args[i].Aux = aux + cudaload.DevicePtr(uint64(i)*stride)
	}
	return r.b.im.fillRandom(aux, s, p.DType, nsets, elems, stride, 'x')
}

// forwardAux writes each set's aux with the forward epilogue fwd (NN,
// dense, the same tier and shape), as training would before the backward
// product reads it.
func (r *mmRunner) forwardAux(desc gemm.MatmulDesc, fwd gemm.Epilogue, bias cudaload.DevicePtr, sets []inputSet) error {
	fd := desc
	fd.Epilogue, fd.TransA, fd.TransB, fd.LDA, fd.LDB, fd.LDD, fd.ReduceOverBatch = fwd, false, false, 0, 0, 0, false
	plan, err := r.b.eng.Plan(fd)
	if err != nil {
		return fmt.Errorf("Plan of the %v run that writes the aux: %w", fwd, err)
	}
	for i, set := range sets {
		if err := plan.Run(gemm.MatmulArgs{A: set.A, B: set.B, D: set.Y, Bias: bias, Aux: r.args[i].Aux}); err != nil {
			return fmt.Errorf("the %v run that writes the aux: %w", fwd, err)
		}
	}
	return r.b.stream.Synchronize()
}

// Launch implements runner: the plan's Run on set i, then the separate
// pass if the mode has one (the triad's ReLU, or GatedForward). A panic
// inside the engine becomes an error.
func (r *mmRunner) Launch(i int) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = fmt.Errorf("gemm panicked: %v", v)
		}
	}()
	a := r.args[i]
	if err := r.plan.Run(a); err != nil {
		return err
	}
	if r.gate.Gate != 0 {
		out := r.gateOut + cudaload.DevicePtr(uint64(i)*r.gateStride)
		return r.b.eng.GatedForward(r.gate, gemm.GatedArgs{X: a.D, Y: out})
	}
	if r.relu == nil {
		return nil
	}
	out := r.reluOut + cudaload.DevicePtr(uint64(i)*r.reluStride)
	r.reluArgs.Reset().Ptr(a.D).Ptr(out).Uint64(r.reluN)
	blocks := uint32(min((r.reluN+triadThreads-1)/triadThreads, triadMaxBlocks))
	return r.relu.Launch(cudaload.LaunchConfig{
		Grid:   cudaload.Dim3{X: blocks, Y: 1, Z: 1},
		Block:  cudaload.Dim3{X: triadThreads, Y: 1, Z: 1},
		Stream: r.b.stream,
	}, &r.reluArgs)
}

// Close implements runner: the buffers Prepare made (the plan's workspace
// is the engine's).
func (r *mmRunner) Close() error { return r.bufs.free() }
