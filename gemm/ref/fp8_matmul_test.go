package ref

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// fp8Code returns a random code of type d: kind 0 any finite code, 1
// exponents near the bias (realistic data), 2 like 1 with a few NaN and
// infinity codes and zeros of both signs, 3 mostly zeros and subnormals.
func fp8Code(rng *rand.Rand, d DType, kind int) uint8 {
	f := fp8Fmt(d)
	for {
		var c uint8
		switch kind {
		case 1, 2:
			e := f.bias - 3 + rng.IntN(7)
			c = uint8(e<<f.mbits) | uint8(rng.IntN(1<<f.mbits))
			if kind == 2 && rng.IntN(40) == 0 {
				c = []uint8{0x00, 0x80, 0x7F, 0xFF, 0x7C, 0x7D, 0xFC, 0x7E}[rng.IntN(8)]
				if d == E5M2 && rng.IntN(2) == 0 {
					c = []uint8{0x7C, 0xFC}[rng.IntN(2)] // ±Inf
				}
				return c | uint8(rng.IntN(2))<<7
			}
		case 3:
			c = uint8(rng.IntN(1<<(f.mbits+1))) * uint8(rng.IntN(2))
		default:
			c = uint8(rng.IntN(0x80))
		}
		c |= uint8(rng.IntN(2)) << 7
		if v := FP8Decode(d, c); v == v && !math.IsInf(float64(v), 0) {
			return c
		}
	}
}

// fp8RandScales returns n positive scales around 1 (a few negative,
// zero, or tiny where odd is set).
func fp8RandScales(rng *rand.Rand, n int, odd bool) []float32 {
	s := make([]float32, n)
	for i := range s {
		s[i] = float32(math.Ldexp(1+rng.Float64(), rng.IntN(9)-4))
		if odd && rng.IntN(10) == 0 {
			s[i] = []float32{-s[i], 0, 0x1p-140, 3e38}[rng.IntN(4)]
		}
	}
	return s
}

// newFP8Case returns a random FP8Matmul request (without an output: see
// fp8Out); pad > 0 pads the leading dimensions of A and B.
func newFP8Case(rng *rand.Rand, ta, tb, out DType, M, N, K int, sc FP8Scaling, acc FP8Accum, e Epilogue, kind, pad int) FP8MatmulRequest {
	r := FP8MatmulRequest{A: ta, B: tb, Out: out, M: M, N: N, K: K, Scaling: sc, Accum: acc, Epilogue: e}
	if pad > 0 {
		r.LDA, r.LDB = K+pad, K+2*pad
	}
	lda, ldb := max(r.LDA, K), max(r.LDB, K)
	r.AData = make([]uint8, (M-1)*lda+K)
	r.BData = make([]uint8, (N-1)*ldb+K)
	for i := range r.AData {
		r.AData[i] = fp8Code(rng, ta, kind)
	}
	for i := range r.BData {
		r.BData[i] = fp8Code(rng, tb, kind)
	}
	kb := (K + 127) / 128
	switch sc {
	case ScaleTensor:
		r.ScaleA, r.ScaleB = fp8RandScales(rng, 1, kind == 2), fp8RandScales(rng, 1, kind == 2)
	case ScaleRow:
		r.ScaleA, r.ScaleB = fp8RandScales(rng, M, kind == 2), fp8RandScales(rng, N, kind == 2)
	case ScaleBlock:
		r.ScaleA, r.ScaleB = fp8RandScales(rng, M*kb, kind == 2), fp8RandScales(rng, (N+127)/128*kb, kind == 2)
	}
	if fp8Epilogues[e].bias {
		r.Bias = randNormal(rng, N)
	}
	if out.FP8() {
		r.ScaleD = float32(math.Ldexp(1+rng.Float64(), rng.IntN(5)-4))
	}
	return r
}

// fp8Out gives r an output for rows [m0, m1) (LDD padded by pad).
func fp8Out(r *FP8MatmulRequest, m0, m1, pad int, bits bool) {
	rows := m1 - m0
	r.LDD = 0
	if pad > 0 {
		r.LDD = r.N + pad
	}
	n := (rows-1)*max(r.LDD, r.N) + r.N
	r.D, r.D8 = Operand{}, nil
	switch {
	case r.Out.FP8():
		r.D8 = make([]uint8, n)
		r.Amax = new(float32)
	case bits && r.Out.Half():
		r.D = Bits(make([]uint16, n))
	default:
		r.D = Values(make([]float32, n))
	}
}

// fp8Want evaluates the contract literally, with FP8Step, for row m of
// r: the values v after the activation, one per column.
func fp8Want(r *FP8MatmulRequest, m int) []float32 {
	lda, ldb := max(r.LDA, r.K), max(r.LDB, r.K)
	steps, kbs := (r.K+31)/32, (r.K+127)/128
	mul := func(x, y float32) float32 { return canon32(float32(x * y)) }
	v := make([]float32, r.N)
	a := r.AData[m*lda : m*lda+r.K]
	for n := range r.N {
		b := r.BData[n*ldb : n*ldb+r.K]
		chain := func(s0, s1 int) float32 {
			c := float32(0)
			for s := s0; s < s1; s++ {
				k0, k1 := 32*s, min(32*s+32, r.K)
				c = FP8Step(c, r.A, a[k0:k1], r.B, b[k0:k1])
			}
			return c
		}
		var x float32
		if r.Accum == AccumFast {
			x = chain(0, steps)
		} else {
			acc := float32(0)
			for kb := range kbs {
				p := chain(4*kb, min(4*kb+4, steps))
				if r.Scaling == ScaleBlock {
					acc = FMA32(p, mul(r.ScaleA[m*kbs+kb], r.ScaleB[(n/128)*kbs+kb]), acc)
				} else {
					acc = Add32(acc, p)
				}
			}
			x = acc
		}
		switch r.Scaling {
		case ScaleTensor:
			x = mul(mul(x, r.ScaleA[0]), r.ScaleB[0])
		case ScaleRow:
			x = mul(mul(x, r.ScaleA[m]), r.ScaleB[n])
		}
		if fp8Epilogues[r.Epilogue].bias {
			x = Add32(x, r.Bias[n])
		}
		switch fp8Epilogues[r.Epilogue].act {
		case actRelu:
			x = Relu32(x)
		case actGelu:
			x = Gelu32(x)
		}
		v[n] = x
	}
	return v
}

// fp8Check compares r's output (rows [m0, m1)) with the literal
// evaluation; it returns a description of the first difference, or "".
func fp8Check(r *FP8MatmulRequest, m0, m1 int) string {
	ldd := max(r.LDD, r.N)
	amax := float32(0)
	for m := m0; m < m1; m++ {
		want := fp8Want(r, m)
		for n, v := range want {
			o := (m-m0)*ldd + n
			switch {
			case r.Out.FP8():
				if a := abs32(v); a > amax {
					amax = a
				}
				w := FP8Encode(r.Out, float32(v*r.ScaleD))
				if r.D8[o] != w {
					return fmt.Sprintf("(%d,%d): %#02x, want %#02x (v %v)", m, n, r.D8[o], w, v)
				}
			case r.Out == F32:
				if g := r.D.Values[o]; math.Float32bits(g) != math.Float32bits(v) {
					return fmt.Sprintf("(%d,%d): %v (%#08x), want %v (%#08x)", m, n, g, math.Float32bits(g), v, math.Float32bits(v))
				}
			default:
				w := r.Out.FromF32(v)
				g := r.Out.FromF32(0)
				if r.D.Bits != nil {
					g = r.D.Bits[o]
				} else {
					g = r.Out.FromF32(r.D.Values[o])
					if math.Float32bits(r.D.Values[o]) != math.Float32bits(r.Out.ToF32(w)) {
						return fmt.Sprintf("(%d,%d): value %v, want %v", m, n, r.D.Values[o], r.Out.ToF32(w))
					}
				}
				if g != w {
					return fmt.Sprintf("(%d,%d): %#04x, want %#04x (v %v)", m, n, g, w, v)
				}
			}
		}
	}
	if r.Amax != nil && math.Float32bits(*r.Amax) != math.Float32bits(amax) {
		return fmt.Sprintf("amax %v, want %v", *r.Amax, amax)
	}
	return ""
}

var (
	fp8Types    = []DType{E4M3, E5M2}
	fp8Outs     = []DType{F32, BF16, F16, E4M3, E5M2}
	fp8Scalings = []FP8Scaling{ScaleTensor, ScaleRow, ScaleBlock}
	fp8Accums   = []FP8Accum{AccumPromoted, AccumFast}
	fp8Epis     = []Epilogue{Default, Bias, Relu, ReluBias, Gelu, GeluBias}
)

// TestFP8MatmulEqualsSteps: FP8Matmul equals the literal loop over
// FP8Step for every type pair, output type, accumulation, scaling and
// epilogue, on odd shapes (partial steps and blocks, N across a 128-column
// block of B), with padded leading dimensions and the different data
// kinds.
func TestFP8MatmulEqualsSteps(t *testing.T) {
	rng := rand.New(rand.NewPCG(8, 8))
	shapes := [][3]int{{3, 5, 200}, {2, 3, 16}, {1, 130, 33}}
	if !testing.Short() {
		shapes = append(shapes, [3]int{2, 2, 4100})
	}
	n := 0
	for _, sh := range shapes {
		for _, ta := range fp8Types {
			for _, tb := range fp8Types {
				for _, out := range fp8Outs {
					for _, acc := range fp8Accums {
						for _, sc := range fp8Scalings {
							if sc == ScaleBlock && acc == AccumFast {
								continue
							}
							e := fp8Epis[n%len(fp8Epis)]
							kind, pad := n%4, n%3
							n++
							r := newFP8Case(rng, ta, tb, out, sh[0], sh[1], sh[2], sc, acc, e, kind, pad)
							fp8Out(&r, 0, r.M, pad, n%2 == 0)
							o := Options{Workers: 1 + n%3}
							if err := o.FP8Matmul(r); err != nil {
								t.Fatalf("%v×%v→%v %v %v %v %v: %v", ta, tb, out, acc, sc, e, sh, err)
							}
							if d := fp8Check(&r, 0, r.M); d != "" {
								t.Fatalf("%v×%v→%v %v %v %v %v kind %d: %s", ta, tb, out, acc, sc, e, sh, kind, d)
							}
						}
					}
				}
			}
		}
	}
	// Every epilogue with every scaling on one shape.
	for i, e := range fp8Epis {
		for _, sc := range fp8Scalings {
			r := newFP8Case(rng, E4M3, E5M2, F32, 3, 5, 200, sc, AccumPromoted, e, 2, 0)
			fp8Out(&r, 0, 3, 0, false)
			if err := (Options{}).FP8Matmul(r); err != nil {
				t.Fatal(err)
			}
			if d := fp8Check(&r, 0, 3); d != "" {
				t.Fatalf("%v %v (%d): %s", e, sc, i, d)
			}
		}
	}
}

// TestFP8MatmulExactIntegers: small integers (exact in E4M3 and E5M2)
// whose products and partial sums stay below 2^14 give the exact dot
// product, scaled by powers of two, plus an integer bias.
func TestFP8MatmulExactIntegers(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 14))
	for _, ta := range fp8Types {
		for _, tb := range fp8Types {
			for _, acc := range fp8Accums {
				const M, N, K = 3, 5, 200
				r := FP8MatmulRequest{A: ta, B: tb, Out: F32, M: M, N: N, K: K, Scaling: ScaleRow, Accum: acc, Epilogue: ReluBias,
					AData: make([]uint8, M*K), BData: make([]uint8, N*K), ScaleA: []float32{1, 2, 0.5}, ScaleB: []float32{4, 1, 0.25, 1, 2},
					Bias: []float32{-3, 0, 7, 100, -1}, D: Values(make([]float32, M*N))}
				ai, bi := make([]int, M*K), make([]int, N*K)
				for i := range ai {
					ai[i] = rng.IntN(17) - 8
					r.AData[i] = FP8Encode(ta, float32(ai[i]))
				}
				for i := range bi {
					bi[i] = rng.IntN(17) - 8
					r.BData[i] = FP8Encode(tb, float32(bi[i]))
				}
				if err := (Options{}).FP8Matmul(r); err != nil {
					t.Fatal(err)
				}
				for m := range M {
					for n := range N {
						dot := 0
						for k := range K {
							dot += ai[m*K+k] * bi[n*K+k]
						}
						want := max(float64(dot)*float64(r.ScaleA[m])*float64(r.ScaleB[n])+float64(r.Bias[n]), 0)
						if got := r.D.Values[m*N+n]; float64(got) != want {
							t.Errorf("%v×%v %v (%d,%d): %v, want %v", ta, tb, acc, m, n, got, want)
						}
					}
				}
			}
		}
	}
}

// TestFP8MatmulAccumulation: hand-checked cases where the 14-bit step
// accumulator shows, and where the promoted accumulation differs from
// the fast one.
func TestFP8MatmulAccumulation(t *testing.T) {
	e4 := func(v float32) uint8 { return FP8Encode(E4M3, v) }
	tests := []struct {
		name       string
		K          int
		a, b       map[int]float32 // nonzero positions of the one row of A and B
		fast, prom float32
	}{
		{"2^14 hides 1 in one step", 32, map[int]float32{0: 256, 1: 1}, map[int]float32{0: 64, 1: 1}, 16384, 16384},
		{"a 15-bit sum keeps 14 bits", 32, map[int]float32{0: 256, 1: 256, 2: 2}, map[int]float32{0: 64, 1: 64, 2: 1}, 32768, 32768},
		{"next block: promoted adds in f32", 256, map[int]float32{0: 256, 128: 1}, map[int]float32{0: 64, 128: 1}, 16384, 16385},
		{"same block: both lose it", 256, map[int]float32{0: 256, 96: 1}, map[int]float32{0: 64, 96: 1}, 16384, 16384},
		{"later step of the block sees the accumulator", 64, map[int]float32{0: 256, 40: 1}, map[int]float32{0: 64, 40: 3}, 16386, 16386},
		{"cancellation then a small term", 160, map[int]float32{0: 256, 1: -256, 140: 0.25}, map[int]float32{0: 64, 1: 64, 140: 0.5}, 0.125, 0.125},
	}
	for _, tc := range tests {
		a, b := make([]uint8, tc.K), make([]uint8, tc.K)
		for k, v := range tc.a {
			a[k] = e4(v)
		}
		for k, v := range tc.b {
			b[k] = e4(v)
		}
		for _, acc := range fp8Accums {
			d := make([]float32, 1)
			r := FP8MatmulRequest{A: E4M3, B: E4M3, Out: F32, M: 1, N: 1, K: tc.K, AData: a, BData: b, Scaling: ScaleTensor,
				ScaleA: []float32{1}, ScaleB: []float32{1}, Accum: acc, D: Values(d)}
			if err := (Options{}).FP8Matmul(r); err != nil {
				t.Fatal(err)
			}
			want := tc.prom
			if acc == AccumFast {
				want = tc.fast
			}
			if d[0] != want {
				t.Errorf("%s, %v: %v, want %v", tc.name, acc, d[0], want)
			}
		}
	}
}

// TestFP8MatmulSpecials: NaN codes, E5M2 infinities and Inf·0 through
// the product, the scales and every output type.
func TestFP8MatmulSpecials(t *testing.T) {
	inf := float32(math.Inf(1))
	one4, one5 := FP8Encode(E4M3, 1), FP8Encode(E5M2, 1)
	tests := []struct {
		name   string
		ta, tb DType
		a, b   []uint8 // one row each, K = len
		scaleA float32
		want   float32
	}{
		{"e4m3 NaN code", E4M3, E4M3, []uint8{0x7F, one4}, []uint8{one4, one4}, 1, canonicalNaN},
		{"e4m3 -NaN code", E4M3, E5M2, []uint8{0xFF}, []uint8{one5}, 1, canonicalNaN},
		{"e5m2 NaN code", E5M2, E5M2, []uint8{0x7D}, []uint8{one5}, 1, canonicalNaN},
		{"e5m2 +Inf", E5M2, E4M3, []uint8{0x7C, one5}, []uint8{one4, one4}, 1, inf},
		{"e5m2 -Inf", E5M2, E4M3, []uint8{0xFC}, []uint8{one4}, 1, -inf},
		{"Inf·(-1)", E5M2, E4M3, []uint8{0x7C}, []uint8{0x80 | one4}, 1, -inf},
		{"Inf·0", E5M2, E4M3, []uint8{0x7C}, []uint8{0}, 1, canonicalNaN},
		{"Inf - Inf", E5M2, E5M2, []uint8{0x7C, 0xFC}, []uint8{one5, one5}, 1, canonicalNaN},
		{"Inf in a later step", E5M2, E5M2, append(make([]uint8, 40), 0x7C), append(make([]uint8, 40), one5), 1, inf},
		{"Inf times scale 0", E5M2, E5M2, []uint8{0x7C}, []uint8{one5}, 0, canonicalNaN},
		{"scale NaN", E4M3, E4M3, []uint8{one4}, []uint8{one4}, float32(math.NaN()), canonicalNaN},
	}
	for _, tc := range tests {
		for _, acc := range fp8Accums {
			for _, out := range fp8Outs {
				r := FP8MatmulRequest{A: tc.ta, B: tc.tb, Out: out, M: 1, N: 1, K: len(tc.a), AData: tc.a, BData: tc.b,
					Scaling: ScaleTensor, ScaleA: []float32{tc.scaleA}, ScaleB: []float32{1}, Accum: acc}
				fp8Out(&r, 0, 1, 0, true)
				if out.FP8() {
					r.ScaleD = 1
				}
				if err := (Options{}).FP8Matmul(r); err != nil {
					t.Fatal(err)
				}
				if d := fp8Check(&r, 0, 1); d != "" {
					t.Errorf("%s %v %v: %s", tc.name, acc, out, d)
				}
				var got float32
				switch {
				case out == F32:
					got = r.D.Values[0]
				case out.Half():
					got = out.ToF32(r.D.Bits[0])
				default:
					got = FP8Decode(out, r.D8[0])
				}
				want := tc.want
				switch {
				case want != want:
				case out == E4M3 && math.IsInf(float64(want), 0):
					want = float32(math.Copysign(448, float64(want))) // satfinite
				case out == E5M2 && math.IsInf(float64(want), 0):
					want = float32(math.Copysign(57344, float64(want)))
				}
				if !sameF32(got, want) || out == F32 && want != want && math.Float32bits(got) != CanonicalNaN32 {
					t.Errorf("%s %v %v: %v (%#x), want %v", tc.name, acc, out, got, math.Float32bits(got), want)
				}
				if r.Amax != nil {
					wantMax := abs32(tc.want)
					if tc.want != tc.want {
						wantMax = 0 // NaN skipped
					}
					if *r.Amax != wantMax {
						t.Errorf("%s %v %v: amax %v, want %v", tc.name, acc, out, *r.Amax, wantMax)
					}
				}
			}
		}
	}
}

// TestFP8MatmulWindowsWorkers: a window of rows, computed with any number
// of workers and from any M (the rows of A past the window dropped), has
// the bits of the same rows of the whole product.
func TestFP8MatmulWindowsWorkers(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 5))
	const M, N, K = 21, 150, 300
	for _, out := range []DType{F32, E4M3} {
		for _, sc := range fp8Scalings {
			whole := newFP8Case(rng, E4M3, E5M2, out, M, N, K, sc, AccumPromoted, GeluBias, 2, 1)
			fp8Out(&whole, 0, M, 0, false)
			if err := (Options{Workers: 1}).FP8Matmul(whole); err != nil {
				t.Fatal(err)
			}
			for _, w := range []struct{ lo, hi, workers int }{{0, M, 4}, {5, 17, 3}, {20, 21, 2}, {0, 1, 1}} {
				r := whole
				fp8Out(&r, w.lo, w.hi, 3, false)
				if err := (Options{Rows: Span{w.lo, w.hi}, Workers: w.workers}).FP8Matmul(r); err != nil {
					t.Fatal(err)
				}
				for m := w.lo; m < w.hi; m++ {
					for n := range N {
						o, ow := (m-w.lo)*r.LDD+n, m*N+n
						if out == F32 && math.Float32bits(r.D.Values[o]) != math.Float32bits(whole.D.Values[ow]) ||
							out == E4M3 && r.D8[o] != whole.D8[ow] {
							t.Fatalf("%v %v window %v: (%d,%d) differs", out, sc, w, m, n)
						}
					}
				}
				if sc != ScaleTensor && w.hi-w.lo == 1 { // per-row and block scales: the row alone
					one := r
					one.M = 1
					one.AData = r.AData[w.lo*max(r.LDA, K):]
					one.ScaleA = r.ScaleA[w.lo*len(r.ScaleA)/M:]
					one.LDD = 0
					fp8Out(&one, 0, 1, 0, false)
					if err := (Options{}).FP8Matmul(one); err != nil {
						t.Fatal(err)
					}
					for n := range N {
						if out == F32 && math.Float32bits(one.D.Values[n]) != math.Float32bits(r.D.Values[n]) ||
							out == E4M3 && one.D8[n] != r.D8[n] {
							t.Fatalf("%v %v row %d alone: column %d differs", out, sc, w.lo, n)
						}
					}
				}
			}
		}
	}
}

// TestFP8StepFastEqualsLiteral: the fast step of the product equals
// FP8Step on random steps: any accumulator bits, every data kind,
// partial steps.
func TestFP8StepFastEqualsLiteral(t *testing.T) {
	rng := rand.New(rand.NewPCG(32, 14))
	n := 200000
	if testing.Short() {
		n = 20000
	}
	a, b := make([]uint8, 32), make([]uint8, 32)
	for i := range n {
		ta, tb := fp8Types[i%2], fp8Types[i/2%2]
		kind := rng.IntN(4)
		for j := range a {
			a[j], b[j] = fp8Code(rng, ta, kind), fp8Code(rng, tb, kind)
			if rng.IntN(8) == 0 {
				a[j] = uint8(rng.Uint32()) // any code, NaN and Inf included
			}
		}
		var c float32
		switch rng.IntN(5) {
		case 0:
			c = math.Float32frombits(rng.Uint32()) // anything
		case 1:
			c = []float32{0, float32(math.Copysign(0, -1)), float32(math.Inf(1)), float32(math.Inf(-1)), 0x1p-149, -0x1p-126, 3.4e38}[rng.IntN(7)]
		default:
			c = float32(math.Ldexp(rng.NormFloat64(), rng.IntN(60)-30))
		}
		k := 32
		if rng.IntN(4) == 0 {
			k = rng.IntN(33)
		}
		p := newFP8Pair(ta, tb)
		got, want := p.step(c, a[:k], b[:k], true), FP8Step(c, ta, a[:k], tb, b[:k])
		if !sameF32(got, want) || want == want && math.Float32bits(got) != math.Float32bits(want) {
			t.Fatalf("%v×%v c %v k %d a %x b %x: fast %v, literal %v", ta, tb, c, k, a[:k], b[:k], got, want)
		}
		if want != want && math.Float32bits(want) != CanonicalNaN32 {
			t.Fatalf("FP8Step gave a non-canonical NaN %#x", math.Float32bits(want))
		}
	}
}

// TestFP8StepFastEqualsLiteralPairs: every pair of codes of every type
// pair, as one product beside a few accumulators.
func TestFP8StepFastEqualsLiteralPairs(t *testing.T) {
	cs := []float32{0, float32(math.Copysign(0, -1)), 1.5, -0x1p-20}
	if testing.Short() {
		cs = cs[:1]
	}
	for _, ta := range fp8Types {
		for _, tb := range fp8Types {
			p := newFP8Pair(ta, tb)
			for x := range 256 {
				for y := range 256 {
					a, b := []uint8{uint8(x)}, []uint8{uint8(y)}
					for _, c := range cs {
						got, want := p.step(c, a, b, true), FP8Step(c, ta, a, tb, b)
						if math.Float32bits(got) != math.Float32bits(want) {
							t.Fatalf("%v×%v %#02x·%#02x + %v: fast %v, literal %v", ta, tb, x, y, c, got, want)
						}
					}
				}
			}
		}
	}
}

// TestFP8StepCases: hand-checked steps, signed zeros included.
func TestFP8StepCases(t *testing.T) {
	e4 := func(v ...float32) []uint8 {
		c := make([]uint8, len(v))
		for i, x := range v {
			c[i] = FP8Encode(E4M3, x)
		}
		return c
	}
	negZero := float32(math.Copysign(0, -1))
	all := func(code uint8) []uint8 {
		c := make([]uint8, 32)
		for i := range c {
			c[i] = code
		}
		return c
	}
	tests := []struct {
		name string
		c    float32
		a, b []uint8
		want float32
	}{
		{"one product", 0, e4(1), e4(1), 1},
		{"c alone", 5, nil, nil, 5},
		{"c cut to 14 bits", 1 + 0x1p-20, nil, nil, 1},
		{"c keeps 14 bits", 1 + 0x1p-13, nil, nil, 1 + 0x1p-13},
		{"negative c cut toward zero", -(1 + 0x1p-13 + 0x1p-14), nil, nil, -(1 + 0x1p-13)},
		{"c below a large product's grid", 1, e4(256), e4(64), 16384},
		{"product below c's grid", 16384, e4(1), e4(1), 16384},
		{"sum of 15 bits", 0, e4(256, 256, 2), e4(64, 64, 1), 32768},
		{"subnormal factors: exponents clamped", 0x1p-25 + 0x1p-30, e4(0x1p-9), e4(0x1p-9), 0x1p-18 + 0x1p-25},
		{"+0 c, -0 products", 0, all(0x80), all(0x38), 0},
		{"-0 c, -0 products", negZero, all(0x80), all(0x38), negZero},
		{"-0 c, -0 products, zero-filled tail", negZero, all(0x80)[:31], all(0x38)[:31], 0},
		{"-0 c, one +0 product", negZero, append(all(0x80)[:31], 0), all(0x38), 0},
		{"cancellation", negZero, e4(1, 1), e4(1, -1), 0},
		{"NaN c", float32(math.NaN()), nil, nil, canonicalNaN},
		{"NaN code", 0, []uint8{0x7F}, e4(1), canonicalNaN},
		{"Inf c", float32(math.Inf(-1)), e4(448), e4(448), float32(math.Inf(-1))},
	}
	for _, tc := range tests {
		got := FP8Step(tc.c, E4M3, tc.a, E4M3, tc.b)
		if math.Float32bits(got) != math.Float32bits(tc.want) {
			t.Errorf("%s: %v (%#08x), want %v (%#08x)", tc.name, got, math.Float32bits(got), tc.want, math.Float32bits(tc.want))
		}
		a, b := make([]uint8, len(tc.a)), make([]uint8, len(tc.b))
		copy(a, tc.a)
		copy(b, tc.b)
		if fast := newFP8Pair(E4M3, E4M3).step(tc.c, a, b, true); math.Float32bits(fast) != math.Float32bits(got) {
			t.Errorf("%s: fast %v, literal %v", tc.name, fast, got)
		}
	}
}

func TestFP8MatmulErrors(t *testing.T) {
	base := func() FP8MatmulRequest {
		return FP8MatmulRequest{A: E4M3, B: E5M2, Out: F32, M: 2, N: 3, K: 40, AData: make([]uint8, 80), BData: make([]uint8, 120),
			Scaling: ScaleTensor, ScaleA: []float32{1}, ScaleB: []float32{1}, Accum: AccumPromoted, D: Values(make([]float32, 6))}
	}
	fp8 := func(r FP8MatmulRequest) FP8MatmulRequest {
		r.Out, r.D, r.D8, r.ScaleD = E4M3, Operand{}, make([]uint8, 6), 1
		return r
	}
	shared := make([]uint8, 200)
	sharedF := make([]float32, 10)
	tests := []struct {
		name string
		o    Options
		edit func(*FP8MatmulRequest)
		want error
	}{
		{"A f32", Options{}, func(r *FP8MatmulRequest) { r.A = F32 }, ErrDType},
		{"B zero", Options{}, func(r *FP8MatmulRequest) { r.B = 0 }, ErrDType},
		{"Out zero", Options{}, func(r *FP8MatmulRequest) { r.Out = 0 }, ErrDType},
		{"Out 9", Options{}, func(r *FP8MatmulRequest) { r.Out = 9 }, ErrDType},
		{"Scaling zero", Options{}, func(r *FP8MatmulRequest) { r.Scaling = 0 }, ErrScale},
		{"Accum zero", Options{}, func(r *FP8MatmulRequest) { r.Accum = 0 }, ErrScale},
		{"block with fast accumulation", Options{}, func(r *FP8MatmulRequest) {
			r.Scaling, r.Accum, r.ScaleA, r.ScaleB = ScaleBlock, AccumFast, make([]float32, 2), make([]float32, 1)
		}, ErrScale},
		{"ScaleD with f32 out", Options{}, func(r *FP8MatmulRequest) { r.ScaleD = 1 }, ErrScale},
		{"Amax with f32 out", Options{}, func(r *FP8MatmulRequest) { r.Amax = new(float32) }, ErrOperand},
		{"D8 with f32 out", Options{}, func(r *FP8MatmulRequest) { r.D8 = make([]uint8, 6) }, ErrOperand},
		{"D with fp8 out", Options{}, func(r *FP8MatmulRequest) { *r = fp8(*r); r.D = Values(make([]float32, 6)) }, ErrOperand},
		{"D8 short", Options{}, func(r *FP8MatmulRequest) { *r = fp8(*r); r.D8 = r.D8[:5] }, ErrLength},
		{"D8 over A", Options{}, func(r *FP8MatmulRequest) { *r = fp8(*r); r.AData, r.D8 = shared[:80], shared[70:] }, ErrOverlap},
		{"D8 over B", Options{}, func(r *FP8MatmulRequest) { *r = fp8(*r); r.BData, r.D8 = shared[:120], shared[:6] }, ErrOverlap},
		{"D over ScaleA", Options{}, func(r *FP8MatmulRequest) { r.D, r.ScaleA = Values(sharedF[:6]), sharedF[5:6] }, ErrOverlap},
		{"D over Bias", Options{}, func(r *FP8MatmulRequest) { r.Epilogue, r.D, r.Bias = Bias, Values(sharedF[:6]), sharedF[2:5] }, ErrOverlap},
		{"Epilogue ReluAux", Options{}, func(r *FP8MatmulRequest) { r.Epilogue = ReluAux }, ErrEpilogue},
		{"Epilogue DGelu", Options{}, func(r *FP8MatmulRequest) { r.Epilogue = DGelu }, ErrEpilogue},
		{"Epilogue gated", Options{}, func(r *FP8MatmulRequest) { r.Epilogue = GatedGLU }, ErrEpilogue},
		{"Epilogue 200", Options{}, func(r *FP8MatmulRequest) { r.Epilogue = 200 }, ErrEpilogue},
		{"M zero", Options{}, func(r *FP8MatmulRequest) { r.M = 0 }, ErrDim},
		{"N negative", Options{}, func(r *FP8MatmulRequest) { r.N = -1 }, ErrDim},
		{"K zero", Options{}, func(r *FP8MatmulRequest) { r.K = 0 }, ErrDim},
		{"M*K overflows", Options{}, func(r *FP8MatmulRequest) { r.M, r.K = 1<<40, 1<<40 }, ErrDim},
		{"Cols window", Options{Cols: Span{0, 1}}, func(*FP8MatmulRequest) {}, ErrRange},
		{"Rows past M", Options{Rows: Span{1, 3}}, func(*FP8MatmulRequest) {}, ErrRange},
		{"LDA short", Options{}, func(r *FP8MatmulRequest) { r.LDA = 39 }, ErrLeadingDim},
		{"LDB negative", Options{}, func(r *FP8MatmulRequest) { r.LDB = -1 }, ErrLeadingDim},
		{"LDD short", Options{}, func(r *FP8MatmulRequest) { r.LDD = 2 }, ErrLeadingDim},
		{"LDA padded, A short", Options{}, func(r *FP8MatmulRequest) { r.LDA = 41 }, ErrLength},
		{"AData short", Options{}, func(r *FP8MatmulRequest) { r.AData = r.AData[:79] }, ErrLength},
		{"BData nil", Options{}, func(r *FP8MatmulRequest) { r.BData = nil }, ErrLength},
		{"D short", Options{}, func(r *FP8MatmulRequest) { r.D = Values(make([]float32, 5)) }, ErrLength},
		{"D bits for f32", Options{}, func(r *FP8MatmulRequest) { r.D = Bits(make([]uint16, 6)) }, ErrDType},
		{"D both forms", Options{}, func(r *FP8MatmulRequest) { r.Out, r.D.Bits = BF16, make([]uint16, 6) }, ErrDType},
		{"ScaleA empty", Options{}, func(r *FP8MatmulRequest) { r.ScaleA = nil }, ErrLength},
		{"row scales short", Options{}, func(r *FP8MatmulRequest) {
			r.Scaling, r.ScaleA, r.ScaleB = ScaleRow, make([]float32, 2), make([]float32, 2)
		}, ErrLength},
		{"block scales short", Options{}, func(r *FP8MatmulRequest) {
			r.Scaling, r.ScaleA, r.ScaleB = ScaleBlock, make([]float32, 1), make([]float32, 1)
		}, ErrLength},
		{"Bias missing", Options{}, func(r *FP8MatmulRequest) { r.Epilogue = GeluBias }, ErrLength},
		{"Bias short", Options{}, func(r *FP8MatmulRequest) { r.Epilogue, r.Bias = Bias, make([]float32, 2) }, ErrLength},
		{"Bias not used", Options{}, func(r *FP8MatmulRequest) { r.Bias = make([]float32, 3) }, ErrOperand},
	}
	for _, tc := range tests {
		r := base()
		tc.edit(&r)
		d := r.D.Values
		err := tc.o.FP8Matmul(r)
		var ae *ArgError
		if !errors.Is(err, tc.want) || !errors.As(err, &ae) || ae.Op != "FP8Matmul" {
			t.Errorf("%s: %v, want an *ArgError of %v", tc.name, err, tc.want)
		}
		for _, v := range d {
			if v != 0 {
				t.Errorf("%s: wrote D before refusing", tc.name)
				break
			}
		}
	}
	// The valid base and its fp8 form run.
	for _, r := range []FP8MatmulRequest{base(), fp8(base())} {
		if err := (Options{}).FP8Matmul(r); err != nil {
			t.Errorf("valid request: %v", err)
		}
	}
}
