package ref

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// matmulOf is the Matmul request equal to the apiCase's Forward, DX or DW
// (whole output), with D (and C, for DW) in the case's form.
func (k apiCase) matmulOf() (MatmulRequest, Operand) {
	A, B, C, rows, cols := k.dims()
	in := k.c.in
	r := MatmulRequest{A: k.operand(in, k.left), B: k.operand(in, k.right), Alpha: 1}
	switch k.op {
	case "Forward": // Y[M,N] = X[M,K] W[K,N] (+ bias): NN
		r.M, r.K, r.N = A, B, C
		if k.bias != nil {
			r.Bias, r.Epilogue = k.bias, Bias
		}
	case "DX": // dX[M,K] = dY[M,N] W[K,N]ᵀ: NT, reduction N
		r.M, r.K, r.N, r.TransB = A, B, C, true
	default: // dW[K,N] += X[M,K]ᵀ dY[M,N]: TN, reduction M, beta 1 onto the master
		r.M, r.K, r.N, r.TransA = B, A, C, true
		r.Beta, r.ReduceOverBatch = 1, true
		dw := Values(append([]float32(nil), k.dw0...))
		r.C, r.D = dw, dw
		return r, dw
	}
	d := k.operand(k.c.out, make([]float32, rows*cols))
	r.D = d
	return r, d
}

// TestMatmulSpecialCasesAreForwardDXDW: Matmul with alpha = 1, beta = 0,
// NN and the Bias (or Default) epilogue is Forward bit for bit; NT is DX;
// TN with beta = 1 onto the master in place (C = D) is DW — in every tier,
// model, pair of types and operand form, on random and adversarial data,
// including the shapes whose plans cut the reduction into slabs.
func TestMatmulSpecialCasesAreForwardDXDW(t *testing.T) {
	for _, k := range apiCases(21) {
		o := k.c.options(2)
		if k.op == "DW" {
			o.Out = F32 // the master: C and D are float32
		}
		want, err := k.run(o)
		if err != nil {
			t.Fatalf("%s: %v", k.name(), err)
		}
		r, d := k.matmulOf()
		if err := o.Matmul(r); err != nil {
			t.Fatalf("%s: Matmul: %v", k.name(), err)
		}
		out := k.c.out
		if k.op == "DW" {
			out = F32
		}
		if i := sameBitsAt(result(out, d), want); i >= 0 {
			t.Fatalf("%s: element %d: Matmul %#08x, %s %#08x", k.name(), i,
				math.Float32bits(result(out, d)[i]), k.op, math.Float32bits(want[i]))
		}
	}
}

// naiveMatmul evaluates the contract of docs/contract.md, section
// "Matmul", element by element, literally: the plans' chains by FMA32 and
// TCModel.Step, the rule for alpha, beta·C and the bias as written, the
// activation, the aux, the store and the bias gradient. It shares no code
// with Options.Matmul beyond the arithmetic and the transcendentals. D, an
// output aux and BiasGrad are whole and contiguous (no window).
type naiveOut struct {
	d     []float32 // the stored D, widened
	aux   []float32 // GELU aux, widened
	mask  []uint8
	bgrad []float32
}

// mmCase is one Matmul problem as float32 values (16-bit operands hold
// exact values of their type), with strides.
type mmCase struct {
	c                  apiConfig
	M, N, K            int
	ta, tb             bool
	lda, ldb, ldc, ldx int
	a, b, cm           []float32
	alpha, beta        float32
	bias               []float32
	epi                Epilogue
	auxIn              []float32 // DGelu's input aux (whole, ldx)
	maskIn             []uint8   // DRelu's input mask (whole, ldx)
	bgrad0             []float32
	batch              bool // ReduceOverBatch
}

func (k *mmCase) opA(m, kk int) float32 {
	if k.ta {
		return k.a[kk*k.lda+m]
	}
	return k.a[m*k.lda+kk]
}

func (k *mmCase) opB(kk, n int) float32 {
	if k.tb {
		return k.b[n*k.ldb+kk]
	}
	return k.b[kk*k.ldb+n]
}

func (k *mmCase) naive() naiveOut {
	M, N, K := k.M, k.N, k.K
	spec := epilogueSpecs[k.epi]
	out := k.c.out
	if out == 0 {
		out = k.c.in
	}
	roundOut := func(x float32) float32 {
		if out == F32 {
			return x
		}
		return out.ToF32(out.FromF32(x))
	}
	res := naiveOut{d: make([]float32, M*N)}
	mask := k.epi.usesMask()
	switch {
	case spec.auxOut && mask:
		res.mask = make([]uint8, M*N)
	case spec.auxOut:
		res.aux = make([]float32, M*N)
	}
	tc := k.c.tier == TensorCore
	L := SlabLen
	if tc {
		_, L = TCSlabs(K, N)
		if k.batch {
			_, L = TCDWSlabs(K, M, N)
		}
	}
	for m := range M {
		for n := range N {
			var b float32
			if spec.bias {
				b = k.bias[n]
			}
			var cv float32
			if k.beta != 0 {
				cv = k.cm[m*k.ldc+n]
			}
			// The slab results p_s.
			var ps []float32
			start := tc && k.alpha == 1
			if k.alpha != 0 {
				for s0 := 0; s0 < K; s0 += L {
					s1 := min(s0+L, K)
					var p float32
					if tc {
						if s0 == 0 && start {
							switch {
							case k.beta != 0 && spec.bias:
								p = FMA32(k.beta, cv, b)
							case k.beta != 0:
								p = mul32(k.beta, cv)
							case spec.bias:
								p = b
							}
						}
						for st := s0; st < s1; st += TCStepK {
							var av, bv []float32
							for kk := st; kk < min(st+TCStepK, s1); kk++ {
								av, bv = append(av, k.opA(m, kk)), append(bv, k.opB(kk, n))
							}
							p = k.c.model.Step(k.c.in, p, av, bv)
						}
					} else {
						for kk := s0; kk < s1; kk++ {
							p = FMA32(k.opA(m, kk), k.opB(kk, n), p)
						}
					}
					ps = append(ps, p)
				}
			}
			var v float32
			if start {
				v = ps[0]
				for _, p := range ps[1:] {
					v = Add32(v, p)
				}
			} else {
				has := k.beta != 0
				if has {
					v = mul32(k.beta, cv)
				}
				for _, p := range ps {
					if has {
						v = FMA32(k.alpha, p, v)
					} else {
						v, has = mul32(k.alpha, p), true
					}
				}
				if spec.bias {
					v = Add32(v, b)
				}
			}
			if res.aux != nil {
				res.aux[m*N+n] = roundOut(v)
			}
			switch spec.act {
			case actRelu:
				v = Relu32(v)
			case actGelu:
				v = Gelu32(v)
			case actDRelu:
				switch k.maskIn[m*k.ldx+n] {
				case 0:
					v = 0
				case 1:
				default:
					v = canonicalNaN
				}
			case actDGelu:
				v = mul32(v, GeluGrad32(k.auxIn[m*k.ldx+n]))
			}
			d := roundOut(v)
			res.d[m*N+n] = d
			if res.mask != nil {
				switch {
				case d > 0:
					res.mask[m*N+n] = 1
				case d != d:
					res.mask[m*N+n] = 2
				}
			}
		}
	}
	chain := func(g float32, R int, at func(r int) float32) float32 {
		for s0 := 0; s0 < R; s0 += SlabLen {
			var p float32
			for r := s0; r < min(s0+SlabLen, R); r++ {
				p = Add32(p, at(r))
			}
			g = Add32(g, p)
		}
		return g
	}
	if spec.bgrad != noBgrad {
		n := N
		if spec.bgrad == bgradA {
			n = M
		}
		res.bgrad = append([]float32(nil), k.bgrad0[:n]...)
		for q := range res.bgrad {
			switch spec.bgrad {
			case bgradRows:
				res.bgrad[q] = chain(res.bgrad[q], M, func(r int) float32 { return res.d[r*N+q] })
			case bgradA:
				res.bgrad[q] = chain(res.bgrad[q], K, func(r int) float32 { return k.opA(q, r) })
			case bgradB:
				res.bgrad[q] = chain(res.bgrad[q], K, func(r int) float32 { return k.opB(r, q) })
			}
		}
	}
	return res
}

// request builds the Matmul request for the window rows [m0, m1) × cols
// [n0, n1), D, C and the aux in the given form; outputs with leading
// dimension ldd = width + pad. It returns readers of the outputs.
func (k *mmCase) request(bits bool, m0, m1, n0, n1, pad int) (MatmulRequest, func() naiveOut) {
	in := k.c.in
	out := k.c.out
	if out == 0 {
		out = in
	}
	form := func(d DType, v []float32) Operand {
		if bits && d.Half() {
			return Bits(narrow(d, v))
		}
		return Values(append([]float32(nil), v...))
	}
	I, J := m1-m0, n1-n0
	ldd := J + pad
	spec := epilogueSpecs[k.epi]
	r := MatmulRequest{
		M: k.M, N: k.N, K: k.K, TransA: k.ta, TransB: k.tb,
		A: form(in, k.a), B: form(in, k.b), LDA: k.lda, LDB: k.ldb,
		Alpha: k.alpha, Beta: k.beta, LDC: k.ldc, LDD: ldd,
		Epilogue: k.epi, ReduceOverBatch: k.batch,
	}
	if k.cm != nil {
		r.C = form(out, k.cm)
	}
	r.D = form(out, make([]float32, (I-1)*ldd+J))
	if spec.bias {
		r.Bias = k.bias
	}
	mask := k.epi.usesMask()
	switch {
	case spec.auxIn && mask:
		r.ReluMask, r.LDAux = k.maskIn, k.ldx
	case spec.auxIn:
		r.Aux, r.LDAux = form(in, k.auxIn), k.ldx
		if !bits {
			r.Aux = Values(k.auxIn) // any float32 is a valid pre-activation
		}
	case spec.auxOut && mask:
		r.ReluMask, r.LDAux = make([]uint8, (I-1)*ldd+J), ldd
	case spec.auxOut:
		r.Aux, r.LDAux = form(out, make([]float32, (I-1)*ldd+J)), ldd
	}
	switch spec.bgrad {
	case bgradA:
		r.BiasGrad = append([]float32(nil), k.bgrad0[m0:m1]...)
	case bgradB, bgradRows:
		r.BiasGrad = append([]float32(nil), k.bgrad0[n0:n1]...)
	}
	read := func() naiveOut {
		var res naiveOut
		pick := func(x Operand, d DType) []float32 {
			v := result(d, x)
			w := make([]float32, 0, I*J)
			for i := range I {
				w = append(w, v[i*ldd:i*ldd+J]...)
			}
			return w
		}
		res.d = pick(r.D, out)
		if spec.auxOut && mask {
			for i := range I {
				res.mask = append(res.mask, r.ReluMask[i*ldd:i*ldd+J]...)
			}
		} else if spec.auxOut {
			res.aux = pick(r.Aux, out)
		}
		res.bgrad = r.BiasGrad
		return res
	}
	return r, read
}

// window cuts the rows [m0, m1) × cols [n0, n1) out of a whole naive
// result, and the matching part of the bias gradient.
func (n naiveOut) window(k *mmCase, m0, m1, n0, n1 int) naiveOut {
	var w naiveOut
	for m := m0; m < m1; m++ {
		w.d = append(w.d, n.d[m*k.N+n0:m*k.N+n1]...)
		if n.aux != nil {
			w.aux = append(w.aux, n.aux[m*k.N+n0:m*k.N+n1]...)
		}
		if n.mask != nil && k.epi.usesMask() {
			w.mask = append(w.mask, n.mask[m*k.N+n0:m*k.N+n1]...)
		}
	}
	switch epilogueSpecs[k.epi].bgrad {
	case bgradA:
		w.bgrad = n.bgrad[m0:m1]
	case bgradB, bgradRows:
		w.bgrad = n.bgrad[n0:n1]
	}
	return w
}

// diff reports the first difference between two results, or "".
func (n naiveOut) diff(want naiveOut) string {
	for _, c := range []struct {
		name      string
		got, want []float32
	}{{"D", n.d, want.d}, {"Aux", n.aux, want.aux}, {"BiasGrad", n.bgrad, want.bgrad}} {
		if i := sameBitsAt(c.got, c.want); i >= 0 {
			if len(c.got) != len(c.want) {
				return fmt.Sprintf("%s: %d elements, want %d", c.name, len(c.got), len(c.want))
			}
			return fmt.Sprintf("%s[%d] = %v (%#08x), want %v (%#08x)", c.name, i, c.got[i], math.Float32bits(c.got[i]), c.want[i], math.Float32bits(c.want[i]))
		}
	}
	if len(n.mask) != len(want.mask) {
		return fmt.Sprintf("ReluMask: %d elements, want %d", len(n.mask), len(want.mask))
	}
	for i := range n.mask {
		if n.mask[i] != want.mask[i] {
			return fmt.Sprintf("ReluMask[%d] = %d, want %d", i, n.mask[i], want.mask[i])
		}
	}
	return ""
}

// The scalars the cases draw from: 1 and 0 (the special cases), -1, and
// scales that round.
var mmAlphas = []float32{1, 1, -1, 0.5, 3.1, 0}
var mmBetas = []float32{0, 0, 1, -1, 0.75, 1.1}

// newMMCase draws one problem: data of kind, leading dimensions padded by
// 0 to 3 elements, alpha and beta from the lists (beta = 0 with a C full
// of NaN, which must be ignored), aux inputs with every mask byte.
func newMMCase(rng *rand.Rand, c apiConfig, M, N, K int, ta, tb bool, epi Epilogue, kind string) *mmCase {
	k := &mmCase{c: c, M: M, N: N, K: K, ta: ta, tb: tb, epi: epi}
	aRows, aCols := M, K
	if ta {
		aRows, aCols = K, M
	}
	bRows, bCols := K, N
	if tb {
		bRows, bCols = N, K
	}
	k.lda, k.ldb, k.ldc, k.ldx = aCols+rng.IntN(4), bCols+rng.IntN(4), N+rng.IntN(4), N+rng.IntN(4)
	k.a = apiData(rng, kind, c.in, (aRows-1)*k.lda+aCols)
	k.b = apiData(rng, kind, c.in, (bRows-1)*k.ldb+bCols)
	k.alpha, k.beta = mmAlphas[rng.IntN(len(mmAlphas))], mmBetas[rng.IntN(len(mmBetas))]
	out := c.out
	if out == 0 {
		out = c.in
	}
	k.cm = apiData(rng, kind, out, (M-1)*k.ldc+N)
	if k.beta == 0 {
		for i := range k.cm {
			k.cm[i] = canonicalNaN // not read
		}
	}
	k.bias = apiData(rng, kind, F32, N)
	k.auxIn = apiData(rng, "spread", c.in, (M-1)*k.ldx+N)
	for i := range k.auxIn {
		k.auxIn[i] = float32(math.Mod(float64(k.auxIn[i]), 8)) // GELU's interesting range
		if c.in.Half() {
			k.auxIn[i] = c.in.ToF32(c.in.FromF32(k.auxIn[i]))
		}
	}
	k.maskIn = make([]uint8, (M-1)*k.ldx+N)
	for i := range k.maskIn {
		k.maskIn[i] = [...]uint8{0, 1, 1, 2, 7}[rng.IntN(5)]
	}
	k.bgrad0 = apiData(rng, kind, F32, max(M, N))
	return k
}

func (k *mmCase) name(bits bool) string {
	lay := map[bool]string{false: "N", true: "T"}
	return fmt.Sprintf("%v %s%s %v M%d N%d K%d alpha %v beta %v bits %v", k.c, lay[k.ta], lay[k.tb], k.epi, k.M, k.N, k.K, k.alpha, k.beta, bits)
}

// mmShapes: odd sizes; K = 520 gives the IEEE plan three slabs, K = 8192
// with N = 3 the tensor-core plan two.
var mmShapes = [][3]int{{3, 5, 7}, {5, 3, 33}, {2, 3, 520}, {1, 3, 8192}}

// TestMatmulMatchesTheContract: every layout × epilogue × tier × model ×
// type pair × operand form, on odd shapes and strides and adversarial
// data, equals the literal evaluation of the contract (naiveMatmul) bit
// for bit: D, the aux, the mask and the bias gradient.
func TestMatmulMatchesTheContract(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 1))
	for si, s := range mmShapes {
		for _, c := range apiConfigs() {
			if s[2] == 8192 && c.tier != TensorCore {
				continue
			}
			for lay := range 4 {
				ta, tb := lay&2 != 0, lay&1 != 0
				for epi := range numEpilogues {
					if si >= 2 && (epi+Epilogue(lay))%4 != 0 {
						continue // the long reductions: a quarter of the epilogues, every layout
					}
					kind := apiKinds[rng.IntN(len(apiKinds))]
					k := newMMCase(rng, c, s[0], s[1], s[2], ta, tb, epi, kind)
					k.batch = rng.IntN(2) == 0
					want := k.naive()
					for _, bits := range []bool{false, true} {
						if bits && !c.in.Half() {
							continue
						}
						r, read := k.request(bits, 0, k.M, 0, k.N, rng.IntN(3))
						if err := c.options(1).Matmul(r); err != nil {
							t.Fatalf("%s (%s): %v", k.name(bits), kind, err)
						}
						if d := read().diff(want); d != "" {
							t.Fatalf("%s (%s): %s", k.name(bits), kind, d)
						}
					}
				}
			}
		}
	}
}

// TestMatmulWindowsEqualTheWholeResult: a window of rows and columns
// (DReluBgrad, DGeluBgrad: columns only) gives the same bits as the same
// part of the whole result, for D, the aux, the mask and the bias
// gradient.
func TestMatmulWindowsEqualTheWholeResult(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 2))
	for _, c := range apiConfigs() {
		for epi := range numEpilogues {
			k := newMMCase(rng, c, 7, 9, 40, rng.IntN(2) == 0, rng.IntN(2) == 0, epi, apiKinds[rng.IntN(len(apiKinds))])
			whole := k.naive()
			for range 3 {
				m0 := rng.IntN(k.M)
				m1 := m0 + 1 + rng.IntN(k.M-m0)
				n0 := rng.IntN(k.N)
				n1 := n0 + 1 + rng.IntN(k.N-n0)
				if epilogueSpecs[epi].bgrad == bgradRows {
					m0, m1 = 0, k.M
				}
				o := c.options(2)
				o.Rows, o.Cols = Span{m0, m1}, Span{n0, n1}
				r, read := k.request(c.in.Half(), m0, m1, n0, n1, rng.IntN(3))
				if err := o.Matmul(r); err != nil {
					t.Fatalf("%s window [%d,%d)×[%d,%d): %v", k.name(true), m0, m1, n0, n1, err)
				}
				if d := read().diff(whole.window(k, m0, m1, n0, n1)); d != "" {
					t.Fatalf("%s window [%d,%d)×[%d,%d): %s", k.name(true), m0, m1, n0, n1, d)
				}
			}
		}
	}
}

// TestMatmulRowsInvariantToBatch: a row of D (and of the aux) computed in
// a batch of one — that row of op(A) and of C alone — has the bits it has
// inside the whole batch, for every layout and epilogue without a sum over
// rows, in every tier (the tensor-core plan TCSlabs(K, N) never sees M).
func TestMatmulRowsInvariantToBatch(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 3))
	for _, c := range apiConfigs() {
		for lay := range 4 {
			for epi := range numEpilogues {
				if epilogueSpecs[epi].bgrad == bgradRows {
					continue // sums over the batch: its own split rule
				}
				k := newMMCase(rng, c, 6, 5, 300, lay&2 != 0, lay&1 != 0, epi, apiKinds[rng.IntN(len(apiKinds))])
				whole := k.naive()
				m := rng.IntN(k.M)
				one := *k
				one.M = 1
				if k.ta {
					one.a = k.a[m:] // column m of the stored K×M A
				} else {
					one.a = k.a[m*k.lda:]
				}
				one.cm = k.cm[m*k.ldc:]
				one.auxIn, one.maskIn = k.auxIn[m*k.ldx:], k.maskIn[m*k.ldx:]
				one.bgrad0 = k.bgrad0
				if epilogueSpecs[epi].bgrad == bgradA {
					one.bgrad0 = k.bgrad0[m:]
				}
				r, read := one.request(false, 0, 1, 0, k.N, 0)
				if err := c.options(1).Matmul(r); err != nil {
					t.Fatalf("%s row %d: %v", k.name(false), m, err)
				}
				got, want := read(), whole.window(k, m, m+1, 0, k.N)
				if d := got.diff(want); d != "" {
					t.Fatalf("%s row %d alone: %s", k.name(false), m, d)
				}
			}
		}
	}
}

// TestMatmulInPlaceEqualsSeparateC: D = C (the same memory, element for
// element, also through a window) gives the bits of a separate D.
func TestMatmulInPlaceEqualsSeparateC(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 4))
	for _, c := range apiConfigs() {
		k := newMMCase(rng, c, 6, 7, 20, false, true, GeluBias, "random")
		k.beta = 0.75
		k.cm = apiData(rng, "random", c.out, len(k.cm))
		if c.out == 0 {
			k.cm = apiData(rng, "random", c.in, len(k.cm))
		}
		want := k.naive()
		out := c.out
		if out == 0 {
			out = c.in
		}
		// In place, window rows [2, 5), columns [1, 6): D starts at C's
		// element (2, 1) with C's leading dimension.
		m0, m1, n0, n1 := 2, 5, 1, 6
		cv := Values(append([]float32(nil), k.cm...))
		r := MatmulRequest{M: k.M, N: k.N, K: k.K, TransB: true, A: Values(k.a), B: Values(k.b), LDA: k.lda, LDB: k.ldb,
			Alpha: k.alpha, Beta: k.beta, C: cv, LDC: k.ldc, D: Values(cv.Values[m0*k.ldc+n0:]), LDD: k.ldc,
			Bias: k.bias, Epilogue: GeluBias}
		o := c.options(1)
		o.Rows, o.Cols = Span{m0, m1}, Span{n0, n1}
		if err := o.Matmul(r); err != nil {
			t.Fatalf("%v: %v", c, err)
		}
		for m := m0; m < m1; m++ {
			for n := n0; n < n1; n++ {
				got, w := cv.Values[m*k.ldc+n], want.d[m*k.N+n]
				if math.Float32bits(got) != math.Float32bits(w) {
					t.Fatalf("%v: D[%d,%d] in place %v, want %v", c, m, n, got, w)
				}
			}
		}
	}
}

// TestMatmulRefusesBadArguments: every bad request is a typed *ArgError
// with its sentinel and argument, never a panic, and writes nothing.
func TestMatmulRefusesBadArguments(t *testing.T) {
	base := func() MatmulRequest {
		return MatmulRequest{M: 2, N: 3, K: 4, A: Values(make([]float32, 8)), B: Values(make([]float32, 12)),
			Alpha: 1, D: Values(make([]float32, 6))}
	}
	f32 := Options{Tier: IEEE, In: F32}
	buf := make([]float32, 64)
	cases := []struct {
		name     string
		o        Options
		edit     func(r *MatmulRequest)
		sentinel error
		arg      string
	}{
		{"zero tier", Options{In: F32}, func(r *MatmulRequest) {}, ErrTier, "Tier"},
		{"bad epilogue", f32, func(r *MatmulRequest) { r.Epilogue = 255 }, ErrEpilogue, "Epilogue"},
		{"zero M", f32, func(r *MatmulRequest) { r.M = 0 }, ErrDim, "M"},
		{"overflowing dims", f32, func(r *MatmulRequest) { r.M, r.N = 1<<40, 1<<40 }, ErrDim, "M*N"},
		{"lda too small", f32, func(r *MatmulRequest) { r.LDA = 3 }, ErrLeadingDim, "LDA"},
		{"lda too small transposed", f32, func(r *MatmulRequest) { r.TransA, r.LDA = true, 1 }, ErrLeadingDim, "LDA"},
		{"negative ldb", f32, func(r *MatmulRequest) { r.LDB = -1 }, ErrLeadingDim, "LDB"},
		{"overflowing ldd", f32, func(r *MatmulRequest) { r.LDD = int(^uint(0)>>1) - 1 }, ErrLeadingDim, "LDD"},
		{"ldc too small", f32, func(r *MatmulRequest) { r.Beta, r.C, r.LDC = 1, Values(make([]float32, 6)), 2 }, ErrLeadingDim, "LDC"},
		{"A too short for lda", f32, func(r *MatmulRequest) { r.LDA = 5 }, ErrLength, "A"},
		{"D too short", f32, func(r *MatmulRequest) { r.D = Values(make([]float32, 5)) }, ErrLength, "D"},
		{"beta without C", f32, func(r *MatmulRequest) { r.Beta = 1 }, ErrOperand, "C"},
		{"bias missing", f32, func(r *MatmulRequest) { r.Epilogue = ReluBias }, ErrOperand, "Bias"},
		{"bias not used", f32, func(r *MatmulRequest) { r.Bias = make([]float32, 3) }, ErrOperand, "Bias"},
		{"bias too short", f32, func(r *MatmulRequest) { r.Epilogue, r.Bias = Bias, make([]float32, 2) }, ErrLength, "Bias"},
		{"mask missing", f32, func(r *MatmulRequest) { r.Epilogue = ReluAux }, ErrOperand, "ReluMask"},
		{"mask not used", f32, func(r *MatmulRequest) { r.ReluMask = make([]uint8, 6) }, ErrOperand, "ReluMask"},
		{"aux missing", f32, func(r *MatmulRequest) { r.Epilogue = DGelu }, ErrOperand, "Aux"},
		{"aux to a ReLU epilogue", f32, func(r *MatmulRequest) {
			r.Epilogue, r.ReluMask, r.Aux = DRelu, make([]uint8, 6), Values(make([]float32, 6))
		}, ErrOperand, "Aux"},
		{"aux too short", f32, func(r *MatmulRequest) { r.Epilogue, r.Aux = GeluAux, Values(make([]float32, 5)) }, ErrLength, "Aux"},
		{"bias gradient missing", f32, func(r *MatmulRequest) { r.Epilogue = BgradB }, ErrOperand, "BiasGrad"},
		{"bias gradient not used", f32, func(r *MatmulRequest) { r.BiasGrad = make([]float32, 3) }, ErrOperand, "BiasGrad"},
		{"BgradA gradient too short", f32, func(r *MatmulRequest) { r.Epilogue, r.BiasGrad = BgradA, make([]float32, 1) }, ErrLength, "BiasGrad"},
		{"row window on a row sum", Options{Tier: IEEE, In: F32, Rows: Span{0, 1}}, func(r *MatmulRequest) {
			r.Epilogue, r.ReluMask, r.BiasGrad = DReluBgrad, make([]uint8, 6), make([]float32, 3)
		}, ErrRange, "Rows"},
		{"window outside", Options{Tier: IEEE, In: F32, Cols: Span{2, 4}}, func(r *MatmulRequest) {}, ErrRange, "Cols"},
		{"bits for f32", f32, func(r *MatmulRequest) { r.A = Bits(make([]uint16, 8)) }, ErrDType, "A"},
		{"tensor core f32", Options{Tier: TensorCore, In: F32, Model: Hopper}, func(r *MatmulRequest) {}, ErrDType, "In"},
		{"inexact bf16 value", Options{Tier: IEEE, In: BF16}, func(r *MatmulRequest) {
			r.A = Values([]float32{1, 1.0000001, 0, 0, 0, 0, 0, 0})
		}, ErrInexact, "A"},
		{"D overlaps A", f32, func(r *MatmulRequest) { r.A, r.D = Values(buf[0:8]), Values(buf[4:10]) }, ErrOverlap, "D"},
		{"D overlaps bias", f32, func(r *MatmulRequest) {
			r.Epilogue, r.Bias, r.D = Bias, buf[0:3], Values(buf[2:8])
		}, ErrOverlap, "D"},
		{"aux overlaps D", f32, func(r *MatmulRequest) {
			r.Epilogue, r.D, r.Aux = GeluAux, Values(buf[0:6]), Values(buf[5:11])
		}, ErrOverlap, "Aux"},
		{"D shifted against C", f32, func(r *MatmulRequest) {
			r.Beta, r.C, r.D = 1, Values(buf[0:6]), Values(buf[1:7])
		}, ErrOverlap, "D"},
		{"D is C with another stride", f32, func(r *MatmulRequest) {
			r.Beta, r.C, r.LDC, r.D, r.LDD = 1, Values(buf[0:8]), 4, Values(buf[0:8]), 5
		}, ErrOverlap, "D"},
		{"bias gradient overlaps D", f32, func(r *MatmulRequest) {
			r.Epilogue, r.D, r.BiasGrad = BgradB, Values(buf[0:6]), buf[3:6]
		}, ErrOverlap, "BiasGrad"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			clear(buf)
			r := base()
			c.edit(&r)
			before := append([]float32(nil), r.D.Values...)
			err := c.o.Matmul(r)
			var ae *ArgError
			if !errors.As(err, &ae) || !errors.Is(err, c.sentinel) || ae.Arg != c.arg {
				t.Fatalf("got %v, want an *ArgError of %q matching %v", err, c.arg, c.sentinel)
			}
			if sameBitsAt(r.D.Values, before) >= 0 {
				t.Fatalf("%v: D was written", err)
			}
		})
	}
	// Accepted: beta = 0 with C full of NaN, or C absent; D = C exactly.
	ok := base()
	ok.C = Values([]float32{float32(math.NaN()), 0, 0, 0, 0, 0})
	if err := f32.Matmul(ok); err != nil {
		t.Fatalf("beta 0 with a C: %v", err)
	}
	inPlace := base()
	inPlace.Beta, inPlace.C = 1, inPlace.D
	if err := f32.Matmul(inPlace); err != nil {
		t.Fatalf("D = C: %v", err)
	}
}
