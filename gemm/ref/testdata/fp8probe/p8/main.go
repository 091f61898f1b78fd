// p8: inputs for probe8.cu (gen) and the fit of the fp8 addition model (ana).
package main

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/bits"
	"math/rand/v2"
	"os"
	"strconv"
)

// fp8 decoding. t = 0 e4m3 (fn), 1 e5m2.
func dec(t int, c uint8) float64 {
	s := 1.0
	if c&0x80 != 0 {
		s = -1
	}
	if t == 0 {
		e, m := int(c>>3&15), int(c&7)
		if e == 15 && m == 7 {
			return math.NaN()
		}
		if e == 0 {
			return s * float64(m) / 8 * math.Ldexp(1, -6)
		}
		return s * (1 + float64(m)/8) * math.Ldexp(1, e-7)
	}
	e, m := int(c>>2&31), int(c&3)
	if e == 31 {
		if m == 0 {
			return s * math.Inf(1)
		}
		return math.NaN()
	}
	if e == 0 {
		return s * float64(m) / 4 * math.Ldexp(1, -14)
	}
	return s * (1 + float64(m)/4) * math.Ldexp(1, e-15)
}

func emin(t int) int {
	if t == 0 {
		return -6
	}
	return -14
}

// a random finite code with exponent field in [lo, hi]
func code(r *rand.Rand, t, lo, hi int) uint8 {
	for {
		var c uint8
		if t == 0 {
			e := lo + r.IntN(hi-lo+1)
			c = uint8(e<<3 | r.IntN(8))
		} else {
			e := lo + r.IntN(hi-lo+1)
			c = uint8(e<<2 | r.IntN(4))
		}
		if r.IntN(2) == 1 {
			c |= 0x80
		}
		if !math.IsNaN(dec(t, c)) && !math.IsInf(dec(t, c), 0) {
			return c
		}
	}
}

func maxE(t int) int {
	if t == 0 {
		return 15
	}
	return 30
}

type set struct {
	nexp, ns, ta, tb int
	A, B             []uint8
	C                []float32
	kind             []int
}

func randC(r *rand.Rand, e int) float32 {
	m := r.Uint32() & 0x7FFFFF
	e = max(min(e, 127), -126)
	u := uint32(e+127)<<23 | m
	if r.IntN(2) == 1 {
		u |= 1 << 31
	}
	return math.Float32frombits(u)
}

func gen(seed uint64, nexp, ns, ta, tb int) *set {
	r := rand.New(rand.NewPCG(seed, uint64(ns*1000+ta*10+tb)))
	K := 32 * ns
	s := &set{nexp: nexp, ns: ns, ta: ta, tb: tb, A: make([]uint8, nexp*64*K), B: make([]uint8, nexp*8*K), C: make([]float32, nexp*512), kind: make([]int, nexp)}
	ma, mb := maxE(ta), maxE(tb)
	bias := func(t int) int {
		if t == 0 {
			return 7
		}
		return 15
	}
	for e := 0; e < nexp; e++ {
		kind := r.IntN(7)
		if seed >= 10 {
			kind = 7
		}
		if ns > 1 {
			kind = r.IntN(3)
		}
		s.kind[e] = kind
		a := s.A[e*64*K : (e+1)*64*K]
		b := s.B[e*8*K : (e+1)*8*K]
		c := s.C[e*512 : (e+1)*512]
		pe := 0 // typical product exponent
		switch kind {
		case 0: // uniform codes, C near products or 0
			for i := range a {
				a[i] = code(r, ta, 0, ma)
			}
			for i := range b {
				b[i] = code(r, tb, 0, mb)
			}
			for i := range c {
				if r.IntN(3) == 0 {
					c[i] = 0
				} else {
					c[i] = randC(r, r.IntN(40)-10)
				}
			}
			continue
		case 1: // narrow exponents around bias: realistic; C of similar size
			for i := range a {
				a[i] = code(r, ta, bias(ta)-3, bias(ta)+3)
			}
			for i := range b {
				b[i] = code(r, tb, bias(tb)-3, bias(tb)+3)
			}
			pe = 0
		case 2: // sparse products, C with all bits
			for i := range a {
				if r.IntN(6) == 0 {
					a[i] = code(r, ta, 1, ma)
				}
			}
			for i := range b {
				if r.IntN(3) != 0 {
					b[i] = code(r, tb, 1, mb)
				}
			}
			pe = 0
		case 3: // cancellation: pairs of equal and opposite
			for row := 0; row < 64; row++ {
				for k := 0; k < K; k += 2 {
					a[row*K+k] = code(r, ta, bias(ta)-2, bias(ta)+2)
					a[row*K+k+1] = a[row*K+k] ^ 0x80
				}
			}
			for n := 0; n < 8; n++ {
				for k := 0; k < K; k += 2 {
					b[n*K+k] = code(r, tb, bias(tb)-2, bias(tb)+2)
					b[n*K+k+1] = b[n*K+k]
					if r.IntN(4) == 0 {
						b[n*K+k+1] = code(r, tb, 0, bias(tb)-3)
					}
				}
			}
			pe = -8
		case 4: // subnormals and the smallest normals
			for i := range a {
				a[i] = code(r, ta, 0, 2)
			}
			for i := range b {
				b[i] = code(r, tb, 0, min(2+r.IntN(mb), mb))
			}
			pe = -20
		case 5: // one product per row, C swept
			for row := 0; row < 64; row++ {
				k := r.IntN(K)
				a[row*K+k] = code(r, ta, 1, ma)
			}
			for i := range b {
				b[i] = code(r, tb, 1, mb)
			}
		case 7: // zeros of both signs, tiny C
			for i := range a {
				switch r.IntN(4) {
				case 0:
					a[i] = 0x80
				case 1:
					a[i] = 0
				case 2:
					a[i] = code(r, ta, 0, 1)
				}
			}
			if r.IntN(2) == 0 { // some rows all -0
				for row := 0; row < 64; row += 2 {
					for k := 0; k < K; k++ {
						a[row*K+k] = 0x80
					}
				}
			}
			for i := range b {
				b[i] = code(r, tb, 0, mb)
			}
			for i := range c {
				switch r.IntN(5) {
				case 0:
					c[i] = 0
				case 1:
					c[i] = float32(math.Copysign(0, -1))
				default:
					u := r.Uint32() & 0x807FFFFF
					u |= uint32(r.IntN(12)) << 23
					c[i] = math.Float32frombits(u)
				}
			}
			continue
		case 6: // exponent spread
			for i := range a {
				a[i] = code(r, ta, 0, ma)
			}
			for i := range b {
				b[i] = code(r, tb, 0, mb)
			}
		}
		for i := range c {
			switch r.IntN(4) {
			case 0:
				c[i] = 0
			default:
				c[i] = randC(r, pe+r.IntN(60)-30)
			}
		}
	}
	return s
}

func (s *set) write(path string) {
	f, _ := os.Create(path)
	defer f.Close()
	binary.Write(f, binary.LittleEndian, []int32{int32(s.nexp), int32(s.ns), int32(s.ta), int32(s.tb)})
	f.Write(s.A)
	f.Write(s.B)
	binary.Write(f, binary.LittleEndian, s.C)
}

// ---- the model ----

type model struct {
	block  int  // products per block
	g      int  // grid: 2^(emax - g)
	clamp  int  // min emax
	cIn    bool // c joins every block (else only the first... unused)
	outP   int  // significant bits of the rounded block result (24 = f32)
	rne    bool // round the block sum to nearest even (else toward zero)
	nomExp bool // products' nominal exponent ea+eb (else exact floor(log2|p|))
}

type addend struct {
	neg bool
	sig uint64
	lsb int
	e   int
}

func parts(x float64, em int) addend {
	if x == 0 {
		return addend{math.Signbit(x), 0, 0, 0}
	}
	fr, ex := math.Frexp(math.Abs(x)) // x = fr*2^ex, fr in [0.5,1)
	sig := uint64(fr * (1 << 53))
	lsb := ex - 53
	tz := bits.TrailingZeros64(sig)
	sig >>= tz
	lsb += tz
	e := max(ex-1, em)
	return addend{math.Signbit(x), sig, lsb, e}
}

func nomExp(x float64, em int) int {
	_, ex := math.Frexp(math.Abs(x))
	return max(ex-1, em)
}

func (m model) blockSum(c float32, pa, pb []float64, ea, eb int) float32 {
	// specials
	cf := float64(c)
	nan := math.IsNaN(cf)
	pinf, ninf := math.IsInf(cf, 1), math.IsInf(cf, -1)
	for i := range pa {
		p := pa[i] * pb[i]
		if math.IsNaN(pa[i]) || math.IsNaN(pb[i]) || math.IsNaN(p) {
			nan = true
		}
		if math.IsInf(p, 1) {
			pinf = true
		}
		if math.IsInf(p, -1) {
			ninf = true
		}
	}
	if nan || (pinf && ninf) {
		return float32(math.NaN())
	}
	if pinf {
		return float32(math.Inf(1))
	}
	if ninf {
		return float32(math.Inf(-1))
	}
	ad := make([]addend, 0, len(pa)+1)
	a := parts(cf, -126)
	ad = append(ad, a)
	allNeg := c == 0 && math.Signbit(cf) || c != 0 && c < 0
	for i := range pa {
		p := pa[i] * pb[i] // exact in float64
		t := parts(p, -1000)
		if p != 0 {
			if m.nomExp {
				t.e = nomExp(pa[i], ea) + nomExp(pb[i], eb)
			}
		}
		neg := math.Signbit(pa[i]) != math.Signbit(pb[i])
		t.neg = neg
		if !neg {
			allNeg = false
		}
		ad = append(ad, t)
	}
	emax := m.clamp
	for _, t := range ad {
		if t.sig != 0 {
			emax = max(emax, t.e)
		}
	}
	g := emax - m.g
	var sum int64
	for _, t := range ad {
		if t.sig == 0 {
			continue
		}
		var u uint64
		if t.lsb >= g {
			if t.lsb-g > 60 {
				panic("shift")
			}
			u = t.sig << uint(t.lsb-g)
		} else if g-t.lsb < 64 {
			u = t.sig >> uint(g-t.lsb)
		}
		if t.neg {
			sum -= int64(u)
		} else {
			sum += int64(u)
		}
	}
	if sum == 0 {
		if allNeg {
			return float32(math.Copysign(0, -1))
		}
		return 0
	}
	// round sum*2^g to outP bits (toward zero or RNE), f32 subnormal grid
	neg := sum < 0
	mag := uint64(sum)
	if neg {
		mag = uint64(-sum)
	}
	n := bits.Len64(mag)
	top := n - 1 + g // exponent of leading bit
	keepLsb := top - (m.outP - 1)
	keepLsb = max(keepLsb, -149)
	var q uint64
	if keepLsb <= g {
		q = mag << uint(g-keepLsb)
	} else {
		sh := uint(keepLsb - g)
		q = mag >> sh
		if m.rne {
			rem := mag - q<<sh
			half := uint64(1) << (sh - 1)
			if rem > half || rem == half && q&1 == 1 {
				q++
			}
		}
	}
	v := math.Ldexp(float64(q), keepLsb)
	if v >= math.Ldexp(1, 128) {
		v = math.Inf(1)
	}
	if neg {
		v = -v
	}
	return float32(v)
}

func (m model) run(s *set, e, row, col int) float32 {
	K := 32 * s.ns
	a := s.A[e*64*K+row*K : e*64*K+(row+1)*K]
	b := s.B[e*8*K+col*K : e*8*K+(col+1)*K]
	c := s.C[e*512+row*8+col]
	pa := make([]float64, K)
	pb := make([]float64, K)
	for k := 0; k < K; k++ {
		pa[k] = dec(s.ta, a[k])
		pb[k] = dec(s.tb, b[k])
	}
	for k := 0; k < K; k += m.block {
		c = m.blockSum(c, pa[k:k+m.block], pb[k:k+m.block], emin(s.ta), emin(s.tb))
	}
	return c
}

func readD(path string, n int) []float32 {
	raw, err := os.ReadFile(path)
	if err != nil {
		panic(err)
	}
	d := make([]float32, len(raw)/4)
	binary.Read(bytesReader(raw), binary.LittleEndian, d)
	pl, _ := strconv.Atoi(os.Getenv("PLANE"))
	return d[pl*n : (pl+1)*n]
}

func same(x, y float32) bool {
	if x != x && y != y {
		return true
	}
	return math.Float32bits(x) == math.Float32bits(y)
}

func main() {
	if os.Args[1] == "export" {
		exportAll(os.Args[2])
		return
	}
	seed, _ := strconv.ParseUint(os.Args[2], 10, 64)
	nexp, _ := strconv.Atoi(os.Args[3])
	ns, _ := strconv.Atoi(os.Args[4])
	ta, _ := strconv.Atoi(os.Args[5])
	tb, _ := strconv.Atoi(os.Args[6])
	s := gen(seed, nexp, ns, ta, tb)
	switch os.Args[1] {
	case "gen":
		s.write(os.Args[7])
	case "ana":
		d := readD(os.Args[7], nexp*512)
		if os.Getenv("ZEROC") != "" {
			for i := range s.C {
				s.C[i] = 0
			}
		}
		cands := []model{}
		for _, blk := range []int{32, 16, 8} {
			for g := 10; g <= 50; g++ {
				for _, outP := range []int{24, 16, 15, 14, 13, 12} {
					for _, rne := range []bool{false, true} {
						cands = append(cands, model{block: blk, g: g, clamp: -200, outP: outP, rne: rne, nomExp: true})
					}
				}
			}
		}
		if len(os.Args) > 8 {
			// a single model: block g outP rne
			blk, _ := strconv.Atoi(os.Args[8])
			g, _ := strconv.Atoi(os.Args[9])
			outP, _ := strconv.Atoi(os.Args[10])
			clamp := -200
			if v := os.Getenv("CLAMP"); v != "" {
				clamp, _ = strconv.Atoi(v)
			}
			cands = []model{{block: blk, g: g, clamp: clamp, outP: outP, rne: os.Args[11] == "1", nomExp: os.Args[12] == "1"}}
		}
		best, bestN := model{}, -1
		for _, m := range cands {
			ok, bad := 0, 0
			for e := 0; e < nexp && bad < 50; e++ {
				for i := 0; i < 512; i++ {
					if same(m.run(s, e, i/8, i%8), d[e*512+i]) {
						ok++
					} else {
						bad++
					}
				}
			}
			if bad == 0 {
				fmt.Printf("MATCH %+v: all %d\n", m, ok)
			}
			if ok > bestN {
				best, bestN = m, ok
			}
		}
		fmt.Printf("best %+v\n", best)
		// full stats for best with per-kind mismatches
		kb := map[int]int{}
		kn := map[int]int{}
		shown := 0
		for e := 0; e < nexp; e++ {
			for i := 0; i < 512; i++ {
				got := best.run(s, e, i/8, i%8)
				kn[s.kind[e]]++
				if !same(got, d[e*512+i]) {
					kb[s.kind[e]]++
					if shown < 8 {
						shown++
						fmt.Printf("  exp %d kind %d row %d col %d: model %g (%08x) gpu %g (%08x) c %g\n", e, s.kind[e], i/8, i%8, got, math.Float32bits(got), d[e*512+i], math.Float32bits(d[e*512+i]), s.C[e*512+i])
					}
				}
			}
		}
		for k := range 7 {
			fmt.Printf("kind %d: %d of %d differ\n", k, kb[k], kn[k])
		}
	}
}
