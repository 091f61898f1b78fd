package gemm

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/detgemm/detgemm/cudaload"
	"github.com/detgemm/detgemm/gemm/ref"
	"github.com/detgemm/detgemm/internal/gputest"
	"github.com/detgemm/detgemm/kernels"
	"github.com/stretchr/testify/require"
)

var shared struct {
	once sync.Once
	eng  *Engine
	err  error
}

// gpuEngine returns the process's engine on device 0, or skips t.
func gpuEngine(t *testing.T) (*Engine, *cudaload.Context) {
	t.Helper()
	ctx := gputest.Context(t)
	shared.once.Do(func() { shared.eng, shared.err = New(ctx) })
	require.NoError(t, shared.err)
	return shared.eng, ctx
}

// newRand draws fresh inputs on every run; the seed is logged so a failure
// can be replayed (DETGEMM_SEED=<seed> draws that run's inputs again).
func newRand(t *testing.T) *rand.Rand {
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("DETGEMM_SEED"); s != "" {
		v, err := strconv.ParseUint(s, 10, 64)
		require.NoError(t, err, "DETGEMM_SEED")
		seed = v
	}
	t.Logf("seed %d", seed)
	return rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15))
}

// operand is a matrix as the kernels see it: its exact f32 values (for the
// reference) and its bits in the element type (for the device).
type operand struct {
	d      DType
	values []float32
	half   []uint16 // the bits when d is BF16 or F16
}

// randomOperand draws values in [-1, 1) with a spread of magnitudes, never
// zeros, and rounds them to d so values are exactly what the device reads.
func randomOperand(r *rand.Rand, d DType, n int) operand {
	v := make([]float32, n)
	for i := range v {
		x := float32(r.Float64()*2 - 1)
		if i%7 == 3 {
			x *= float32(math.Ldexp(1, r.IntN(20)-10)) // a few binades of spread
		}
		if x == 0 {
			x = 0.5
		}
		v[i] = x
	}
	return fromValues(d, v)
}

func fromValues(d DType, v []float32) operand {
	op := operand{d: d, values: v}
	if d.Half() {
		op.half = make([]uint16, len(v))
		if err := ref.Round(d, op.half, v); err != nil {
			panic(err)
		}
		if err := ref.Upcast(d, op.values, op.half); err != nil {
			panic(err)
		}
	}
	return op
}

// upload copies o to a fresh device buffer freed at the end of the test.
func upload(t *testing.T, ctx *cudaload.Context, o operand) cudaload.DevicePtr {
	t.Helper()
	p := alloc(t, ctx, uint64(len(o.values)*o.d.Size()))
	if o.d.Half() {
		require.NoError(t, cudaload.CopyToDevice(ctx, p, o.half))
	} else {
		require.NoError(t, cudaload.CopyToDevice(ctx, p, o.values))
	}
	return p
}

// tiledRandom allocates elems elements of type d holding block's values
// (a device buffer of random values of d) again and again: the perf
// probes' inputs, which drawing on the host would take longer than the
// timing.
func tiledRandom(t *testing.T, ctx *cudaload.Context, block cudaload.DevicePtr, blockElems int, d DType, elems int) cudaload.DevicePtr {
	t.Helper()
	p := alloc(t, ctx, uint64(elems*d.Size()))
	for off := 0; off < elems; off += blockElems {
		n := min(blockElems, elems-off)
		require.NoError(t, ctx.MemcpyDtoD(p+cudaload.DevicePtr(off*d.Size()), block, uint64(n*d.Size())))
	}
	return p
}

func alloc(t *testing.T, ctx *cudaload.Context, bytes uint64) cudaload.DevicePtr {
	t.Helper()
	p, err := ctx.MemAlloc(bytes)
	require.NoError(t, err)
	t.Cleanup(func() { _ = ctx.MemFree(p) })
	return p
}

// poisoned allocates an output filled with 0xFF bytes: NaN in f32, bf16 and
// f16 alike, so an element the kernel never writes cannot pass.
func poisoned(t *testing.T, ctx *cudaload.Context, bytes uint64) cudaload.DevicePtr {
	t.Helper()
	p := alloc(t, ctx, bytes)
	require.NoError(t, ctx.MemsetD8(p, 0xFF, bytes))
	return p
}

// readBits reads n elements of type d back as raw bits (uint32 for f32 widened
// from uint16 for the half types), so comparisons are exact.
func readBits(t *testing.T, eng interface{ Synchronize() error }, ctx *cudaload.Context, p cudaload.DevicePtr, d DType, n int) []uint32 {
	t.Helper()
	require.NoError(t, eng.Synchronize())
	out := make([]uint32, n)
	if d.Half() {
		h := make([]uint16, n)
		require.NoError(t, cudaload.CopyFromDevice(ctx, h, p))
		for i, v := range h {
			out[i] = uint32(v)
		}
		return out
	}
	require.NoError(t, cudaload.CopyFromDevice(ctx, out, p))
	return out
}

// refIEEE is the CPU reference of the IEEE tiers as the tests call it: the
// f32 plan over the inputs' exact float32 values. The typed tier is that
// plan on the upcast inputs, rounded once at the store (refBits), so one
// reference serves f32 and typed alike.
var refIEEE = ref.Options{Tier: ref.IEEE, In: ref.F32}

// refTC is the CPU reference of the tensor-core tier on model m for inputs
// of type d, given as their exact float32 values, storing the float32
// accumulator (refBits rounds it to a 16-bit output).
func refTC(m ref.TCModel, d DType) ref.Options {
	return ref.Options{Tier: ref.TensorCore, In: d, Out: ref.F32, Model: m}
}

// refBits is the reference's f32 result rounded to d, as raw bits.
func refBits(d DType, v []float32) []uint32 {
	out := make([]uint32, len(v))
	for i, x := range v {
		if d.Half() {
			out[i] = uint32(d.FromF32(x))
		} else {
			out[i] = math.Float32bits(x)
		}
	}
	return out
}

// requireSameBits reports the first few differing elements with their
// (row, col) so a plan mismatch is easy to read.
func requireSameBits(t *testing.T, want, got []uint32, cols int, what string) {
	t.Helper()
	require.Equal(t, len(want), len(got), what)
	bad := 0
	for i := range want {
		if want[i] != got[i] {
			if bad < 5 {
				t.Errorf("%s: element (%d,%d): want %#08x, got %#08x", what, i/cols, i%cols, want[i], got[i])
			}
			bad++
		}
	}
	if bad > 0 {
		t.Fatalf("%s: %d of %d elements differ", what, bad, len(want))
	}
}

// caller runs the triad's calls: an *Engine, or a forcedEngine.
type caller interface {
	Forward(ForwardArgs) error
	DW(DWArgs) error
	DX(DXArgs) error
	Synchronize() error
}

// forcedEngine runs every call of its engine with the planner narrowed by
// f (Engine.run's filter): the tests' way to pin a strategy, tile, load
// path or plain launches, leaving the engine itself as it is.
type forcedEngine struct {
	*Engine
	f filter
}

// forced is e with every call narrowed by f.
func forced(e *Engine, f filter) forcedEngine { return forcedEngine{e, f} }

// Forward runs a with the filter.
func (x forcedEngine) Forward(a ForwardArgs) error { return x.runFiltered(a, x.f) }

// DW runs a with the filter.
func (x forcedEngine) DW(a DWArgs) error { return x.runFiltered(a, x.f) }

// DX runs a with the filter.
func (x forcedEngine) DX(a DXArgs) error { return x.runFiltered(a, x.f) }

// runFiltered is the test-only entry to the engine: c validated as its
// public call validates it, then planned with f and launched.
func (e *Engine) runFiltered(c Call, f filter) error {
	p, err := c.build(true)
	if err != nil {
		return err
	}
	return e.run(p, f)
}

// enqueue runs one call of any op on eng (tests hold calls as Call values).
func enqueue(t *testing.T, eng caller, c Call) error {
	t.Helper()
	switch a := c.(type) {
	case ForwardArgs:
		return eng.Forward(a)
	case DXArgs:
		return eng.DX(a)
	case DWArgs:
		return eng.DW(a)
	}
	t.Fatalf("unknown call %T", c)
	return nil
}

// perfShape reports whether a perf test should time the shape m×r×cols:
// DETGEMM_PERF_SHAPES, when set, lists the shapes to keep ("1x4096x4096,
// 16x4096x1024"), so a narrow A/B spends less device time.
func perfShape(m, r, cols int) bool {
	only := os.Getenv("DETGEMM_PERF_SHAPES")
	if only == "" {
		return true
	}
	return strings.Contains(","+only+",", fmt.Sprintf(",%dx%dx%d,", m, r, cols))
}

// perfDims parses one shape "AxBxC" of the environment variable env (the
// perf probes' shape lists), failing the test on anything else.
func perfDims(t *testing.T, env, s string) (a, b, c int) {
	t.Helper()
	_, err := fmt.Sscanf(s, "%dx%dx%d", &a, &b, &c)
	require.NoError(t, err, "%s: %q is not AxBxC", env, s)
	return a, b, c
}

// perfListed reports whether a perf test should time the item named name:
// the environment variable env, when set, lists the names to keep
// (DETGEMM_TC_PERF_TILES="auto wg128x256", DETGEMM_TC_PERF_OPS="fwd dx"),
// so a profiler sees only those launches.
func perfListed(env, name string) bool {
	only := os.Getenv(env)
	return only == "" || slices.Contains(strings.Fields(only), name)
}

// perfEngine is the shared engine for a timing probe that runs only when
// the environment variable env is set (the probes are tuning aids, not
// tests: the bench measures for the record); it skips with what the probe
// times otherwise.
func perfEngine(t *testing.T, env, what string) (*Engine, *cudaload.Context) {
	t.Helper()
	if os.Getenv(env) == "" {
		t.Skipf("set %s=1 to time %s", env, what)
	}
	return gpuEngine(t)
}

// checkFunction builds a test-only kernel family (kernels.CheckFamilies:
// never embedded, so NVRTC builds it), loads it for the rest of t and
// returns its kernel name.
func checkFunction(t *testing.T, eng *Engine, ctx *cudaload.Context, family, name string) *cudaload.Function {
	t.Helper()
	b, err := kernels.Build(eng.Arch(), kernels.WithFamilies(family))
	require.NoError(t, err)
	mod, err := ctx.LoadModule(b.Modules[family].CUBIN)
	require.NoError(t, err)
	t.Cleanup(func() { _ = mod.Close() })
	fn, err := mod.Function(name)
	require.NoError(t, err)
	return fn
}

// envInt is the positive integer in env, or def where it is unset.
func envInt(t *testing.T, env string, def int) int {
	t.Helper()
	v := os.Getenv(env)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	require.NoError(t, err, env)
	require.Positive(t, n, env)
	return n
}
