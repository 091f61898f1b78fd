// Package cusparselt binds the few entry points of NVIDIA's cuSPARSELt
// that the bench needs to time a 2:4-sparse product beside the engine's
// (issue 24): handle, matrix and matmul descriptors, the default
// algorithm's plan, pruning, compression and cusparseLtMatmul. The library
// is loaded at run time with purego, so the bench builds with
// CGO_ENABLED=0 and runs where no cuSPARSELt is installed (Open then
// returns an error listing every place it looked).
//
// # Finding the library
//
// Open tries the path in the environment variable DETGEMM_LIBCUSPARSELT
// (exclusively), else the soname libcusparseLt.so.0 through the system
// loader, then the folders the cuBLAS binding searches (cublas.SearchDirs)
// and the Python wheel's nvidia/cusparselt/lib beside each nvidia/cublas/lib
// (pip's nvidia-cusparselt-cu12 and -cu13, which PyTorch installs), then
// the wheel folders of each python3 on PATH (pythonDirs).
//
// # Opaque structures
//
// cuSPARSELt's handle, descriptors and plan are structs of bytes the
// caller owns (11024 bytes in 0.4, 1024 in 0.6, 512 in 0.8). This package gives each
// opaqueSize bytes, more than any release has used, 16-byte aligned, held
// by the Go value that owns it, so none is freed while the library may
// read it (the Go heap does not move objects).
//
// # Threads and contexts
//
// cuSPARSELt works in the CUDA context current on the calling OS thread
// (the primary context, through the CUDA runtime). Callers lock the OS
// thread and make their context current before Init and every call. Not
// safe for concurrent use.
package cusparselt

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/ebitengine/purego"

	"github.com/detgemm/detgemm/bench/cublas"
	"github.com/detgemm/detgemm/internal/dynlib"
)

// ErrNotFound is matched (errors.Is) by the error Open returns when no
// candidate loads.
var ErrNotFound = errors.New("cusparselt: cuSPARSELt library not found")

// EnvLibrary names the environment variable that overrides the search: a
// file path, a soname, or a directory to look in.
const EnvLibrary = "DETGEMM_LIBCUSPARSELT"

const libraryLabel = "cuSPARSELt (libcusparseLt)"

// libraryNames are the sonames tried.
var libraryNames = []string{"libcusparseLt.so.0"}

// Library is a loaded cuSPARSELt with its entry points resolved.
type Library struct {
	path string
	fn   map[string]uintptr
}

// required lists the symbols without which a candidate is rejected.
var required = []string{
	"cusparseLtInit", "cusparseLtDestroy", "cusparseLtGetVersion",
	"cusparseLtDenseDescriptorInit", "cusparseLtStructuredDescriptorInit", "cusparseLtMatDescriptorDestroy",
	"cusparseLtMatmulDescriptorInit", "cusparseLtMatmulAlgSelectionInit",
	"cusparseLtMatmulPlanInit", "cusparseLtMatmulPlanDestroy", "cusparseLtMatmulGetWorkspace",
	"cusparseLtSpMMAPrune", "cusparseLtSpMMACompressedSize", "cusparseLtSpMMACompress", "cusparseLtMatmul",
}

// Candidates returns the paths Open would try, in order.
func Candidates() []string {
	c, _ := search(os.Getenv)
	return c
}

// search builds the candidate list: the override alone when one is set.
func search(getenv func(string) string) (cands, skipped []string) {
	if o := getenv(EnvLibrary); o != "" {
		return dynlib.Override(libraryNames, o), nil
	}
	return dynlib.Search(libraryNames, append(searchDirs(cublas.SearchDirs(getenv)), pythonDirs(getenv("PATH"))...))
}

// pythonDirs are the wheel folders of each python3 on PATH, for a virtual
// environment that is not activated (no VIRTUAL_ENV) but whose python3
// is the one found first, as on the GPU machine (/opt/torch/.venv):
// bin/../lib/python3*/site-packages/nvidia/{cusparselt,cu13}/lib.
func pythonDirs(path string) []string {
	var out []string
	for _, d := range filepath.SplitList(path) {
		if d == "" {
			continue
		}
		if _, err := os.Stat(filepath.Join(d, "python3")); err != nil {
			continue
		}
		site := filepath.Join(filepath.Dir(d), "lib", "python3*", "site-packages")
		out = append(out, filepath.Join(site, "nvidia", "cusparselt", "lib"), filepath.Join(site, "nvidia", "cu13", "lib"))
	}
	return out
}

// searchDirs is cuBLAS's folders, each Python wheel's nvidia/cublas/lib
// followed by its sibling nvidia/cusparselt/lib.
func searchDirs(cublasDirs []string) []string {
	var out []string
	for _, d := range cublasDirs {
		out = append(out, d)
		if rest, ok := strings.CutSuffix(filepath.ToSlash(d), "nvidia/cublas/lib"); ok {
			out = append(out, filepath.FromSlash(rest+"nvidia/cusparselt/lib"))
		}
	}
	return out
}

// Open finds and loads cuSPARSELt. A candidate that loads but lacks a
// required symbol is rejected with that reason and the search goes on.
func Open() (*Library, error) {
	if nf := dynlib.UnsupportedOS(libraryLabel, ErrNotFound, runtime.GOOS); nf != nil {
		return nil, nf
	}
	cands, skipped := search(os.Getenv)
	var lib *Library
	dl, err := dynlib.Open(libraryLabel, cands, func(dl *dynlib.Library) error {
		fn := make(map[string]uintptr, len(required))
		for _, s := range required {
			p, err := dl.Lookup(s)
			if err != nil {
				return err
			}
			fn[s] = p
		}
		lib = &Library{fn: fn}
		return nil
	})
	if err != nil {
		var nf *dynlib.NotFoundError
		if errors.As(err, &nf) {
			nf.Sentinel, nf.Skipped = ErrNotFound, skipped
			nf.Hint = "install cuSPARSELt (pip install nvidia-cusparselt-cu13, or NVIDIA's package), or set " + EnvLibrary
			return nil, nf
		}
		return nil, err
	}
	lib.path = dl.Path
	return lib, nil
}

// Path is the candidate that loaded.
func (l *Library) Path() string { return l.path }

// call runs one entry point and turns its cusparseStatus_t into an error.
func (l *Library) call(name string, args ...uintptr) error {
	r, _, _ := purego.SyscallN(l.fn[name], args...)
	return check(name, r)
}

// Status is cusparseStatus_t.
type Status int32

// statusNames are cusparseStatus_t's names.
var statusNames = map[Status]string{
	0: "CUSPARSE_STATUS_SUCCESS", 1: "CUSPARSE_STATUS_NOT_INITIALIZED", 2: "CUSPARSE_STATUS_ALLOC_FAILED",
	3: "CUSPARSE_STATUS_INVALID_VALUE", 4: "CUSPARSE_STATUS_ARCH_MISMATCH", 5: "CUSPARSE_STATUS_MAPPING_ERROR",
	6: "CUSPARSE_STATUS_EXECUTION_FAILED", 7: "CUSPARSE_STATUS_INTERNAL_ERROR", 8: "CUSPARSE_STATUS_MATRIX_TYPE_NOT_SUPPORTED",
	9: "CUSPARSE_STATUS_ZERO_PIVOT", 10: "CUSPARSE_STATUS_NOT_SUPPORTED", 11: "CUSPARSE_STATUS_INSUFFICIENT_RESOURCES",
}

// String is the status's name.
func (s Status) String() string {
	if n, ok := statusNames[s]; ok {
		return n
	}
	return fmt.Sprintf("cusparseStatus_t(%d)", int32(s))
}

// Error is a failed cuSPARSELt call: the entry point and its status.
type Error struct {
	Op     string
	Status Status
}

// Error reads "cusparseLtMatmulPlanInit: CUSPARSE_STATUS_INVALID_VALUE".
func (e *Error) Error() string { return e.Op + ": " + e.Status.String() }

// check turns a raw return value into nil or an *Error.
func check(op string, r uintptr) error {
	if s := Status(int32(uint32(r))); s != 0 {
		return &Error{Op: op, Status: s}
	}
	return nil
}
