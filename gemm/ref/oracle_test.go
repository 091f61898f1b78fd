package ref

import (
	"math"
	"math/rand/v2"
	"testing"
)

// f32Bound is the accepted relative error (‖got − want‖₂ / ‖want‖₂) of the
// f32 plan against the float64 oracle on N(0,1) data at a reduction length
// of 4096.
//
// Why: each output sums 4096 products of size about 1, so |y| ≈ √4096 = 64.
// Inside a slab the partial sum after r terms is about √r, and each FMA's
// rounding error is about uniform within half an ulp of it: standard
// deviation about u·√r/√3 with u = 2^-24. Over a slab that adds up to
// u·√(Σr/3) ≈ u·√(256²/6) ≈ 105u, and the 16 independent slabs give 4 times
// that, about 420u ≈ 2.5e-5; the 15 slab additions add far less. Relative
// to |y| ≈ 64 that is about 4e-7. Measured: 2.9e-7 to 3.2e-7 for the three
// operations (see the test log). Over a thousand elements the norm-wise
// ratio barely fluctuates, so 1e-6 passes for any seed yet fails a broken
// plan: dropping one of the 4096 products already costs about 1e-2.
const f32Bound = 1e-6

func TestF32PlanAccuracyAgainstF64Oracle(t *testing.T) {
	rng := rand.New(rand.NewPCG(17, 18))
	const M, K, N = 8, 4096, 128
	x, w, bias := randNormal(rng, M*K), randNormal(rng, K*N), randNormal(rng, N)

	y, yo := make([]float32, M*N), make([]float64, M*N)
	_ = ieee32.Forward(Values(y), Values(x), Values(w), bias, M, K, N)
	if err := ForwardF64(yo, x, w, bias, M, K, N); err != nil {
		t.Fatal(err)
	}
	// dX reduces over N = 4096 here: swap roles so its reduction is long too.
	const Nl, Ks = 4096, 128
	wl := randNormal(rng, Ks*Nl)
	dyl := randNormal(rng, M*Nl)
	dx, dxo := make([]float32, M*Ks), make([]float64, M*Ks)
	_ = ieee32.DX(Values(dx), Values(dyl), Values(wl), M, Nl, Ks)
	if err := DXF64(dxo, dyl, wl, M, Nl, Ks); err != nil {
		t.Fatal(err)
	}
	// dW reduces over M: a batch of 4096 rows.
	const Ml, Kw, Nw = 4096, 16, 32
	xl, dyw := randNormal(rng, Ml*Kw), randNormal(rng, Ml*Nw)
	dw, dwo := make([]float32, Kw*Nw), make([]float64, Kw*Nw)
	_ = ieee32.DW(dw, Values(xl), Values(dyw), Ml, Kw, Nw)
	if err := DWF64(dwo, xl, dyw, Ml, Kw, Nw); err != nil {
		t.Fatal(err)
	}

	for _, c := range []struct {
		name string
		got  []float32
		want []float64
	}{{"forward", y, yo}, {"dX", dx, dxo}, {"dW", dw, dwo}} {
		e := RelError(c.got, c.want)
		t.Logf("%s: relative error %.3g (bound %g)", c.name, e, f32Bound)
		if !(e <= f32Bound) {
			t.Errorf("%s: relative error %g exceeds %g", c.name, e, f32Bound)
		}
	}
	// The bound is tight enough to catch a plan that loses one product.
	y[0] = float32(float64(y[0]) - float64(x[0])*float64(w[0]))
	if e := RelError(y, yo); e <= f32Bound {
		t.Errorf("dropping one product gives %g, within the bound: the bound is too loose", e)
	}
}

func TestRelErrorNeverPassesBrokenResults(t *testing.T) {
	nan, inf := float32(math.NaN()), float32(math.Inf(1))
	tests := []struct {
		name string
		got  []float32
		want []float64
		res  float64
	}{
		{"equal", []float32{1, 2}, []float64{1, 2}, 0},
		{"NaN in got", []float32{nan, 2}, []float64{1, 2}, math.Inf(1)},
		{"Inf in got", []float32{inf, 2}, []float64{1, 2}, math.Inf(1)},
		{"NaN in want", []float32{1, 2}, []float64{math.NaN(), 2}, math.Inf(1)},
		{"length mismatch", []float32{1}, []float64{1, 2}, math.Inf(1)},
		{"zero want, nonzero got", []float32{1}, []float64{0}, math.Inf(1)},
		{"both zero", []float32{0}, []float64{0}, 0},
		{"3-4-5", []float32{3, 0}, []float64{0, 5}, math.Sqrt(34) / 5},
	}
	for _, tc := range tests {
		if got := RelError(tc.got, tc.want); got != tc.res {
			t.Errorf("%s: RelError = %v, want %v", tc.name, got, tc.res)
		}
	}
}
