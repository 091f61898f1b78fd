package cublaslt

import (
	"errors"
	"fmt"
	"os"
	"runtime"

	"github.com/ebitengine/purego"

	"github.com/detgemm/detgemm/internal/dynlib"
)

// ErrNotFound is matched (errors.Is) by the error Open returns when no
// candidate loads, and on macOS, where CUDA does not exist. It is
// cuBLASLt's own: a missing cuBLAS, CUDA driver or NVRTC does not match it.
// The error (a *dynlib.NotFoundError) lists every candidate tried and why
// it failed, the folders skipped because they are not present, and where
// cuBLASLt comes from.
var ErrNotFound = errors.New("cublaslt: cuBLASLt library not found")

// libraryLabel names the library in search errors.
const libraryLabel = "cuBLASLt (libcublasLt)"

// Option configures Open.
type Option func(*options)

type options struct{ path string }

// WithLibraryPath makes Open load exactly this file, soname or directory,
// ahead of the DETGEMM_LIBCUBLASLT environment variable.
func WithLibraryPath(path string) Option { return func(o *options) { o.path = path } }

// Library is a loaded cuBLASLt with its entry points resolved.
type Library struct {
	path string

	create, destroy                        uintptr
	descCreate, descDestroy, descSet       uintptr
	layoutCreate, layoutDestroy, layoutSet uintptr
	prefCreate, prefDestroy, prefSet       uintptr
	heuristic, matmul, getVersion          uintptr
}

// required lists the symbols without which a candidate is rejected; all are
// looked up before any is used, so a library too old for one of them is
// passed over with that reason.
var required = []string{
	"cublasLtCreate", "cublasLtDestroy",
	"cublasLtMatmulDescCreate", "cublasLtMatmulDescDestroy", "cublasLtMatmulDescSetAttribute",
	"cublasLtMatrixLayoutCreate", "cublasLtMatrixLayoutDestroy", "cublasLtMatrixLayoutSetAttribute",
	"cublasLtMatmulPreferenceCreate", "cublasLtMatmulPreferenceDestroy", "cublasLtMatmulPreferenceSetAttribute",
	"cublasLtMatmulAlgoGetHeuristic", "cublasLtMatmul", "cublasLtGetVersion",
}

// Open finds and loads cuBLASLt (see the package documentation for the
// search order). A candidate that loads but lacks a required symbol is
// rejected with that reason and the search goes on.
func Open(opts ...Option) (*Library, error) {
	var o options
	for _, opt := range opts {
		if opt != nil {
			opt(&o)
		}
	}
	if nf := dynlib.UnsupportedOS(libraryLabel, ErrNotFound, runtime.GOOS); nf != nil {
		return nil, nf
	}
	cands, skipped := search(os.Getenv, o.path)
	var lib *Library
	dl, err := dynlib.Open(libraryLabel, cands, func(dl *dynlib.Library) error {
		var err error
		lib, err = bind(dl)
		return err
	})
	if err != nil {
		var nf *dynlib.NotFoundError
		if errors.As(err, &nf) {
			nf.Sentinel, nf.Skipped, nf.Hint = ErrNotFound, skipped, notFoundHint(runtime.GOOS)
			return nil, nf
		}
		return nil, err
	}
	lib.path = dl.Path
	return lib, nil
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
	return &Library{
		create:        addr["cublasLtCreate"],
		destroy:       addr["cublasLtDestroy"],
		descCreate:    addr["cublasLtMatmulDescCreate"],
		descDestroy:   addr["cublasLtMatmulDescDestroy"],
		descSet:       addr["cublasLtMatmulDescSetAttribute"],
		layoutCreate:  addr["cublasLtMatrixLayoutCreate"],
		layoutDestroy: addr["cublasLtMatrixLayoutDestroy"],
		layoutSet:     addr["cublasLtMatrixLayoutSetAttribute"],
		prefCreate:    addr["cublasLtMatmulPreferenceCreate"],
		prefDestroy:   addr["cublasLtMatmulPreferenceDestroy"],
		prefSet:       addr["cublasLtMatmulPreferenceSetAttribute"],
		heuristic:     addr["cublasLtMatmulAlgoGetHeuristic"],
		matmul:        addr["cublasLtMatmul"],
		getVersion:    addr["cublasLtGetVersion"],
	}, nil
}

// Path is the candidate that loaded.
func (l *Library) Path() string { return l.path }

// Version is cublasLtGetVersion, which needs no handle or GPU:
// major*10000 + minor*100 + patch (e.g. 120400 for 12.4.0).
func (l *Library) Version() int {
	r, _, _ := purego.SyscallN(l.getVersion)
	return int(r)
}

// VersionString formats Version as major.minor.patch.
func (l *Library) VersionString() string { return FormatVersion(l.Version()) }

// FormatVersion formats a cuBLAS-style version code as major.minor.patch.
func FormatVersion(v int) string { return fmt.Sprintf("%d.%d.%d", v/10000, v%10000/100, v%100) }
