package gemm

import (
	"fmt"
	"math"
	"math/bits"

	"github.com/detgemm/detgemm/cudaload"
	"github.com/detgemm/detgemm/gemm/internal/entries"
	"github.com/detgemm/detgemm/gemm/ref"
)

// Gate is a gated activation, y = a·act(b): gemm/ref's type, whose
// functions (ref.GateAct32, ref.GateGrad32) define every bit.
type Gate = ref.Gate

// The gated activations (docs/contract.md, section "Gated activations").
const (
	GLU    = ref.GLU    // a·σ(b)
	ReGLU  = ref.ReGLU  // a·relu(b)
	SwiGLU = ref.SwiGLU // a·b·σ(b)
	GeGLU  = ref.GeGLU  // a·gelu(b), GELU's tanh form
)

// ErrGate: the Gate is not one of the four.
var ErrGate = ref.ErrGate

// GatedLayout is where a gated activation's two halves a and b lie.
type GatedLayout uint8

const (
	// GatedHalves: one Rows × 2N tensor X = [a | b]: a is columns [0, N),
	// b columns [N, 2N) (the usual split of a fused gate-up projection).
	GatedHalves GatedLayout = iota
	// GatedBlocks8: one Rows × 2N tensor whose 8-column blocks alternate a
	// and b: a_j at column (j/8)·16 + j%8, b_j 8 columns later (N a
	// multiple of 8). It is the layout of Matmul's gated epilogues, whose
	// tensor-core tiles then hold both halves (docs/contract.md).
	GatedBlocks8
	// GatedSeparate: two Rows × N tensors, A (X) and B (XB).
	GatedSeparate
	numGatedLayouts
)

func (l GatedLayout) String() string {
	switch l {
	case GatedHalves:
		return "GatedHalves"
	case GatedBlocks8:
		return "GatedBlocks8"
	case GatedSeparate:
		return "GatedSeparate"
	}
	return fmt.Sprintf("GatedLayout(%d)", uint8(l))
}

// GatedDesc describes a standalone gated activation over Rows × N outputs:
// forward y = a·act(b), backward da = dy·act(b), db = (dy·a)·act′(b), each
// element computed in f32 from exact widenings and rounded once to Type.
// Leading dimensions are in elements, 0 meaning the row length.
type GatedDesc struct {
	Gate   Gate
	Type   DType // of every tensor: F32, BF16 or F16
	Layout GatedLayout
	Rows   int
	N      int // the width of y (of a, of b)
	// LDX is the input's: the joined tensor's (>= 2N), or A's (>= N) in
	// GatedSeparate, where LDXB is B's (>= N; else leave it 0).
	LDX, LDXB int
	// LDY is y's (forward) or dy's (backward), >= N.
	LDY int
	// LDG and LDGB are the backward's output, in the input's layout: the
	// joined gradient [da | db] (>= 2N), or dA and dB (>= N each) in
	// GatedSeparate. The forward leaves them 0.
	LDG, LDGB int
}

// GatedArgs is the device memory of one gated activation.
type GatedArgs struct {
	X, XB cudaload.DevicePtr // the input: joined (X; XB 0), or A (X) and B (XB)
	Y     cudaload.DevicePtr // forward: y, written; backward: dy, read
	G, GB cudaload.DevicePtr // backward: the gradient, in the input's layout (G, or dA in G and dB in GB)
}

// gatedCall is a validated gated activation: the kernel's operands.
type gatedCall struct {
	d                  GatedDesc
	backward           bool
	a, b, ga, gb       cudaload.DevicePtr // a's and b's first elements; backward: da's and db's
	lda, ldb, lga, lgb int64
	blk                bool
}

// GatedForward enqueues y = a·act(b) on the engine's stream. Bad
// arguments return an *ArgError naming the field (ErrGate, ErrDType,
// ErrDimension, ErrLeadingDim, ErrNilPointer, ErrOperand, ErrMisaligned,
// ErrAlias, ErrTooLarge); nothing is launched then.
func (e *Engine) GatedForward(d GatedDesc, a GatedArgs) error {
	c, err := checkGated("GatedForward", d, a, false)
	if err != nil {
		return err
	}
	return e.runGated(c, a)
}

// GatedBackward enqueues da = dy·act(b), db = (dy·a)·act′(b) on the
// engine's stream, with GatedForward's errors.
func (e *Engine) GatedBackward(d GatedDesc, a GatedArgs) error {
	c, err := checkGated("GatedBackward", d, a, true)
	if err != nil {
		return err
	}
	return e.runGated(c, a)
}

// gatedLD resolves one leading dimension (0: cols) and checks the extent.
func gatedLD(op, arg string, ld, rows, cols int) (int, error) {
	switch {
	case ld == 0:
		ld = cols
	case ld < 0:
		return 0, argErr(op, arg, ErrLeadingDim, "%d is negative", ld)
	case ld < cols:
		return 0, argErr(op, arg, ErrLeadingDim, "%d is below the row length %d; the rows would overlap", ld, cols)
	}
	hi, lo := bits.Mul64(uint64(max(rows-1, 0)), uint64(ld))
	if hi != 0 || lo > math.MaxInt64/8-uint64(cols) {
		return 0, argErr(op, arg, ErrTooLarge, "%d rows of stride %d overflow 64-bit indexing", rows, ld)
	}
	return ld, nil
}

// checkGated validates a gated activation and resolves its operands.
func checkGated(op string, d GatedDesc, a GatedArgs, backward bool) (gatedCall, error) {
	c := gatedCall{d: d, backward: backward}
	if !d.Gate.Valid() {
		return c, argErr(op, "Gate", ErrGate, "%v is not GLU, ReGLU, SwiGLU or GeGLU", d.Gate)
	}
	if d.Type != F32 && d.Type != BF16 && d.Type != F16 {
		return c, argErr(op, "Type", ErrDType, "%v: want F32, BF16 or F16", d.Type)
	}
	if d.Layout >= numGatedLayouts {
		return c, argErr(op, "Layout", ErrDimension, "%v is not GatedHalves, GatedBlocks8 or GatedSeparate", d.Layout)
	}
	if d.Rows < 0 || d.N < 0 {
		return c, argErr(op, "Rows", ErrDimension, "Rows %d and N %d must not be negative", d.Rows, d.N)
	}
	if d.N > math.MaxInt32/2 {
		return c, argErr(op, "N", ErrTooLarge, "%d columns; at most %d", d.N, math.MaxInt32/2)
	}
	if d.Layout == GatedBlocks8 && d.N%8 != 0 {
		return c, argErr(op, "N", ErrDimension, "%d: GatedBlocks8 pairs 8-column blocks, so N must be a multiple of 8", d.N)
	}
	joined := d.Layout != GatedSeparate
	inCols := d.N
	if joined {
		inCols = 2 * d.N
	}
	var err error
	type ldUse struct {
		arg  string
		ld   *int
		cols int
		used bool
	}
	for _, u := range []ldUse{
		{"LDX", &c.d.LDX, inCols, true}, {"LDXB", &c.d.LDXB, d.N, !joined}, {"LDY", &c.d.LDY, d.N, true},
		{"LDG", &c.d.LDG, inCols, backward}, {"LDGB", &c.d.LDGB, d.N, backward && !joined},
	} {
		if !u.used {
			if *u.ld != 0 {
				return c, argErr(op, u.arg, ErrLeadingDim, "%d given, but %s with %v has no such tensor; leave it 0", *u.ld, op, d.Layout)
			}
			continue
		}
		if *u.ld, err = gatedLD(op, u.arg, *u.ld, d.Rows, u.cols); err != nil {
			return c, err
		}
	}
	d = c.d
	size := uint64(d.Type.Size())
	bufs := []mmBuf{{"X", a.X, 0, size}, {"XB", a.XB, 0, size}, {"Y", a.Y, 0, size}, {"G", a.G, 0, size}, {"GB", a.GB, 0, size}}
	used := []bool{true, !joined, true, backward, backward && !joined}
	out := []bool{false, false, !backward, backward, backward}
	cols := []int{inCols, d.N, d.N, inCols, d.N}
	lds := []int{d.LDX, d.LDXB, d.LDY, d.LDG, d.LDGB}
	for i := range bufs {
		b := &bufs[i]
		switch {
		case !used[i] && b.ptr != 0:
			return c, argErr(op, b.name, ErrOperand, "%s with %v does not use it; pass 0", op, d.Layout)
		case !used[i]:
			continue
		case b.ptr == 0:
			return c, argErr(op, b.name, ErrNilPointer, "device pointer is 0")
		case uint64(b.ptr)%size != 0:
			return c, argErr(op, b.name, ErrMisaligned, "pointer %#x is not aligned to its %d-byte elements", b.ptr, size)
		}
		if d.Rows > 0 && d.N > 0 {
			b.bytes = extentBytes(d.Rows, cols[i], lds[i], int(size))
		}
		if uint64(b.ptr)+b.bytes < uint64(b.ptr) {
			return c, argErr(op, b.name, ErrTooLarge, "range %#x + %d bytes wraps the address space", b.ptr, b.bytes)
		}
	}
	for i, o := range bufs {
		if !out[i] || o.bytes == 0 {
			continue
		}
		for j, x := range bufs {
			if i == j || !used[j] || x.bytes == 0 {
				continue
			}
			if o.ptr < x.ptr+cudaload.DevicePtr(x.bytes) && x.ptr < o.ptr+cudaload.DevicePtr(o.bytes) {
				return c, argErr(op, o.name, ErrAlias, "[%#x, +%d) overlaps %s [%#x, +%d); outputs share memory with nothing", o.ptr, o.bytes, x.name, x.ptr, x.bytes)
			}
		}
	}
	// The halves' first elements and strides.
	half := func(p, pb cudaload.DevicePtr, ld, ldb int) (cudaload.DevicePtr, cudaload.DevicePtr, int64, int64) {
		switch d.Layout {
		case GatedHalves:
			return p, p + cudaload.DevicePtr(uint64(d.N)*size), int64(ld), int64(ld)
		case GatedBlocks8:
			return p, p + cudaload.DevicePtr(8*size), int64(ld), int64(ld)
		}
		return p, pb, int64(ld), int64(ldb)
	}
	c.blk = d.Layout == GatedBlocks8
	c.a, c.b, c.lda, c.ldb = half(a.X, a.XB, d.LDX, d.LDXB)
	if backward {
		c.ga, c.gb, c.lga, c.lgb = half(a.G, a.GB, d.LDG, d.LDGB)
	}
	return c, nil
}

// The gated kernels by (h type, output type); backward ones with dy of
// the output's type, or f32 (bwdF).
type gatedKey struct {
	h, out DType
	v4     bool
}

var (
	gatedFwdIDs = indexOf(gatedKeyOf, "gatedfwd")
	// GeGLU's vector forward into bf16, a kernel of its own (gated.cu's
	// DETGEMM_GATED_GEGLU_FWD_ENTRY).
	gatedGeGLUFwdIDs = indexOf(gatedKeyOf, "gatedfwdgeglu")
	gatedBwdIDs      = indexOf(gatedKeyOf, "gatedbwd")
	gatedBwdFIDs     = indexOf(gatedKeyOf, "gatedbwdf")
)

func gatedKeyOf(k entries.Key) gatedKey { return gatedKey{dtypeOf(k.In), dtypeOf(k.Out), k.Vec} }

// gatedFamily holds the gated kernels.
const gatedFamily = entries.GatedFamily

// gatedVecIndices is how many consecutive indices a thread of a vector
// kernel (the _v4 entries: 4-aligned accesses) takes in each row it visits:
// two groups of four (gated.cu, GATED_FOR_EACH8).
const gatedVecIndices = 8

// gatedV4 reports whether the vector kernels' groups of four consecutive
// indices stay aligned: every leading dimension and column offset a
// multiple of 4 and every pointer aligned to 4 elements of its type.
func gatedV4(n int64, lds []int64, ptrs []cudaload.DevicePtr, sizes []uint64) bool {
	if n%4 != 0 {
		return false
	}
	for _, ld := range lds {
		if ld%4 != 0 {
			return false
		}
	}
	for i, p := range ptrs {
		if p != 0 && uint64(p)%(4*sizes[i]) != 0 {
			return false
		}
	}
	return true
}

// runGated enqueues a validated gated activation.
func (e *Engine) runGated(c gatedCall, a GatedArgs) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return ErrClosed
	}
	d := c.d
	if d.Rows == 0 || d.N == 0 {
		return nil
	}
	l := launcher{e: &e.device}
	size := uint64(d.Type.Size())
	if !c.backward {
		prob := problem{op: "GatedForward", in: d.Type, out: d.Type}
		return l.gatedFwd(&prob, d.Type, d.Type, d.Gate, int64(d.Rows), int64(d.N), c.a, c.lda, c.b, c.ldb, c.blk,
			a.Y, int64(d.LDY), 0, 0, 0, size, size)
	}
	prob := problem{op: "GatedBackward", in: d.Type, out: d.Type}
	return l.gatedBwd(&prob, gatedBwdIDs, d.Type, d.Gate, int64(d.Rows), int64(d.N), a.Y, int64(d.LDY), size,
		c.a, c.lda, c.b, c.ldb, c.blk, c.ga, c.lga, c.gb, c.lgb)
}

// gatedFwd launches the forward kernel for h of type ht (size hs) to
// outputs of type ot (size os); ha, hb, ldh: the optional copy of a and b
// rounded to ot (Matmul's aux).
func (l launcher) gatedFwd(p *problem, ht, ot DType, g Gate, rows, n int64, A cudaload.DevicePtr, lda int64,
	B cudaload.DevicePtr, ldb int64, blk bool, Y cudaload.DevicePtr, ldy int64, ha, hb cudaload.DevicePtr, ldh int64,
	hs, os uint64) error {
	v4 := gatedV4(n, []int64{lda, ldb, ldy, ldh}, []cudaload.DevicePtr{A, B, Y, ha, hb}, []uint64{hs, hs, os, os, os})
	id := gatedFwdID(ht, ot, g, v4)
	if err := l.need(p, id); err != nil {
		return err
	}
	v := int64(1)
	if v4 {
		v = gatedVecIndices
	}
	l.e.args.Reset().Int32(int32(g)).Int64(rows).Int64(n).Ptr(A).Int64(lda).Ptr(B).Int64(ldb).Int32(b2i(blk)).
		Ptr(Y).Int64(ldy).Ptr(ha).Ptr(hb).Int64(ldh)
	return l.launch(p, id, mmGridPer(rows, ceilDiv(n, v), l.e.sms, gatedPerSM), mmThreads, 0, 1, v)
}

// gatedPerSM is the gated kernels' blocks a multiprocessor (mmGridPer):
// 48, of a few rows each, where mmGrid's 16 blocks of a dozen rows left
// the last blocks of a multiprocessor running alone; a finer grid
// balances the end of the launch (bench/NOTES-matmul.md, fifteenth
// session; one block a row, or one wave of resident blocks, measured
// slower). A variable so that TestGatedThroughput can time others.
var gatedPerSM int64 = 48

// gatedFwdID is the forward kernel for h of type ht, outputs of type ot and
// gate g: GeGLU's own where it has one (the vector path into bf16), else the
// kernel all gates share.
func gatedFwdID(ht, ot DType, g Gate, v4 bool) kernelID {
	if g == GeGLU {
		if id, ok := gatedGeGLUFwdIDs[gatedKey{ht, ot, v4}]; ok {
			return id
		}
	}
	return gatedFwdIDs[gatedKey{ht, ot, v4}]
}

// gatedBwd launches the backward kernel from ids (dy of the output's type,
// or f32) for h and outputs of type t; dy's elements are dys bytes.
func (l launcher) gatedBwd(p *problem, ids map[gatedKey]kernelID, t DType, g Gate, rows, n int64, DY cudaload.DevicePtr,
	lddy int64, dys uint64, A cudaload.DevicePtr, lda int64, B cudaload.DevicePtr, ldb int64, blk bool,
	DA cudaload.DevicePtr, ldda int64, DB cudaload.DevicePtr, lddb int64) error {
	s := uint64(t.Size())
	v4 := gatedV4(n, []int64{lddy, lda, ldb, ldda, lddb}, []cudaload.DevicePtr{DY, A, B, DA, DB}, []uint64{dys, s, s, s, s})
	id := ids[gatedKey{t, t, v4}]
	if err := l.need(p, id); err != nil {
		return err
	}
	v := int64(1)
	if v4 {
		v = gatedVecIndices
	}
	l.e.args.Reset().Int32(int32(g)).Int64(rows).Int64(n).Ptr(DY).Int64(lddy).Ptr(A).Int64(lda).Ptr(B).Int64(ldb).
		Int32(b2i(blk)).Ptr(DA).Int64(ldda).Ptr(DB).Int64(lddb)
	return l.launch(p, id, mmGridPer(rows, ceilDiv(n, v), l.e.sms, gatedPerSM), mmThreads, 0, 1, v)
}

func b2i(b bool) int32 {
	if b {
		return 1
	}
	return 0
}
