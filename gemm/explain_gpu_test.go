package gemm

import (
	"strings"
	"testing"

	"github.com/detgemm/detgemm/cudaload"
	"github.com/stretchr/testify/require"
)

// loadedNames is the entry point of every function e loaded, by name.
func loadedNames(e *Engine) map[string]bool {
	names := map[string]bool{}
	for _, fn := range e.fns {
		if fn != nil {
			names[fn.Name()] = true
		}
	}
	return names
}

// TestGPUExplainMatchesEngine checks Explain on this GPU's engine: every
// kernel it names is one the engine loaded; a fake engine with this GPU's
// figures (SMs, shared memory, architecture) launches exactly Explain's
// first kernel (as TestExplainNamesTheKernelTheCallLaunches does for
// figures written down); and the real engine runs calls of those shapes
// without error.
func TestGPUExplainMatchesEngine(t *testing.T) {
	eng, ctx := gpuEngine(t)
	perSM, err := ctx.Device().Attribute(cudaload.DevAttrMaxSharedMemoryPerMultiprocessor)
	require.NoError(t, err)
	d := fakeDevice{name: ctx.Device().Name(), arch: eng.Arch(), sms: eng.sms, optin: ctx.Device().MaxSharedMemoryPerBlockOptin(), perSM: perSM}
	fake, _ := fakeEngine(d)
	require.Equal(t, eng.tcShared, fake.tcShared)
	require.Equal(t, eng.loneShared, fake.loneShared)
	require.Equal(t, eng.hasWG, fake.hasWG)
	loaded := loadedNames(eng)

	for _, c := range explainCases() {
		t.Run(c.String(), func(t *testing.T) {
			x, err := eng.Explain(c.call())
			require.NoError(t, err)
			for _, l := range x.Launches {
				require.True(t, loaded[l.Kernel], "%s is loaded by the engine", l.Kernel)
			}
			fe, remove := fakeEngine(d)
			fx, err := fe.Explain(c.call())
			require.NoError(t, err)
			require.Equal(t, x, fx, "the fake engine explains as the real one")
			require.True(t, reached(c.run(fe)))
			first := x.Launches[0].Kernel
			if !strings.HasSuffix(first, "_one") { // TestExplainNamesTheKernelTheCallLaunches covers the twins
				require.Contains(t, remove, first)
				remove[first]()
				require.True(t, missingKernel(c.run(fe)), "the call launches %s first", first)
			}
		})
	}
}

// TestGPUExplainedCallsRun runs, for real, a call of each strategy and
// tier that Explain describes, and checks it completes.
func TestGPUExplainedCallsRun(t *testing.T) {
	eng, ctx := gpuEngine(t)
	for _, c := range []explainCase{
		{op: "Forward", tier: TierF32, in: F32, out: F32, m: 1, k: 4096, n: 4096},
		{op: "DX", tier: TierTyped, in: BF16, out: BF16, m: 16, k: 4096, n: 4096},
		{op: "DW", tier: TierF32, in: F32, out: F32, m: 64, k: 1024, n: 1024},
		{op: "Forward", tier: TierTyped, in: BF16, out: F32, m: 300, k: 70, n: 500},
		{op: "Forward", tier: TierTensorCore, in: BF16, out: BF16, m: 1, k: 4096, n: 4096},
		{op: "DX", tier: TierTensorCore, in: BF16, out: BF16, m: 128, k: 4096, n: 11008},
		{op: "DW", tier: TierTensorCore, in: F16, out: F32, m: 2048, k: 768, n: 512},
	} {
		t.Run(c.String(), func(t *testing.T) {
			// Elements of each operand (4 bytes each: room for any type).
			na, nb, nout := c.m*c.k, c.k*c.n, c.m*c.n // Forward: X, W, Y
			switch c.op {
			case "DX":
				na, nout = c.m*c.n, c.m*c.k // dY, dX
			case "DW":
				nb, nout = c.m*c.n, c.k*c.n // dY, dW
			}
			var bufs []*cudaload.Buffer[uint32]
			for _, n := range []int{na, nb, nout} {
				buf, err := cudaload.NewBuffer[uint32](ctx, n)
				require.NoError(t, err)
				defer buf.Close()
				require.NoError(t, ctx.MemsetD32(buf.Ptr(), 0, uint64(n)))
				bufs = append(bufs, buf)
			}
			a, b, out := bufs[0], bufs[1], bufs[2]
			var call Call
			switch c.op {
			case "DW":
				call = DWArgs{Tier: c.tier, M: c.m, K: c.k, N: c.n, X: a.Ptr(), DY: b.Ptr(), DW: out.Ptr(), In: c.in}
			case "DX":
				call = DXArgs{Tier: c.tier, M: c.m, N: c.n, K: c.k, DY: a.Ptr(), W: b.Ptr(), DX: out.Ptr(), In: c.in, Out: c.out}
			default:
				call = ForwardArgs{Tier: c.tier, M: c.m, K: c.k, N: c.n, X: a.Ptr(), W: b.Ptr(), Y: out.Ptr(), In: c.in, Out: c.out}
			}
			x, err := eng.Explain(call)
			require.NoError(t, err)
			t.Log(x)
			switch a := call.(type) {
			case DWArgs:
				err = eng.DW(a)
			case DXArgs:
				err = eng.DX(a)
			case ForwardArgs:
				err = eng.Forward(a)
			}
			require.NoError(t, err)
			require.NoError(t, eng.Synchronize())
		})
	}
}
