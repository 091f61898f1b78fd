package ref

// The epilogue: how every op of every tier turns the results of its
// reduction into stored outputs, in one place (the CPU twin of the device's
// epilogue). Per output element:
//
//   - the slab results are folded in ascending slab order (fold): v = p_0,
//     v = v + p_1, ... with Add32 (IEEE Forward and dX; the tensor-core
//     tier likewise, its p_0 being the chain that started at the bias); dW
//     folds every slab onto the float32 master: v = dW + p_0 + ...; a
//     Matmul with alpha != 1 scales each slab as it folds it, v =
//     FMA32(alpha, p_s, v) (the first, with nothing to fold onto,
//     alpha·p_0), and one with beta != 0 folds onto beta·C (load);
//   - then epilogue.apply: v = v + bias[j] (one Add32, where the bias is
//     added after the fold: IEEE tiers, and Matmul's tensor-core tier with
//     alpha != 1; otherwise the tensor-core chain started at the bias); a
//     GELU aux output stores v, the pre-activation; v = act(v); the store,
//     rounding v once, to nearest even, to the output type (dW: float32,
//     unrounded); a ReLU aux output stores the mask of the stored value.

// activation is the epilogue's elementwise function, applied after the
// bias and before the store. Each is a fixed sequence of float32
// operations that the device epilogue performs identically
// (docs/contract.md, section "Matmul").
type activation uint8

const (
	identity activation = iota
	actRelu             // Relu32
	actGelu             // Gelu32
	actDRelu            // v where the forward's ReLU passed, +0 where it stored +0, NaN where NaN
	actDGelu            // v·GeluGrad32(the forward's pre-activation)
)

// The bytes of a ReLU mask, one per element: what the forward's ReLU
// stored there. Any other byte reads as ReluMaskNaN.
const (
	// ReluMaskZero: the ReLU stored +0 (its input was <= 0, or rounded to
	// 0 at the store); the gradient there is +0.
	ReluMaskZero uint8 = 0
	// ReluMaskPass: the ReLU stored its (positive) input; the gradient
	// passes.
	ReluMaskPass uint8 = 1
	// ReluMaskNaN: the ReLU stored NaN; the gradient there is NaN.
	ReluMaskNaN uint8 = 2
)

// apply applies a to v, elements [j0, j0+len(v)) of row i of the window;
// the backward activations read the forward's aux from in.
func (a activation) apply(v []float32, in *auxBuf, i, j0 int) {
	switch a {
	case identity: // v as it is
	case actRelu:
		for j, x := range v {
			v[j] = Relu32(x)
		}
	case actGelu:
		for j, x := range v {
			v[j] = Gelu32(x)
		}
	case actDRelu:
		m := in.mask[in.index(i, j0):][:len(v)]
		for j := range v {
			switch m[j] {
			case ReluMaskZero:
				v[j] = 0
			case ReluMaskPass:
				v[j] = canon32(v[j])
			default:
				v[j] = canonicalNaN
			}
		}
	case actDGelu:
		o := in.index(i, j0)
		for j, x := range v {
			v[j] = mul32(x, GeluGrad32(in.value(o+j)))
		}
	default:
		panic("ref: unknown activation") // the package sets only the above
	}
}

// auxBuf is an aux matrix of a Matmul: a ReLU mask, or a GELU
// pre-activation as float32 values or as 16-bit patterns of type d.
// Element (i, j) of the window is at (r0+i)*ld + c0+j: an output aux holds
// the window (r0 = c0 = 0), an input aux is the whole matrix.
type auxBuf struct {
	mask   []uint8
	f      []float32
	h      []uint16
	d      DType
	ld     int
	r0, c0 int
}

func (a *auxBuf) index(i, j int) int { return (a.r0+i)*a.ld + a.c0 + j }

// value returns the pre-activation at index o, as a float32.
func (a *auxBuf) value(o int) float32 {
	if a.h != nil {
		return a.d.ToF32(a.h[o])
	}
	return a.f[o]
}

// cSource is where a Matmul's start values come from: C, whole, of type d.
// load gives beta·C[m,n] (the value the fold starts from), or, in the
// tensor-core tier with alpha = 1 (start), the value slab 0's chain starts
// from: beta·C[m,n], or FMA32(beta, C[m,n], bias[n]) with a bias.
type cSource struct {
	c      mat
	ld     int
	beta   float32
	r0, c0 int       // the window's first row and column
	bias   []float32 // start only: the window's bias, or nil
}

func (s *cSource) load(i, j0 int, v []float32) {
	o := (s.r0+i)*s.ld + s.c0 + j0
	for j := range v {
		c := s.c.at(o + j)
		if s.bias != nil {
			v[j] = FMA32(s.beta, c, s.bias[j0+j])
		} else {
			v[j] = mul32(s.beta, c)
		}
	}
}

// epilogue is where results go: the output window and how they get there.
type epilogue struct {
	bias []float32 // added after the fold, from the window's first column; nil: no addition
	act  activation
	out  DType     // the stored type: F32, BF16 or F16
	f    []float32 // the window as float32 values (for a 16-bit out: its exact values), or
	h    []uint16  // as 16-bit patterns
	ld   int       // elements between consecutive rows of the window

	// Matmul only; the zero values give Forward's, dX's and dW's epilogue.
	scaled  bool     // alpha != 1: fold scales every slab by alpha
	alpha   float32  // the scale when scaled
	c       *cSource // where load reads the start values; nil: the window itself (dW's master)
	preFold bool     // the tensor-core fold starts from load's values (chains from +0)
	auxOut  *auxBuf  // GELU: the pre-activation; ReLU: the mask of the stored value
	auxIn   *auxBuf  // DGelu, DRelu: the forward's aux
}

// apply finishes elements [j0, j0+len(v)) of row i of the output window:
// the bias, the aux output, the activation and the rounding store. It may
// change v.
func (e *epilogue) apply(i, j0 int, v []float32) {
	if e.bias != nil {
		b := e.bias[j0 : j0+len(v)]
		for j := range v {
			v[j] = Add32(v[j], b[j])
		}
	}
	if a := e.auxOut; a != nil && a.mask == nil {
		store(a.d, a.f, a.h, a.index(i, j0), v) // the pre-activation, rounded as D is
	}
	e.act.apply(v, e.auxIn, i, j0)
	store(e.out, e.f, e.h, i*e.ld+j0, v)
	if a := e.auxOut; a != nil && a.mask != nil {
		m := a.mask[a.index(i, j0):][:len(v)]
		for j, x := range v {
			if e.out != F32 {
				x = e.out.ToF32(e.out.FromF32(x)) // the stored value
			}
			switch {
			case x > 0:
				m[j] = ReluMaskPass
			case x != x:
				m[j] = ReluMaskNaN
			default:
				m[j] = ReluMaskZero
			}
		}
	}
}

// store writes v at offset o of a matrix of type out, given as float32
// values f (for a 16-bit out: its exact values) or as 16-bit patterns h,
// rounding once, to nearest even, to a 16-bit out.
func store(out DType, f []float32, h []uint16, o int, v []float32) {
	switch {
	case out == F32:
		copy(f[o:o+len(v)], v)
	case h != nil:
		h := h[o : o+len(v)]
		for j, x := range v {
			h[j] = out.FromF32(x)
		}
	default:
		f := f[o : o+len(v)]
		for j, x := range v {
			f[j] = out.ToF32(out.FromF32(x))
		}
	}
}

// load sets v to the start values of elements [j0, j0+len(v)) of row i:
// a Matmul's from C (cSource), dW's the master's current values.
func (e *epilogue) load(i, j0 int, v []float32) {
	if e.c != nil {
		e.c.load(i, j0, v)
		return
	}
	o := i*e.ld + j0
	copy(v, e.f[o:o+len(v)])
}

// fold folds one slab's results p into the running values v, in slab
// order (first: nothing to fold onto yet): foldSlab, or with alpha != 1
// v = alpha·p for the first slab and v = FMA32(alpha, p, v) for every
// later one.
func (e *epilogue) fold(v, p []float32, first bool) {
	if !e.scaled {
		foldSlab(v, p, first)
		return
	}
	p = p[:len(v)]
	if first {
		for j := range v {
			v[j] = mul32(e.alpha, p[j])
		}
		return
	}
	for j := range v {
		v[j] = FMA32(e.alpha, p[j], v[j])
	}
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
