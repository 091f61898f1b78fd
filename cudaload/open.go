package cudaload

import (
	"errors"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/detgemm/detgemm/internal/dynlib"
	"github.com/ebitengine/purego"
)

// Option configures Open.
type Option func(*options)

type options struct {
	libraryPath string
}

// WithLibraryPath makes Open load the driver from path (a file, or a
// directory holding libcuda.so.1 / nvcuda.dll) and nothing else. It takes
// precedence over the DETGEMM_LIBCUDA environment variable.
func WithLibraryPath(path string) Option {
	return func(o *options) { o.libraryPath = path }
}

// openCache holds the drivers loaded so far, keyed by the override in force
// ("" for the default search). A driver library is never unloaded: CUDA
// does not support dlclose after cuInit.
var openCache struct {
	sync.Mutex
	drivers map[string]*Driver
}

// errorDriver is the first driver loaded; Result uses it for the driver's
// own error names and messages.
var errorDriver atomic.Pointer[Driver]

// Open finds the CUDA driver library, resolves the entry points this
// package uses, and initialises the driver (cuInit). The search order is
// documented in the package overview; when nothing loads, the error
// matches ErrDriverNotFound and lists every candidate with its reason.
//
// Open is cheap to call again: the driver is loaded once per process (per
// override) and the same *Driver is returned.
func Open(opts ...Option) (*Driver, error) {
	var o options
	for _, opt := range opts {
		if opt != nil {
			opt(&o)
		}
	}
	override := o.libraryPath
	if override == "" {
		override = os.Getenv(EnvLibraryPath)
	}

	openCache.Lock()
	defer openCache.Unlock()
	if d := openCache.drivers[override]; d != nil {
		return d, nil
	}

	if err := platformError(runtime.GOOS); err != nil {
		return nil, err
	}
	var loaded *Driver
	candidates, skipped := driverCandidates(runtime.GOOS, override, defaultDriverDirs(runtime.GOOS, ""))
	_, err := dynlib.Open(driverLabel(runtime.GOOS), candidates, func(lib *dynlib.Library) error {
		d, err := loadDriver(lib)
		if err != nil {
			return err
		}
		loaded = d
		return nil
	})
	if err != nil {
		var nf *dynlib.NotFoundError
		if errors.As(err, &nf) {
			nf.Sentinel = ErrDriverNotFound
			nf.Skipped = skipped
			nf.Hint = driverHint(runtime.GOOS)
			return nil, &DriverNotFoundError{Search: nf}
		}
		return nil, err
	}
	if openCache.drivers == nil {
		openCache.drivers = make(map[string]*Driver)
	}
	openCache.drivers[override] = loaded
	errorDriver.CompareAndSwap(nil, loaded)
	return loaded, nil
}

// loadDriver checks that lib is a usable driver: cuInit succeeds (a stub
// says CUDA_ERROR_STUB_LIBRARY) and every required symbol is present.
func loadDriver(lib *dynlib.Library) (*Driver, error) {
	d := &Driver{lib: lib, path: lib.Path}
	initFn, err := lib.Lookup("cuInit")
	if err != nil {
		return nil, &SymbolMissingError{Symbol: "cuInit", Path: lib.Path, Err: err}
	}
	versionFn, err := lib.Lookup("cuDriverGetVersion")
	if err != nil {
		return nil, &SymbolMissingError{Symbol: "cuDriverGetVersion", Path: lib.Path, Err: err}
	}
	var v int32
	r1, _, _ := purego.SyscallN(versionFn, uintptr(unsafe.Pointer(&v)))
	if r := Result(int32(r1)); r == Success {
		d.version = int(v)
	}
	switch r := call(initFn, 0); r {
	case Success:
	case ErrStub:
		closeLibrary(lib.Handle)
		return nil, &stubError{path: lib.Path}
	default:
		return nil, newError("cuInit", r)
	}
	if err := d.sym.resolve(lib, lib.Path, d.version); err != nil {
		return nil, err
	}
	return d, nil
}
