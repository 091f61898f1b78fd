package ref

import (
	"math"
	"math/rand/v2"
	"os"
	"runtime"
	"sync"
	"testing"
)

// ulpErr is |got - want| in units of the last place of want's float32
// binade (2^-149 below 2^-126). Matching infinities and two zeros are 0
// apart; a NaN, or an infinity against a finite value, is +Inf apart.
func ulpErr(got float32, want float64) float64 {
	g := float64(got)
	switch {
	case got != got || want != want:
		return math.Inf(1)
	case math.IsInf(want, 0) || math.IsInf(g, 0):
		if g == want {
			return 0
		}
		// A finite result past float32's range is correct when it is the
		// largest float32 the exact value rounds to: compare in float32.
		if float32(want) == got {
			return 0
		}
		return math.Inf(1)
	case g == want:
		return 0
	}
	e := -126
	if w := math.Abs(want); w >= 0x1p-126 {
		_, exp := math.Frexp(w)
		e = exp - 1
	}
	return math.Abs(g-want) / math.Ldexp(1, e-23)
}

// The exact functions, in float64.
func tanh64(x float64) float64    { return math.Tanh(x) }
func exp64(x float64) float64     { return math.Exp(x) }
func sigmoid64(x float64) float64 { return 1 / (1 + math.Exp(-x)) }

// geluZ64 is z = 2·sqrt(2/π)·(x + 0.044715·x³) with the exact constants.
func geluZ64(x float64) float64 { return 2 * math.Sqrt(2/math.Pi) * (x + 0.044715*x*x*x) }

func gelu64(x float64) float64 {
	if math.IsInf(x, -1) {
		return 0
	}
	return x * sigmoid64(geluZ64(x))
}

func geluGrad64(x float64) float64 {
	switch {
	case math.IsInf(x, 1):
		return 1
	case math.IsInf(x, -1):
		return 0
	}
	z := geluZ64(x)
	zp := 2 * math.Sqrt(2/math.Pi) * (1 + 3*0.044715*x*x)
	s, sm := sigmoid64(z), sigmoid64(-z)
	return s * (1 + x*sm*zp)
}

// geluGradRoot is the root of geluGrad64 (bisection, float64).
var geluGradRoot = func() float64 {
	lo, hi := -1.0, -0.5
	for range 200 {
		mid := (lo + hi) / 2
		if geluGrad64(mid) > 0 {
			hi = mid
		} else {
			lo = mid
		}
	}
	return (lo + hi) / 2
}()

func silu64(x float64) float64 {
	if math.IsInf(x, -1) {
		return 0
	}
	return x * sigmoid64(x)
}

func siluGrad64(x float64) float64 {
	switch {
	case math.IsInf(x, 1):
		return 1
	case math.IsInf(x, -1):
		return 0
	}
	return sigmoid64(x) * (1 + x*sigmoid64(-x))
}

// gluGrad64 is GLU's act′, σ(x)·σ(-x).
func gluGrad64(x float64) float64 { return sigmoid64(x) * sigmoid64(-x) }

func gluGrad32(x float32) float32 { return GateGrad32(GLU, x) }

// siluGradRoot is the root of siluGrad64 (bisection, float64).
var siluGradRoot = func() float64 {
	lo, hi := -2.0, -1.0
	for range 200 {
		mid := (lo + hi) / 2
		if siluGrad64(mid) > 0 {
			hi = mid
		} else {
			lo = mid
		}
	}
	return (lo + hi) / 2
}()

// actRegion is a range of inputs with the error bounds stated for it: the
// maximum and mean ulp error or, where maxAbs is set, the largest absolute
// error (GeluGrad32 near its root, where the value itself is near 0).
type actRegion struct {
	lo, hi  float64
	maxULP  float64
	meanULP float64
	maxAbs  float64
}

// actFunc is one transcendental with its exact counterpart, the float32
// range sampled, and its regions (every sampled input falls in one).
type actFunc struct {
	name    string
	f       func(float32) float32
	exact   func(float64) float64
	lo, hi  float32
	regions []actRegion
}

var inf = math.Inf(1)

var actFuncs = []actFunc{
	{name: "Exp32", f: Exp32, exact: exp64, lo: -105, hi: 90, regions: []actRegion{
		{lo: -inf, hi: inf, maxULP: 1, meanULP: 0.14}}},
	{name: "Tanh32", f: Tanh32, exact: tanh64, lo: -10, hi: 10, regions: []actRegion{
		{lo: -inf, hi: inf, maxULP: 2.5, meanULP: 0.16}}},
	{name: "Sigmoid32", f: Sigmoid32, exact: sigmoid64, lo: -105, hi: 20, regions: []actRegion{
		{lo: -inf, hi: inf, maxULP: 2.5, meanULP: 0.17}}},
	{name: "Gelu32", f: Gelu32, exact: gelu64, lo: -17, hi: 17, regions: []actRegion{
		{lo: -inf, hi: -10, maxULP: 8, meanULP: 0.5},
		{lo: -10, hi: -4, maxULP: 4, meanULP: 0.5},
		{lo: -4, hi: inf, maxULP: 4, meanULP: 0.15}}},
	{name: "GeluGrad32", f: GeluGrad32, exact: geluGrad64, lo: -17, hi: 17, regions: []actRegion{
		{lo: -inf, hi: -10, maxULP: 160, meanULP: 8},
		{lo: -10, hi: -4, maxULP: 6, meanULP: 1},
		{lo: -4, hi: geluGradRoot - 1.0/8, maxULP: 13, meanULP: 1.3},
		{lo: geluGradRoot - 1.0/8, hi: geluGradRoot + 1.0/8, maxAbs: 6e-8},
		{lo: geluGradRoot + 1.0/8, hi: inf, maxULP: 11, meanULP: 0.15}}},
	{name: "Silu32", f: Silu32, exact: silu64, lo: -110, hi: 90, regions: []actRegion{
		{lo: -inf, hi: -87, maxULP: 56, meanULP: 18}, // σ(x) subnormal or flushed below -104
		{lo: -87, hi: -10, maxULP: 3.5, meanULP: 0.5},
		{lo: -10, hi: inf, maxULP: 3.5, meanULP: 0.15}}},
	{name: "SiluGrad32", f: SiluGrad32, exact: siluGrad64, lo: -110, hi: 90, regions: []actRegion{
		{lo: -inf, hi: -87, maxULP: 56, meanULP: 18},
		{lo: -87, hi: -10, maxULP: 4.5, meanULP: 0.6},
		{lo: -10, hi: siluGradRoot - 1.0/8, maxULP: 13, meanULP: 1.3},
		{lo: siluGradRoot - 1.0/8, hi: siluGradRoot + 1.0/8, maxAbs: 3e-8},
		{lo: siluGradRoot + 1.0/8, hi: inf, maxULP: 12.5, meanULP: 0.15}}},
	{name: "GateGrad32(GLU)", f: gluGrad32, exact: gluGrad64, lo: -110, hi: 110, regions: []actRegion{
		{lo: -inf, hi: -87, maxULP: 1, meanULP: 0.25},
		{lo: -87, hi: 87, maxULP: 4.5, meanULP: 0.25},
		{lo: 87, hi: inf, maxULP: 1, meanULP: 0.25}}},
}

// actStats accumulates the errors of one region.
type actStats struct {
	n        int
	sum, max float64
	argMax   float32
}

func (s *actStats) add(e float64, x float32) {
	s.n++
	s.sum += e
	if e > s.max || e != e {
		s.max, s.argMax = e, x
	}
}

func (s *actStats) merge(o *actStats) {
	s.n += o.n
	s.sum += o.sum
	if o.max > s.max || o.max != o.max {
		s.max, s.argMax = o.max, o.argMax
	}
}

// record adds x's error to the stats of its region.
func (fn *actFunc) record(st []actStats, x float32) {
	got, want := fn.f(x), fn.exact(float64(x))
	for i, r := range fn.regions {
		if float64(x) >= r.lo && float64(x) < r.hi || i == len(fn.regions)-1 && float64(x) >= r.lo {
			if r.maxAbs > 0 {
				st[i].add(math.Abs(float64(got)-want), x)
			} else {
				st[i].add(ulpErr(got, want), x)
			}
			return
		}
	}
}

// measure runs fn over every bf16 value, and over float32 inputs of
// [lo, hi]: every stride-th bit pattern of both signs plus random ones.
func measure(fn *actFunc, stride uint32, random int) []actStats {
	all := make([]actStats, len(fn.regions))
	for h := range 1 << 16 {
		x := F32FromBF16(uint16(h))
		if x != x || x < fn.lo || x > fn.hi {
			continue
		}
		fn.record(all, x)
	}
	top := math.Float32bits(max(fn.hi, -fn.lo))
	workers := runtime.GOMAXPROCS(0)
	parts := make([][]actStats, workers)
	var wg sync.WaitGroup
	for w := range workers {
		parts[w] = make([]actStats, len(fn.regions))
		wg.Add(1)
		go func() {
			defer wg.Done()
			st := parts[w]
			for u := uint64(w) * uint64(stride); u <= uint64(top); u += uint64(workers) * uint64(stride) {
				for _, x := range []float32{math.Float32frombits(uint32(u)), -math.Float32frombits(uint32(u))} {
					if x >= fn.lo && x <= fn.hi {
						fn.record(st, x)
					}
				}
			}
			r := rand.New(rand.NewPCG(uint64(w), 7))
			for range random / workers {
				fn.record(st, fn.lo+(fn.hi-fn.lo)*r.Float32())
			}
		}()
	}
	wg.Wait()
	for _, p := range parts {
		for i := range all {
			all[i].merge(&p[i])
		}
	}
	return all
}

// TestActivationAccuracy measures each transcendental against float64 over
// every bf16 input in its range and a sample of float32 inputs (every
// 997th bit pattern of both signs, and 2^20 random values), and fails if
// the maximum or mean ulp error exceeds what docs/contract.md states.
// DETGEMM_ULP_STRIDE=1 measures every float32 of the range (slow).
func TestActivationAccuracy(t *testing.T) {
	stride := uint32(997)
	if s := os.Getenv("DETGEMM_ULP_STRIDE"); s != "" {
		var v uint32
		for _, c := range s {
			v = v*10 + uint32(c-'0')
		}
		stride = max(v, 1)
	}
	for i := range actFuncs {
		fn := &actFuncs[i]
		t.Run(fn.name, func(t *testing.T) {
			for i, s := range measure(fn, stride, 1<<20) {
				r := fn.regions[i]
				mean := s.sum / float64(max(s.n, 1))
				if r.maxAbs > 0 {
					t.Logf("%s on [%.4g, %.4g): %d inputs, max absolute error %.3g (x = %v)", fn.name, r.lo, r.hi, s.n, s.max, s.argMax)
					if s.max > r.maxAbs || s.max != s.max {
						t.Errorf("[%.4g, %.4g): absolute error %.3g at x = %v > %v", r.lo, r.hi, s.max, s.argMax, r.maxAbs)
					}
					continue
				}
				t.Logf("%s on [%.4g, %.4g): %d inputs, max %.3f ulp (x = %v), mean %.4f ulp", fn.name, r.lo, r.hi, s.n, s.max, s.argMax, mean)
				if s.max > r.maxULP || s.max != s.max {
					t.Errorf("[%.4g, %.4g): max error %.3f ulp at x = %v (%#08x) > %v", r.lo, r.hi, s.max, s.argMax, math.Float32bits(s.argMax), r.maxULP)
				}
				if mean > r.meanULP {
					t.Errorf("[%.4g, %.4g): mean error %.4f ulp > %v", r.lo, r.hi, mean, r.meanULP)
				}
			}
		})
	}
}
