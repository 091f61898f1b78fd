// Package gputest gives tests a CUDA context, or skips them with the
// loader's reason when the machine has no usable GPU.
//
// The driver, device 0 and its primary context are opened once per test
// process and shared; tests must not close the returned Context.
//
// Set DETGEMM_REQUIRE_GPU=1 to make a missing GPU fail the test instead of
// skipping it, so a GPU machine cannot pass by skipping everything.
package gputest

import (
	"os"
	"sync"
	"testing"

	"github.com/detgemm/detgemm/cudaload"
)

// EnvRequireGPU names the variable that turns skips into failures.
const EnvRequireGPU = "DETGEMM_REQUIRE_GPU"

var shared struct {
	once sync.Once
	drv  *cudaload.Driver
	dev  *cudaload.Device
	ctx  *cudaload.Context
	err  error // why there is no driver, device or context
}

func open() {
	drv, err := cudaload.Open()
	if err != nil {
		shared.err = err
		return
	}
	shared.drv = drv
	n, err := drv.DeviceCount()
	if err != nil {
		shared.err = err
		return
	}
	if n == 0 {
		shared.err = cudaload.ErrNoDevice
		return
	}
	dev, err := drv.Device(0)
	if err != nil {
		shared.err = err
		return
	}
	ctx, err := dev.PrimaryContext()
	if err != nil {
		shared.err = err
		return
	}
	shared.dev, shared.ctx = dev, ctx
}

// Driver returns the loaded driver, or skips t when none loads.
func Driver(t testing.TB) *cudaload.Driver {
	t.Helper()
	shared.once.Do(open)
	if shared.drv == nil {
		skip(t, shared.err)
	}
	return shared.drv
}

// Context returns the primary context of device 0, or skips t (with the
// loader's reason) when there is no driver or device. The context is shared
// by every test in the process; do not close it.
func Context(t testing.TB) *cudaload.Context {
	t.Helper()
	shared.once.Do(open)
	if shared.ctx == nil {
		skip(t, shared.err)
	}
	return shared.ctx
}

func skip(t testing.TB, err error) {
	t.Helper()
	msg := "no CUDA device: " + err.Error()
	if os.Getenv(EnvRequireGPU) != "" {
		t.Fatal(msg + " (" + EnvRequireGPU + " is set)")
	}
	t.Skip(msg)
}

// Kernel loads cubin into ctx for the rest of the test and returns its
// entry point name; it fails t when either step does.
func Kernel(t testing.TB, ctx *cudaload.Context, cubin []byte, name string) *cudaload.Function {
	t.Helper()
	mod, err := ctx.LoadModule(cubin)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { mod.Close() })
	fn, err := mod.Function(name)
	if err != nil {
		t.Fatal(err)
	}
	return fn
}
