package ref

import (
	"math"
)

// Sparse24StepK is the reduction extent of one sparse tensor-core step:
// mma.sp.m16n8k32 consumes 32 positions of K, of which a 2:4-sparse weight
// keeps 16, at a time.
const Sparse24StepK = 32

// Sparse24Request is one 2:4-sparse forward,
//
//	Y[M,N] = epilogue(X[M,K] · W[K,N] (+ bias)),
//
// with W 2:4-sparse along K and given compressed (see the package's 2:4
// format: Values N × K/2 of the input type, the kept elements of column n
// of W in ascending order; Meta N × ceil(K/32) words, a nibble of two 2-bit
// positions a group of 4). X is row-major with leading dimension LDX (0:
// K); Y, the aux and the ReLU mask row-major with LDY and LDAux (0: N),
// holding the window's rows (Options.Rows) from their first row.
type Sparse24Request struct {
	M, N, K int
	X       Operand
	LDX     int
	Values  []uint16
	Meta    []uint32
	Y       Operand
	LDY     int
	// Bias, per column n (length N), for the epilogues with Bias in the
	// name: the chain of column n starts at bias[n].
	Bias []float32
	// Epilogue is Default, Bias, Relu, ReluBias, ReluAux, ReluAuxBias,
	// Gelu, GeluBias, GeluAux or GeluAuxBias (Matmul's forward ones).
	Epilogue Epilogue
	// Aux receives the GELU pre-activation (GeluAux, GeluAuxBias), of the
	// output type; ReluMask the ReLU mask (ReluAux, ReluAuxBias), a byte
	// an element.
	Aux      Operand
	ReluMask []uint8
	LDAux    int
}

// sp24Epilogues are the epilogues a sparse forward takes, with their
// activation, bias and aux.
var sp24Epilogues = map[Epilogue]struct {
	act       activation
	bias, aux bool
}{
	Default: {identity, false, false}, Bias: {identity, true, false},
	Relu: {actRelu, false, false}, ReluBias: {actRelu, true, false},
	ReluAux: {actRelu, false, true}, ReluAuxBias: {actRelu, true, true},
	Gelu: {actGelu, false, false}, GeluBias: {actGelu, true, false},
	GeluAux: {actGelu, false, true}, GeluAuxBias: {actGelu, true, true},
}

// Sparse24Forward computes the window of rows (o.Rows) of r's product in
// the tensor-core tier of o (Tier TensorCore, In BF16 or F16, Out In or
// F32, Model the architecture's addition model). Per element (m, n):
// the accumulator starts at bias[n] (or +0); for every step s of 32
// positions of K, ascending, the 16 products X[m, 4q+p]·w of the kept
// elements w (positions p) of the step's 8 groups q (groups past K/4 give
// none) are added to it by one o.Model.Step; then the epilogue's
// activation (a GELU aux stores its input, rounded as Y is), one
// round-to-nearest-even to Out, and a ReLU mask of the stored value. K must
// be a multiple of 16. The bits depend only on the model, the types and the
// data: never on M, the window or Workers. Errors are *ArgError (ErrDim,
// ErrLeadingDim, ErrLength, ErrDType, ErrTier, ErrTCModel, ErrRange,
// ErrInexact, ErrOperand, ErrEpilogue, ErrMeta24), before anything is written.
func (o Options) Sparse24Forward(r Sparse24Request) error {
	const op = "Sparse24Forward"
	if o.Tier != TensorCore {
		return argErr(op, "Tier", ErrTier, "%v: the sparse forward runs on tensor cores only (TensorCore)", o.Tier)
	}
	if !o.In.Half() {
		return argErr(op, "In", ErrDType, "%v: want BF16 or F16", o.In)
	}
	out := o.Out
	if out == 0 {
		out = o.In
	}
	if out != F32 && out != o.In {
		return argErr(op, "Out", ErrDType, "%v: want F32 or the input type %v", out, o.In)
	}
	if err := o.Model.Valid(); err != nil {
		return err
	}
	spec, ok := sp24Epilogues[r.Epilogue]
	if !ok {
		return argErr(op, "Epilogue", ErrEpilogue, "%v: the sparse forward takes Default, Bias, Relu, ReluBias, ReluAux, ReluAuxBias, Gelu, GeluBias, GeluAux or GeluAuxBias", r.Epilogue)
	}
	if err := checkDims(op, "MNK", r.M, r.N, r.K); err != nil {
		return err
	}
	if r.K%16 != 0 {
		return argErr(op, "K", ErrDim, "%d is not a multiple of 16 (the compressed rows are whole 16-byte chunks)", r.K)
	}
	if !o.Cols.All() {
		return argErr(op, "Cols", ErrRange, "the sparse forward computes whole rows; leave Cols zero")
	}
	r0, r1, err := o.Rows.bounds(op, "Rows", r.M)
	if err != nil {
		return err
	}
	rows := r1 - r0
	dx, err := resolveLD(op, "LDX", r.LDX, r.M, r.K)
	if err != nil {
		return err
	}
	dy, err := resolveLD(op, "LDY", r.LDY, rows, r.N)
	if err != nil {
		return err
	}
	if err := checkForm(op, "X", r.X, o.In); err != nil {
		return err
	}
	if err := checkForm(op, "Y", r.Y, out); err != nil {
		return err
	}
	steps := (r.K + Sparse24StepK - 1) / Sparse24StepK
	half := r.K / 2
	type need struct {
		arg       string
		have, min int
	}
	needs := []need{{"X", r.X.len(), dx.extent()}, {"Values", len(r.Values), r.N * half},
		{"Meta", len(r.Meta), r.N * steps}, {"Y", r.Y.len(), dy.extent()}}
	if spec.bias {
		needs = append(needs, need{"Bias", len(r.Bias), r.N})
	} else if r.Bias != nil {
		return argErr(op, "Bias", ErrOperand, "%v takes no bias; pass nil", r.Epilogue)
	}
	var da matDims
	if spec.aux {
		if da, err = resolveLD(op, "LDAux", r.LDAux, rows, r.N); err != nil {
			return err
		}
		if spec.act == actRelu {
			needs = append(needs, need{"ReluMask", len(r.ReluMask), da.extent()})
		} else {
			if err := checkForm(op, "Aux", r.Aux, out); err != nil {
				return err
			}
			needs = append(needs, need{"Aux", r.Aux.len(), da.extent()})
		}
	} else if r.Aux.len() != 0 || r.ReluMask != nil || r.LDAux != 0 {
		return argErr(op, "Aux", ErrOperand, "%v writes no aux; leave Aux, ReluMask and LDAux zero", r.Epilogue)
	}
	if spec.aux && spec.act == actRelu && r.Aux.len() != 0 {
		return argErr(op, "Aux", ErrOperand, "%v writes a ReluMask, not an Aux", r.Epilogue)
	}
	if spec.aux && spec.act == actGelu && r.ReluMask != nil {
		return argErr(op, "ReluMask", ErrOperand, "%v writes an Aux, not a ReluMask", r.Epilogue)
	}
	for _, n := range needs {
		if n.have < n.min {
			return argErr(op, n.arg, ErrLength, "%d elements, want at least %d", n.have, n.min)
		}
	}
	if err := checkExact(op, "X", o.In, r.X, r0, r1, dx.ld, 0, r.K); err != nil {
		return err
	}
	if err := checkMeta24(op, "Meta", r.Meta, r.K, r.N); err != nil {
		return err
	}

	ep := epilogue{act: spec.act, out: out, f: r.Y.Values, h: r.Y.Bits, ld: dy.ld}
	if spec.aux {
		a := &auxBuf{d: out, ld: da.ld}
		if spec.act == actRelu {
			a.mask = r.ReluMask
		} else {
			a.f, a.h = r.Aux.Values, r.Aux.Bits
		}
		ep.auxOut = a
	}
	x := r.X.mat(o.In)
	emin := minNormalExp(o.In)
	fast := o.Model.fast()
	const rowBlock = 16
	tasks := (rows + rowBlock - 1) / rowBlock
	parallel(tasks, o.workers(tasks, rows*r.N*half), func(lo, hi int) {
		sk := make([]int32, steps*TCStepK) // the column's kept positions of K
		wv := make([]float32, steps*TCStepK)
		fb := make([]float64, steps*TCStepK)
		eb := make([]int32, steps*TCStepK)
		vals := make([][]float32, rowBlock)
		for i := range vals {
			vals[i] = make([]float32, r.N)
		}
		for t := lo; t < hi; t++ {
			i0, i1 := t*rowBlock, min((t+1)*rowBlock, rows)
			for n := 0; n < r.N; n++ {
				col := r.Values[n*half:]
				finiteW := true
				for s := 0; s < steps; s++ {
					w := r.Meta[n*steps+s]
					for j := 0; j < TCStepK; j++ {
						g := s*8 + j/2
						at := s*TCStepK + j
						if 4*g >= r.K {
							sk[at], wv[at] = -1, 0
						} else {
							nib := w >> (4 * (j / 2)) & 0xF
							p := int32(nib & 3)
							if j&1 == 1 {
								p = int32(nib >> 2 & 3)
							}
							sk[at], wv[at] = int32(4*g)+p, o.In.ToF32(col[2*g+(j&1)])
						}
						fb[at], eb[at] = tcPack(wv[at], int32(emin))
						finiteW = finiteW && !isInfNaN(wv[at])
					}
				}
				for i := i0; i < i1; i++ {
					m := r0 + i
					c := float32(0)
					if spec.bias {
						c = r.Bias[n]
					}
					var fa [TCStepK]float64
					var ea [TCStepK]int32
					var a, b [TCStepK]float32
					for s := 0; s < steps; s++ {
						finite := finiteW && !isInfNaN(c)
						for j := 0; j < TCStepK; j++ {
							if k := sk[s*TCStepK+j]; k < 0 {
								a[j] = 0
							} else {
								a[j] = x.at(m*dx.ld + int(k))
							}
							finite = finite && !isInfNaN(a[j])
						}
						if finite {
							for j := range a {
								fa[j], ea[j] = tcPack(a[j], int32(emin))
							}
							c = fast.step(c, &fa, (*[TCStepK]float64)(fb[s*TCStepK:]), &ea, (*[TCStepK]int32)(eb[s*TCStepK:]))
						} else {
							copy(b[:], wv[s*TCStepK:])
							c = o.Model.step(emin, c, &a, &b)
						}
					}
					vals[i-i0][n] = c
				}
			}
			for i := i0; i < i1; i++ {
				ep.apply(i, 0, vals[i-i0])
			}
		}
	})
	return nil
}

func isInfNaN(x float32) bool { return math.Float32bits(x)&0x7F800000 == 0x7F800000 }
