package ref

import (
	"errors"
	"fmt"
	"math"
)

// Tier is the arithmetic family of a reference computation.
type Tier uint8

// The tiers. The zero Tier is invalid, so a forgotten field is caught rather
// than read as one of them.
const (
	// IEEE is the plan of the f32 and typed tiers: slabs of SlabLen terms,
	// each an ascending FMA32 chain from +0, folded with Add32. With 16-bit
	// inputs it is the typed tier: exact widening, the f32 plan, one
	// rounding at the store.
	IEEE Tier = iota + 1
	// TensorCore is the tensor-core plan of Options.Model: ascending 16-wide
	// steps added by the architecture's rules (bf16 or f16 inputs).
	TensorCore
)

// String returns "IEEE", "TensorCore" or "Tier(n)".
func (t Tier) String() string {
	switch t {
	case IEEE:
		return "IEEE"
	case TensorCore:
		return "TensorCore"
	}
	return fmt.Sprintf("Tier(%d)", uint8(t))
}

// Span is the half-open range [Lo, Hi) of an output's rows or columns. The
// zero Span means all of them.
type Span struct{ Lo, Hi int }

// All reports whether s is the zero Span: the whole extent.
func (s Span) All() bool { return s == Span{} }

// bounds resolves s against an extent of n (n > 0).
func (s Span) bounds(op, arg string, n int) (lo, hi int, err error) {
	if s.All() {
		return 0, n, nil
	}
	if s.Lo < 0 || s.Lo >= s.Hi || s.Hi > n {
		return 0, 0, argErr(op, arg, ErrRange, "[%d, %d) is not a nonempty range inside [0, %d)", s.Lo, s.Hi, n)
	}
	return s.Lo, s.Hi, nil
}

// Operand holds a matrix's elements, row-major: float32 values, or the bit
// patterns of a 16-bit type. A matrix of type BF16 or F16 may be given
// either way (Values then holds its exact values, checked: ErrInexact); an
// F32 matrix only as Values. Set one of the two fields.
type Operand struct {
	Values []float32
	Bits   []uint16
}

// Values is the Operand of float32 values v.
func Values(v []float32) Operand { return Operand{Values: v} }

// Bits is the Operand of 16-bit patterns b (bf16 or f16, as Options says).
func Bits(b []uint16) Operand { return Operand{Bits: b} }

func (x Operand) len() int { return max(len(x.Values), len(x.Bits)) }

// mat is x as the plans read it, of type d.
func (x Operand) mat(d DType) mat {
	if x.Bits != nil {
		return mat{h: x.Bits, d: d}
	}
	return mat{f: x.Values, d: d}
}

// Options says how the reference computes a product: the tier and its
// arithmetic, the element types, which window of the output, and how many
// goroutines. Forward, DX and DW are its methods. For example the typed tier
// in bf16, or the Hopper tensor-core plan:
//
//	ref.Options{Tier: ref.IEEE, In: ref.BF16}
//	ref.Options{Tier: ref.TensorCore, In: ref.BF16, Out: ref.F32, Model: ref.Hopper}
//
// Rows and Cols select a window of the output (Forward: rows m, columns n;
// dX: rows m, columns k; dW: rows k, columns n): dst then holds only that
// window, row-major, (Rows.Hi-Rows.Lo) × (Cols.Hi-Cols.Lo), and its bits are
// those of the same elements of the whole output, since every element is
// its own fixed chain. The inputs are always the whole matrices, read in
// place: nothing is widened, transposed or copied beyond the slab of
// the right operand one task works on, so checking a few rows of a problem
// of many gigabytes costs those rows' multiply-adds and no extra memory.
//
// No option changes the order of a chain: an element's bits depend only on
// the tier, the model, the types and the data, never on Workers, the window
// or M.
type Options struct {
	// Tier is IEEE or TensorCore; the zero Tier is an error (ErrTier).
	Tier Tier
	// In is the inputs' type: F32, BF16 or F16 for IEEE; BF16 or F16 for
	// TensorCore. The bias and dW are always float32.
	In DType
	// Out is Forward's and dX's stored type: F32, or In; zero means In.
	// dW ignores it: the master is float32.
	Out DType
	// Model is the tensor-core arithmetic (Hopper, Ampere), TensorCore only.
	Model TCModel
	// Rows and Cols select the window of the output to compute; the zero
	// Span is all of it.
	Rows, Cols Span
	// Workers is the number of goroutines; 0 or less means
	// runtime.GOMAXPROCS(0). It never changes a result.
	Workers int
}

// Forward computes the window of Y[M,N] = X[M,K] @ W[K,N] (+ bias[N]) into
// dst, of type Out. Per element the IEEE tier folds its slabs, then adds
// bias[n] in float32; the tensor-core tier starts the chain at bias[n]. A
// bias of length 0 (nil included) means no bias, which is not the same as a
// zero bias: adding +0 would turn a -0 result into +0. Slices longer than
// the shape needs are fine (the prefix is used); dst must not overlap the
// inputs. See the package documentation for the plans.
func (o Options) Forward(dst, x, w Operand, bias []float32, M, K, N int) error {
	const op = "Forward"
	out, err := o.check(op, false)
	if err != nil {
		return err
	}
	if err := checkDims(op, "MKN", M, K, N); err != nil {
		return err
	}
	if err := o.checkForms(op, out, dst, "x", x, "w", w); err != nil {
		return err
	}
	if err := checkLens(op, "x", x.len(), M*K, "M*K", "w", w.len(), K*N, "K*N"); err != nil {
		return err
	}
	if len(bias) != 0 {
		if err := checkLen(op, "bias", len(bias), N, "N"); err != nil {
			return err
		}
	}
	m0, m1, n0, n1, err := o.window(op, "dst", dst, M, N, "M*N")
	if err != nil {
		return err
	}
	if err := checkExact(op, "x", o.In, x, m0, m1, K, 0, K); err != nil {
		return err
	}
	if err := checkExact(op, "w", o.In, w, 0, K, N, n0, n1); err != nil {
		return err
	}
	ep := &epilogue{out: out, f: dst.Values, h: dst.Bits, ld: n1 - n0}
	var b []float32
	if len(bias) != 0 {
		b = bias[n0:n1]
	}
	a, bm := x.mat(o.In).from(m0*K), w.mat(o.In).from(n0)
	I, J := m1-m0, n1-n0
	if o.Tier == TensorCore {
		_, l := TCSlabs(K, N)
		p := tcPlan{m: o.Model, emin: int32(minNormalExp(o.In)), a: a, ai: K, ar: 1, b: bm, br: N, bj: 1, I: I, J: J, R: K, L: l, start: b}
		p.run(o, ep, false)
		return nil
	}
	ep.bias = b
	rd := reduction{a: a, ai: K, ar: 1, b: bm, br: N, bj: 1, I: I, J: J, R: K}
	rd.run(o, ep, false)
	return nil
}

// DX computes the window of dX[M,K] = dY[M,N] @ W[K,N]ᵀ into dst, of type
// Out: the reduction runs over n, W read in place. dst must not overlap the
// inputs.
func (o Options) DX(dst, dy, w Operand, M, N, K int) error {
	const op = "DX"
	out, err := o.check(op, false)
	if err != nil {
		return err
	}
	if err := checkDims(op, "MNK", M, N, K); err != nil {
		return err
	}
	if err := o.checkForms(op, out, dst, "dy", dy, "w", w); err != nil {
		return err
	}
	if err := checkLens(op, "dy", dy.len(), M*N, "M*N", "w", w.len(), K*N, "K*N"); err != nil {
		return err
	}
	m0, m1, k0, k1, err := o.window(op, "dst", dst, M, K, "M*K")
	if err != nil {
		return err
	}
	if err := checkExact(op, "dy", o.In, dy, m0, m1, N, 0, N); err != nil {
		return err
	}
	if err := checkExact(op, "w", o.In, w, k0, k1, N, 0, N); err != nil {
		return err
	}
	ep := &epilogue{out: out, f: dst.Values, h: dst.Bits, ld: k1 - k0}
	a, b := dy.mat(o.In).from(m0*N), w.mat(o.In).from(k0*N)
	I, J := m1-m0, k1-k0
	if o.Tier == TensorCore {
		_, l := TCSlabs(N, K)
		p := tcPlan{m: o.Model, emin: int32(minNormalExp(o.In)), a: a, ai: N, ar: 1, b: b, br: 1, bj: N, I: I, J: J, R: N, L: l}
		p.run(o, ep, false)
		return nil
	}
	rd := reduction{a: a, ai: N, ar: 1, b: b, br: 1, bj: N, I: I, J: J, R: N}
	rd.run(o, ep, false)
	return nil
}

// DW accumulates the window of dW[K,N] += X[M,K]ᵀ @ dY[M,N] into dw, the
// window of the float32 master buffer, in place: the reduction runs over m.
// The IEEE tier adds each slab's chain to dw in order, so calls over
// consecutive micro-batches whose boundaries fall on multiples of SlabLen
// rows give the bits of one call; the tensor-core tier starts slab 0's
// chain at dw, so boundaries on multiples of 16 rows do where the plan has
// one slab (TCDWSlabs). dw must not overlap the inputs.
func (o Options) DW(dw []float32, x, dy Operand, M, K, N int) error {
	const op = "DW"
	if _, err := o.check(op, true); err != nil {
		return err
	}
	if err := checkDims(op, "MKN", M, K, N); err != nil {
		return err
	}
	if err := o.checkForms(op, F32, Values(dw), "x", x, "dy", dy); err != nil {
		return err
	}
	if err := checkLens(op, "x", x.len(), M*K, "M*K", "dy", dy.len(), M*N, "M*N"); err != nil {
		return err
	}
	k0, k1, n0, n1, err := o.window(op, "dw", Values(dw), K, N, "K*N")
	if err != nil {
		return err
	}
	if err := checkExact(op, "x", o.In, x, 0, M, K, k0, k1); err != nil {
		return err
	}
	if err := checkExact(op, "dy", o.In, dy, 0, M, N, n0, n1); err != nil {
		return err
	}
	ep := &epilogue{out: F32, f: dw, ld: n1 - n0}
	a, b := x.mat(o.In).from(k0), dy.mat(o.In).from(n0)
	I, J := k1-k0, n1-n0
	if o.Tier == TensorCore {
		_, l := TCDWSlabs(M, K, N)
		p := tcPlan{m: o.Model, emin: int32(minNormalExp(o.In)), a: a, ai: 1, ar: K, b: b, br: N, bj: 1, I: I, J: J, R: M, L: l}
		p.run(o, ep, true)
		return nil
	}
	rd := reduction{a: a, ai: 1, ar: K, b: b, br: N, bj: 1, I: I, J: J, R: M}
	rd.run(o, ep, true)
	return nil
}

// check validates the tier, the model and the types, and returns the
// stored type (F32 for dW).
func (o Options) check(op string, dw bool) (DType, error) {
	switch o.Tier {
	case IEEE:
		if !o.In.Valid() {
			return 0, argErr(op, "In", ErrDType, "%v is not f32, bf16 or f16", o.In)
		}
	case TensorCore:
		if err := o.Model.Valid(); err != nil {
			var ae *ArgError
			if errors.As(err, &ae) {
				ae.Op = op
				ae.Arg = "Model." + ae.Arg
			}
			return 0, err
		}
		if !o.In.Half() {
			return 0, argErr(op, "In", ErrDType, "the tensor-core tier takes bf16 or f16 inputs, not %v", o.In)
		}
	default:
		return 0, argErr(op, "Tier", ErrTier, "%v is not IEEE or TensorCore", o.Tier)
	}
	if dw {
		return F32, nil
	}
	out := o.Out
	if out == 0 {
		out = o.In
	}
	if out != F32 && out != o.In {
		return 0, argErr(op, "Out", ErrDType, "%v inputs store f32 or %v, not %v", o.In, o.In, out)
	}
	return out, nil
}

// checkForms rejects an operand given in a form its type does not allow:
// both fields set, or Bits for float32.
func (o Options) checkForms(op string, out DType, dst Operand, an string, a Operand, bn string, b Operand) error {
	for _, c := range []struct {
		arg string
		x   Operand
		d   DType
	}{{"dst", dst, out}, {an, a, o.In}, {bn, b, o.In}} {
		switch {
		case c.x.Values != nil && c.x.Bits != nil:
			return argErr(op, c.arg, ErrDType, "both Values and Bits are set")
		case c.x.Bits != nil && !c.d.Half():
			return argErr(op, c.arg, ErrDType, "Bits given for %v (want Values)", c.d)
		}
	}
	return nil
}

// checkLens checks the two inputs' lengths.
func checkLens(op, an string, ha, na int, wa, bn string, hb, nb int, wb string) error {
	if err := checkLen(op, an, ha, na, wa); err != nil {
		return err
	}
	return checkLen(op, bn, hb, nb, wb)
}

// window resolves Rows and Cols against an output of rows x cols and checks
// that dst (argument arg) holds the window.
func (o Options) window(op, arg string, dst Operand, rows, cols int, what string) (r0, r1, c0, c1 int, err error) {
	if r0, r1, err = o.Rows.bounds(op, "Rows", rows); err != nil {
		return
	}
	if c0, c1, err = o.Cols.bounds(op, "Cols", cols); err != nil {
		return
	}
	if o.Rows.All() && o.Cols.All() {
		err = checkLen(op, arg, dst.len(), rows*cols, what)
	} else {
		err = checkLen(op, arg, dst.len(), (r1-r0)*(c1-c0), "the window's elements")
	}
	return
}

// checkExact rejects a value of x's Values, at rows [r0, r1) and columns
// [c0, c1) of stride ld (the elements the call reads), that is not exactly
// a value of the 16-bit type d. A NaN of any payload is accepted: every
// 16-bit NaN widens to a NaN. Bits, and float32 inputs, need no check.
func checkExact(op, arg string, d DType, x Operand, r0, r1, ld, c0, c1 int) error {
	if !d.Half() || x.Bits != nil {
		return nil
	}
	for r := r0; r < r1; r++ {
		for i := r*ld + c0; i < r*ld+c1; i++ {
			v := x.Values[i]
			u := math.Float32bits(v)
			ok := v != v
			if d == BF16 {
				ok = ok || u&0xFFFF == 0 // bf16 is float32's top half
			} else {
				ok = ok || math.Float32bits(F32FromF16(F16FromF32(v))) == u
			}
			if !ok {
				return argErr(op, arg, ErrInexact, "element %d = %v is not a %s value", i, v, d)
			}
		}
	}
	return nil
}
