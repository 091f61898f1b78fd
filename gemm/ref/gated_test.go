package ref

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

var (
	posInf32 = float32(math.Inf(1))
	negInf32 = float32(math.Inf(-1))
	sub149   = float32(math.SmallestNonzeroFloat32) // 2^-149
)

// TestGateSpecialsAreTheDocumentedValues: Silu32, SiluGrad32, GateAct32
// and GateGrad32 of every gate give the values docs/contract.md (section
// "Transcendentals", Specials) states, bit for bit, at ±0, ±Inf, NaN
// (quiet, signalling, negative), subnormals and huge |b|.
func TestGateSpecialsAreTheDocumentedValues(t *testing.T) {
	nan := canonicalNaN
	half, quarter := float32(0.5), float32(0.25)
	cases := []struct {
		name    string
		f       func(float32) float32
		x, want float32
	}{
		// SiLU and its derivative.
		{"Silu32", Silu32, 0, 0},
		{"Silu32", Silu32, negZero, negZero},
		{"Silu32", Silu32, posInf32, posInf32},
		{"Silu32", Silu32, negInf32, negZero},
		{"Silu32", Silu32, sub149, 0},
		{"Silu32", Silu32, -sub149, negZero},
		{"Silu32", Silu32, 0x1p-140, 0x1p-141},
		{"Silu32", Silu32, -105, negZero},
		{"Silu32", Silu32, -math.MaxFloat32, negZero},
		{"Silu32", Silu32, 105, 105},
		{"Silu32", Silu32, math.MaxFloat32, math.MaxFloat32},
		{"SiluGrad32", SiluGrad32, 0, half},
		{"SiluGrad32", SiluGrad32, negZero, half},
		{"SiluGrad32", SiluGrad32, posInf32, 1},
		{"SiluGrad32", SiluGrad32, negInf32, negZero},
		{"SiluGrad32", SiluGrad32, sub149, half},
		{"SiluGrad32", SiluGrad32, -sub149, half},
		{"SiluGrad32", SiluGrad32, -105, negZero},
		{"SiluGrad32", SiluGrad32, -math.MaxFloat32, negZero},
		{"SiluGrad32", SiluGrad32, 105, 1},
		{"SiluGrad32", SiluGrad32, math.MaxFloat32, 1},
		// GLU.
		{"GLU act", gateAct(GLU), 0, half},
		{"GLU act", gateAct(GLU), negZero, half},
		{"GLU act", gateAct(GLU), posInf32, 1},
		{"GLU act", gateAct(GLU), negInf32, 0},
		{"GLU act′", gateGrad(GLU), 0, quarter},
		{"GLU act′", gateGrad(GLU), negZero, quarter},
		{"GLU act′", gateGrad(GLU), sub149, quarter},
		{"GLU act′", gateGrad(GLU), -sub149, quarter},
		{"GLU act′", gateGrad(GLU), posInf32, 0},
		{"GLU act′", gateGrad(GLU), negInf32, 0},
		{"GLU act′", gateGrad(GLU), 105, 0},
		{"GLU act′", gateGrad(GLU), -105, 0},
		{"GLU act′", gateGrad(GLU), math.MaxFloat32, 0},
		{"GLU act′", gateGrad(GLU), -math.MaxFloat32, 0},
		// ReGLU.
		{"ReGLU act", gateAct(ReGLU), negZero, 0},
		{"ReGLU act", gateAct(ReGLU), sub149, sub149},
		{"ReGLU act", gateAct(ReGLU), -sub149, 0},
		{"ReGLU act", gateAct(ReGLU), posInf32, posInf32},
		{"ReGLU act", gateAct(ReGLU), negInf32, 0},
		{"ReGLU act′", gateGrad(ReGLU), 0, 0},
		{"ReGLU act′", gateGrad(ReGLU), negZero, 0},
		{"ReGLU act′", gateGrad(ReGLU), sub149, 1},
		{"ReGLU act′", gateGrad(ReGLU), -sub149, 0},
		{"ReGLU act′", gateGrad(ReGLU), posInf32, 1},
		{"ReGLU act′", gateGrad(ReGLU), negInf32, 0},
		{"ReGLU act′", gateGrad(ReGLU), math.MaxFloat32, 1},
		// SwiGLU is SiLU.
		{"SwiGLU act", gateAct(SwiGLU), negInf32, negZero},
		{"SwiGLU act′", gateGrad(SwiGLU), posInf32, 1},
		{"SwiGLU act′", gateGrad(SwiGLU), sub149, half},
		// GeGLU is GELU.
		{"GeGLU act", gateAct(GeGLU), negZero, negZero},
		{"GeGLU act", gateAct(GeGLU), negInf32, negZero},
		{"GeGLU act", gateAct(GeGLU), posInf32, posInf32},
		{"GeGLU act′", gateGrad(GeGLU), 0, half},
		{"GeGLU act′", gateGrad(GeGLU), sub149, half},
		{"GeGLU act′", gateGrad(GeGLU), negInf32, negZero},
		{"GeGLU act′", gateGrad(GeGLU), posInf32, 1},
	}
	for _, c := range cases {
		if got := c.f(c.x); math.Float32bits(got) != math.Float32bits(c.want) {
			t.Errorf("%s(%v): %v (%#08x), want %v (%#08x)", c.name, c.x, got, math.Float32bits(got), c.want, math.Float32bits(c.want))
		}
	}
	// Every NaN input gives the canonical NaN, in every function of every
	// gate.
	fns := map[string]func(float32) float32{"Silu32": Silu32, "SiluGrad32": SiluGrad32}
	for g := GLU; g.Valid(); g++ {
		fns[g.String()+" act"], fns[g.String()+" act′"] = gateAct(g), gateGrad(g)
	}
	for name, f := range fns {
		for _, bits := range []uint32{0x7FC00000, 0x7F800001, 0xFFC00000, 0xFFFFFFFF, CanonicalNaN32} {
			if got := f(math.Float32frombits(bits)); math.Float32bits(got) != math.Float32bits(nan) {
				t.Errorf("%s(NaN %#08x) = %#08x, want the canonical NaN", name, bits, math.Float32bits(got))
			}
		}
	}
	// The gates' functions are the named ones.
	for _, x := range []float32{-3, -0.5, 0.25, 2, 40} {
		for _, c := range []struct {
			g         Gate
			act, grad func(float32) float32
		}{{GLU, Sigmoid32, nil}, {ReGLU, Relu32, nil}, {SwiGLU, Silu32, SiluGrad32}, {GeGLU, Gelu32, GeluGrad32}} {
			if GateAct32(c.g, x) != c.act(x) || c.grad != nil && GateGrad32(c.g, x) != c.grad(x) {
				t.Errorf("%v at %v: not its named function", c.g, x)
			}
		}
	}
}

func gateAct(g Gate) func(float32) float32 { return func(b float32) float32 { return GateAct32(g, b) } }
func gateGrad(g Gate) func(float32) float32 {
	return func(b float32) float32 { return GateGrad32(g, b) }
}

// TestGateNames: the gates' names and codes (1..4, shared with the CUDA
// code), and the zero value is not a gate.
func TestGateNames(t *testing.T) {
	for g, want := range map[Gate]string{0: "Gate(0)", 1: "GLU", 2: "ReGLU", 3: "SwiGLU", 4: "GeGLU", 5: "Gate(5)", 255: "Gate(255)"} {
		if g.String() != want || g.Valid() != (g >= 1 && g <= 4) {
			t.Errorf("Gate(%d): %q valid %v, want %q", uint8(g), g.String(), g.Valid(), want)
		}
	}
}

// gateData draws adversarial values: exponent spreads, ±0, ±Inf, NaN,
// subnormals, the activations' interesting range.
func gateData(rng *rand.Rand, n int) []float32 {
	v := make([]float32, n)
	for i := range v {
		switch rng.IntN(10) {
		case 0:
			v[i] = []float32{0, negZero, posInf32, negInf32, canonicalNaN, sub149, -sub149, 0x1p-130, math.MaxFloat32, -math.MaxFloat32}[rng.IntN(10)]
		case 1, 2:
			v[i] = float32(math.Ldexp(rng.Float64()*2-1, rng.IntN(280)-150)) // any binade, subnormals included
		default:
			v[i] = float32(rng.NormFloat64() * 4)
		}
	}
	return v
}

// TestGatedHelpersArePerElement: GatedForward and GatedBackward equal the
// per-element definitions, rounded once to each output type, in place too.
func TestGatedHelpersArePerElement(t *testing.T) {
	rng := rand.New(rand.NewPCG(31, 1))
	const n = 4000
	for g := GLU; g.Valid(); g++ {
		for _, out := range []DType{F32, BF16, F16} {
			a, b, dy := gateData(rng, n), gateData(rng, n), gateData(rng, n)
			y, da, db := make([]float32, n), make([]float32, n), make([]float32, n)
			if err := GatedForward(g, out, y, a, b); err != nil {
				t.Fatal(err)
			}
			if err := GatedBackward(g, out, da, db, dy, a, b); err != nil {
				t.Fatal(err)
			}
			for i := range n {
				wy := roundTo(out, mul32(a[i], GateAct32(g, b[i])))
				wda := roundTo(out, mul32(dy[i], GateAct32(g, b[i])))
				wdb := roundTo(out, mul32(mul32(dy[i], a[i]), GateGrad32(g, b[i])))
				for _, c := range []struct {
					name      string
					got, want float32
				}{{"y", y[i], wy}, {"da", da[i], wda}, {"db", db[i], wdb}} {
					if math.Float32bits(c.got) != math.Float32bits(c.want) {
						t.Fatalf("%v %v %s[%d] (a %v b %v dy %v) = %v, want %v", g, out, c.name, i, a[i], b[i], dy[i], c.got, c.want)
					}
					if out != F32 && c.got == c.got && out.ToF32(out.FromF32(c.got)) != c.got {
						t.Fatalf("%v %v %s[%d] = %v is not a %v value", g, out, c.name, i, c.got, out)
					}
				}
			}
			// In place: the outputs over the inputs.
			a2, b2, dy2 := append([]float32(nil), a...), append([]float32(nil), b...), append([]float32(nil), dy...)
			if err := GatedForward(g, out, a2, a2, b2); err != nil || sameBitsAt(a2, y) >= 0 {
				t.Fatalf("%v %v: forward in place differs (%v)", g, out, err)
			}
			a2 = append(a2[:0], a...)
			if err := GatedBackward(g, out, dy2, a2, dy2, a2, b2); err != nil || sameBitsAt(dy2, da) >= 0 || sameBitsAt(a2, db) >= 0 {
				t.Fatalf("%v %v: backward in place differs (%v)", g, out, err)
			}
		}
	}
}

// TestGatedHelpersRefuseBadArguments: a bad gate, output type or length is
// a typed *ArgError naming the argument, nothing is written, nothing
// panics.
func TestGatedHelpersRefuseBadArguments(t *testing.T) {
	x3, x2 := []float32{1, 2, 3}, []float32{1, 2}
	cases := []struct {
		name     string
		run      func(y []float32) error
		sentinel error
		arg      string
	}{
		{"zero gate", func(y []float32) error { return GatedForward(0, F32, y, x3, x3) }, ErrGate, "g"},
		{"gate 5", func(y []float32) error { return GatedBackward(5, F32, y, make([]float32, 3), x3, x3, x3) }, ErrGate, "g"},
		{"zero dtype", func(y []float32) error { return GatedForward(GLU, 0, y, x3, x3) }, ErrDType, "out"},
		{"dtype 9", func(y []float32) error { return GatedBackward(GeGLU, 9, y, make([]float32, 3), x3, x3, x3) }, ErrDType, "out"},
		{"short a", func(y []float32) error { return GatedForward(SwiGLU, BF16, y, x2, x3) }, ErrLength, "a"},
		{"short b", func(y []float32) error { return GatedForward(SwiGLU, BF16, y, x3, x2) }, ErrLength, "b"},
		{"long b", func(y []float32) error { return GatedForward(SwiGLU, BF16, y, x3, []float32{1, 2, 3, 4}) }, ErrLength, "b"},
		{"short y", func(y []float32) error { return GatedForward(ReGLU, F16, y[:2], x3, x3) }, ErrLength, "a"},
		{"short db", func(y []float32) error { return GatedBackward(GLU, F32, y, x2, x3, x3, x3) }, ErrLength, "db"},
		{"short dy", func(y []float32) error { return GatedBackward(GLU, F32, y, make([]float32, 3), x2, x3, x3) }, ErrLength, "dy"},
		{"short backward b", func(y []float32) error { return GatedBackward(GLU, F32, y, make([]float32, 3), x3, x3, x2) }, ErrLength, "b"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			y := []float32{7, 7, 7}
			err := c.run(y)
			var ae *ArgError
			if !errors.As(err, &ae) || !errors.Is(err, c.sentinel) || ae.Arg != c.arg {
				t.Fatalf("got %v, want an *ArgError of %q matching %v", err, c.arg, c.sentinel)
			}
			if y[0] != 7 || y[1] != 7 || y[2] != 7 {
				t.Fatalf("%v: the output was written", err)
			}
		})
	}
	// Empty slices are a valid (empty) call.
	if err := GatedForward(GLU, F32, nil, nil, nil); err != nil {
		t.Fatal(err)
	}
}

// gatedEpilogues is every gated epilogue.
func gatedEpilogues() []Epilogue {
	var es []Epilogue
	for e := GatedGLU; e < numAllEpilogues; e++ {
		es = append(es, e)
	}
	return es
}

// TestGatedEpilogueNames: the twenty gated epilogues follow BgradB, are
// named as in Go, and say their gate and direction; the sixteen are
// unchanged and say none.
func TestGatedEpilogueNames(t *testing.T) {
	if GatedGLU != BgradB+1 || BgradB != 15 || numAllEpilogues != 36 {
		t.Fatalf("GatedGLU = %d, BgradB = %d, %d epilogues", GatedGLU, BgradB, numAllEpilogues)
	}
	names := []string{"GatedGLU", "GatedGLUBias", "GatedGLUAux", "GatedGLUAuxBias",
		"GatedReGLU", "GatedReGLUBias", "GatedReGLUAux", "GatedReGLUAuxBias",
		"GatedSwiGLU", "GatedSwiGLUBias", "GatedSwiGLUAux", "GatedSwiGLUAuxBias",
		"GatedGeGLU", "GatedGeGLUBias", "GatedGeGLUAux", "GatedGeGLUAuxBias",
		"DGatedGLU", "DGatedReGLU", "DGatedSwiGLU", "DGatedGeGLU"}
	for i, e := range gatedEpilogues() {
		g := GLU + Gate(i/4)
		if i >= 16 {
			g = GLU + Gate(i-16)
		}
		if e.String() != names[i] || !e.Valid() || e.Gate() != g || e.GatedBackward() != (i >= 16) ||
			e.gatedBias() != (i < 16 && i%2 == 1) || e.gatedAux() != (i < 16 && i%4 >= 2) {
			t.Errorf("Epilogue %d: %q gate %v backward %v bias %v aux %v", uint8(e), e, e.Gate(), e.GatedBackward(), e.gatedBias(), e.gatedAux())
		}
	}
	for e := range numEpilogues {
		if e.Gate() != 0 || e.GatedBackward() || e.String() != epilogueSpecs[e].name {
			t.Errorf("%v: gate %v, backward %v", e, e.Gate(), e.GatedBackward())
		}
	}
	for _, e := range []Epilogue{numAllEpilogues, 200, 255} {
		if e.Valid() || e.Gate() != 0 || e.GatedBackward() || e.String() != fmt.Sprintf("Epilogue(%d)", uint8(e)) {
			t.Errorf("Epilogue(%d): valid %v, %q", uint8(e), e.Valid(), e)
		}
	}
}

// gatedCase is one gated Matmul: the product's problem (an mmCase with
// the Default or Bias epilogue and beta = 0), the gated epilogue, and a
// backward's input aux (M × 2N, leading dimension k.ldx, values exactly
// of the input type where it is 16-bit).
type gatedCase struct {
	k   *mmCase
	epi Epilogue
	aux []float32
}

func newGatedCase(rng *rand.Rand, c apiConfig, M, N, K int, ta, tb bool, epi Epilogue, kind string) *gatedCase {
	inner := Default
	if epi.gatedBias() {
		inner = Bias
	}
	k := newMMCase(rng, c, M, N, K, ta, tb, inner, kind)
	k.beta = 0
	for i := range k.cm {
		k.cm[i] = canonicalNaN // not read
	}
	gc := &gatedCase{k: k, epi: epi}
	if epi.GatedBackward() {
		k.ldx = 2*N + rng.IntN(4)
		gc.aux = gateData(rng, (M-1)*k.ldx+2*N)
		if c.in.Half() {
			for i, x := range gc.aux {
				gc.aux[i] = c.in.ToF32(c.in.FromF32(x))
			}
		}
	}
	return gc
}

func (gc *gatedCase) out() DType {
	if gc.k.c.out == 0 {
		return gc.k.c.in
	}
	return gc.k.c.out
}

// width is D's: N/2 forward, 2N backward.
func (gc *gatedCase) width() int {
	if gc.epi.GatedBackward() {
		return 2 * gc.k.N
	}
	return gc.k.N / 2
}

// naive evaluates the gated epilogue literally: the product v by the
// contract's naive evaluation (naiveMatmul) with a float32 output, then
// every gate element where the layout puts it, walking the product's
// columns (a in the even blocks of 8, b 8 columns on), and the store's
// rounding. D is whole (M × width), the aux whole (M × N).
func (gc *gatedCase) naive() naiveOut {
	k := *gc.k
	k.c.out = F32
	v := k.naive().d
	M, N, W, g, out := k.M, k.N, gc.width(), gc.epi.Gate(), gc.out()
	res := naiveOut{d: make([]float32, M*W)}
	if gc.epi.gatedAux() {
		res.aux = make([]float32, M*N)
		for i, x := range v {
			res.aux[i] = roundTo(out, x)
		}
	}
	for m := range M {
		if !gc.epi.GatedBackward() {
			for c := 0; c < N; c++ {
				if c/8%2 == 1 {
					continue // a b column
				}
				j := c/16*8 + c%16
				res.d[m*W+j] = roundTo(out, mul32(v[m*N+c], GateAct32(g, v[m*N+c+8])))
			}
			continue
		}
		for c := 0; c < 2*N; c++ {
			if c/8%2 == 1 {
				continue
			}
			j := c/16*8 + c%16 // the product's column
			dy, a, b := v[m*N+j], gc.aux[m*k.ldx+c], gc.aux[m*k.ldx+c+8]
			res.d[m*W+c] = roundTo(out, mul32(dy, GateAct32(g, b)))
			res.d[m*W+c+8] = roundTo(out, mul32(mul32(dy, a), GateGrad32(g, b)))
		}
	}
	return res
}

// request builds the gated request for rows [m0, m1): 16-bit operands as
// Bits or exact Values, D and an output aux with leading dimension width
// + pad. It returns a reader of D and the aux (window rows, contiguous).
func (gc *gatedCase) request(bits bool, m0, m1, pad int) (MatmulRequest, func() naiveOut) {
	k, in, out := gc.k, gc.k.c.in, gc.out()
	form := func(d DType, v []float32) Operand {
		if bits && d.Half() {
			return Bits(narrow(d, v))
		}
		return Values(append([]float32(nil), v...))
	}
	I, W := m1-m0, gc.width()
	ldd := W + pad
	r := MatmulRequest{M: k.M, N: k.N, K: k.K, TransA: k.ta, TransB: k.tb, A: form(in, k.a), B: form(in, k.b),
		LDA: k.lda, LDB: k.ldb, Alpha: k.alpha, C: form(out, k.cm), LDC: k.ldc, D: form(out, make([]float32, (I-1)*ldd+W)),
		LDD: ldd, Epilogue: gc.epi}
	if gc.epi.gatedBias() {
		r.Bias = k.bias
	}
	ldx := k.N + pad
	switch {
	case gc.epi.GatedBackward():
		r.Aux, r.LDAux = form(in, gc.aux), k.ldx
	case gc.epi.gatedAux():
		r.Aux, r.LDAux = form(out, make([]float32, (I-1)*ldx+k.N)), ldx
	}
	read := func() naiveOut {
		var res naiveOut
		d := result(out, r.D)
		for i := range I {
			res.d = append(res.d, d[i*ldd:i*ldd+W]...)
		}
		if gc.epi.gatedAux() {
			d, x := out, r.Aux
			if x.Bits != nil {
				d = in
			}
			v := result(d, x)
			for i := range I {
				res.aux = append(res.aux, v[i*ldx:i*ldx+k.N]...)
			}
		}
		return res
	}
	return r, read
}

// rows cuts rows [m0, m1) out of a whole naive gated result.
func (gc *gatedCase) rows(n naiveOut, m0, m1 int) naiveOut {
	W, N := gc.width(), gc.k.N
	w := naiveOut{d: n.d[m0*W : m1*W]}
	if n.aux != nil {
		w.aux = n.aux[m0*N : m1*N]
	}
	return w
}

func (gc *gatedCase) name(bits bool) string { return gc.epi.String() + " " + gc.k.name(bits) }

// gatedShapes: M, N (the product's width), K. K = 300 gives the IEEE
// plan two slabs; K = 8192 the tensor-core plan a cut (N ≤ 32).
var gatedShapes = [][3]int{{3, 16, 7}, {2, 32, 300}, {1, 16, 8192}, {5, 48, 33}}

// TestMatmulGatedMatchesTheContract: every gated epilogue × layout × tier
// × model × type pair × operand form, on odd strides and adversarial data
// (exponent spreads, ±Inf, NaN, subnormals; the backward's aux drawn from
// gateData), equals the direct evaluation: the contract's naive product,
// then the gate per element by its layout — D and the aux, bit for bit.
func TestMatmulGatedMatchesTheContract(t *testing.T) {
	rng := rand.New(rand.NewPCG(31, 2))
	for si, s := range gatedShapes {
		for _, c := range apiConfigs() {
			if s[2] == 8192 && c.tier != TensorCore {
				continue
			}
			for lay := range 4 {
				for ei, epi := range gatedEpilogues() {
					N := s[1]
					if epi.GatedBackward() {
						N /= 2 // dy's width; D is 2N
					}
					if si != 0 && (ei+lay)%4 != 0 {
						continue // the larger shapes: a quarter of the epilogues, every layout
					}
					kind := apiKinds[rng.IntN(len(apiKinds))]
					gc := newGatedCase(rng, c, s[0], N, s[2], lay&2 != 0, lay&1 != 0, epi, kind)
					want := gc.naive()
					for _, bits := range []bool{false, true} {
						if bits && !c.in.Half() {
							continue
						}
						r, read := gc.request(bits, 0, gc.k.M, rng.IntN(3))
						if err := c.options(1 + rng.IntN(2)).Matmul(r); err != nil {
							t.Fatalf("%s (%s): %v", gc.name(bits), kind, err)
						}
						if d := read().diff(want); d != "" {
							t.Fatalf("%s (%s): %s", gc.name(bits), kind, d)
						}
					}
				}
			}
		}
	}
}

// TestMatmulGatedRowsWindowsEqualTheWholeResult: a Rows window gives the
// bits of the same rows of the whole result (D and the aux), and a row
// computed in a batch of one (that row of op(A) and of the aux alone) the
// bits it has in the batch.
func TestMatmulGatedRowsWindowsEqualTheWholeResult(t *testing.T) {
	rng := rand.New(rand.NewPCG(31, 3))
	for _, c := range apiConfigs() {
		for _, epi := range gatedEpilogues() {
			N := 32
			if epi.GatedBackward() {
				N = 16
			}
			gc := newGatedCase(rng, c, 7, N, 40, rng.IntN(2) == 0, rng.IntN(2) == 0, epi, apiKinds[rng.IntN(len(apiKinds))])
			whole := gc.naive()
			for range 3 {
				m0 := rng.IntN(gc.k.M)
				m1 := m0 + 1 + rng.IntN(gc.k.M-m0)
				o := c.options(2)
				o.Rows = Span{m0, m1}
				r, read := gc.request(c.in.Half(), m0, m1, rng.IntN(3))
				if err := o.Matmul(r); err != nil {
					t.Fatalf("%s rows [%d,%d): %v", gc.name(true), m0, m1, err)
				}
				if d := read().diff(gc.rows(whole, m0, m1)); d != "" {
					t.Fatalf("%s rows [%d,%d): %s", gc.name(true), m0, m1, d)
				}
			}
			// One row alone.
			m := rng.IntN(gc.k.M)
			one := *gc
			k1 := *gc.k
			one.k = &k1
			k1.M = 1
			if k1.ta {
				k1.a = gc.k.a[m:]
			} else {
				k1.a = gc.k.a[m*k1.lda:]
			}
			k1.cm = gc.k.cm[m*k1.ldc:]
			if one.aux != nil {
				one.aux = gc.aux[m*k1.ldx:]
			}
			r, read := one.request(false, 0, 1, 0)
			if err := c.options(1).Matmul(r); err != nil {
				t.Fatalf("%s row %d alone: %v", gc.name(false), m, err)
			}
			if d := read().diff(gc.rows(whole, m, m+1)); d != "" {
				t.Fatalf("%s row %d alone: %s", gc.name(false), m, d)
			}
		}
	}
}

// TestMatmulGatedRefusesBadArguments: every gated restriction, and the
// checks of the operands whose shapes are the gate's, give a typed
// *ArgError with its sentinel and argument, never a panic, and write
// nothing.
func TestMatmulGatedRefusesBadArguments(t *testing.T) {
	// M = 2, N = 16, K = 4: D 2 × 8 forward; backward N = 8, D and Aux 2 × 16.
	base := func() MatmulRequest {
		return MatmulRequest{M: 2, N: 16, K: 4, A: Values(make([]float32, 8)), B: Values(make([]float32, 64)),
			Alpha: 1, D: Values(make([]float32, 16)), Epilogue: GatedSwiGLU}
	}
	back := func(r *MatmulRequest) {
		r.N, r.B, r.Epilogue, r.Aux = 8, Values(make([]float32, 32)), DGatedSwiGLU, Values(make([]float32, 32))
		r.D = Values(make([]float32, 32))
	}
	f32 := Options{Tier: IEEE, In: F32}
	buf := make([]float32, 256)
	cases := []struct {
		name     string
		o        Options
		edit     func(r *MatmulRequest)
		sentinel error
		arg      string
	}{
		{"past the last epilogue", f32, func(r *MatmulRequest) { r.Epilogue = numAllEpilogues }, ErrEpilogue, "Epilogue"},
		{"forward N not a multiple of 16", f32, func(r *MatmulRequest) { r.N, r.B = 8, Values(make([]float32, 32)) }, ErrDim, "N"},
		{"forward N = 24", f32, func(r *MatmulRequest) { r.N, r.B = 24, Values(make([]float32, 96)) }, ErrDim, "N"},
		{"backward N not a multiple of 8", f32, func(r *MatmulRequest) { back(r); r.N = 12 }, ErrDim, "N"},
		{"zero K", f32, func(r *MatmulRequest) { r.K = 0 }, ErrDim, "K"},
		{"beta", f32, func(r *MatmulRequest) { r.Beta, r.C = 1, Values(make([]float32, 32)) }, ErrOperand, "Beta"},
		{"beta without C", f32, func(r *MatmulRequest) { r.Beta = 0.5 }, ErrOperand, "Beta"},
		{"column window", Options{Tier: IEEE, In: F32, Cols: Span{0, 8}}, func(r *MatmulRequest) {}, ErrRange, "Cols"},
		{"row window outside", Options{Tier: IEEE, In: F32, Rows: Span{1, 3}}, func(r *MatmulRequest) {}, ErrRange, "Rows"},
		{"reduce over batch", f32, func(r *MatmulRequest) { r.ReduceOverBatch = true }, ErrEpilogue, "ReduceOverBatch"},
		{"bias gradient", f32, func(r *MatmulRequest) { r.BiasGrad = make([]float32, 16) }, ErrOperand, "BiasGrad"},
		{"ReLU mask", f32, func(r *MatmulRequest) { r.ReluMask = make([]uint8, 32) }, ErrOperand, "ReluMask"},
		{"bias missing", f32, func(r *MatmulRequest) { r.Epilogue = GatedGeGLUBias }, ErrOperand, "Bias"},
		{"bias not used", f32, func(r *MatmulRequest) { r.Bias = make([]float32, 16) }, ErrOperand, "Bias"},
		{"bias to a backward", f32, func(r *MatmulRequest) { back(r); r.Bias = make([]float32, 8) }, ErrOperand, "Bias"},
		{"bias too short", f32, func(r *MatmulRequest) { r.Epilogue, r.Bias = GatedReGLUBias, make([]float32, 15) }, ErrLength, "Bias"},
		{"aux missing forward", f32, func(r *MatmulRequest) { r.Epilogue = GatedGLUAux }, ErrOperand, "Aux"},
		{"aux missing backward", f32, func(r *MatmulRequest) { back(r); r.Aux = Operand{} }, ErrOperand, "Aux"},
		{"aux not used", f32, func(r *MatmulRequest) { r.Aux = Values(make([]float32, 32)) }, ErrOperand, "Aux"},
		{"aux too short forward", f32, func(r *MatmulRequest) {
			r.Epilogue, r.Aux = GatedGLUAuxBias, Values(make([]float32, 31))
			r.Bias = make([]float32, 16)
		}, ErrLength, "Aux"},
		{"aux too short backward", f32, func(r *MatmulRequest) { back(r); r.Aux = Values(make([]float32, 31)) }, ErrLength, "Aux"},
		{"aux ld below N", f32, func(r *MatmulRequest) { r.Epilogue, r.Aux, r.LDAux = GatedGLUAux, Values(make([]float32, 64)), 15 }, ErrLeadingDim, "LDAux"},
		{"aux ld below 2N", f32, func(r *MatmulRequest) { back(r); r.LDAux = 12 }, ErrLeadingDim, "LDAux"},
		{"aux bits for f32", Options{Tier: IEEE, In: F32}, func(r *MatmulRequest) { back(r); r.Aux = Bits(make([]uint16, 32)) }, ErrDType, "Aux"},
		{"D missing", f32, func(r *MatmulRequest) { r.D = Operand{} }, ErrOperand, "D"},
		{"D too short forward", f32, func(r *MatmulRequest) { r.D = Values(make([]float32, 15)) }, ErrLength, "D"},
		{"D too short backward", f32, func(r *MatmulRequest) { back(r); r.D = Values(make([]float32, 31)) }, ErrLength, "D"},
		{"ldd below N/2", f32, func(r *MatmulRequest) { r.LDD = 7 }, ErrLeadingDim, "LDD"},
		{"ldd below 2N", f32, func(r *MatmulRequest) { back(r); r.LDD = 15 }, ErrLeadingDim, "LDD"},
		{"D bits for f32", f32, func(r *MatmulRequest) { r.D = Bits(make([]uint16, 16)) }, ErrDType, "D"},
		{"C bits for f32", f32, func(r *MatmulRequest) { r.C = Bits(make([]uint16, 32)) }, ErrDType, "C"},
		{"lda too small", f32, func(r *MatmulRequest) { r.LDA = 3 }, ErrLeadingDim, "LDA"},
		{"B too short", f32, func(r *MatmulRequest) { r.B = Values(make([]float32, 63)) }, ErrLength, "B"},
		{"inexact bf16 A", Options{Tier: IEEE, In: BF16, Out: F32}, func(r *MatmulRequest) {
			r.A = Values([]float32{1, 1.0000001, 0, 0, 0, 0, 0, 0})
		}, ErrInexact, "A"},
		{"tensor core f32", Options{Tier: TensorCore, In: F32, Model: Hopper}, func(r *MatmulRequest) {}, ErrDType, "In"},
		{"D overlaps A", f32, func(r *MatmulRequest) { r.A, r.D = Values(buf[0:8]), Values(buf[4:20]) }, ErrOverlap, "D"},
		{"D overlaps B", f32, func(r *MatmulRequest) { r.B, r.D = Values(buf[0:64]), Values(buf[60:76]) }, ErrOverlap, "D"},
		{"D overlaps the bias", f32, func(r *MatmulRequest) {
			r.Epilogue, r.Bias, r.D = GatedGLUBias, buf[0:16], Values(buf[15:31])
		}, ErrOverlap, "D"},
		{"D overlaps the input aux", f32, func(r *MatmulRequest) { back(r); r.Aux, r.D = Values(buf[0:32]), Values(buf[31:63]) }, ErrOverlap, "D"},
		{"output aux overlaps D", f32, func(r *MatmulRequest) {
			r.Epilogue, r.D, r.Aux = GatedGLUAux, Values(buf[0:16]), Values(buf[10:42])
		}, ErrOverlap, "Aux"},
		{"output aux overlaps A", f32, func(r *MatmulRequest) {
			r.Epilogue, r.A, r.Aux = GatedGLUAux, Values(buf[100:108]), Values(buf[80:112])
		}, ErrOverlap, "Aux"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			clear(buf)
			r := base()
			c.edit(&r)
			before := append([]float32(nil), r.D.Values...)
			auxBefore := append([]float32(nil), r.Aux.Values...)
			err := c.o.Matmul(r)
			var ae *ArgError
			if !errors.As(err, &ae) || !errors.Is(err, c.sentinel) || ae.Arg != c.arg {
				t.Fatalf("got %v, want an *ArgError of %q matching %v", err, c.arg, c.sentinel)
			}
			if sameBitsAt(r.D.Values, before) >= 0 || sameBitsAt(r.Aux.Values, auxBefore) >= 0 {
				t.Fatalf("%v: D or Aux was written", err)
			}
		})
	}
	// Accepted: beta = 0 with a C full of NaN (ignored), a row window,
	// alpha = 0 (D = a·act(b) of +0 or the bias).
	ok := base()
	ok.C = Values([]float32{float32(math.NaN())})
	ok.Alpha = 0
	if err := (Options{Tier: IEEE, In: F32, Rows: Span{1, 2}}).Matmul(ok); err != nil {
		t.Fatalf("accepted request: %v", err)
	}
	okBack := base()
	back(&okBack)
	if err := f32.Matmul(okBack); err != nil {
		t.Fatalf("accepted backward: %v", err)
	}
}

// TestGateActGradIsThePair: GateActGrad32 gives GateAct32's and
// GateGrad32's bits for every gate (and the invalid codes) on every bf16
// value, the float32 specials and a sample of every binade: the backward
// may share one exponential without changing a bit.
func TestGateActGradIsThePair(t *testing.T) {
	var xs []float32
	for h := range 1 << 16 {
		xs = append(xs, math.Float32frombits(uint32(h)<<16))
	}
	for e := range 256 {
		for m := uint32(1); m < 1<<23; m = m*5 + 3 {
			xs = append(xs, math.Float32frombits(uint32(e)<<23|m), math.Float32frombits(0x80000000|uint32(e)<<23|m))
		}
	}
	xs = append(xs, float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN()), 0, float32(math.Copysign(0, -1)))
	for g := range Gate(6) {
		for _, x := range xs {
			act, grad := GateActGrad32(g, x)
			wa, wg := GateAct32(g, x), GateGrad32(g, x)
			if math.Float32bits(act) != math.Float32bits(wa) || math.Float32bits(grad) != math.Float32bits(wg) {
				t.Fatalf("%v at %v (%#08x): (%#08x, %#08x), want (%#08x, %#08x)", g, x, math.Float32bits(x),
					math.Float32bits(act), math.Float32bits(grad), math.Float32bits(wa), math.Float32bits(wg))
			}
		}
	}
}
