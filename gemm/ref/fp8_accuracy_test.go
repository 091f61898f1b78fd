package ref

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestFP8AccuracyAgainstFloat64 measures both accumulation modes against
// the exact (float64) product of the same codes and scales, on activations
// and weights drawn as normal values and quantised per row to E4M3, at
// reduction lengths of 512 to 16384. It states, for the record, the median
// and largest relative error |d − exact| / |exact| over the outputs (those
// with |exact| ≥ 1 % of the row's Σ|a·b|, so cancellation to near zero does
// not dominate), and checks what the measured step implies: the promoted
// mode's error is that of four 14-bit steps a block (about 2^-13 of a
// block's sum), below a bf16 output's own rounding (2^-9 relative at most);
// the fast mode's single 14-bit chain over all of K loses more as K grows.
func TestFP8AccuracyAgainstFloat64(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 11))
	const M, N = 4, 64
	for _, K := range []int{512, 4096, 16384} {
		x := make([]float32, M*K)
		w := make([]float32, N*K)
		for i := range x {
			x[i] = float32(r.NormFloat64())
		}
		for i := range w {
			w[i] = float32(r.NormFloat64() * 0.02)
		}
		qa, qb := make([]uint8, M*K), make([]uint8, N*K)
		sa, sb := make([]float32, M), make([]float32, N)
		for _, q := range []FP8QuantizeRequest{
			{Out: E4M3, Rows: M, Cols: K, X: Values(x), In: F32, Groups: GroupRow, Q: qa, Scales: sa},
			{Out: E4M3, Rows: N, Cols: K, X: Values(w), In: F32, Groups: GroupRow, Q: qb, Scales: sb},
		} {
			if err := FP8Quantize(q); err != nil {
				t.Fatal(err)
			}
		}
		exact := make([]float64, M*N)
		l1 := make([]float64, M*N)
		for m := 0; m < M; m++ {
			for n := 0; n < N; n++ {
				var s, a float64
				for k := 0; k < K; k++ {
					p := float64(FP8Decode(E4M3, qa[m*K+k])) * float64(FP8Decode(E4M3, qb[n*K+k]))
					s += p
					a += math.Abs(p)
				}
				exact[m*N+n] = s * float64(sa[m]) * float64(sb[n])
				l1[m*N+n] = a * float64(sa[m]) * float64(sb[n])
			}
		}
		errs := map[FP8Accum][]float64{}
		for _, acc := range []FP8Accum{AccumPromoted, AccumFast} {
			d := make([]float32, M*N)
			err := Options{}.FP8Matmul(FP8MatmulRequest{A: E4M3, B: E4M3, Out: F32, M: M, N: N, K: K,
				AData: qa, BData: qb, Scaling: ScaleRow, ScaleA: sa, ScaleB: sb, Accum: acc, D: Values(d)})
			if err != nil {
				t.Fatal(err)
			}
			for i := range d {
				if math.Abs(exact[i]) >= 0.01*l1[i] {
					errs[acc] = append(errs[acc], math.Abs(float64(d[i])-exact[i])/math.Abs(exact[i]))
				}
			}
		}
		stat := func(e []float64) (med, mx float64) {
			s := slices.Clone(e)
			slices.Sort(s)
			return s[len(s)/2], s[len(s)-1]
		}
		pm, px := stat(errs[AccumPromoted])
		fm, fx := stat(errs[AccumFast])
		t.Logf("K=%5d: promoted median %.2e max %.2e; fast median %.2e max %.2e (%d outputs)", K, pm, px, fm, fx, len(errs[AccumFast]))
		if px > 0x1p-9 {
			t.Errorf("K=%d: promoted error %.2e, want below a bf16 rounding (2^-9)", K, px)
		}
		if K >= 4096 && fm < 4*pm {
			t.Errorf("K=%d: fast median %.2e not worse than promoted %.2e: the 14-bit chain should show", K, fm, pm)
		}
	}
}
