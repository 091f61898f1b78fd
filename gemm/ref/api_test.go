package ref

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"testing"
)

// The Options entry points against the implementation they replaced
// (legacy_test.go), bit for bit, for every op, tier, model, input and output
// type and operand form, on random and adversarial data; and every window of
// an output against the same elements of the whole.

// apiConfig is one tier with its types.
type apiConfig struct {
	tier    Tier
	in, out DType
	model   TCModel
}

func (c apiConfig) String() string {
	if c.tier == TensorCore {
		return fmt.Sprintf("%v/%s %v→%v", c.tier, c.model.Name, c.in, c.out)
	}
	return fmt.Sprintf("%v %v→%v", c.tier, c.in, c.out)
}

func (c apiConfig) options(workers int) Options {
	return Options{Tier: c.tier, In: c.in, Out: c.out, Model: c.model, Workers: workers}
}

// The Options the plan tests call, on all CPUs: the f32 tier; the typed
// tier in d (Bits in and out); the tensor-core tier of model m on inputs of
// type d given as their exact float32 values, storing the float32
// accumulator; and the same on Bits, storing d.
var ieee32 = Options{Tier: IEEE, In: F32}

func typed(d DType) Options { return Options{Tier: IEEE, In: d} }

func tc32(m TCModel, d DType) Options {
	return Options{Tier: TensorCore, In: d, Out: F32, Model: m}
}

func tcTyped(m TCModel, d DType) Options { return Options{Tier: TensorCore, In: d, Model: m} }

// apiConfigs: every tier, model and pair of types the entry points accept.
func apiConfigs() []apiConfig {
	cs := []apiConfig{{tier: IEEE, in: F32, out: F32}}
	for _, d := range []DType{BF16, F16} {
		for _, out := range []DType{d, F32} {
			cs = append(cs, apiConfig{tier: IEEE, in: d, out: out})
			for _, m := range []TCModel{Hopper, Ampere} {
				cs = append(cs, apiConfig{tier: TensorCore, in: d, out: out, model: m})
			}
		}
	}
	return cs
}

// apiShape is X[M,K], W[K,N] and Y, dY[M,N]: Forward is (M, K, N), dX
// (M, N, K) and dW (M, K, N).
type apiShape struct{ M, K, N int }

var apiShapes = []apiShape{
	{1, 1, 1}, {3, 5, 7}, {2, 16, 9}, {4, 17, 3},
	{3, 520, 9},  // three IEEE slabs of the forward reduction
	{2, 40, 260}, // N spans two column blocks (Forward, dW)
	{40, 33, 70}, // more rows than one task's tile
	{300, 3, 4},  // dW over two IEEE slabs of rows
	{2, 8192, 4}, // the tensor-core plan cuts Forward's reduction in two slabs
	{2, 4, 8192}, // and dX's
	{1024, 3, 5}, // and dW's
}

// The data kinds: what the inputs stress.
var apiKinds = []string{"random", "spread", "cancel", "subnormal", "ties", "specials"}

// apiData returns n values exactly of type d (F32, BF16 or F16) of kind.
func apiData(rng *rand.Rand, kind string, d DType, n int) []float32 {
	v := make([]float32, n)
	emax := 60 // exponent spread, inside the type's range
	if d == F16 {
		emax = 12
	}
	for i := range v {
		var x float64
		switch kind {
		case "random":
			x = rng.NormFloat64()
		case "spread":
			x = math.Ldexp(rng.NormFloat64(), rng.IntN(2*emax+1)-emax)
		case "cancel":
			// Near-equal magnitudes of alternating sign: long chains cancel
			// to a few low bits.
			x = math.Ldexp(1+float64(rng.IntN(4))*0x1p-7, rng.IntN(3))
			if i%2 == 1 {
				x = -x
			}
		case "subnormal":
			sub := [...]float64{0x1p-149, 0x1p-140, 0x1p-133, 0x1p-127, 0x1p-126} // bf16 and f32
			if d == F16 {
				sub = [...]float64{0x1p-24, 0x1p-20, 0x1p-15, 0x1p-14, 0x1p-13}
			}
			x = sub[rng.IntN(len(sub))] * float64(1+rng.IntN(7))
			if rng.IntN(4) == 0 {
				x = math.Ldexp(rng.NormFloat64(), rng.IntN(8))
			}
		case "ties":
			// Few significant bits far apart: sums land on rounding
			// midpoints of float32, bf16 and f16.
			x = [...]float64{1, 0x1p-8, 0x1p-9, 3 * 0x1p-9, 0x1p-11, 0x1p-12, 0x1p-24, 0x1p-25, 0.5, 0x1p-13}[rng.IntN(10)]
		case "specials":
			x = rng.NormFloat64()
			if rng.IntN(8) == 0 {
				x = [...]float64{0, math.Copysign(0, -1), math.Inf(1), math.Inf(-1), math.NaN(), 65504, -3e38, 0x1p-24}[rng.IntN(8)]
			}
		}
		if kind != "specials" && rng.IntN(2) == 0 {
			x = -x
		}
		f := float32(x)
		if d.Half() {
			f = d.ToF32(d.FromF32(f))
		}
		v[i] = f
	}
	return v
}

// apiCase is one op of one config on one shape's data.
type apiCase struct {
	op    string // "Forward", "DX", "DW"
	c     apiConfig
	s     apiShape
	bits  bool // 16-bit operands as Bits (else as exact Values)
	left  []float32
	right []float32 // W, or dY for dW
	bias  []float32
	dw0   []float32 // the master dW starts from
}

// dims is the call's shape arguments; rows and cols the output's.
func (k apiCase) dims() (a, b, c, rows, cols int) {
	s := k.s
	switch k.op {
	case "Forward":
		return s.M, s.K, s.N, s.M, s.N
	case "DX":
		return s.M, s.N, s.K, s.M, s.K
	}
	return s.M, s.K, s.N, s.K, s.N
}

// operand is v in the case's form for type d.
func (k apiCase) operand(d DType, v []float32) Operand {
	if k.bits && d.Half() {
		return Bits(narrow(d, v))
	}
	return Values(append([]float32(nil), v...))
}

// result reads an output operand back as float32 values.
func result(d DType, x Operand) []float32 {
	if x.Bits != nil {
		return widen(d, x.Bits)
	}
	return x.Values
}

// run calls the Options entry point for the window o.Rows × o.Cols.
func (k apiCase) run(o Options) ([]float32, error) {
	A, B, C, rows, cols := k.dims()
	r0, r1, c0, c1 := 0, rows, 0, cols
	if !o.Rows.All() {
		r0, r1 = o.Rows.Lo, o.Rows.Hi
	}
	if !o.Cols.All() {
		c0, c1 = o.Cols.Lo, o.Cols.Hi
	}
	n := (r1 - r0) * (c1 - c0)
	in := k.c.in
	if k.op == "DW" {
		dw := make([]float32, 0, n)
		for r := r0; r < r1; r++ {
			dw = append(dw, k.dw0[r*cols+c0:r*cols+c1]...)
		}
		return dw, o.DW(dw, k.operand(in, k.left), k.operand(in, k.right), A, B, C)
	}
	dst := k.operand(k.c.out, make([]float32, n))
	var err error
	if k.op == "Forward" {
		err = o.Forward(dst, k.operand(in, k.left), k.operand(in, k.right), k.bias, A, B, C)
	} else {
		err = o.DX(dst, k.operand(in, k.left), k.operand(in, k.right), A, B, C)
	}
	return result(k.c.out, dst), err
}

// legacy computes the whole output with the replaced implementation: the
// typed entry points for a 16-bit output, the float32 ones (the typed tier
// being upcast then f32) otherwise.
func (k apiCase) legacy(workers int) []float32 {
	A, B, C, rows, cols := k.dims()
	o := legacy{Workers: workers}
	d, c := k.c.in, k.c
	out := make([]float32, rows*cols)
	if k.op == "DW" {
		copy(out, k.dw0)
		switch {
		case c.tier == TensorCore && k.bits:
			o.TCDWTyped(c.model, d, out, narrow(d, k.left), narrow(d, k.right), A, B, C)
		case c.tier == TensorCore:
			o.TCDW(c.model, d, out, k.left, k.right, A, B, C)
		case d.Half():
			o.DWTyped(d, out, narrow(d, k.left), narrow(d, k.right), A, B, C)
		default:
			o.DW(out, k.left, k.right, A, B, C)
		}
		return out
	}
	if c.out.Half() {
		h := make([]uint16, rows*cols)
		switch {
		case k.op == "Forward" && c.tier == TensorCore:
			o.TCForwardTyped(c.model, d, h, narrow(d, k.left), narrow(d, k.right), k.bias, A, B, C)
		case k.op == "Forward":
			o.ForwardTyped(d, h, narrow(d, k.left), narrow(d, k.right), k.bias, A, B, C)
		case c.tier == TensorCore:
			o.TCDXTyped(c.model, d, h, narrow(d, k.left), narrow(d, k.right), A, B, C)
		default:
			o.DXTyped(d, h, narrow(d, k.left), narrow(d, k.right), A, B, C)
		}
		return widen(d, h)
	}
	switch {
	case k.op == "Forward" && c.tier == TensorCore:
		o.TCForward(c.model, d, out, k.left, k.right, k.bias, A, B, C)
	case k.op == "Forward":
		o.Forward(out, k.left, k.right, k.bias, A, B, C)
	case c.tier == TensorCore:
		o.TCDX(c.model, d, out, k.left, k.right, A, B, C)
	default:
		o.DX(out, k.left, k.right, A, B, C)
	}
	return out
}

// apiCases returns every op × config × form × kind × shape, with data
// (drawn once per shape, kind and input type, shared by the configs).
func apiCases(seed uint64) []apiCase {
	rng := rand.New(rand.NewPCG(seed, 0xa91))
	var cs []apiCase
	for _, s := range apiShapes {
		for _, kind := range apiKinds {
			type data struct{ x, w, dy []float32 }
			byType := map[DType]data{}
			for _, d := range []DType{F32, BF16, F16} {
				byType[d] = data{apiData(rng, kind, d, s.M*s.K), apiData(rng, kind, d, s.K*s.N), apiData(rng, kind, d, s.M*s.N)}
			}
			bias, dw0 := apiData(rng, kind, F32, s.N), apiData(rng, kind, F32, s.K*s.N)
			for _, c := range apiConfigs() {
				for _, op := range []string{"Forward", "DX", "DW"} {
					if op == "DW" && c.out != c.in {
						continue // dW has no output type: one config per input type
					}
					for _, bits := range []bool{true, false} {
						if bits && !c.in.Half() {
							continue
						}
						k := apiCase{op: op, c: c, s: s, bits: bits, dw0: dw0}
						v := byType[c.in]
						switch op {
						case "Forward":
							k.left, k.right = v.x, v.w
							if rng.IntN(4) != 0 {
								k.bias = bias
							}
						case "DX":
							k.left, k.right = v.dy, v.w
						default:
							k.left, k.right = v.x, v.dy
						}
						cs = append(cs, k)
					}
				}
			}
		}
	}
	return cs
}

func (k apiCase) name() string {
	form := "Values"
	if k.bits {
		form = "Bits"
	}
	return fmt.Sprintf("%s %v %v %s", k.op, k.c, k.s, form)
}

// sameBitsAt reports the first index where got and want differ, or -1.
func sameBitsAt(got, want []float32) int {
	if len(got) != len(want) {
		return 0
	}
	for i := range got {
		if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
			return i
		}
	}
	return -1
}

// TestOptionsMatchLegacyBitForBit: every op, tier, model, type pair and
// operand form gives the bits of the implementation it replaced, on random
// data, exponent spreads, cancellation, subnormals, rounding ties and
// NaN/Inf, with one worker and with several.
func TestOptionsMatchLegacyBitForBit(t *testing.T) {
	for i, k := range apiCases(1) {
		workers := 1 + i%3
		got, err := k.run(k.c.options(workers))
		if err != nil {
			t.Fatalf("%s: %v", k.name(), err)
		}
		want := k.legacy(workers)
		if j := sameBitsAt(got, want); j >= 0 {
			t.Fatalf("%s: element %d is %#x, the legacy implementation gives %#x", k.name(), j,
				math.Float32bits(got[j]), math.Float32bits(want[j]))
		}
	}
}

// TestWindowsEqualTheWholeOutput: the bits of any window of rows and
// columns are those of the same elements of the whole output (dW: of the
// same elements of the whole master, accumulated from the same start).
func TestWindowsEqualTheWholeOutput(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for i, k := range apiCases(2) {
		if i%3 != 0 {
			continue // a third of the cases: windows multiply the work
		}
		whole, err := k.run(k.c.options(2))
		if err != nil {
			t.Fatalf("%s: %v", k.name(), err)
		}
		_, _, _, rows, cols := k.dims()
		span := func(n int) Span {
			switch rng.IntN(3) {
			case 0:
				return Span{} // all
			case 1:
				lo := rng.IntN(n)
				return Span{lo, lo + 1} // one
			}
			lo := rng.IntN(n)
			return Span{lo, lo + 1 + rng.IntN(n-lo)}
		}
		for range 3 {
			o := k.c.options(1 + rng.IntN(3))
			o.Rows, o.Cols = span(rows), span(cols)
			got, err := k.run(o)
			if err != nil {
				t.Fatalf("%s rows %v cols %v: %v", k.name(), o.Rows, o.Cols, err)
			}
			r0, r1, c0, c1 := 0, rows, 0, cols
			if !o.Rows.All() {
				r0, r1 = o.Rows.Lo, o.Rows.Hi
			}
			if !o.Cols.All() {
				c0, c1 = o.Cols.Lo, o.Cols.Hi
			}
			var want []float32
			for r := r0; r < r1; r++ {
				want = append(want, whole[r*cols+c0:r*cols+c1]...)
			}
			if j := sameBitsAt(got, want); j >= 0 {
				t.Fatalf("%s rows %v cols %v: window element %d differs from the whole output", k.name(), o.Rows, o.Cols, j)
			}
		}
	}
}

// TestOptionsRefuseBadArguments: each bad option, operand or window is an
// *ArgError matching its sentinel.
func TestOptionsRefuseBadArguments(t *testing.T) {
	f := make([]float32, 64)
	h := make([]uint16, 64)
	ieee := Options{Tier: IEEE, In: F32}
	bf := Options{Tier: IEEE, In: BF16}
	tc := Options{Tier: TensorCore, In: BF16, Model: Hopper}
	with := func(o Options, set func(*Options)) Options { set(&o); return o }
	inexact := append([]float32{1 + 0x1p-20}, f[1:]...)
	cases := []struct {
		name string
		err  error
		want error
	}{
		{"zero tier", Options{In: F32}.Forward(Values(f), Values(f), Values(f), nil, 2, 2, 2), ErrTier},
		{"tier 9", Options{Tier: 9, In: F32}.DX(Values(f), Values(f), Values(f), 2, 2, 2), ErrTier},
		{"zero In", Options{Tier: IEEE}.DW(f, Values(f), Values(f), 2, 2, 2), ErrDType},
		{"f32 to the TC tier", Options{Tier: TensorCore, In: F32, Model: Hopper}.Forward(Values(f), Values(f), Values(f), nil, 2, 2, 2), ErrDType},
		{"zero model", Options{Tier: TensorCore, In: BF16}.Forward(Values(f), Values(f), Values(f), nil, 2, 2, 2), ErrTCModel},
		{"f16 out of bf16", with(bf, func(o *Options) { o.Out = F16 }).Forward(Bits(h), Bits(h), Bits(h), nil, 2, 2, 2), ErrDType},
		{"bf16 out of f32", with(ieee, func(o *Options) { o.Out = BF16 }).Forward(Bits(h), Values(f), Values(f), nil, 2, 2, 2), ErrDType},
		{"Bits for f32", ieee.Forward(Values(f), Bits(h), Values(f), nil, 2, 2, 2), ErrDType},
		{"Bits for an f32 dst", with(bf, func(o *Options) { o.Out = F32 }).DX(Bits(h), Bits(h), Bits(h), 2, 2, 2), ErrDType},
		{"both forms", bf.Forward(Bits(h), Operand{Values: f, Bits: h}, Bits(h), nil, 2, 2, 2), ErrDType},
		{"zero K", tc.Forward(Bits(h), Bits(h), Bits(h), nil, 2, 0, 2), ErrDim},
		{"overflow", ieee.DW(f, Values(f), Values(f), 1<<40, 1<<40, 2), ErrDim},
		{"x short", ieee.Forward(Values(f), Values(f[:3]), Values(f), nil, 2, 2, 2), ErrLength},
		{"bias short", ieee.Forward(Values(f), Values(f), Values(f), f[:1], 2, 2, 2), ErrLength},
		{"dst short", tc.DX(Bits(h[:3]), Bits(h), Bits(h), 2, 2, 2), ErrLength},
		{"window dst short", with(ieee, func(o *Options) { o.Rows = Span{1, 3} }).Forward(Values(f[:5]), Values(f), Values(f), nil, 4, 2, 3), ErrLength},
		{"rows past M", with(ieee, func(o *Options) { o.Rows = Span{1, 5} }).Forward(Values(f), Values(f), Values(f), nil, 4, 2, 3), ErrRange},
		{"empty cols", with(tc, func(o *Options) { o.Cols = Span{2, 2} }).DX(Values(f), Values(f), Values(f), 4, 2, 3), ErrRange},
		{"negative rows", with(ieee, func(o *Options) { o.Rows = Span{-1, 1} }).DW(f, Values(f), Values(f), 4, 2, 3), ErrRange},
		{"inexact x", tc.Forward(Values(f), Values(inexact), Values(f), nil, 2, 2, 2), ErrInexact},
		{"inexact w", bf.DX(Values(f), Values(f), Values(inexact), 2, 2, 2), ErrInexact},
	}
	for _, c := range cases {
		var ae *ArgError
		if !errors.Is(c.err, c.want) || !errors.As(c.err, &ae) || ae.Pkg != "ref" {
			t.Errorf("%s: got %v, want a ref *ArgError matching %v", c.name, c.err, c.want)
		}
	}
	// An inexact value outside the window is never read, so never refused.
	o := with(tc, func(o *Options) { o.Rows = Span{1, 2} })
	if err := o.Forward(Values(f), Values(inexact), Values(f), nil, 2, 2, 2); err != nil {
		t.Errorf("inexact value outside the window: %v", err)
	}
}

// benchmarkOptionsVsLegacy times an entry point against the implementation
// it replaced on the same data.
func benchmarkOptionsVsLegacy(b *testing.B, op string, c apiConfig, bits bool, s apiShape) {
	rng := rand.New(rand.NewPCG(1, 1))
	k := apiCase{op: op, c: c, s: s, bits: bits}
	switch op {
	case "Forward":
		k.left, k.right = apiData(rng, "random", c.in, s.M*s.K), apiData(rng, "random", c.in, s.K*s.N)
	case "DX":
		k.left, k.right = apiData(rng, "random", c.in, s.M*s.N), apiData(rng, "random", c.in, s.K*s.N)
	default:
		k.left, k.right = apiData(rng, "random", c.in, s.M*s.K), apiData(rng, "random", c.in, s.M*s.N)
	}
	k.dw0 = make([]float32, s.K*s.N)
	b.Run("options", func(b *testing.B) {
		for b.Loop() {
			if _, err := k.run(c.options(1)); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("legacy", func(b *testing.B) {
		for b.Loop() {
			k.legacy(1)
		}
	})
}

func BenchmarkOptionsVsLegacyForwardF32(b *testing.B) {
	benchmarkOptionsVsLegacy(b, "Forward", apiConfig{tier: IEEE, in: F32, out: F32}, false, apiShape{64, 1024, 512})
}

func BenchmarkOptionsVsLegacyDXF32(b *testing.B) {
	benchmarkOptionsVsLegacy(b, "DX", apiConfig{tier: IEEE, in: F32, out: F32}, false, apiShape{64, 512, 1024})
}

func BenchmarkOptionsVsLegacyDWF32(b *testing.B) {
	benchmarkOptionsVsLegacy(b, "DW", apiConfig{tier: IEEE, in: F32, out: F32}, false, apiShape{512, 256, 256})
}

func BenchmarkOptionsVsLegacyForwardBF16(b *testing.B) {
	benchmarkOptionsVsLegacy(b, "Forward", apiConfig{tier: IEEE, in: BF16, out: BF16}, true, apiShape{64, 1024, 512})
}

func BenchmarkOptionsVsLegacyTCForwardBF16(b *testing.B) {
	benchmarkOptionsVsLegacy(b, "Forward", apiConfig{tier: TensorCore, in: BF16, out: BF16, model: Hopper}, true, apiShape{64, 1024, 256})
}

func BenchmarkOptionsVsLegacyTCDXBF16(b *testing.B) {
	benchmarkOptionsVsLegacy(b, "DX", apiConfig{tier: TensorCore, in: BF16, out: BF16, model: Hopper}, true, apiShape{64, 256, 1024})
}

// TestWindowReadsWInPlace: a one-row window of a large problem allocates
// far less than W: W is widened (16-bit) or transposed (dX) one slab at a
// time, never copied whole.
func TestWindowReadsWInPlace(t *testing.T) {
	const M, K, N = 4, 2048, 2048
	rng := rand.New(rand.NewPCG(9, 10))
	w16 := randHalf(rng, BF16, K*N, false)
	w32 := widen(BF16, w16)
	x16, dy := randHalf(rng, BF16, M*K, false), randNormal(rng, M*N)
	row := Span{Lo: 2, Hi: 3}
	for _, c := range []struct {
		name string
		wb   int // W's bytes
		call func() error
	}{
		{"IEEE bf16 Forward", 2 * K * N, func() error {
			o := Options{Tier: IEEE, In: BF16, Rows: row, Workers: 1}
			return o.Forward(Bits(make([]uint16, N)), Bits(x16), Bits(w16), nil, M, K, N)
		}},
		{"TC bf16 Forward", 2 * K * N, func() error {
			o := Options{Tier: TensorCore, In: BF16, Model: Hopper, Rows: row, Workers: 1}
			return o.Forward(Bits(make([]uint16, N)), Bits(x16), Bits(w16), nil, M, K, N)
		}},
		{"IEEE f32 DX", 4 * K * N, func() error {
			o := Options{Tier: IEEE, In: F32, Rows: row, Workers: 1}
			return o.DX(Values(make([]float32, K)), Values(dy), Values(w32), M, N, K)
		}},
	} {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		if err := c.call(); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		runtime.ReadMemStats(&after)
		got := after.TotalAlloc - before.TotalAlloc
		if got > uint64(c.wb/8) {
			t.Errorf("%s: one row allocated %d bytes; W is %d", c.name, got, c.wb)
		}
		t.Logf("%s: one row allocated %d bytes; W is %d", c.name, got, c.wb)
	}
}
