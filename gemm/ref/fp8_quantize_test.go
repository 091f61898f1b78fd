package ref

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"
)

func TestFP8QuantizeCases(t *testing.T) {
	inf, nan := float32(math.Inf(1)), float32(math.NaN())
	tests := []struct {
		name   string
		out    DType
		x      []float32 // one row
		q      []uint8
		scale  float32
		groups FP8Groups
	}{
		{"amax 896: scale 2", E4M3, []float32{0, 1, -896}, []uint8{0x00, 0x30, 0xFE}, 2, GroupTensor},
		{"amax at max: scale 1", E4M3, []float32{448, -1, 0.5}, []uint8{0x7E, 0xB8, 0x30}, 1, GroupRow},
		{"e5m2 amax 57344·4", E5M2, []float32{229376, -4}, []uint8{0x7B, 0x80 | 0x3C}, 4, Group1x128},
		{"zeros: scale 1", E4M3, []float32{0, float32(math.Copysign(0, -1))}, []uint8{0x00, 0x80}, 1, Group128x128},
		{"NaN skipped in amax, encoded as NaN", E4M3, []float32{nan, 896}, []uint8{CanonicalNaNE4M3, 0x7E}, 2, GroupTensor},
		{"all NaN: scale 1", E5M2, []float32{nan, nan}, []uint8{CanonicalNaNE5M2, CanonicalNaNE5M2}, 1, GroupTensor},
		{"Inf: scale 1, saturated", E4M3, []float32{inf, 1000, -inf, 2}, []uint8{0x7E, 0x7E, 0xFE, 0x40}, 1, GroupRow},
		{"scale underflows to 0: 1", E4M3, []float32{0x1p-149, 0}, []uint8{0x00, 0x00}, 1, GroupTensor},
		{"smallest scale", E4M3, []float32{448 * 0x1p-149, 0x1p-149}, []uint8{0x7E, 0x38}, 0x1p-149, GroupTensor},
	}
	for _, tc := range tests {
		q := make([]uint8, len(tc.x))
		s := []float32{-7}
		err := FP8Quantize(FP8QuantizeRequest{Out: tc.out, Rows: 1, Cols: len(tc.x), X: Values(tc.x), In: F32, Groups: tc.groups, Q: q, Scales: s})
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if s[0] != tc.scale {
			t.Errorf("%s: scale %v, want %v", tc.name, s[0], tc.scale)
		}
		for i := range q {
			if q[i] != tc.q[i] {
				t.Errorf("%s: q[%d] = %#02x, want %#02x", tc.name, i, q[i], tc.q[i])
			}
		}
	}
}

// fp8GroupEdges is the rows and columns of one group of g in a Q of qr ×
// qc.
func fp8GroupEdges(g FP8Groups, qr, qc int) (int, int) {
	e := map[FP8Groups][2]int{GroupTensor: {qr, qc}, GroupRow: {1, qc}, Group1x128: {1, 128}, Group128x128: {128, 128}}[g]
	return e[0], e[1]
}

// fp8QuantizeWant is the literal quantisation of Q = X (or Xᵀ) of x (rows
// × cols, row-major, tight): codes (qrows × qcols, tight) and scales.
func fp8QuantizeWant(out DType, x []float32, rows, cols int, transpose bool, g FP8Groups) ([]uint8, []float32) {
	qr, qc := rows, cols
	if transpose {
		qr, qc = cols, rows
	}
	el := func(i, j int) float32 {
		if transpose {
			return x[j*cols+i]
		}
		return x[i*cols+j]
	}
	gr, gc := fp8GroupEdges(g, qr, qc)
	nr, nc := (qr+gr-1)/gr, (qc+gc-1)/gc
	amax := make([]float64, nr*nc)
	for i := range qr {
		for j := range qc {
			if v := math.Abs(float64(el(i, j))); v > amax[i/gr*nc+j/gc] {
				amax[i/gr*nc+j/gc] = v
			}
		}
	}
	scales := make([]float32, nr*nc)
	for i, a := range amax {
		s := float32(a) / FP8Max(out)
		if math.IsInf(a, 0) || !(s > 0) {
			s = 1
		}
		scales[i] = s
	}
	q := make([]uint8, qr*qc)
	for i := range qr {
		for j := range qc {
			q[i*qc+j] = FP8Encode(out, el(i, j)/scales[i/gr*nc+j/gc])
		}
	}
	return q, scales
}

// TestFP8QuantizeEqualsLiteral: FP8Quantize equals the literal
// quantisation for every input and output type, grouping and transpose,
// with padded leading dimensions, on shapes across the 128 edges; and the
// dequantised values q·s are within half an fp8 unit of x.
func TestFP8QuantizeEqualsLiteral(t *testing.T) {
	rng := rand.New(rand.NewPCG(4, 128))
	shapes := [][2]int{{1, 1}, {3, 5}, {130, 260}, {129, 1}}
	n := 0
	for _, sh := range shapes {
		for _, in := range []DType{F32, BF16, F16} {
			for _, out := range fp8Types {
				for _, g := range []FP8Groups{GroupTensor, GroupRow, Group1x128, Group128x128} {
					for _, tr := range []bool{false, true} {
						n++
						rows, cols := sh[0], sh[1]
						specials := n%3 == 0
						x := make([]float32, rows*cols)
						for i := range x {
							x[i] = float32(math.Ldexp(rng.NormFloat64(), rng.IntN(12)-6+n%9))
							if specials && rng.IntN(50) == 0 {
								x[i] = []float32{float32(math.NaN()), float32(math.Inf(-1)), 0, 1e30}[rng.IntN(4)]
							}
							if in.Half() {
								x[i] = in.ToF32(in.FromF32(x[i]))
							}
						}
						wantQ, wantS := fp8QuantizeWant(out, x, rows, cols, tr, g)
						qr, qc := rows, cols
						if tr {
							qr, qc = cols, rows
						}
						ldx, ldq := cols+n%3, qc+n%2
						xs := make([]float32, (rows-1)*ldx+cols)
						xb := make([]uint16, len(xs))
						for i := range rows {
							for j := range cols {
								xs[i*ldx+j] = x[i*cols+j]
								if in.Half() {
									xb[i*ldx+j] = in.FromF32(x[i*cols+j])
								}
							}
						}
						r := FP8QuantizeRequest{Out: out, Rows: rows, Cols: cols, X: Values(xs), In: in, LDX: ldx, Transpose: tr, Groups: g,
							Q: make([]uint8, (qr-1)*ldq+qc), LDQ: ldq, Scales: make([]float32, g.ScaleCount(qr, qc))}
						if in.Half() && n%2 == 0 {
							r.X = Bits(xb)
						}
						if len(r.Scales) != len(wantS) {
							t.Fatalf("ScaleCount(%v, %d, %d) = %d, want %d", g, qr, qc, len(r.Scales), len(wantS))
						}
						if err := FP8Quantize(r); err != nil {
							t.Fatal(err)
						}
						for i, s := range wantS {
							if math.Float32bits(r.Scales[i]) != math.Float32bits(s) {
								t.Fatalf("%v→%v %v T%v %v: scale %d = %v, want %v", in, out, g, tr, sh, i, r.Scales[i], s)
							}
						}
						for i := range qr {
							for j := range qc {
								got, want := r.Q[i*ldq+j], wantQ[i*qc+j]
								if got != want {
									t.Fatalf("%v→%v %v T%v %v: q(%d,%d) = %#02x, want %#02x", in, out, g, tr, sh, i, j, got, want)
								}
								var xv float32
								if tr {
									xv = x[j*cols+i]
								} else {
									xv = x[i*cols+j]
								}
								if specials || math.Abs(float64(xv)) < 0x1p-100 {
									continue
								}
								// Dequantised: q·s ≈ x within half an fp8 unit (2^-(mbits+1)
								// relative) where x/s is a normal fp8 value.
								gr, gc := fp8GroupEdges(g, qr, qc)
								s := float64(r.Scales[i/gr*((qc+gc-1)/gc)+j/gc])
								y := float64(xv) / s
								f := fp8Fmt(out)
								if math.Abs(y) < math.Ldexp(1, f.emin) {
									continue
								}
								deq := float64(FP8Decode(out, got)) * s
								if rel := math.Abs(deq-float64(xv)) / math.Abs(float64(xv)); rel > math.Ldexp(1, -int(f.mbits)-1)*(1+0x1p-20) {
									t.Fatalf("%v→%v %v: x %v dequantises to %v (relative error %g)", in, out, g, xv, deq, rel)
								}
							}
						}
					}
				}
			}
		}
	}
}

func TestFP8QuantizeErrors(t *testing.T) {
	base := func() FP8QuantizeRequest {
		return FP8QuantizeRequest{Out: E4M3, Rows: 2, Cols: 3, X: Values(make([]float32, 6)), In: F32, Groups: GroupRow,
			Q: make([]uint8, 6), Scales: make([]float32, 2)}
	}
	shared := make([]float32, 8)
	tests := []struct {
		name string
		edit func(*FP8QuantizeRequest)
		want error
	}{
		{"Out f16", func(r *FP8QuantizeRequest) { r.Out = F16 }, ErrDType},
		{"Out zero", func(r *FP8QuantizeRequest) { r.Out = 0 }, ErrDType},
		{"In e4m3", func(r *FP8QuantizeRequest) { r.In = E4M3 }, ErrDType},
		{"In zero", func(r *FP8QuantizeRequest) { r.In = 0 }, ErrDType},
		{"Rows zero", func(r *FP8QuantizeRequest) { r.Rows = 0 }, ErrDim},
		{"Cols negative", func(r *FP8QuantizeRequest) { r.Cols = -3 }, ErrDim},
		{"Rows*Cols overflows", func(r *FP8QuantizeRequest) { r.Rows, r.Cols = 1<<40, 1<<40 }, ErrDim},
		{"Groups zero", func(r *FP8QuantizeRequest) { r.Groups = 0 }, ErrScale},
		{"Groups 5", func(r *FP8QuantizeRequest) { r.Groups = 5 }, ErrScale},
		{"LDX short", func(r *FP8QuantizeRequest) { r.LDX = 2 }, ErrLeadingDim},
		{"LDQ negative", func(r *FP8QuantizeRequest) { r.LDQ = -1 }, ErrLeadingDim},
		{"LDQ short for the transpose", func(r *FP8QuantizeRequest) { r.Transpose, r.LDQ, r.Scales = true, 1, make([]float32, 3) }, ErrLeadingDim},
		{"X short", func(r *FP8QuantizeRequest) { r.X = Values(make([]float32, 5)) }, ErrLength},
		{"X padded, short", func(r *FP8QuantizeRequest) { r.LDX = 4 }, ErrLength},
		{"Q short", func(r *FP8QuantizeRequest) { r.Q = r.Q[:5] }, ErrLength},
		{"Scales short", func(r *FP8QuantizeRequest) { r.Scales = r.Scales[:1] }, ErrLength},
		{"Scales short for the transpose", func(r *FP8QuantizeRequest) { r.Transpose = true }, ErrLength},
		{"X bits for f32", func(r *FP8QuantizeRequest) { r.X = Bits(make([]uint16, 6)) }, ErrDType},
		{"X both forms", func(r *FP8QuantizeRequest) { r.In, r.X.Bits = BF16, make([]uint16, 6) }, ErrDType},
		{"X inexact bf16", func(r *FP8QuantizeRequest) { r.In, r.X = BF16, Values([]float32{0, 0, 0, 0, 1 + 0x1p-10, 0}) }, ErrInexact},
		{"Scales over X", func(r *FP8QuantizeRequest) { r.X, r.Scales = Values(shared[:6]), shared[5:7] }, ErrOverlap},
	}
	for _, tc := range tests {
		r := base()
		tc.edit(&r)
		for i := range r.Q {
			r.Q[i] = 0xAA
		}
		err := FP8Quantize(r)
		var ae *ArgError
		if !errors.Is(err, tc.want) || !errors.As(err, &ae) || ae.Op != "FP8Quantize" {
			t.Errorf("%s: %v, want an *ArgError of %v", tc.name, err, tc.want)
		}
		for _, q := range r.Q {
			if q != 0xAA {
				t.Errorf("%s: wrote Q before refusing", tc.name)
				break
			}
		}
	}
	if err := FP8Quantize(base()); err != nil {
		t.Errorf("valid request: %v", err)
	}
}

func TestFP8GroupsScaleCount(t *testing.T) {
	tests := []struct {
		g          FP8Groups
		rows, cols int
		want       int
		name       string
	}{
		{GroupTensor, 300, 300, 1, "GroupTensor"},
		{GroupRow, 300, 7, 300, "GroupRow"},
		{Group1x128, 3, 257, 9, "Group1x128"},
		{Group128x128, 129, 128, 2, "Group128x128"},
		{Group128x128, 0, 128, 0, "Group128x128"},
		{0, 3, 3, 0, "FP8Groups(0)"},
		{9, 3, 3, 0, "FP8Groups(9)"},
	}
	for _, tc := range tests {
		if got := tc.g.ScaleCount(tc.rows, tc.cols); got != tc.want || tc.g.String() != tc.name {
			t.Errorf("%v.ScaleCount(%d, %d) = %d, want %d (%s)", tc.g, tc.rows, tc.cols, got, tc.want, tc.name)
		}
	}
	for _, s := range []struct {
		got, want string
	}{
		{ScaleTensor.String(), "ScaleTensor"}, {ScaleRow.String(), "ScaleRow"}, {ScaleBlock.String(), "ScaleBlock"}, {FP8Scaling(0).String(), "FP8Scaling(0)"},
		{AccumPromoted.String(), "AccumPromoted"}, {AccumFast.String(), "AccumFast"}, {FP8Accum(7).String(), "FP8Accum(7)"},
	} {
		if s.got != s.want {
			t.Errorf("String %q, want %q", s.got, s.want)
		}
	}
}
