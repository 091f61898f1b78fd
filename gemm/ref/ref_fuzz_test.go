package ref

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"
)

// The entry points FuzzRef drives, by index.
var fuzzOps = []string{"Forward", "DX", "DW"}

// fuzzMaxElems bounds every operand FuzzRef allocates and computes on, so an
// input runs in well under a millisecond.
const fuzzMaxElems = 4096

// fuzzData draws n float32 values from r: of type d when exact (a 16-bit
// d), mixed binades, and with specials (zeros of both signs, infinities,
// NaN, subnormals, extremes) where specials is set.
func fuzzData(r *rand.Rand, n int, d DType, exact, specials bool) []float32 {
	v := make([]float32, n)
	for i := range v {
		x := float32(r.NormFloat64()) * float32(math.Ldexp(1, r.IntN(41)-20))
		if specials && r.IntN(64) == 0 {
			x = [...]float32{0, float32(math.Copysign(0, -1)), float32(math.Inf(1)), float32(math.Inf(-1)),
				float32(math.NaN()), math.SmallestNonzeroFloat32, -math.MaxFloat32, 0x1p-130, 0x1p-24}[r.IntN(9)]
		}
		if exact && d.Half() {
			x = d.ToF32(d.FromF32(x))
		}
		v[i] = x
	}
	return v
}

func narrow(d DType, v []float32) []uint16 {
	u := make([]uint16, len(v))
	for i, x := range v {
		u[i] = d.FromF32(x)
	}
	return u
}

func widen(d DType, u []uint16) []float32 {
	v := make([]float32, len(u))
	for i, h := range u {
		v[i] = d.ToF32(h)
	}
	return v
}

// fuzzLen is need moved by delta, never negative, or a short slice when
// need is past the cap (then the call must refuse it).
func fuzzLen(need int, small bool, delta int8) int {
	if !small {
		return min(int(delta)&63, fuzzMaxElems)
	}
	return max(need+int(delta), 0)
}

// refCall is one fuzzed call: the options, the operands as float32 (the
// 16-bit ones hold exact values of the input type unless raw) and the
// call's shape in its own argument order.
type refCall struct {
	op             int
	o              Options
	bits           bool   // 16-bit operands (and a 16-bit dst) as Bits
	dims           [3]int // the call's arguments in order: M,K,N or M,N,K
	a, b, out, bia []float32
}

// outType is the type the call stores: F32 for dW, Out or In otherwise.
func (c refCall) outType() DType {
	switch {
	case fuzzOps[c.op] == "DW":
		return F32
	case c.o.Out == 0:
		return c.o.In
	}
	return c.o.Out
}

// operand is v as the call passes it for type d.
func (c refCall) operand(d DType, v []float32) Operand {
	if c.bits {
		return Bits(narrow(d, v))
	}
	return Values(append([]float32(nil), v...))
}

// run calls the entry point on copies of c's operands with workers
// goroutines and returns the window as float32.
func (c refCall) run(workers int) ([]float32, error) {
	o := c.o
	o.Workers = workers
	A, B, C := c.dims[0], c.dims[1], c.dims[2]
	in := o.In
	switch fuzzOps[c.op] {
	case "DW":
		out := append([]float32(nil), c.out...)
		return out, o.DW(out, c.operand(in, c.a), c.operand(in, c.b), A, B, C)
	case "Forward":
		dst := c.operand(c.outType(), c.out)
		err := o.Forward(dst, c.operand(in, c.a), c.operand(in, c.b), c.bia, A, B, C)
		return result(c.outType(), dst), err
	}
	dst := c.operand(c.outType(), c.out)
	err := o.DX(dst, c.operand(in, c.a), c.operand(in, c.b), A, B, C)
	return result(c.outType(), dst), err
}

// naive recomputes the window element by element, straight from the
// package documentation's plans: IEEE slabs of SlabLen terms chained with
// FMA32 from +0 and folded with Add32 (16-bit inputs: their exact values,
// one rounding at the store), or the tensor-core plan's slabs of 16-wide
// Steps; then the epilogue.
func (c refCall) naive(r0, r1, c0, c1 int) []float32 {
	op := fuzzOps[c.op]
	tc := c.o.Tier == TensorCore
	A, B, C := c.dims[0], c.dims[1], c.dims[2]
	// Output columns, reduction length R, the operands' terms, the slab cut.
	var cols, R int
	var at func(i, r int) float32 // left operand's term r of output row i
	var bt func(r, j int) float32 // right operand's term r of output column j
	var bias []float32
	acc := false
	switch op {
	case "Forward":
		M, K, N := A, B, C
		cols, R = N, K
		at = func(i, r int) float32 { return c.a[i*K+r] }
		bt = func(r, j int) float32 { return c.b[r*N+j] }
		if len(c.bia) > 0 {
			bias = c.bia
		}
		_ = M
	case "DX":
		M, N, K := A, B, C
		cols, R = K, N
		at = func(i, r int) float32 { return c.a[i*N+r] }
		bt = func(r, j int) float32 { return c.b[j*N+r] }
		_ = M
	default: // dW
		M, K, N := A, B, C
		cols, R = N, M
		at = func(i, r int) float32 { return c.a[r*K+i] }
		bt = func(r, j int) float32 { return c.b[r*N+j] }
		acc = true
	}
	wc := c1 - c0
	out := append([]float32(nil), c.out[:(r1-r0)*wc]...)
	slabLen := SlabLen
	if tc {
		switch {
		case acc:
			_, slabLen = TCDWSlabs(A, B, C)
		default:
			_, slabLen = TCSlabs(R, cols)
		}
	}
	for i := r0; i < r1; i++ {
		for j := c0; j < c1; j++ {
			o := (i-r0)*wc + j - c0
			var v float32
			for s := 0; s*slabLen < R; s++ {
				q0, q1 := s*slabLen, min((s+1)*slabLen, R)
				var p float32 // +0
				switch {
				case tc && s == 0 && acc:
					p = out[o]
				case tc && s == 0 && bias != nil:
					p = bias[j]
				}
				if tc {
					for q := q0; q < q1; q += TCStepK {
						var a, b []float32
						for r := q; r < min(q+TCStepK, q1); r++ {
							a, b = append(a, at(i, r)), append(b, bt(r, j))
						}
						p = c.o.Model.Step(c.o.In, p, a, b)
					}
				} else {
					for r := q0; r < q1; r++ {
						p = FMA32(at(i, r), bt(r, j), p)
					}
				}
				switch {
				case tc && s == 0:
					v = p
				case !tc && s == 0 && !acc:
					v = p
				case s == 0: // IEEE dW: slab 0 is added to the master
					v = Add32(out[o], p)
				default:
					v = Add32(v, p)
				}
			}
			if !tc && bias != nil {
				v = Add32(v, bias[j])
			}
			if d := c.outType(); d.Half() {
				v = d.ToF32(d.FromF32(v))
			}
			out[o] = v
		}
	}
	return out
}

func firstDiff(a, b []float32) int {
	if len(a) != len(b) {
		return 0
	}
	for i := range a {
		if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
			return i
		}
	}
	return -1
}

// FuzzRef drives Options.Forward, DX and DW with fuzzed tiers, types,
// models, operand forms, output windows, shapes, slice lengths and data.
// None may panic; a refusal is an *ArgError matching ErrDim, ErrLength,
// ErrDType, ErrTier, ErrRange, ErrTCModel or ErrInexact (the last only for
// raw, inexact float32 inputs of a 16-bit type); a call with valid options,
// a small shape and every length sufficient is accepted. An accepted call
// gives the bits of a naive evaluation of the documented plan over its
// window, and the same bits with 1 and 3 workers.
func FuzzRef(f *testing.F) {
	type seed struct {
		op, tier, in, out, model uint8
		bt, eb, ma               int
		A, B, C                  int64
		dA, dB, dOut, dBias      int8
		biasOn, raw, bits, specs bool
		rLo, rHi, cLo, cHi       int16
		data                     uint64
	}
	const big = math.MaxInt64
	seeds := []seed{
		{0, 1, 1, 0, 0, 0, 0, 0, 3, 5, 7, 0, 0, 0, 0, true, false, false, false, 0, 0, 0, 0, 1},
		{0, 1, 1, 1, 0, 0, 0, 0, 2, 300, 3, 0, 0, 0, 0, true, false, false, true, 0, 0, 0, 0, 2},    // two slabs
		{1, 1, 1, 0, 0, 0, 0, 0, 2, 513, 3, 0, 0, 0, 0, false, false, false, true, 0, 0, 0, 0, 3},   // three slabs
		{2, 1, 1, 0, 0, 0, 0, 0, 600, 2, 3, 0, 0, 0, 0, false, false, false, true, 0, 0, 0, 0, 4},   // dW slabs
		{0, 1, 2, 0, 0, 0, 0, 0, 4, 16, 8, 0, 0, 0, 0, true, false, true, true, 0, 0, 0, 0, 5},      // bf16 bits
		{1, 1, 3, 1, 0, 0, 0, 0, 4, 16, 8, 0, 0, 0, 0, false, false, false, true, 0, 0, 0, 0, 6},    // f16 values, f32 out
		{2, 1, 2, 0, 0, 0, 0, 0, 300, 3, 4, 0, 0, 0, 0, false, false, true, true, 0, 0, 0, 0, 7},    // typed dW
		{0, 2, 2, 1, 0, 0, 0, 0, 3, 33, 5, 0, 0, 0, 0, true, false, false, true, 0, 0, 0, 0, 8},     // TC, partial step
		{1, 2, 3, 1, 1, 0, 0, 0, 3, 40, 5, 0, 0, 0, 0, false, false, false, true, 0, 0, 0, 0, 9},    // Ampere
		{2, 2, 2, 0, 0, 0, 0, 0, 2048, 1, 2, 0, 0, 0, 0, false, false, true, false, 0, 0, 0, 0, 10}, // TC dW cut
		{0, 2, 3, 0, 0, 0, 0, 0, 2, 17, 3, 0, 0, 0, 0, true, false, true, true, 0, 0, 0, 0, 11},
		{1, 2, 2, 0, 1, 0, 0, 0, 2, 17, 3, 0, 0, 0, 0, false, false, true, true, 0, 0, 0, 0, 12},
		{0, 2, 2, 0, 2, 4, 3, -20, 2, 40, 3, 0, 0, 0, 0, true, false, true, true, 0, 0, 0, 0, 14}, // custom model
		{0, 2, 2, 0, 2, 3, 0, 0, 2, 4, 3, 0, 0, 0, 0, false, false, false, false, 0, 0, 0, 0, 15}, // invalid model
		{0, 2, 3, 0, 2, 16, 8, 0, 2, 4, 3, 0, 0, 0, 0, false, false, false, false, 0, 0, 0, 0, 16},
		{1, 2, 2, 0, 2, 16, 0, -301, 2, 4, 3, 0, 0, 0, 0, false, false, false, false, 0, 0, 0, 0, 17},
		{0, 2, 2, 1, 0, 0, 0, 0, 2, 4, 3, 0, 0, 0, 0, false, true, false, false, 0, 0, 0, 0, 18},  // inexact inputs
		{0, 1, 1, 0, 0, 0, 0, 0, 2, 4, 3, 0, 0, 0, 0, false, false, true, false, 0, 0, 0, 0, 19},  // Bits for f32
		{0, 2, 1, 0, 0, 0, 0, 0, 2, 4, 3, 0, 0, 0, 0, false, false, false, false, 0, 0, 0, 0, 20}, // f32 to the TC tier
		{0, 0, 1, 0, 0, 0, 0, 0, 2, 4, 3, 0, 0, 0, 0, false, false, false, false, 0, 0, 0, 0, 21}, // tier 0
		{1, 3, 1, 0, 0, 0, 0, 0, 2, 4, 3, 0, 0, 0, 0, false, false, false, false, 0, 0, 0, 0, 22}, // tier 3
		{0, 1, 0, 0, 0, 0, 0, 0, 2, 4, 3, 0, 0, 0, 0, false, false, false, false, 0, 0, 0, 0, 23}, // dtype 0
		{1, 1, 200, 0, 0, 0, 0, 0, 2, 4, 3, 0, 0, 0, 0, false, false, false, false, 0, 0, 0, 0, 24},
		{0, 1, 2, 3, 0, 0, 0, 0, 2, 4, 3, 0, 0, 0, 0, false, false, true, false, 0, 0, 0, 0, 25},  // f16 out of bf16
		{0, 1, 1, 0, 0, 0, 0, 0, 0, 4, 3, 0, 0, 0, 0, false, false, false, false, 0, 0, 0, 0, 26}, // M = 0
		{1, 1, 1, 0, 0, 0, 0, 0, 2, -1, 3, 0, 0, 0, 0, false, false, false, false, 0, 0, 0, 0, 27},
		{2, 1, 1, 0, 0, 0, 0, 0, 2, 4, math.MinInt64, 0, 0, 0, 0, false, false, false, false, 0, 0, 0, 0, 28},
		{0, 1, 1, 0, 0, 0, 0, 0, big, big, big, 0, 0, 0, 0, false, false, false, false, 0, 0, 0, 0, 29}, // overflow
		{0, 2, 2, 0, 0, 0, 0, 0, 1 << 32, 1 << 31, 1, 0, 0, 0, 0, false, false, false, false, 0, 0, 0, 0, 30},
		{2, 1, 1, 0, 0, 0, 0, 0, 1 << 62, 2, 1, 0, 0, 0, 0, false, false, false, false, 0, 0, 0, 0, 31},
		{0, 1, 1, 0, 0, 0, 0, 0, 3, 5, 7, -1, 0, 0, 0, false, false, false, false, 0, 0, 0, 0, 32}, // x short
		{1, 1, 1, 0, 0, 0, 0, 0, 3, 5, 7, 0, -1, 0, 0, false, false, false, false, 0, 0, 0, 0, 33}, // w short
		{2, 1, 1, 0, 0, 0, 0, 0, 3, 5, 7, 0, 0, -1, 0, false, false, false, false, 0, 0, 0, 0, 34}, // dw short
		{0, 1, 1, 0, 0, 0, 0, 0, 3, 5, 7, 0, 0, 0, -1, true, false, false, false, 0, 0, 0, 0, 35},  // bias short
		{0, 2, 2, 0, 0, 0, 0, 0, 3, 5, 7, 0, 0, -128, 0, true, false, true, false, 0, 0, 0, 0, 36}, // dst empty
		{0, 1, 1, 0, 0, 0, 0, 0, 3, 5, 7, 9, 9, 9, 9, true, false, false, false, 0, 0, 0, 0, 37},   // longer slices
		{0, 1, 1, 0, 0, 0, 0, 0, 5, 300, 9, 0, 0, 0, 0, true, false, false, true, 1, 3, 2, 7, 38},  // window
		{1, 2, 2, 2, 0, 0, 0, 0, 6, 40, 20, 0, 0, 0, 0, false, false, true, true, 4, 5, 0, 0, 39},  // one row
		{2, 2, 3, 0, 0, 0, 0, 0, 20, 6, 9, 0, 0, 0, 0, false, false, true, true, 0, 0, 8, 9, 40},   // one dW column
		{2, 1, 2, 0, 0, 0, 0, 0, 300, 6, 9, 0, 0, 0, 0, false, false, false, true, 2, 4, 3, 9, 41}, // dW window
		{0, 1, 1, 0, 0, 0, 0, 0, 3, 5, 7, 0, 0, 0, 0, false, false, false, false, 2, 2, 0, 0, 42},  // empty rows
		{1, 2, 2, 0, 0, 0, 0, 0, 3, 5, 7, 0, 0, 0, 0, false, false, false, false, 0, 0, -1, 3, 43}, // negative cols
		{0, 1, 1, 0, 0, 0, 0, 0, 3, 5, 7, 0, 0, 0, 0, false, false, false, false, 1, 4, 0, 0, 44},  // rows past M
	}
	for _, s := range seeds {
		f.Add(s.op, s.tier, s.in, s.out, s.model, s.bt, s.eb, s.ma, s.A, s.B, s.C, s.dA, s.dB, s.dOut, s.dBias,
			s.biasOn, s.raw, s.bits, s.specs, s.rLo, s.rHi, s.cLo, s.cHi, s.data)
	}
	f.Fuzz(func(t *testing.T, op, tier, in, out, model uint8, bt, eb, ma int, A, B, C int64, dA, dB, dOut, dBias int8,
		biasOn, raw, bits, specials bool, rLo, rHi, cLo, cHi int16, data uint64) {
		c := refCall{op: int(op) % len(fuzzOps), dims: [3]int{int(A), int(B), int(C)}, bits: bits}
		c.o = Options{Tier: Tier(tier % 4), In: DType(in), Out: DType(out),
			Rows: Span{int(rLo), int(rHi)}, Cols: Span{int(cLo), int(cHi)}}
		name := fuzzOps[c.op]
		switch model % 3 {
		case 0:
			c.o.Model = Hopper
		case 1:
			c.o.Model = Ampere
		default:
			c.o.Model = TCModel{Name: "fuzz", BlockTerms: bt, ExtraBits: eb, MinAlignExp: ma}
		}
		// Element counts each operand needs: left, right, output; the
		// output's rows and columns.
		var na, nb, rows, cols, nbias int
		small := true
		prod := func(x, y int) int {
			if x <= 0 || y <= 0 || x > fuzzMaxElems || y > fuzzMaxElems || x*y > fuzzMaxElems {
				small = false
				return 0
			}
			return x * y
		}
		X, Y, Z := c.dims[0], c.dims[1], c.dims[2]
		switch name {
		case "Forward": // M, K, N
			na, nb, rows, cols, nbias = prod(X, Y), prod(Y, Z), X, Z, Z
		case "DX": // M, N, K
			na, nb, rows, cols = prod(X, Y), prod(Z, Y), X, Z
		default: // dW: M, K, N
			na, nb, rows, cols = prod(X, Y), prod(X, Z), Y, Z
		}
		prod(rows, cols)
		// The window, when it is a valid one.
		r0, r1, c0, c1 := 0, rows, 0, cols
		window := true
		if !c.o.Rows.All() {
			r0, r1 = c.o.Rows.Lo, c.o.Rows.Hi
			window = window && r0 >= 0 && r0 < r1 && r1 <= rows
		}
		if !c.o.Cols.All() {
			c0, c1 = c.o.Cols.Lo, c.o.Cols.Hi
			window = window && c0 >= 0 && c0 < c1 && c1 <= cols
		}
		no := 0
		if small && window {
			no = (r1 - r0) * (c1 - c0)
		}
		r := rand.New(rand.NewPCG(data, 0xf022))
		exact := !raw || bits
		c.a = fuzzData(r, fuzzLen(na, small, dA), c.o.In, exact, specials)
		c.b = fuzzData(r, fuzzLen(nb, small, dB), c.o.In, exact, specials)
		c.out = fuzzData(r, fuzzLen(no, small && window, dOut), F32, false, specials)
		if biasOn {
			c.bia = fuzzData(r, fuzzLen(nbias, small && nbias > 0, dBias), F32, false, specials)
		}

		got, err := c.run(1)
		if err != nil {
			var ae *ArgError
			if !errors.As(err, &ae) || ae.Pkg != "ref" {
				t.Fatalf("%s %v: error %v is not a ref *ArgError", name, c.dims, err)
			}
			if !errors.Is(err, ErrDim) && !errors.Is(err, ErrLength) && !errors.Is(err, ErrDType) &&
				!errors.Is(err, ErrTier) && !errors.Is(err, ErrRange) && !errors.Is(err, ErrTCModel) &&
				!(errors.Is(err, ErrInexact) && !exact) {
				t.Fatalf("%s %v: error %v matches no sentinel it may", name, c.dims, err)
			}
			if small && errors.Is(err, ErrDim) {
				t.Fatalf("%s %v: a small positive shape refused: %v", name, c.dims, err)
			}
			if small && window && errors.Is(err, ErrLength) && len(c.a) >= na && len(c.b) >= nb && len(c.out) >= no &&
				(len(c.bia) == 0 || len(c.bia) >= nbias) {
				t.Fatalf("%s %v: every slice is long enough, yet %v", name, c.dims, err)
			}
			if small && window && errors.Is(err, ErrRange) {
				t.Fatalf("%s %v: the window %v × %v is inside the output, yet %v", name, c.dims, c.o.Rows, c.o.Cols, err)
			}
			return
		}
		if !small || !window {
			t.Fatalf("%s %v: accepted a shape or window %v × %v its slices cannot hold", name, c.dims, c.o.Rows, c.o.Cols)
		}
		switch {
		case c.o.Tier == IEEE && !c.o.In.Valid(), c.o.Tier == TensorCore && !c.o.In.Half():
			t.Fatalf("%s: accepted %v inputs to %v", name, c.o.In, c.o.Tier)
		case c.o.Tier != IEEE && c.o.Tier != TensorCore:
			t.Fatalf("%s: accepted %v", name, c.o.Tier)
		case c.o.Tier == TensorCore && c.o.Model.Valid() != nil:
			t.Fatalf("%s: accepted the invalid model %v", name, c.o.Model)
		case bits && !c.o.In.Half():
			t.Fatalf("%s: accepted Bits for %v", name, c.o.In)
		case name != "DW" && c.outType() != F32 && c.outType() != c.o.In:
			t.Fatalf("%s: accepted %v out of %v", name, c.outType(), c.o.In)
		}

		want := c.naive(r0, r1, c0, c1)
		if i := firstDiff(got[:len(want)], want); i >= 0 {
			t.Fatalf("%s %v (%v, %v): element %d is %#x, the documented plan gives %#x", name, c.dims, c.o.In, c.o.Model, i,
				math.Float32bits(got[i]), math.Float32bits(want[i]))
		}
		again, err := c.run(3)
		if err != nil {
			t.Fatal(err)
		}
		if i := firstDiff(got, again); i >= 0 {
			t.Fatalf("%s %v: 1 and 3 workers differ at element %d", name, c.dims, i)
		}
	})
}
