package gemm

import (
	"fmt"
	"math"
	"math/bits"

	"github.com/detgemm/detgemm/cudaload"
	"github.com/detgemm/detgemm/gemm/internal/entries"
	"github.com/detgemm/detgemm/gemm/ref"
)

// Sentinels of Matmul's refusals, beside the package's others: gemm/ref's,
// so one errors.Is covers the engine and the CPU reference.
var (
	// ErrLeadingDim: a leading dimension is negative, below its row
	// length, or makes the matrix's extent overflow.
	ErrLeadingDim = ref.ErrLeadingDim
	// ErrOperand: a buffer the epilogue needs is missing (C with beta !=
	// 0, a bias, aux or bias gradient), or one is given that it does not
	// use.
	ErrOperand = ref.ErrOperand
	// ErrEpilogue: the Epilogue is not a known one, or not for this request.
	ErrEpilogue = ref.ErrEpilogue
	// ErrScale: an fp8 scaling, accumulation mode or quantization group
	// that is not known, or not for this request (block scales need
	// AccumPromoted).
	ErrScale = ref.ErrScale
)

// matmulFamily holds the general path's elementwise kernels;
// wgMatmulFamily the fused wgmma kernels (sm_90a).
const (
	matmulFamily   = entries.MatmulFamily
	wgMatmulFamily = entries.WGMatmulFamily
)

// mmRoute is how a plan runs: through one of the triad's ops (whose fast
// kernels compute exactly the request's bits), or the general path.
type mmRoute uint8

const (
	mmGeneral mmRoute = iota
	mmForward         // NN, alpha 1, beta 0, Default or Bias, contiguous
	mmDX              // NT, alpha 1, beta 0, Default, contiguous
	mmDW              // TN, alpha 1, beta 1, C == D of f32, Default, contiguous (+ReduceOverBatch for tensor cores)
	// Forward's (or DX's) kernels onto an f32 plane, then gemm_matmul's
	// epilogue from it: NN (NT without a bias), alpha 1, beta 0, A and B
	// contiguous, any other epilogue. The op's f32 output is the
	// request's pre-activation v exactly (docs/contract.md: alpha 1 and
	// beta 0 are Forward's and DX's steps), so the epilogue's start form
	// finishes it.
	mmForwardEpi
	mmDXEpi
)

// The fold forms and activation codes of gemm_matmul.cu and epilogue.cuh.
const (
	mmFormStart  = 0
	mmFormFold   = 1
	mmFormAlpha0 = 2

	mmActNone  = 0
	mmActRelu  = 1
	mmActGelu  = 2
	mmActDRelu = 3
	mmActDGelu = 4
)

// mmLayout is the general path's operand layout: whether op(A)'s rows
// (k contiguous) and op(B)'s columns (n contiguous) lie in memory as such.
type mmLayout struct{ aRC, bJC bool }

func (l mmLayout) String() string {
	s := [2]byte{'n', 'n'}
	if !l.aRC {
		s[0] = 't'
	}
	if !l.bJC {
		s[1] = 't'
	}
	return string(s[:])
}

// The general path's kernels, from the entry descriptions.
var (
	mmStartIDs = indexOf(func(k entries.Key) DType { return dtypeOf(k.Out) }, "mmstart")
	mmEpiIDs   = indexOf(func(k entries.Key) DType { return dtypeOf(k.Out) }, "mmepi")
	mmBgradIDs = indexOf(func(k entries.Key) DType { return dtypeOf(k.Out) }, "mmbgrad")
	mmBFoldID  = indexOf(func(entries.Key) bool { return true }, "mmbfold")[true]
	// IEEE slab partials: the triad's three layouts and TT.
	mmSlabsIDs = func() map[mmSlabsKey]kernelID {
		m := map[mmSlabsKey]kernelID{}
		for k, id := range slabsIDs {
			m[mmSlabsKey{mmLayoutOf(k.layout.String()), k.in}] = id
		}
		for k, id := range indexOf(func(k entries.Key) DType { return dtypeOf(k.In) }, "slabstt") {
			m[mmSlabsKey{mmLayout{false, false}, k}] = id
		}
		return m
	}()
	// Tensor-core chains onto f32 planes: dW's own entries for TN, the
	// tcacc entries for the other layouts.
	mmTCIDs = func() map[mmTCKey]kernelID {
		m := map[mmTCKey]kernelID{}
		for _, id := range indexOf(func(k entries.Key) string { return k.Tile + k.Layout + k.In + fmt.Sprint(k.Vec) }, "tcacc") {
			k := id.entry().Key
			m[mmTCKey{tileOf(k.Tile), mmLayoutOf(k.Layout), dtypeOf(k.In), k.Vec}] = id
		}
		for k, id := range tcTileIDs {
			if k.layout == layoutTN && k.out == F32 && k.tile != tcTile128 {
				m[mmTCKey{k.tile, mmLayout{false, true}, k.in, k.vec}] = id
			}
		}
		return m
	}()
)

// mmWGIDs: the fused wgmma kernels by tile, layout, types and activation.
var mmWGIDs = func() map[mmWGKey]kernelID {
	m := map[mmWGKey]kernelID{}
	for id, en := range kernelEntries {
		if en.Kind == "wgmm" {
			act := entries.ActCode(en.Act)
			if act < 0 {
				panic("gemm: fused Matmul entry " + en.Name + " has no known activation")
			}
			m[mmWGKey{tileOf(en.Tile), mmLayoutOf(en.Layout), dtypeOf(en.In), dtypeOf(en.Out), act}] = kernelID(id)
		}
	}
	return m
}()

type mmWGKey struct {
	tile    tcTile
	l       mmLayout
	in, out DType
	act     int // mmActNone ...
}

// mmDefaultWGTile is the fused kernels' widest tile, the only one of the
// gated epilogues.
const mmDefaultWGTile = tcTileWG128x256

// mmWGTiles are the fused kernels' tiles the engine chooses among, widest
// first.
var mmWGTiles = []tcTile{tcTileWG128x256, tcTileWG128x192}

// mmWGForceable are the fused kernels' tiles EnvMatmulFused may force: the
// chosen ones and the ping-pong tile.
var mmWGForceable = []tcTile{tcTileWG128x256, tcTileWG128x192, tcTileWG128x128P}

type mmSlabsKey struct {
	l  mmLayout
	in DType
}

type mmTCKey struct {
	tile tcTile
	l    mmLayout
	in   DType
	vec  bool
}

func mmLayoutOf(s string) mmLayout { return mmLayout{s[0] == 'n', s[1] == 'n'} }

// mmPlan is a validated description and its decisions.
type mmPlan struct {
	d         MatmulDesc // leading dimensions resolved
	route     mmRoute
	spec      mmSpec
	form      int
	slabs     int64 // S: the reduction's slabs
	slabL     int64 // their length (the last may be shorter)
	chunk     int64 // rows of D per round of the general path
	tcTile    tcTile
	wgTile    tcTile   // the fused wgmma kernel's tile; 0: the general path
	planeOff  uint64   // mmForwardEpi, mmDXEpi, gated: the plane's offset in the workspace
	gated     *mmGated // a gated epilogue's plan; nil for the others
	ctrBytes  uint64   // the routed op's arrival counters (its own buffer)
	wsBytes   uint64
	kernels   []string
	precision Precision
}

// mmSpec is what an epilogue reads and writes.
type mmSpec struct {
	bias          bool
	act           int
	auxOut, auxIn bool // the aux buffer is written / read
	mask          bool // the aux is a ReLU mask (bytes), else a GELU aux of Out
	bgrad         byte // 0, 'D' (rows of D), 'A' (k of op(A)), 'B' (k of op(B))
}

func specOf(ep Epilogue) mmSpec {
	switch ep {
	case Default:
		return mmSpec{}
	case Relu:
		return mmSpec{act: mmActRelu}
	case Bias:
		return mmSpec{bias: true}
	case ReluBias:
		return mmSpec{bias: true, act: mmActRelu}
	case ReluAux:
		return mmSpec{act: mmActRelu, auxOut: true, mask: true}
	case ReluAuxBias:
		return mmSpec{bias: true, act: mmActRelu, auxOut: true, mask: true}
	case Gelu:
		return mmSpec{act: mmActGelu}
	case GeluBias:
		return mmSpec{bias: true, act: mmActGelu}
	case GeluAux:
		return mmSpec{act: mmActGelu, auxOut: true}
	case GeluAuxBias:
		return mmSpec{bias: true, act: mmActGelu, auxOut: true}
	case DRelu:
		return mmSpec{act: mmActDRelu, auxIn: true, mask: true}
	case DReluBgrad:
		return mmSpec{act: mmActDRelu, auxIn: true, mask: true, bgrad: 'D'}
	case DGelu:
		return mmSpec{act: mmActDGelu, auxIn: true}
	case DGeluBgrad:
		return mmSpec{act: mmActDGelu, auxIn: true, bgrad: 'D'}
	case BgradA:
		return mmSpec{bgrad: 'A'}
	}
	if ep.Gate() != 0 {
		return gatedSpec(ep)
	}
	return mmSpec{bgrad: 'B'} // BgradB; validation admits only the valid ones
}

func (s mmSpec) aux() bool { return s.auxIn || s.auxOut }

func (p *mmPlan) layoutName() string { return mmLayout{!p.d.TransA, !p.d.TransB}.String() }

// EnvMatmulFused names the environment variable, read when an engine is
// made, that says how its Matmul plans use the fused wgmma kernels
// (Hopper): unset, "1" or "auto", the engine's choice; "0", never (the
// other paths, with the same bits); "wg128x256", "wg128x192" or "wg128x128p" (a tile's
// name), that tile for every request a fused kernel of it can run, also
// those Forward's and DX's kernels could. For comparing the paths; bits
// never depend on it. Any other value makes New fail.
const EnvMatmulFused = "DETGEMM_MATMUL_FUSED"

// mmFusedSetting parses EnvMatmulFused's value: whether the fused kernels
// are off, and the tile forced (0: the engine's choice).
func mmFusedSetting(v string) (off bool, force tcTile, err error) {
	switch v {
	case "", "1", "auto":
		return false, 0, nil
	case "0":
		return true, 0, nil
	}
	for _, t := range mmWGForceable {
		if v == wgGeometries[t].name {
			return false, t, nil
		}
	}
	return false, 0, fmt.Errorf("%s=%q: want 0, 1, auto, wg128x256, wg128x192 or wg128x128p", EnvMatmulFused, v)
}

// mmWorkspaceCap bounds the general path's planes: D is computed in
// rounds of rows (every row is its own chains, so the rounds change no
// bit) whose planes fit in it.
const mmWorkspaceCap = 256 << 20

// mmRoundRows is the rows of D per round when a row needs perRow bytes of
// planes: all M where they fit mmWorkspaceCap, else the most that fit,
// rounded down to a multiple of 256 rows (at least 256).
func mmRoundRows(M int64, perRow uint64) int64 {
	if rows := int64(mmWorkspaceCap / perRow); rows < M {
		return min(M, max(256, rows/256*256))
	}
	return M
}

// resolveLD applies ld's default (0: the row length) and checks it.
func mmResolveLD(arg string, ld, rows, cols int) (int, error) {
	switch {
	case ld == 0:
		ld = cols
	case ld < 0:
		return 0, argErr("Matmul", arg, ErrLeadingDim, "%d is negative", ld)
	case ld < cols:
		return 0, argErr("Matmul", arg, ErrLeadingDim, "%d is below the row length %d; the rows would overlap", ld, cols)
	}
	hi, lo := bits.Mul64(uint64(rows-1), uint64(ld))
	if hi != 0 || lo > math.MaxInt64/8-uint64(cols) {
		return 0, argErr("Matmul", arg, ErrLeadingDim, "%d rows of stride %d overflow 64-bit indexing", rows, ld)
	}
	return ld, nil
}

// newMatmulPlan validates d and decides how it runs on the engine.
func (e *Engine) newMatmulPlan(d MatmulDesc) (mmPlan, error) {
	const op = "Matmul"
	if err := checkTier(op, d.Tier, d.In, d.Out); err != nil {
		return mmPlan{}, err
	}
	if !d.Epilogue.Valid() {
		return mmPlan{}, argErr(op, "Epilogue", ErrEpilogue, "%v is not a known epilogue", d.Epilogue)
	}
	if d.Epilogue.Gate() != 0 {
		return e.planGated(d)
	}
	if err := checkDims(op, "M", d.M, "N", d.N, "K", d.K); err != nil {
		return mmPlan{}, err
	}
	if math.IsNaN(float64(d.Alpha)) || math.IsInf(float64(d.Alpha), 0) || math.IsNaN(float64(d.Beta)) || math.IsInf(float64(d.Beta), 0) {
		return mmPlan{}, argErr(op, "Alpha", ErrDimension, "alpha %g and beta %g must be finite", d.Alpha, d.Beta)
	}
	aRows, aCols, bRows, bCols := d.stored()
	// The leading dimensions of the operands the request uses (C only
	// with beta != 0, the aux only for an epilogue with one, as in the
	// CPU reference); an unused one only takes its default.
	var err error
	spec := specOf(d.Epilogue)
	for _, x := range []struct {
		arg        string
		ld         *int
		rows, cols int
		used       bool
	}{{"LDA", &d.LDA, aRows, aCols, true}, {"LDB", &d.LDB, bRows, bCols, true}, {"LDC", &d.LDC, d.M, d.N, d.Beta != 0},
		{"LDD", &d.LDD, d.M, d.N, true}, {"LDAux", &d.LDAux, d.M, d.N, spec.aux()}} {
		if !x.used {
			*x.ld = x.cols
			continue
		}
		if *x.ld, err = mmResolveLD(x.arg, *x.ld, x.rows, x.cols); err != nil {
			return mmPlan{}, err
		}
	}
	if ct := ceilDiv(int64(d.N), tileCols); ct > maxColTiles {
		return mmPlan{}, argErr(op, "N", ErrTooLarge, "%d columns need %d column tiles; the grid allows %d", d.N, ct, maxColTiles)
	}
	p := mmPlan{d: d, spec: spec}
	p.route = p.routeOf()
	switch {
	case p.route == mmDW || p.route == mmGeneral:
	case e.mmForce != 0 && e.wgFusable(&p):
		p.route = mmGeneral // the forced fused kernel, also where an op's kernels would do
	case (p.route == mmForwardEpi || p.route == mmDXEpi) && e.prefersFused(&p):
		p.route = mmGeneral // the fused kernel rather than the product onto f32 and the epilogue pass
	}
	p.precision = Precision{Math: "IEEE f32 FMA chains", Accumulator: F32, Deterministic: true, BatchInvariant: true,
		GPUIndependent: true, Arch: e.arch.String()}
	if d.Tier == TierTensorCore {
		p.precision.Math = "tensor-core k16 chains"
		p.precision.GPUIndependent = false
		p.precision.BatchInvariant = !d.ReduceOverBatch
	}
	switch p.route {
	case mmForwardEpi, mmDXEpi:
		return p, e.planRouteEpi(&p)
	case mmGeneral:
	default:
		return p, e.planRoute(&p)
	}
	return p, e.planGeneral(&p)
}

// routeOf is the triad op whose kernels compute exactly p's bits, if any.
func (p *mmPlan) routeOf() mmRoute {
	d := p.d
	plain := d.Alpha == 1 && d.LDAux == d.N
	switch {
	case !plain:
	case !d.TransA && !d.TransB && d.Beta == 0 && (d.Epilogue == Default || d.Epilogue == Bias) &&
		d.LDA == d.K && d.LDB == d.N && d.LDD == d.N:
		return mmForward
	case !d.TransA && d.TransB && d.Beta == 0 && d.Epilogue == Default && d.LDA == d.K && d.LDB == d.K && d.LDD == d.N:
		return mmDX
	case d.TransA && !d.TransB && d.Beta == 1 && d.Epilogue == Default && d.Out == F32 &&
		d.LDA == d.M && d.LDB == d.N && d.LDC == d.N && d.LDD == d.N && (d.ReduceOverBatch || d.Tier != TierTensorCore):
		return mmDW
	}
	if d.Alpha == 1 && d.Beta == 0 && !(d.Tier == TierTensorCore && d.ReduceOverBatch) {
		switch {
		case !d.TransA && !d.TransB && d.LDA == d.K && d.LDB == d.N:
			return mmForwardEpi
		case !d.TransA && d.TransB && !p.spec.bias && d.LDA == d.K && d.LDB == d.K:
			return mmDXEpi
		}
	}
	return mmGeneral
}

// routeCall is the triad call of a routed plan with a's pointers.
func (p *mmPlan) routeCall(a MatmulArgs) Call {
	d := p.d
	switch p.route {
	case mmForward:
		return ForwardArgs{Tier: d.Tier, M: d.M, K: d.K, N: d.N, X: a.A, W: a.B, Bias: a.Bias, Y: a.D, In: d.In, Out: d.Out}
	case mmDX:
		return DXArgs{Tier: d.Tier, M: d.M, N: d.K, K: d.N, DY: a.A, W: a.B, DX: a.D, In: d.In, Out: d.Out}
	case mmForwardEpi:
		return ForwardArgs{Tier: d.Tier, M: d.M, K: d.K, N: d.N, X: a.A, W: a.B, Bias: a.Bias, Y: a.D, In: d.In, Out: F32}
	case mmDXEpi:
		return DXArgs{Tier: d.Tier, M: d.M, N: d.K, K: d.N, DY: a.A, W: a.B, DX: a.D, In: d.In, Out: F32}
	}
	return DWArgs{Tier: d.Tier, M: d.K, K: d.M, N: d.N, X: a.A, DY: a.B, DW: a.D, In: d.In}
}

// planRoute plans a routed request through its op's planner.
func (e *Engine) planRoute(p *mmPlan) error {
	x, err := e.Explain(p.routeCall(MatmulArgs{}))
	if err != nil {
		return err
	}
	pl, err := e.planCall(p.routeCall(MatmulArgs{}))
	if err != nil {
		return err
	}
	p.wsBytes, p.ctrBytes = pl.ws, pl.ctrs
	p.slabs = x.Slabs
	for _, l := range x.Launches {
		p.kernels = append(p.kernels, l.Kernel)
	}
	p.precision.Reduction = fmt.Sprintf("%s's plan: K in %d slab(s), folded in slab order (runs as %s)", x.Op, x.Slabs, x.Op)
	return nil
}

// withRows is c, a ForwardArgs or DXArgs of a routed plan, for rows rows.
func withRows(c Call, rows int) Call {
	switch x := c.(type) {
	case ForwardArgs:
		x.M = rows
		return x
	case DXArgs:
		x.M = rows
		return x
	}
	return c
}

// planRouteEpi plans Forward's or DX's kernels onto an f32 plane in rounds
// of rows, each followed by the epilogue: the workspace is the op's own
// (at its start) and, after it, one round's plane.
func (e *Engine) planRouteEpi(p *mmPlan) error {
	d := p.d
	M, N := int64(d.M), int64(d.N)
	p.chunk = mmRoundRows(M, uint64(N)*4)
	var op uint64
	var x Explanation
	for _, rows := range []int64{p.chunk, M % p.chunk} {
		if rows == 0 {
			continue
		}
		c := withRows(p.routeCall(MatmulArgs{}), int(rows))
		ex, err := e.Explain(c)
		if err != nil {
			return err
		}
		pl, err := e.planCall(c)
		if err != nil {
			return err
		}
		if rows == p.chunk {
			x = ex
		}
		op, p.ctrBytes = max(op, pl.ws), max(p.ctrBytes, pl.ctrs)
	}
	p.planeOff = (op + 255) &^ 255
	p.wsBytes = p.planeOff + uint64(p.chunk)*uint64(N)*4
	if err := p.bgradWorkspace(); err != nil {
		return err
	}
	p.slabs, p.form = x.Slabs, mmFormStart
	for _, l := range x.Launches {
		p.kernels = append(p.kernels, l.Kernel)
	}
	p.kernels = append(p.kernels, mmEpiIDs[d.Out].entry().Name)
	if p.spec.bgrad != 0 {
		t := d.In
		if p.spec.bgrad == 'D' {
			t = d.Out
		}
		p.kernels = append(p.kernels, mmBgradIDs[t].entry().Name, mmBFoldID.entry().Name)
	}
	p.precision.Reduction = fmt.Sprintf("%s's plan onto f32: K in %d slab(s), folded in slab order; then the epilogue", x.Op, x.Slabs)
	return nil
}

// runRouteEpi enqueues a planRouteEpi plan (e.mu held).
func (p *mmPlan) runRouteEpi(e *Engine, a MatmulArgs) error {
	d := p.d
	l := launcher{e: &e.device}
	prob := problem{op: "Matmul", tier: d.Tier, in: d.In, out: d.Out}
	in, out := int64(d.In.Size()), int64(d.Out.Size())
	N := int64(d.N)
	id := mmEpiIDs[d.Out]
	if err := l.need(&prob, id); err != nil {
		return err
	}
	for i0 := int64(0); i0 < int64(d.M); i0 += p.chunk {
		rows := min(p.chunk, int64(d.M)-i0)
		plane := e.ws.ptr + cudaload.DevicePtr(p.planeOff)
		r := a
		r.A, r.D = a.A+cudaload.DevicePtr(i0*int64(d.LDA)*in), plane
		pr, err := withRows(p.routeCall(r), int(rows)).build(true)
		if err != nil {
			return err
		}
		if err := e.runLocked(pr, filter{}); err != nil {
			return err
		}
		aux, mask := cudaload.DevicePtr(0), cudaload.DevicePtr(0)
		if p.spec.mask {
			mask = a.Aux + cudaload.DevicePtr(i0*int64(d.LDAux))
		} else if a.Aux != 0 {
			aux = a.Aux + cudaload.DevicePtr(i0*int64(d.LDAux)*out)
		}
		D := a.D + cudaload.DevicePtr(i0*int64(d.LDD)*out)
		vec := mmEpiVec(N, int64(d.LDD), int64(d.LDAux), plane, D, aux, mask, uint64(out))
		e.args.Reset().Ptr(plane).Int64(1).Ptr(0).Int64(int64(d.LDC)).Ptr(D).Int64(int64(d.LDD)).Ptr(0).
			Ptr(aux).Ptr(mask).Int64(int64(d.LDAux)).Int64(rows).Int64(N).Float32(1).Float32(0).
			Int32(mmFormStart).Int32(int32(p.spec.act)).Int32(b2i(vec))
		if err := l.launch(&prob, id, mmEpiGrid(rows, N, vec, e.sms), mmThreads, 0, 1, mmEpiCols(vec)); err != nil {
			return err
		}
	}
	return p.bgrad(l, &prob, a)
}

// planGeneral plans the general path: the start values (tensor cores,
// alpha 1), the product's slab chains onto f32 planes, the epilogue kernel,
// the bias gradient.
func (e *Engine) planGeneral(p *mmPlan) error {
	d := &p.d
	M, K := int64(d.M), int64(d.K)
	tc := d.Tier == TierTensorCore
	switch {
	case d.Alpha == 0:
		p.form, p.slabs = mmFormAlpha0, 0
	case tc && d.Alpha == 1:
		p.form = mmFormStart
	default:
		p.form = mmFormFold
	}
	l := mmLayout{!d.TransA, !d.TransB}
	if p.form != mmFormAlpha0 {
		if tc {
			var s, L int
			if d.ReduceOverBatch {
				s, L = ref.TCDWSlabs(d.K, d.M, d.N)
			} else {
				s, L = ref.TCSlabs(d.K, d.N)
			}
			p.slabs, p.slabL = int64(s), int64(L)
			p.tcTile = tcTile256
			if _, ok := mmTCIDs[mmTCKey{tcTile256, l, d.In, true}]; !ok || tcSharedBytesRC(tcTile256, l.aRC, l.bJC) > e.tcShared || M < 128 {
				p.tcTile = tcTile64
			}
		} else {
			p.slabs, p.slabL = ceilDiv(K, ref.SlabLen), ref.SlabLen
			if p.slabs > maxGridYZ {
				return argErr("Matmul", "K", ErrTooLarge, "%d needs %d slabs; the grid allows %d", d.K, p.slabs, maxGridYZ)
			}
		}
	}
	if e.wgFusable(p) {
		p.wgTile = e.wgTileFor(p)
	}
	if err := p.planPlanes(); err != nil {
		return err
	}

	// The kernels, for Kernels() (16-byte aligned operands).
	name := func(id kernelID) string { return id.entry().Name }
	switch {
	case p.form == mmFormAlpha0:
	case p.wgTile != 0:
		p.kernels = append(p.kernels, name(mmWGIDs[mmWGKey{p.wgTile, l, d.In, d.Out, p.spec.act}]))
	case tc:
		if p.form == mmFormStart && (d.Beta != 0 || p.spec.bias) {
			p.kernels = append(p.kernels, name(mmStartIDs[d.Out]))
		}
		p.kernels = append(p.kernels, name(mmTCIDs[mmTCKey{p.tcTile, l, d.In, true}]))
	default:
		p.kernels = append(p.kernels, name(mmSlabsIDs[mmSlabsKey{l, d.In}]))
	}
	if p.wgTile == 0 {
		p.kernels = append(p.kernels, name(mmEpiIDs[d.Out]))
	}
	if p.spec.bgrad != 0 {
		t := d.In
		if p.spec.bgrad == 'D' {
			t = d.Out
		}
		p.kernels = append(p.kernels, name(mmBgradIDs[t]), name(mmBFoldID))
	}
	switch {
	case p.form == mmFormAlpha0:
		p.precision.Reduction = "no product (alpha = 0)"
	case tc:
		p.precision.Reduction = fmt.Sprintf("K in %d slab(s) of %d, each one chain of 16-wide steps, folded in slab order", p.slabs, p.slabL)
	default:
		p.precision.Reduction = fmt.Sprintf("K in %d slab(s) of %d, each one ascending fmaf chain from +0, folded in slab order", p.slabs, p.slabL)
	}
	return nil
}

// wgTileFor is the fused kernels' tile for p: the forced one, else, of
// the tiles with a kernel for p's layout, types and activation, the one
// of least modelled time (wgCost: rounds of tiles on the SMs; the wider on
// a tie). A row's bits are the same on every tile.
func (e *Engine) wgTileFor(p *mmPlan) tcTile {
	if e.mmForce != 0 {
		return e.mmForce
	}
	if e.prefersPingPong(p) {
		return tcTileWG128x128P
	}
	d := p.d
	l := mmLayout{!d.TransA, !d.TransB}
	q := problem{rows: int64(d.M), cols: int64(d.N)}
	best, bestCost := mmDefaultWGTile, 0.0
	for _, t := range mmWGTiles {
		if _, ok := mmWGIDs[mmWGKey{t, l, d.In, d.Out, p.spec.act}]; !ok || wgSharedBytes(t) > e.tcShared {
			continue
		}
		if c := wgCost(t, q, e.sms); bestCost == 0 || c < bestCost {
			best, bestCost = t, c
		}
	}
	return best
}

// mmFusedMinRounds is the rounds of fused tiles (tiles over SMs) from which
// a request that Forward's or DX's kernels could run with the epilogue pass
// after them takes the fused kernel instead, the engine left to choose,
// for the activations where the fused kernel measured faster: GELU (every
// kind but DGeluBgrad) and ReLU without its mask. It writes no f32 plane,
// but its epilogue runs while its tile's tensor cores wait, which the
// ReLU mask's byte stores and the bias gradients' extra pass do not repay
// (bench/NOTES-matmul.md, eleventh session). Fewer tiles than SMs keep the
// ops' kernels, whose few-row and narrow tiles fill the GPU where 128-row
// tiles cannot.
const mmFusedMinRounds = 1

// prefersFused reports whether the engine, left to choose, runs p, a
// request for Forward's or DX's kernels and the epilogue pass, as the
// fused kernel (mmFusedMinRounds).
func (e *Engine) prefersFused(p *mmPlan) bool {
	if e.prefersPingPong(p) {
		return e.wgFusable(p)
	}
	kind := p.spec.act == mmActGelu || p.spec.act == mmActDGelu || (p.spec.act == mmActRelu && !p.spec.mask)
	if !kind || p.spec.bgrad != 0 || e.sms <= 0 || !e.wgFusable(p) {
		return false
	}
	g := wgGeometries[e.wgTileFor(p)]
	return ceilDiv(int64(p.d.M), g.bm)*ceilDiv(int64(p.d.N), g.bn) >= mmFusedMinRounds*int64(e.sms)
}

// mmPingPongMinRounds is the rounds of the ping-pong tile's 128×128 tiles
// (tiles over SMs) from which prefersPingPong takes it: on fewer, its
// warpgroups have too few tiles to take turns over (2048×768×3072, 2.9
// rounds, measured no faster).
const mmPingPongMinRounds = 4

// prefersPingPong reports whether the engine, left to choose, runs p on
// the ping-pong tile (wg128x128p), where it measured faster than the
// engine's choice before it (bench/NOTES-matmul.md, thirteenth session, an
// NVIDIA H100 80GB HBM3; 4096³, 4096×1536×3072, 8192³, and the gated
// backward's 4096×4096×11008): the ReLU with its mask and its backward
// (DRelu, DReluBgrad; before, Forward's or DX's kernels and the epilogue
// pass) and the gated backward epilogues for K ≤ 4096 (8–17 % faster), and
// GELU's forward and DGelu for K ≤ 2048 (4–11 %). Longer reductions keep
// 128×256, whose main loop ran about 10 % faster at 8192³; DGeluBgrad and
// the gated forward measured slower on the ping-pong tile.
func (e *Engine) prefersPingPong(p *mmPlan) bool {
	d := p.d
	if e.sms <= 0 || e.mmUnfused || e.mmForce != 0 {
		return false
	}
	t := tcTileWG128x128P
	if _, ok := mmWGIDs[mmWGKey{t, mmLayout{!d.TransA, !d.TransB}, d.In, d.Out, p.spec.act}]; !ok || wgSharedBytes(t) > e.tcShared {
		return false
	}
	g := wgGeometries[t]
	if ceilDiv(int64(d.M), g.bm)*ceilDiv(int64(d.N), g.bn) < mmPingPongMinRounds*int64(e.sms) {
		return false
	}
	switch a := p.spec.act; {
	case a == mmActRelu && p.spec.mask, a == mmActDRelu, a >= entries.ActDGate:
		return d.K <= 4096
	case (a == mmActGelu || a == mmActDGelu) && p.spec.bgrad == 0:
		return d.K <= 2048
	}
	return false
}

// wgFusable reports whether a fused wgmma kernel can run p: Hopper, the
// tensor-core tier with one slab, a product (alpha != 0) whose chain does
// not start at beta·C (alpha 1 with beta != 0: see wgmma.cuh's INIT_MM),
// operand rows that can be 16-byte aligned (a Run whose pointers are not
// takes the general path, see run), 32-bit TMA coordinates, and a kernel
// for the tile, layout, types and activation.
func (e *Engine) wgFusable(p *mmPlan) bool {
	d := p.d
	if d.Tier != TierTensorCore || !e.hasWG || e.mmUnfused || d.Alpha == 0 || (d.Alpha == 1 && d.Beta != 0) {
		return false
	}
	s, _ := ref.TCSlabs(d.K, d.N)
	if d.ReduceOverBatch {
		s, _ = ref.TCDWSlabs(d.K, d.M, d.N)
	}
	if s != 1 {
		return false
	}
	const lim = math.MaxInt32 - 256
	for _, v := range []int{d.M, d.N, d.K, d.LDA, d.LDB} {
		if int64(v) > lim {
			return false
		}
	}
	if d.LDA%8 != 0 || d.LDB%8 != 0 {
		return false
	}
	t := e.wgTileFor(p)
	_, ok := mmWGIDs[mmWGKey{t, mmLayout{!d.TransA, !d.TransB}, d.In, d.Out, p.spec.act}]
	return ok && wgSharedBytes(t) <= e.tcShared
}

// planPlanes sets the general path's rounds of rows and the workspace:
// the slab planes of a round (none for the fused kernel or alpha = 0),
// or the bias gradient's slab sums where those are more.
func (p *mmPlan) planPlanes() error {
	d := &p.d
	M, N := int64(d.M), int64(d.N)
	// Rounds of rows whose planes fit the cap: a multiple of 256 rows
	// where there are more than 256.
	planes := max(p.slabs, 1)
	if p.form == mmFormAlpha0 {
		planes = 0
	}
	p.chunk = M
	if planes > 0 && p.wgTile == 0 {
		per := uint64(planes) * uint64(N) * 4
		p.chunk = mmRoundRows(M, per)
		hi, lo := bits.Mul64(per, uint64(p.chunk))
		if hi != 0 {
			return argErr("Matmul", "shape", ErrTooLarge, "%d planes of %d×%d f32 overflow 64 bits", planes, p.chunk, N)
		}
		p.wsBytes = lo
	}
	if err := p.bgradWorkspace(); err != nil {
		return err
	}

	return nil
}

// generalWorkspace is planPlanes for a fused plan's Run that takes the
// general path (operands the TMA cannot stage), and its allocation (e.mu
// held; refused while the stream captures, as every allocation is).
func (p *mmPlan) generalWorkspace(e *Engine) error {
	if err := p.planPlanes(); err != nil {
		return err
	}
	return e.ws.ensure("Matmul", p.wsBytes, e.stream.IsCapturing, e.ctx.MemAlloc)
}

// wgRun enqueues the fused wgmma kernel: TMA maps of A and B as the layout
// stores them, the start form's bias in the kernel's bias argument, the
// fold form's in Matmul's.
func (p *mmPlan) wgRun(l launcher, prob *problem, a MatmulArgs) error {
	e, d := l.e, p.d
	lay := mmLayout{!d.TransA, !d.TransB}
	id := mmWGIDs[mmWGKey{p.wgTile, lay, d.In, d.Out, p.spec.act}]
	if err := l.need(prob, id); err != nil {
		return err
	}
	g := wgGeometries[p.wgTile]
	M, N, K := uint64(d.M), uint64(d.N), uint64(d.K)
	dt := cudaload.TensorMapBFloat16
	if d.In == F16 {
		dt = cudaload.TensorMapFloat16
	}
	const sw, l2, oob = cudaload.TensorMapSwizzle128B, cudaload.TensorMapL2Promotion256B, cudaload.TensorMapOOBFillNone
	var err error
	// A clustered tile's block loads its share of A's rows (a box of
	// bm/cluster) and multicasts it.
	aBox := uint32(g.bm / max(g.cluster, 1))
	if lay.aRC {
		err = e.tmEnc.Encode2D(&e.tmA, dt, a.A, K, M, uint64(d.LDA)*2, 64, aBox, sw, l2, oob)
	} else {
		err = e.tmEnc.Encode2D(&e.tmA, dt, a.A, M, K, uint64(d.LDA)*2, 64, 64, sw, l2, oob)
	}
	if err == nil {
		if lay.bJC {
			err = e.tmEnc.Encode2D(&e.tmB, dt, a.B, N, K, uint64(d.LDB)*2, 64, 64, sw, l2, oob)
		} else {
			err = e.tmEnc.Encode2D(&e.tmB, dt, a.B, K, N, uint64(d.LDB)*2, 64, uint32(g.bn), sw, l2, oob)
		}
	}
	if err != nil {
		return fmt.Errorf("gemm.Matmul: encoding the TMA maps of %s: %w", g.name, err)
	}
	var startBias, foldBias, C cudaload.DevicePtr
	if p.spec.bias {
		if p.form == mmFormStart {
			startBias = a.Bias
		} else {
			foldBias = a.Bias
		}
	}
	if d.Beta != 0 { // the fold form (the start form with beta != 0 is not fused)
		C = a.C
	}
	aux, mask := a.Aux, cudaload.DevicePtr(0)
	if p.spec.mask {
		aux, mask = 0, a.Aux
	}
	e.args.Reset().TensorMap(&e.tmA).TensorMap(&e.tmB).Ptr(a.D).Ptr(startBias).
		Int64(int64(M)).Int64(int64(N)).Int64(int64(K)).Int64(int64(d.LDD)).
		Ptr(C).Int64(int64(d.LDC)).Ptr(foldBias).Ptr(aux).Ptr(mask).Int64(int64(d.LDAux)).
		Float32(d.Alpha).Float32(d.Beta).Int32(int32(p.form))
	// Items: tiles, or with clusters that many tiles side by side along n;
	// a cluster's blocks are co-resident, so the grid is whole clusters.
	cl := max(g.cluster, 1)
	items := ceilDiv(int64(M), g.bm) * ceilDiv(int64(N), g.bn*cl)
	blocks := cl * max(min(items, int64(max(e.sms, 1))/cl), 1)
	return l.launch(prob, id, cudaload.Dim3{X: uint32(blocks), Y: 1, Z: 1}, g.threads(), wgSharedBytes(p.wgTile), g.bm, g.bn)
}

// stored is A's and B's shapes as they lie in memory (rows × columns):
// op(A) is M×K, op(B) K×N, each transposed where the request says.
func (d MatmulDesc) stored() (aRows, aCols, bRows, bCols int) {
	aRows, aCols, bRows, bCols = d.M, d.K, d.K, d.N
	if d.TransA {
		aRows, aCols = d.K, d.M
	}
	if d.TransB {
		bRows, bCols = d.N, d.K
	}
	return aRows, aCols, bRows, bCols
}

// mmBuf is one operand's memory for the pointer checks.
type mmBuf struct {
	name  string
	ptr   cudaload.DevicePtr
	bytes uint64
	align uint64
}

// callBuf is one buffer of a call for checkCallBufs: its memory, whether
// the call uses it, may leave it 0 (optional) and writes it (out); empty
// marks a buffer the call touches none of (a problem without rows), which
// is checked but then takes no part in the overlap test.
type callBuf struct {
	mmBuf
	used, optional, out, empty bool
}

// checkCallBufs checks a call's buffers before anything is launched: a
// buffer the call does not use must be 0 (ErrOperand; unused says why),
// one it uses present (unless optional), aligned and not wrapping the
// address space; then no output may overlap any other buffer (ErrAlias).
// Unused, absent optional and empty buffers take no part in the overlap
// test.
func checkCallBufs(op string, bufs []callBuf, unused string) error {
	for i := range bufs {
		b := &bufs[i]
		switch {
		case !b.used && b.ptr != 0:
			return argErr(op, b.name, ErrOperand, "%s", unused)
		case !b.used || b.optional && b.ptr == 0:
			b.bytes = 0
			continue
		case b.ptr == 0:
			return argErr(op, b.name, ErrNilPointer, "device pointer is 0")
		case uint64(b.ptr)%b.align != 0:
			return argErr(op, b.name, ErrMisaligned, "pointer %#x is not aligned to %d bytes", b.ptr, b.align)
		case uint64(b.ptr)+b.bytes < uint64(b.ptr):
			return argErr(op, b.name, ErrTooLarge, "range %#x + %d bytes wraps the address space", b.ptr, b.bytes)
		}
		if b.empty {
			b.bytes = 0
		}
	}
	for i, o := range bufs {
		if !o.out || o.bytes == 0 {
			continue
		}
		for j, x := range bufs {
			if i == j || x.bytes == 0 {
				continue
			}
			if o.ptr < x.ptr+cudaload.DevicePtr(x.bytes) && x.ptr < o.ptr+cudaload.DevicePtr(o.bytes) {
				return argErr(op, o.name, ErrAlias, "[%#x, +%d) overlaps %s [%#x, +%d); outputs share memory with nothing", o.ptr, o.bytes, x.name, x.ptr, x.bytes)
			}
		}
	}
	return nil
}

func extentBytes(rows, cols, ld int, size int) uint64 {
	return (uint64(rows-1)*uint64(ld) + uint64(cols)) * uint64(size)
}

// checkArgs checks a's pointers against the plan.
func (p *mmPlan) checkArgs(a MatmulArgs) error {
	const op = "Matmul"
	d, s := p.d, p.spec
	aRows, aCols, bRows, bCols := d.stored()
	in, out := uint64(d.In.Size()), uint64(d.Out.Size())
	auxSize, auxAlign := int(out), out
	if s.mask {
		auxSize, auxAlign = 1, 1
	}
	dCols, auxCols := d.N, d.N
	if p.gated != nil {
		dCols, auxCols = gatedCols(d.Epilogue, d.N)
	}
	bgN := d.N
	if s.bgrad == 'A' {
		bgN = d.M
	}
	type use struct {
		b    mmBuf
		need bool
		out  bool
		why  string
	}
	uses := []use{
		{mmBuf{"A", a.A, extentBytes(aRows, aCols, d.LDA, int(in)), in}, true, false, ""},
		{mmBuf{"B", a.B, extentBytes(bRows, bCols, d.LDB, int(in)), in}, true, false, ""},
		{mmBuf{"C", a.C, extentBytes(d.M, d.N, d.LDC, int(out)), out}, d.Beta != 0, false, "beta != 0 reads C"},
		{mmBuf{"D", a.D, extentBytes(d.M, dCols, d.LDD, int(out)), out}, true, true, ""},
		{mmBuf{"Bias", a.Bias, uint64(d.N) * 4, 4}, s.bias, false, d.Epilogue.String() + " adds a bias"},
		{mmBuf{"Aux", a.Aux, extentBytes(d.M, auxCols, d.LDAux, auxSize), auxAlign}, s.aux(), s.auxOut, d.Epilogue.String() + " uses an aux"},
		{mmBuf{"BiasGrad", a.BiasGrad, uint64(bgN) * 4, 4}, s.bgrad != 0, true, d.Epilogue.String() + " accumulates a bias gradient"},
	}
	for _, u := range uses {
		b := u.b
		switch {
		case u.need && b.ptr == 0:
			if u.why == "" {
				return argErr(op, b.name, ErrNilPointer, "device pointer is 0")
			}
			return argErr(op, b.name, ErrOperand, "missing: %s", u.why)
		case !u.need && b.ptr != 0 && b.name != "C":
			return argErr(op, b.name, ErrOperand, "%v does not use it; pass 0", d.Epilogue)
		case b.ptr == 0:
			continue
		case uint64(b.ptr)%b.align != 0:
			return argErr(op, b.name, ErrMisaligned, "pointer %#x is not aligned to its %d-byte elements", b.ptr, b.align)
		case uint64(b.ptr)+b.bytes < uint64(b.ptr):
			return argErr(op, b.name, ErrTooLarge, "range %#x + %d bytes wraps the address space", b.ptr, b.bytes)
		}
	}
	// Outputs against every other buffer in use; D may be C exactly.
	for i, o := range uses {
		if !o.out || o.b.ptr == 0 {
			continue
		}
		for j, x := range uses {
			if i == j || x.b.ptr == 0 || (!x.need && x.b.name == "C") {
				continue
			}
			if o.b.name == "D" && x.b.name == "C" && a.C == a.D && d.LDC == d.LDD {
				continue
			}
			if o.b.ptr < x.b.ptr+cudaload.DevicePtr(x.b.bytes) && x.b.ptr < o.b.ptr+cudaload.DevicePtr(o.b.bytes) {
				return argErr(op, o.b.name, ErrAlias, "[%#x, +%d) overlaps %s [%#x, +%d)%s", o.b.ptr, o.b.bytes, x.b.name, x.b.ptr, x.b.bytes,
					map[bool]string{true: " (D may be C only as the same matrix: the same pointer and LDC == LDD)", false: ""}[o.b.name == "D" && x.b.name == "C"])
			}
		}
	}
	return nil
}

// run enqueues the plan (e.mu held).
func (p *mmPlan) run(e *Engine, a MatmulArgs) error {
	if p.gated != nil {
		return p.runGated(e, a)
	}
	switch p.route {
	case mmForwardEpi, mmDXEpi:
		return p.runRouteEpi(e, a)
	}
	if p.route != mmGeneral {
		c := p.routeCall(a)
		pr, err := c.build(true)
		if err != nil {
			return err
		}
		return e.runLocked(pr, filter{})
	}
	d := p.d
	l := launcher{e: &e.device}
	prob := problem{op: "Matmul", tier: d.Tier, in: d.In, out: d.Out}
	if p.wgTile != 0 {
		if a.A%16 == 0 && a.B%16 == 0 {
			if err := p.wgRun(l, &prob, a); err != nil {
				return err
			}
			return p.bgrad(l, &prob, a)
		}
		// Operands the TMA cannot stage: the general path, same bits.
		q := *p
		q.wgTile, q.tcTile = 0, tcTile64
		if err := q.generalWorkspace(e); err != nil {
			return err
		}
		p = &q
	}
	in, out := int64(d.In.Size()), int64(d.Out.Size())
	N := int64(d.N)
	lay := mmLayout{!d.TransA, !d.TransB}
	ws := e.ws.ptr
	for i0 := int64(0); i0 < int64(d.M); i0 += p.chunk {
		rows := min(p.chunk, int64(d.M)-i0)
		// op(A)'s rows i0… : offset along A's rows (NN) or columns (TN).
		aOff := i0 * int64(d.LDA) * in
		if d.TransA {
			aOff = i0 * in
		}
		A := a.A + cudaload.DevicePtr(aOff)
		if p.form != mmFormAlpha0 {
			if d.Tier == TierTensorCore {
				if err := p.tcProduct(l, &prob, a, A, i0, rows, lay); err != nil {
					return err
				}
			} else {
				id := mmSlabsIDs[mmSlabsKey{lay, d.In}]
				if err := l.need(&prob, id); err != nil {
					return err
				}
				e.args.Reset().Ptr(A).Ptr(a.B).Ptr(ws).Int64(rows).Int64(N).Int64(int64(d.K)).
					Int64(int64(d.LDA)).Int64(int64(d.LDB)).Int64(1)
				grid := cudaload.Dim3{X: uint32(ceilDiv(rows, tileRows)), Y: uint32(ceilDiv(N, tileCols)), Z: uint32(p.slabs)}
				if err := l.launch(&prob, id, grid, 256, 0, tileRows, tileCols); err != nil {
					return err
				}
			}
		}
		var C cudaload.DevicePtr
		if d.Beta != 0 {
			C = a.C + cudaload.DevicePtr(i0*int64(d.LDC)*out)
		}
		D := a.D + cudaload.DevicePtr(i0*int64(d.LDD)*out)
		aux := a.Aux
		if aux != 0 {
			es := out
			if p.spec.mask {
				es = 1
			}
			aux += cudaload.DevicePtr(i0 * int64(d.LDAux) * es)
		}
		var mask cudaload.DevicePtr
		if p.spec.mask {
			mask, aux = aux, 0
		}
		bias := a.Bias
		if p.form == mmFormStart {
			bias = 0 // in the chains' start values
		}
		id := mmEpiIDs[d.Out]
		if err := l.need(&prob, id); err != nil {
			return err
		}
		vec := mmEpiVec(N, int64(d.LDD), int64(d.LDAux), ws, D, aux, mask, uint64(out))
		e.args.Reset().Ptr(ws).Int64(p.slabs).Ptr(C).Int64(int64(d.LDC)).Ptr(D).Int64(int64(d.LDD)).Ptr(bias).
			Ptr(aux).Ptr(mask).Int64(int64(d.LDAux)).Int64(rows).Int64(N).Float32(d.Alpha).Float32(d.Beta).
			Int32(int32(p.form)).Int32(int32(p.spec.act)).Int32(b2i(vec))
		if err := l.launch(&prob, id, mmEpiGrid(rows, N, vec, e.sms), mmThreads, 0, 1, mmEpiCols(vec)); err != nil {
			return err
		}
	}
	return p.bgrad(l, &prob, a)
}

// mmEpiVec reports whether the epilogue kernel may take its vector path,
// four columns a thread with 4-wide accesses: N and the leading dimensions
// of D and of the aux or mask multiples of 4, the planes P 16-byte aligned,
// D and the aux aligned to 4 elements of the output (size out bytes), the
// mask to 4 bytes.
func mmEpiVec(N, ldd, ldaux int64, P, D, aux, mask cudaload.DevicePtr, out uint64) bool {
	switch {
	case N%4 != 0, ldd%4 != 0, uint64(P)%16 != 0, uint64(D)%(4*out) != 0:
		return false
	case (aux != 0 || mask != 0) && ldaux%4 != 0:
		return false
	case aux != 0 && uint64(aux)%(4*out) != 0, mask != 0 && uint64(mask)%4 != 0:
		return false
	}
	return true
}

// mmEpiCols is the columns a thread of the epilogue kernel takes.
func mmEpiCols(vec bool) int64 {
	if vec {
		return 4
	}
	return 1
}

// mmEpiGrid covers rows × N elements for the epilogue kernel.
func mmEpiGrid(rows, N int64, vec bool, sms int) cudaload.Dim3 {
	return mmGrid(rows, ceilDiv(N, mmEpiCols(vec)), sms)
}

// mmThreads is the elementwise kernels' block.
const mmThreads = 256

// mmGrid covers rows × n elements: column blocks on x, enough row blocks
// on y (each looping over its rows) to fill the GPU a few times.
func mmGrid(rows, n int64, sms int) cudaload.Dim3 {
	return mmGridPer(rows, n, sms, 16)
}

// mmGridPer is mmGrid with per blocks a multiprocessor.
func mmGridPer(rows, n int64, sms int, per int64) cudaload.Dim3 {
	x := ceilDiv(n, mmThreads)
	y := min(rows, maxGridYZ, max(1, ceilDiv(int64(max(sms, 1))*per, x)))
	return cudaload.Dim3{X: uint32(x), Y: uint32(y), Z: 1}
}

// tcProduct enqueues the tensor-core chains of rows rows of D (from row
// i0; A already offset there) onto the planes: plane 0 first holds each
// element's start value (z: bias, beta·C or both; +0 otherwise), slab 0's
// chain starts and ends there; slab s ≥ 1's chain starts at +0 on plane s.
func (p *mmPlan) tcProduct(l launcher, prob *problem, a MatmulArgs, A cudaload.DevicePtr, i0, rows int64, lay mmLayout) error {
	e, d := l.e, p.d
	N := int64(d.N)
	ws := e.ws.ptr
	plane := rows * N
	if p.form == mmFormStart && (d.Beta != 0 || p.spec.bias) {
		id := mmStartIDs[d.Out]
		if err := l.need(prob, id); err != nil {
			return err
		}
		var C, bias cudaload.DevicePtr
		if d.Beta != 0 {
			C = a.C + cudaload.DevicePtr(i0*int64(d.LDC)*int64(d.Out.Size()))
		}
		if p.spec.bias {
			bias = a.Bias
		}
		e.args.Reset().Ptr(ws).Ptr(C).Int64(int64(d.LDC)).Ptr(bias).Float32(d.Beta).Int64(rows).Int64(N)
		if err := l.launch(prob, id, mmGrid(rows, N, e.sms), mmThreads, 0, 1, 1); err != nil {
			return err
		}
	} else if l.rec == nil {
		if err := e.zero(ws, uint64(plane)*4); err != nil {
			return fmt.Errorf("gemm.Matmul: %w", err)
		}
	}
	vec := d.LDA%8 == 0 && d.LDB%8 == 0 && A%16 == 0 && a.B%16 == 0
	tile := p.tcTile
	if !vec {
		tile = tcTile64
	}
	id := mmTCIDs[mmTCKey{tile, lay, d.In, vec}]
	if err := l.need(prob, id); err != nil {
		return err
	}
	var rest cudaload.DevicePtr
	if p.slabs > 1 {
		rest = ws + cudaload.DevicePtr(plane*4)
	}
	e.args.Reset().Ptr(A).Ptr(a.B).Ptr(ws).Ptr(0).Int64(rows).Int64(N).Int64(int64(d.K)).
		Int64(int64(d.LDA)).Int64(int64(d.LDB)).Int64(N).Ptr(rest).Int64(p.slabL)
	g := tcGeometries[tile]
	grid := cudaload.Dim3{X: uint32(ceilDiv(rows, g.bm)), Y: uint32(ceilDiv(N, g.bn)), Z: uint32(p.slabs)}
	return l.launch(prob, id, grid, g.threads, tcSharedBytesRC(tile, lay.aRC, lay.bJC), g.bm, g.bn)
}

// bgradSum is the bias gradient's sum: X[q·sq + r·sr] of type t for q <
// Q, r < R.
func (p *mmPlan) bgradSum(a MatmulArgs) (X cudaload.DevicePtr, t DType, sq, sr, Q, R int64) {
	d := p.d
	switch p.spec.bgrad {
	case 'D':
		return a.D, d.Out, 1, int64(d.LDD), int64(d.N), int64(d.M)
	case 'A':
		if d.TransA {
			return a.A, d.In, 1, int64(d.LDA), int64(d.M), int64(d.K)
		}
		return a.A, d.In, int64(d.LDA), 1, int64(d.M), int64(d.K)
	case 'B':
		if d.TransB {
			return a.B, d.In, int64(d.LDB), 1, int64(d.N), int64(d.K)
		}
		return a.B, d.In, 1, int64(d.LDB), int64(d.N), int64(d.K)
	}
	return 0, 0, 0, 0, 0, 0
}

// bgradWorkspace checks the bias gradient's grid and makes the workspace
// hold its slab sums.
func (p *mmPlan) bgradWorkspace() error {
	if p.spec.bgrad == 0 {
		return nil
	}
	_, _, _, _, _, R := p.bgradSum(MatmulArgs{})
	if ceilDiv(R, ref.SlabLen) > maxGridYZ {
		return argErr("Matmul", "shape", ErrTooLarge, "the bias gradient sums %d terms: %d slabs; the grid allows %d", R, ceilDiv(R, ref.SlabLen), maxGridYZ)
	}
	p.wsBytes = max(p.wsBytes, p.bgradBytes())
	return nil
}

// bgradBytes is the workspace of the bias gradient's slab sums.
func (p *mmPlan) bgradBytes() uint64 {
	_, _, _, _, Q, R := p.bgradSum(MatmulArgs{})
	return uint64(Q) * uint64(ceilDiv(R, ref.SlabLen)) * 4
}

// bgrad enqueues the bias gradient, after every round of D: every slab's
// sum at once onto the workspace, then their fold onto BiasGrad.
func (p *mmPlan) bgrad(l launcher, prob *problem, a MatmulArgs) error {
	if p.spec.bgrad == 0 {
		return nil
	}
	X, t, sq, sr, Q, R := p.bgradSum(a)
	S := ceilDiv(R, ref.SlabLen)
	id := mmBgradIDs[t]
	if err := l.need(prob, id); err != nil {
		return err
	}
	ws := l.e.ws.ptr
	// Two adjacent columns a thread where a pair is one aligned access.
	pairs, perThread := int32(0), int64(1)
	if sq == 1 && Q%2 == 0 && sr%2 == 0 && uint64(X)%uint64(2*t.Size()) == 0 {
		pairs, perThread = 1, 2
	}
	l.e.args.Reset().Ptr(X).Int64(sq).Int64(sr).Int64(Q).Int64(R).Ptr(ws).Int32(pairs)
	if err := l.launch(prob, id, cudaload.Dim3{X: uint32(ceilDiv(ceilDiv(Q, perThread), mmThreads)), Y: uint32(S), Z: 1}, mmThreads, 0, 1, 1); err != nil {
		return err
	}
	if err := l.need(prob, mmBFoldID); err != nil {
		return err
	}
	l.e.args.Reset().Ptr(ws).Int64(S).Int64(Q).Ptr(a.BiasGrad)
	return l.launch(prob, mmBFoldID, cudaload.Dim3{X: uint32(ceilDiv(Q, mmThreads)), Y: 1, Z: 1}, mmThreads, 0, 1, 1)
}
