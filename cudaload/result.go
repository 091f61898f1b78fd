package cudaload

import (
	"strconv"
	"sync"
)

// Result is a CUDA driver status code (CUresult). Every value other than
// Success is an error; its text is the driver's own name and description
// when the driver is loaded, and a built-in table's otherwise, so an error
// prints the same way before and after Open:
//
//	CUDA_ERROR_OUT_OF_MEMORY (2): out of memory
//
// errors.Is(err, ErrOutOfMemory) matches a Result anywhere in err's chain.
type Result int

// The driver's status codes that callers are most likely to test for. The
// values are fixed by the CUDA ABI.
const (
	Success                      Result = 0
	ErrInvalidValue              Result = 1
	ErrOutOfMemory               Result = 2
	ErrNotInitialized            Result = 3
	ErrDeinitialized             Result = 4
	ErrProfilerDisabled          Result = 5
	ErrStub                      Result = 34 // CUDA_ERROR_STUB_LIBRARY: the toolkit's link-time stub, not a driver
	ErrDeviceUnavailable         Result = 46
	ErrNoDevice                  Result = 100
	ErrInvalidDevice             Result = 101
	ErrDeviceNotLicensed         Result = 102
	ErrInvalidImage              Result = 200
	ErrInvalidContext            Result = 201
	ErrContextAlreadyCurrent     Result = 202
	ErrMapFailed                 Result = 205
	ErrUnmapFailed               Result = 206
	ErrNoBinaryForGPU            Result = 209
	ErrECCUncorrectable          Result = 214
	ErrUnsupportedLimit          Result = 215
	ErrContextAlreadyInUse       Result = 216
	ErrPeerAccessUnsupported     Result = 217
	ErrInvalidPTX                Result = 218
	ErrInvalidGraphicsContext    Result = 219
	ErrNvlinkUncorrectable       Result = 220
	ErrJITCompilerNotFound       Result = 221
	ErrUnsupportedPTXVersion     Result = 222
	ErrJITCompilationDisabled    Result = 223
	ErrUnsupportedExecAffinity   Result = 224
	ErrUnsupportedDevSideSync    Result = 225
	ErrInvalidSource             Result = 300
	ErrFileNotFound              Result = 301
	ErrSharedObjectSymbolMissing Result = 302
	ErrSharedObjectInitFailed    Result = 303
	ErrOperatingSystem           Result = 304
	ErrInvalidHandle             Result = 400
	ErrIllegalState              Result = 401
	ErrLossyQuery                Result = 402
	ErrNotFound                  Result = 500
	ErrNotReady                  Result = 600
	ErrIllegalAddress            Result = 700
	ErrLaunchOutOfResources      Result = 701
	ErrLaunchTimeout             Result = 702
	ErrLaunchIncompatibleTexture Result = 703
	ErrPrimaryContextActive      Result = 708
	ErrContextIsDestroyed        Result = 709
	ErrAssert                    Result = 710
	ErrHardwareStackError        Result = 714
	ErrIllegalInstruction        Result = 715
	ErrMisalignedAddress         Result = 716
	ErrInvalidAddressSpace       Result = 717
	ErrInvalidPC                 Result = 718
	ErrLaunchFailed              Result = 719
	ErrCooperativeLaunchTooLarge Result = 720
	ErrNotPermitted              Result = 800
	ErrNotSupported              Result = 801
	ErrSystemNotReady            Result = 802
	ErrSystemDriverMismatch      Result = 803
	ErrCompatNotSupported        Result = 804
	ErrTimeout                   Result = 909
	ErrInvalidClusterSize        Result = 912
	ErrUnknown                   Result = 999
)

// builtinResults names the codes above for use before (or without) a
// driver; the messages follow the driver's cuGetErrorString wording.
var builtinResults = map[Result][2]string{
	Success:                      {"CUDA_SUCCESS", "no error"},
	ErrInvalidValue:              {"CUDA_ERROR_INVALID_VALUE", "invalid argument"},
	ErrOutOfMemory:               {"CUDA_ERROR_OUT_OF_MEMORY", "out of memory"},
	ErrNotInitialized:            {"CUDA_ERROR_NOT_INITIALIZED", "initialization error"},
	ErrDeinitialized:             {"CUDA_ERROR_DEINITIALIZED", "driver shutting down"},
	ErrProfilerDisabled:          {"CUDA_ERROR_PROFILER_DISABLED", "profiler disabled while using external profiling tool"},
	ErrStub:                      {"CUDA_ERROR_STUB_LIBRARY", "CUDA driver is a stub library"},
	ErrDeviceUnavailable:         {"CUDA_ERROR_DEVICE_UNAVAILABLE", "CUDA-capable device(s) is/are busy or unavailable"},
	ErrNoDevice:                  {"CUDA_ERROR_NO_DEVICE", "no CUDA-capable device is detected"},
	ErrInvalidDevice:             {"CUDA_ERROR_INVALID_DEVICE", "invalid device ordinal"},
	ErrDeviceNotLicensed:         {"CUDA_ERROR_DEVICE_NOT_LICENSED", "device doesn't have valid Grid license"},
	ErrInvalidImage:              {"CUDA_ERROR_INVALID_IMAGE", "device kernel image is invalid"},
	ErrInvalidContext:            {"CUDA_ERROR_INVALID_CONTEXT", "invalid device context"},
	ErrContextAlreadyCurrent:     {"CUDA_ERROR_CONTEXT_ALREADY_CURRENT", "context already current"},
	ErrMapFailed:                 {"CUDA_ERROR_MAP_FAILED", "mapping of buffer object failed"},
	ErrUnmapFailed:               {"CUDA_ERROR_UNMAP_FAILED", "unmapping of buffer object failed"},
	ErrNoBinaryForGPU:            {"CUDA_ERROR_NO_BINARY_FOR_GPU", "no kernel image is available for execution on the device"},
	ErrECCUncorrectable:          {"CUDA_ERROR_ECC_UNCORRECTABLE", "uncorrectable ECC error encountered"},
	ErrUnsupportedLimit:          {"CUDA_ERROR_UNSUPPORTED_LIMIT", "limit is not supported on this architecture"},
	ErrContextAlreadyInUse:       {"CUDA_ERROR_CONTEXT_ALREADY_IN_USE", "exclusive-thread device already in use by a different thread"},
	ErrPeerAccessUnsupported:     {"CUDA_ERROR_PEER_ACCESS_UNSUPPORTED", "peer access is not supported between these two devices"},
	ErrInvalidPTX:                {"CUDA_ERROR_INVALID_PTX", "a PTX JIT compilation failed"},
	ErrInvalidGraphicsContext:    {"CUDA_ERROR_INVALID_GRAPHICS_CONTEXT", "invalid OpenGL or DirectX context"},
	ErrNvlinkUncorrectable:       {"CUDA_ERROR_NVLINK_UNCORRECTABLE", "uncorrectable NVLink error detected during the execution"},
	ErrJITCompilerNotFound:       {"CUDA_ERROR_JIT_COMPILER_NOT_FOUND", "PTX JIT compiler library not found"},
	ErrUnsupportedPTXVersion:     {"CUDA_ERROR_UNSUPPORTED_PTX_VERSION", "the provided PTX was compiled with an unsupported toolchain."},
	ErrJITCompilationDisabled:    {"CUDA_ERROR_JIT_COMPILATION_DISABLED", "PTX JIT compilation was disabled"},
	ErrUnsupportedExecAffinity:   {"CUDA_ERROR_UNSUPPORTED_EXEC_AFFINITY", "the provided execution affinity is not supported"},
	ErrUnsupportedDevSideSync:    {"CUDA_ERROR_UNSUPPORTED_DEVSIDE_SYNC", "the provided PTX contains unsupported call to cudaDeviceSynchronize"},
	ErrInvalidSource:             {"CUDA_ERROR_INVALID_SOURCE", "device kernel image is invalid"},
	ErrFileNotFound:              {"CUDA_ERROR_FILE_NOT_FOUND", "file not found"},
	ErrSharedObjectSymbolMissing: {"CUDA_ERROR_SHARED_OBJECT_SYMBOL_NOT_FOUND", "shared object symbol not found"},
	ErrSharedObjectInitFailed:    {"CUDA_ERROR_SHARED_OBJECT_INIT_FAILED", "shared object initialization failed"},
	ErrOperatingSystem:           {"CUDA_ERROR_OPERATING_SYSTEM", "OS call failed or operation not supported on this OS"},
	ErrInvalidHandle:             {"CUDA_ERROR_INVALID_HANDLE", "invalid resource handle"},
	ErrIllegalState:              {"CUDA_ERROR_ILLEGAL_STATE", "the operation cannot be performed in the present state"},
	ErrLossyQuery:                {"CUDA_ERROR_LOSSY_QUERY", "attempted introspection would be semantically lossy"},
	ErrNotFound:                  {"CUDA_ERROR_NOT_FOUND", "named symbol not found"},
	ErrNotReady:                  {"CUDA_ERROR_NOT_READY", "device not ready"},
	ErrIllegalAddress:            {"CUDA_ERROR_ILLEGAL_ADDRESS", "an illegal memory access was encountered"},
	ErrLaunchOutOfResources:      {"CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES", "too many resources requested for launch"},
	ErrLaunchTimeout:             {"CUDA_ERROR_LAUNCH_TIMEOUT", "the launch timed out and was terminated"},
	ErrLaunchIncompatibleTexture: {"CUDA_ERROR_LAUNCH_INCOMPATIBLE_TEXTURING", "launch uses incompatible texturing mode"},
	ErrPrimaryContextActive:      {"CUDA_ERROR_PRIMARY_CONTEXT_ACTIVE", "primary context active"},
	ErrContextIsDestroyed:        {"CUDA_ERROR_CONTEXT_IS_DESTROYED", "context is destroyed"},
	ErrAssert:                    {"CUDA_ERROR_ASSERT", "device-side assert triggered"},
	ErrHardwareStackError:        {"CUDA_ERROR_HARDWARE_STACK_ERROR", "hardware stack error"},
	ErrIllegalInstruction:        {"CUDA_ERROR_ILLEGAL_INSTRUCTION", "an illegal instruction was encountered"},
	ErrMisalignedAddress:         {"CUDA_ERROR_MISALIGNED_ADDRESS", "misaligned address"},
	ErrInvalidAddressSpace:       {"CUDA_ERROR_INVALID_ADDRESS_SPACE", "operation not supported on global/shared address space"},
	ErrInvalidPC:                 {"CUDA_ERROR_INVALID_PC", "invalid program counter"},
	ErrLaunchFailed:              {"CUDA_ERROR_LAUNCH_FAILED", "unspecified launch failure"},
	ErrCooperativeLaunchTooLarge: {"CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE", "too many blocks in cooperative launch"},
	ErrNotPermitted:              {"CUDA_ERROR_NOT_PERMITTED", "operation not permitted"},
	ErrNotSupported:              {"CUDA_ERROR_NOT_SUPPORTED", "operation not supported"},
	ErrSystemNotReady:            {"CUDA_ERROR_SYSTEM_NOT_READY", "system not yet initialized"},
	ErrSystemDriverMismatch:      {"CUDA_ERROR_SYSTEM_DRIVER_MISMATCH", "system has unsupported display driver / cuda driver combination"},
	ErrCompatNotSupported:        {"CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE", "forward compatibility was attempted on non supported HW"},
	ErrTimeout:                   {"CUDA_ERROR_TIMEOUT", "wait operation timed out"},
	ErrInvalidClusterSize:        {"CUDA_ERROR_INVALID_CLUSTER_SIZE", "invalid cluster size"},
	ErrUnknown:                   {"CUDA_ERROR_UNKNOWN", "unknown error"},
}

// resultTexts caches what the loaded driver says about each code, so an
// error path asks the driver once per code.
var resultTexts sync.Map // Result -> [2]string

// Name is the code's symbolic name, e.g. "CUDA_ERROR_OUT_OF_MEMORY".
func (r Result) Name() string { return r.texts()[0] }

// Message is the driver's one-line description, e.g. "out of memory".
func (r Result) Message() string { return r.texts()[1] }

// Error formats the code as "NAME (code): message".
func (r Result) Error() string {
	t := r.texts()
	return t[0] + " (" + strconv.Itoa(int(r)) + "): " + t[1]
}

func (r Result) texts() [2]string {
	if v, ok := resultTexts.Load(r); ok {
		return v.([2]string)
	}
	t, fromDriver := r.lookupTexts()
	if fromDriver {
		resultTexts.Store(r, t)
	}
	return t
}

// lookupTexts asks the loaded driver first and falls back to the built-in
// table; the bool says whether the answer came from the driver (and so may
// be cached: before Open the answer may still improve).
func (r Result) lookupTexts() ([2]string, bool) {
	t, known := builtinResults[r]
	if !known {
		t = [2]string{"CUDA_ERROR_" + strconv.Itoa(int(r)), "unrecognized CUDA driver status"}
	}
	d := errorDriver.Load()
	if d == nil {
		return t, false
	}
	name, okName := d.errorText(d.sym.cuGetErrorName, r)
	msg, okMsg := d.errorText(d.sym.cuGetErrorString, r)
	if okName {
		t[0] = name
	}
	if okMsg {
		t[1] = msg
	}
	return t, true
}
