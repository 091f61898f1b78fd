package gemm

import (
	"math"
	"math/bits"
)

// layout names how the kernels read their operands for the tile problem
// C[rows, cols] (op)= A(rows, R) · B(R, cols).
type layout uint8

const (
	layoutNN layout = iota // Forward: A = X row-major, B = W row-major
	layoutNT               // DX: B(r, j) = W[j, r]
	layoutTN               // DW: A(i, r) = X[r, i]
)

func (l layout) String() string { return [...]string{"nn", "nt", "tn"}[l] }

// Call is one product of the triad: a ForwardArgs, DWArgs or DXArgs value.
// Presize, WorkspaceBytes and Strategy take any of them and read only its
// tier, types and shape: the pointers may be left zero.
type Call interface {
	build(pointers bool) (problem, error)
}

// problem is a validated call in the kernels' terms.
type problem struct {
	op              string
	tier            Tier
	layout          layout
	in, out         DType
	rows, cols, red int64
	a, b, c, bias   uintptr
	lda, ldb, ldc   int64
}

// Launch limits of the grid: row tiles go on grid.x, column tiles on grid.y.
const (
	tileRows    = 128
	tileCols    = 128
	maxRowTiles = math.MaxInt32
	maxColTiles = 65535
)

// buffer is one operand's device range, for the null, alignment and alias
// checks.
type buffer struct {
	name  string
	ptr   uintptr
	bytes uint64
	align uintptr
}

func (a ForwardArgs) problem() (problem, error) { return a.build(true) }

// build validates a; with pointers false it checks the tier, dtypes and
// shape only (Presize and the queries need no buffers).
func (a ForwardArgs) build(pointers bool) (problem, error) {
	const op = "Forward"
	if err := checkTier(op, a.Tier, a.In, a.Out); err != nil {
		return problem{}, err
	}
	if err := checkDims(op, "M", a.M, "K", a.K, "N", a.N); err != nil {
		return problem{}, err
	}
	p := problem{op: op, tier: a.Tier, layout: layoutNN, in: a.In, out: a.Out,
		rows: int64(a.M), cols: int64(a.N), red: int64(a.K),
		a: uintptr(a.X), b: uintptr(a.W), c: uintptr(a.Y), bias: uintptr(a.Bias),
		lda: int64(a.K), ldb: int64(a.N), ldc: int64(a.N)}
	var room [3]buffer // X, W and the bias without a heap allocation
	ins := append(room[:0], buffer{"X", p.a, 0, 0}, buffer{"W", p.b, 0, 0})
	var err error
	if ins[0].bytes, err = bytesOf(op, "X", a.M, a.K, a.In); err != nil {
		return problem{}, err
	}
	if ins[1].bytes, err = bytesOf(op, "W", a.K, a.N, a.In); err != nil {
		return problem{}, err
	}
	ins[0].align, ins[1].align = uintptr(a.In.Size()), uintptr(a.In.Size())
	if a.Bias != 0 {
		ins = append(ins, buffer{"Bias", p.bias, uint64(a.N) * 4, 4})
	}
	outBytes, err := bytesOf(op, "Y", a.M, a.N, a.Out)
	if err != nil {
		return problem{}, err
	}
	out := buffer{"Y", p.c, outBytes, uintptr(a.Out.Size())}
	return p, checkBuffers(op, out, ins, p, pointers)
}

func (a DWArgs) problem() (problem, error) { return a.build(true) }

// build validates a; with pointers false it checks the tier, dtypes and
// shape only (Presize and the queries need no buffers).
func (a DWArgs) build(pointers bool) (problem, error) {
	const op = "DW"
	if err := checkTier(op, a.Tier, a.In, F32); err != nil {
		return problem{}, err
	}
	if err := checkDims(op, "M", a.M, "K", a.K, "N", a.N); err != nil {
		return problem{}, err
	}
	p := problem{op: op, tier: a.Tier, layout: layoutTN, in: a.In, out: F32,
		rows: int64(a.K), cols: int64(a.N), red: int64(a.M),
		a: uintptr(a.X), b: uintptr(a.DY), c: uintptr(a.DW),
		lda: int64(a.K), ldb: int64(a.N), ldc: int64(a.N)}
	xb, err := bytesOf(op, "X", a.M, a.K, a.In)
	if err != nil {
		return problem{}, err
	}
	dyb, err := bytesOf(op, "DY", a.M, a.N, a.In)
	if err != nil {
		return problem{}, err
	}
	dwb, err := bytesOf(op, "DW", a.K, a.N, F32)
	if err != nil {
		return problem{}, err
	}
	sz := uintptr(a.In.Size())
	ins := []buffer{{"X", p.a, xb, sz}, {"DY", p.b, dyb, sz}}
	return p, checkBuffers(op, buffer{"DW", p.c, dwb, 4}, ins, p, pointers)
}

func (a DXArgs) problem() (problem, error) { return a.build(true) }

// build validates a; with pointers false it checks the tier, dtypes and
// shape only (Presize and the queries need no buffers).
func (a DXArgs) build(pointers bool) (problem, error) {
	const op = "DX"
	if err := checkTier(op, a.Tier, a.In, a.Out); err != nil {
		return problem{}, err
	}
	if err := checkDims(op, "M", a.M, "N", a.N, "K", a.K); err != nil {
		return problem{}, err
	}
	p := problem{op: op, tier: a.Tier, layout: layoutNT, in: a.In, out: a.Out,
		rows: int64(a.M), cols: int64(a.K), red: int64(a.N),
		a: uintptr(a.DY), b: uintptr(a.W), c: uintptr(a.DX),
		lda: int64(a.N), ldb: int64(a.N), ldc: int64(a.K)}
	dyb, err := bytesOf(op, "DY", a.M, a.N, a.In)
	if err != nil {
		return problem{}, err
	}
	wb, err := bytesOf(op, "W", a.K, a.N, a.In)
	if err != nil {
		return problem{}, err
	}
	dxb, err := bytesOf(op, "DX", a.M, a.K, a.Out)
	if err != nil {
		return problem{}, err
	}
	sz := uintptr(a.In.Size())
	ins := []buffer{{"DY", p.a, dyb, sz}, {"W", p.b, wb, sz}}
	return p, checkBuffers(op, buffer{"DX", p.c, dxb, uintptr(a.Out.Size())}, ins, p, pointers)
}

// checkTier enforces each tier's dtypes; the tier is never inferred.
func checkTier(op string, t Tier, in, out DType) error {
	switch t {
	case TierF32:
		if in != F32 {
			return argErr(op, "In", ErrDType, "TierF32 takes f32 inputs, not %v (bf16/f16 inputs use TierTyped)", in)
		}
		if out != F32 {
			return argErr(op, "Out", ErrDType, "TierF32 writes f32, not %v", out)
		}
	case TierTyped:
		if !in.Half() {
			return argErr(op, "In", ErrDType, "TierTyped takes bf16 or f16 inputs, not %v (f32 inputs use TierF32)", in)
		}
		if out != in && out != F32 {
			return argErr(op, "Out", ErrDType, "TierTyped writes the input type (%v) or f32, not %v", in, out)
		}
	case TierTensorCore:
		if !in.Half() {
			return argErr(op, "In", ErrDType, "TierTensorCore takes bf16 or f16 inputs, not %v", in)
		}
		if out != in && out != F32 {
			return argErr(op, "Out", ErrDType, "TierTensorCore writes the input type (%v) or f32, not %v", in, out)
		}
	default:
		return argErr(op, "Tier", ErrTier, "%v is not a tier; choose TierF32, TierTyped or TierTensorCore", t)
	}
	return nil
}

// checkDims rejects dimensions that are not positive. The names and values
// alternate: "M", m, "K", k, ...
func checkDims(op string, pairs ...any) error {
	for i := 0; i < len(pairs); i += 2 {
		name, v := pairs[i].(string), pairs[i+1].(int)
		if v <= 0 {
			return argErr(op, name, ErrDimension, "%d is not positive", v)
		}
	}
	return nil
}

// bytesOf is rows*cols*size, refusing sizes that overflow or could not be
// addressed (the kernels index with signed 64-bit offsets).
func bytesOf(op, name string, rows, cols int, d DType) (uint64, error) {
	hi, n := bits.Mul64(uint64(rows), uint64(cols))
	if hi != 0 || n > math.MaxInt64/8 {
		return 0, argErr(op, name, ErrTooLarge, "%d×%d elements overflow 64-bit indexing", rows, cols)
	}
	return n * uint64(d.Size()), nil
}

// checkBuffers: pointers set and aligned to their element, the output
// disjoint from every input (when pointers is set), and the tiled grid
// within the launch limits. The tiled strategy runs every shape this
// admits; the planner takes another family only where that one's grid fits
// too (its plan function), so an admitted call always has a kernel.
func checkBuffers(op string, out buffer, ins []buffer, p problem, pointers bool) error {
	if !pointers {
		return checkGrid(op, p)
	}
	for i := -1; i < len(ins); i++ {
		b := out
		if i >= 0 {
			b = ins[i]
		}
		if b.ptr == 0 {
			return argErr(op, b.name, ErrNilPointer, "device pointer is 0")
		}
		if b.ptr%b.align != 0 {
			return argErr(op, b.name, ErrMisaligned, "pointer %#x is not aligned to its %d-byte elements", b.ptr, b.align)
		}
		if uint64(b.ptr)+b.bytes < uint64(b.ptr) {
			return argErr(op, b.name, ErrTooLarge, "range %#x + %d bytes wraps the address space", b.ptr, b.bytes)
		}
	}
	for _, in := range ins {
		if overlap(out, in) {
			return argErr(op, out.name, ErrAlias, "output [%#x, +%d) overlaps input %s [%#x, +%d)", out.ptr, out.bytes, in.name, in.ptr, in.bytes)
		}
	}
	return checkGrid(op, p)
}

// checkGrid: the tiled kernel's grid within the launch limits.
func checkGrid(op string, p problem) error {
	if rt := (p.rows + tileRows - 1) / tileRows; rt > maxRowTiles {
		return argErr(op, "shape", ErrTooLarge, "%d output rows need %d row tiles; the grid allows %d", p.rows, rt, maxRowTiles)
	}
	if ct := (p.cols + tileCols - 1) / tileCols; ct > maxColTiles {
		return argErr(op, "shape", ErrTooLarge, "%d output columns need %d column tiles; the grid allows %d", p.cols, ct, maxColTiles)
	}
	return nil
}

func overlap(a, b buffer) bool {
	return uint64(a.ptr) < uint64(b.ptr)+b.bytes && uint64(b.ptr) < uint64(a.ptr)+a.bytes
}
