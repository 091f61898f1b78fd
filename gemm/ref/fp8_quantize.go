package ref

import (
	"fmt"
	"math"
)

// FP8Groups says which elements share one scale in FP8Quantize. Groups are
// cut from the output Q's layout (qrows × qcols, after any transpose).
type FP8Groups uint8

// The groupings. The zero FP8Groups is invalid (ErrScale).
const (
	// GroupTensor: the whole tensor is one group; one scale.
	GroupTensor FP8Groups = iota + 1
	// GroupRow: each row of Q is a group; qrows scales.
	GroupRow
	// Group1x128: each row of Q cut into runs of 128 columns (the last
	// may be shorter); qrows × ceil(qcols/128) scales, row-major.
	Group1x128
	// Group128x128: blocks of 128 × 128 of Q (those at the edges may be
	// smaller); ceil(qrows/128) × ceil(qcols/128) scales, row-major.
	Group128x128
)

// fp8Block is the edge of FP8Quantize's 1×128 and 128×128 groups and of
// FP8Matmul's block scales.
const fp8Block = 128

// String returns "GroupTensor", "GroupRow", "Group1x128", "Group128x128",
// or "FP8Groups(n)".
func (g FP8Groups) String() string {
	switch g {
	case GroupTensor:
		return "GroupTensor"
	case GroupRow:
		return "GroupRow"
	case Group1x128:
		return "Group1x128"
	case Group128x128:
		return "Group128x128"
	}
	return fmt.Sprintf("FP8Groups(%d)", uint8(g))
}

// grid returns the groups' edges (rows, columns of Q) and how many there
// are down and across a Q of qrows × qcols; ok is false for an invalid g.
func (g FP8Groups) grid(qrows, qcols int) (gr, gc, nr, nc int, ok bool) {
	switch g {
	case GroupTensor:
		gr, gc = qrows, qcols
	case GroupRow:
		gr, gc = 1, qcols
	case Group1x128:
		gr, gc = 1, fp8Block
	case Group128x128:
		gr, gc = fp8Block, fp8Block
	default:
		return 0, 0, 0, 0, false
	}
	return gr, gc, (qrows + gr - 1) / gr, (qcols + gc - 1) / gc, true
}

// ScaleCount returns the number of scales FP8Quantize writes for a Q of
// qrows × qcols (both positive) grouped by g: 1, qrows, qrows ×
// ceil(qcols/128) or ceil(qrows/128) × ceil(qcols/128); 0 for an invalid g.
func (g FP8Groups) ScaleCount(qrows, qcols int) int {
	if qrows <= 0 || qcols <= 0 {
		return 0
	}
	_, _, nr, nc, ok := g.grid(qrows, qcols)
	if !ok {
		return 0
	}
	return nr * nc
}

// FP8QuantizeRequest is one quantisation of a matrix to an 8-bit type with
// per-group scales, the CPU twin of the GPU's (gemm.Engine.QuantizeFP8).
//
// X is Rows × Cols, row-major with leading dimension LDX (0: Cols), of type
// In (F32 as Values; BF16 or F16 as Bits, or as exact Values). Q is X, or
// with Transpose Xᵀ (Cols × Rows), row-major with leading dimension LDQ
// (0: Q's row length), one code of type Out a byte. Scales receives one
// float32 per group, row-major over the groups (see FP8Groups).
type FP8QuantizeRequest struct {
	// Out is the 8-bit type: E4M3 or E5M2.
	Out DType
	// Rows and Cols are X's shape, both positive.
	Rows, Cols int
	// X is the input, of type In (F32, BF16 or F16).
	X   Operand
	In  DType
	LDX int
	// Transpose makes Q = Xᵀ.
	Transpose bool
	// Groups is how elements share a scale, on Q's layout.
	Groups FP8Groups
	Q      []uint8
	LDQ    int
	Scales []float32
}

// FP8Quantize quantises r.X to r.Out with one scale per group: per group,
// amax = the largest |x| of its elements (NaNs skipped, infinities
// counted; +0 if there is none), s = amax / FP8Max(Out) (one float32
// division, round to nearest even), and s = 1 instead when amax is not
// finite or s is not > 0 (amax = 0, or the division underflowed); then
// every element's code is FP8Encode(Out, x / s) (one float32 division,
// then the encoding), and s is stored in Scales. The dequantised value is
// FP8Decode(Out, q)·s ≈ x. The bits depend only on the group's elements,
// never on the rest of the matrix (except with GroupTensor, whose one
// group is the whole matrix).
//
// Errors are *ArgError (ErrDType, ErrDim, ErrLeadingDim, ErrLength,
// ErrScale for invalid Groups, ErrInexact, ErrOverlap for Scales sharing
// memory with X), before anything is written.
func FP8Quantize(r FP8QuantizeRequest) error {
	const op = "FP8Quantize"
	f := fp8Fmt(r.Out)
	if f == nil {
		return argErr(op, "Out", ErrDType, "%v: want E4M3 or E5M2", r.Out)
	}
	if !r.In.Valid() {
		return argErr(op, "In", ErrDType, "%v: want F32, BF16 or F16", r.In)
	}
	if r.Rows <= 0 {
		return argErr(op, "Rows", ErrDim, "%d is not positive", r.Rows)
	}
	if r.Cols <= 0 {
		return argErr(op, "Cols", ErrDim, "%d is not positive", r.Cols)
	}
	if _, ok := mul(r.Rows, r.Cols); !ok {
		return argErr(op, "Rows*Cols", ErrDim, "%d*%d overflows int", r.Rows, r.Cols)
	}
	qrows, qcols := r.Rows, r.Cols
	if r.Transpose {
		qrows, qcols = qcols, qrows
	}
	gr, gc, nr, nc, ok := r.Groups.grid(qrows, qcols)
	if !ok {
		return argErr(op, "Groups", ErrScale, "%v is not GroupTensor, GroupRow, Group1x128 or Group128x128", r.Groups)
	}
	dx, err := resolveLD(op, "LDX", r.LDX, r.Rows, r.Cols)
	if err != nil {
		return err
	}
	dq, err := resolveLD(op, "LDQ", r.LDQ, qrows, qcols)
	if err != nil {
		return err
	}
	if err := checkForm(op, "X", r.X, r.In); err != nil {
		return err
	}
	for _, c := range []struct {
		arg        string
		have, need int
		what       string
	}{{"X", r.X.len(), dx.extent(), "X's extent"}, {"Q", len(r.Q), dq.extent(), "Q's extent"},
		{"Scales", len(r.Scales), nr * nc, "the number of groups"}} {
		if err := checkLen(op, c.arg, c.have, c.need, c.what); err != nil {
			return err
		}
	}
	if err := checkExact(op, "X", r.In, r.X, 0, r.Rows, dx.ld, 0, r.Cols); err != nil {
		return err
	}
	if spanOfF32(r.Scales, nr*nc).overlaps(spanOf(r.X, 0, dx.extent())) {
		return argErr(op, "Scales", ErrOverlap, "shares memory with X")
	}

	x := r.X.mat(r.In)
	// elem is element (i, j) of Q's layout, read from X.
	elem := func(i, j int) float32 {
		if r.Transpose {
			return x.at(j*dx.ld + i)
		}
		return x.at(i*dx.ld + j)
	}
	for bi := range nr {
		i0, i1 := bi*gr, min((bi+1)*gr, qrows)
		for bj := range nc {
			j0, j1 := bj*gc, min((bj+1)*gc, qcols)
			amax := float32(0)
			for i := i0; i < i1; i++ {
				for j := j0; j < j1; j++ {
					if v := abs32(elem(i, j)); v > amax { // a NaN never compares greater
						amax = v
					}
				}
			}
			s := fp8Scale(amax, f.max)
			r.Scales[bi*nc+bj] = s
			for i := i0; i < i1; i++ {
				q := r.Q[i*dq.ld:]
				for j := j0; j < j1; j++ {
					q[j] = f.encode(div32(elem(i, j), s))
				}
			}
		}
	}
	return nil
}

// fp8Scale is a group's scale: amax / top (the format's largest finite
// value) rounded once, or 1 where amax is not finite or the quotient is
// not positive.
func fp8Scale(amax, top float32) float32 {
	s := div32(amax, top)
	if math.IsInf(float64(amax), 0) || !(s > 0) {
		return 1
	}
	return s
}
