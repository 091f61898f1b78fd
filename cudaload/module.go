package cudaload

import (
	"errors"
	"sync/atomic"
	"unsafe"

	"github.com/ebitengine/purego"
)

// Module is a loaded device code image (cuModuleLoadData). Close unloads
// it; it must not race with launches of its functions.
type Module struct {
	ctx    *Context
	handle uintptr // CUmodule
	closed atomic.Bool
}

// LoadModule loads a device code image into the context. Production code
// passes a CUBIN built for the device's architecture: PTX also loads (the
// driver JIT-compiles it), but PTX from a toolkit newer than the driver
// fails with ErrUnsupportedPTXVersion, which a CUBIN never does. The image
// is copied, so the caller may reuse it.
func (c *Context) LoadModule(image []byte) (*Module, error) {
	if err := c.usable("LoadModule"); err != nil {
		return nil, err
	}
	if len(image) == 0 {
		return nil, argError("LoadModule", "empty image")
	}
	// The driver reads PTX up to a NUL byte; a trailing NUL is harmless
	// after an ELF image, so every image gets one.
	buf := make([]byte, len(image)+1)
	copy(buf, image)
	if err := c.enter("LoadModule"); err != nil {
		return nil, err
	}
	var h uintptr
	r, _, _ := purego.SyscallN(c.drv.sym.cuModuleLoadData, uintptr(unsafe.Pointer(&h)), uintptr(unsafe.Pointer(&buf[0])))
	c.exit()
	if err := check("cuModuleLoadData", Result(int32(r))); err != nil {
		return nil, err
	}
	return &Module{ctx: c, handle: h}, nil
}

func (m *Module) usable(op string) error {
	if m == nil || m.closed.Load() {
		return &ClosedError{Op: op, Object: "module"}
	}
	return m.ctx.usable(op)
}

// Function looks up a kernel by its (mangled, unless declared extern "C")
// name. A missing kernel is an *Error with code ErrNotFound.
func (m *Module) Function(name string) (*Function, error) {
	if err := m.usable("Function"); err != nil {
		return nil, err
	}
	cname := cString(name)
	if err := m.ctx.enter("Function"); err != nil {
		return nil, err
	}
	var h uintptr
	r, _, _ := purego.SyscallN(m.ctx.drv.sym.cuModuleGetFunction, uintptr(unsafe.Pointer(&h)), m.handle, uintptr(unsafe.Pointer(&cname[0])))
	m.ctx.exit()
	if err := check("cuModuleGetFunction", Result(int32(r))); err != nil {
		return nil, &FunctionError{Name: name, Err: err}
	}
	return &Function{mod: m, handle: h, name: name}, nil
}

// FunctionError wraps a failed kernel lookup with the kernel's name.
type FunctionError struct {
	Name string
	Err  error
}

// Error implements the error interface.
func (e *FunctionError) Error() string { return "kernel " + e.Name + ": " + e.Err.Error() }

// Unwrap returns the driver error.
func (e *FunctionError) Unwrap() error { return e.Err }

// Close unloads the module (cuModuleUnload); its Functions then return
// ErrClosed. Close is idempotent.
func (m *Module) Close() error {
	if m == nil || !m.closed.CompareAndSwap(false, true) {
		return nil
	}
	if err := m.ctx.enter("Module.Close"); err != nil {
		if errors.Is(err, ErrClosed) {
			return nil // context closed first; nothing can be done now
		}
		return err
	}
	r := call(m.ctx.drv.sym.cuModuleUnload, m.handle)
	m.ctx.exit()
	return check("cuModuleUnload", r)
}

// FunctionAttribute is a CUfunction_attribute, for Function.Attribute.
type FunctionAttribute int

// Kernel attributes (the values are the driver's).
const (
	AttrMaxThreadsPerBlock          FunctionAttribute = 0 // most threads per block a launch may use
	AttrSharedSizeBytes             FunctionAttribute = 1 // static shared memory, bytes
	AttrConstSizeBytes              FunctionAttribute = 2
	AttrLocalSizeBytes              FunctionAttribute = 3 // local memory per thread (spills), bytes
	AttrNumRegs                     FunctionAttribute = 4 // registers per thread
	AttrPTXVersion                  FunctionAttribute = 5 // e.g. 90 for PTX 9.0
	AttrBinaryVersion               FunctionAttribute = 6 // e.g. 90 for sm_90
	AttrCacheModeCA                 FunctionAttribute = 7
	AttrMaxDynamicSharedSizeBytes   FunctionAttribute = 8 // opt-in limit for dynamic shared memory, bytes
	AttrPreferredSharedMemCarveout  FunctionAttribute = 9
	AttrClusterSizeMustBeSet        FunctionAttribute = 10
	AttrRequiredClusterWidth        FunctionAttribute = 11
	AttrRequiredClusterHeight       FunctionAttribute = 12
	AttrRequiredClusterDepth        FunctionAttribute = 13
	AttrNonPortableClusterSizeAllow FunctionAttribute = 14
)

// Function is a kernel in a loaded Module. It is safe for concurrent use:
// many goroutines may launch it at once, each with its own Args.
type Function struct {
	mod    *Module
	handle uintptr // CUfunction
	name   string
}

// Name is the name the function was looked up by.
func (f *Function) Name() string { return f.name }

// Handle is the raw CUfunction.
func (f *Function) Handle() uintptr { return f.handle }

func (f *Function) usable(op string) error {
	if f == nil {
		return &ClosedError{Op: op, Object: "function"}
	}
	return f.mod.usable(op)
}

// Attribute reads a kernel attribute (cuFuncGetAttribute), e.g. its
// register count.
func (f *Function) Attribute(a FunctionAttribute) (int, error) {
	if err := f.usable("Function.Attribute"); err != nil {
		return 0, err
	}
	c := f.mod.ctx
	if err := c.enter("Function.Attribute"); err != nil {
		return 0, err
	}
	var v int32
	r, _, _ := purego.SyscallN(c.drv.sym.cuFuncGetAttribute, uintptr(unsafe.Pointer(&v)), uintptr(uint32(a)), f.handle)
	c.exit()
	if err := check("cuFuncGetAttribute", Result(int32(r))); err != nil {
		return 0, err
	}
	return int(v), nil
}

// SetMaxDynamicSharedMemory lets launches of f request up to bytes of
// dynamic shared memory (cuFuncSetAttribute with
// CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES); needed above 48 KiB, up
// to Device.MaxSharedMemoryPerBlockOptin minus the kernel's static shared
// memory.
func (f *Function) SetMaxDynamicSharedMemory(bytes int) error {
	if err := f.usable("SetMaxDynamicSharedMemory"); err != nil {
		return err
	}
	if bytes < 0 || bytes > 1<<31-1 {
		return argError("SetMaxDynamicSharedMemory", "%d bytes out of range", bytes)
	}
	c := f.mod.ctx
	if err := c.enter("SetMaxDynamicSharedMemory"); err != nil {
		return err
	}
	r := call(c.drv.sym.cuFuncSetAttribute, f.handle, uintptr(AttrMaxDynamicSharedSizeBytes), uintptr(bytes))
	c.exit()
	return check("cuFuncSetAttribute", r)
}
