package ref

import (
	"errors"
	"math/rand/v2"
	"testing"
)

// FuzzFP8Matmul drives Options.FP8Matmul over type pairs, output types,
// scalings, accumulations, epilogues, shapes (partial steps and blocks, N
// across a 128-column block), padded leading dimensions, windows, workers
// and data kinds (NaN and infinity codes included), and one of a set of
// corruptions. A valid request must equal the literal loop over FP8Step
// (fp8Want) on its window; an invalid one must be refused with an
// *ArgError of the corruption's sentinel; nothing may panic.
func FuzzFP8Matmul(f *testing.F) {
	// types, mode, M, N, K, pads, win, bad, kind, data
	type seed struct {
		types, mode, m, n uint8
		k                 uint16
		pads, win, bad    uint8
		kind              uint8
		data              uint64
	}
	seeds := []seed{
		{0, 0, 2, 3, 40, 0, 0, 0, 0, 1},
		{1, 1, 0, 0, 0, 0, 0, 0, 1, 2},          // K = 1: one partial step
		{2, 2, 3, 4, 31, 1, 0x21, 0, 2, 3},      // K = 32, block scales, specials, window
		{3, 3, 4, 5, 32, 2, 0, 0, 3, 4},         // K = 33, fast accumulation
		{4, 8, 1, 200, 127, 0, 0, 0, 1, 5},      // N across the 128 block, K = 128
		{5, 14, 5, 9, 128, 3, 0x13, 0, 2, 6},    // K = 129
		{6, 20, 2, 2, 60000, 0, 0, 0, 1, 7},     // long K
		{7, 35, 5, 7, 250, 1, 0x42, 0, 2, 8},    // GeluBias, window
		{18, 17, 2, 2, 64, 0, 0, 0, 2, 9},       // fp8 out, specials
		{19, 5, 3, 3, 255, 0, 0, 0, 3, 10},      // block + fast: refused
		{16, 2, 2, 250, 300, 2, 0x10, 0, 2, 11}, // e4m3 out, block scales
	}
	for bad := uint8(1); bad <= 15; bad++ {
		seeds = append(seeds, seed{bad, bad * 3, 2, 3, uint16(bad) * 17, bad % 4, bad, bad, bad % 4, uint64(bad) + 100})
	}
	for _, s := range seeds {
		f.Add(s.types, s.mode, s.m, s.n, s.k, s.pads, s.win, s.bad, s.kind, s.data)
	}
	f.Fuzz(func(t *testing.T, types, mode, m, n uint8, k uint16, pads, win, bad, kind uint8, data uint64) {
		ta, tb, out := fp8Types[types&1], fp8Types[types>>1&1], fp8Outs[int(types>>2)%len(fp8Outs)]
		sc, acc, e := fp8Scalings[int(mode)%3], fp8Accums[int(mode)/3%2], fp8Epis[int(mode)/6%len(fp8Epis)]
		M, N, K := 1+int(m)%6, 1+int(n)%20, 1+int(k)%300
		if n >= 200 {
			N = 129 + int(n)%12
		}
		if k >= 60000 {
			K = 1000 + int(k)%100
		}
		rng := rand.New(rand.NewPCG(data, uint64(pads)))
		r := newFP8Case(rng, ta, tb, out, M, N, K, sc, acc, e, int(kind)%4, int(pads)%3)
		m0, m1 := int(win&0xF)%M, M
		if win&0xF0 != 0 {
			m1 = m0 + 1 + int(win>>4)%(M-m0)
		}
		fp8Out(&r, m0, m1, int(pads>>2)%3, pads&0x10 != 0)
		o := Options{Rows: Span{m0, m1}, Workers: 1 + int(pads>>5)%3}
		if m0 == 0 && m1 == M && pads&0x40 != 0 {
			o.Rows = Span{}
		}
		var want error
		if sc == ScaleBlock && acc == AccumFast {
			want = ErrScale
		}
		switch bad % 16 {
		case 1:
			r.AData, want = r.AData[:len(r.AData)-1], ErrLength
		case 2:
			r.BData, want = nil, ErrLength
		case 3:
			if K > 1 {
				r.LDA, want = K-1, ErrLeadingDim
			}
		case 4:
			r.ScaleB, want = r.ScaleB[:len(r.ScaleB)-1], ErrLength
		case 5:
			if r.Bias == nil {
				r.Bias, want = make([]float32, N), ErrOperand
			} else {
				r.Bias, want = r.Bias[:N-1], ErrLength
			}
		case 6:
			r.Epilogue, want = []Epilogue{ReluAux, GeluAuxBias, DRelu, BgradA, GatedSwiGLU, 250}[int(data)%6], ErrEpilogue
		case 7:
			r.Out, want = []DType{0, 6, 200}[int(data)%3], ErrDType
		case 8:
			if out.FP8() {
				r.D, want = Values(make([]float32, len(r.D8))), ErrOperand
			} else {
				r.ScaleD, want = 1, ErrScale
			}
		case 9:
			o.Rows, want = Span{m0, M + 1}, ErrRange
		case 10:
			o.Cols, want = Span{0, 1}, ErrRange
		case 11:
			if out.FP8() {
				r.D8 = r.D8[:len(r.D8)-1]
			} else {
				r.D = Values(make([]float32, r.D.len()-1))
			}
			want = ErrLength
		case 12:
			r.Accum, want = FP8Accum(3+data%250), ErrScale
		case 13:
			r.Scaling, want = 0, ErrScale
		case 14:
			r.A, want = []DType{F16, BF16, F32, 0, 9}[int(data)%5], ErrDType
		case 15:
			r.M, want = -int(m), ErrDim
		}
		err := o.FP8Matmul(r)
		if err != nil {
			var ae *ArgError
			if !errors.As(err, &ae) {
				t.Fatalf("untyped error %v", err)
			}
			if want == nil {
				t.Fatalf("valid request refused: %v", err)
			}
			// Another corruption-independent refusal may come first (a
			// block scaling with fast accumulation); it is still typed.
			if !errors.Is(err, want) && !errors.Is(err, ErrScale) {
				t.Fatalf("%v, want %v", err, want)
			}
			return
		}
		if want != nil {
			t.Fatalf("accepted a request that should fail with %v", want)
		}
		if d := fp8Check(&r, m0, m1); d != "" {
			t.Fatalf("%v×%v→%v %v %v %v M%d N%d K%d rows [%d,%d): %s", ta, tb, out, acc, sc, e, M, N, K, m0, m1, d)
		}
	})
}
