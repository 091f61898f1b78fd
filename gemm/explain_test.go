package gemm

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/detgemm/detgemm/cudaload"
	"github.com/detgemm/detgemm/kernels"
	"github.com/stretchr/testify/require"
)

// fakeDevice is what an engine reads of its GPU at New.
type fakeDevice struct {
	name         string
	arch         kernels.Arch
	sms          int
	optin, perSM int // shared memory a block may opt in to, and an SM's
}

var fakeDevices = []fakeDevice{
	{"H200 sm_90a", kernels.Arch{Major: 9, Minor: 0, Specific: true}, 132, 232448, 233472},
	{"A100 sm_80", kernels.Arch{Major: 8, Minor: 0}, 108, 166912, 167936},
	{"RTX 3090 sm_86", kernels.Arch{Major: 8, Minor: 6}, 82, 101376, 102400},
}

// fakeEngine is an engine without a GPU: the device figures of d, and in
// every table of functions the entry points loadModules would resolve on
// d, each a distinct zero cudaload.Function. Launching one returns a
// *cudaload.ClosedError (it has no module) before any driver call, so a
// call runs the dispatcher and its launch path up to the first launch and
// stops there. The workspace is marked huge, so nothing is allocated.
// remove deletes the entry point of a name from the tables, as if the
// module lacked it.
func fakeEngine(d fakeDevice) (e *Engine, remove map[string]func()) {
	e = &Engine{device: device{arch: d.arch, sms: d.sms, tcShared: tcSharedLimit(d.optin), hasWG: wgArch(d.arch),
		smemPerSM: uint32(d.perSM), loneShared: loneShared(d.perSM, d.optin)}}
	e.ws.bytes, e.ws.ctrBytes = 1<<62, 1<<62
	e.fns = make(functions, len(kernelEntries))
	remove = map[string]func(){}
	fams := map[string]bool{}
	for _, f := range engineFamilies(d.arch) {
		fams[f] = true
	}
	for id, en := range kernelEntries {
		if !fams[en.Family] {
			continue
		}
		if _, ok := entryShared(en, e.loneShared, e.tcShared); !ok {
			continue // loadModules skips it too
		}
		e.fns[id] = new(cudaload.Function)
		remove[en.Name] = func() { e.fns[id] = nil }
	}
	return e, remove
}

// explainCase is one call of the table: op, tier, types, shape, and
// whether the first operand is one element off 16-byte alignment.
type explainCase struct {
	op        string
	tier      Tier
	in, out   DType
	m, k, n   int
	misalign  bool
	bias      bool
	wantFirst string // when set, the first kernel on the H200 (documented rules)
}

// call builds the case's arguments over disjoint fake device ranges.
func (c explainCase) call() Call {
	const region = 1 << 40
	off := cudaload.DevicePtr(0)
	if c.misalign {
		off = cudaload.DevicePtr(c.in.Size())
	}
	a, b, out, bias := cudaload.DevicePtr(region)+off, cudaload.DevicePtr(2*region), cudaload.DevicePtr(3*region), cudaload.DevicePtr(0)
	if c.bias {
		bias = 4 * region
	}
	switch c.op {
	case "DW":
		return DWArgs{Tier: c.tier, M: c.m, K: c.k, N: c.n, X: a, DY: b, DW: out, In: c.in}
	case "DX":
		return DXArgs{Tier: c.tier, M: c.m, N: c.n, K: c.k, DY: a, W: b, DX: out, In: c.in, Out: c.out}
	}
	return ForwardArgs{Tier: c.tier, M: c.m, K: c.k, N: c.n, X: a, W: b, Bias: bias, Y: out, In: c.in, Out: c.out}
}

// run enqueues the case's call on e.
func (c explainCase) run(e *Engine) error {
	switch a := c.call().(type) {
	case DWArgs:
		return e.DW(a)
	case DXArgs:
		return e.DX(a)
	case ForwardArgs:
		return e.Forward(a)
	}
	panic("unreachable")
}

func (c explainCase) String() string {
	s := fmt.Sprintf("%s %v %v→%v %dx%dx%d", c.op, c.tier, c.in, c.out, c.m, c.k, c.n)
	if c.misalign {
		s += " misaligned"
	}
	return s
}

// explainCases crosses ops, tiers and shapes: few rows (every rows path),
// short dW (stream), underfilled grids (split-slab, narrow tiles), grids
// with a short last round (tiled tail), long reductions into narrow
// outputs (the tensor-core slab cut), odd sizes, and operands off 16-byte
// alignment (the element-wise paths).
func explainCases() []explainCase {
	shapes := [][3]int{
		{1, 4096, 4096}, {1, 4096, 11008}, {4, 1024, 4096}, {8, 4096, 4096}, {16, 4096, 11008}, {32, 4096, 4096},
		{64, 4096, 4096}, {128, 4096, 11008}, {128, 11008, 4096}, {300, 70, 500}, {2048, 768, 3072},
		{2048, 768, 512}, {4096, 1536, 3072}, {4096, 4096, 4096},
	}
	types := []struct {
		tier    Tier
		in, out DType
	}{
		{TierF32, F32, F32}, {TierTyped, BF16, BF16}, {TierTyped, F16, F32},
		{TierTensorCore, BF16, BF16}, {TierTensorCore, F16, F32},
	}
	var out []explainCase
	for _, op := range []string{"Forward", "DX", "DW"} {
		for _, ty := range types {
			for _, s := range shapes {
				for _, mis := range []bool{false, true} {
					o := ty.out
					if op == "DW" {
						o = F32
					}
					out = append(out, explainCase{op: op, tier: ty.tier, in: ty.in, out: o, m: s[0], k: s[1], n: s[2], misalign: mis, bias: op == "Forward"})
				}
			}
		}
	}
	return out
}

// reached reports whether a call got as far as launching (or encoding the
// TMA maps for) a kernel of the fake engine; missingKernel whether it
// stopped because an entry point was absent.
func reached(err error) bool { return errors.Is(err, cudaload.ErrClosed) }

func missingKernel(err error) bool {
	return err != nil && !reached(err) && strings.Contains(err.Error(), ": no ")
}

// TestExplainNamesTheKernelTheCallLaunches checks Explain against the
// launch path itself, without a GPU: on a fake engine (fakeEngine) the
// call runs its dispatcher and launch code up to the first launch. With
// every entry point present it reaches that launch; with Explain's first
// kernel removed it stops for lack of exactly that kernel. (A one-slab
// twin, "_one", is preferred over its plain kernel where present, so it is
// shown by removing the plain one: the call still launches.) The later
// launches are not reached without a GPU; TestGPUExplainMatchesEngine
// checks them on the device.
func TestExplainNamesTheKernelTheCallLaunches(t *testing.T) {
	for _, d := range fakeDevices {
		t.Run(d.name, func(t *testing.T) {
			for _, c := range explainCases() {
				t.Run(c.String(), func(t *testing.T) {
					e, remove := fakeEngine(d)
					x, err := e.Explain(c.call())
					require.NoError(t, err)
					require.NotEmpty(t, x.Launches)
					for _, l := range x.Launches {
						require.Contains(t, remove, l.Kernel, "%s is an entry point the engine loads on this GPU", l.Kernel)
						require.NotZero(t, l.Grid.Count(), "%v", l)
						require.NotZero(t, l.Threads)
						require.LessOrEqual(t, l.SharedBytes, max(e.tcShared, e.loneShared), "%v", l)
					}
					s, err := e.Strategy(c.call())
					require.NoError(t, err)
					require.Equal(t, s, x.Strategy)
					ws, err := e.WorkspaceBytes(c.call())
					require.NoError(t, err)
					require.Equal(t, ws, x.WorkspaceBytes)

					err = c.run(e)
					require.True(t, reached(err), "with every kernel present the call launches: %v", err)

					first := x.Launches[0].Kernel
					if plain, ok := strings.CutSuffix(first, "_one"); ok {
						e, remove = fakeEngine(d)
						remove[plain]()
						err = c.run(e)
						require.True(t, reached(err), "the call launches %s, not %s: %v", first, plain, err)
						remove[first]()
						err = c.run(e)
						require.True(t, missingKernel(err), "without %s and %s the call has no kernel: %v", first, plain, err)
						return
					}
					e, remove = fakeEngine(d)
					remove[first]()
					err = c.run(e)
					require.True(t, missingKernel(err), "without %s the call has no kernel: %v", first, err)
				})
			}
		})
	}
}

// TestExplainOnTheH200 pins Explain's answer for shapes whose choice the
// dispatcher's documentation states (H200 figures, 132 SMs, sm_90a).
func TestExplainOnTheH200(t *testing.T) {
	e, _ := fakeEngine(fakeDevices[0])
	cases := []struct {
		c        explainCase
		strategy Strategy
		kernels  []string
	}{
		// Few rows of 16-bit inputs in one wave: gemm_rows_tma, one row a block.
		{explainCase{op: "Forward", tier: TierTyped, in: BF16, out: BF16, m: 1, k: 4096, n: 4096},
			StrategyRows, []string{"detgemm_rowst_nn_bf16_bf16_m1"}},
		// X one element off 16 bytes: no TMA; the one-launch kernel needs
		// only W aligned, and f32 Forward takes it while its blocks fit at once.
		{explainCase{op: "Forward", tier: TierF32, in: F32, out: F32, m: 1, k: 4096, n: 4096, misalign: true},
			StrategyRows, []string{"detgemm_rowsf_nn_f32_f32_m4"}},
		// f32 dX at four rows a block stays on two launches: partials, fold.
		{explainCase{op: "DX", tier: TierF32, in: F32, out: F32, m: 1, k: 4096, n: 4096, misalign: true},
			StrategyRows, []string{"detgemm_rows_nt_f32_m4", "detgemm_fold_store_f32"}},
		// Short dW: the stream kernel, 32-row blocks while M fits one stage.
		{explainCase{op: "DW", tier: TierF32, in: F32, out: F32, m: 16, k: 4096, n: 4096},
			StrategyStream, []string{"detgemm_dwstream32_f32"}},
		{explainCase{op: "DW", tier: TierTyped, in: BF16, out: F32, m: 64, k: 4096, n: 4096},
			StrategyStream, []string{"detgemm_dwstream_bf16"}},
		// A full grid: square tiles, no workspace.
		{explainCase{op: "Forward", tier: TierF32, in: F32, out: F32, m: 4096, k: 4096, n: 4096},
			StrategyTiled, []string{"detgemm_simt_nn_f32_f32"}},
		// Tensor cores, a full grid on sm_90a: a wgmma tile.
		{explainCase{op: "Forward", tier: TierTensorCore, in: BF16, out: BF16, m: 4096, k: 4096, n: 4096},
			StrategyTiled, nil},
		// Tensor cores, one row: the TMA rows tile's one-slab twin.
		{explainCase{op: "Forward", tier: TierTensorCore, in: BF16, out: BF16, m: 1, k: 4096, n: 4096},
			StrategyTiled, []string{"detgemm_tmarows8_nn_bf16_bf16_vec_one"}},
		// Tensor cores, short dW: gemm_tc_dw_stream.
		{explainCase{op: "DW", tier: TierTensorCore, in: BF16, out: F32, m: 64, k: 4096, n: 4096},
			StrategyTiled, []string{"detgemm_tcdw64_tn_bf16_f32_vec"}},
	}
	for _, c := range cases {
		t.Run(c.c.String(), func(t *testing.T) {
			x, err := e.Explain(c.c.call())
			require.NoError(t, err)
			require.Equal(t, c.strategy, x.Strategy, "%v", x)
			if c.kernels != nil {
				require.Equal(t, c.kernels, x.Kernels(), "%v", x)
			}
			if c.c.tier == TierTensorCore && c.kernels == nil {
				require.True(t, strings.HasPrefix(x.Kernels()[0], "detgemm_wg"), "%v", x)
				require.Equal(t, wgFamily, x.Launches[0].Family)
			}
		})
	}
}

func TestExplainStringNamesEveryLaunch(t *testing.T) {
	e, _ := fakeEngine(fakeDevices[0])
	// dX with the tensor-core cut: a slab kernel, then the fold.
	x, err := e.Explain(DXArgs{Tier: TierTensorCore, M: 128, N: 11008, K: 4096, In: BF16, Out: BF16})
	require.NoError(t, err)
	require.Greater(t, x.Slabs, int64(1), "%v", x)
	require.Len(t, x.Launches, 2, "%v", x)
	require.Equal(t, "detgemm_fold_store_bf16", x.Launches[1].Kernel)
	s := x.String()
	require.Contains(t, s, "DX M=128 K=4096 N=11008 tier tensor-core bf16→bf16")
	for i, l := range x.Launches {
		require.Contains(t, s, fmt.Sprintf("%d. %s (%s) grid %v", i+1, l.Kernel, l.Family, l.Grid))
	}
}

func TestExplainRefusesWhatTheCallRefuses(t *testing.T) {
	e, _ := fakeEngine(fakeDevices[0])
	var nilFwd *ForwardArgs
	for _, c := range []struct {
		name string
		call Call
		want error
	}{
		{"nil call", nil, ErrNilPointer},
		{"nil *ForwardArgs", nilFwd, ErrNilPointer},
		{"zero K", ForwardArgs{Tier: TierF32, M: 1, K: 0, N: 8, In: F32, Out: F32}, ErrDimension},
		{"no tier", DXArgs{M: 1, N: 8, K: 8, In: F32, Out: F32}, ErrTier},
		{"one pointer set, the others nil", ForwardArgs{Tier: TierF32, M: 1, K: 8, N: 8, X: 1 << 40, In: F32, Out: F32}, ErrNilPointer},
		{"misaligned", DWArgs{Tier: TierF32, M: 1, K: 8, N: 8, X: 1<<40 + 2, DY: 2 << 40, DW: 3 << 40, In: F32}, ErrMisaligned},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := e.Explain(c.call)
			require.ErrorIs(t, err, c.want)
		})
	}
	for _, c := range []Call{nil, nilFwd, (*DWArgs)(nil), (*DXArgs)(nil)} {
		_, err := e.Strategy(c)
		require.ErrorIs(t, err, ErrNilPointer, "Strategy(%T)", c)
		_, err = e.WorkspaceBytes(c)
		require.ErrorIs(t, err, ErrNilPointer, "WorkspaceBytes(%T)", c)
	}
	// Shape only: the pointers left zero, as for Strategy.
	x, err := e.Explain(&ForwardArgs{Tier: TierF32, M: 1, K: 8, N: 8, In: F32, Out: F32})
	require.NoError(t, err)
	require.NotEmpty(t, x.Launches)
}
