package ref

import "math"

// The tensor-core plans: per output element, the reduction cut into S slabs
// (TCSlabs, TCDWSlabs; S = 1 for most shapes), each one chain of TCModel
// steps in ascending 16-wide order, the last step of the reduction
// zero-filled on both operands. Slab 0's chain starts at the bias (forward),
// +0 (forward without bias, dX) or the current dW value (dW); every later
// slab's at +0. The slab results are added in ascending order with IEEE
// float32 additions (Add32): v = p_0, v = v + p_1, ..., then one rounding to
// the output type at the store.
//
// The fast path. For finite operands and a finite accumulator, a block is
// computed in float64 instead of Step's integers, with the same results:
//   - every operand is packed once as its float64 value and its clamped
//     nominal exponent (tcZeroExp for a zero, so that no product with a zero
//     factor can become emax: zero addends take no part in the alignment);
//   - a product a·b of two float32 values is exact in float64 (at most 48
//     significant bits), and so is its scaling by the power of two
//     2^(23+ExtraBits-emax): for a valid model and float32 operands the
//     result is 0 or between 2^-530 and 2^32, inside float64's normal range;
//   - converting the scaled value to int64 truncates it toward zero: the
//     cut to the grid, in grid units, an integer below 2^32 in magnitude
//     (see sumAddends for the bound);
//   - at most 17 such integers sum exactly in int64 (below 2^37), and the
//     sum converts back to float64 exactly;
//   - a zero sum is +0, whatever the signs of c and the products, as in
//     Step;
//   - the 31-place rule needs no code: for a valid model it only ever drops
//     terms that truncate to zero (see sumAddends);
//   - scaling the sum back by 2^(emax-23-ExtraBits) is exact, and rzFast
//     truncates the float64 to float32 by dropping bits.
// Every operation is exact, so no compiler fusion of a multiply and an add
// could change a result.

// tcZeroExp is the packed exponent of a zero operand: a product with a zero
// factor gets at most tcZeroExp + 254, far below any MinAlignExp.
const tcZeroExp = -10000

// Task and chunk sizes of the plans: a task owns up to tcTileI rows of the
// left operand times tcTileJ columns of the right one, and streams the reduction
// through them tcChunk steps at a time, packing each operand's chunk once.
const (
	tcTileI  = 64
	tcTileJ  = 64
	tcChunk  = 16
	tcChunkR = tcChunk * TCStepK
)

// tcFast is the float64 form of a valid TCModel.
type tcFast struct {
	bt    int
	extra int32
	minE  int32
}

func (m TCModel) fast() tcFast {
	return tcFast{bt: m.BlockTerms, extra: int32(m.ExtraBits), minE: int32(m.MinAlignExp)}
}

// tcPack returns x's packed form: its float64 value and its nominal exponent
// floor(log2|x|) clamped up to emin, tcZeroExp for a zero.
func tcPack(x float32, emin int32) (float64, int32) {
	u := math.Float32bits(x)
	e := max(int32(u>>23&0xFF)-127, emin)
	if u&0x7FFFFFFF == 0 {
		e = tcZeroExp
	}
	return float64(x), e
}

// tcAccExp is the alignment exponent of the accumulator c: floor(log2|c|),
// f32 subnormals clamped to -126, tcZeroExp for a zero.
func tcAccExp(c float32) int32 {
	u := math.Float32bits(c)
	e := max(int32(u>>23&0xFF), 1) - 127
	if u&0x7FFFFFFF == 0 {
		e = tcZeroExp
	}
	return e
}

// pow2 returns 2^e for a float64 normal exponent e.
func pow2(e int32) float64 { return math.Float64frombits(uint64(1023+e) << 52) }

// step is one 16-wide step on packed finite operands and a finite c.
func (f tcFast) step(c float32, fa, fb *[TCStepK]float64, ea, eb *[TCStepK]int32) float32 {
	if f.bt == TCStepK {
		return f.block16(c, fa, fb, ea, eb)
	}
	for k := 0; k < TCStepK; k += f.bt {
		c = f.blockN(c, fa[k:k+f.bt], fb[k:k+f.bt], ea[k:k+f.bt], eb[k:k+f.bt])
		if math.IsInf(float64(c), 0) {
			return c // an overflowed block: finite products keep ±Inf
		}
	}
	return c
}

// stepRow applies one step to every element jj of row with fast[jj] set:
// the left operand is a, e for all of them, the right one fb, eb from 16*jj
// on. (Its own function, so that the hot loop keeps its registers.)
func (f tcFast) stepRow(row []float32, fast []bool, a *[TCStepK]float64, e *[TCStepK]int32, fb []float64, eb []int32) {
	fast = fast[:len(row)]
	for jj := range row {
		if !fast[jj] {
			continue
		}
		o := jj * TCStepK
		b, be := (*[TCStepK]float64)(fb[o:o+TCStepK]), (*[TCStepK]int32)(eb[o:o+TCStepK])
		if f.bt == TCStepK {
			row[jj] = f.block16(row[jj], a, b, e, be)
		} else {
			row[jj] = f.step(row[jj], a, b, e, be)
		}
		if math.IsInf(float64(row[jj]), 0) {
			// Overflow: ±Inf plus finite products stays ±Inf to the end.
			fast[jj] = false
		}
	}
}

// block16 is one 16-term block, its loops unrolled four ways (four running
// maxima, so that they do not wait on one another).
func (f tcFast) block16(c float32, fa, fb *[TCStepK]float64, ea, eb *[TCStepK]int32) float32 {
	e0, e1, e2, e3 := max(tcAccExp(c), f.minE), int32(tcZeroExp), int32(tcZeroExp), int32(tcZeroExp)
	for i := 0; i < TCStepK; i += 4 {
		e0 = max(e0, ea[i]+eb[i])
		e1 = max(e1, ea[i+1]+eb[i+1])
		e2 = max(e2, ea[i+2]+eb[i+2])
		e3 = max(e3, ea[i+3]+eb[i+3])
	}
	emax := max(e0, e1, e2, e3)
	scale := pow2(23 + f.extra - emax)
	// Converting a float64 to int64 truncates toward zero: the grid cut.
	s := int64(float64(c) * scale)
	for i := 0; i < TCStepK; i += 4 {
		s += int64(fa[i]*fb[i]*scale) + int64(fa[i+1]*fb[i+1]*scale) +
			int64(fa[i+2]*fb[i+2]*scale) + int64(fa[i+3]*fb[i+3]*scale)
	}
	if s == 0 {
		return 0 // an exact zero is +0, whatever the signs (as Step)
	}
	// rzFast, inlined by hand (the compiler will not: the call costs more
	// than the rest of the rounding).
	v := float64(s) * pow2(emax-23-f.extra)
	u := math.Float64bits(v)
	if (u>>52&0x7FF)-(1023-126) < 254 {
		return math.Float32frombits(uint32(u>>32)&0x80000000 | uint32(u>>29-(1023-127)<<23)&0x7FFFFFFF)
	}
	return rzSlow(v)
}

// blockN is one block of any length.
func (f tcFast) blockN(c float32, fa, fb []float64, ea, eb []int32) float32 {
	fb, ea, eb = fb[:len(fa)], ea[:len(fa)], eb[:len(fa)]
	emax := max(tcAccExp(c), f.minE)
	for i := range fa {
		emax = max(emax, ea[i]+eb[i])
	}
	scale := pow2(23 + f.extra - emax)
	s := int64(float64(c) * scale)
	for i := range fa {
		s += int64(fa[i] * fb[i] * scale)
	}
	if s == 0 {
		return 0 // an exact zero is +0, whatever the signs (as Step)
	}
	return rzFast(float64(s) * pow2(emax-23-f.extra))
}

// rzFast rounds the float64 v toward zero to float32. In float32's normal
// range that is dropping v's low 29 fraction bits; zero, subnormal and
// overflowing results go to rzSlow.
func rzFast(v float64) float32 {
	u := math.Float64bits(v)
	if (u>>52&0x7FF)-(1023-126) < 254 { // 2^-126 <= |v| < 2^128
		// u>>29 holds the exponent and the top 23 fraction bits; rebias the
		// exponent from float64's to float32's, then put the sign back.
		return math.Float32frombits(uint32(u>>32)&0x80000000 | uint32(u>>29-(1023-127)<<23)&0x7FFFFFFF)
	}
	return rzSlow(v)
}

func rzSlow(v float64) float32 {
	switch a := math.Abs(v); {
	case v == 0:
		return float32(v) // keeps the sign
	case a >= 0x1p128:
		return float32(math.Copysign(math.Inf(1), v)) // as the H200 does
	default:
		// Subnormal: whole multiples of 2^-149, truncated (the conversion to
		// an integer truncates; the scaling is exact). A sum that truncates
		// to nothing is +0, whatever its sign (as Step).
		k := uint32(a * 0x1p149)
		if k == 0 {
			return 0
		}
		return math.Float32frombits(uint32(math.Float64bits(v)>>32)&0x80000000 | k)
	}
}

// tcPlan describes v[i,j] = the tensor-core chain over r < R of a(i,r) ·
// b(r,j), for i < I, j < J, with a(i,r) = a[i*ai + r*ar] and b(r,j) =
// b[r*br + j*bj]. Forward, dX and dW, and any window of their outputs, are
// all instances.
type tcPlan struct {
	m      TCModel
	emin   int32
	a      mat
	ai, ar int
	b      mat
	br, bj int
	I, J   int
	R      int
	L      int       // slab length: a multiple of tcChunkR, or >= R for one slab
	start  []float32 // Forward's bias: slab 0's chain of column j starts at start[j]; nil: at +0
}

// TCSlabs is the tensor-core plan's cut of a Forward or dX reduction of
// length r whose output has other columns (Forward: N; dX: K): slabs
// slabs of slabLen terms (the last may be shorter). It is a function of
// (r, other) only — never M — so Forward and dX stay batch-invariant.
//
// One slab (the whole reduction, slabLen = r) unless the reduction is long
// (r >= 8192) and at least twice the other dimension: then a one-tile-a-
// column grid of a few rows would leave most of a GPU idle behind a chain
// of r/16 steps. S = min(floor(12288/other), floor(r/3072)) then, one
// slab where that is below 2; slabLen = 256·ceil(r/(256·S)) and slabs =
// ceil(r/slabLen). Few slabs keep what the cut costs where the grid is
// full anyway (every slab end there is a pause of the tile's pipeline and
// a pass over its running sums). For example (11008, 4096): 3 slabs of
// 3840 (the last 3328); (8192, 4096): 2 of 4096; (8192, 8192) and
// (4096, 4096): one.
func TCSlabs(r, other int) (slabs, slabLen int) {
	if r < 8192 || other < 1 || r/2 < other {
		return 1, r
	}
	return tcCut(r, min(12288/other, r/3072))
}

// TCDWSlabs is the tensor-core plan's cut of a dW reduction: m batch rows
// into k×n master elements. dW is not batch-invariant (its reduction is
// the batch), so the cut may depend on all three. One slab unless the batch
// is long (m >= 1024) and the master small (k·n <= 2^20, a few hundred
// 128×128 tiles at most): S = min(floor(2^21/(k·n)), floor(m/512)), one
// where that is below 2; slabLen and slabs as in TCSlabs. Calls whose plan
// has one slab chain onto the master exactly, so micro-batches split on
// multiples of 16 rows give the bits of one call (package documentation).
// For example m = 2048, k×n = 768×512: 4 slabs of 512.
func TCDWSlabs(m, k, n int) (slabs, slabLen int) {
	if m < 1024 || k < 1 || n < 1 || k > (1<<20)/n {
		return 1, m
	}
	return tcCut(m, min((1<<21)/(k*n), m/512))
}

// tcCut cuts r into about s slabs whose length is a multiple of 256.
func tcCut(r, s int) (slabs, slabLen int) {
	if s < 2 {
		return 1, r
	}
	l := (r + 256*s - 1) / (256 * s) * 256
	return (r + l - 1) / l, l
}

// tcWork is one goroutine's scratch: the packed chunks of its task's
// operands and its accumulators.
type tcWork struct {
	fa   []float64
	ea   []int32
	finA []bool
	fb   []float64
	eb   []int32
	finB []bool
	fast []bool
	acc  []float32
	sum  []float32 // the slabs folded so far
}

// newTCWork sizes the scratch for tiles of at most ni x nj elements and
// chunks of at most nr terms.
func newTCWork(ni, nj, nr int) *tcWork {
	return &tcWork{
		fa: make([]float64, ni*nr), ea: make([]int32, ni*nr), finA: make([]bool, ni),
		fb: make([]float64, nj*nr), eb: make([]int32, nj*nr), finB: make([]bool, nj),
		fast: make([]bool, nj), acc: make([]float32, ni*nj), sum: make([]float32, ni*nj),
	}
}

// run computes the I x J results and hands them to ep. The chains start at
// start[j] when start is not nil, at the window's current value when
// accumulate is true (dW), and at +0 otherwise.
func (p *tcPlan) run(o Options, ep *epilogue, accumulate bool) {
	work := workFor(p.I, p.J, p.R)
	jTiles := (p.J + tcTileJ - 1) / tcTileJ
	// Row tiles of tcTileI rows amortize the packing of the right operand;
	// shorter ones (down to 8 rows) where that would leave workers idle.
	// The tiling never changes a result: every element is its own chain.
	ti := tcTileI
	for ti > 8 && ((p.I+ti-1)/ti)*jTiles < 2*o.workers(p.I*jTiles, work) {
		ti /= 2
	}
	iTiles := (p.I + ti - 1) / ti
	tasks := iTiles * jTiles
	parallel(tasks, o.workers(tasks, work), func(lo, hi int) {
		w := newTCWork(min(ti, p.I), min(tcTileJ, p.J), min(tcChunkR, (p.R+TCStepK-1)/TCStepK*TCStepK))
		for t := lo; t < hi; t++ {
			i0, j0 := t/jTiles*ti, t%jTiles*tcTileJ
			p.tile(w, ep, accumulate, i0, min(i0+ti, p.I), j0, min(j0+tcTileJ, p.J))
		}
	})
}

// tile computes the results of rows [i0, i1) and columns [j0, j1).
func (p *tcPlan) tile(w *tcWork, ep *epilogue, accumulate bool, i0, i1, j0, j1 int) {
	ni, nj := i1-i0, j1-j0
	acc := w.acc[:ni*nj]
	for ii := range ni {
		row := acc[ii*nj : (ii+1)*nj]
		switch {
		case accumulate:
			ep.load(i0+ii, j0, row)
		case p.start != nil:
			copy(row, p.start[j0:j1])
		default:
			clear(row)
		}
	}
	f := p.m.fast()
	steps := (p.R + TCStepK - 1) / TCStepK
	// sum: the slabs folded so far (nil while in slab 0, unless the fold
	// starts from beta·C: Matmul with alpha != 1).
	var sum []float32
	if ep.preFold {
		sum = w.sum[:ni*nj]
		for ii := range ni {
			ep.load(i0+ii, j0, sum[ii*nj:(ii+1)*nj])
		}
	}
	for s0 := 0; s0 < steps; s0 += tcChunk {
		r0 := s0 * TCStepK
		if r0 > 0 && p.L > 0 && p.L < p.R && r0%p.L == 0 {
			// A slab ends: fold its chain in, start the next from +0.
			first := sum == nil
			sum = w.sum[:ni*nj]
			ep.fold(sum, acc, first)
			clear(acc)
		}
		r1 := min(r0+tcChunkR, p.R)
		n := (min(s0+tcChunk, steps) - s0) * TCStepK // r1-r0 rounded up to whole steps
		tcPackOperands(w.fa, w.ea, w.finA[:ni], &p.a, i0, p.ai, r0, r1, p.ar, n, p.emin)
		tcPackOperands(w.fb, w.eb, w.finB[:nj], &p.b, j0, p.bj, r0, r1, p.br, n, p.emin)
		ns := n / TCStepK
		for ii := range ni {
			row := acc[ii*nj : (ii+1)*nj]
			fast := w.fast[:nj]
			for jj, c := range row {
				// Finite operands and a finite start. A step that overflows
				// gives ±Inf, which every later step keeps (its products are
				// finite): stepRow then takes the element off the fast path.
				fast[jj] = w.finA[ii] && w.finB[jj] && !math.IsInf(float64(c), 0) && c == c
				if !fast[jj] {
					row[jj] = p.slowChain(c, w.fa, w.fb, ii, ni, jj, nj, ns)
				}
			}
			// Step s of every element of the row before step s+1 of any:
			// consecutive steps are independent chains, which the CPU
			// overlaps (one chain alone is bound by its latency).
			for st := range ns {
				oa := (st*ni + ii) * TCStepK
				a, e := (*[TCStepK]float64)(w.fa[oa:]), (*[TCStepK]int32)(w.ea[oa:])
				o := st * nj * TCStepK
				f.stepRow(row, fast, a, e, w.fb[o:o+nj*TCStepK], w.eb[o:o+nj*TCStepK])
			}
		}
	}
	if sum != nil || ep.scaled {
		first := sum == nil
		sum = w.sum[:ni*nj]
		ep.fold(sum, acc, first)
		acc = sum
	}
	for ii := range ni {
		ep.apply(i0+ii, j0, acc[ii*nj:(ii+1)*nj])
	}
}

// slowChain runs the ns packed steps of operands (ii of ni) and (jj of nj)
// through Step's exact arithmetic, for chains that meet a NaN or an
// infinity.
func (p *tcPlan) slowChain(c float32, fa, fb []float64, ii, ni, jj, nj, ns int) float32 {
	var a, b [TCStepK]float32
	for st := range ns {
		oa, ob := (st*ni+ii)*TCStepK, (st*nj+jj)*TCStepK
		for i := range TCStepK {
			a[i], b[i] = float32(fa[oa+i]), float32(fb[ob+i])
		}
		c = p.m.step(int(p.emin), c, &a, &b)
	}
	return c
}

// tcPackOperands packs the chunk [r0, r1) of the nq = len(fin) operands q0,
// q0+1, ... of src, term r of operand q being src[q*qs + r*rs], zero-filled
// from r1-r0 to n terms, step-major: term t of operand q goes to index
// ((t/16)*nq + q)*16 + t%16 of dst and de, so that one step of all operands
// is contiguous. fin[q] reports whether operand q's chunk is all finite. It
// reads src in the order of whichever stride is 1, widening 16-bit patterns
// as it goes.
func tcPackOperands(dst []float64, de []int32, fin []bool, src *mat, q0, qs, r0, r1, rs, n int, emin int32) {
	nq, nr := len(fin), r1-r0
	for q := range nq {
		fin[q] = true
		for t := nr; t < n; t++ {
			o := (t/TCStepK*nq+q)*TCStepK + t%TCStepK
			dst[o], de[o] = 0, tcZeroExp
		}
	}
	if qs == 1 {
		// Operands contiguous: read one term of all of them at a time.
		for t := range nr {
			base := (t/TCStepK*nq)*TCStepK + t%TCStepK
			s0 := q0 + (r0+t)*rs
			if src.h == nil {
				for q, x := range src.f[s0:][:nq] {
					if math.Float32bits(x)&0x7F800000 == 0x7F800000 {
						fin[q] = false
					}
					o := base + q*TCStepK
					dst[o], de[o] = tcPack(x, emin)
				}
				continue
			}
			for q, h := range src.h[s0:][:nq] {
				x := src.d.ToF32(h)
				if math.Float32bits(x)&0x7F800000 == 0x7F800000 {
					fin[q] = false
				}
				o := base + q*TCStepK
				dst[o], de[o] = tcPack(x, emin)
			}
		}
		return
	}
	// Terms contiguous (rs == 1 in every plan): one operand at a time.
	for q := range nq {
		for t := range nr {
			x := src.at((q0+q)*qs + (r0+t)*rs)
			if math.Float32bits(x)&0x7F800000 == 0x7F800000 {
				fin[q] = false
			}
			o := (t/TCStepK*nq+q)*TCStepK + t%TCStepK
			dst[o], de[o] = tcPack(x, emin)
		}
	}
}
