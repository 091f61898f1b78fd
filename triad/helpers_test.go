package triad

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/detgemm/detgemm/gemm"
	"github.com/stretchr/testify/require"
)

// tierCase is a tier with its activation dtype.
type tierCase struct {
	tier gemm.Tier
	d    DType
}

func (c tierCase) String() string { return c.tier.String() + "/" + c.d.String() }

var tierCases = []tierCase{{gemm.TierF32, F32}, {gemm.TierTyped, BF16}, {gemm.TierTyped, F16}, {gemm.TierTensorCore, BF16}, {gemm.TierTensorCore, F16}}

// randValues draws n values in [-scale, scale) with a spread of binades and
// some exact zeros of both signs, from a fixed seed.
func randValues(seed uint64, n int, scale float32) []float32 {
	r := rand.New(rand.NewPCG(seed, 0xabcdef))
	v := make([]float32, n)
	for i := range v {
		x := float32(r.Float64()*2-1) * scale
		switch {
		case i%13 == 5:
			x *= float32(math.Ldexp(1, r.IntN(16)-8))
		case i%97 == 11:
			x = 0
		case i%89 == 7:
			x = float32(math.Copysign(0, -1))
		}
		v[i] = x
	}
	return v
}

// tensorOf allocates a tensor on be holding values (rounded to d).
func tensorOf(t *testing.T, be Backend, d DType, rows, cols int, values []float32) *Tensor {
	t.Helper()
	x, err := be.Alloc(d, rows, cols)
	require.NoError(t, err)
	require.NoError(t, be.Write(x, values))
	return x
}

// rounded returns values as a tensor of d would hold them.
func rounded(d DType, values []float32) []float32 {
	out := make([]float32, len(values))
	for i, v := range values {
		if d.Half() {
			out[i] = d.ToF32(d.FromF32(v))
		} else {
			out[i] = v
		}
	}
	return out
}

// bitsOf returns a tensor's raw bits widened to uint32.
func bitsOf(t *testing.T, be Backend, x *Tensor) []uint32 {
	t.Helper()
	f, u, err := be.readRaw(x)
	require.NoError(t, err)
	out := make([]uint32, 0, len(f)+len(u))
	for _, v := range f {
		out = append(out, math.Float32bits(v))
	}
	for _, v := range u {
		out = append(out, uint32(v))
	}
	return out
}

func f32Bits(v []float32) []uint32 {
	out := make([]uint32, len(v))
	for i, x := range v {
		out[i] = math.Float32bits(x)
	}
	return out
}

// requireSameBits fails with the first differing elements.
func requireSameBits(t *testing.T, want, got []uint32, what string) {
	t.Helper()
	require.Equal(t, len(want), len(got), what)
	bad := 0
	for i := range want {
		if want[i] != got[i] {
			if bad < 5 {
				t.Errorf("%s: element %d: want %#x, got %#x", what, i, want[i], got[i])
			}
			bad++
		}
	}
	if bad > 0 {
		t.Fatalf("%s: %d of %d elements differ", what, bad, len(want))
	}
}

// cpuStepsDigest is the digest of cfg's model on the CPU backend after n
// steps on its first batch (cfg.Steps set to 1): what a GPU's replay of a
// captured step must equal.
func cpuStepsDigest(t *testing.T, cfg TrainConfig, n int) string {
	t.Helper()
	cfg.Steps = 1
	r, err := NewRun(NewCPU(0), cfg)
	require.NoError(t, err)
	defer r.Close()
	x, tt := r.Batch(0)
	for range n {
		require.NoError(t, r.Model.Step(x, tt))
	}
	d, err := r.Model.Digest()
	require.NoError(t, err)
	return d
}
