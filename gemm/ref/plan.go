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

// reduction describes out[i,j] (+)= sum over r of a(i,r) * b(r,j), for
// i < I, j < J, r < R, with a(i,r) = a[i*ai + r*ar] and b(r,j) = b[r*br + j]
// (rows of b contiguous in j). Forward, dX and dW are all instances.
type reduction struct {
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
func (rd *reduction) run(o Options, out []float32, bias []float32, accumulate bool) {
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
func (rd *reduction) aval(i, r int) float32 { return rd.a[i*rd.ai+r*rd.ar] }

// brow is row r of b from column j0 on (callers use the first len(acc)).
func (rd *reduction) brow(r, j0 int) []float32 { return rd.b[r*rd.br+j0 : (r+1)*rd.br] }

// block computes the elements out[i, j0:j0+len(o)], given as o, with
// scratch accumulators acc of the same length.
func (rd *reduction) block(i, j0 int, acc, o []float32, bias []float32, accumulate bool) {
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

// Forward computes Y[M,N] = X[M,K] @ W[K,N] (+ bias[N]) by the f32 plan, with
// Options' parallelism. See the package documentation for the plan.
func (o Options) Forward(dst, x, w, bias []float32, M, K, N int) error {
	const op = "Forward"
	if err := checkForward(op, len(dst), len(x), len(w), len(bias), M, K, N); err != nil {
		return err
	}
	if len(bias) == 0 {
		bias = nil
	}
	rd := reduction{a: x, ai: K, ar: 1, b: w, br: N, I: M, J: N, R: K}
	rd.run(o, dst[:M*N], bias, false)
	return nil
}

// DX computes dX[M,K] = dY[M,N] @ W[K,N]ᵀ by the f32 plan (reduction over
// n), with Options' parallelism. See the package documentation.
func (o Options) DX(dst, dy, w []float32, M, N, K int) error {
	const op = "DX"
	if err := checkDX(op, len(dst), len(dy), len(w), M, N, K); err != nil {
		return err
	}
	// Stream rows of Wᵀ (contiguous in k) through the accumulators.
	wt := make([]float32, N*K)
	for k := range K {
		for n, v := range w[k*N : k*N+N] {
			wt[n*K+k] = v
		}
	}
	rd := reduction{a: dy, ai: N, ar: 1, b: wt, br: K, I: M, J: K, R: N}
	rd.run(o, dst[:M*K], nil, false)
	return nil
}

// DW accumulates dW[K,N] += X[M,K]ᵀ @ dY[M,N] in place by the f32 plan
// (reduction over m, slab partials added to the old dW in order), with
// Options' parallelism. See the package documentation.
func (o Options) DW(dw, x, dy []float32, M, K, N int) error {
	const op = "DW"
	if err := checkDW(op, len(dw), len(x), len(dy), M, K, N); err != nil {
		return err
	}
	rd := reduction{a: x, ai: 1, ar: K, b: dy, br: N, I: K, J: N, R: M}
	rd.run(o, dw[:K*N], nil, true)
	return nil
}

// Forward computes Y[M,N] = X[M,K] @ W[K,N] (+ bias[N]) by the f32 plan on
// all CPUs. All matrices are row-major; dst receives M*N values. A bias of
// length 0 (nil included) means no bias, which is not the same as a zero
// bias: adding +0 would turn a -0 result into +0. dst must not overlap the
// inputs. Slices longer than the shape needs are fine (the prefix is used).
func Forward(dst, x, w, bias []float32, M, K, N int) error {
	return Options{}.Forward(dst, x, w, bias, M, K, N)
}

// DX computes dX[M,K] = dY[M,N] @ W[K,N]ᵀ by the f32 plan on all CPUs: the
// reduction runs over n. dst receives M*K values and must not overlap the
// inputs.
func DX(dst, dy, w []float32, M, N, K int) error {
	return Options{}.DX(dst, dy, w, M, N, K)
}

// DW accumulates dW[K,N] += X[M,K]ᵀ @ dY[M,N] into the float32 master buffer
// dw by the f32 plan on all CPUs: the reduction runs over m, in slabs of
// SlabLen rows, and each slab's partial is added to dw in order. Calls over
// consecutive micro-batches whose boundaries fall on multiples of SlabLen
// rows give the same bits as one call over the whole batch. dw must not
// overlap the inputs.
func DW(dw, x, dy []float32, M, K, N int) error {
	return Options{}.DW(dw, x, dy, M, K, N)
}

func checkForward(op string, ldst, lx, lw, lbias, M, K, N int) error {
	if err := checkDims(op, "MKN", M, K, N); err != nil {
		return err
	}
	if err := checkLen(op, "x", lx, M*K, "M*K"); err != nil {
		return err
	}
	if err := checkLen(op, "w", lw, K*N, "K*N"); err != nil {
		return err
	}
	if lbias != 0 {
		if err := checkLen(op, "bias", lbias, N, "N"); err != nil {
			return err
		}
	}
	return checkLen(op, "dst", ldst, M*N, "M*N")
}

func checkDX(op string, ldst, ldy, lw, M, N, K int) error {
	if err := checkDims(op, "MNK", M, N, K); err != nil {
		return err
	}
	if err := checkLen(op, "dy", ldy, M*N, "M*N"); err != nil {
		return err
	}
	if err := checkLen(op, "w", lw, K*N, "K*N"); err != nil {
		return err
	}
	return checkLen(op, "dst", ldst, M*K, "M*K")
}

func checkDW(op string, ldw, lx, ldy, M, K, N int) error {
	if err := checkDims(op, "MKN", M, K, N); err != nil {
		return err
	}
	if err := checkLen(op, "x", lx, M*K, "M*K"); err != nil {
		return err
	}
	if err := checkLen(op, "dy", ldy, M*N, "M*N"); err != nil {
		return err
	}
	return checkLen(op, "dw", ldw, K*N, "K*N")
}
