package gemm

import (
	"fmt"
	"math"

	"github.com/detgemm/detgemm/cudaload"
	"github.com/detgemm/detgemm/gemm/internal/entries"
)

// Sparse24Desc describes one 2:4-sparse forward on sparse tensor cores,
//
//	Y[M,N] = epilogue(X[M,K] · W[K,N] (+ bias)),
//
// where W keeps at most 2 of every 4 consecutive elements along K and is
// given compressed (Compress24's values, N × K/2 of In, and metadata, N ×
// ceil(K/32) words; docs/contract.md, "2:4 sparse format"). X is row-major
// with leading dimension LDX (0: K; a multiple of 8 so that its rows are
// whole 16-byte chunks); Y and the aux row-major with LDY and LDAux (0: N).
//
// The contract (docs/contract.md, "2:4 sparse forward"): per element the
// chain starts at bias[n] (or +0) and takes one sparse tensor-core step
// (mma.sp, or wgmma.sp on Hopper: the same bits) for every 32
// positions of K in ascending order, 16 kept products a step, added by the
// architecture's tensor-core model; then the epilogue and one rounding. A
// row of Y depends only on the same row of X, never on M: every tile the
// plan may pick runs that chain. gemm/ref's Options.Sparse24Forward
// computes the same bits on the CPU.
type Sparse24Desc struct {
	// In is X's and the values' type (BF16 or F16); Out is Y's (In or F32).
	In, Out DType
	M, N, K int
	// Leading dimensions in elements; 0 means the row length.
	LDX, LDY int
	// Epilogue: Default, Bias, Relu, ReluBias, ReluAux, ReluAuxBias,
	// Gelu, GeluBias, GeluAux or GeluAuxBias (Matmul's, with the same aux:
	// the GELU pre-activation of type Out, or the ReLU mask, a byte an
	// element).
	Epilogue Epilogue
	// LDAux is the aux's leading dimension; 0 means N.
	LDAux int
}

// Sparse24Args is the device memory of one sparse forward run.
type Sparse24Args struct {
	X cudaload.DevicePtr // M × K of In, 16-byte aligned
	// Values (N × K/2 of In, 16-byte aligned) and Meta (N × ceil(K/32)
	// uint32, 4-byte aligned): the compressed weight.
	Values, Meta cudaload.DevicePtr
	Y            cudaload.DevicePtr // M × N of Out
	Bias         cudaload.DevicePtr // N f32 for the epilogues with Bias in the name; else 0
	Aux          cudaload.DevicePtr // the aux for the Aux epilogues; else 0
}

// Sparse24Plan is a validated sparse forward bound to an engine, its
// kernel chosen: Run launches it without planning or allocating (CUDA-graph
// safe). Plans are safe for concurrent use.
type Sparse24Plan struct {
	e         *Engine
	d         Sparse24Desc
	id        kernelID
	tile      sp24Tile
	act       int32
	bias, aux bool
	mask      bool
	precision Precision
	// stage: the metadata staged in the workspace (sp24StageID) before a
	// wgmma.sp product, whose producer then copies a stage's at once; ws is
	// the workspace that takes, etRows the staged rows (N rounded up to 256).
	stage  bool
	ws     uint64
	etRows int64
}

// sp24Tile is one of gemm_sp24.cu's tile shapes, or (wg) one of
// gemm_sp24_wg.cu's, or (rows) one of gemm_sp24_rows.cu's: bn columns n of
// Y by bm rows m.
type sp24Tile struct {
	name            string
	bn, bm, threads int64
	shared          uint32
	wg              bool
	cluster         int64 // wg: blocks a cluster, stacked along n, sharing X by multicast
	rows            bool
}

// sp24Tiles mirror gemm_sp24.cu's CfgS, CfgM and CfgL (entries.SP24Tiles),
// gemm_sp24_wg.cu's T64, T128, T256 and T64x64 (entries.SP24WGTiles) and
// gemm_sp24_rows.cu's R8, R16 and R32 (entries.SP24RowsTiles).
var sp24Tiles = map[string]sp24Tile{
	"s": {"s", 32, 16, 128, 4 * (32*256 + 16*512 + 32*8*4), false, 1, false},
	"m": {"m", 64, 64, 128, 4 * (64*64 + 64*128 + 64*2*4), false, 1, false},
	"l": {"l", 128, 128, 128, 4 * (128*64 + 128*128 + 128*2*4), false, 1, false},
	// gemm_sp24_wg.cu's T64, T128, T256 and T64x64 (Tile::SMEM: the ring of V's
	// bn rows × 64 bytes and X's bm rows × 128 bytes a stage, 1 KiB of
	// alignment slack, the barriers, bm zero floats, 128 bytes of slack,
	// the metadata ring of bn rows × 8 bytes a stage), in clusters of two;
	// a consumer warpgroup per 64 rows n and a producer warpgroup.
	"w64":    {"w64", 64, 128, 256, sp24wgShared(64, 128, 10), true, 2, false},
	"w128":   {"w128", 128, 128, 384, sp24wgShared(128, 128, 8), true, 2, false},
	"w256":   {"w256", 128, 256, 384, sp24wgShared(128, 256, 5), true, 2, false},
	"w64x64": {"w64x64", 64, 64, 256, sp24wgShared(64, 64, 16), true, 2, false},
	// gemm_sp24_rows.cu's R8, R16, R32 (Rows::SMEM: 1 KiB of alignment
	// slack, then a stage's V box of 32 rows × 128 bytes, two X boxes of
	// mr rows × 128 bytes, two barriers and 32 rows × 16 bytes of
	// metadata), a consumer warp per 16 × 8 outputs and a producer warp.
	"r8":  {"r8", 32, 8, 96, sp24RowsShared(8, 10), false, 1, true},
	"r16": {"r16", 32, 16, 160, sp24RowsShared(16, 8), false, 1, true},
	"r32": {"r32", 32, 32, 288, sp24RowsShared(32, 5), false, 1, true},
}

// sp24RowsShared is gemm_sp24_rows.cu's Rows::SMEM for mr rows and stages.
func sp24RowsShared(mr, stages uint32) uint32 {
	return 1024 + stages*(32*128+2*mr*128+16+32*16)
}

// sp24wgShared is gemm_sp24_wg.cu's Tile::SMEM for bn rows n, bm rows m
// and stages.
func sp24wgShared(bn, bm, stages uint32) uint32 {
	return stages*(bn*64+bm*128) + 1024 + 2*stages*8 + bm*4 + 128 + stages*bn*8
}

// sp24wgTakesK reports whether gemm_sp24_wg's tiles run a reduction of
// length K: they issue both k32 steps of every stage of 64 positions, in
// pairs of stages, so the count of stages must be even and the last stage
// must reach into its second half (K % 128 of 0 or 112). Past K a step
// would add +0 products, which turn a -0 chain into +0 where the
// contract's chain has no such step; a conditional step or stage made
// ptxas 13 serialise the kernels' wgmma.
func sp24wgTakesK(K int) bool { return K%128 == 0 || K%128 == 112 }

// sp24StageID is gemm_sp24_wg.cu's detgemm_sp24wg_stage_meta.
var sp24StageID = indexOf(func(entries.Key) bool { return true }, "sp24wgstage")[true]

// sp24StageMTiles is the count of wgmma.sp row tiles m from which a plan
// stages the metadata: the staging pass reads E once and writes it once,
// while the product's loader reads it for every row tile, 8 bytes a row and
// stage in its own sector.
const sp24StageMTiles = 4

// sp24StageBytes is the staged metadata's workspace: two words for each of
// N (rounded up to 256) rows and each stage of 64 positions of K.
func sp24StageBytes(N, K int64) (ws uint64, etRows int64) {
	etRows = ceilDiv(N, 256) * 256
	return uint64(ceilDiv(K, 64) * etRows * 8), etRows
}

// sp24ForceTile, when set (tests only), is the tile every plan takes
// (a wgmma.sp tile only where it runs K: sp24wgTakesK).
var sp24ForceTile string

// sp24NoStage, when set (tests only), keeps every plan's metadata unstaged.
var sp24NoStage bool

// sp24Shared is the dynamic shared memory of a tile (build_share.go).
func sp24Shared(tile string) uint32 { return sp24Tiles[tile].shared }

type sp24Key struct {
	in, out DType
	tile    string
}

var sp24IDs = indexOf(func(k entries.Key) sp24Key { return sp24Key{dtypeOf(k.In), dtypeOf(k.Out), k.Tile} }, "sp24")

type sp24WGKey struct {
	in, out   DType
	tile, act string
}

var sp24WGIDs = indexOf(func(k entries.Key) sp24WGKey {
	return sp24WGKey{dtypeOf(k.In), dtypeOf(k.Out), k.Tile, k.Act}
}, "sp24wg")

var sp24RowsIDs = indexOf(func(k entries.Key) sp24Key { return sp24Key{dtypeOf(k.In), dtypeOf(k.Out), k.Tile} }, "sp24rows")

const (
	sp24Family     = entries.SP24Family
	sp24WGFamily   = entries.SP24WGFamily
	sp24RowsFamily = entries.SP24RowsFamily
)

// sp24ActName is an activation code's name in gemm_sp24_wg.cu's entries.
var sp24ActName = map[int32]string{0: "none", 1: "relu", 2: "gelu"}

// sp24Spec is what each epilogue the sparse forward takes asks of the
// kernel: its activation code (epilogue.cuh's ACT_*), a bias, an aux.
var sp24Spec = map[Epilogue]struct {
	act       int32
	bias, aux bool
}{
	Default: {0, false, false}, Bias: {0, true, false},
	Relu: {1, false, false}, ReluBias: {1, true, false}, ReluAux: {1, false, true}, ReluAuxBias: {1, true, true},
	Gelu: {2, false, false}, GeluBias: {2, true, false}, GeluAux: {2, false, true}, GeluAuxBias: {2, true, true},
}

// CanImplementSparse24 reports whether this engine can run d, and if not,
// why: the *ArgError PlanSparse24 would return (ErrDType, ErrDimension,
// ErrLeadingDim, ErrEpilogue, ErrTooLarge, ErrArch). It allocates nothing.
func (e *Engine) CanImplementSparse24(d Sparse24Desc) error {
	_, err := e.newSparse24Plan(d)
	return err
}

// PlanSparse24 validates d and chooses its kernel. A wgmma.sp plan of many
// row tiles takes a workspace for its staged metadata (WorkspaceBytes),
// allocated now so that Run never allocates; the errors are
// CanImplementSparse24's, or the allocation's.
func (e *Engine) PlanSparse24(d Sparse24Desc) (*Sparse24Plan, error) {
	p, err := e.newSparse24Plan(d)
	if err != nil {
		return nil, err
	}
	if err := e.reserveWorkspace("Sparse24Forward", p.ws); err != nil {
		return nil, err
	}
	return &p, nil
}

// Sparse24Forward enqueues one sparse forward on the engine's stream:
// PlanSparse24, then Run.
func (e *Engine) Sparse24Forward(d Sparse24Desc, a Sparse24Args) error {
	p, err := e.PlanSparse24(d)
	if err != nil {
		return err
	}
	return p.Run(a)
}

func (e *Engine) newSparse24Plan(d Sparse24Desc) (Sparse24Plan, error) {
	const op = "Sparse24Forward"
	p := Sparse24Plan{e: e, d: d}
	if e.arch.Major < 8 {
		return p, argErr(op, "Engine", ErrArch, "%v has no sparse tensor cores (sm_80 or newer)", e.arch)
	}
	if d.In != BF16 && d.In != F16 {
		return p, argErr(op, "In", ErrDType, "%v: the sparse tensor cores take BF16 or F16", d.In)
	}
	if d.Out != d.In && d.Out != F32 {
		return p, argErr(op, "Out", ErrDType, "%v: want the input type %v or F32", d.Out, d.In)
	}
	spec, ok := sp24Spec[d.Epilogue]
	if !ok {
		return p, argErr(op, "Epilogue", ErrEpilogue, "%v: the sparse forward takes Default, Bias, Relu, ReluBias, ReluAux, ReluAuxBias, Gelu, GeluBias, GeluAux or GeluAuxBias", d.Epilogue)
	}
	p.act, p.bias, p.aux = spec.act, spec.bias, spec.aux
	p.mask = spec.aux && spec.act == 1
	switch {
	case d.M < 0 || d.N <= 0 || d.K <= 0:
		return p, argErr(op, "M", ErrDimension, "M %d, N %d, K %d: M must not be negative, N and K positive", d.M, d.N, d.K)
	case d.K%16 != 0:
		return p, argErr(op, "K", ErrDimension, "%d is not a multiple of 16: the compressed rows (K/2 values) are whole 16-byte chunks; pad K with zero groups", d.K)
	case d.N > math.MaxInt32/2 || d.K > math.MaxInt32/2:
		return p, argErr(op, "N", ErrTooLarge, "N %d, K %d: at most %d each", d.N, d.K, math.MaxInt32/2)
	}
	var err error
	if p.d.LDX, err = gatedLD(op, "LDX", d.LDX, d.M, d.K); err != nil {
		return p, err
	}
	if p.d.LDX%8 != 0 {
		return p, argErr(op, "LDX", ErrLeadingDim, "%d is not a multiple of 8: X's rows are read as 16-byte chunks", p.d.LDX)
	}
	if p.d.LDY, err = gatedLD(op, "LDY", d.LDY, d.M, d.N); err != nil {
		return p, err
	}
	if spec.aux {
		if p.d.LDAux, err = gatedLD(op, "LDAux", d.LDAux, d.M, d.N); err != nil {
			return p, err
		}
	} else if d.LDAux != 0 {
		return p, argErr(op, "LDAux", ErrLeadingDim, "%d given, but %v has no aux; leave it 0", d.LDAux, d.Epilogue)
	}
	name := sp24TileFor(e, d, p.act)
	if sp24ForceTile != "" && (!sp24Tiles[sp24ForceTile].wg || sp24wgTakesK(d.K)) {
		name = sp24ForceTile
	}
	var id kernelID
	switch {
	case sp24Tiles[name].wg:
		id = sp24WGIDs[sp24WGKey{d.In, d.Out, name, sp24ActName[p.act]}]
	case sp24Tiles[name].rows:
		id = sp24RowsIDs[sp24Key{d.In, d.Out, name}]
	default:
		id = sp24IDs[sp24Key{d.In, d.Out, name}]
		if name == "l" && !e.loaded(id) {
			name = "m" // a GPU whose blocks cannot take the 128 × 128 tile's shared memory
			id = sp24IDs[sp24Key{d.In, d.Out, name}]
		}
	}
	p.id, p.tile = id, sp24Tiles[name]
	if p.tile.wg && !sp24NoStage && ceilDiv(int64(d.M), p.tile.bm) >= sp24StageMTiles {
		p.stage = true
		p.ws, p.etRows = sp24StageBytes(int64(d.N), int64(d.K))
	}
	if ceilDiv(int64(d.M), p.tile.bm)*ceilDiv(int64(d.N), p.tile.bn) > math.MaxInt32 {
		return p, argErr(op, "M", ErrTooLarge, "%d × %d outputs: more than 2^31-1 tiles of %d × %d", d.M, d.N, p.tile.bm, p.tile.bn)
	}
	instr := "mma.sp"
	if p.tile.wg {
		instr = "wgmma.sp"
	}
	p.precision = Precision{Math: "sparse tensor-core k32 chains (" + instr + ": 16 kept products a step)", Accumulator: F32,
		Reduction:     "one chain per element: bias (or +0), then one sparse k32 step per 32 positions of K, ascending",
		Deterministic: true, BatchInvariant: true, Arch: e.arch.String()}
	return p, nil
}

// sp24TileFor picks the tile of a plan from the families this engine
// loaded (sp24TileChoice).
func sp24TileFor(e *Engine, d Sparse24Desc, act int32) string {
	rows := func(t string) bool { return e.loaded(sp24RowsIDs[sp24Key{d.In, d.Out, t}]) }
	wg := e.loaded(sp24WGIDs[sp24WGKey{d.In, d.Out, "w128", sp24ActName[act]}]) && sp24wgTakesK(d.K)
	return sp24TileChoice(int64(d.M), int64(d.N), int64(e.sms), act, rows, wg)
}

// sp24TileChoice picks the tile for M × N on sms SMs. On Hopper
// (gemm_sp24_rows and gemm_sp24_wg present, rows and wg true): up to 32
// rows the TMA-fed rows tiles of 8 or 16 rows, or of 32 where the grid has
// at most a block an SM (its registers allow one); up to 64 rows the
// 32-row tile too where its grid is at most two blocks an SM (at
// 64 × 4096 × 4096 its 256 blocks beat the wgmma.sp tile's 32 and
// gemm_sp24's 64); past that the wgmma.sp tiles, 256 rows m where that
// still gives every SM a tile and the epilogue has no GELU, 64 columns n
// where the 128-column tile's grid would fill at most half the SMs and the
// 64-column one's fits them, except that up to 64 rows gemm_sp24's 64 × 64
// tile runs where its grid fills the SMs.
// Elsewhere gemm_sp24's mma.sp tiles by M. Every tile runs the same chain,
// so the choice never changes a bit.
func sp24TileChoice(M, N, sms int64, act int32, rows func(tile string) bool, wg bool) string {
	if M <= 32 {
		t := "r16"
		switch {
		case M <= 8:
			t = "r8"
		case M > 16 && ceilDiv(N, 32) <= sms:
			t = "r32"
		}
		if rows(t) {
			return t
		}
	}
	if wg && M > 32 && M <= 64 && ceilDiv(N, 64) >= sms/4 {
		return "w64x64" // the rows tiles run a 33-64-row batch as two of 32; this one computes 64 rows once
	}
	if M > 32 && M <= 64 && ceilDiv(N, 32)*ceilDiv(M, 32) <= 2*sms && rows("r32") {
		return "r32"
	}
	if M <= 16 {
		return "s"
	}
	if M <= 64 && ceilDiv(N, 64) >= sms {
		return "m" // its grid fills the SMs: faster than the wgmma.sp tile's fewer, larger blocks
	}
	if wg && M <= math.MaxInt32/2 { // TMA's coordinates are 32-bit
		if act != 2 && ceilDiv(N, 256)*ceilDiv(M, 256) >= sms/2 {
			return "w256"
		}
		if 2*ceilDiv(N, 256)*ceilDiv(M, 128) <= sms/2 && 2*ceilDiv(N, 128)*ceilDiv(M, 128) <= sms {
			return "w64" // the 128-column tile's grid would leave half the SMs idle; this one's still fits them
		}
		return "w128"
	}
	if M <= 128 {
		return "m"
	}
	return "l"
}

// Desc returns the description the plan was made for (leading dimensions
// resolved).
func (p *Sparse24Plan) Desc() Sparse24Desc { return p.d }

// WorkspaceBytes is the engine workspace the plan uses: the staged
// metadata of a wgmma.sp plan of many row tiles, else none.
func (p *Sparse24Plan) WorkspaceBytes() uint64 { return p.ws }

// Kernels names the entry point a Run launches.
func (p *Sparse24Plan) Kernels() []string {
	if p.id == 0 {
		return nil
	}
	if p.stage {
		return []string{sp24StageID.entry().Name, p.id.entry().Name}
	}
	return []string{p.id.entry().Name}
}

// Precision reports the plan's arithmetic and what its bits depend on.
func (p *Sparse24Plan) Precision() Precision { return p.precision }

// String describes the plan in one line.
func (p *Sparse24Plan) String() string {
	d := p.d
	return fmt.Sprintf("Sparse24Forward %v→%v M=%d N=%d K=%d %s: %v; %s", d.In, d.Out, d.M, d.N, d.K, d.Epilogue, p.Kernels(), p.precision.Reduction)
}

// Run enqueues the plan on a's memory. It checks the pointers (present
// where the epilogue needs them, absent where it does not, aligned, the
// outputs disjoint from every input and from each other) and launches
// nothing on a bad one.
func (p *Sparse24Plan) Run(a Sparse24Args) error {
	const op = "Sparse24Forward"
	d := p.d
	in, out := uint64(d.In.Size()), uint64(d.Out.Size())
	auxSize, auxAlign := out, out
	if p.mask {
		auxSize, auxAlign = 1, 1
	}
	kw := (d.K + 31) / 32
	rows := d.M
	none := rows == 0
	bufs := []callBuf{
		{mmBuf{"X", a.X, extentBytes(rows, d.K, d.LDX, int(in)), 16}, true, false, false, none},
		{mmBuf{"Values", a.Values, uint64(d.N) * uint64(d.K/2) * in, 16}, true, false, false, false},
		{mmBuf{"Meta", a.Meta, uint64(d.N) * uint64(kw) * 4, 4}, true, false, false, false},
		{mmBuf{"Y", a.Y, extentBytes(rows, d.N, d.LDY, int(out)), out}, true, false, true, none},
		{mmBuf{"Bias", a.Bias, uint64(d.N) * 4, 4}, p.bias, false, false, false},
		{mmBuf{"Aux", a.Aux, extentBytes(rows, d.N, max(d.LDAux, d.N), int(auxSize)), auxAlign}, p.aux, false, true, none},
	}
	if err := checkCallBufs(op, bufs, fmt.Sprintf("%v does not use it; pass 0", d.Epilogue)); err != nil {
		return err
	}
	e := p.e
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return ErrClosed
	}
	if d.M == 0 {
		return nil
	}
	l := launcher{e: &e.device}
	prob := problem{op: op, in: d.In, out: d.Out}
	if err := l.need(&prob, p.id); err != nil {
		return err
	}
	if p.stage {
		if err := l.need(&prob, sp24StageID); err != nil {
			return err
		}
		if err := e.ws.holds(op, " of staged metadata", p.ws); err != nil {
			return err
		}
	}
	var aux, mask cudaload.DevicePtr
	if p.mask {
		mask = a.Aux
	} else {
		aux = a.Aux
	}
	t := p.tile
	if t.wg {
		return l.sp24wg(p, a, aux, mask)
	}
	if t.rows {
		return l.sp24rows(p, a, aux, mask)
	}
	l.e.args.Reset().Ptr(a.X).Int64(int64(d.LDX)).Ptr(a.Values).Ptr(a.Meta).Ptr(a.Y).Int64(int64(d.LDY)).Ptr(a.Bias).
		Ptr(aux).Ptr(mask).Int64(int64(d.LDAux)).Int32(p.act).Int64(int64(d.M)).Int64(int64(d.N)).Int64(int64(d.K))
	grid := cudaload.Dim3{X: uint32(ceilDiv(int64(d.N), t.bn) * ceilDiv(int64(d.M), t.bm)), Y: 1, Z: 1}
	return l.launch(&prob, p.id, grid, uint32(t.threads), t.shared, t.bm, t.bn)
}

// sp24Maps encodes the Hopper kernels' TMA maps into e.tmA and e.tmB: the
// values (K/2 per row, N rows) in boxes of vBox values × vRows rows with
// vSwizzle, and X (K per row, M rows) in boxes of 64 × xRows with the
// 128-byte swizzle; rows and positions past the matrices read as zeros.
// While recording (Explain) nothing is encoded.
func (l launcher) sp24Maps(d Sparse24Desc, a Sparse24Args, vBox, vRows uint32, vSwizzle int, xRows uint32) error {
	if l.rec != nil {
		return nil
	}
	e := l.e
	const l2, oob = cudaload.TensorMapL2Promotion256B, cudaload.TensorMapOOBFillNone
	err := e.tmEnc.Encode2D(&e.tmA, cudaload.TensorMapUint16, a.Values, uint64(d.K/2), uint64(d.N), uint64(d.K), vBox, vRows, vSwizzle, l2, oob)
	if err == nil {
		err = e.tmEnc.Encode2D(&e.tmB, cudaload.TensorMapUint16, a.X, uint64(d.K), uint64(d.M), uint64(d.LDX)*2, 64, xRows, cudaload.TensorMapSwizzle128B, l2, oob)
	}
	if err != nil {
		return fmt.Errorf("gemm.Sparse24Forward: encoding the TMA maps: %w", err)
	}
	return nil
}

// sp24wg encodes the TMA maps of the values (K/2 per row, N rows: a box of
// 32 values × the tile's bn rows, 64-byte swizzle) and of X (K per row, M rows: 64 ×
// bm/cluster, 128-byte swizzle) and launches gemm_sp24_wg's persistent
// grid of clusters.
func (l launcher) sp24wg(p *Sparse24Plan, a Sparse24Args, aux, mask cudaload.DevicePtr) error {
	d, t, e := p.d, p.tile, l.e
	// X's box: a tile's bm rows, or the bm/2 of them each block of a
	// cluster loads and multicasts.
	if err := l.sp24Maps(d, a, 32, uint32(t.bn), cudaload.TensorMapSwizzle64B, uint32(t.bm/t.cluster)); err != nil {
		return err
	}
	prob := problem{op: "Sparse24Forward", in: d.In, out: d.Out}
	var et cudaload.DevicePtr
	if p.stage {
		// The metadata staged first (gemm_sp24_wg.cu's
		// detgemm_sp24wg_stage_meta): a stage's two words of every row,
		// rows of a stage contiguous.
		et = e.ws.ptr
		kt := ceilDiv(int64(d.K), 64)
		e.args.Reset().Ptr(a.Meta).Int64(int64(d.N)).Int64(int64((d.K + 31) / 32)).Int64(kt).Ptr(et).Int64(p.etRows)
		grid := cudaload.Dim3{X: uint32(max(min(ceilDiv(kt*p.etRows, 256), int64(8*e.sms)), 1)), Y: 1, Z: 1}
		if err := l.launch(&prob, sp24StageID, grid, 256, 0, 0, 0); err != nil {
			return err
		}
	}
	e.args.Reset().TensorMap(&e.tmA).TensorMap(&e.tmB).Int64(int64(d.M)).Int64(int64(d.N)).Int64(int64(d.K)).
		Ptr(a.Meta).Ptr(et).Int64(p.etRows).Ptr(a.Y).Int64(int64(d.LDY)).Ptr(a.Bias).Ptr(aux).Ptr(mask).Int64(int64(d.LDAux))
	// Items: tiles, or with clusters that many tiles stacked along n; a
	// cluster's blocks are co-resident, so the grid is whole clusters.
	items := ceilDiv(int64(d.N), t.bn*t.cluster) * ceilDiv(int64(d.M), t.bm)
	blocks := t.cluster * max(min(items, int64(e.sms)/t.cluster), 1)
	return l.launch(&prob, p.id, cudaload.Dim3{X: uint32(blocks), Y: 1, Z: 1}, uint32(t.threads), t.shared, t.bm, t.bn)
}

// sp24rows encodes the TMA maps of the values (K/2 per row, N rows: a box
// of 64 values × 32 rows) and of X (K per row, M rows: 64 × the tile's
// rows), both with the 128-byte swizzle, and launches gemm_sp24_rows' grid
// of row tiles × 32-column blocks, row tiles fastest.
func (l launcher) sp24rows(p *Sparse24Plan, a Sparse24Args, aux, mask cudaload.DevicePtr) error {
	d, t, e := p.d, p.tile, l.e
	if err := l.sp24Maps(d, a, 64, 32, cudaload.TensorMapSwizzle128B, uint32(t.bm)); err != nil {
		return err
	}
	e.args.Reset().TensorMap(&e.tmA).TensorMap(&e.tmB).Ptr(a.Meta).Ptr(a.Y).Int64(int64(d.LDY)).Ptr(a.Bias).
		Ptr(aux).Ptr(mask).Int64(int64(d.LDAux)).Int32(p.act).Int64(int64(d.M)).Int64(int64(d.N)).Int64(int64(d.K))
	grid := cudaload.Dim3{X: uint32(ceilDiv(int64(d.N), t.bn) * ceilDiv(int64(d.M), t.bm)), Y: 1, Z: 1}
	prob := problem{op: "Sparse24Forward", in: d.In, out: d.Out}
	return l.launch(&prob, p.id, grid, uint32(t.threads), t.shared, t.bm, t.bn)
}
