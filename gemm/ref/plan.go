package ref

// SlabLen is the length of one slab of a reduction: the IEEE tiers cut every
// reduction into contiguous slabs of SlabLen terms (the last may be shorter),
// each summed by one ascending FMA chain from +0.
const SlabLen = 256

// Slabs returns the number of slabs of a reduction of length r:
// ceil(r / SlabLen). Slab s covers terms [s*SlabLen, min((s+1)*SlabLen, r)).
func Slabs(r int) int { return (r + SlabLen - 1) / SlabLen }

// blockCols is how many output columns one task owns: its accumulators stay
// in L1 while the reduction streams through rows of b.
const blockCols = 256

// ieeeTileI is the most output rows one task owns: the slab of b it widens
// or transposes once serves all of them.
const ieeeTileI = 32

// mat is a matrix operand as the plans read it, in place: element idx is
// f[idx], or the 16-bit pattern h[idx] of type d widened exactly.
type mat struct {
	f []float32
	h []uint16
	d DType
}

// at returns element idx as a float32.
func (m *mat) at(idx int) float32 {
	if m.h != nil {
		return m.d.ToF32(m.h[idx])
	}
	return m.f[idx]
}

// from returns m without its first off elements.
func (m mat) from(off int) mat {
	if m.h != nil {
		m.h = m.h[off:]
	} else {
		m.f = m.f[off:]
	}
	return m
}

// reduction describes v[i,j] = the IEEE plan's reduction over r < R of
// a(i,r) * b(r,j), for i < I, j < J, with a(i,r) = a[i*ai + r*ar] and b(r,j)
// = b[r*br + j*bj]. Forward, dX and dW, and any window of their outputs,
// are all instances.
type reduction struct {
	a, b   mat
	ai, ar int
	br, bj int
	I, J   int
	R      int
}

// ieeeWork is one goroutine's scratch.
type ieeeWork struct {
	acc []float32 // one slab's chains of one row
	v   []float32 // the tile's folded slabs
	a   []float32 // one row's terms of one slab
	b   []float32 // one slab of b for the tile's columns, widened or transposed
}

// run computes the I x J results and hands them to ep. accumulate false
// (Forward, dX): v = p_0, then v = Add32(v, p_s) for s = 1..S-1.
// accumulate true (dW): v starts at the window's current values and v =
// Add32(v, p_s) for s = 0..S-1. p_s is slab s's FMA chain from +0 in
// ascending r. Tasks are tiles of up to ieeeTileI rows times blockCols
// columns; each element is computed by one goroutine along that fixed order,
// so the tiling and Options.Workers never change a bit.
func (rd *reduction) run(o Options, ep *epilogue, accumulate bool) {
	jBlocks := (rd.J + blockCols - 1) / blockCols
	work := workFor(rd.I, rd.J, rd.R)
	// Shorter row tiles (down to one row) where whole ones would leave
	// workers idle.
	ti := ieeeTileI
	for ti > 1 && ((rd.I+ti-1)/ti)*jBlocks < 2*o.workers(rd.I*jBlocks, work) {
		ti /= 2
	}
	ti = min(ti, rd.I)
	iTiles := (rd.I + ti - 1) / ti
	tasks := iTiles * jBlocks
	inPlace := rd.b.h == nil && rd.bj == 1 // b's rows are float32 slices already
	nj := min(blockCols, rd.J)
	parallel(tasks, o.workers(tasks, work), func(lo, hi int) {
		w := &ieeeWork{acc: make([]float32, nj), v: make([]float32, ti*nj), a: make([]float32, min(SlabLen, rd.R))}
		if !inPlace {
			w.b = make([]float32, min(SlabLen, rd.R)*nj)
		}
		for t := lo; t < hi; t++ {
			i0, j0 := t/jBlocks*ti, t%jBlocks*blockCols
			rd.tile(w, ep, accumulate, inPlace, i0, min(i0+ti, rd.I), j0, min(j0+blockCols, rd.J))
		}
	})
}

// tile computes the results of rows [i0, i1) and columns [j0, j1).
func (rd *reduction) tile(w *ieeeWork, ep *epilogue, accumulate, inPlace bool, i0, i1, j0, j1 int) {
	ni, nj := i1-i0, j1-j0
	v := w.v[:ni*nj]
	if accumulate {
		for ii := range ni {
			ep.load(i0+ii, j0, v[ii*nj:(ii+1)*nj])
		}
	}
	for s := range Slabs(rd.R) {
		r0, r1 := s*SlabLen, min((s+1)*SlabLen, rd.R)
		// Row r of b's slab, columns j0..j1: b[bOff + (r-r0)*bStride:][:nj].
		bs, bOff, bStride := rd.b.f, r0*rd.br+j0, rd.br
		if !inPlace {
			bs, bOff, bStride = w.b, 0, nj
			for r := r0; r < r1; r++ {
				row, base := w.b[(r-r0)*nj:][:nj], r*rd.br+j0*rd.bj
				for jj := range row {
					row[jj] = rd.b.at(base + jj*rd.bj)
				}
			}
		}
		brow := func(r int) []float32 { return bs[bOff+(r-r0)*bStride:][:nj] }
		for ii := range ni {
			i := i0 + ii
			av := w.a[:r1-r0]
			for r := r0; r < r1; r++ {
				av[r-r0] = rd.a.at(i*rd.ai + r*rd.ar)
			}
			acc := w.acc[:nj]
			clear(acc) // +0: each slab's chain starts from positive zero
			r := r0
			for ; r+4 <= r1; r += 4 {
				fmaRows4(acc, brow(r), brow(r+1), brow(r+2), brow(r+3),
					av[r-r0], av[r-r0+1], av[r-r0+2], av[r-r0+3])
			}
			for ; r < r1; r++ {
				fmaRow(acc, brow(r), av[r-r0])
			}
			ep.fold(v[ii*nj:(ii+1)*nj], acc, s == 0 && !accumulate)
		}
	}
	for ii := range ni {
		ep.apply(i0+ii, j0, v[ii*nj:(ii+1)*nj])
	}
}
