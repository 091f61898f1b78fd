package cublas

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"unsafe"

	"github.com/ebitengine/purego"

	"github.com/detgemm/detgemm/internal/dynlib"
)

// ErrNotFound is matched (errors.Is) by the error Open returns when no
// candidate loads, and on macOS, where CUDA does not exist. It is cuBLAS's
// own: a missing CUDA driver or NVRTC does not match it. The error (a
// *dynlib.NotFoundError) lists every candidate tried and why it failed,
// the folders skipped because they are not present, and where cuBLAS
// comes from.
var ErrNotFound = errors.New("cublas: cuBLAS library not found")

// libraryLabel names the library in search errors.
const libraryLabel = "cuBLAS (libcublas)"

// Option configures Open.
type Option func(*options)

type options struct{ path string }

// WithLibraryPath makes Open load exactly this file, soname or directory,
// ahead of the DETGEMM_LIBCUBLAS environment variable.
func WithLibraryPath(path string) Option { return func(o *options) { o.path = path } }

// Library is a loaded cuBLAS with its entry points resolved.
type Library struct {
	path string

	create, destroy, setStream, setMathMode, getVersion, gemmEx uintptr
	getProperty                                                 uintptr // optional
}

// required lists the symbols without which a candidate is rejected.
var required = []string{
	"cublasCreate_v2", "cublasDestroy_v2", "cublasSetStream_v2",
	"cublasSetMathMode", "cublasGetVersion_v2", "cublasGemmEx",
}

// Open finds and loads cuBLAS (see the package documentation for the search
// order). A candidate that loads but lacks a required symbol is rejected
// with that reason and the search goes on.
func Open(opts ...Option) (*Library, error) {
	var o options
	for _, opt := range opts {
		if opt != nil {
			opt(&o)
		}
	}
	if err := platformError(runtime.GOOS); err != nil {
		return nil, err
	}
	cands, skipped := search(os.Getenv, o.path, "")
	nf := &dynlib.NotFoundError{
		Library:  libraryLabel,
		Sentinel: ErrNotFound,
		Skipped:  skipped,
		Hint:     notFoundHint(runtime.GOOS),
	}
	for _, c := range cands {
		preloadLt(c)
		var lib *Library
		dl, err := dynlib.Open(libraryLabel, []string{c}, func(dl *dynlib.Library) error {
			var err error
			lib, err = bind(dl)
			return err
		})
		if err == nil {
			lib.path = dl.Path
			return lib, nil
		}
		var one *dynlib.NotFoundError
		if errors.As(err, &one) {
			nf.Attempts = append(nf.Attempts, one.Attempts...)
		} else {
			nf.Attempts = append(nf.Attempts, dynlib.Attempt{Path: c, Err: err})
		}
	}
	if len(nf.Attempts) == 0 {
		nf.Attempts = append(nf.Attempts, dynlib.Attempt{Path: "(none)", Err: errors.New("no candidate paths")})
	}
	return nil, nf
}

// preloadLt opens the cuBLASLt beside an absolute cuBLAS candidate, so that
// cuBLAS's dependency on it resolves by soname to the matching file even
// when its folder is not on the loader's path. Failure is left for the
// cuBLAS open itself to report.
func preloadLt(candidate string) {
	if !filepath.IsAbs(candidate) {
		return
	}
	lt := ltSibling(candidate)
	if lt == "" {
		return
	}
	if _, err := os.Stat(lt); err != nil {
		return
	}
	_, _ = dynlib.Open("cuBLASLt", []string{lt}, nil)
}

// bind resolves every entry point, or names the first missing one.
func bind(dl *dynlib.Library) (*Library, error) {
	addr := make(map[string]uintptr, len(required))
	for _, s := range required {
		p, err := dl.Lookup(s)
		if err != nil {
			return nil, err
		}
		addr[s] = p
	}
	lib := &Library{
		create:      addr["cublasCreate_v2"],
		destroy:     addr["cublasDestroy_v2"],
		setStream:   addr["cublasSetStream_v2"],
		setMathMode: addr["cublasSetMathMode"],
		getVersion:  addr["cublasGetVersion_v2"],
		gemmEx:      addr["cublasGemmEx"],
	}
	lib.getProperty, _ = dl.Lookup("cublasGetProperty")
	return lib, nil
}

// Path is the candidate that loaded.
func (l *Library) Path() string { return l.path }

// Version is the library's version from cublasGetProperty, which needs no
// handle or GPU; older libraries without that symbol return an error.
func (l *Library) Version() (major, minor, patch int, err error) {
	if l.getProperty == 0 {
		return 0, 0, 0, fmt.Errorf("cublas: %s has no cublasGetProperty", l.path)
	}
	var v [3]int32
	for i := range v {
		// libraryPropertyType: MAJOR_VERSION=0, MINOR_VERSION=1, PATCH_LEVEL=2.
		r, _, _ := purego.SyscallN(l.getProperty, uintptr(i), uintptr(unsafe.Pointer(&v[i])))
		if err := Check("cublasGetProperty", r); err != nil {
			return 0, 0, 0, err
		}
	}
	return int(v[0]), int(v[1]), int(v[2]), nil
}
