package main

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strings"
	"unsafe"

	"github.com/detgemm/detgemm/internal/dynlib"
	"github.com/detgemm/detgemm/kernels"
	"github.com/detgemm/detgemm/nvrtc"
	"github.com/ebitengine/purego"
)

// ptxCompiler asks NVRTC for the PTX of a program: what the front end hands
// to ptxas. The nvrtc package returns CUBIN only, on purpose (PTX must not
// reach a driver), so this tool binds the few calls it needs itself.
//
// Why PTX: NVRTC 12.4 does not compile the same source to the same SASS
// twice: for some kernels (the tiled IEEE families) register allocation
// and scheduling vary from one compile to the next, and so, less often,
// does NVVM's PTX (run this tool twice on unchanged sources). Where two
// records' SASS differ, identical PTX for the entry shows that ptxas was
// given the same program both times and the difference is its own.
type ptxCompiler struct {
	create, compile, size, get, destroy uintptr
}

func openPTX(c *nvrtc.Compiler) (*ptxCompiler, error) {
	lib, err := dynlib.Open("libnvrtc", []string{c.Path()}, nil)
	if err != nil {
		return nil, err
	}
	var p ptxCompiler
	for _, s := range []struct {
		name string
		dst  *uintptr
	}{
		{"nvrtcCreateProgram", &p.create}, {"nvrtcCompileProgram", &p.compile},
		{"nvrtcGetPTXSize", &p.size}, {"nvrtcGetPTX", &p.get}, {"nvrtcDestroyProgram", &p.destroy},
	} {
		if *s.dst, err = lib.Lookup(s.name); err != nil {
			return nil, err
		}
	}
	return &p, nil
}

// cstrings returns NUL-terminated copies of ss and an array of their
// addresses; the caller keeps both alive (runtime.KeepAlive) for the call.
func cstrings(ss []string) ([][]byte, []uintptr) {
	bufs := make([][]byte, len(ss))
	ptrs := make([]uintptr, len(ss)+1)
	for i, s := range ss {
		bufs[i] = append([]byte(s), 0)
		ptrs[i] = uintptr(unsafe.Pointer(&bufs[i][0]))
	}
	return bufs, ptrs
}

// ptx compiles family for arch with kernels.Flags and the headers in
// srcDir (the same inputs Build uses) and returns the PTX.
func (p *ptxCompiler) ptx(family string, arch kernels.Arch, srcDir string) (string, error) {
	src, err := kernels.Source(family)
	if err != nil {
		return "", err
	}
	hdrFiles, err := filepath.Glob(filepath.Join(srcDir, "*.cuh"))
	if err != nil {
		return "", err
	}
	sort.Strings(hdrFiles)
	var hdrSrc, hdrName []string
	for _, f := range hdrFiles {
		b, err := os.ReadFile(f)
		if err != nil {
			return "", err
		}
		hdrSrc, hdrName = append(hdrSrc, string(b)), append(hdrName, filepath.Base(f))
	}
	sb, sp := cstrings([]string{src, family + ".cu"})
	hb, hp := cstrings(hdrSrc)
	nb, np := cstrings(hdrName)
	ob, op := cstrings(kernels.Flags(arch))
	defer runtime.KeepAlive([]any{sb, sp, hb, hp, nb, np, ob, op})

	var prog uintptr
	if r, _, _ := purego.SyscallN(p.create, uintptr(unsafe.Pointer(&prog)), sp[0], sp[1], uintptr(len(hdrSrc)),
		uintptr(unsafe.Pointer(&hp[0])), uintptr(unsafe.Pointer(&np[0]))); r != 0 {
		return "", fmt.Errorf("%s: nvrtcCreateProgram: status %d", family, r)
	}
	defer purego.SyscallN(p.destroy, uintptr(unsafe.Pointer(&prog)))
	if r, _, _ := purego.SyscallN(p.compile, prog, uintptr(len(op)-1), uintptr(unsafe.Pointer(&op[0]))); r != 0 {
		return "", fmt.Errorf("%s for %s: nvrtcCompileProgram: status %d", family, arch, r)
	}
	var size uint64
	if r, _, _ := purego.SyscallN(p.size, prog, uintptr(unsafe.Pointer(&size))); r != 0 || size == 0 {
		return "", fmt.Errorf("%s for %s: no PTX (status %d)", family, arch, r)
	}
	buf := make([]byte, size)
	if r, _, _ := purego.SyscallN(p.get, prog, uintptr(unsafe.Pointer(&buf[0]))); r != 0 {
		return "", fmt.Errorf("%s for %s: nvrtcGetPTX: status %d", family, arch, r)
	}
	return strings.TrimRight(string(buf), "\x00"), nil
}

// reEntryPTX finds the start of an entry's definition in PTX.
var reEntryPTX = regexp.MustCompile(`(?m)^\.visible \.entry (\w+)\(`)

// rePTXOrdinal matches what names an entry's place in its module rather
// than its code: branch labels carry the function's index ($L__BB12_3), and
// the next entry's ".globl" line trails the previous one. Moving an entry
// to another file changes these and nothing else.
var rePTXOrdinal = regexp.MustCompile(`\$L__BB\d+_|__local_depot\d+|(?m)^\s*// \.globl.*$`)

// entryPTX splits PTX into its entries' texts (from one ".entry" line to
// the next), takes out rePTXOrdinal, and hashes each.
func entryPTX(ptx string) map[string]string {
	out := map[string]string{}
	locs := reEntryPTX.FindAllStringSubmatchIndex(ptx, -1)
	for i, l := range locs {
		end := len(ptx)
		if i+1 < len(locs) {
			end = locs[i+1][0]
		}
		body := rePTXOrdinal.ReplaceAllStringFunc(ptx[l[0]:end], func(m string) string {
			switch {
			case strings.HasPrefix(m, "$L__BB"):
				return "$L__BB_"
			case strings.HasPrefix(m, "__local_depot"):
				return "__local_depot"
			}
			return ""
		})
		sum := sha256.Sum256([]byte(strings.TrimSpace(body)))
		out[ptx[l[2]:l[3]]] = hex.EncodeToString(sum[:])
	}
	return out
}
