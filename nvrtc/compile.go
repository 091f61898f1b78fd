package nvrtc

import (
	"fmt"
	"runtime"
	"strings"
	"unsafe"

	"github.com/ebitengine/purego"
)

// Header is a source file that the program can #include by Name without
// touching the file system.
type Header struct {
	Name   string // as written in the #include directive, e.g. "prelude.cuh"
	Source string
}

// Result is a successful compile.
type Result struct {
	CUBIN []byte // an ELF image for the architecture named in the options
	// Log is the program log: warnings, and with --ptxas-options=-v the
	// ptxas resource report.
	Log string
}

// Compile compiles one CUDA C++ program to CUBIN. name is the program's
// name in diagnostics (e.g. "util.cu"); options are NVRTC options and must
// name a real architecture (--gpu-architecture=sm_90 or -arch=sm_90);
// headers are made available to #include.
//
// On failure the error is a *CompileError with the whole log; the log is
// returned on success too. It never returns PTX.
func (c *Compiler) Compile(source, name string, options []string, headers ...Header) (*Result, error) {
	if err := checkArchOptions(options); err != nil {
		return nil, err
	}
	src, err := cString("source", source)
	if err != nil {
		return nil, err
	}
	cname, err := cString("name", name)
	if err != nil {
		return nil, err
	}
	hdrSrc := make([]string, len(headers))
	hdrName := make([]string, len(headers))
	for i, h := range headers {
		hdrSrc[i], hdrName[i] = h.Source, h.Name
	}
	hs, err := newCStringArray("header source", hdrSrc)
	if err != nil {
		return nil, err
	}
	defer hs.free()
	hn, err := newCStringArray("header name", hdrName)
	if err != nil {
		return nil, err
	}
	defer hn.free()
	opts, err := newCStringArray("option", options)
	if err != nil {
		return nil, err
	}
	defer opts.free()

	var prog uintptr
	r, _, _ := purego.SyscallN(c.fn.createProgram,
		uintptr(unsafe.Pointer(&prog)),
		uintptr(unsafe.Pointer(&src[0])),
		uintptr(unsafe.Pointer(&cname[0])),
		uintptr(len(headers)),
		hs.addr(),
		hn.addr())
	runtime.KeepAlive(src)
	runtime.KeepAlive(cname)
	if err := c.check("nvrtcCreateProgram", r); err != nil {
		return nil, err
	}
	defer func() {
		// The program is gone whatever this returns; nothing to report.
		purego.SyscallN(c.fn.destroyProgram, uintptr(unsafe.Pointer(&prog)))
	}()

	r, _, _ = purego.SyscallN(c.fn.compileProgram, prog, uintptr(len(options)), opts.addr())
	compileStatus := Status(int32(r))
	log, logErr := c.programLog(prog)

	if compileStatus != StatusSuccess {
		ce := &CompileError{
			Name:    name,
			Status:  compileStatus,
			Log:     log,
			Result:  &Result{Log: log},
			Library: c.Path(),
		}
		if f, ok := missingBuiltins(log); ok {
			ce.Builtins = f
		}
		return nil, ce
	}
	if logErr != nil {
		return nil, logErr
	}
	cubin, err := c.cubin(prog)
	if err != nil {
		return nil, err
	}
	return &Result{CUBIN: cubin, Log: log}, nil
}

// programLog fetches the log, without its terminating NUL.
func (c *Compiler) programLog(prog uintptr) (string, error) {
	var size uint64 // size_t
	r, _, _ := purego.SyscallN(c.fn.getProgramLogSize, prog, uintptr(unsafe.Pointer(&size)))
	if err := c.check("nvrtcGetProgramLogSize", r); err != nil {
		return "", err
	}
	if size <= 1 {
		return "", nil
	}
	buf := make([]byte, size)
	r, _, _ = purego.SyscallN(c.fn.getProgramLog, prog, uintptr(unsafe.Pointer(&buf[0])))
	if err := c.check("nvrtcGetProgramLog", r); err != nil {
		return "", err
	}
	return strings.TrimRight(string(buf), "\x00"), nil
}

func (c *Compiler) cubin(prog uintptr) ([]byte, error) {
	var size uint64 // size_t
	r, _, _ := purego.SyscallN(c.fn.getCUBINSize, prog, uintptr(unsafe.Pointer(&size)))
	if err := c.check("nvrtcGetCUBINSize", r); err != nil {
		return nil, err
	}
	if size == 0 {
		return nil, &ArchError{} // NVRTC made PTX only
	}
	buf := make([]byte, size)
	r, _, _ = purego.SyscallN(c.fn.getCUBIN, prog, uintptr(unsafe.Pointer(&buf[0])))
	if err := c.check("nvrtcGetCUBIN", r); err != nil {
		return nil, err
	}
	return buf, nil
}

// archOptionNames are the spellings NVRTC accepts for the target.
var archOptionNames = []string{"--gpu-architecture", "-arch"}

// checkArchOptions insists that every architecture option names a real
// architecture (sm_XX[a|f]) and that there is at least one: without one,
// NVRTC defaults to a virtual architecture and produces no CUBIN.
func checkArchOptions(options []string) error {
	found := false
	for i := 0; i < len(options); i++ {
		o := options[i]
		for _, n := range archOptionNames {
			var value, shown string
			switch {
			case strings.HasPrefix(o, n+"="):
				value, shown = o[len(n)+1:], o
			case o == n && i+1 < len(options):
				value, shown = options[i+1], o+" "+options[i+1]
				i++
			default:
				continue
			}
			if !strings.HasPrefix(value, "sm_") {
				return &ArchError{Option: shown}
			}
			found = true
			break
		}
	}
	if !found {
		return &ArchError{}
	}
	return nil
}

// String describes the compiler for logs: "NVRTC 12.4 (libnvrtc.so.12)".
func (c *Compiler) String() string {
	return fmt.Sprintf("NVRTC %d.%d (%s)", c.major, c.minor, c.Path())
}
