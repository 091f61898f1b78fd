package ref

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"
)

// FuzzMatmul drives Options.Matmul over tiers, models, types, operand
// forms, layouts, epilogues, alpha and beta (NaN in C with beta = 0
// included), leading dimensions, windows and data kinds, and one of a set
// of corruptions (a leading dimension too small, a short or missing
// operand, an operand given to an epilogue that does not use it, an
// overlap, a bad epilogue or window). A valid request must equal the
// literal evaluation of the contract (naiveMatmul) on its window; an
// invalid one must be refused with an *ArgError; nothing may panic. The
// gated epilogues take their own shapes and corruptions (fuzzGated).
func FuzzMatmul(f *testing.F) {
	// cfg, M, N, K, lay, epi, alpha, beta, pads, window, bits, bad, kind, data
	f.Add(uint8(0), uint8(3), uint8(5), uint16(7), uint8(0), uint8(0), uint8(0), uint8(0), uint8(0), uint16(0), false, uint8(0), uint8(0), uint64(1))
	f.Add(uint8(1), uint8(2), uint8(3), uint16(520), uint8(3), uint8(9), uint8(3), uint8(2), uint8(7), uint16(0), true, uint8(0), uint8(5), uint64(2))       // three slabs, GeluAuxBias, TT
	f.Add(uint8(5), uint8(1), uint8(3), uint16(8192), uint8(1), uint8(13), uint8(0), uint8(4), uint8(3), uint16(0), true, uint8(0), uint8(1), uint64(3))     // TC cut plan, DGeluBgrad
	f.Add(uint8(6), uint8(4), uint8(4), uint16(33), uint8(2), uint8(11), uint8(2), uint8(0), uint8(1), uint16(0x0102), false, uint8(0), uint8(3), uint64(4)) // Ampere, DReluBgrad, column window
	f.Add(uint8(3), uint8(6), uint8(2), uint16(17), uint8(1), uint8(14), uint8(5), uint8(3), uint8(2), uint16(0x2301), true, uint8(0), uint8(4), uint64(5))  // alpha 0, BgradA, window
	f.Add(uint8(7), uint8(3), uint8(3), uint16(16), uint8(0), uint8(5), uint8(1), uint8(1), uint8(0), uint16(0), false, uint8(0), uint8(5), uint64(6))       // specials, ReluAuxBias
	for bad := uint8(1); bad <= 12; bad++ {
		f.Add(uint8(bad), uint8(3), uint8(4), uint16(9), uint8(bad%4), uint8(bad), uint8(0), uint8(bad%6), uint8(0), uint16(0), bad%2 == 0, bad, uint8(0), uint64(bad))
	}
	// The gated epilogues: every one valid, on every layout, with row
	// windows, and every gated corruption.
	for e := GatedGLU; e < numAllEpilogues; e++ {
		i := uint8(e - GatedGLU)
		f.Add(i, i%8, i, uint16(5+i*37), i%4, uint8(e), i%6, uint8(0), i, uint16(i)*0x21, i%2 == 0, uint8(0), i, uint64(e))
	}
	f.Add(uint8(5), uint8(0), uint8(1), uint16(8192), uint8(1), uint8(GatedSwiGLUAuxBias), uint8(0), uint8(0), uint8(3), uint16(0), true, uint8(0), uint8(1), uint64(7)) // TC cut plan
	for bad := uint8(1); bad <= 12; bad++ {
		f.Add(uint8(bad+3), uint8(2), uint8(bad), uint16(20), uint8(bad%4), uint8(GatedGLU)+bad+7*(bad%3), uint8(0), uint8(0), uint8(bad*2), uint16(0), bad%2 == 0, bad, uint8(bad%6), uint64(bad)+99)
	}
	f.Fuzz(func(t *testing.T, cfg, m, n uint8, k uint16, lay, epi, ai, bi, pads uint8, win uint16, bits bool, bad, kind uint8, data uint64) {
		cs := apiConfigs()
		c := cs[int(cfg)%len(cs)]
		M, N, K := 1+int(m)%8, 1+int(n)%8, 1+int(k)%600
		if k >= 8192 && c.tier == TensorCore {
			K = 8192 // the tensor-core plan's cut
		}
		rng := rand.New(rand.NewPCG(data, uint64(pads)))
		e := Epilogue(epi % uint8(numAllEpilogues))
		if e.Gate() != 0 {
			fuzzGated(t, c, rng, e, m, n, K, lay, ai, pads, win, bits, bad)
			return
		}
		mc := newMMCase(rng, c, M, N, K, lay&2 != 0, lay&1 != 0, e, apiKinds[int(kind)%len(apiKinds)])
		mc.alpha, mc.beta = mmAlphas[int(ai)%len(mmAlphas)], mmBetas[int(bi)%len(mmBetas)]
		if mc.beta == 0 {
			for i := range mc.cm {
				mc.cm[i] = canonicalNaN
			}
		}
		mc.batch = pads&8 != 0
		m0, m1 := int(win&0xF)%M, M
		if win&0xF0 != 0 {
			m1 = m0 + 1 + int(win>>4&0xF)%(M-m0)
		}
		n0, n1 := int(win>>8&0xF)%N, N
		if win&0xF000 != 0 {
			n1 = n0 + 1 + int(win>>12)%(N-n0)
		}
		if epilogueSpecs[e].bgrad == bgradRows {
			m0, m1 = 0, M
		}
		o := c.options(1 + int(pads>>4)%3)
		o.Rows, o.Cols = Span{m0, m1}, Span{n0, n1}
		r, read := mc.request(bits && c.in.Half(), m0, m1, n0, n1, int(pads)%3)
		if mc.beta == 0 && pads&4 != 0 {
			r.C = Operand{} // C absent: beta = 0 never reads it
		}
		// want: the sentinel of the corruption; nil where any refusal will
		// do (D over A may fail its form or length check first).
		var want error
		switch bad % 13 {
		case 1:
			row := K
			if r.TransA {
				row = M
			}
			r.LDA, want = row-1, ErrLeadingDim
			if row == 1 {
				r.LDA = -1
			}
		case 2:
			r.B, want = Operand{}, ErrOperand
		case 3:
			r.Epilogue, want = numAllEpilogues+Epilogue(int(bad)%(256-int(numAllEpilogues))), ErrEpilogue
		case 4:
			r.Beta, r.C, want = 1, Operand{}, ErrOperand
		case 5:
			r.Bias, want = nil, ErrOperand
			if !epilogueSpecs[e].bias {
				r.Bias = make([]float32, N)
			}
		case 6:
			r.BiasGrad, want = nil, ErrOperand
			if epilogueSpecs[e].bgrad == noBgrad {
				r.BiasGrad = make([]float32, max(M, N))
			}
		case 7:
			r.ReluMask, want = nil, ErrOperand
			if !e.usesMask() {
				r.ReluMask = make([]uint8, M*N)
			}
		case 8:
			r.D = r.A
		case 9:
			r.LDD, want = -2, ErrLeadingDim
		case 10:
			o.Rows, want = Span{M, M + 1}, ErrRange
		case 11:
			r.M, want = 0, ErrDim
		case 12:
			r.D, want = Operand{}, ErrOperand
		}
		err := o.Matmul(r)
		if bad%13 != 0 {
			var ae *ArgError
			if !errors.As(err, &ae) || want != nil && !errors.Is(err, want) {
				t.Fatalf("corruption %d of %s: got %v, want a refusal matching %v", bad%13, mc.name(bits), err, want)
			}
			return
		}
		if err != nil {
			t.Fatalf("%s: %v", mc.name(bits), err)
		}
		if d := read().diff(mc.naive().window(mc, m0, m1, n0, n1)); d != "" {
			t.Fatalf("%s window [%d,%d)×[%d,%d): %s", mc.name(bits), m0, m1, n0, n1, d)
		}
		for _, x := range read().d {
			if x != x && math.Float32bits(x) != CanonicalNaN32 {
				t.Fatalf("non-canonical NaN %#08x", math.Float32bits(x))
			}
		}
	})
}

// fuzzGated is FuzzMatmul for a gated epilogue: a product width the
// layout admits (16·q forward, 8·q backward), a Rows window, and one of the
// gated corruptions (a bad leading dimension, a missing B, an unknown
// epilogue, beta != 0, a bias, bias gradient, ReLU mask or aux where it
// is not used or missing where it is, D over A, a column window, a width
// off the layout, ReduceOverBatch). A valid request must equal the direct
// evaluation (gatedCase.naive) on its rows; an invalid one must be refused
// with an *ArgError.
func fuzzGated(t *testing.T, c apiConfig, rng *rand.Rand, e Epilogue, m, n uint8, K int, lay, ai, pads uint8, win uint16, bits bool, bad uint8) {
	M, N := 1+int(m)%6, 16*(1+int(n)%3)
	if e.GatedBackward() {
		N = 8 * (1 + int(n)%4)
	}
	gc := newGatedCase(rng, c, M, N, K, lay&2 != 0, lay&1 != 0, e, apiKinds[int(pads)%len(apiKinds)])
	gc.k.alpha = mmAlphas[int(ai)%len(mmAlphas)]
	m0, m1 := int(win&0xF)%M, M
	if win&0xF0 != 0 {
		m1 = m0 + 1 + int(win>>4&0xF)%(M-m0)
	}
	o := c.options(1 + int(pads>>4)%3)
	o.Rows = Span{m0, m1}
	r, read := gc.request(bits && c.in.Half(), m0, m1, int(pads)%3)
	usesAux := e.GatedBackward() || e.gatedAux()
	var want error
	switch bad % 13 {
	case 1:
		r.LDA, want = -1, ErrLeadingDim
	case 2:
		r.B, want = Operand{}, ErrOperand
	case 3:
		r.Epilogue, want = numAllEpilogues+Epilogue(int(bad)%(256-int(numAllEpilogues))), ErrEpilogue
	case 4:
		r.Beta, want = 1, ErrOperand
	case 5:
		r.Bias, want = nil, ErrOperand
		if !e.gatedBias() {
			r.Bias = make([]float32, N)
		}
	case 6:
		r.BiasGrad, want = make([]float32, 2*N), ErrOperand
	case 7:
		r.ReluMask, want = make([]uint8, 2*M*N), ErrOperand
	case 8:
		r.D = r.A
	case 9:
		r.LDD, want = -2, ErrLeadingDim
	case 10:
		o.Cols, want = Span{0, 1}, ErrRange
	case 11:
		r.N, want = N+4, ErrDim
		if !e.GatedBackward() {
			r.N = N + 8
		}
	case 12:
		if pads&8 != 0 {
			r.ReduceOverBatch, want = true, ErrEpilogue
			break
		}
		r.Aux, want = Operand{}, ErrOperand
		if !usesAux {
			r.Aux = Values(make([]float32, 2*M*N))
		}
	}
	err := o.Matmul(r)
	if bad%13 != 0 {
		var ae *ArgError
		if !errors.As(err, &ae) || want != nil && !errors.Is(err, want) {
			t.Fatalf("corruption %d of %s: got %v, want a refusal matching %v", bad%13, gc.name(bits), err, want)
		}
		return
	}
	if err != nil {
		t.Fatalf("%s: %v", gc.name(bits), err)
	}
	if d := read().diff(gc.rows(gc.naive(), m0, m1)); d != "" {
		t.Fatalf("%s rows [%d,%d): %s", gc.name(bits), m0, m1, d)
	}
	for _, x := range read().d {
		if x != x && math.Float32bits(x) != CanonicalNaN32 {
			t.Fatalf("non-canonical NaN %#08x", math.Float32bits(x))
		}
	}
}
