package ref

// The epilogue: how every op of every tier turns the results of its
// reduction into stored outputs, in one place (the CPU twin of the device's
// epilogue). Per output element:
//
//   - the slab results are folded in ascending slab order with Add32
//     (foldSlab): v = p_0, v = v + p_1, ... (IEEE Forward and dX; the
//     tensor-core tier likewise, its p_0 being the chain that started at the
//     bias); dW folds every slab onto the float32 master: v = dW + p_0 + ...;
//   - then epilogue.apply: v = v + bias[j] (one Add32, IEEE Forward with a
//     bias only: the tensor-core chain started at the bias instead); v =
//     act(v); the store, rounding v once, to nearest even, to the output
//     type (dW: float32, unrounded).

// activation is the epilogue's elementwise function, applied after the
// bias and before the store. Only the identity exists; a new activation is
// one case in apply, defined as a fixed sequence of float32 operations that
// the device epilogue performs identically.
type activation uint8

const identity activation = 0

// apply applies a to every element of v, in place.
func (a activation) apply(v []float32) {
	switch a {
	case identity: // v as it is
	default:
		panic("ref: unknown activation") // the package sets only identity
	}
}

// epilogue is where results go: the output window and how they get there.
type epilogue struct {
	bias []float32 // added after the fold (IEEE Forward), from the window's first column; nil: no addition
	act  activation
	out  DType     // the stored type: F32, BF16 or F16
	f    []float32 // the window as float32 values (for a 16-bit out: its exact values), or
	h    []uint16  // as 16-bit patterns
	ld   int       // elements between consecutive rows of the window
}

// apply finishes elements [j0, j0+len(v)) of row i of the output window:
// the bias, the activation and the rounding store. It may change v.
func (e *epilogue) apply(i, j0 int, v []float32) {
	if e.bias != nil {
		b := e.bias[j0 : j0+len(v)]
		for j := range v {
			v[j] = Add32(v[j], b[j])
		}
	}
	e.act.apply(v)
	o := i*e.ld + j0
	switch {
	case e.out == F32:
		copy(e.f[o:o+len(v)], v)
	case e.h != nil:
		h := e.h[o : o+len(v)]
		for j, x := range v {
			h[j] = e.out.FromF32(x)
		}
	default:
		f := e.f[o : o+len(v)]
		for j, x := range v {
			f[j] = e.out.ToF32(e.out.FromF32(x))
		}
	}
}

// load copies elements [j0, j0+len(v)) of row i of a float32 window into v:
// the master values dW's reduction starts from.
func (e *epilogue) load(i, j0 int, v []float32) {
	o := i*e.ld + j0
	copy(v, e.f[o:o+len(v)])
}

// foldSlab folds one slab's results p into the running values v, in slab
// order: v = p for the first slab of a Forward or dX, v = Add32(v, p) for
// every later one (and for every slab of dW, whose v starts as the master).
func foldSlab(v, p []float32, first bool) {
	if first {
		copy(v, p)
		return
	}
	p = p[:len(v)]
	for j := range v {
		v[j] = Add32(v[j], p[j])
	}
}
