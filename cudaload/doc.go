// Package cudaload binds the CUDA driver API (libcuda) from pure Go: the
// library is loaded at run time with purego, so programs build with
// CGO_ENABLED=0 and run on machines without the CUDA toolkit. It covers
// what a GEMM engine needs and no more: devices, contexts, memory, streams,
// events, modules, launches and TMA tensor maps. It knows nothing of GEMM.
//
//	drv, err := cudaload.Open()
//	dev, err := drv.Device(0)
//	ctx, err := dev.PrimaryContext()
//	defer ctx.Close()
//	mod, err := ctx.LoadModule(cubin)
//	fn, err := mod.Function("fill_u32")
//	var args cudaload.Args
//	err = fn.Launch(cudaload.LaunchConfig{Grid: cudaload.Dim3{X: 64, Y: 1, Z: 1}, Block: cudaload.Dim3{X: 256, Y: 1, Z: 1}},
//		args.Reset().Ptr(buf).Uint32(n).Uint32(7))
//
// # Finding the driver
//
// Open tries, in order, and takes the first that loads and initialises:
//
//  1. the override, if set: WithLibraryPath, else the DETGEMM_LIBCUDA
//     environment variable (a file, or a directory holding the library).
//     An override is the only candidate: a library the user named is never
//     silently replaced by another;
//  2. libcuda.so.1 through the system loader's own search (nvcuda.dll on
//     Windows);
//  3. libcuda.so.1 by absolute path in /usr/lib/x86_64-linux-gnu,
//     /usr/lib64, /usr/lib/aarch64-linux-gnu, /usr/local/nvidia/lib64,
//     /usr/lib/wsl/lib (WSL2, often missing from the loader's path),
//     /usr/local/cuda/compat and the versioned toolkits' compat folders
//     /usr/local/cuda-X.Y/compat (newest first), skipping directories that
//     do not exist.
//
// Bare libcuda.so is never tried: it is often the toolkit's link-time stub.
// A candidate whose cuInit answers CUDA_ERROR_STUB_LIBRARY (34) is unloaded
// and recorded as a stub (ErrStubLibrary), and the search goes on. A driver
// lacking an entry point this package needs is refused with an error
// naming the symbol and the driver version (ErrSymbolMissing). When no
// candidate works, the error matches ErrDriverNotFound (the driver's own
// sentinel: a missing NVRTC does not match it) and lists every candidate
// and its reason, the folders skipped because they are not present, and
// where the driver comes from; it also matches each reason
// (ErrStubLibrary, ErrNoDevice, ...). On macOS, which CUDA no longer
// supports, Open makes no search and says so; the error matches
// ErrDriverNotFound too.
//
// Versioned entry points are bound where they exist (cuMemAlloc_v2,
// cuStreamDestroy_v2, cuEventElapsedTime_v2 on CUDA 12.8+, ...); the
// symbol table is one list in symbols.go. cuTensorMapEncodeTiled is
// resolved on first use, so a driver without it still loads.
//
// # Threads and contexts
//
// A CUDA context is current per OS thread, and goroutines migrate between
// threads: a context made current on one goroutine's thread is not current
// for the next call from another (the driver answers
// CUDA_ERROR_INVALID_CONTEXT, 201). So every method that needs the context
// locks the goroutine to its thread, makes the context current
// (cuCtxSetCurrent), calls the driver and unlocks. Contexts, streams,
// events, modules and functions are therefore safe for concurrent use from
// any number of goroutines, with no setup by the caller. Close methods are
// idempotent and must not race with other calls on the same object; after
// Close, calls return an error matching ErrClosed rather than reaching the
// driver with a dead handle. Close streams, events and modules before the
// context they belong to.
//
// # Errors
//
// A driver status is a Result, which implements error with the driver's
// name and message ("CUDA_ERROR_OUT_OF_MEMORY (2): out of memory"; a
// built-in table serves before the driver is loaded). A failed call is an
// *Error carrying the entry point; errors.Is(err, cudaload.ErrOutOfMemory)
// matches the code through it. Arguments refused before reaching the
// driver give an *ArgumentError, which matches both ErrInvalidArgument and
// ErrInvalidValue. Nothing in this package panics on bad input or a missing
// library or symbol.
//
// # Hot path
//
// Function.Launch, the asynchronous copies and Event.Record call the
// driver through purego.SyscallN with integer arguments from a pooled
// argument block, so they allocate nothing. Kernel arguments are packed at
// their real sizes and natural alignment into a reusable Args; Launch
// writes cuLaunchKernel's void** table into the same block and pins it
// (runtime.Pinner) for the call. With one Args per call site, a launch
// allocates nothing in steady state; BenchmarkLaunchHostCost measures the
// host cost of a launch on a GPU.
//
// Production code loads CUBIN images (from NVRTC): PTX also loads, but PTX
// produced by a toolkit newer than the driver is refused
// (ErrUnsupportedPTXVersion).
package cudaload
