package cudaload

// The driver entry points this package calls, declared in one place (like
// x/sys's hand-written declarations). Each field holds a resolved address.
// Where the driver exports a versioned entry point, the versioned one is
// bound: an unversioned name is the CUDA 3.x ABI (32-bit sizes and device
// pointers) kept only for old binaries.
type symbols struct {
	// Initialisation and version.
	cuInit             uintptr // (unsigned flags)
	cuDriverGetVersion uintptr // (int* version)
	cuGetErrorName     uintptr // (CUresult, const char** name)
	cuGetErrorString   uintptr // (CUresult, const char** message)

	// Devices.
	cuDeviceGet          uintptr // (CUdevice*, int ordinal)
	cuDeviceGetCount     uintptr // (int*)
	cuDeviceGetName      uintptr // (char*, int len, CUdevice)
	cuDeviceGetAttribute uintptr // (int*, CUdevice_attribute, CUdevice)
	cuDeviceTotalMem     uintptr // cuDeviceTotalMem_v2 (size_t*, CUdevice)

	// Contexts.
	cuDevicePrimaryCtxRetain  uintptr // (CUcontext*, CUdevice)
	cuDevicePrimaryCtxRelease uintptr // cuDevicePrimaryCtxRelease_v2 (CUdevice)
	cuCtxSetCurrent           uintptr // (CUcontext)
	cuCtxGetCurrent           uintptr // (CUcontext*)
	cuCtxSynchronize          uintptr // ()

	// Memory.
	cuMemAlloc          uintptr // cuMemAlloc_v2 (CUdeviceptr*, size_t)
	cuMemFree           uintptr // cuMemFree_v2 (CUdeviceptr)
	cuMemGetInfo        uintptr // cuMemGetInfo_v2 (size_t* free, size_t* total)
	cuMemcpyHtoD        uintptr // cuMemcpyHtoD_v2 (CUdeviceptr dst, const void* src, size_t)
	cuMemcpyDtoH        uintptr // cuMemcpyDtoH_v2 (void* dst, CUdeviceptr src, size_t)
	cuMemcpyDtoD        uintptr // cuMemcpyDtoD_v2 (CUdeviceptr dst, CUdeviceptr src, size_t)
	cuMemcpyHtoDAsync   uintptr // cuMemcpyHtoDAsync_v2 (..., CUstream)
	cuMemcpyDtoHAsync   uintptr // cuMemcpyDtoHAsync_v2 (..., CUstream)
	cuMemcpyDtoDAsync   uintptr // cuMemcpyDtoDAsync_v2 (..., CUstream)
	cuMemsetD8          uintptr // cuMemsetD8_v2 (CUdeviceptr, unsigned char, size_t n)
	cuMemsetD32         uintptr // cuMemsetD32_v2 (CUdeviceptr, unsigned int, size_t n)
	cuMemsetD32Async    uintptr // (CUdeviceptr, unsigned int, size_t n, CUstream); no _v2 exists
	cuStreamCreate      uintptr // (CUstream*, unsigned flags)
	cuStreamDestroy     uintptr // cuStreamDestroy_v2 (CUstream)
	cuStreamSynchronize uintptr // (CUstream)
	cuStreamIsCapturing uintptr // (CUstream, CUstreamCaptureStatus*); CUDA 10.0+

	// Events.
	cuEventCreate      uintptr // (CUevent*, unsigned flags)
	cuEventDestroy     uintptr // cuEventDestroy_v2 (CUevent)
	cuEventRecord      uintptr // (CUevent, CUstream)
	cuEventSynchronize uintptr // (CUevent)
	cuEventElapsedTime uintptr // cuEventElapsedTime_v2 (12.8+) else cuEventElapsedTime (float*, CUevent, CUevent)

	// Modules and launch.
	cuModuleLoadData    uintptr // (CUmodule*, const void* image)
	cuModuleUnload      uintptr // (CUmodule)
	cuModuleGetFunction uintptr // (CUfunction*, CUmodule, const char*)
	cuFuncGetAttribute  uintptr // (int*, CUfunction_attribute, CUfunction)
	cuFuncSetAttribute  uintptr // (CUfunction, CUfunction_attribute, int)
	cuLaunchKernel      uintptr // (CUfunction, gx, gy, gz, bx, by, bz, unsigned shmem, CUstream, void** params, void** extra)

	// CUDA graphs (stream capture); all exist since CUDA 11.4.
	cuStreamBeginCapture        uintptr // cuStreamBeginCapture_v2 (CUstream, CUstreamCaptureMode)
	cuStreamEndCapture          uintptr // (CUstream, CUgraph*)
	cuGraphInstantiateWithFlags uintptr // (CUgraphExec*, CUgraph, unsigned long long flags)
	cuGraphLaunch               uintptr // (CUgraphExec, CUstream)
	cuGraphExecDestroy          uintptr // (CUgraphExec)
	cuGraphDestroy              uintptr // (CUgraph)
}

// symbol is one row of the table: the names to try, in order of preference,
// and where the address goes.
type symbol struct {
	names []string
	dst   *uintptr
}

// table lists every required entry point. A driver lacking one is refused
// with a *SymbolMissingError; optional entry points (tensor maps) are
// resolved on first use instead, so an old driver still loads.
func (s *symbols) table() []symbol {
	return []symbol{
		{[]string{"cuInit"}, &s.cuInit},
		{[]string{"cuDriverGetVersion"}, &s.cuDriverGetVersion},
		{[]string{"cuGetErrorName"}, &s.cuGetErrorName},
		{[]string{"cuGetErrorString"}, &s.cuGetErrorString},

		{[]string{"cuDeviceGet"}, &s.cuDeviceGet},
		{[]string{"cuDeviceGetCount"}, &s.cuDeviceGetCount},
		{[]string{"cuDeviceGetName"}, &s.cuDeviceGetName},
		{[]string{"cuDeviceGetAttribute"}, &s.cuDeviceGetAttribute},
		{[]string{"cuDeviceTotalMem_v2"}, &s.cuDeviceTotalMem},

		{[]string{"cuDevicePrimaryCtxRetain"}, &s.cuDevicePrimaryCtxRetain},
		{[]string{"cuDevicePrimaryCtxRelease_v2"}, &s.cuDevicePrimaryCtxRelease},
		{[]string{"cuCtxSetCurrent"}, &s.cuCtxSetCurrent},
		{[]string{"cuCtxGetCurrent"}, &s.cuCtxGetCurrent},
		{[]string{"cuCtxSynchronize"}, &s.cuCtxSynchronize},

		{[]string{"cuMemAlloc_v2"}, &s.cuMemAlloc},
		{[]string{"cuMemFree_v2"}, &s.cuMemFree},
		{[]string{"cuMemGetInfo_v2"}, &s.cuMemGetInfo},
		{[]string{"cuMemcpyHtoD_v2"}, &s.cuMemcpyHtoD},
		{[]string{"cuMemcpyDtoH_v2"}, &s.cuMemcpyDtoH},
		{[]string{"cuMemcpyDtoD_v2"}, &s.cuMemcpyDtoD},
		{[]string{"cuMemcpyHtoDAsync_v2"}, &s.cuMemcpyHtoDAsync},
		{[]string{"cuMemcpyDtoHAsync_v2"}, &s.cuMemcpyDtoHAsync},
		{[]string{"cuMemcpyDtoDAsync_v2"}, &s.cuMemcpyDtoDAsync},
		{[]string{"cuMemsetD8_v2"}, &s.cuMemsetD8},
		{[]string{"cuMemsetD32_v2"}, &s.cuMemsetD32},
		{[]string{"cuMemsetD32Async"}, &s.cuMemsetD32Async},
		{[]string{"cuStreamCreate"}, &s.cuStreamCreate},
		{[]string{"cuStreamDestroy_v2"}, &s.cuStreamDestroy},
		{[]string{"cuStreamSynchronize"}, &s.cuStreamSynchronize},
		{[]string{"cuStreamIsCapturing"}, &s.cuStreamIsCapturing},

		{[]string{"cuEventCreate"}, &s.cuEventCreate},
		{[]string{"cuEventDestroy_v2"}, &s.cuEventDestroy},
		{[]string{"cuEventRecord"}, &s.cuEventRecord},
		{[]string{"cuEventSynchronize"}, &s.cuEventSynchronize},
		{[]string{"cuEventElapsedTime_v2", "cuEventElapsedTime"}, &s.cuEventElapsedTime},

		{[]string{"cuModuleLoadData"}, &s.cuModuleLoadData},
		{[]string{"cuModuleUnload"}, &s.cuModuleUnload},
		{[]string{"cuModuleGetFunction"}, &s.cuModuleGetFunction},
		{[]string{"cuFuncGetAttribute"}, &s.cuFuncGetAttribute},
		{[]string{"cuFuncSetAttribute"}, &s.cuFuncSetAttribute},
		{[]string{"cuLaunchKernel"}, &s.cuLaunchKernel},

		{[]string{"cuStreamBeginCapture_v2"}, &s.cuStreamBeginCapture},
		{[]string{"cuStreamEndCapture"}, &s.cuStreamEndCapture},
		{[]string{"cuGraphInstantiateWithFlags"}, &s.cuGraphInstantiateWithFlags},
		{[]string{"cuGraphLaunch"}, &s.cuGraphLaunch},
		{[]string{"cuGraphExecDestroy"}, &s.cuGraphExecDestroy},
		{[]string{"cuGraphDestroy"}, &s.cuGraphDestroy},
	}
}

// symTensorMapEncodeTiled is optional (CUDA 12.0+), resolved on first use.
const symTensorMapEncodeTiled = "cuTensorMapEncodeTiled"

// lookup is the part of *dynlib.Library the resolver needs; tests supply
// fakes.
type lookuper interface {
	Lookup(symbol string) (uintptr, error)
}

// resolve fills every row of the table, or returns a *SymbolMissingError
// naming the first absent symbol (its preferred name).
func (s *symbols) resolve(lib lookuper, path string, version int) error {
	for _, row := range s.table() {
		var firstErr error
		for _, name := range row.names {
			p, err := lib.Lookup(name)
			if err == nil && p != 0 {
				*row.dst = p
				break
			}
			if firstErr == nil {
				firstErr = err
			}
		}
		if *row.dst == 0 {
			return &SymbolMissingError{Symbol: row.names[0], Path: path, Version: version, Err: firstErr}
		}
	}
	return nil
}
