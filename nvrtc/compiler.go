package nvrtc

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"unsafe"

	"github.com/ebitengine/purego"

	"github.com/detgemm/detgemm/internal/dynlib"
)

// Compiler is an opened libnvrtc. It is safe for concurrent use.
type Compiler struct {
	lib          *dynlib.Library
	major, minor int
	fn           functions
}

// functions holds the resolved entry points; optional ones may be zero.
type functions struct {
	getErrorString    uintptr
	version           uintptr
	createProgram     uintptr
	destroyProgram    uintptr
	compileProgram    uintptr
	getProgramLogSize uintptr
	getProgramLog     uintptr
	getCUBINSize      uintptr
	getCUBIN          uintptr

	// Optional: added in CUDA 11.2.
	getNumSupportedArchs uintptr
	getSupportedArchs    uintptr
}

// resolve looks every required symbol up, so that a library lacking one is
// rejected with an error naming it rather than failing later.
func resolve(lib *dynlib.Library) (functions, error) {
	var f functions
	required := []struct {
		name string
		dst  *uintptr
	}{
		{"nvrtcGetErrorString", &f.getErrorString},
		{"nvrtcVersion", &f.version},
		{"nvrtcCreateProgram", &f.createProgram},
		{"nvrtcDestroyProgram", &f.destroyProgram},
		{"nvrtcCompileProgram", &f.compileProgram},
		{"nvrtcGetProgramLogSize", &f.getProgramLogSize},
		{"nvrtcGetProgramLog", &f.getProgramLog},
		{"nvrtcGetCUBINSize", &f.getCUBINSize},
		{"nvrtcGetCUBIN", &f.getCUBIN},
	}
	for _, r := range required {
		p, err := lib.Lookup(r.name)
		if err != nil {
			return functions{}, ownSymbolError(err)
		}
		*r.dst = p
	}
	// Optional symbols: absence is reported when they are used.
	f.getNumSupportedArchs, _ = lib.Lookup("nvrtcGetNumSupportedArchs")
	f.getSupportedArchs, _ = lib.Lookup("nvrtcGetSupportedArchs")
	return f, nil
}

// ownSymbolError marks a missing symbol as NVRTC's, so it matches
// ErrSymbolNotFound (and not the driver's sentinel).
func ownSymbolError(err error) error {
	var se *dynlib.SymbolError
	if errors.As(err, &se) {
		se.Sentinel = ErrSymbolNotFound
	}
	return err
}

var (
	openMu sync.Mutex
	opened = map[string]*Compiler{} // by override ("" for the default search)
)

// Open finds and loads libnvrtc (see the package documentation for the
// search order). A successful Open is cached for the life of the process
// per requested path, so calling it again is cheap; a failed one is not,
// so a library installed later is found.
func Open(opts ...Option) (*Compiler, error) {
	cfg := applyOptions(opts)
	over := override(cfg, os.Getenv)

	openMu.Lock()
	defer openMu.Unlock()
	if c, ok := opened[over]; ok {
		return c, nil
	}
	env := processEnv()
	if err := platformError(env.goos); err != nil {
		return nil, err
	}
	cands, skipped := search(env, over)
	c, err := open(cands)
	if err != nil {
		var nf *dynlib.NotFoundError
		if errors.As(err, &nf) {
			nf.Skipped = skipped
			nf.Hint = notFoundHint(env.goos)
		}
		return nil, err
	}
	opened[over] = c
	return c, nil
}

// open loads the first candidate that has every required symbol and
// answers nvrtcVersion; its failure matches ErrNotFound.
func open(cands []string) (*Compiler, error) {
	var c *Compiler
	_, err := dynlib.Open(libraryName, cands, func(lib *dynlib.Library) error {
		fn, err := resolve(lib)
		if err != nil {
			return err
		}
		cc := &Compiler{lib: lib, fn: fn}
		if err := cc.queryVersion(); err != nil {
			return err
		}
		c = cc
		return nil
	})
	if err != nil {
		var nf *dynlib.NotFoundError
		if errors.As(err, &nf) {
			nf.Sentinel = ErrNotFound
		}
		return nil, err
	}
	return c, nil
}

func (c *Compiler) queryVersion() error {
	var major, minor int32
	r, _, _ := purego.SyscallN(c.fn.version,
		uintptr(unsafe.Pointer(&major)), uintptr(unsafe.Pointer(&minor)))
	if err := c.check("nvrtcVersion", r); err != nil {
		return err
	}
	if major < 11 {
		return fmt.Errorf("nvrtc: version %d.%d is too old; detgemm needs NVRTC 11.2 or newer", major, minor)
	}
	c.major, c.minor = int(major), int(minor)
	return nil
}

// Path returns what the library was loaded from: a soname or an absolute
// path, as it appeared in the candidate list.
func (c *Compiler) Path() string { return c.lib.Path }

// Version returns NVRTC's major and minor version, e.g. 12, 4.
func (c *Compiler) Version() (major, minor int) { return c.major, c.minor }

// SupportedArchs returns the real architectures this NVRTC can compile
// for, as numbers (80 for sm_80), ascending. It needs
// nvrtcGetSupportedArchs (CUDA 11.2 and newer); without it the error
// matches ErrSymbolNotFound.
func (c *Compiler) SupportedArchs() ([]int, error) {
	for _, s := range []struct {
		name string
		p    uintptr
	}{{"nvrtcGetNumSupportedArchs", c.fn.getNumSupportedArchs}, {"nvrtcGetSupportedArchs", c.fn.getSupportedArchs}} {
		if s.p == 0 {
			return nil, &dynlib.SymbolError{Library: c.lib.Path, Symbol: s.name, Err: errors.New("not exported"), Sentinel: ErrSymbolNotFound}
		}
	}
	var n int32
	r, _, _ := purego.SyscallN(c.fn.getNumSupportedArchs, uintptr(unsafe.Pointer(&n)))
	if err := c.check("nvrtcGetNumSupportedArchs", r); err != nil {
		return nil, err
	}
	if n <= 0 {
		return nil, nil
	}
	archs := make([]int32, n)
	r, _, _ = purego.SyscallN(c.fn.getSupportedArchs, uintptr(unsafe.Pointer(&archs[0])))
	if err := c.check("nvrtcGetSupportedArchs", r); err != nil {
		return nil, err
	}
	out := make([]int, n)
	for i, a := range archs {
		out[i] = int(a)
	}
	return out, nil
}

// check turns an nvrtcResult into nil or a *CallError.
func (c *Compiler) check(fn string, r uintptr) error {
	s := Status(int32(r))
	if s == StatusSuccess {
		return nil
	}
	return &CallError{Func: fn, Status: s, Message: c.errorString(s)}
}

func (c *Compiler) errorString(s Status) string {
	if c.fn.getErrorString == 0 {
		return ""
	}
	p, _, _ := purego.SyscallN(c.fn.getErrorString, uintptr(s))
	return goString(p)
}
