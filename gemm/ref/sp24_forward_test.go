package ref

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"
)

// sp24Random returns a random compressed weight (N × K/2 values drawn by
// val, valid random metadata) for tests.
func sp24Random(rng *rand.Rand, d DType, K, N int, val func() float32) ([]uint16, []uint32) {
	steps := (K + 31) / 32
	pats := []uint32{0x4, 0x8, 0xC, 0x9, 0xD, 0xE}
	v := make([]uint16, N*K/2)
	m := make([]uint32, N*steps)
	for i := range v {
		v[i] = d.FromF32(val())
	}
	for n := 0; n < N; n++ {
		for g := 0; g < steps*8; g++ {
			p := uint32(4)
			if 4*g < K {
				p = pats[rng.IntN(6)]
			}
			m[n*steps+g/8] |= p << (4 * (g % 8))
		}
	}
	return v, m
}

// sp24Dense is the dense W[K,N] (float64) of a compressed weight.
func sp24Dense(d DType, v []uint16, m []uint32, K, N int) []float64 {
	steps := (K + 31) / 32
	w := make([]float64, K*N)
	for n := 0; n < N; n++ {
		for g := 0; g < K/4; g++ {
			nib := m[n*steps+g/8] >> (4 * (g % 8)) & 0xF
			w[(4*g+int(nib&3))*N+n] = float64(d.ToF32(v[n*K/2+2*g]))
			w[(4*g+int(nib>>2))*N+n] = float64(d.ToF32(v[n*K/2+2*g+1]))
		}
	}
	return w
}

func TestSparse24ForwardExactIntegers(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 24))
	for _, d := range []DType{BF16, F16} {
		for _, sh := range [][3]int{{1, 1, 16}, {3, 5, 48}, {17, 9, 64}, {33, 40, 112}, {5, 7, 1024}} {
			M, N, K := sh[0], sh[1], sh[2]
			small := func() float32 { return float32(rng.IntN(9) - 4) }
			v, m := sp24Random(rng, d, K, N, small)
			x := make([]uint16, M*K)
			for i := range x {
				x[i] = d.FromF32(small())
			}
			bias := make([]float32, N)
			for i := range bias {
				bias[i] = small()
			}
			y := make([]float32, M*N)
			for i := range y {
				y[i] = float32(math.NaN())
			}
			o := Options{Tier: TensorCore, In: d, Out: F32, Model: Hopper}
			if err := o.Sparse24Forward(Sparse24Request{M: M, N: N, K: K, X: Bits(x), Values: v, Meta: m, Y: Values(y), Bias: bias, Epilogue: Bias}); err != nil {
				t.Fatal(err)
			}
			w := sp24Dense(d, v, m, K, N)
			for i := 0; i < M; i++ {
				for n := 0; n < N; n++ {
					s := float64(bias[n])
					for k := 0; k < K; k++ {
						s += float64(d.ToF32(x[i*K+k])) * w[k*N+n]
					}
					if float32(s) != y[i*N+n] {
						t.Fatalf("%v %v (%d,%d): got %v, want %v", d, sh, i, n, y[i*N+n], s)
					}
				}
			}
		}
	}
}

// sp24Naive is the definition, element by element, through TCModel.Step.
func sp24Naive(d DType, model TCModel, x []uint16, ldx int, v []uint16, m []uint32, bias []float32, M, N, K int) []float32 {
	steps := (K + 31) / 32
	out := make([]float32, M*N)
	for i := 0; i < M; i++ {
		for n := 0; n < N; n++ {
			c := float32(0)
			if bias != nil {
				c = bias[n]
			}
			for s := 0; s < steps; s++ {
				var a, b []float32
				for g := s * 8; g < s*8+8 && 4*g < K; g++ {
					nib := m[n*steps+s] >> (4 * (g % 8)) & 0xF
					for h, p := range []uint32{nib & 3, nib >> 2} {
						a = append(a, d.ToF32(x[i*ldx+4*g+int(p)]))
						b = append(b, d.ToF32(v[n*K/2+2*g+h]))
					}
				}
				c = model.Step(d, c, a, b)
			}
			out[i*N+n] = c
		}
	}
	return out
}

func TestSparse24ForwardMatchesStep(t *testing.T) {
	rng := rand.New(rand.NewPCG(8, 24))
	for _, d := range []DType{BF16, F16} {
		spread := 60
		if d == F16 {
			spread = 12
		}
		adv := func() float32 {
			switch rng.IntN(10) {
			case 0:
				return 0
			case 1:
				return float32(math.Ldexp(1, -130)) * float32(rng.IntN(5)) // subnormal in bf16 (zero in f16)
			case 2:
				if rng.IntN(40) == 0 {
					return float32(math.Inf(1 - 2*rng.IntN(2)))
				}
			}
			return float32((rng.Float64()*2 - 1) * math.Ldexp(1, rng.IntN(2*spread+1)-spread))
		}
		for _, sh := range [][3]int{{7, 9, 48}, {20, 13, 160}, {3, 33, 256}} {
			M, N, K := sh[0], sh[1], sh[2]
			v, m := sp24Random(rng, d, K, N, adv)
			ldx := K + 8
			x := make([]uint16, M*ldx)
			for i := range x {
				x[i] = d.FromF32(adv())
			}
			bias := make([]float32, N)
			for i := range bias {
				bias[i] = adv()
			}
			want := sp24Naive(d, Hopper, x, ldx, v, m, bias, M, N, K)
			y := make([]float32, M*N)
			o := Options{Tier: TensorCore, In: d, Out: F32, Model: Hopper, Workers: 3}
			if err := o.Sparse24Forward(Sparse24Request{M: M, N: N, K: K, X: Bits(x), LDX: ldx, Values: v, Meta: m, Y: Values(y), Bias: bias, Epilogue: Bias}); err != nil {
				t.Fatal(err)
			}
			for i := range want {
				if math.Float32bits(want[i]) != math.Float32bits(y[i]) && !(want[i] != want[i] && y[i] != y[i]) {
					t.Fatalf("%v %v element %d: got %v (%#x), want %v (%#x)", d, sh, i, y[i], math.Float32bits(y[i]), want[i], math.Float32bits(want[i]))
				}
			}
			// A window of rows has the same bits as the whole (batch invariance).
			w := make([]float32, 2*N)
			o.Rows = Span{M - 2, M}
			if err := o.Sparse24Forward(Sparse24Request{M: M, N: N, K: K, X: Bits(x), LDX: ldx, Values: v, Meta: m, Y: Values(w), Bias: bias, Epilogue: Bias}); err != nil {
				t.Fatal(err)
			}
			for i := range w {
				if math.Float32bits(w[i]) != math.Float32bits(y[(M-2)*N+i]) {
					t.Fatalf("%v %v: window element %d differs", d, sh, i)
				}
			}
		}
	}
}

func TestSparse24ForwardRefuses(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 24))
	v, m := sp24Random(rng, BF16, 32, 4, func() float32 { return 1 })
	good := func() (Options, Sparse24Request) {
		return Options{Tier: TensorCore, In: BF16, Model: Hopper},
			Sparse24Request{M: 2, N: 4, K: 32, X: Bits(make([]uint16, 64)), Values: v, Meta: m, Y: Bits(make([]uint16, 8))}
	}
	bad := append([]uint32(nil), m...)
	bad[1] &^= 0xF
	cases := []struct {
		name string
		edit func(*Options, *Sparse24Request)
		want error
	}{
		{"ieee", func(o *Options, r *Sparse24Request) { o.Tier = IEEE }, ErrTier},
		{"f32 in", func(o *Options, r *Sparse24Request) { o.In = F32 }, ErrDType},
		{"f16 out", func(o *Options, r *Sparse24Request) { o.Out = F16 }, ErrDType},
		{"K", func(o *Options, r *Sparse24Request) { r.K = 24 }, ErrDim},
		{"M", func(o *Options, r *Sparse24Request) { r.M = 0 }, ErrDim},
		{"ldx", func(o *Options, r *Sparse24Request) { r.LDX = 16 }, ErrLeadingDim},
		{"values", func(o *Options, r *Sparse24Request) { r.Values = v[:10] }, ErrLength},
		{"meta", func(o *Options, r *Sparse24Request) { r.Meta = m[:1] }, ErrLength},
		{"nibble", func(o *Options, r *Sparse24Request) { r.Meta = bad }, ErrMeta24},
		{"epilogue", func(o *Options, r *Sparse24Request) { r.Epilogue = DGelu }, ErrEpilogue},
		{"no bias", func(o *Options, r *Sparse24Request) { r.Epilogue = Bias }, ErrLength},
		{"bias unused", func(o *Options, r *Sparse24Request) { r.Bias = []float32{1, 2, 3, 4} }, ErrOperand},
		{"aux unused", func(o *Options, r *Sparse24Request) { r.ReluMask = make([]uint8, 8) }, ErrOperand},
		{"cols", func(o *Options, r *Sparse24Request) { o.Cols = Span{0, 2} }, ErrRange},
		{"rows", func(o *Options, r *Sparse24Request) { o.Rows = Span{1, 3} }, ErrRange},
		{"model", func(o *Options, r *Sparse24Request) { o.Model = TCModel{} }, ErrTCModel},
	}
	for _, c := range cases {
		o, r := good()
		c.edit(&o, &r)
		err := o.Sparse24Forward(r)
		var ae *ArgError
		if !errors.Is(err, c.want) || !errors.As(err, &ae) {
			t.Errorf("%s: got %v, want %v", c.name, err, c.want)
		}
	}
	o, r := good()
	if err := o.Sparse24Forward(r); err != nil {
		t.Fatal(err)
	}
}
