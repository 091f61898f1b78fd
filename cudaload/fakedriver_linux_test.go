package cudaload

import (
	"runtime"
	"testing"

	"github.com/detgemm/detgemm/internal/dynlib"
	"github.com/stretchr/testify/require"
)

// fakeDriver is a Driver whose every entry point is libm's fegetround,
// which takes no arguments, does no system call and returns FE_TONEAREST,
// 0, which reads as CUDA_SUCCESS. It runs the package's own code paths
// (binding, argument blocks, pinning, pooled frames, close bookkeeping)
// without a GPU; the driver's work is absent.
func fakeDriver(t testing.TB) *Driver {
	t.Helper()
	lib, err := dynlib.Open("libm", []string{"libm.so.6"}, nil)
	if err != nil {
		t.Skip("no libm.so.6 to stand in for the driver: ", err)
	}
	ok, err := lib.Lookup("fegetround")
	require.NoError(t, err)
	d := &Driver{lib: lib, path: "fake", version: 13000}
	for _, row := range d.sym.table() {
		*row.dst = ok
	}
	return d
}

func fakeContext(t testing.TB) *Context {
	d := fakeDriver(t)
	dev := &Device{drv: d, name: "fake"}
	ctx, err := dev.PrimaryContext()
	require.NoError(t, err)
	return ctx
}

func fakeFunction(t testing.TB, ctx *Context) (*Module, *Function) {
	mod, err := ctx.LoadModule([]byte("fake image"))
	require.NoError(t, err)
	fn, err := mod.Function("k")
	require.NoError(t, err)
	return mod, fn
}

func TestFakeDriverLaunchAllocatesNothing(t *testing.T) {
	ctx := fakeContext(t)
	_, fn := fakeFunction(t, ctx)
	s, err := ctx.NewStream()
	require.NoError(t, err)
	ev, err := ctx.NewEvent()
	require.NoError(t, err)
	var a Args
	var tm TensorMap
	cfg := LaunchConfig{Grid: Dim3{128, 1, 1}, Block: Dim3{256, 1, 1}, Stream: s}
	over := cfg
	over.Overlap = true
	// libm has no cuLaunchKernelEx: stand fegetround in for it, so the
	// overlapped path (pooled config and attribute) runs.
	ctx.drv.launchExOnce.Do(func() { ctx.drv.launchExFn = ctx.drv.sym.cuLaunchKernel })
	require.NotZero(t, ctx.drv.launchKernelEx())
	host := make([]uint32, 16)
	for _, tt := range []struct {
		name string
		op   func() error
	}{
		{"Launch without args", func() error { return fn.Launch(cfg, nil) }},
		{"Launch with args", func() error {
			return fn.Launch(cfg, a.Reset().Ptr(0x1000).Uint32(7).TensorMap(&tm).Float32(2))
		}},
		{"overlapped Launch with args", func() error {
			return fn.Launch(over, a.Reset().Ptr(0x1000).Uint32(7).TensorMap(&tm).Float32(2))
		}},
		{"Event.Record", func() error { return ev.Record(s) }},
		{"MemcpyDtoDAsync", func() error { return s.MemcpyDtoDAsync(0x1000, 0x2000, 64) }},
		{"MemcpyHtoDAsync", func() error { return s.MemcpyHtoDAsync(0x1000, ptrOf(host), 64) }},
		{"MemsetD32Async", func() error { return s.MemsetD32Async(0x1000, 1, 16) }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			require.NoError(t, tt.op())
			require.Zero(t, testing.AllocsPerRun(200, func() {
				if err := tt.op(); err != nil {
					t.Fatal(err)
				}
			}))
		})
	}
}

func TestFakeDriverBindModesBothWork(t *testing.T) {
	ctx := fakeContext(t)
	_, fn := fakeFunction(t, ctx)
	defer skipSetWhenCurrent.Store(false)
	for _, skip := range []bool{false, true} {
		skipSetWhenCurrent.Store(skip)
		require.NoError(t, fn.Launch(LaunchConfig{Grid: Dim3{1, 1, 1}, Block: Dim3{1, 1, 1}}, nil))
		require.NoError(t, ctx.Synchronize())
	}
}

func TestFakeDriverUseAfterCloseIsAnErrorNotACrash(t *testing.T) {
	ctx := fakeContext(t)
	mod, fn := fakeFunction(t, ctx)
	s, err := ctx.NewStream()
	require.NoError(t, err)
	ev, err := ctx.NewEvent()
	require.NoError(t, err)
	cfg := LaunchConfig{Grid: Dim3{1, 1, 1}, Block: Dim3{1, 1, 1}}

	require.NoError(t, s.Close())
	require.NoError(t, s.Close(), "Close is idempotent")
	require.ErrorIs(t, s.Synchronize(), ErrClosed)
	require.ErrorIs(t, s.MemsetD32Async(0x1000, 0, 1), ErrClosed)
	require.ErrorIs(t, ev.Record(s), ErrClosed)
	cfg.Stream = s
	require.ErrorIs(t, fn.Launch(cfg, nil), ErrClosed)
	cfg.Stream = nil

	require.NoError(t, ev.Close())
	require.NoError(t, ev.Close())
	require.ErrorIs(t, ev.Record(nil), ErrClosed)
	require.ErrorIs(t, ev.Synchronize(), ErrClosed)

	require.NoError(t, fn.Launch(cfg, nil))
	require.NoError(t, mod.Close())
	require.NoError(t, mod.Close())
	require.ErrorIs(t, fn.Launch(cfg, nil), ErrClosed)
	_, err = fn.Attribute(AttrNumRegs)
	require.ErrorIs(t, err, ErrClosed)
	require.ErrorIs(t, fn.SetMaxDynamicSharedMemory(1024), ErrClosed)
	_, err = mod.Function("k")
	require.ErrorIs(t, err, ErrClosed)

	mod2, fn2 := fakeFunction(t, ctx)
	s2, err := ctx.NewStream()
	require.NoError(t, err)
	require.NoError(t, ctx.Close())
	require.NoError(t, ctx.Close())
	_, err = ctx.MemAlloc(64)
	require.ErrorIs(t, err, ErrClosed)
	require.ErrorIs(t, ctx.MemFree(0), ErrClosed)
	require.ErrorIs(t, ctx.MemcpyDtoD(1, 2, 0), ErrClosed, "even a zero-byte copy reports the closed context")
	require.ErrorIs(t, ctx.Synchronize(), ErrClosed)
	_, err = ctx.NewStream()
	require.ErrorIs(t, err, ErrClosed)
	_, err = ctx.LoadModule([]byte("x"))
	require.ErrorIs(t, err, ErrClosed)
	require.ErrorIs(t, fn2.Launch(cfg, nil), ErrClosed, "a function of a closed context")
	require.ErrorIs(t, s2.Synchronize(), ErrClosed, "a stream of a closed context")
	require.NoError(t, s2.Close(), "closing a child after its context is not an error")
	require.NoError(t, mod2.Close())
}

func TestFakeDriverMissingTensorMapSymbolIsTyped(t *testing.T) {
	ctx := fakeContext(t)
	_, err := ctx.EncodeTiled(TensorMapFloat32, 1, 256, []uint64{64}, nil, []uint32{16}, []uint32{1}, 0, 0, 0, 0)
	require.ErrorIs(t, err, ErrSymbolMissing)
	require.Contains(t, err.Error(), "cuTensorMapEncodeTiled")
	require.Contains(t, err.Error(), "13.0")
}

func TestFakeDriverLaunchFromManyGoroutines(t *testing.T) {
	ctx := fakeContext(t)
	_, fn := fakeFunction(t, ctx)
	done := make(chan error)
	for g := 0; g < 8; g++ {
		go func() {
			var a Args
			for i := 0; i < 1000; i++ {
				if err := fn.Launch(LaunchConfig{Grid: Dim3{1, 1, 1}, Block: Dim3{32, 1, 1}}, a.Reset().Ptr(DevicePtr(i)).Uint32(uint32(i))); err != nil {
					done <- err
					return
				}
				if i%100 == 0 {
					runtime.Gosched()
				}
			}
			done <- nil
		}()
	}
	for g := 0; g < 8; g++ {
		require.NoError(t, <-done)
	}
}

// BenchmarkLaunchGoOverhead is the host cost of Launch minus the driver's:
// everything this package does around cuLaunchKernel (thread lock,
// context bind call, argument table, pin, the call itself into a no-op).
func BenchmarkLaunchGoOverhead(b *testing.B) {
	ctx := fakeContext(b)
	_, fn := fakeFunction(b, ctx)
	cfg := LaunchConfig{Grid: Dim3{128, 1, 1}, Block: Dim3{256, 1, 1}}
	b.Run("no args", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if err := fn.Launch(cfg, nil); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("3 args", func(b *testing.B) {
		var a Args
		b.ReportAllocs()
		for b.Loop() {
			if err := fn.Launch(cfg, a.Reset().Ptr(0x1000).Uint32(4096).Uint32(7)); err != nil {
				b.Fatal(err)
			}
		}
	})
}
