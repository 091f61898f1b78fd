package cudaload_test

import (
	_ "embed"
	"errors"
	"fmt"
	"math"
	"runtime"
	"sync"
	"testing"
	"time"
	"unsafe"

	"github.com/detgemm/detgemm/cudaload"
	"github.com/detgemm/detgemm/internal/gputest"
	"github.com/stretchr/testify/require"
)

// kernelsPTX holds hand-written test kernels (noop, fill_u32, add_one,
// probe_args). Production code loads CUBIN; PTX of ISA 7.0 is old enough
// for any current driver to JIT.
//
//go:embed testdata/kernels.ptx
var kernelsPTX []byte

type testKernels struct {
	mod                          *cudaload.Module
	noop, fill, addOne, probeArg *cudaload.Function
}

func loadKernels(t testing.TB, ctx *cudaload.Context) *testKernels {
	t.Helper()
	mod, err := ctx.LoadModule(kernelsPTX)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, mod.Close()) })
	k := &testKernels{mod: mod}
	for name, dst := range map[string]**cudaload.Function{
		"noop": &k.noop, "fill_u32": &k.fill, "add_one": &k.addOne, "probe_args": &k.probeArg,
	} {
		fn, err := mod.Function(name)
		require.NoError(t, err, name)
		*dst = fn
	}
	return k
}

// grid1D covers n threads with blocks of 256.
func grid1D(n int) cudaload.LaunchConfig {
	return cudaload.LaunchConfig{Grid: cudaload.Dim3{X: uint32((n + 255) / 256), Y: 1, Z: 1}, Block: cudaload.Dim3{X: 256, Y: 1, Z: 1}}
}

func alloc(t testing.TB, ctx *cudaload.Context, bytes uint64) cudaload.DevicePtr {
	t.Helper()
	p, err := ctx.MemAlloc(bytes)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, ctx.MemFree(p)) })
	return p
}

func requireAll(t testing.TB, got []uint32, want uint32) {
	t.Helper()
	for i, v := range got {
		if v != want {
			t.Fatalf("element %d = %d, want %d (of %d)", i, v, want, len(got))
		}
	}
}

func TestGPUDeviceProperties(t *testing.T) {
	ctx := gputest.Context(t)
	drv := gputest.Driver(t)
	dev := ctx.Device()
	major, minor := dev.ComputeCapability()
	t.Logf("driver %s (%d) from %s; device %d %q sm_%d%d, %d SMs, %d B opt-in shared/block, %d B L2, %d B memory",
		cudaload.FormatVersion(drv.Version()), drv.Version(), drv.Path(), dev.Ordinal(), dev.Name(), major, minor,
		dev.SMCount(), dev.MaxSharedMemoryPerBlockOptin(), dev.L2CacheSize(), dev.TotalMemory())
	require.NotEmpty(t, dev.Name())
	require.GreaterOrEqual(t, major, 5)
	require.Positive(t, dev.SMCount())
	require.GreaterOrEqual(t, dev.MaxSharedMemoryPerBlockOptin(), 48<<10)
	require.Positive(t, dev.L2CacheSize())
	require.Positive(t, dev.TotalMemory())
	warp, err := dev.Attribute(cudaload.DevAttrWarpSize)
	require.NoError(t, err)
	require.Equal(t, 32, warp)
	n, err := drv.DeviceCount()
	require.NoError(t, err)
	require.Positive(t, n)
	same, err := drv.Device(0)
	require.NoError(t, err)
	require.Same(t, dev, same)
	_, err = drv.Device(n)
	require.ErrorIs(t, err, cudaload.ErrInvalidDevice)
}

func TestGPULaunchFillThenAddOne(t *testing.T) {
	ctx := gputest.Context(t)
	k := loadKernels(t, ctx)
	const n = 100_003
	buf := alloc(t, ctx, 4*n)
	var args cudaload.Args
	require.NoError(t, k.fill.Launch(grid1D(n), args.Reset().Ptr(buf).Uint32(n).Uint32(41)))
	require.NoError(t, k.addOne.Launch(grid1D(n), args.Reset().Ptr(buf).Uint32(n)))
	got := make([]uint32, n)
	require.NoError(t, cudaload.CopyFromDevice(ctx, got, buf))
	requireAll(t, got, 42)
}

func TestGPUArgsLayoutMatchesTheKernel(t *testing.T) {
	ctx := gputest.Context(t)
	k := loadKernels(t, ctx)
	out := alloc(t, ctx, 4*8)
	require.NoError(t, ctx.MemsetD32(out, 0xffffffff, 8))
	var tm cudaload.TensorMap
	for i := range tm {
		tm[i] = byte(i*7 + 3)
	}
	var args cudaload.Args
	args.Ptr(out).Uint32(0xa1b2c3d4).Uint64(0x1122334455667788).Float32(-3.25).Bytes(tm[:], 64).Uint32(0x5eed)
	require.NoError(t, k.probeArg.Launch(cudaload.LaunchConfig{Grid: cudaload.Dim3{X: 1, Y: 1, Z: 1}, Block: cudaload.Dim3{X: 1, Y: 1, Z: 1}}, &args))
	got := make([]uint32, 8)
	require.NoError(t, cudaload.CopyFromDevice(ctx, got, out))
	word := func(b []byte) uint32 { return uint32(b[0]) | uint32(b[1])<<8 | uint32(b[2])<<16 | uint32(b[3])<<24 }
	require.Equal(t, []uint32{
		0xa1b2c3d4, 0x55667788, 0x11223344, math.Float32bits(-3.25),
		word(tm[0:4]), word(tm[124:128]), 0x5eed, 0xffffffff,
	}, got)
}

func TestGPUCopiesAndMemsets(t *testing.T) {
	ctx := gputest.Context(t)
	const n = 4096
	a, b := alloc(t, ctx, 4*n), alloc(t, ctx, 4*n)
	src := make([]uint32, n)
	for i := range src {
		src[i] = uint32(i * 3)
	}
	require.NoError(t, cudaload.CopyToDevice(ctx, a, src))
	require.NoError(t, ctx.MemcpyDtoD(b, a, 4*n))
	got := make([]uint32, n)
	require.NoError(t, cudaload.CopyFromDevice(ctx, got, b))
	require.Equal(t, src, got)

	require.NoError(t, ctx.MemsetD8(b, 0xab, 4*n))
	require.NoError(t, cudaload.CopyFromDevice(ctx, got, b))
	requireAll(t, got, 0xabababab)

	s, err := ctx.NewStream()
	require.NoError(t, err)
	defer func() { require.NoError(t, s.Close()) }()
	require.NoError(t, s.MemsetD32Async(a, 9, n))
	require.NoError(t, s.MemcpyDtoDAsync(b, a, 4*n))
	host := make([]uint32, n)
	require.NoError(t, s.MemcpyDtoHAsync(unsafe.Pointer(&host[0]), b, 4*n))
	require.NoError(t, s.Synchronize())
	requireAll(t, host, 9)
	for i := range host {
		host[i] = uint32(i)
	}
	require.NoError(t, s.MemcpyHtoDAsync(a, unsafe.Pointer(&host[0]), 4*n))
	require.NoError(t, s.Synchronize())
	require.NoError(t, cudaload.CopyFromDevice(ctx, got, a))
	require.Equal(t, host, got)
}

// TestGPUConcurrentGoroutines has many goroutines allocate, copy, launch
// and verify at once on one shared context; goroutines migrate between OS
// threads, so each call must bind the context itself (without that the
// driver answers CUDA_ERROR_INVALID_CONTEXT).
func TestGPUConcurrentGoroutines(t *testing.T) {
	ctx := gputest.Context(t)
	k := loadKernels(t, ctx)
	const goroutines, rounds, n = 32, 20, 10_000
	var wg sync.WaitGroup
	errs := make(chan error, goroutines)
	for g := 0; g < goroutines; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- worker(ctx, k, g, rounds, n)
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
}

func worker(ctx *cudaload.Context, k *testKernels, g, rounds, n int) error {
	var stream *cudaload.Stream
	if g%2 == 1 { // half on their own streams with async copies, half on the default stream
		s, err := ctx.NewStream()
		if err != nil {
			return err
		}
		defer s.Close()
		stream = s
	}
	var args cudaload.Args
	host := make([]uint32, n)
	for r := 0; r < rounds; r++ {
		buf, err := ctx.MemAlloc(uint64(4 * n))
		if err != nil {
			return err
		}
		want := uint32(g*1000 + r)
		cfg := grid1D(n)
		cfg.Stream = stream
		if err := k.fill.Launch(cfg, args.Reset().Ptr(buf).Uint32(uint32(n)).Uint32(want-1)); err != nil {
			return err
		}
		if err := k.addOne.Launch(cfg, args.Reset().Ptr(buf).Uint32(uint32(n))); err != nil {
			return err
		}
		if stream != nil {
			err = stream.MemcpyDtoHAsync(unsafe.Pointer(&host[0]), buf, uint64(4*n))
			if err == nil {
				err = stream.Synchronize()
			}
		} else {
			err = cudaload.CopyFromDevice(ctx, host, buf)
		}
		if err != nil {
			return err
		}
		for i, v := range host {
			if v != want {
				return fmt.Errorf("goroutine %d round %d: element %d = %d, want %d", g, r, i, v, want)
			}
		}
		if err := ctx.MemFree(buf); err != nil {
			return err
		}
		runtime.Gosched()
	}
	return nil
}

func TestGPULaunchAllocatesNothing(t *testing.T) {
	ctx := gputest.Context(t)
	k := loadKernels(t, ctx)
	s, err := ctx.NewStream()
	require.NoError(t, err)
	defer s.Close()
	ev, err := ctx.NewEvent()
	require.NoError(t, err)
	defer ev.Close()
	const n = 1024
	buf := alloc(t, ctx, 4*n)
	var args cudaload.Args
	cfg := grid1D(n)
	cfg.Stream = s
	for name, op := range map[string]func() error{
		"Launch with args": func() error { return k.fill.Launch(cfg, args.Reset().Ptr(buf).Uint32(n).Uint32(5)) },
		"Launch no args":   func() error { return k.noop.Launch(cfg, nil) },
		"Event.Record":     func() error { return ev.Record(s) },
		"MemcpyDtoDAsync":  func() error { return s.MemcpyDtoDAsync(buf, buf+2048, 1024) },
	} {
		require.NoError(t, op(), name)
		allocs := testing.AllocsPerRun(500, func() {
			if err := op(); err != nil {
				t.Fatal(err)
			}
		})
		require.Zero(t, allocs, name)
	}
	require.NoError(t, s.Synchronize())
}

func TestGPULaunchRefusedIsTypedAndContextStaysUsable(t *testing.T) {
	ctx := gputest.Context(t)
	k := loadKernels(t, ctx)
	const n = 2048
	buf := alloc(t, ctx, 4*n)
	var args cudaload.Args
	for _, tt := range []struct {
		name string
		cfg  cudaload.LaunchConfig
	}{
		{"2048 threads per block", cudaload.LaunchConfig{Grid: cudaload.Dim3{X: 1, Y: 1, Z: 1}, Block: cudaload.Dim3{X: 2048, Y: 1, Z: 1}}},
		{"1 GiB of shared memory", cudaload.LaunchConfig{Grid: cudaload.Dim3{X: 1, Y: 1, Z: 1}, Block: cudaload.Dim3{X: 32, Y: 1, Z: 1}, SharedMemBytes: 1 << 30}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := k.fill.Launch(tt.cfg, args.Reset().Ptr(buf).Uint32(n).Uint32(1))
			require.ErrorIs(t, err, cudaload.ErrInvalidValue)
			var le *cudaload.LaunchError
			require.ErrorAs(t, err, &le)
			require.Equal(t, "fill_u32", le.Kernel)
			var e *cudaload.Error
			require.ErrorAs(t, err, &e)
			require.Equal(t, "cuLaunchKernel", e.Op)
			require.Equal(t, cudaload.ErrInvalidValue, e.Code)
			require.Equal(t, "CUDA_ERROR_INVALID_VALUE", e.Name)
			t.Log(err)

			require.NoError(t, k.fill.Launch(grid1D(n), args.Reset().Ptr(buf).Uint32(n).Uint32(77)))
			require.NoError(t, ctx.Synchronize())
			got := make([]uint32, n)
			require.NoError(t, cudaload.CopyFromDevice(ctx, got, buf))
			requireAll(t, got, 77)
		})
	}
}

func TestGPUEventsMeasureElapsedTime(t *testing.T) {
	ctx := gputest.Context(t)
	k := loadKernels(t, ctx)
	s, err := ctx.NewStream()
	require.NoError(t, err)
	defer s.Close()
	start, err := ctx.NewEvent()
	require.NoError(t, err)
	defer start.Close()
	end, err := ctx.NewEvent()
	require.NoError(t, err)
	defer end.Close()
	const n = 1 << 24
	buf := alloc(t, ctx, 4*n)
	cfg := grid1D(n)
	cfg.Stream = s
	var args cudaload.Args
	require.NoError(t, start.Record(s))
	for i := 0; i < 10; i++ {
		require.NoError(t, k.addOne.Launch(cfg, args.Reset().Ptr(buf).Uint32(n)))
	}
	require.NoError(t, end.Record(s))
	require.NoError(t, end.Synchronize())
	d, err := cudaload.ElapsedTime(start, end)
	require.NoError(t, err)
	require.Positive(t, d)
	require.Less(t, d, 10*time.Second)
	t.Logf("10 add_one passes over %d MiB: %v", 4*n>>20, d)
}

func TestGPUFunctionAttributes(t *testing.T) {
	ctx := gputest.Context(t)
	k := loadKernels(t, ctx)
	maxThreads, err := k.fill.Attribute(cudaload.AttrMaxThreadsPerBlock)
	require.NoError(t, err)
	require.GreaterOrEqual(t, maxThreads, 256)
	regs, err := k.fill.Attribute(cudaload.AttrNumRegs)
	require.NoError(t, err)
	require.Positive(t, regs)
	optin := ctx.Device().MaxSharedMemoryPerBlockOptin()
	require.NoError(t, k.noop.SetMaxDynamicSharedMemory(optin))
	got, err := k.noop.Attribute(cudaload.AttrMaxDynamicSharedSizeBytes)
	require.NoError(t, err)
	require.Equal(t, optin, got)
	require.NoError(t, k.noop.Launch(cudaload.LaunchConfig{Grid: cudaload.Dim3{X: 1, Y: 1, Z: 1}, Block: cudaload.Dim3{X: 32, Y: 1, Z: 1}, SharedMemBytes: uint32(optin)}, nil))
	require.NoError(t, ctx.Synchronize())
	err = k.noop.SetMaxDynamicSharedMemory(optin + 1)
	require.ErrorIs(t, err, cudaload.ErrInvalidValue)
	t.Logf("fill_u32: %d registers, max %d threads; opt-in shared %d B", regs, maxThreads, optin)
}

func TestGPUMissingFunctionIsNotFound(t *testing.T) {
	ctx := gputest.Context(t)
	k := loadKernels(t, ctx)
	_, err := k.mod.Function("no_such_kernel")
	require.ErrorIs(t, err, cudaload.ErrNotFound)
	require.Contains(t, err.Error(), "no_such_kernel")
}

func TestGPUInvalidImageIsTyped(t *testing.T) {
	ctx := gputest.Context(t)
	_, err := ctx.LoadModule([]byte("definitely not a CUBIN or PTX"))
	require.Error(t, err)
	var e *cudaload.Error
	require.ErrorAs(t, err, &e)
	require.Equal(t, "cuModuleLoadData", e.Op)
	t.Log(err)
}

func TestGPUUseAfterClose(t *testing.T) {
	shared := gputest.Context(t)
	// A second retain of the primary context, closed here; the shared one
	// stays usable.
	ctx, err := shared.Device().PrimaryContext()
	require.NoError(t, err)
	mod, err := ctx.LoadModule(kernelsPTX)
	require.NoError(t, err)
	fn, err := mod.Function("noop")
	require.NoError(t, err)
	s, err := ctx.NewStream()
	require.NoError(t, err)
	ev, err := ctx.NewEvent()
	require.NoError(t, err)
	one := cudaload.LaunchConfig{Grid: cudaload.Dim3{X: 1, Y: 1, Z: 1}, Block: cudaload.Dim3{X: 1, Y: 1, Z: 1}, Stream: s}
	require.NoError(t, fn.Launch(one, nil))
	require.NoError(t, ev.Record(s))
	require.NoError(t, ev.Synchronize())

	require.NoError(t, ev.Close())
	require.NoError(t, ev.Close())
	require.ErrorIs(t, ev.Record(s), cudaload.ErrClosed)
	require.NoError(t, s.Close())
	require.NoError(t, s.Close())
	require.ErrorIs(t, s.Synchronize(), cudaload.ErrClosed)
	require.ErrorIs(t, fn.Launch(one, nil), cudaload.ErrClosed)
	one.Stream = nil
	require.NoError(t, fn.Launch(one, nil))
	require.NoError(t, mod.Close())
	require.NoError(t, mod.Close())
	require.ErrorIs(t, fn.Launch(one, nil), cudaload.ErrClosed)
	require.NoError(t, ctx.Close())
	require.NoError(t, ctx.Close())
	_, err = ctx.MemAlloc(64)
	require.ErrorIs(t, err, cudaload.ErrClosed)

	p, err := shared.MemAlloc(64)
	require.NoError(t, err, "the shared retain is unaffected")
	require.NoError(t, shared.MemFree(p))
}

func TestGPUGetThenSetBindingWorks(t *testing.T) {
	ctx := gputest.Context(t)
	k := loadKernels(t, ctx)
	defer cudaload.SetSkipSetWhenCurrent(true)()
	const n = 1000
	buf := alloc(t, ctx, 4*n)
	var args cudaload.Args
	require.NoError(t, k.fill.Launch(grid1D(n), args.Reset().Ptr(buf).Uint32(n).Uint32(3)))
	got := make([]uint32, n)
	require.NoError(t, cudaload.CopyFromDevice(ctx, got, buf))
	requireAll(t, got, 3)
}

func TestGPUEncodeTiled(t *testing.T) {
	ctx := gputest.Context(t)
	const rows, cols = 256, 512
	buf := alloc(t, ctx, 2*rows*cols)
	tm, err := ctx.EncodeTiled(cudaload.TensorMapBFloat16, 2, buf,
		[]uint64{cols, rows}, []uint64{2 * cols}, []uint32{64, 128}, []uint32{1, 1},
		cudaload.TensorMapInterleaveNone, cudaload.TensorMapSwizzle128B, cudaload.TensorMapL2Promotion128B, cudaload.TensorMapOOBFillNone)
	if errors.Is(err, cudaload.ErrSymbolMissing) {
		t.Skip(err)
	}
	require.NoError(t, err)
	require.NotEqual(t, cudaload.TensorMap{}, tm)

	_, err = ctx.EncodeTiled(cudaload.TensorMapBFloat16, 6, buf, nil, nil, nil, nil, 0, 0, 0, 0)
	require.ErrorIs(t, err, cudaload.ErrInvalidArgument)
}

// TestGPUTiledEncoderMatchesEncodeTiledWithoutAllocating: Encode2D and
// Encode3D give EncodeTiled's bytes for the same tensor and box, allocate
// nothing, and check their arguments the same way.
func TestGPUTiledEncoderMatchesEncodeTiledWithoutAllocating(t *testing.T) {
	ctx := gputest.Context(t)
	const rows, cols = 256, 520
	buf := alloc(t, ctx, 2*rows*cols)
	want, err := ctx.EncodeTiled(cudaload.TensorMapFloat16, 2, buf,
		[]uint64{cols, rows}, []uint64{2 * cols}, []uint32{64, 64}, []uint32{1, 1},
		cudaload.TensorMapInterleaveNone, cudaload.TensorMapSwizzle128B, cudaload.TensorMapL2Promotion256B, cudaload.TensorMapOOBFillNone)
	if errors.Is(err, cudaload.ErrSymbolMissing) {
		t.Skip(err)
	}
	require.NoError(t, err)
	enc := ctx.NewTiledEncoder()
	var got cudaload.TensorMap
	encode := func() {
		err = enc.Encode2D(&got, cudaload.TensorMapFloat16, buf, cols, rows, 2*cols, 64, 64,
			cudaload.TensorMapSwizzle128B, cudaload.TensorMapL2Promotion256B, cudaload.TensorMapOOBFillNone)
	}
	encode()
	require.NoError(t, err)
	require.Equal(t, want, got)
	require.Zero(t, testing.AllocsPerRun(20, encode))
	require.NoError(t, err)

	err = enc.Encode2D(&got, cudaload.TensorMapFloat16, buf, cols, rows, 2*cols+2, 64, 64,
		cudaload.TensorMapSwizzle128B, cudaload.TensorMapL2Promotion256B, cudaload.TensorMapOOBFillNone)
	require.ErrorIs(t, err, cudaload.ErrInvalidArgument, "a row pitch that is not a multiple of 16 bytes")
	err = enc.Encode2D(nil, cudaload.TensorMapFloat16, buf, cols, rows, 2*cols, 64, 64,
		cudaload.TensorMapSwizzle128B, cudaload.TensorMapL2Promotion256B, cudaload.TensorMapOOBFillNone)
	require.ErrorIs(t, err, cudaload.ErrInvalidArgument, "no destination")

	// 3-D: the same matrix read as (64-wide chunk, row, chunk index), the
	// chunk axis's stride smaller than the rows'.
	const chunks = 512 / 64
	dims, strides, box := [3]uint64{64, rows, chunks}, [2]uint64{2 * cols, 128}, [3]uint32{64, 32, 4}
	want, err = ctx.EncodeTiled(cudaload.TensorMapFloat16, 3, buf, dims[:], strides[:], box[:], []uint32{1, 1, 1},
		cudaload.TensorMapInterleaveNone, cudaload.TensorMapSwizzle128B, cudaload.TensorMapL2PromotionNone, cudaload.TensorMapOOBFillNone)
	require.NoError(t, err)
	encode3 := func() {
		err = enc.Encode3D(&got, cudaload.TensorMapFloat16, buf, dims, strides, box,
			cudaload.TensorMapSwizzle128B, cudaload.TensorMapL2PromotionNone, cudaload.TensorMapOOBFillNone)
	}
	encode3()
	require.NoError(t, err)
	require.Equal(t, want, got)
	require.Zero(t, testing.AllocsPerRun(20, encode3))
	err = enc.Encode3D(&got, cudaload.TensorMapFloat16, buf, dims, [2]uint64{2 * cols, 120}, box,
		cudaload.TensorMapSwizzle128B, cudaload.TensorMapL2PromotionNone, cudaload.TensorMapOOBFillNone)
	require.ErrorIs(t, err, cudaload.ErrInvalidArgument, "a chunk stride that is not a multiple of 16 bytes")
}

// TestGPUBadDevicePointerIsTypedError runs last among the GPU tests: if a
// driver ever turned a bogus address into a device fault, the context
// would be lost for the rest of the process.
func TestGPUBadDevicePointerIsTypedError(t *testing.T) {
	ctx := gputest.Context(t)
	host := make([]uint32, 16)
	err := ctx.MemcpyHtoD(cudaload.DevicePtr(0x1000), unsafe.Pointer(&host[0]), 64)
	require.Error(t, err)
	var e *cudaload.Error
	require.ErrorAs(t, err, &e)
	require.Equal(t, "cuMemcpyHtoD_v2", e.Op)
	require.NotEqual(t, cudaload.Success, e.Code)
	t.Log(err)

	buf := alloc(t, ctx, 64)
	require.NoError(t, ctx.MemcpyHtoD(buf, unsafe.Pointer(&host[0]), 64), "context still usable")
	require.NoError(t, ctx.Synchronize())
}

// BenchmarkLaunchHostCost launches a trivial kernel back to back and
// reports the host time per launch. The stream is drained every 256
// launches with the timer stopped, so a full launch queue never turns the
// measurement into GPU time. Target: at most 2 µs.
func BenchmarkLaunchHostCost(b *testing.B) {
	ctx := gputest.Context(b)
	k := loadKernels(b, ctx)
	s, err := ctx.NewStream()
	require.NoError(b, err)
	defer s.Close()
	buf := alloc(b, ctx, 4*256)
	one := cudaload.LaunchConfig{Grid: cudaload.Dim3{X: 1, Y: 1, Z: 1}, Block: cudaload.Dim3{X: 32, Y: 1, Z: 1}, Stream: s}
	run := func(b *testing.B, launch func() error) {
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			if err := launch(); err != nil {
				b.Fatal(err)
			}
			if i++; i%256 == 0 {
				b.StopTimer()
				if err := s.Synchronize(); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
			}
		}
		b.StopTimer()
		if err := s.Synchronize(); err != nil {
			b.Fatal(err)
		}
	}
	b.Run("noop", func(b *testing.B) {
		run(b, func() error { return k.noop.Launch(one, nil) })
	})
	b.Run("fill_u32 3 args", func(b *testing.B) {
		var args cudaload.Args
		run(b, func() error { return k.fill.Launch(one, args.Reset().Ptr(buf).Uint32(256).Uint32(1)) })
	})
}

// BenchmarkBind compares the two ways of making the context current per
// call: cuCtxSetCurrent always, or cuCtxGetCurrent and set only if needed.
func BenchmarkBind(b *testing.B) {
	ctx := gputest.Context(b)
	for _, mode := range []struct {
		name string
		skip bool
	}{{"set always", false}, {"get then set", true}} {
		b.Run(mode.name, func(b *testing.B) {
			defer cudaload.SetSkipSetWhenCurrent(mode.skip)()
			b.ReportAllocs()
			for b.Loop() {
				if err := cudaload.BindOnce(ctx); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
