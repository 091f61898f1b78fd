package ref

// Bias gradients: sums over a reduction that is, in training, the batch
// (DReluBgrad, DGeluBgrad: the rows of D; BgradA, BgradB: the k of a
// weight-gradient product). Every tier sums them the same way, with IEEE
// float32 additions, in slabs of SlabLen terms:
//
//	p_s = +0
//	for r in slab s, ascending:  p_s = Add32(p_s, x_r)
//	g = Add32(g, p_s)   for s = 0 .. S-1, onto the buffer's current g
//
// So calls over consecutive micro-batches whose boundaries fall on
// multiples of SlabLen rows, accumulating into the same buffer in order,
// give the bits of one call over the whole batch (as dW's IEEE plan does);
// a boundary inside a slab is a different sum.

// biasGrad accumulates into every g[q] the slab sum of at(q, r) over r <
// R, spreading the elements q over goroutines (an element is one fixed
// chain, so Options.Workers never changes a bit).
func biasGrad(o Options, g []float32, R int, at func(q, r int) float32) {
	tasks := len(g)
	parallel(tasks, o.workers(tasks, workFor(tasks, 1, R)), func(lo, hi int) {
		for q := lo; q < hi; q++ {
			v := g[q]
			for s0 := 0; s0 < R; s0 += SlabLen {
				p := float32(0)
				for r := s0; r < min(s0+SlabLen, R); r++ {
					p = Add32(p, at(q, r))
				}
				v = Add32(v, p)
			}
			g[q] = v
		}
	})
}
