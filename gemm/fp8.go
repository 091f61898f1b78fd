package gemm

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/detgemm/detgemm/cudaload"
	"github.com/detgemm/detgemm/gemm/internal/entries"
	"github.com/detgemm/detgemm/gemm/ref"
)

// The 8-bit floating-point types (gemm/ref's): operands of FP8Matmul and
// outputs of QuantizeFP8 and FP8Matmul.
const (
	E4M3 = ref.E4M3 // OCP E4M3FN: no infinities, largest finite 448
	E5M2 = ref.E5M2 // OCP E5M2: ±Inf, largest finite 57344
)

// FP8Scaling is how an fp8 product's operands are scaled (gemm/ref's).
type FP8Scaling = ref.FP8Scaling

// The scalings: one scale for A and one for B; one per row of A and one per
// row of the stored B (per column of D); or blocks, 1 × 128 of A along K
// and 128 × 128 of the stored B (DeepSeek-V3's), which need AccumPromoted.
const (
	ScaleTensor = ref.ScaleTensor
	ScaleRow    = ref.ScaleRow
	ScaleBlock  = ref.ScaleBlock
)

// FP8Accum is an fp8 product's accumulation mode (gemm/ref's).
type FP8Accum = ref.FP8Accum

// The accumulation modes: a tensor-core chain over each 128 positions of K
// added into an f32 accumulator (promoted), or one chain over all of K
// (fast: the tensor cores keep 14 significant bits of the running sum).
const (
	AccumPromoted = ref.AccumPromoted
	AccumFast     = ref.AccumFast
)

// FP8Desc describes one fp8 product on Hopper's tensor cores,
//
//	D[M,N] = epilogue(A[M,K] · B[N,K]ᵀ),
//
// with A and B of E4M3 or E5M2 (the pairs cuBLASLt takes: E4M3 × E4M3,
// E4M3 × E5M2, E5M2 × E4M3), both stored K-major: A row-major M × K, B
// row-major N × K (cuBLASLt's "TN", the only form fp8 wgmma reads). The
// contract (docs/contract.md, "fp8"): per element, the measured fp8
// tensor-core step over 32 positions of K at a time, ascending, in one
// chain (AccumFast) or in a chain per 128 positions promoted into f32
// (AccumPromoted); then the scales, the bias, the activation and one
// rounding. A row of D depends only on the same row of A (and its scales),
// never on M. gemm/ref's Options.FP8Matmul computes the same bits.
type FP8Desc struct {
	// A and B are the operand types; Out is D's: BF16, F16, F32, E4M3 or
	// E5M2 (an fp8 D is scaled by ScaleD and reports its amax).
	A, B, Out DType
	M, N, K   int
	// Leading dimensions in elements (bytes for the fp8 operands); 0 means
	// the row length (K, K, N). LDA and LDB must be multiples of 16 (TMA
	// reads whole 16-byte rows).
	LDA, LDB, LDD int
	Scaling       FP8Scaling
	Accum         FP8Accum
	// Epilogue: Default, Bias, Relu, ReluBias, Gelu or GeluBias.
	Epilogue Epilogue
}

// FP8Args is the device memory of one fp8 product.
type FP8Args struct {
	A, B cudaload.DevicePtr // the operands, 16-byte aligned
	D    cudaload.DevicePtr // M × N of Out
	// ScaleA and ScaleB are the f32 scales (the dequantisation factors, x ≈
	// q·s): one each (ScaleTensor); M and N (ScaleRow); M × ceil(K/128) and
	// ceil(N/128) × ceil(K/128), row-major (ScaleBlock).
	ScaleA, ScaleB cudaload.DevicePtr
	Bias           cudaload.DevicePtr // N f32 for the Bias epilogues; else 0
	// ScaleD (one f32, fp8 D only; 0: 1) multiplies the result before the
	// conversion to fp8; Amax (one f32, fp8 D only; 0: none) receives the
	// largest |value| of D before that scaling (NaN skipped).
	ScaleD, Amax cudaload.DevicePtr
}

// FP8Plan is a validated fp8 product bound to an engine, its kernel
// chosen: Run launches it without planning or allocating (CUDA-graph
// safe). Plans are safe for concurrent use.
type FP8Plan struct {
	e         *Engine
	d         FP8Desc
	id        kernelID
	bn        int64 // the tile's columns
	bias      bool
	precision Precision
}

type fp8Key struct {
	pair, out, tile, act string
}

// fp8Geometry is one of gemm_fp8.cu's tiles: 128 rows × bn columns, a
// ring of stages of 128 positions of K.
type fp8Geometry struct {
	bn, stages int64
	cluster    int64 // blocks a cluster: 2 run two tiles of a row block side by side, sharing A by multicast
}

// fp8Tiles mirror gemm_fp8.cu's T32, T64, T128 and T256 (entries.FP8Tiles).
var fp8Tiles = map[int64]fp8Geometry{32: {32, 10, 1}, 64: {64, 8, 1}, 128: {128, 6, 2}, 256: {256, 4, 1}}

// fp8SharedBytes is a tile's dynamic shared memory (gemm_fp8.cu's
// F8Tile::SMEM): the ring, 1 KiB of alignment slack, the barriers, bn zero
// floats, 128 bytes of slack, the 16-bit store's staging and the ring of
// the stages' block scales (128 + 4 floats a stage; the loader warp's path
// up to 128 rows).
func fp8SharedBytes(bn int64) uint32 {
	g := fp8Tiles[bn]
	stage := (128 + g.bn) * 128
	return uint32(g.stages*stage + 1024 + 2*g.stages*8 + g.bn*4 + 128 + 4*2*16*64*2 + g.stages*(128+4)*4)
}

// fp8TileWidth is the width of an entry's tile ("fast64" … "prom128").
func fp8TileWidth(tile string) int64 {
	w, _ := strconv.ParseInt(strings.TrimLeft(tile, "fastprom"), 10, 64)
	return w
}

// fp8TileFor chooses the tile width: where few rows leave SMs idle
// (decode and prefill), the weight streams from more SMs at once — 32
// columns where even those tiles fit one wave, else 64 where 128-column
// tiles would not fill the GPU; 256 for the fast chain without an
// activation where even 256-column tiles fill it; else 128, except that
// one row of tiles (M <= 128, memory-bound) takes 64 columns where their
// rounds over the SMs are fuller than the 128-column tiles' (N = 24576:
// 384 tiles in three rounds 97 % full against 192 in two 73 % full). The
// width decides where an element is computed, never how: its chain is
// the same in every tile.
func fp8TileFor(M, N, sms int64, fast bool, act string) int64 {
	rows := ceilDiv(M, 128)
	switch {
	case rows*ceilDiv(N, 32) <= sms:
		return 32
	case rows*ceilDiv(N, 128) < sms:
		return 64
	case fast && act == "none" && rows*ceilDiv(N, 256) >= sms:
		return 256
	case rows == 1 && roundFillExceeds(ceilDiv(N, 64), ceilDiv(N, 128), sms):
		return 64
	}
	return 128
}

// roundFillExceeds reports whether a tiles spread over sms in rounds fill
// their last round's share better than b tiles: a / (rounds(a)·sms) >
// b / (rounds(b)·sms), in integers.
func roundFillExceeds(a, b, sms int64) bool {
	return a*ceilDiv(b, sms) > b*ceilDiv(a, sms)
}

var fp8IDs = indexOf(func(k entries.Key) fp8Key { return fp8Key{k.In, k.Out, k.Tile, k.Act} }, "fp8")

// fp8Spec: each epilogue the fp8 product takes, its compiled activation
// and whether it has a bias.
var fp8Spec = map[Epilogue]struct {
	act  string
	bias bool
}{
	Default: {"none", false}, Bias: {"none", true}, Relu: {"relu", false}, ReluBias: {"relu", true},
	Gelu: {"gelu", false}, GeluBias: {"gelu", true},
}

// fp8ForceTile, when set (tests only), is the tile width every plan takes
// where it has a kernel.
var fp8ForceTile int64

// CanImplementFP8 reports whether this engine can run d, and if not, why:
// the *ArgError PlanFP8 would return. It allocates nothing.
func (e *Engine) CanImplementFP8(d FP8Desc) error {
	_, err := e.newFP8Plan(d)
	return err
}

// PlanFP8 validates d and chooses its kernel; its errors are
// CanImplementFP8's. The plan needs no workspace, so Run never allocates.
func (e *Engine) PlanFP8(d FP8Desc) (*FP8Plan, error) {
	p, err := e.newFP8Plan(d)
	if err != nil {
		return nil, err
	}
	return &p, nil
}

// FP8Matmul enqueues one fp8 product on the engine's stream: PlanFP8,
// then Run.
func (e *Engine) FP8Matmul(d FP8Desc, a FP8Args) error {
	p, err := e.PlanFP8(d)
	if err != nil {
		return err
	}
	return p.Run(a)
}

func (e *Engine) newFP8Plan(d FP8Desc) (FP8Plan, error) {
	const op = "FP8Matmul"
	p := FP8Plan{e: e, d: d}
	if !wgArch(e.arch) {
		return p, argErr(op, "Engine", ErrArch, "%v: the fp8 product runs on Hopper's wgmma (sm_90a), whose fp8 addition is the measured one", e.arch)
	}
	if !d.A.FP8() || !d.B.FP8() {
		return p, argErr(op, "A", ErrDType, "A %v, B %v: want E4M3 or E5M2", d.A, d.B)
	}
	if d.A == E5M2 && d.B == E5M2 {
		return p, argErr(op, "B", ErrDType, "E5M2 × E5M2: the pairs are E4M3 × E4M3, E4M3 × E5M2 and E5M2 × E4M3 (as cuBLASLt's)")
	}
	switch d.Out {
	case BF16, F16, F32, E4M3, E5M2:
	default:
		return p, argErr(op, "Out", ErrDType, "%v: want BF16, F16, F32, E4M3 or E5M2", d.Out)
	}
	spec, ok := fp8Spec[d.Epilogue]
	if !ok {
		return p, argErr(op, "Epilogue", ErrEpilogue, "%v: the fp8 product takes Default, Bias, Relu, ReluBias, Gelu or GeluBias", d.Epilogue)
	}
	p.bias = spec.bias
	mode := "fast"
	switch d.Accum {
	case AccumPromoted:
		mode = "prom"
	case AccumFast:
	default:
		return p, argErr(op, "Accum", ErrScale, "%d: want AccumPromoted or AccumFast", d.Accum)
	}
	switch d.Scaling {
	case ScaleTensor, ScaleRow:
	case ScaleBlock:
		if d.Accum != AccumPromoted {
			return p, argErr(op, "Scaling", ErrScale, "block scales change along K: they need AccumPromoted (a scale per 128 positions of K)")
		}
	default:
		return p, argErr(op, "Scaling", ErrScale, "%d: want ScaleTensor, ScaleRow or ScaleBlock", d.Scaling)
	}
	switch {
	case d.M < 0 || d.N <= 0 || d.K <= 0:
		return p, argErr(op, "M", ErrDimension, "M %d, N %d, K %d: M must not be negative, N and K positive", d.M, d.N, d.K)
	case d.K%16 != 0:
		return p, argErr(op, "K", ErrDimension, "%d is not a multiple of 16: the operands' rows are read as whole 16-byte units; pad K with zeros", d.K)
	case d.M > math.MaxInt32/2 || d.N > math.MaxInt32/2 || d.K > math.MaxInt32/2:
		return p, argErr(op, "M", ErrTooLarge, "M %d, N %d, K %d: at most %d each", d.M, d.N, d.K, math.MaxInt32/2)
	}
	var err error
	if p.d.LDA, err = gatedLD(op, "LDA", d.LDA, d.M, d.K); err != nil {
		return p, err
	}
	if p.d.LDB, err = gatedLD(op, "LDB", d.LDB, d.N, d.K); err != nil {
		return p, err
	}
	if p.d.LDD, err = gatedLD(op, "LDD", d.LDD, d.M, d.N); err != nil {
		return p, err
	}
	if p.d.LDA%16 != 0 || p.d.LDB%16 != 0 {
		return p, argErr(op, "LDA", ErrLeadingDim, "LDA %d, LDB %d: want multiples of 16 (TMA row pitches of whole 16-byte units)", p.d.LDA, p.d.LDB)
	}
	if ceilDiv(int64(d.M), 128)*ceilDiv(int64(d.N), 64) > math.MaxInt32 {
		return p, argErr(op, "M", ErrTooLarge, "%d × %d outputs: more than 2^31-1 tiles", d.M, d.N)
	}
	p.bn = fp8TileFor(int64(d.M), int64(d.N), int64(max(e.sms, 1)), mode == "fast", spec.act)
	if fp8ForceTile != 0 && (fp8ForceTile != 256 || mode == "fast" && spec.act == "none") {
		p.bn = fp8ForceTile
	}
	p.id = fp8IDs[fp8Key{d.A.String() + "_" + d.B.String(), d.Out.String(), fmt.Sprint(mode, p.bn), spec.act}]
	if p.id == 0 {
		return p, fmt.Errorf("gemm.%s: no kernel for %v × %v → %v %s %s", op, d.A, d.B, d.Out, mode, spec.act)
	}
	red := "one chain over K (fast: the tensor cores' 14-bit running sum)"
	if d.Accum == AccumPromoted {
		red = "a chain per 128 positions of K, each added in f32 in ascending order"
	}
	p.precision = Precision{Math: "fp8 tensor-core k32 steps (wgmma; 14 significant bits a step)", Accumulator: F32,
		Reduction: red, Deterministic: true, BatchInvariant: true, Arch: e.arch.String()}
	return p, nil
}

// Desc returns the description the plan was made for (leading dimensions
// resolved).
func (p *FP8Plan) Desc() FP8Desc { return p.d }

// WorkspaceBytes is the engine workspace the plan uses: none (the product
// reads block scales where the caller put them). It is here so that every
// plan answers the same question.
func (p *FP8Plan) WorkspaceBytes() uint64 { return 0 }

// Kernels names the entry points a Run launches, in order.
func (p *FP8Plan) Kernels() []string { return []string{p.id.entry().Name} }

// Precision reports the plan's arithmetic and what its bits depend on.
func (p *FP8Plan) Precision() Precision { return p.precision }

// String describes the plan in one line.
func (p *FP8Plan) String() string {
	d := p.d
	return fmt.Sprintf("FP8Matmul %v×%v→%v M=%d N=%d K=%d %s: %v; %s", d.A, d.B, d.Out, d.M, d.N, d.K, d.Epilogue, p.Kernels(), p.precision.Reduction)
}

// scaleLens are the element counts of ScaleA and ScaleB.
func (d FP8Desc) scaleLens() (a, b uint64) {
	kb := uint64(ceilDiv(int64(d.K), 128))
	switch d.Scaling {
	case ScaleRow:
		return uint64(d.M), uint64(d.N)
	case ScaleBlock:
		return uint64(d.M) * kb, uint64(ceilDiv(int64(d.N), 128)) * kb
	}
	return 1, 1
}

// Run enqueues the plan on a's memory. It checks the pointers (present
// where needed, absent where not, aligned, the outputs disjoint from every
// input and from each other) and launches nothing on a bad one.
func (p *FP8Plan) Run(a FP8Args) error {
	const op = "FP8Matmul"
	d := p.d
	out := uint64(d.Out.Size())
	fp8Out := d.Out.FP8()
	sa, sb := d.scaleLens()
	none := d.M == 0
	bufs := []callBuf{
		{mmBuf{"A", a.A, extentBytes(d.M, d.K, d.LDA, 1), 16}, true, false, false, none},
		{mmBuf{"B", a.B, extentBytes(d.N, d.K, d.LDB, 1), 16}, true, false, false, false},
		{mmBuf{"D", a.D, extentBytes(d.M, d.N, d.LDD, int(out)), out}, true, false, true, none},
		{mmBuf{"ScaleA", a.ScaleA, 4 * sa, 4}, true, false, false, none && d.Scaling != ScaleTensor},
		{mmBuf{"ScaleB", a.ScaleB, 4 * sb, 4}, true, false, false, false},
		{mmBuf{"Bias", a.Bias, uint64(d.N) * 4, 4}, p.bias, false, false, false},
		{mmBuf{"ScaleD", a.ScaleD, 4, 4}, fp8Out, true, false, false},
		{mmBuf{"Amax", a.Amax, 4, 4}, fp8Out, true, true, false},
	}
	if err := checkCallBufs(op, bufs, fmt.Sprintf("%v → %v with %v does not use it; pass 0", d.A, d.Out, d.Epilogue)); err != nil {
		return err
	}
	e := p.e
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return ErrClosed
	}
	l := launcher{e: &e.device}
	prob := problem{op: op, in: d.A, out: d.Out}
	if err := l.need(&prob, p.id); err != nil {
		return err
	}
	if fp8Out && a.Amax != 0 {
		if err := e.device.zero(a.Amax, 4); err != nil {
			return fmt.Errorf("gemm.%s: clearing Amax: %w", op, err)
		}
	}
	if d.M == 0 {
		return nil
	}
	return l.fp8(p, a)
}

// fp8 encodes the operands' TMA maps (each fp8 row viewed as K/2 16-bit
// units, so that gemm_fp8.cu's stages match wgmma.cuh's 16-bit ones byte
// for byte) and launches the persistent grid.
func (l launcher) fp8(p *FP8Plan, a FP8Args) error {
	d := p.d
	e := l.e
	const sw, l2, oob = cudaload.TensorMapSwizzle128B, cudaload.TensorMapL2Promotion256B, cudaload.TensorMapOOBFillNone
	g := fp8Tiles[p.bn]
	if l.rec == nil {
		// A's box: a tile's 128 rows, or the 64 of them each block of a
		// cluster loads and multicasts; with at most 64 rows (gemm_fp8.cu's
		// half tiles) the 64 rows there are.
		boxRows := uint32(128 / g.cluster)
		if d.M <= 64 {
			boxRows = 64
		}
		err := e.tmEnc.Encode2D(&e.tmA, cudaload.TensorMapUint16, a.A, uint64(d.K/2), uint64(d.M), uint64(d.LDA), 64, boxRows, sw, l2, oob)
		if err == nil {
			err = e.tmEnc.Encode2D(&e.tmB, cudaload.TensorMapUint16, a.B, uint64(d.K/2), uint64(d.N), uint64(d.LDB), 64, uint32(p.bn), sw, l2, oob)
		}
		if err != nil {
			return fmt.Errorf("gemm.FP8Matmul: encoding the TMA maps: %w", err)
		}
	}
	var endA, endB, blkA, blkB cudaload.DevicePtr
	var rsA, rsB, ldA, ldB int64
	kb := ceilDiv(int64(d.K), 128)
	switch d.Scaling {
	case ScaleTensor:
		endA, endB = a.ScaleA, a.ScaleB
	case ScaleRow:
		endA, endB, rsA, rsB = a.ScaleA, a.ScaleB, 1, 1
	case ScaleBlock:
		blkA, blkB, ldA, ldB = a.ScaleA, a.ScaleB, kb, kb
	}
	prob := problem{op: "FP8Matmul", in: d.A, out: d.Out}
	e.args.Reset().TensorMap(&e.tmA).TensorMap(&e.tmB).Int64(int64(d.M)).Int64(int64(d.N)).Int64(int64(d.K)).
		Ptr(a.D).Int64(int64(d.LDD)).Ptr(endA).Int64(rsA).Ptr(endB).Int64(rsB).Ptr(blkA).Int64(ldA).Ptr(blkB).Int64(ldB).
		Ptr(a.Bias).Ptr(a.ScaleD).Ptr(a.Amax)
	// Items: tiles, or with clusters pairs of tiles side by side; a
	// cluster's blocks are co-resident, so the grid is whole clusters.
	items := ceilDiv(int64(d.M), 128) * ceilDiv(int64(d.N), p.bn*g.cluster)
	blocks := g.cluster * max(min(items, int64(e.sms)/g.cluster), 1)
	return l.launch(&prob, p.id, cudaload.Dim3{X: uint32(blocks), Y: 1, Z: 1}, 384, fp8SharedBytes(p.bn), 128, p.bn)
}
