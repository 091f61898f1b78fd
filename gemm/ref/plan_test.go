package ref

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"
)

// modelForward is the plan of the package documentation written as plainly
// as possible, one output element at a time, for comparison with the
// optimized reduction.
func modelForward(x, w, bias []float32, M, K, N int) []float32 {
	y := make([]float32, M*N)
	for m := range M {
		for n := range N {
			var out float32
			for s := 0; s*SlabLen < K; s++ {
				p := float32(0)
				for k := s * SlabLen; k < min((s+1)*SlabLen, K); k++ {
					p = FMA32(x[m*K+k], w[k*N+n], p)
				}
				if s == 0 {
					out = p
				} else {
					out = Add32(out, p)
				}
			}
			if bias != nil {
				out = Add32(out, bias[n])
			}
			y[m*N+n] = out
		}
	}
	return y
}

// modelDX and modelDW: the same, literally, for the two backward products.
func modelDX(dy, w []float32, M, N, K int) []float32 {
	dx := make([]float32, M*K)
	for m := range M {
		for k := range K {
			var out float32
			for s := 0; s*SlabLen < N; s++ {
				p := float32(0)
				for n := s * SlabLen; n < min((s+1)*SlabLen, N); n++ {
					p = FMA32(dy[m*N+n], w[k*N+n], p)
				}
				if s == 0 {
					out = p
				} else {
					out = Add32(out, p)
				}
			}
			dx[m*K+k] = out
		}
	}
	return dx
}

func modelDW(dw0, x, dy []float32, M, K, N int) []float32 {
	dw := append([]float32(nil), dw0...)
	for k := range K {
		for n := range N {
			d := dw[k*N+n]
			for s := 0; s*SlabLen < M; s++ {
				p := float32(0)
				for m := s * SlabLen; m < min((s+1)*SlabLen, M); m++ {
					p = FMA32(x[m*K+k], dy[m*N+n], p)
				}
				d = Add32(d, p)
			}
			dw[k*N+n] = d
		}
	}
	return dw
}

func randNormal(rng *rand.Rand, n int) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(rng.NormFloat64())
	}
	return v
}

func sameBits(t *testing.T, what string, got, want []float32) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: length %d, want %d", what, len(got), len(want))
	}
	for i := range want {
		if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
			t.Fatalf("%s: element %d = %v (%08x), want %v (%08x)", what, i,
				got[i], math.Float32bits(got[i]), want[i], math.Float32bits(want[i]))
		}
	}
}

var planShapes = []struct{ M, K, N int }{
	{1, 1, 1}, {3, 255, 5}, {2, 256, 7}, {4, 257, 3}, {5, 513, 2},
	{7, 100, 300}, // N spans two column blocks
	{300, 40, 9},  // dW reduction over 300 rows: two slabs
	{17, 600, 260},
}

// TestOpsFollowThePlanLiterally compares the optimized, parallel reduction
// with the plan written out element by element, on random data.
func TestOpsFollowThePlanLiterally(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for _, s := range planShapes {
		M, K, N := s.M, s.K, s.N
		x, w, bias := randNormal(rng, M*K), randNormal(rng, K*N), randNormal(rng, N)
		y := make([]float32, M*N)
		if err := ieee32.Forward(Values(y), Values(x), Values(w), bias, M, K, N); err != nil {
			t.Fatal(err)
		}
		sameBits(t, "Forward+bias", y, modelForward(x, w, bias, M, K, N))
		if err := ieee32.Forward(Values(y), Values(x), Values(w), nil, M, K, N); err != nil {
			t.Fatal(err)
		}
		sameBits(t, "Forward", y, modelForward(x, w, nil, M, K, N))

		dy := randNormal(rng, M*N)
		dx := make([]float32, M*K)
		if err := ieee32.DX(Values(dx), Values(dy), Values(w), M, N, K); err != nil {
			t.Fatal(err)
		}
		sameBits(t, "DX", dx, modelDX(dy, w, M, N, K))

		dw0 := randNormal(rng, K*N)
		dw := append([]float32(nil), dw0...)
		if err := ieee32.DW(dw, Values(x), Values(dy), M, K, N); err != nil {
			t.Fatal(err)
		}
		sameBits(t, "DW", dw, modelDW(dw0, x, dy, M, K, N))
	}
}

// Values for the hand-computed slab cases. T = (1+2^-12)^2 = 1 + 2^-11 +
// 2^-24 is not a float32: alone it rounds (a tie) to even, 1 + 2^-11; fused
// with -1 it is exact, 2^-11 + 2^-24. So "-1, then T" gives 2^-11 + 2^-24
// when both are in one slab's chain and 2^-11 when T starts a new slab.
const (
	tFactor   = 1 + 0x1p-12
	chainedT  = 0x1p-11 + 0x1p-24
	slabbedT  = 0x1p-11
	bigL      = 0x1p24 // L + 1 is a tie that rounds back to L
	tinyPower = 0x1p-100
)

// slabCase is one reduction of length R given by its nonzero terms:
// a[r] * b[r] (a defaults to 0, b to 1).
type slabCase struct {
	name string
	R    int
	a, b map[int]float32
	bias []float32 // forward only
	want float32
}

var negZero = f32(0x80000000)

var slabCases = []slabCase{
	{"R=255 one chain", 255, map[int]float32{0: -1, 254: tFactor}, map[int]float32{254: tFactor}, nil, chainedT},
	{"R=256 one chain", 256, map[int]float32{0: -1, 255: tFactor}, map[int]float32{255: tFactor}, nil, chainedT},
	{"R=257 r=255 still slab 0", 257, map[int]float32{0: -1, 255: tFactor}, map[int]float32{255: tFactor}, nil, chainedT},
	{"R=257 r=256 starts slab 1", 257, map[int]float32{0: -1, 256: tFactor}, map[int]float32{256: tFactor}, nil, slabbedT},
	{"R=513 r=511 still slab 1", 513, map[int]float32{256: -1, 511: tFactor}, map[int]float32{511: tFactor}, nil, chainedT},
	{"R=513 r=512 starts slab 2", 513, map[int]float32{511: -1, 512: tFactor}, map[int]float32{512: tFactor}, nil, slabbedT},
	// ((L + 1) + 1) = L: slab partials fold left; (L + (1 + 1)) would be L+2.
	{"R=513 partials fold left", 513, map[int]float32{0: bigL, 256: 1, 512: 1}, nil, nil, bigL},
	// Within a slab the ones are absorbed one at a time by L.
	{"R=256 chain absorbs", 256, map[int]float32{0: bigL, 1: 1, 2: 1, 255: -bigL}, nil, nil, 0},
	// Bias comes after all partials: (L + 1) + 1 = L, not L + (1 + 1).
	{"R=257 bias added last", 257, map[int]float32{0: bigL, 256: 1}, nil, []float32{1}, bigL},
	// A negative product that underflows, last in its slab, gives a -0
	// partial (earlier, a following zero product would make it +0 again).
	// -0 + -0 = -0, and no bias means no addition, so -0 survives.
	{"R=257 no bias keeps -0", 257, map[int]float32{255: -tinyPower, 256: -tinyPower}, map[int]float32{255: tinyPower, 256: tinyPower}, nil, negZero},
	{"R=257 zero bias turns -0 into +0", 257, map[int]float32{255: -tinyPower, 256: -tinyPower}, map[int]float32{255: tinyPower, 256: tinyPower}, []float32{0}, 0},
	{"R=257 -0 then a zero product is +0", 257, map[int]float32{254: -tinyPower, 256: -tinyPower}, map[int]float32{254: tinyPower, 256: tinyPower}, nil, 0},
	// An exact zero product added to the +0 start stays +0, even if the
	// product is -0.
	{"R=3 zero products give +0", 3, map[int]float32{0: -1, 1: -1, 2: -1}, map[int]float32{0: 0, 1: 0, 2: 0}, nil, 0},
}

func (c slabCase) vectors() (a, b []float32) {
	a, b = make([]float32, c.R), make([]float32, c.R)
	for r := range c.R {
		a[r], b[r] = c.a[r], 1
		if v, ok := c.b[r]; ok {
			b[r] = v
		}
	}
	return a, b
}

// TestSlabBoundariesArePinned runs hand-computed reductions whose results
// depend on exactly where the slabs start and how they are folded, through
// all three operations (each reducing over its own dimension).
func TestSlabBoundariesArePinned(t *testing.T) {
	for _, c := range slabCases {
		t.Run(c.name, func(t *testing.T) {
			a, b := c.vectors()
			want := math.Float32bits(c.want)
			// Forward: x is 1 x R, w is R x 1.
			y := make([]float32, 1)
			if err := ieee32.Forward(Values(y), Values(a), Values(b), c.bias, 1, c.R, 1); err != nil {
				t.Fatal(err)
			}
			if got := math.Float32bits(y[0]); got != want {
				t.Errorf("Forward = %v (%08x), want %v (%08x)", y[0], got, c.want, want)
			}
			if c.bias != nil {
				return
			}
			// DX: dy is 1 x R, w is 1 x R (K = 1), reduction over n.
			dx := make([]float32, 1)
			if err := ieee32.DX(Values(dx), Values(a), Values(b), 1, c.R, 1); err != nil {
				t.Fatal(err)
			}
			if got := math.Float32bits(dx[0]); got != want {
				t.Errorf("DX = %v (%08x), want %v (%08x)", dx[0], got, c.want, want)
			}
			// DW: x is R x 1, dy is R x 1, reduction over m. Starting from
			// -0, the identity of addition, DW folds like forward.
			dw := []float32{negZero}
			if err := ieee32.DW(dw, Values(a), Values(b), c.R, 1, 1); err != nil {
				t.Fatal(err)
			}
			if got := math.Float32bits(dw[0]); got != want {
				t.Errorf("DW = %v (%08x), want %v (%08x)", dw[0], got, c.want, want)
			}
		})
	}
}

// TestRowsAreInvariantToBatch: a row's bits do not depend on the other rows
// of the batch (the contract test shape the GPU tiers share).
func TestRowsAreInvariantToBatch(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	const M, K, N = 300, 700, 65
	x, w, bias := randNormal(rng, M*K), randNormal(rng, K*N), randNormal(rng, N)
	y := make([]float32, M*N)
	if err := ieee32.Forward(Values(y), Values(x), Values(w), bias, M, K, N); err != nil {
		t.Fatal(err)
	}
	dx := make([]float32, M*K)
	if err := ieee32.DX(Values(dx), Values(y), Values(w), M, N, K); err != nil {
		t.Fatal(err)
	}
	for _, m := range []int{0, 137, 299} {
		row := make([]float32, N)
		if err := ieee32.Forward(Values(row), Values(x[m*K:(m+1)*K]), Values(w), bias, 1, K, N); err != nil {
			t.Fatal(err)
		}
		sameBits(t, "forward row", row, y[m*N:(m+1)*N])
		drow := make([]float32, K)
		if err := ieee32.DX(Values(drow), Values(y[m*N:(m+1)*N]), Values(w), 1, N, K); err != nil {
			t.Fatal(err)
		}
		sameBits(t, "dX row", drow, dx[m*K:(m+1)*K])
	}
	// Rows computed in two calls (a chunked split) match too.
	split := make([]float32, M*N)
	if err := ieee32.Forward(Values(split[:100*N]), Values(x[:100*K]), Values(w), bias, 100, K, N); err != nil {
		t.Fatal(err)
	}
	if err := ieee32.Forward(Values(split[100*N:]), Values(x[100*K:]), Values(w), bias, M-100, K, N); err != nil {
		t.Fatal(err)
	}
	sameBits(t, "chunked forward", split, y)
}

// TestWorkerCountDoesNotChangeBits: the same call on 1 goroutine and on many
// gives identical bits.
func TestWorkerCountDoesNotChangeBits(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	const M, K, N = 40, 600, 300
	x, w, bias, dy := randNormal(rng, M*K), randNormal(rng, K*N), randNormal(rng, N), randNormal(rng, M*N)
	run := func(o Options) (y, dx, dw []float32) {
		y, dx, dw = make([]float32, M*N), make([]float32, M*K), make([]float32, K*N)
		o.Tier, o.In = IEEE, F32
		if err := o.Forward(Values(y), Values(x), Values(w), bias, M, K, N); err != nil {
			t.Fatal(err)
		}
		if err := o.DX(Values(dx), Values(dy), Values(w), M, N, K); err != nil {
			t.Fatal(err)
		}
		if err := o.DW(dw, Values(x), Values(dy), M, K, N); err != nil {
			t.Fatal(err)
		}
		return y, dx, dw
	}
	y1, dx1, dw1 := run(Options{Workers: 1})
	for _, workers := range []int{0, 2, 7, 64} {
		y, dx, dw := run(Options{Workers: workers})
		sameBits(t, "forward", y, y1)
		sameBits(t, "dX", dx, dx1)
		sameBits(t, "dW", dw, dw1)
	}
}

// TestDWMicroBatchesOnSlabBoundariesMatchOneCall: accumulating dW over
// micro-batches that split the batch at multiples of SlabLen rows, in order,
// gives the bits of one call over the whole batch.
func TestDWMicroBatchesOnSlabBoundariesMatchOneCall(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 14))
	const M, K, N = 3*SlabLen + 40, 9, 11
	x, dy, dw0 := randNormal(rng, M*K), randNormal(rng, M*N), randNormal(rng, K*N)
	whole := append([]float32(nil), dw0...)
	if err := ieee32.DW(whole, Values(x), Values(dy), M, K, N); err != nil {
		t.Fatal(err)
	}
	for _, splits := range [][]int{
		{SlabLen, M - SlabLen},
		{2 * SlabLen, M - 2*SlabLen},
		{SlabLen, SlabLen, SlabLen, M - 3*SlabLen},
	} {
		dw := append([]float32(nil), dw0...)
		m0 := 0
		for _, rows := range splits {
			if err := ieee32.DW(dw, Values(x[m0*K:(m0+rows)*K]), Values(dy[m0*N:(m0+rows)*N]), rows, K, N); err != nil {
				t.Fatal(err)
			}
			m0 += rows
		}
		sameBits(t, "micro-batched dW", dw, whole)
	}
}

// TestDWSplitOffSlabBoundaryCanDiffer: a split inside a slab changes the
// plan, and can change the bits. Rows (-1, 1) and (T', T') with
// T'^2 = 1 + 2^-11 + 2^-24: one call fuses them exactly (2^-11 + 2^-24);
// split 1 + 1, the second partial is rounded first (2^-11).
func TestDWSplitOffSlabBoundaryCanDiffer(t *testing.T) {
	x := []float32{-1, tFactor}
	dy := []float32{1, tFactor}
	one := []float32{0}
	if err := ieee32.DW(one, Values(x), Values(dy), 2, 1, 1); err != nil {
		t.Fatal(err)
	}
	two := []float32{0}
	if err := ieee32.DW(two, Values(x[:1]), Values(dy[:1]), 1, 1, 1); err != nil {
		t.Fatal(err)
	}
	if err := ieee32.DW(two, Values(x[1:]), Values(dy[1:]), 1, 1, 1); err != nil {
		t.Fatal(err)
	}
	if one[0] != chainedT || two[0] != slabbedT {
		t.Fatalf("one call %v, split %v; want %v and %v", one[0], two[0], float32(chainedT), float32(slabbedT))
	}
}

func TestNaNAndInfPropagate(t *testing.T) {
	inf := float32(math.Inf(1))
	const M, K, N = 3, 300, 4
	tests := []struct {
		name   string
		setup  func(x, w, bias []float32)
		row    int    // the affected row (-1: none)
		col    int    // the affected column (-1: all of the row)
		want   uint32 // bits of the affected elements
		biased bool
		rest   float32 // the value of the others
	}{
		{"NaN in x poisons its row", func(x, w, b []float32) { x[1*K+5] = f32(0xFFC00123) }, 1, -1, CanonicalNaN32, false, K * 0.5},
		{"Inf in x gives signed Inf", func(x, w, b []float32) { x[2*K+270] = -inf }, 2, -1, 0xFF800000, false, K * 0.5},
		{"Inf times 0 is NaN", func(x, w, b []float32) {
			x[0*K+3] = inf
			for n := range N {
				w[3*N+n] = 0
			}
		}, 0, -1, CanonicalNaN32, false, (K - 1) * 0.5},
		{"Inf - Inf across slabs is NaN", func(x, w, b []float32) { x[0*K+3] = inf; x[0*K+290] = -inf }, 0, -1, CanonicalNaN32, false, K * 0.5},
		{"NaN bias poisons its column", func(x, w, b []float32) { b[2] = f32(0x7F800001) }, -1, 2, CanonicalNaN32, true, K * 0.5},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			x, w, bias := make([]float32, M*K), make([]float32, K*N), make([]float32, N)
			for i := range x {
				x[i] = 1
			}
			for i := range w {
				w[i] = 0.5
			}
			tc.setup(x, w, bias)
			if !tc.biased {
				bias = nil
			}
			y := make([]float32, M*N)
			if err := ieee32.Forward(Values(y), Values(x), Values(w), bias, M, K, N); err != nil {
				t.Fatal(err)
			}
			for m := range M {
				for n := range N {
					got := math.Float32bits(y[m*N+n])
					hit := (tc.row < 0 || m == tc.row) && (tc.col < 0 || n == tc.col)
					switch {
					case hit && got != tc.want:
						t.Errorf("y[%d,%d] = %08x, want %08x", m, n, got, tc.want)
					case !hit && got != math.Float32bits(tc.rest):
						t.Errorf("y[%d,%d] = %08x, want the finite %v", m, n, got, tc.rest)
					}
				}
			}
		})
	}
}

func TestInvalidArgumentsReturnTypedErrors(t *testing.T) {
	s := func(n int) []float32 { return make([]float32, n) }
	h := func(n int) []uint16 { return make([]uint16, n) }
	huge := 1 << 40
	tests := []struct {
		name string
		call func() error
		want error
	}{
		{"zero M", func() error { return ieee32.Forward(Values(s(4)), Values(s(4)), Values(s(4)), nil, 0, 2, 2) }, ErrDim},
		{"negative K", func() error { return ieee32.DX(Values(s(4)), Values(s(4)), Values(s(4)), 2, 2, -1) }, ErrDim},
		{"overflowing M*K", func() error { return ieee32.DW(s(4), Values(s(4)), Values(s(4)), huge, huge, 1) }, ErrDim},
		{"short x", func() error { return ieee32.Forward(Values(s(4)), Values(s(3)), Values(s(4)), nil, 2, 2, 2) }, ErrLength},
		{"short w", func() error { return ieee32.DX(Values(s(4)), Values(s(4)), Values(s(3)), 2, 2, 2) }, ErrLength},
		{"short bias", func() error { return ieee32.Forward(Values(s(4)), Values(s(4)), Values(s(4)), s(1), 2, 2, 2) }, ErrLength},
		{"short dst", func() error { return ieee32.Forward(Values(s(3)), Values(s(4)), Values(s(4)), nil, 2, 2, 2) }, ErrLength},
		{"short dw", func() error { return ieee32.DW(s(3), Values(s(4)), Values(s(4)), 2, 2, 2) }, ErrLength},
		{"typed with f32 dtype", func() error { return typed(F32).Forward(Bits(h(4)), Bits(h(4)), Bits(h(4)), nil, 2, 2, 2) }, ErrDType},
		{"typed with zero dtype", func() error { return typed(0).DW(s(4), Bits(h(4)), Bits(h(4)), 2, 2, 2) }, ErrDType},
		{"typed short dy", func() error { return typed(BF16).DX(Bits(h(4)), Bits(h(3)), Bits(h(4)), 2, 2, 2) }, ErrLength},
		{"upcast short dst", func() error { return Upcast(F16, s(1), h(2)) }, ErrLength},
		{"round bad dtype", func() error { return Round(DType(9), h(2), s(2)) }, ErrDType},
		{"oracle short dst", func() error { return ForwardF64(make([]float64, 1), s(4), s(4), nil, 2, 2, 2) }, ErrLength},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.call()
			if !errors.Is(err, tc.want) {
				t.Fatalf("got %v, want %v", err, tc.want)
			}
			var ae *ArgError
			if !errors.As(err, &ae) {
				t.Fatalf("%T is not an *ArgError", err)
			}
		})
	}
}

func benchmarkForward(b *testing.B, workers int) {
	rng := rand.New(rand.NewPCG(1, 1))
	const M, K, N = 64, 1024, 512
	x, w := randNormal(rng, M*K), randNormal(rng, K*N)
	y := make([]float32, M*N)
	o := Options{Tier: IEEE, In: F32, Workers: workers}
	for b.Loop() {
		if err := o.Forward(Values(y), Values(x), Values(w), nil, M, K, N); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(2*M*K*N)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
}

func BenchmarkForward1Worker(b *testing.B)    { benchmarkForward(b, 1) }
func BenchmarkForwardAllWorkers(b *testing.B) { benchmarkForward(b, 0) }
