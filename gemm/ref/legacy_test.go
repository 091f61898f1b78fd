package ref

import "math"

// The implementation of the IEEE and tensor-core plans as it was before the
// Options API (commit cebade5), frozen here as the bit reference that the new
// entry points are compared with (TestOptionsMatchLegacy...): its loops,
// tiling, slab folds, upcasts and stores, unchanged but for the names. It
// skips argument checks: the comparisons give it valid calls only. It shares
// with the package only what the change left alone: FMA32 and its inner
// loops, Add32, the 16-bit conversions and the tensor-core step.

// legacy is the old Options: only the worker count.
type legacy struct{ Workers int }

func (o legacy) workers(tasks, work int) int { return Options{Workers: o.Workers}.workers(tasks, work) }

// legacyReduction describes out[i,j] (+)= sum over r of a(i,r) * b(r,j), for
// i < I, j < J, r < R, with a(i,r) = a[i*ai + r*ar] and b(r,j) = b[r*br + j]
// (rows of b contiguous in j). Forward, dX and dW are all instances.
type legacyReduction struct {
	a      []float32
	ai, ar int
	b      []float32
	br     int
	I, J   int
	R      int
}

// run computes out (I x J, row-major, row stride J) by the IEEE plan.
// accumulate false (forward, dX): out = p_0, then out = Add32(out, p_s) for
// s = 1..S-1, then out = Add32(out, bias[j]) if bias is not nil.
// accumulate true (dW): out = Add32(out, p_s) for s = 0..S-1, no bias.
// p_s is slab s's FMA chain from +0 in ascending r.
func (rd *legacyReduction) run(o legacy, out []float32, bias []float32, accumulate bool) {
	jBlocks := (rd.J + blockCols - 1) / blockCols
	tasks := rd.I * jBlocks
	work, ok := mul(rd.I*rd.J, rd.R) // I*J fits: callers checked pairwise products
	if !ok {
		work = int(^uint(0) >> 1)
	}
	parallel(tasks, o.workers(tasks, work), func(lo, hi int) {
		acc := make([]float32, blockCols)
		for t := lo; t < hi; t++ {
			i, jb := t/jBlocks, t%jBlocks
			j0 := jb * blockCols
			j1 := min(j0+blockCols, rd.J)
			rd.block(i, j0, acc[:j1-j0], out[i*rd.J+j0:i*rd.J+j1], bias, accumulate)
		}
	})
}

// aval is a(i, r).
func (rd *legacyReduction) aval(i, r int) float32 { return rd.a[i*rd.ai+r*rd.ar] }

// brow is row r of b from column j0 on (callers use the first len(acc)).
func (rd *legacyReduction) brow(r, j0 int) []float32 { return rd.b[r*rd.br+j0 : (r+1)*rd.br] }

// block computes the elements out[i, j0:j0+len(o)], given as o, with
// scratch accumulators acc of the same length.
func (rd *legacyReduction) block(i, j0 int, acc, o []float32, bias []float32, accumulate bool) {
	for s := range Slabs(rd.R) {
		r0, r1 := s*SlabLen, min((s+1)*SlabLen, rd.R)
		clear(acc) // +0: each slab's chain starts from positive zero
		r := r0
		for ; r+4 <= r1; r += 4 {
			fmaRows4(acc, rd.brow(r, j0), rd.brow(r+1, j0), rd.brow(r+2, j0), rd.brow(r+3, j0),
				rd.aval(i, r), rd.aval(i, r+1), rd.aval(i, r+2), rd.aval(i, r+3))
		}
		for ; r < r1; r++ {
			fmaRow(acc, rd.brow(r, j0), rd.aval(i, r))
		}
		if s == 0 && !accumulate {
			copy(o, acc)
			continue
		}
		for j := range o {
			o[j] = Add32(o[j], acc[j])
		}
	}
	if bias != nil {
		for j := range o {
			o[j] = Add32(o[j], bias[j0+j])
		}
	}
}

// legacyTCPlan describes out[i,j] = the tensor-core chain over r < R of a(i,r) ·
// b(r,j), for i < I, j < J, with a(i,r) = a[i*ai + r*ar] and b(r,j) =
// b[r*br + j*bj]. Forward, dX and dW are all instances.
type legacyTCPlan struct {
	m      TCModel
	emin   int32
	a      []float32
	ai, ar int
	b      []float32
	br, bj int
	I, J   int
	R      int
	L      int // slab length: a multiple of tcChunkR, or >= R for one slab
}

// legacyTCWork is one goroutine's scratch: the packed chunks of its task's
// operands and its accumulators.
type legacyTCWork struct {
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

// newLegacyTCWork sizes the scratch for tiles of at most ni x nj elements and
// chunks of at most nr terms.
func newLegacyTCWork(ni, nj, nr int) *legacyTCWork {
	return &legacyTCWork{
		fa: make([]float64, ni*nr), ea: make([]int32, ni*nr), finA: make([]bool, ni),
		fb: make([]float64, nj*nr), eb: make([]int32, nj*nr), finB: make([]bool, nj),
		fast: make([]bool, nj), acc: make([]float32, ni*nj), sum: make([]float32, ni*nj),
	}
}

// run computes out (I x J, row-major) by the plan. The chains start at
// bias[j] when bias is not nil, at out's current value when accumulate is
// true (dW), and at +0 otherwise.
func (p *legacyTCPlan) run(o legacy, out, bias []float32, accumulate bool) {
	work, ok := mul(p.I*p.J, p.R) // I*J fits: callers checked pairwise products
	if !ok {
		work = int(^uint(0) >> 1)
	}
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
		w := newLegacyTCWork(min(ti, p.I), min(tcTileJ, p.J), min(tcChunkR, (p.R+TCStepK-1)/TCStepK*TCStepK))
		for t := lo; t < hi; t++ {
			i0, j0 := t/jTiles*ti, t%jTiles*tcTileJ
			p.tile(w, out, bias, accumulate, i0, min(i0+ti, p.I), j0, min(j0+tcTileJ, p.J))
		}
	})
}

// tile computes out[i0:i1, j0:j1].
func (p *legacyTCPlan) tile(w *legacyTCWork, out, bias []float32, accumulate bool, i0, i1, j0, j1 int) {
	ni, nj := i1-i0, j1-j0
	acc := w.acc[:ni*nj]
	for ii := range ni {
		for jj := range nj {
			switch {
			case accumulate:
				acc[ii*nj+jj] = out[(i0+ii)*p.J+j0+jj]
			case bias != nil:
				acc[ii*nj+jj] = bias[j0+jj]
			default:
				acc[ii*nj+jj] = 0
			}
		}
	}
	f := p.m.fast()
	steps := (p.R + TCStepK - 1) / TCStepK
	// sum: the slabs folded so far (nil while in slab 0).
	var sum []float32
	for s0 := 0; s0 < steps; s0 += tcChunk {
		r0 := s0 * TCStepK
		if r0 > 0 && p.L > 0 && p.L < p.R && r0%p.L == 0 {
			// A slab ends: fold its chain in, start the next from +0.
			if sum == nil {
				sum = w.sum[:ni*nj]
				copy(sum, acc)
			} else {
				for x := range sum {
					sum[x] = Add32(sum[x], acc[x])
				}
			}
			clear(acc)
		}
		r1 := min(r0+tcChunkR, p.R)
		n := (min(s0+tcChunk, steps) - s0) * TCStepK // r1-r0 rounded up to whole steps
		legacyPackOperands(w.fa, w.ea, w.finA[:ni], p.a, i0, p.ai, r0, r1, p.ar, n, p.emin)
		legacyPackOperands(w.fb, w.eb, w.finB[:nj], p.b, j0, p.bj, r0, r1, p.br, n, p.emin)
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
	if sum != nil {
		for x := range acc {
			acc[x] = Add32(sum[x], acc[x])
		}
	}
	for ii := range ni {
		copy(out[(i0+ii)*p.J+j0:(i0+ii)*p.J+j1], acc[ii*nj:(ii+1)*nj])
	}
}

// slowChain runs the ns packed steps of operands (ii of ni) and (jj of nj)
// through Step's exact arithmetic, for chains that meet a NaN or an
// infinity.
func (p *legacyTCPlan) slowChain(c float32, fa, fb []float64, ii, ni, jj, nj, ns int) float32 {
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

// legacyPackOperands packs the chunk [r0, r1) of the nq = len(fin) operands q0,
// q0+1, ... of src, term r of operand q being src[q*qs + r*rs], zero-filled
// from r1-r0 to n terms, step-major: term t of operand q goes to index
// ((t/16)*nq + q)*16 + t%16 of dst and de, so that one step of all operands
// is contiguous. fin[q] reports whether operand q's chunk is all finite. It
// reads src in the order of whichever stride is 1.
func legacyPackOperands(dst []float64, de []int32, fin []bool, src []float32, q0, qs, r0, r1, rs, n int, emin int32) {
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
			srow := src[q0+(r0+t)*rs:][:nq]
			for q, x := range srow {
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
			x := src[(q0+q)*qs+(r0+t)*rs]
			if math.Float32bits(x)&0x7F800000 == 0x7F800000 {
				fin[q] = false
			}
			o := (t/TCStepK*nq+q)*TCStepK + t%TCStepK
			dst[o], de[o] = tcPack(x, emin)
		}
	}
}

func (o legacy) Forward(dst, x, w, bias []float32, M, K, N int) {
	if len(bias) == 0 {
		bias = nil
	}
	rd := legacyReduction{a: x, ai: K, ar: 1, b: w, br: N, I: M, J: N, R: K}
	rd.run(o, dst[:M*N], bias, false)
}

func (o legacy) DX(dst, dy, w []float32, M, N, K int) {
	wt := make([]float32, N*K)
	for k := range K {
		for n, v := range w[k*N : k*N+N] {
			wt[n*K+k] = v
		}
	}
	rd := legacyReduction{a: dy, ai: N, ar: 1, b: wt, br: K, I: M, J: K, R: N}
	rd.run(o, dst[:M*K], nil, false)
}

func (o legacy) DW(dw, x, dy []float32, M, K, N int) {
	rd := legacyReduction{a: x, ai: 1, ar: K, b: dy, br: N, I: K, J: N, R: M}
	rd.run(o, dw[:K*N], nil, true)
}

func legacyUpcast(d DType, src []uint16) []float32 {
	dst := make([]float32, len(src))
	_ = Upcast(d, dst, src)
	return dst
}

func legacyRound(d DType, dst []uint16, src []float32) { _ = Round(d, dst, src) }

func (o legacy) ForwardTyped(d DType, dst, x, w []uint16, bias []float32, M, K, N int) {
	y := make([]float32, M*N)
	o.Forward(y, legacyUpcast(d, x[:M*K]), legacyUpcast(d, w[:K*N]), bias, M, K, N)
	legacyRound(d, dst, y)
}

func (o legacy) DXTyped(d DType, dst, dy, w []uint16, M, N, K int) {
	dx := make([]float32, M*K)
	o.DX(dx, legacyUpcast(d, dy[:M*N]), legacyUpcast(d, w[:K*N]), M, N, K)
	legacyRound(d, dst, dx)
}

func (o legacy) DWTyped(d DType, dw []float32, x, dy []uint16, M, K, N int) {
	o.DW(dw, legacyUpcast(d, x[:M*K]), legacyUpcast(d, dy[:M*N]), M, K, N)
}

func (o legacy) TCForward(m TCModel, d DType, dst, x, w, bias []float32, M, K, N int) {
	if len(bias) == 0 {
		bias = nil
	}
	_, l := TCSlabs(K, N)
	p := legacyTCPlan{m: m, emin: int32(minNormalExp(d)), a: x, ai: K, ar: 1, b: w, br: N, bj: 1, I: M, J: N, R: K, L: l}
	p.run(o, dst[:M*N], bias, false)
}

func (o legacy) TCDX(m TCModel, d DType, dst, dy, w []float32, M, N, K int) {
	_, l := TCSlabs(N, K)
	p := legacyTCPlan{m: m, emin: int32(minNormalExp(d)), a: dy, ai: N, ar: 1, b: w, br: 1, bj: N, I: M, J: K, R: N, L: l}
	p.run(o, dst[:M*K], nil, false)
}

func (o legacy) TCDW(m TCModel, d DType, dw, x, dy []float32, M, K, N int) {
	_, l := TCDWSlabs(M, K, N)
	p := legacyTCPlan{m: m, emin: int32(minNormalExp(d)), a: x, ai: 1, ar: K, b: dy, br: N, bj: 1, I: K, J: N, R: M, L: l}
	p.run(o, dw[:K*N], nil, true)
}

func (o legacy) TCForwardTyped(m TCModel, d DType, dst, x, w []uint16, bias []float32, M, K, N int) {
	y := make([]float32, M*N)
	o.TCForward(m, d, y, legacyUpcast(d, x[:M*K]), legacyUpcast(d, w[:K*N]), bias, M, K, N)
	legacyRound(d, dst, y)
}

func (o legacy) TCDXTyped(m TCModel, d DType, dst, dy, w []uint16, M, N, K int) {
	dx := make([]float32, M*K)
	o.TCDX(m, d, dx, legacyUpcast(d, dy[:M*N]), legacyUpcast(d, w[:K*N]), M, N, K)
	legacyRound(d, dst, dx)
}

func (o legacy) TCDWTyped(m TCModel, d DType, dw []float32, x, dy []uint16, M, K, N int) {
	o.TCDW(m, d, dw, legacyUpcast(d, x[:M*K]), legacyUpcast(d, dy[:M*N]), M, K, N)
}
