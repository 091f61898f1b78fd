package triad

import (
	"fmt"
	"math"
	"runtime"
	"testing"
	"unsafe"

	"github.com/detgemm/detgemm/gemm/ref"
	"github.com/stretchr/testify/require"
)

// maskPoison fills a ReLU mask before a fused forward: a byte the forward
// leaves unwritten reads as NaN (any byte but 0 and 1 does), so the
// gradient that reads it cannot match.
const maskPoison = 0xEE

// setMask stores bytes in the mask m.
func setMask(t *testing.T, m *Tensor, bytes []uint8) {
	t.Helper()
	require.True(t, m.mask)
	require.Len(t, bytes, m.Len())
	switch be := m.be.(type) {
	case *GPU:
		require.NoError(t, be.stream.MemcpyHtoDAsync(m.dev, unsafe.Pointer(unsafe.SliceData(bytes)), uint64(len(bytes))))
		require.NoError(t, be.Synchronize())
		runtime.KeepAlive(bytes)
	default:
		copy(m.u8, bytes)
	}
}

// maskOf returns the bytes of the mask m.
func maskOf(t *testing.T, m *Tensor) []uint8 {
	t.Helper()
	require.True(t, m.mask)
	out := make([]uint8, m.Len())
	switch be := m.be.(type) {
	case *GPU:
		require.NoError(t, be.stream.MemcpyDtoHAsync(unsafe.Pointer(unsafe.SliceData(out)), m.dev, uint64(len(out))))
		require.NoError(t, be.Synchronize())
	default:
		copy(out, m.u8)
	}
	return out
}

// poisoned allocates a tensor on be filled with NaN (0xFFFFFFFF; a 16-bit
// tensor holds 0x7FFF).
func poisoned(t *testing.T, be Backend, d DType, rows, cols int) *Tensor {
	t.Helper()
	v := make([]float32, rows*cols)
	for i := range v {
		v[i] = math.Float32frombits(0xFFFFFFFF)
	}
	return tensorOf(t, be, d, rows, cols, v)
}

// poisonedMask allocates a ReLU mask on be filled with maskPoison.
func poisonedMask(t *testing.T, be Backend, rows, cols int) *Tensor {
	t.Helper()
	m, err := be.allocMask(rows, cols)
	require.NoError(t, err)
	b := make([]uint8, rows*cols)
	for i := range b {
		b[i] = maskPoison
	}
	setMask(t, m, b)
	return m
}

// The shapes of the fused pair: layer 1 is In → H (its forward fused with
// the activation), layer 2 is H → Out (the product that flows back into
// layer 1 fused with the activation's gradient and layer 1's bias
// gradient). M crosses two slab boundaries of the bias gradient.
const fusedM, fusedIn, fusedH, fusedOut = 600, 19, 37, 11

// adversarial returns n values of a rows×cols matrix from seed: randValues,
// with every row r%17 == 3 all zero (so a product's pre-activation there is
// exactly the bias), and NaN, ±Inf and a value beyond f16's range at a few
// places.
func adversarial(seed uint64, rows, cols int) []float32 {
	v := randValues(seed, rows*cols, 1)
	for r := range rows {
		for c := range cols {
			i := r*cols + c
			switch {
			case r%17 == 3:
				v[i] = 0
			case r%53 == 7 && c == 1:
				v[i] = float32(math.NaN())
			case r%59 == 9 && c == 2:
				v[i] = float32(math.Inf(1))
			case r%61 == 10 && c == 0:
				v[i] = float32(math.Inf(-1))
			case r%67 == 12 && c == 3:
				v[i] = 1e5
			}
		}
	}
	return v
}

// adversarialBias is layer 1's bias: on the all-zero rows the
// pre-activation is the bias itself, so these columns give ±0, values that
// round to ±0 (or overflow) in a 16-bit store, NaN and ±Inf; the rest are
// random.
func adversarialBias() []float32 {
	b := randValues(77, fusedH, 0.5)
	copy(b, []float32{float32(math.Copysign(0, -1)), 0, 1e-45, -1e-45, 70000, -70000, 3e-39, -3e-39,
		float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1)), 1e-8, -1e-8})
	return b
}

// fusedPair is a layer pair on one backend with the inputs of the fused
// forward and backward.
type fusedPair struct {
	be        Backend
	tc        tierCase
	l1, l2    *Linear
	x, dy     *Tensor
	dbPrefill []float32
}

func newFusedPair(t *testing.T, be Backend, tc tierCase) *fusedPair {
	t.Helper()
	p := &fusedPair{be: be, tc: tc}
	var err error
	p.l1, err = NewLinear(be, LinearConfig{In: fusedIn, Out: fusedH, Tier: tc.tier, DType: tc.d})
	require.NoError(t, err)
	t.Cleanup(func() { p.l1.Close() })
	p.l2, err = NewLinear(be, LinearConfig{In: fusedH, Out: fusedOut, Tier: tc.tier, DType: tc.d})
	require.NoError(t, err)
	t.Cleanup(func() { p.l2.Close() })
	require.NoError(t, p.l1.SetParams(randValues(71, fusedIn*fusedH, 0.5), adversarialBias()))
	require.NoError(t, p.l2.SetParams(randValues(72, fusedH*fusedOut, 0.5), randValues(73, fusedOut, 0.5)))
	p.x = tensorOf(t, be, tc.d, fusedM, fusedIn, adversarial(74, fusedM, fusedIn))
	p.dy = tensorOf(t, be, tc.d, fusedM, fusedOut, adversarial(75, fusedM, fusedOut))
	// The bias gradient accumulates: start it from values, a −0 among them.
	p.dbPrefill = randValues(76, fusedH, 0.25)
	p.dbPrefill[0] = float32(math.Copysign(0, -1))
	return p
}

// prefilledDB returns layer 1's bias gradient holding dbPrefill.
func (p *fusedPair) prefilledDB(t *testing.T) *Tensor {
	t.Helper()
	require.NoError(t, p.be.Write(p.l1.DB(), p.dbPrefill))
	return p.l1.DB()
}

// fused runs act's fused forward of layer 1 and the fused product back
// into it, every output poisoned first, and returns the outputs' bits:
// "a" (the activation), "aux" (the GELU pre-activation, or for ReLU the
// mask bytes), "dh" (the gradient of layer 1's pre-activation) and "db".
func (p *fusedPair) fused(t *testing.T, act Act) map[string][]uint32 {
	t.Helper()
	be, tc := p.be, p.tc
	a := poisoned(t, be, tc.d, fusedM, fusedH)
	var aux *Tensor
	if act == ActReLU {
		aux = poisonedMask(t, be, fusedM, fusedH)
	} else {
		aux = poisoned(t, be, tc.d, fusedM, fusedH)
	}
	dh := poisoned(t, be, tc.d, fusedM, fusedH)
	db := p.prefilledDB(t)
	require.NoError(t, be.forwardAct(tc.tier, act, p.x, p.l1.Work(), p.l1.B(), a, aux))
	require.NoError(t, be.dxAct(tc.tier, act, p.dy, p.l2.Work(), aux, dh, db))
	out := map[string][]uint32{"a": bitsOf(t, be, a), "dh": bitsOf(t, be, dh), "db": bitsOf(t, be, db)}
	if act == ActReLU {
		for _, b := range maskOf(t, aux) {
			out["aux"] = append(out["aux"], uint32(b))
		}
	} else {
		out["aux"] = bitsOf(t, be, aux)
	}
	return out
}

// unfused runs the operations the MLP ran before the fused epilogues:
// Forward into h, relu(h), then DX, the ReLU gradient from h and the bias
// gradient as separate passes. It returns the same keys as fused, "aux"
// being the mask the stored h implies, and "h" (the pre-activation).
func (p *fusedPair) unfused(t *testing.T) map[string][]uint32 {
	t.Helper()
	be, tc := p.be, p.tc
	h, a := poisoned(t, be, tc.d, fusedM, fusedH), poisoned(t, be, tc.d, fusedM, fusedH)
	da, dh := poisoned(t, be, tc.d, fusedM, fusedH), poisoned(t, be, tc.d, fusedM, fusedH)
	db := p.prefilledDB(t)
	require.NoError(t, be.forward(tc.tier, p.x, p.l1.Work(), p.l1.B(), h))
	require.NoError(t, be.relu(h, a))
	require.NoError(t, be.dx(tc.tier, p.dy, p.l2.Work(), da))
	require.NoError(t, be.reluGrad(h, da, dh))
	require.NoError(t, be.biasGrad(dh, db))
	hv, err := be.Read(h)
	require.NoError(t, err)
	mask := make([]uint32, len(hv))
	for i, v := range hv {
		switch {
		case v > 0:
			mask[i] = uint32(ref.ReluMaskPass)
		case v != v:
			mask[i] = uint32(ref.ReluMaskNaN)
		}
	}
	return map[string][]uint32{"a": bitsOf(t, be, a), "aux": mask, "dh": bitsOf(t, be, dh), "db": bitsOf(t, be, db),
		"h": bitsOf(t, be, h), "dx": bitsOf(t, be, da)}
}

// The fused ReLU (ReluAuxBias forward, DReluBgrad backward) gives the bits
// of the unfused Forward, relu, DX, ReLU gradient and bias gradient, in
// every tier, on adversarial data (±0, values that round to 0 or overflow
// at a 16-bit store, NaN, ±Inf), with every output poisoned first: the
// MLP's ReLU digests do not move. Why: relu(RNE(v)) = RNE(relu(v)) for
// every v (RNE keeps the sign and maps NaN to NaN; a positive v that
// rounds to +0 gives +0 either way); the mask is taken from the stored
// value, which is > 0 exactly where the stored pre-activation is; the
// gradient passes the product's rounded value where the mask passes, as
// the ReLU gradient passes DX's stored value; and the fused bias gradient
// sums the stored gradient in the same 256-row slabs onto the same buffer.
func TestFusedReLUEqualsTheUnfusedOps(t *testing.T) {
	for _, tc := range tierCases {
		t.Run(tc.String(), func(t *testing.T) {
			p := newFusedPair(t, NewCPU(2), tc)
			want, got := p.unfused(t), p.fused(t, ActReLU)
			for _, k := range []string{"a", "aux", "dh", "db"} {
				requireSameBits(t, want[k], got[k], k)
			}
			// The data reaches the cases the argument is about.
			var zeros, nans, pass int
			for _, m := range got["aux"] {
				switch uint8(m) {
				case ref.ReluMaskZero:
					zeros++
				case ref.ReluMaskNaN:
					nans++
				case ref.ReluMaskPass:
					pass++
				}
			}
			require.Positive(t, zeros)
			require.Positive(t, nans)
			require.Positive(t, pass)
		})
	}
}

// The fused GELU stores as its aux the pre-activation Forward stores (every
// tier), and in the f32 tier D = Gelu32(aux), dh = DX's product times
// GeluGrad32(aux), and db the bias-gradient plan over dh: the epilogues'
// definitions, on adversarial data.
func TestFusedGELUIsItsDefinition(t *testing.T) {
	for _, tc := range tierCases {
		t.Run(tc.String(), func(t *testing.T) {
			p := newFusedPair(t, NewCPU(2), tc)
			want, got := p.unfused(t), p.fused(t, ActGELU)
			requireSameBits(t, want["h"], got["aux"], "aux vs Forward's pre-activation")
			if tc.d != F32 {
				return // D and dh round the unrounded product: not computable from the stored ones
			}
			var a, dh []uint32
			dhv := make([]float32, len(want["h"]))
			for i, hb := range want["h"] {
				h := math.Float32frombits(hb)
				a = append(a, canonBits(ref.Gelu32(h)))
				dhv[i] = mul32(math.Float32frombits(want["dx"][i]), ref.GeluGrad32(h))
				dh = append(dh, math.Float32bits(dhv[i]))
			}
			requireSameBits(t, a, got["a"], "a = Gelu32(aux)")
			requireSameBits(t, dh, got["dh"], "dh = dx·GeluGrad32(aux)")
			db := biasGradByHand(dhv, fusedM, fusedH, append([]float32(nil), p.dbPrefill...))
			var dbBits []uint32
			for _, v := range db {
				dbBits = append(dbBits, canonBits(v))
			}
			requireSameBits(t, dbBits, got["db"], "db")
		})
	}
}

// An MLP refuses an activation that is not one of the constants, and
// ParseAct reads exactly what String writes.
func TestMLPValidatesTheActivation(t *testing.T) {
	_, err := NewMLP(NewCPU(1), MLPConfig{Sizes: []int{2, 3, 1}, Tier: tierCases[0].tier, DType: F32, MaxRows: 4, Act: numActs})
	require.ErrorIs(t, err, ErrConfig)
	var e *Error
	require.ErrorAs(t, err, &e)
	require.Equal(t, "Act", e.Arg)
	for a := range numActs {
		got, err := ParseAct(a.String())
		require.NoError(t, err)
		require.Equal(t, a, got)
	}
	for _, s := range []string{"", "ReLU", "tanh", "SwiGLU", "silu", fmt.Sprint(numActs)} {
		_, err := ParseAct(s)
		require.ErrorIs(t, err, ErrConfig, s)
	}
	require.Equal(t, ActReLU, Act(0), "the zero value trains as before Act existed")
	for a := range numActs + 1 {
		require.Equal(t, a == ActGLU || a == ActReGLU || a == ActSwiGLU || a == ActGeGLU, a.Gated(), a.String())
	}
}
