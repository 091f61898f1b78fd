package cudaload_test

import (
	"errors"
	"fmt"

	"github.com/detgemm/detgemm/cudaload"
)

// Open finds and initialises the driver; without one, the error says why
// for every candidate tried.
func ExampleOpen() {
	drv, err := cudaload.Open()
	if errors.Is(err, cudaload.ErrDriverNotFound) {
		fmt.Println("no CUDA driver:", err)
		return
	}
	if err != nil {
		fmt.Println(err)
		return
	}
	dev, err := drv.Device(0)
	if err != nil {
		fmt.Println(err)
		return
	}
	major, minor := dev.ComputeCapability()
	fmt.Printf("%s, driver %s, sm_%d%d, %d SMs\n", dev.Name(), cudaload.FormatVersion(drv.Version()), major, minor, dev.SMCount())
}

// A failed driver call is an *Error naming the entry point; errors.Is
// matches its status code.
func ExampleError() {
	err := fmt.Errorf("workspace: %w", &cudaload.Error{Op: "cuMemAlloc_v2", Code: cudaload.ErrOutOfMemory})
	fmt.Println(err)
	fmt.Println(errors.Is(err, cudaload.ErrOutOfMemory))
	// Output:
	// workspace: cuMemAlloc_v2: CUDA_ERROR_OUT_OF_MEMORY (2): out of memory
	// true
}

// Args packs kernel parameters at their C sizes and alignments, here for
// a kernel taking (float *out, unsigned n, double scale, CUtensorMap tm).
func ExampleArgs() {
	var tm cudaload.TensorMap
	var args cudaload.Args
	args.Reset().Ptr(0x7f0000000000).Uint32(4096).Float64(0.5).TensorMap(&tm)
	fmt.Println(args.Len(), "params,", args.Size(), "bytes:", args.String())
	// Output:
	// 4 params, 192 bytes: Args{4 params, 192 bytes: offsets [0 8 16 64]}
}
