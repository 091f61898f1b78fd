package ref

import (
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

// The entry points FuzzRef drives, by index.
var fuzzOps = []string{
	"Forward", "DX", "DW",
	"ForwardTyped", "DXTyped", "DWTyped",
	"TCForward", "TCDX", "TCDW",
	"TCForwardTyped", "TCDXTyped", "TCDWTyped",
}

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

// refCall is one fuzzed call: the operands as float32 (the 16-bit ones
// hold exact values of d) and the call's shape in its own argument order.
type refCall struct {
	op             int
	d              DType
	m              TCModel
	dims           [3]int // the call's arguments in order: M,K,N or M,N,K
	a, b, out, bia []float32
	workers        int
}

// run calls the entry point on c's operands (copies, so a call never sees
// another's output) and returns the output as float32.
func (c refCall) run(o Options) ([]float32, error) {
	o.Workers = c.workers
	A, B, C := c.dims[0], c.dims[1], c.dims[2]
	out := append([]float32(nil), c.out...)
	switch fuzzOps[c.op] {
	case "Forward":
		return out, Forward(out, c.a, c.b, c.bia, A, B, C)
	case "DX":
		return out, DX(out, c.a, c.b, A, B, C)
	case "DW":
		return out, DW(out, c.a, c.b, A, B, C)
	case "TCForward":
		return out, o.TCForward(c.m, c.d, out, c.a, c.b, c.bia, A, B, C)
	case "TCDX":
		return out, o.TCDX(c.m, c.d, out, c.a, c.b, A, B, C)
	case "TCDW":
		return out, o.TCDW(c.m, c.d, out, c.a, c.b, A, B, C)
	case "DWTyped":
		return out, o.DWTyped(c.d, out, narrow(c.d, c.a), narrow(c.d, c.b), A, B, C)
	case "TCDWTyped":
		return out, o.TCDWTyped(c.m, c.d, out, narrow(c.d, c.a), narrow(c.d, c.b), A, B, C)
	}
	// The typed Forward and dX store 16-bit results.
	dst := narrow(c.d, c.out)
	var err error
	switch fuzzOps[c.op] {
	case "ForwardTyped":
		err = o.ForwardTyped(c.d, dst, narrow(c.d, c.a), narrow(c.d, c.b), c.bia, A, B, C)
	case "DXTyped":
		err = o.DXTyped(c.d, dst, narrow(c.d, c.a), narrow(c.d, c.b), A, B, C)
	case "TCForwardTyped":
		err = o.TCForwardTyped(c.m, c.d, dst, narrow(c.d, c.a), narrow(c.d, c.b), c.bia, A, B, C)
	case "TCDXTyped":
		err = o.TCDXTyped(c.m, c.d, dst, narrow(c.d, c.a), narrow(c.d, c.b), A, B, C)
	}
	return widen(c.d, dst), err
}

// naive recomputes c's result element by element, straight from the
// package documentation's plans: IEEE slabs of SlabLen terms chained with
// FMA32 from +0 and folded with Add32 (typed: widened inputs, one rounding
// at the store), or the tensor-core plan's slabs of 16-wide Steps.
func (c refCall) naive() []float32 {
	op := fuzzOps[c.op]
	tc := strings.HasPrefix(op, "TC")
	typed := strings.HasSuffix(op, "Typed")
	A, B, C := c.dims[0], c.dims[1], c.dims[2]
	// Output rows × cols, reduction length R, the operands' terms, and
	// the slab cut.
	var rows, cols, R int
	var at func(i, r int) float32 // left operand's term r of output row i
	var bt func(r, j int) float32 // right operand's term r of output column j
	var bias []float32
	acc := false
	switch op {
	case "Forward", "ForwardTyped", "TCForward", "TCForwardTyped":
		M, K, N := A, B, C
		rows, cols, R = M, N, K
		at = func(i, r int) float32 { return c.a[i*K+r] }
		bt = func(r, j int) float32 { return c.b[r*N+j] }
		if len(c.bia) > 0 {
			bias = c.bia
		}
	case "DX", "DXTyped", "TCDX", "TCDXTyped":
		M, N, K := A, B, C
		rows, cols, R = M, K, N
		at = func(i, r int) float32 { return c.a[i*N+r] }
		bt = func(r, j int) float32 { return c.b[j*N+r] }
	default: // dW
		M, K, N := A, B, C
		rows, cols, R = K, N, M
		at = func(i, r int) float32 { return c.a[r*K+i] }
		bt = func(r, j int) float32 { return c.b[r*N+j] }
		acc = true
	}
	out := append([]float32(nil), c.out[:rows*cols]...)
	store := typed && !acc // the typed Forward and dX round once at the store
	if store {
		out = widen(c.d, narrow(c.d, out))
	}
	slabLen := SlabLen
	if tc {
		switch {
		case acc:
			_, slabLen = TCDWSlabs(A, B, C)
		default:
			_, slabLen = TCSlabs(R, cols)
		}
	}
	for i := range rows {
		for j := range cols {
			var v float32
			for s := 0; s*slabLen < R; s++ {
				r0, r1 := s*slabLen, min((s+1)*slabLen, R)
				var p float32 // +0
				switch {
				case tc && s == 0 && acc:
					p = out[i*cols+j]
				case tc && s == 0 && bias != nil:
					p = bias[j]
				}
				if tc {
					for q := r0; q < r1; q += TCStepK {
						var a, b []float32
						for r := q; r < min(q+TCStepK, r1); r++ {
							a, b = append(a, at(i, r)), append(b, bt(r, j))
						}
						p = c.m.Step(c.d, p, a, b)
					}
				} else {
					for r := r0; r < r1; r++ {
						p = FMA32(at(i, r), bt(r, j), p)
					}
				}
				switch {
				case tc && s == 0:
					v = p
				case !tc && s == 0 && !acc:
					v = p
				case s == 0: // IEEE dW: slab 0 is added to the master
					v = Add32(out[i*cols+j], p)
				default:
					v = Add32(v, p)
				}
			}
			if !tc && bias != nil {
				v = Add32(v, bias[j])
			}
			out[i*cols+j] = v
		}
	}
	if store {
		out = widen(c.d, narrow(c.d, out))
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

// FuzzRef drives every plan entry point of the package with fuzzed shapes,
// slice lengths, dtypes, tensor-core models and data. None may panic;
// a refusal is an *ArgError matching ErrDim, ErrLength, ErrDType,
// ErrTCModel or ErrInexact (the last only for raw, inexact inputs to the
// float32 TC entry points); a call with every length sufficient and valid
// types is accepted. An accepted call gives the bits of a naive evaluation
// of the documented plan, the same bits with 1 and 3 workers, and (Forward
// and dX) row r of a batch equals row r computed alone.
func FuzzRef(f *testing.F) {
	type seed struct {
		op, dtype, model      uint8
		bt, eb, ma            int
		A, B, C               int64
		dA, dB, dOut, dBias   int8
		biasOn, raw, specials bool
		data                  uint64
	}
	const big = math.MaxInt64
	seeds := []seed{
		{0, 1, 0, 0, 0, 0, 3, 5, 7, 0, 0, 0, 0, true, false, false, 1},
		{0, 1, 0, 0, 0, 0, 2, 300, 3, 0, 0, 0, 0, true, false, true, 2},     // two slabs
		{1, 1, 0, 0, 0, 0, 2, 513, 3, 0, 0, 0, 0, false, false, true, 3},    // three slabs
		{2, 1, 0, 0, 0, 0, 600, 2, 3, 0, 0, 0, 0, false, false, true, 4},    // dW slabs
		{3, 2, 0, 0, 0, 0, 4, 16, 8, 0, 0, 0, 0, true, false, true, 5},      // bf16
		{4, 3, 0, 0, 0, 0, 4, 16, 8, 0, 0, 0, 0, false, false, true, 6},     // f16
		{5, 2, 0, 0, 0, 0, 300, 3, 4, 0, 0, 0, 0, false, false, true, 7},    // typed dW
		{6, 2, 0, 0, 0, 0, 3, 33, 5, 0, 0, 0, 0, true, false, true, 8},      // TC, partial step
		{7, 3, 1, 0, 0, 0, 3, 40, 5, 0, 0, 0, 0, false, false, true, 9},     // Ampere
		{8, 2, 0, 0, 0, 0, 2048, 1, 2, 0, 0, 0, 0, false, false, false, 10}, // TC dW cut
		{9, 3, 0, 0, 0, 0, 2, 17, 3, 0, 0, 0, 0, true, false, true, 11},
		{10, 2, 1, 0, 0, 0, 2, 17, 3, 0, 0, 0, 0, false, false, true, 12},
		{11, 3, 0, 0, 0, 0, 33, 2, 3, 0, 0, 0, 0, false, false, true, 13},
		{9, 2, 2, 4, 3, -20, 2, 40, 3, 0, 0, 0, 0, true, false, true, 14},    // custom model
		{6, 2, 2, 3, 0, 0, 2, 4, 3, 0, 0, 0, 0, false, false, false, 15},     // invalid model
		{6, 3, 2, 16, 8, 0, 2, 4, 3, 0, 0, 0, 0, false, false, false, 16},    // ExtraBits 8
		{7, 2, 2, 16, 0, -301, 2, 4, 3, 0, 0, 0, 0, false, false, false, 17}, // MinAlignExp
		{6, 2, 0, 0, 0, 0, 2, 4, 3, 0, 0, 0, 0, false, true, false, 18},      // inexact inputs
		{3, 1, 0, 0, 0, 0, 2, 4, 3, 0, 0, 0, 0, false, false, false, 19},     // f32 to a typed op
		{9, 0, 0, 0, 0, 0, 2, 4, 3, 0, 0, 0, 0, false, false, false, 20},     // dtype 0
		{4, 200, 0, 0, 0, 0, 2, 4, 3, 0, 0, 0, 0, false, false, false, 21},   // dtype 200
		{0, 1, 0, 0, 0, 0, 0, 4, 3, 0, 0, 0, 0, false, false, false, 22},     // M = 0
		{1, 1, 0, 0, 0, 0, 2, -1, 3, 0, 0, 0, 0, false, false, false, 23},    // negative
		{2, 1, 0, 0, 0, 0, 2, 4, math.MinInt64, 0, 0, 0, 0, false, false, false, 24},
		{0, 1, 0, 0, 0, 0, big, big, big, 0, 0, 0, 0, false, false, false, 25}, // overflow
		{0, 1, 0, 0, 0, 0, 1 << 31, 1 << 31, 1 << 31, 0, 0, 0, 0, true, false, false, 26},
		{6, 2, 0, 0, 0, 0, 1 << 32, 1 << 31, 1, 0, 0, 0, 0, false, false, false, 27},
		{2, 1, 0, 0, 0, 0, 1 << 62, 2, 1, 0, 0, 0, 0, false, false, false, 28},
		{0, 1, 0, 0, 0, 0, 3, 5, 7, -1, 0, 0, 0, false, false, false, 29},  // x short
		{1, 1, 0, 0, 0, 0, 3, 5, 7, 0, -1, 0, 0, false, false, false, 30},  // w short
		{2, 1, 0, 0, 0, 0, 3, 5, 7, 0, 0, -1, 0, false, false, false, 31},  // dw short
		{0, 1, 0, 0, 0, 0, 3, 5, 7, 0, 0, 0, -1, true, false, false, 32},   // bias short
		{9, 2, 0, 0, 0, 0, 3, 5, 7, 0, 0, -128, 0, true, false, false, 33}, // dst empty
		{0, 1, 0, 0, 0, 0, 3, 5, 7, 9, 9, 9, 9, true, false, false, 34},    // longer slices
	}
	for _, s := range seeds {
		f.Add(s.op, s.dtype, s.model, s.bt, s.eb, s.ma, s.A, s.B, s.C, s.dA, s.dB, s.dOut, s.dBias, s.biasOn, s.raw, s.specials, s.data)
	}
	f.Fuzz(func(t *testing.T, op, dtype, model uint8, bt, eb, ma int, A, B, C int64, dA, dB, dOut, dBias int8, biasOn, raw, specials bool, data uint64) {
		c := refCall{op: int(op) % len(fuzzOps), d: DType(dtype), dims: [3]int{int(A), int(B), int(C)}, workers: 1}
		name := fuzzOps[c.op]
		tc, typed := strings.HasPrefix(name, "TC"), strings.HasSuffix(name, "Typed")
		switch model % 3 {
		case 0:
			c.m = Hopper
		case 1:
			c.m = Ampere
		default:
			c.m = TCModel{Name: "fuzz", BlockTerms: bt, ExtraBits: eb, MinAlignExp: ma}
		}
		// Element counts each operand needs: left, right, output.
		var na, nb, no, nbias int
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
		case "Forward", "ForwardTyped", "TCForward", "TCForwardTyped": // M, K, N
			na, nb, no, nbias = prod(X, Y), prod(Y, Z), prod(X, Z), Z
		case "DX", "DXTyped", "TCDX", "TCDXTyped": // M, N, K
			na, nb, no = prod(X, Y), prod(Z, Y), prod(X, Z)
		default: // dW: M, K, N
			na, nb, no = prod(X, Y), prod(X, Z), prod(Y, Z)
		}
		r := rand.New(rand.NewPCG(data, 0xf022))
		exact := !raw || typed
		in := c.d
		if !tc && !typed {
			in = F32
		}
		c.a = fuzzData(r, fuzzLen(na, small, dA), in, exact, specials)
		c.b = fuzzData(r, fuzzLen(nb, small, dB), in, exact, specials)
		c.out = fuzzData(r, fuzzLen(no, small, dOut), F32, false, specials)
		if biasOn {
			c.bia = fuzzData(r, fuzzLen(nbias, small && nbias > 0, dBias), F32, false, specials)
		}

		got, err := c.run(Options{})
		if err != nil {
			var ae *ArgError
			if !errors.As(err, &ae) {
				t.Fatalf("%s %v: error %v is not an *ArgError", name, c.dims, err)
			}
			if !errors.Is(err, ErrDim) && !errors.Is(err, ErrLength) && !errors.Is(err, ErrDType) &&
				!errors.Is(err, ErrTCModel) && !(errors.Is(err, ErrInexact) && !exact) {
				t.Fatalf("%s %v: error %v matches no sentinel it may", name, c.dims, err)
			}
			if small && errors.Is(err, ErrDim) {
				t.Fatalf("%s %v: a small positive shape refused: %v", name, c.dims, err)
			}
			if small && errors.Is(err, ErrLength) && len(c.a) >= na && len(c.b) >= nb && len(c.out) >= no &&
				(len(c.bia) == 0 || len(c.bia) >= nbias) {
				t.Fatalf("%s %v: every slice is long enough, yet %v", name, c.dims, err)
			}
			return
		}
		if !small {
			t.Fatalf("%s %v: accepted a shape its slices cannot hold", name, c.dims)
		}
		if (tc || typed) && !c.d.Half() {
			t.Fatalf("%s: accepted dtype %v", name, c.d)
		}
		if tc && c.m.Valid() != nil {
			t.Fatalf("%s: accepted the invalid model %v", name, c.m)
		}

		want := c.naive()
		if i := firstDiff(got[:len(want)], want); i >= 0 {
			t.Fatalf("%s %v (%v, %v): element %d is %#x, the documented plan gives %#x", name, c.dims, c.d, c.m, i,
				math.Float32bits(got[i]), math.Float32bits(want[i]))
		}
		c3 := c
		c3.workers = 3
		again, err := c3.run(Options{})
		if err != nil {
			t.Fatal(err)
		}
		if i := firstDiff(got, again); i >= 0 {
			t.Fatalf("%s %v: 1 and 3 workers differ at element %d", name, c.dims, i)
		}
		// Batch invariance: Forward and dX rows computed alone.
		if acc := name == "DW" || name == "DWTyped" || name == "TCDW" || name == "TCDWTyped"; acc || X < 2 {
			return
		}
		row := int(data % uint64(X))
		lead, cols := Y, no/X // the left operand's row length; the output's
		one := c
		one.dims[0] = 1
		one.a = c.a[row*lead : (row+1)*lead]
		one.out = c.out[row*cols : (row+1)*cols]
		alone, err := one.run(Options{})
		if err != nil {
			t.Fatalf("%s: row %d alone: %v", name, row, err)
		}
		if i := firstDiff(alone[:cols], got[row*cols:(row+1)*cols]); i >= 0 {
			t.Fatalf("%s %v: row %d alone differs from the batch at column %d", name, c.dims, row, i)
		}
	})
}
