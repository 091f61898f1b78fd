package ref

import (
	"errors"
	"fmt"
	"math"
)

// Gated activations: h = [a | b] is one projection, y = a ⊙ act(b), and
// from the output's gradient dy, da = dy·act(b) and db = dy·a·act′(b).
// act and act′ are fixed sequences of float32 operations like the other
// transcendentals (activation.go), transcribed line for line in
// kernels/cuda/activation.cuh (dg_silu, dg_silu_grad, dg_gate_act,
// dg_gate_grad; docs/contract.md, section "Transcendentals").

// ErrGate: a Gate is not one of GLU, ReGLU, SwiGLU, GeGLU.
var ErrGate = errors.New("invalid gate")

// Gate is a gated activation's kind. The zero value is not a gate.
type Gate uint8

// The gates. Their codes 1..4 are shared with the CUDA code (dg_gate_act's
// and dg_gate_grad's g).
const (
	// GLU: act = σ, the logistic sigmoid (Sigmoid32).
	GLU Gate = 1 + iota
	// ReGLU: act = ReLU (Relu32).
	ReGLU
	// SwiGLU: act = SiLU, x·σ(x) (Silu32).
	SwiGLU
	// GeGLU: act = GELU, the tanh form (Gelu32).
	GeGLU
	numGates
)

// Valid reports whether g is GLU, ReGLU, SwiGLU or GeGLU.
func (g Gate) Valid() bool { return g >= GLU && g < numGates }

// String returns "GLU", "ReGLU", "SwiGLU", "GeGLU", or "Gate(n)".
func (g Gate) String() string {
	switch g {
	case GLU:
		return "GLU"
	case ReGLU:
		return "ReGLU"
	case SwiGLU:
		return "SwiGLU"
	case GeGLU:
		return "GeGLU"
	}
	return fmt.Sprintf("Gate(%d)", uint8(g))
}

// sigmoidBoth returns s = σ(x) and sm = σ(-x) from one sigmoidParts call,
// for a non-NaN x: pos and neg, swapped for x < 0 (as Sigmoid32 and
// GeluGrad32 choose them).
func sigmoidBoth(x float32) (s, sm float32) {
	pos, neg := sigmoidParts(x, 0)
	if x >= 0 {
		return pos, neg
	}
	return neg, pos
}

// Silu32 returns SiLU (swish), x·σ(x), as mul(x, σ(x)) with σ(x) as
// Sigmoid32 computes it. NaN gives the canonical NaN, +Inf +Inf, -Inf -0
// (the limit), -0 -0.
func Silu32(x float32) float32 {
	switch {
	case x != x:
		return canonicalNaN
	case x == float32(math.Inf(-1)):
		return float32(math.Copysign(0, -1))
	}
	return mul32(x, sigmoidOne(x, 0))
}

// SiluGrad32 returns the derivative of SiLU, σ(x)·(1 + x·σ(-x)), as
// mul(s, fma(x, sm, 1)) with s = σ(x) and sm = σ(-x) from one exponential.
// NaN gives the canonical NaN, +Inf 1, -Inf -0 (the limit). Near its root
// (x ≈ -1.2785) the result is small and its error, measured in its own
// ulps, large; docs/contract.md states the absolute error there.
func SiluGrad32(x float32) float32 {
	switch {
	case x != x:
		return canonicalNaN
	case x == float32(math.Inf(1)):
		return 1
	case x == float32(math.Inf(-1)):
		return float32(math.Copysign(0, -1))
	}
	s, sm := sigmoidBoth(x)
	return mul32(s, FMA32(x, sm, 1))
}

// GateAct32 returns the gate's activation of b: GLU σ(b) (Sigmoid32),
// ReGLU Relu32(b), SwiGLU Silu32(b), GeGLU Gelu32(b). An invalid gate is
// the identity (b), as in the CUDA twin, which never sees one.
func GateAct32(g Gate, b float32) float32 {
	switch g {
	case GLU:
		return Sigmoid32(b)
	case ReGLU:
		return Relu32(b)
	case SwiGLU:
		return Silu32(b)
	case GeGLU:
		return Gelu32(b)
	}
	return b
}

// GateActGrad32 returns GateAct32(g, b) and GateGrad32(g, b), bit for bit,
// from one exponential (one geluArg for GeGLU): the backward's pair, at
// about half the cost of the two calls.
func GateActGrad32(g Gate, b float32) (act, grad float32) {
	switch g {
	case GLU:
		if b != b {
			return canonicalNaN, canonicalNaN
		}
		s, sm := sigmoidBoth(b)
		return s, mul32(s, sm)
	case ReGLU:
		return Relu32(b), GateGrad32(ReGLU, b)
	case SwiGLU:
		switch {
		case b != b:
			return canonicalNaN, canonicalNaN
		case b == float32(math.Inf(1)):
			return b, 1
		case b == float32(math.Inf(-1)):
			nz := float32(math.Copysign(0, -1))
			return nz, nz
		}
		s, sm := sigmoidBoth(b)
		return mul32(b, s), mul32(s, FMA32(b, sm, 1))
	case GeGLU:
		switch {
		case b != b:
			return canonicalNaN, canonicalNaN
		case abs32(b) >= f32of(bitsGeluSat):
			if b > 0 {
				return b, 1
			}
			nz := float32(math.Copysign(0, -1))
			return nz, nz
		}
		x2, z, zl := geluArg(b)
		zp := FMA32(f32of(bitsGeluK2), x2, f32of(bitsGeluK0))
		pos, neg := sigmoidParts(z, zl)
		s, sm := pos, neg
		if z < 0 {
			s, sm = neg, pos
		}
		return mul32(b, s), mul32(s, FMA32(mul32(b, sm), zp, 1))
	}
	return b, 1
}

// GateGrad32 returns the derivative of the gate's activation at b: GLU
// mul(σ(b), σ(-b)) (one exponential); ReGLU 1 for b > 0, the canonical NaN
// for NaN, else +0; SwiGLU SiluGrad32(b); GeGLU GeluGrad32(b). An invalid
// gate is the identity's derivative, 1, as in the CUDA twin.
func GateGrad32(g Gate, b float32) float32 {
	switch g {
	case GLU:
		if b != b {
			return canonicalNaN
		}
		s, sm := sigmoidBoth(b)
		return mul32(s, sm)
	case ReGLU:
		switch {
		case b > 0:
			return 1
		case b != b:
			return canonicalNaN
		}
		return 0
	case SwiGLU:
		return SiluGrad32(b)
	case GeGLU:
		return GeluGrad32(b)
	}
	return 1
}

// roundTo rounds x once, to nearest even, to out (F32: x itself), and
// returns the rounded value as an exact float32: the store's rounding.
func roundTo(out DType, x float32) float32 {
	if out == F32 {
		return x
	}
	return out.ToF32(out.FromF32(x))
}

// checkGated validates a gated helper's gate, output type and lengths:
// every slice must have the length of the first.
func checkGated(op string, g Gate, out DType, names []string, xs ...[]float32) error {
	if !g.Valid() {
		return argErr(op, "g", ErrGate, "%v is not GLU, ReGLU, SwiGLU or GeGLU", g)
	}
	if !out.Valid() {
		return argErr(op, "out", ErrDType, "%v is not f32, bf16 or f16", out)
	}
	for i, x := range xs[1:] {
		if len(x) != len(xs[0]) {
			return argErr(op, names[i+1], ErrLength, "length %d != len(%s) = %d", len(x), names[0], len(xs[0]))
		}
	}
	return nil
}

// GatedForward sets y[i] = a[i]·act(b[i]) (mul(a, GateAct32(g, b)))
// rounded once to out (F32, BF16 or F16; y holds the rounded value as an
// exact float32). y, a and b must have the same length; y may be a or b
// itself. It refuses an invalid gate (ErrGate), an invalid out (ErrDType)
// and mismatched lengths (ErrLength) with an *ArgError, writing nothing.
func GatedForward(g Gate, out DType, y, a, b []float32) error {
	if err := checkGated("GatedForward", g, out, []string{"y", "a", "b"}, y, a, b); err != nil {
		return err
	}
	for i := range y {
		y[i] = roundTo(out, mul32(a[i], GateAct32(g, b[i])))
	}
	return nil
}

// GatedBackward sets da[i] = dy[i]·act(b[i]) (mul(dy, GateAct32(g, b)))
// and db[i] = (dy[i]·a[i])·act′(b[i]) (mul(mul(dy, a), GateGrad32(g, b))),
// each rounded once to out (F32, BF16 or F16, as exact float32 values).
// Every slice must have the same length; an output may be one of the
// inputs itself (each element's inputs are read before it is written).
// Errors as GatedForward's.
func GatedBackward(g Gate, out DType, da, db, dy, a, b []float32) error {
	if err := checkGated("GatedBackward", g, out, []string{"da", "db", "dy", "a", "b"}, da, db, dy, a, b); err != nil {
		return err
	}
	for i := range da {
		d, x := dy[i], a[i]
		act, grad := GateActGrad32(g, b[i])
		da[i] = roundTo(out, mul32(d, act))
		db[i] = roundTo(out, mul32(mul32(d, x), grad))
	}
	return nil
}

// gatedCol is ca(j) = (j/8)·16 + j%8, the product column of gate output
// j's a; its b is at ca(j) + 8 (the fused layout: blocks of 8 columns,
// a's and b's alternating).
func gatedCol(j int) int { return j/8*16 + j%8 }

// matmulGated runs a gated epilogue (out is the checked output type):
// the gated restrictions and the operands only it has are checked here,
// the product by the Default or Bias request with a float32 output into a
// scratch of the window's rows, which checks the rest; then the gate per
// element, rounding once at the store. Nothing the caller gave is
// written before every check has passed.
func (o Options) matmulGated(r MatmulRequest, out DType) error {
	const op = "Matmul"
	e := r.Epilogue
	g, back := e.Gate(), e.GatedBackward()
	bias, auxOut := e.gatedBias(), e.gatedAux()
	if err := checkDims(op, "MNK", r.M, r.N, r.K); err != nil {
		return err
	}
	M, N := r.M, r.N
	switch {
	case !back && N%16 != 0:
		return argErr(op, "N", ErrDim, "%v needs a product width that is a multiple of 16 (blocks of 8 columns of a and of b), not %d", e, N)
	case back && N%8 != 0:
		return argErr(op, "N", ErrDim, "%v needs a product width that is a multiple of 8, not %d", e, N)
	}
	m0, m1, err := o.Rows.bounds(op, "Rows", M)
	if err != nil {
		return err
	}
	switch {
	case !o.Cols.All():
		return argErr(op, "Cols", ErrRange, "%v takes no column window (D's columns are not the product's)", e)
	case r.Beta != 0:
		return argErr(op, "Beta", ErrOperand, "%v takes no C: beta must be 0, not %v", e, r.Beta)
	case r.ReduceOverBatch:
		return argErr(op, "ReduceOverBatch", ErrEpilogue, "%v is not a reduction over the batch", e)
	case len(r.BiasGrad) != 0:
		return argErr(op, "BiasGrad", ErrOperand, "%v does not use a bias gradient", e)
	case len(r.ReluMask) != 0:
		return argErr(op, "ReluMask", ErrOperand, "%v does not use a ReLU mask", e)
	case bias && len(r.Bias) == 0:
		return argErr(op, "Bias", ErrOperand, "%v needs a bias", e)
	case !bias && len(r.Bias) != 0:
		return argErr(op, "Bias", ErrOperand, "%v does not use a bias", e)
	}
	useAux := back || auxOut
	auxType := out
	if r.Aux.Bits != nil {
		auxType = o.In // a 16-bit aux is of the 16-bit input type
	}
	for _, c := range []struct {
		arg string
		x   Operand
		d   DType
	}{{"C", r.C, out}, {"D", r.D, out}, {"Aux", r.Aux, auxType}} {
		if err := checkForm(op, c.arg, c.x, c.d); err != nil {
			return err
		}
	}
	switch {
	case r.D.len() == 0:
		return argErr(op, "D", ErrOperand, "missing (every product has D)")
	case useAux && r.Aux.len() == 0:
		return argErr(op, "Aux", ErrOperand, "missing (%v writes or reads the gate's input)", e)
	case !useAux && r.Aux.len() != 0:
		return argErr(op, "Aux", ErrOperand, "%v writes or reads no aux", e)
	}

	// D, the aux: their shapes are the gate's, not the product's.
	I := m1 - m0
	width, auxRows, auxCols := N/2, I, N // forward: D I × N/2, aux out I × N
	if back {
		width, auxRows, auxCols = 2*N, M, 2*N // D I × 2N, aux in M × 2N (whole)
	}
	dd, err := resolveLD(op, "LDD", r.LDD, I, width)
	if err != nil {
		return err
	}
	var dx matDims
	if useAux {
		if dx, err = resolveLD(op, "LDAux", r.LDAux, auxRows, auxCols); err != nil {
			return err
		}
	}
	if err := checkLen(op, "D", r.D.len(), dd.extent(), fmt.Sprintf("(%d-1)*%d+%d", dd.rows, dd.ld, dd.cols)); err != nil {
		return err
	}
	if useAux {
		if err := checkLen(op, "Aux", r.Aux.len(), dx.extent(), fmt.Sprintf("(%d-1)*%d+%d", dx.rows, dx.ld, dx.cols)); err != nil {
			return err
		}
	}
	if bias {
		if err := checkLen(op, "Bias", len(r.Bias), N, "N"); err != nil {
			return err
		}
	}

	// Overlaps: the outputs (D, an output aux) against the inputs (A, B,
	// the bias, an input aux) and each other.
	da, db, err := r.operandDims(op)
	if err != nil {
		return err
	}
	type named struct {
		arg string
		s   span
	}
	inputs := []named{{"A", spanOf(r.A, 0, da.extent())}, {"B", spanOf(r.B, 0, db.extent())}}
	if bias {
		inputs = append(inputs, named{"Bias", spanOfF32(r.Bias, N)})
	}
	outputs := []named{{"D", spanOf(r.D, 0, dd.extent())}}
	switch {
	case back:
		inputs = append(inputs, named{"Aux", spanOf(r.Aux, 0, dx.extent())})
	case auxOut:
		outputs = append(outputs, named{"Aux", spanOf(r.Aux, 0, dx.extent())})
	}
	for i, w := range outputs {
		for _, x := range append(inputs, outputs[:i]...) {
			if w.s.overlaps(x.s) {
				return argErr(op, w.arg, ErrOverlap, "shares memory with %s", x.arg)
			}
		}
	}

	// The product: v as the Default (Bias) epilogue with a float32 output
	// leaves it, for the window's rows, by the same code and plans.
	inner := MatmulRequest{M: M, N: N, K: r.K, TransA: r.TransA, TransB: r.TransB, A: r.A, B: r.B,
		LDA: r.LDA, LDB: r.LDB, Alpha: r.Alpha, LDD: N, Epilogue: Default}
	if bias {
		inner.Epilogue, inner.Bias = Bias, r.Bias
	}
	v := make([]float32, I*N)
	inner.D = Values(v)
	io := o
	io.Out, io.Cols = F32, Span{}
	if err := io.Matmul(inner); err != nil {
		return err
	}

	// The gate, per element, rounding once at the store.
	aux := auxBuf{f: r.Aux.Values, h: r.Aux.Bits, d: auxType, ld: dx.ld}
	row := make([]float32, width)
	for i := range I {
		p := v[i*N : (i+1)*N]
		if back {
			off := (m0 + i) * aux.ld
			for j, dy := range p {
				ca := gatedCol(j)
				a, b := aux.value(off+ca), aux.value(off+ca+8)
				row[ca] = mul32(dy, GateAct32(g, b))
				row[ca+8] = mul32(mul32(dy, a), GateGrad32(g, b))
			}
		} else {
			if auxOut {
				store(aux.d, aux.f, aux.h, i*aux.ld, p) // the product, rounded as D is
			}
			for j := range row {
				ca := gatedCol(j)
				row[j] = mul32(p[ca], GateAct32(g, p[ca+8]))
			}
		}
		store(out, r.D.Values, r.D.Bits, i*dd.ld, row)
	}
	return nil
}
