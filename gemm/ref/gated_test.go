package ref

import (
	"errors"
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
