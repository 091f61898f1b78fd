package gemm

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/detgemm/detgemm/cudaload"
	"github.com/detgemm/detgemm/gemm/ref"
	"github.com/stretchr/testify/require"
)

// contractShapes is the suite's list, (a, r, b) read as (M, K, N) for
// Forward and dW and (M, N, K) for dX: ragged edges of every tile and slab
// first (sizes prime, odd, not multiples of 8 or 16, one past a tile), then
// the shapes that only some variants take — few rows, short dW batches, cut
// tensor-core reductions, grids with a split tail or a cut last round.
// Each variant runs the first few of these it fits.
var contractShapes = [][3]int{
	{1, 7, 5}, {3, 17, 5}, {17, 257, 127}, {5, 300, 1}, {2, 4097, 3}, {129, 513, 131}, {7, 24, 33},
	{15, 40, 104}, {1, 136, 9}, {17, 88, 56}, {2, 8, 24}, {300, 31, 64}, {255, 1000, 200},
	{1000, 96, 257}, {130, 200, 72}, {257, 1000, 129}, {96, 48, 520}, {200, 264, 328}, {136, 72, 264},
	{1, 4096, 40}, {16, 4096, 40}, {4, 256, 40}, {3, 264, 1000}, {13, 4096, 40}, {1, 520, 4328},
	{32, 1100, 300}, {96, 64, 300}, {33, 56, 1000}, {640, 300, 384}, {384, 200, 640},
	{5, 8200, 40}, {33, 8200, 136}, {1030, 24, 40}, {3000, 40, 9}, {128, 8200, 264}, {2048, 8200, 1104}, {1500, 9000, 1400}, {1040, 8200, 2056},
}

// contractPerOp is how many fitting shapes of contractShapes a variant runs
// per op.
const contractPerOp = 4

// contractID is each entry point's kernelID, by name.
var contractID = func() map[string]kernelID {
	m := map[string]kernelID{}
	for id, en := range kernelEntries[1:] {
		m[en.Name] = kernelID(id + 1)
	}
	return m
}()

// contractCase is one call the suite runs a variant on.
type contractCase struct {
	op      string
	in, out DType
	a, r, b int
	shift   bool // the first operand one element past a 16-byte boundary
}

func (c contractCase) String() string {
	return fmt.Sprintf("%s/%v-%v/%dx%dx%d/shift=%v", c.op, c.in, c.out, c.a, c.r, c.b, c.shift)
}

// ragged reports whether a dimension is not a multiple of 16.
func (c contractCase) ragged() bool { return c.a%16 != 0 || c.r%16 != 0 || c.b%16 != 0 }

// call is the case's arguments with rows rows (Forward, dX: of the batch;
// dW: the whole batch), the given pointers, for tier.
func (c contractCase) call(tier Tier, rows int, lhs, rhs, out, bias cudaload.DevicePtr) Call {
	switch c.op {
	case "DX":
		return DXArgs{Tier: tier, M: rows, N: c.r, K: c.b, DY: lhs, W: rhs, DX: out, In: c.in, Out: c.out}
	case "DW":
		return DWArgs{Tier: tier, M: c.a, K: c.r, N: c.b, X: lhs, DY: rhs, DW: out, In: c.in}
	}
	return ForwardArgs{Tier: tier, M: rows, K: c.r, N: c.b, X: lhs, W: rhs, Bias: bias, Y: out, In: c.in, Out: c.out}
}

// runsAs reports whether eng, narrowed by v's filter, runs call as v: the
// plan's first launch is of v's kind (and v.fits holds). Explain's recorder
// says what the launch code would enqueue, without launching.
func runsAs(eng *Engine, v variant, call Call) bool {
	p, err := call.build(true)
	if err != nil {
		return false
	}
	eng.mu.Lock()
	defer eng.mu.Unlock()
	pl, err := eng.choose(p, &v.f)
	if err != nil {
		return false
	}
	var x Explanation
	if err := (launcher{e: &eng.device, rec: &x}).plan(&p, &pl); err != nil || len(x.Launches) == 0 {
		return false
	}
	for _, l := range x.Launches {
		if eng.fns[contractID[l.Kernel]] == nil {
			return false // not built for this GPU
		}
	}
	return kernelEntries[contractID[x.Launches[0].Kernel]].Kind == v.kind && (v.fits == nil || v.fits(pl))
}

// probe is a call's pointers as the suite's uploads place them: 256-byte
// aligned, the first operand shifted one element where the case says.
func (c contractCase) probe(tier Tier, rows int) Call {
	lhs := cudaload.DevicePtr(1 << 40)
	if c.shift {
		lhs += cudaload.DevicePtr(c.in.Size())
	}
	return c.call(tier, rows, lhs, 2<<40, 3<<40, 4<<40)
}

// contractCases is the cases v runs on eng: for each op, the first
// contractPerOp shapes it fits, the dtype pair rotating over the tier's,
// aligned and shifted.
func contractCases(eng *Engine, v variant) []contractCase {
	types := [][2]DType{{F32, F32}, {BF16, BF16}, {F16, F32}, {BF16, F32}, {F16, F16}}
	if v.tc {
		types = [][2]DType{{BF16, BF16}, {F16, F32}, {BF16, F32}, {F16, F16}}
	}
	var out []contractCase
	for _, op := range []string{"Forward", "DX", "DW"} {
		n := 0
		for i, s := range contractShapes {
			if n == contractPerOp {
				break
			}
			ty := types[i%len(types)]
			if op == "DW" {
				if s[0]*s[1]*s[2] > contractRefRows {
					continue // the reference of a dW cannot be sampled by rows
				}
				ty[1] = F32
			}
			took := false
			for _, shift := range []bool{false, true} {
				c := contractCase{op: op, in: ty[0], out: ty[1], a: s[0], r: s[1], b: s[2], shift: shift}
				if runsAs(eng, v, c.probe(contractTier(v, c.in), c.a)) {
					out = append(out, c)
					took = true
				}
			}
			if took {
				n++
			}
		}
	}
	return out
}

// contractTier is the tier a case of v runs in.
func contractTier(v variant, in DType) Tier {
	switch {
	case v.tc:
		return TierTensorCore
	case in == F32:
		return TierF32
	}
	return TierTyped
}

// contractRef computes the case's output on the CPU over the exact input
// values: gemm/ref's plan for the IEEE tiers, its model of the GPU's
// tensor cores for the tensor-core tier. dw0 is dW's starting value.
func contractRef(t *testing.T, v variant, m ref.TCModel, c contractCase, rows int, lhs, rhs, bias, dw0 []float32) []float32 {
	t.Helper()
	switch c.op {
	case "Forward":
		y := make([]float32, rows*c.b)
		if v.tc {
			require.NoError(t, refTC(m, c.in).Forward(ref.Values(y), ref.Values(lhs), ref.Values(rhs), bias, rows, c.r, c.b))
		} else {
			require.NoError(t, refIEEE.Forward(ref.Values(y), ref.Values(lhs), ref.Values(rhs), bias, rows, c.r, c.b))
		}
		return y
	case "DX":
		dx := make([]float32, rows*c.b)
		if v.tc {
			require.NoError(t, refTC(m, c.in).DX(ref.Values(dx), ref.Values(lhs), ref.Values(rhs), rows, c.r, c.b))
		} else {
			require.NoError(t, refIEEE.DX(ref.Values(dx), ref.Values(lhs), ref.Values(rhs), rows, c.r, c.b))
		}
		return dx
	}
	dw := append([]float32(nil), dw0...)
	if v.tc {
		require.NoError(t, refTC(m, c.in).DW(dw, ref.Values(lhs), ref.Values(rhs), c.a, c.r, c.b))
	} else {
		require.NoError(t, refIEEE.DW(dw, ref.Values(lhs), ref.Values(rhs), c.a, c.r, c.b))
	}
	return dw
}

// contractSpecials are the values the specials check scatters: NaN, ±Inf,
// signed zeros, subnormals of f32 and of the 16-bit types, and magnitudes
// far apart (exponent spread); cancellation comes from the ± pairs.
var contractSpecials = []float32{
	float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.Copysign(0, -1)), 0,
	1e-40, -1e-40, 6e-8, -6e-8, 1e-39, 3e38, -3e38, 1e20, -1e20, 1e-20, 65504, -65504, 1, -1,
}

// withSpecials is o with a few of its values replaced by contractSpecials
// (rounded to o's type, as the device reads them).
func withSpecials(r *rand.Rand, o operand, n int) operand {
	v := append([]float32(nil), o.values...)
	for range n {
		v[r.IntN(len(v))] = contractSpecials[r.IntN(len(contractSpecials))]
	}
	return fromValues(o.d, v)
}

// TestContractEveryVariant is the shared contract suite: every registered
// variant (registry.go's variants) usable on this GPU runs, forced through
// the planner's filter, on the shapes of contractShapes it fits — at least
// three, one with a ragged edge — and must give gemm/ref's bits (its
// tensor-core model for the tensor-core tier) with the output poisoned
// before each run; the same bits run to run; for Forward and dX the same
// bits for a row computed alone, for the rows in two chunks, and for the
// rows followed by NaN padding rows; and the reference's bits with NaN,
// Inf, subnormals, exponent spreads and cancellation in the inputs. A new
// variant is verified by adding its description.
func TestContractEveryVariant(t *testing.T) {
	eng, ctx := gpuEngine(t)
	tcModel := ref.Hopper
	tcVerified := eng.Arch().Major == 9 && eng.Arch().Minor == 0
	r := newRand(t)
	ran := 0
	for _, v := range variants {
		t.Run(v.name, func(t *testing.T) {
			if v.tc && !tcVerified {
				t.Skipf("the tensor-core model is verified for sm_90; this GPU is %v", eng.Arch())
			}
			if !variantLoaded(eng, v) {
				t.Skipf("%s cannot occur on this %v GPU", v.name, eng.Arch())
			}
			cases := contractCases(eng, v)
			shapes, ragged := map[[4]int]bool{}, false
			for _, c := range cases {
				shapes[[4]int{len(c.op), c.a, c.r, c.b}] = true
				ragged = ragged || c.ragged()
			}
			require.GreaterOrEqual(t, len(shapes), 3, "%s fits too few shapes of contractShapes: %v", v.name, cases)
			require.True(t, ragged, "%s fits no shape with a ragged edge: %v", v.name, cases)
			ran++
			for i, c := range cases {
				t.Run(c.String(), func(t *testing.T) {
					contractCheck(t, eng, ctx, r, v, tcModel, c, i == 0 || i == len(cases)-1)
				})
			}
		})
	}
	require.Positive(t, ran, "no variant ran")
}

// variantLoaded reports whether v can occur on eng: eng loaded an entry
// point of v's kind (and tensor-core tile), and v.on allows it.
func variantLoaded(eng *Engine, v variant) bool {
	if v.on != nil && !v.on(eng) {
		return false
	}
	for id, en := range kernelEntries {
		if en.Kind == v.kind && eng.fns[id] != nil && (!v.tc || tileOf(en.Tile) == v.f.tc.tile) {
			return true
		}
	}
	return false
}

// contractRefRows is how many multiply-adds the suite lets the CPU
// reference spend on one output; past it, Forward and dX are checked on
// sampled rows (a row's bits depend on its own inputs only).
const contractRefRows = 50_000_000

// contractCheck runs case c of variant v and checks every property of the
// suite; specials adds the specials check.
func contractCheck(t *testing.T, eng *Engine, ctx *cudaload.Context, r *rand.Rand, v variant, m ref.TCModel, c contractCase, specials bool) {
	tier := contractTier(v, c.in)
	fe := forced(eng, v.f)
	// Forward: X [M,K], W [K,N], Y [M,N]; dX: dY [M,N], W [K,N], dX [M,K];
	// dW: X [M,K], dY [M,N], dW [K,N] — (M, K, N) or (M, N, K) = (a, r, b).
	lhsCols, rhsN, outRows, outCols := c.r, c.r*c.b, c.a, c.b
	if c.op == "DW" {
		rhsN, outRows = c.a*c.b, c.r
	}
	shift := 0
	if c.shift {
		shift = 1
	}
	lhs, rhs := randomOperand(r, c.in, c.a*lhsCols), randomOperand(r, c.in, rhsN)
	bias, dw0 := randomOperand(r, F32, c.b), randomOperand(r, F32, c.r*c.b)
	rowsOf := func(o operand, first, n int) operand {
		return fromValues(o.d, append([]float32(nil), o.values[first*lhsCols:(first+n)*lhsCols]...))
	}
	// run enqueues the case on eng over x (rows rows) and w into a poisoned
	// output (dW: a fresh copy of dw0) and returns the output's bits.
	run := func(what string, x, w operand, rows int, eng caller) []uint32 {
		t.Helper()
		lhsP, rhsP, biasP := uploadAt(t, ctx, x, shift), upload(t, ctx, w), upload(t, ctx, bias)
		n := rows * outCols
		var outP cudaload.DevicePtr
		if c.op == "DW" {
			n, outP = outRows*outCols, upload(t, ctx, dw0)
		} else {
			outP = poisoned(t, ctx, uint64(n*c.out.Size()))
		}
		require.NoError(t, enqueue(t, eng, c.call(tier, rows, lhsP, rhsP, outP, biasP)), what)
		return readBits(t, eng, ctx, outP, c.out, n)
	}
	// check compares got with the reference over x and w: every row, or
	// where that costs more than contractRefRows, the first, middle and
	// last rows (Forward, dX).
	check := func(what string, x, w operand, got []uint32) {
		t.Helper()
		if c.op == "DW" || c.a*c.r*c.b <= contractRefRows {
			want := contractRef(t, v, m, c, c.a, x.values, w.values, bias.values, dw0.values)
			requireSameBitsClassified(t, c.out, refBits(c.out, want), got, outCols, what)
			return
		}
		for _, i := range []int{0, c.a / 2, c.a - 1} {
			want := contractRef(t, v, m, c, 1, rowsOf(x, i, 1).values, w.values, bias.values, nil)
			requireSameBitsClassified(t, c.out, refBits(c.out, want), got[i*outCols:(i+1)*outCols], outCols, fmt.Sprintf("%s, row %d", what, i))
		}
	}

	got := run("all rows", lhs, rhs, c.a, fe)
	check("all rows vs reference", lhs, rhs, got)
	requireSameBits(t, got, run("again", lhs, rhs, c.a, fe), outCols, "run to run")

	if c.op != "DW" {
		// forcedOr is v where it fits a call of rows rows, else the free
		// planner: the bits must not depend on which.
		forcedOr := func(rows int) caller {
			if runsAs(eng, v, c.probe(tier, rows)) {
				return fe
			}
			return eng
		}
		if c.a > 1 {
			last := run("last row alone", rowsOf(lhs, c.a-1, 1), rhs, 1, forcedOr(1))
			requireSameBits(t, got[(c.a-1)*outCols:], last, outCols, "the last row alone")
			h := c.a / 2
			head := run("head chunk", rowsOf(lhs, 0, h), rhs, h, forcedOr(h))
			tail := run("tail chunk", rowsOf(lhs, h, c.a-h), rhs, c.a-h, forcedOr(c.a-h))
			requireSameBits(t, got, append(head, tail...), outCols, "two chunks")
		}
		const pad = 3
		padded := append(append([]float32(nil), lhs.values...), make([]float32, pad*lhsCols)...)
		for i := c.a * lhsCols; i < len(padded); i++ {
			padded[i] = float32(math.NaN())
		}
		withPad := run("padding rows", fromValues(c.in, padded), rhs, c.a+pad, forcedOr(c.a+pad))
		requireSameBits(t, got, withPad[:c.a*outCols], outCols, "rows followed by NaN padding rows")
	}

	if specials {
		x, w := withSpecials(r, lhs, 1+len(lhs.values)/50), withSpecials(r, rhs, 1+len(rhs.values)/50)
		check("specials vs reference", x, w, run("specials", x, w, c.a, fe))
	}
}
