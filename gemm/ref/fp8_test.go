package ref

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"sort"
	"testing"
)

func TestFP8DTypeBasics(t *testing.T) {
	tests := []struct {
		d                 DType
		size              int
		name              string
		valid, half, fp8  bool
		max               float32
		nanCode, maxCode8 uint8
	}{
		{F32, 4, "f32", true, false, false, 0, 0, 0},
		{BF16, 2, "bf16", true, true, false, 0, 0, 0},
		{F16, 2, "f16", true, true, false, 0, 0, 0},
		{E4M3, 1, "e4m3", false, false, true, 448, CanonicalNaNE4M3, 0x7E},
		{E5M2, 1, "e5m2", false, false, true, 57344, CanonicalNaNE5M2, 0x7B},
		{0, 0, "DType(0)", false, false, false, 0, 0, 0},
		{6, 0, "DType(6)", false, false, false, 0, 0, 0},
	}
	for _, tc := range tests {
		d := tc.d
		if d.Size() != tc.size || d.String() != tc.name || d.Valid() != tc.valid || d.Half() != tc.half || d.FP8() != tc.fp8 {
			t.Errorf("%d: Size %d String %q Valid %v Half %v FP8 %v", uint8(d), d.Size(), d, d.Valid(), d.Half(), d.FP8())
		}
		if !tc.fp8 {
			if m := FP8Max(d); m == m {
				t.Errorf("FP8Max(%v) = %v, want NaN", d, m)
			}
			if v := FP8Decode(d, 0x38); v == v {
				t.Errorf("FP8Decode(%v) = %v, want NaN", d, v)
			}
			if c := FP8Encode(d, 1); c != 0x7F {
				t.Errorf("FP8Encode(%v) = %#x, want 0x7f", d, c)
			}
			if v := FP8Step(0, d, []uint8{0x38}, E4M3, []uint8{0x38}); v == v {
				t.Errorf("FP8Step(%v) = %v, want NaN", d, v)
			}
			continue
		}
		if FP8Max(d) != tc.max || FP8Encode(d, tc.max) != tc.maxCode8 || FP8Decode(d, tc.maxCode8) != tc.max {
			t.Errorf("%v: max %v, encode %#x, decode %v", d, FP8Max(d), FP8Encode(d, tc.max), FP8Decode(d, tc.maxCode8))
		}
		if c := FP8Encode(d, float32(math.NaN())); c != tc.nanCode {
			t.Errorf("%v: NaN encodes as %#x", d, c)
		}
	}
}

// fp8Exact is the value of a code by the OCP specification, computed
// independently of the package (float64, exact for these formats).
func fp8Exact(d DType, c uint8) float64 {
	s := 1.0
	if c&0x80 != 0 {
		s = -1
	}
	if d == E4M3 {
		e, m := int(c>>3&15), float64(c&7)
		switch {
		case e == 15 && m == 7:
			return math.NaN()
		case e == 0:
			return s * m / 8 * 0x1p-6
		}
		return s * (1 + m/8) * math.Ldexp(1, e-7)
	}
	e, m := int(c>>2&31), float64(c&3)
	switch {
	case e == 31 && m == 0:
		return s * math.Inf(1)
	case e == 31:
		return math.NaN()
	case e == 0:
		return s * m / 4 * 0x1p-14
	}
	return s * (1 + m/4) * math.Ldexp(1, e-15)
}

func TestFP8DecodeRoundTrip(t *testing.T) {
	for _, d := range []DType{E4M3, E5M2} {
		nans := 0
		for c := range 256 {
			code := uint8(c)
			v, want := FP8Decode(d, code), fp8Exact(d, code)
			if want != want {
				nans++
				if math.Float32bits(v) != CanonicalNaN32 {
					t.Errorf("%v %#02x: decodes to %#x, want the canonical NaN", d, c, math.Float32bits(v))
				}
				if e := FP8Encode(d, v); e != fp8Fmt(d).nanCode {
					t.Errorf("%v %#02x: NaN re-encodes as %#x", d, c, e)
				}
				continue
			}
			if float64(v) != want || math.Signbit(float64(v)) != math.Signbit(want) {
				t.Errorf("%v %#02x: decodes to %v, want %v", d, c, v, want)
			}
			wantCode := code
			if math.IsInf(want, 0) {
				wantCode = code&0x80 | fp8Fmt(d).maxCode // satfinite
			}
			if e := FP8Encode(d, v); e != wantCode {
				t.Errorf("%v %#02x = %v: re-encodes as %#02x, want %#02x", d, c, v, e, wantCode)
			}
		}
		if want := map[DType]int{E4M3: 2, E5M2: 6}[d]; nans != want {
			t.Errorf("%v: %d NaN codes, want %d", d, nans, want)
		}
	}
}

// fp8Slow is an independent FP8Encode: the nearest of the format's finite
// values by exact comparison (ties to the even code), saturated.
type fp8Slow struct {
	vals  []float64 // the nonnegative finite values, ascending; vals[i] is code i
	max   float64
	nan   uint8
	codes int
}

func newFP8Slow(d DType) *fp8Slow {
	s := &fp8Slow{nan: fp8Fmt(d).nanCode}
	for c := 0; c < 0x80; c++ {
		v := fp8Exact(d, uint8(c))
		if v != v || math.IsInf(v, 0) {
			break
		}
		s.vals = append(s.vals, v)
	}
	s.max = s.vals[len(s.vals)-1]
	return s
}

func (s *fp8Slow) encode(x float32) uint8 {
	xf := float64(x)
	if xf != xf {
		return s.nan
	}
	var sign uint8
	if math.Signbit(xf) {
		sign, xf = 0x80, -xf
	}
	if xf >= s.max {
		return sign | uint8(len(s.vals)-1)
	}
	// vals[i] <= xf < vals[i+1].
	i := sort.Search(len(s.vals), func(i int) bool { return s.vals[i] > xf }) - 1
	lo, hi := s.vals[i], s.vals[i+1]
	// Compare 2x with lo + hi, both exact in float64: x has 24 significant
	// bits and lies between lo and hi, and two neighbouring fp8 values
	// (within 2^-16 .. 2^16) sum to a few significant bits.
	switch mid := lo + hi; {
	case 2*xf < mid:
		return sign | uint8(i)
	case 2*xf > mid:
		return sign | uint8(i+1)
	}
	if i%2 == 0 {
		return sign | uint8(i)
	}
	return sign | uint8(i+1)
}

func TestFP8EncodeCases(t *testing.T) {
	f32 := func(u uint32) float32 { return math.Float32frombits(u) }
	inf := float32(math.Inf(1))
	tests := []struct {
		name string
		d    DType
		x    float32
		want uint8
	}{
		{"e4m3 +0", E4M3, 0, 0x00},
		{"e4m3 -0", E4M3, f32(0x80000000), 0x80},
		{"e4m3 one", E4M3, 1, 0x38},
		{"e4m3 tie down to even 1", E4M3, 1 + 1.0/16, 0x38},
		{"e4m3 tie up to even 1.25", E4M3, 1 + 3.0/16, 0x3A},
		{"e4m3 above tie", E4M3, f32(math.Float32bits(1+1.0/16) + 1), 0x39},
		{"e4m3 below tie", E4M3, f32(math.Float32bits(1+3.0/16) - 1), 0x39},
		{"e4m3 max", E4M3, 448, 0x7E},
		{"e4m3 464 tie to even 448", E4M3, 464, 0x7E},
		{"e4m3 just past 464 saturates", E4M3, f32(math.Float32bits(464) + 1), 0x7E},
		{"e4m3 1e30 saturates", E4M3, -1e30, 0xFE},
		{"e4m3 +Inf", E4M3, inf, 0x7E},
		{"e4m3 -Inf", E4M3, -inf, 0xFE},
		{"e4m3 NaN", E4M3, float32(math.NaN()), CanonicalNaNE4M3},
		{"e4m3 -NaN", E4M3, f32(0xFFC00001), CanonicalNaNE4M3},
		{"e4m3 min subnormal", E4M3, 0x1p-9, 0x01},
		{"e4m3 half min subnormal: tie to 0", E4M3, 0x1p-10, 0x00},
		{"e4m3 -half min subnormal: -0", E4M3, -0x1p-10, 0x80},
		{"e4m3 above half min subnormal", E4M3, f32(math.Float32bits(0x1p-10) + 1), 0x01},
		{"e4m3 1.5 min subnormal: tie to 2", E4M3, 1.5 * 0x1p-9, 0x02},
		{"e4m3 tiny f32 subnormal", E4M3, f32(1), 0x00},
		{"e4m3 -tiny", E4M3, f32(0x80000001), 0x80},
		{"e4m3 largest subnormal", E4M3, 7 * 0x1p-9, 0x07},
		{"e4m3 rounds up to smallest normal", E4M3, 7.5 * 0x1p-9, 0x08},
		{"e4m3 smallest normal", E4M3, 0x1p-6, 0x08},
		{"e4m3 carry into next binade", E4M3, 1.97, 0x40},
		{"e5m2 one", E5M2, 1, 0x3C},
		{"e5m2 max", E5M2, 57344, 0x7B},
		{"e5m2 61440 tie saturates", E5M2, 61440, 0x7B},
		{"e5m2 65536 saturates", E5M2, 65536, 0x7B},
		{"e5m2 +Inf", E5M2, inf, 0x7B},
		{"e5m2 -Inf", E5M2, -inf, 0xFB},
		{"e5m2 NaN", E5M2, float32(math.NaN()), CanonicalNaNE5M2},
		{"e5m2 min subnormal", E5M2, 0x1p-16, 0x01},
		{"e5m2 half min subnormal", E5M2, 0x1p-17, 0x00},
		{"e5m2 -half min subnormal", E5M2, -0x1p-17, 0x80},
		{"e5m2 tie 1.125 to 1", E5M2, 1.125, 0x3C},
		{"e5m2 tie 1.375 to 1.5", E5M2, 1.375, 0x3E},
		{"e5m2 largest subnormal", E5M2, 3 * 0x1p-16, 0x03},
		{"e5m2 smallest normal", E5M2, 0x1p-14, 0x04},
	}
	for _, tc := range tests {
		if got := FP8Encode(tc.d, tc.x); got != tc.want {
			t.Errorf("%s: FP8Encode(%v, %v) = %#02x, want %#02x", tc.name, tc.d, tc.x, got, tc.want)
		}
		if got := newFP8Slow(tc.d).encode(tc.x); got != tc.want {
			t.Errorf("%s: the slow reference gives %#02x, want %#02x", tc.name, got, tc.want)
		}
	}
}

// TestFP8EncodeMidpoints: every exact midpoint between neighbouring values
// rounds to the even code, and the float32 values beside it to the nearer
// value.
func TestFP8EncodeMidpoints(t *testing.T) {
	for _, d := range []DType{E4M3, E5M2} {
		s := newFP8Slow(d)
		for i := 0; i+1 < len(s.vals); i++ {
			mid := float32((s.vals[i] + s.vals[i+1]) / 2) // exact
			even := uint8(i)
			if i%2 == 1 {
				even = uint8(i + 1)
			}
			below := math.Float32frombits(math.Float32bits(mid) - 1)
			above := math.Float32frombits(math.Float32bits(mid) + 1)
			for _, c := range []struct {
				x    float32
				want uint8
			}{{mid, even}, {below, uint8(i)}, {above, uint8(i + 1)}, {-mid, 0x80 | even}} {
				if got := FP8Encode(d, c.x); got != c.want {
					t.Errorf("%v: FP8Encode(%v) = %#02x, want %#02x", d, c.x, got, c.want)
				}
			}
		}
	}
}

// TestFP8EncodeRandom compares FP8Encode with the slow reference on
// random float32 bit patterns and on values near the formats' range.
func TestFP8EncodeRandom(t *testing.T) {
	n := 1 << 21
	if testing.Short() {
		n = 1 << 16
	}
	rng := rand.New(rand.NewPCG(8, 1))
	for _, d := range []DType{E4M3, E5M2} {
		s := newFP8Slow(d)
		for i := range n {
			var u uint32
			if i%2 == 0 {
				u = rng.Uint32() // any pattern: mostly far out of range
			} else {
				// Exponents around the format's range, any fraction.
				e := uint32(127-30+rng.IntN(50)) << 23
				u = rng.Uint32()&0x807FFFFF | e
			}
			x := math.Float32frombits(u)
			if got, want := FP8Encode(d, x), s.encode(x); got != want {
				t.Fatalf("%v: FP8Encode(%v = %#08x) = %#02x, want %#02x", d, x, u, got, want)
			}
		}
	}
}

// fp8Record is one output of the H100 probe: steps chained FP8Steps from c.
type fp8Record struct {
	ta, tb DType
	steps  int
	c      float32
	a, b   []uint8
	d      float32
}

func readFP8Probe(t testing.TB) []fp8Record {
	f, err := os.Open("testdata/fp8_wgmma_probe.bin.gz")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	z, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	r := bufio.NewReader(z)
	magic := make([]byte, 8)
	if _, err := io.ReadFull(r, magic); err != nil || !bytes.Equal(magic, []byte("DGF8PRB1")) {
		t.Fatalf("probe file: magic %q, %v", magic, err)
	}
	types := [2]DType{E4M3, E5M2}
	var recs []fp8Record
	for {
		var h [8]byte
		if _, err := io.ReadFull(r, h[:]); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		if h[0] > 1 || h[1] > 1 {
			t.Fatalf("record %d: types %d %d", len(recs), h[0], h[1])
		}
		rec := fp8Record{ta: types[h[0]], tb: types[h[1]], steps: int(binary.LittleEndian.Uint16(h[2:])),
			c: math.Float32frombits(binary.LittleEndian.Uint32(h[4:]))}
		rec.a = make([]uint8, 32*rec.steps)
		rec.b = make([]uint8, 32*rec.steps)
		var d [4]byte
		for _, p := range [][]byte{rec.a, rec.b, d[:]} {
			if _, err := io.ReadFull(r, p); err != nil {
				t.Fatal(err)
			}
		}
		rec.d = math.Float32frombits(binary.LittleEndian.Uint32(d[:]))
		recs = append(recs, rec)
	}
	return recs
}

func sameF32(x, y float32) bool {
	return x != x && y != y || math.Float32bits(x) == math.Float32bits(y)
}

// TestFP8StepH100Probe reproduces every output of the H100 probe
// (wgmma.m64n8k32, all four type pairs, chains of 1 and 4 steps), bit for
// bit, with FP8Step and with the fast step.
func TestFP8StepH100Probe(t *testing.T) {
	recs := readFP8Probe(t)
	if len(recs) != 12400 {
		t.Fatalf("%d records, want 12400", len(recs))
	}
	pairs := map[[2]DType]int{}
	for i, r := range recs {
		pairs[[2]DType{r.ta, r.tb}]++
		c, cf := r.c, r.c
		p := newFP8Pair(r.ta, r.tb)
		for s := range r.steps {
			a, b := r.a[32*s:32*s+32], r.b[32*s:32*s+32]
			c = FP8Step(c, r.ta, a, r.tb, b)
			cf = p.step(cf, a, b, true)
		}
		if !sameF32(c, r.d) || !sameF32(cf, r.d) {
			t.Fatalf("record %d (%v×%v, %d steps, c %v): FP8Step %v (%#08x), fast %v, H100 %v (%#08x)",
				i, r.ta, r.tb, r.steps, r.c, c, math.Float32bits(c), cf, r.d, math.Float32bits(r.d))
		}
	}
	if len(pairs) != 4 {
		t.Errorf("type pairs %v, want all four", pairs)
	}
}
