// Command sassdiff proves that a change to the CUDA sources left the
// machine code alone: it compiles every kernel family with NVRTC for each
// architecture and records, per function, a SHA-256 of its SASS (the CUBIN's
// .text.<name> section) beside ptxas' resource report; given a saved record,
// it compares the two entry by entry. Byte-identical .text for every entry
// point on every architecture means the refactor changed neither the bits a
// kernel computes nor the instructions it runs.
//
// Run it from the repository root with NVRTC 12.x reachable (nvrtc.Open):
//
//	go run ./kernels/internal/sassdiff -o /tmp/sass-before.json          # before the change
//	go run ./kernels/internal/sassdiff -base /tmp/sass-before.json       # after: compare
//
// Entries are matched by name, not by family, so moving a kernel to another
// file is not a difference. Test-only families (kernels.CheckFamilies) are
// compiled too. -archs picks the architectures (default sm_80, sm_86, sm_89,
// sm_90a); -families limits the run to some families (a quick check while
// editing); -dump keeps the CUBINs for a closer look.
//
// NVRTC 12.4 does not reproduce its own output byte for byte: its result
// depends on the process's memory layout. Most entries never vary; the
// tiled IEEE families (gemm_simt, gemm_slabs) do, in FFMA operand order,
// register allocation and scheduling, and even in NVVM's PTX. So an entry
// is reported identical (same bytes as one of the -base records),
// equivalent (the same after canonical: only an FFMA's multiplicand order
// and reuse flags differ), same PTX (ptxas was given the program of an old
// record) or different. For those families, record several compiles of
// the old sources and pass them all to -base; a run under
//
//	setarch x86_64 -R env GOMAXPROCS=1 MALLOC_ARENA_MAX=1 sassdiff ...
//
// repeats itself exactly for one set of sources (but a source change of
// any kind, a comment included, moves the layout). The exit status is 1
// when any entry differs, is missing or is new.
package main

import (
	"bytes"
	"crypto/sha256"
	"debug/elf"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/detgemm/detgemm/kernels"
	"github.com/detgemm/detgemm/nvrtc"
)

// Function is what is recorded for one function of one CUBIN.
type Function struct {
	Family      string `json:"family"`
	Entry       bool   `json:"entry"`        // a kernel entry point (else a non-inlined device function)
	TextSHA256  string `json:"text_sha256"`  // of the .text.<name> section
	CanonSHA256 string `json:"canon_sha256"` // of the section after canonical()
	PTXSHA256   string `json:"ptx_sha256"`   // of the entry's PTX (-ptx)
	TextBytes   int    `json:"text_bytes"`   // instructions are 16 bytes from sm_70 on
	Registers   int    `json:"registers"`
	SharedBytes int    `json:"shared_bytes"`
	StackBytes  int    `json:"stack_bytes"`
	SpillStores int    `json:"spill_stores"`
	SpillLoads  int    `json:"spill_loads"`
}

// Record is one run: architecture -> function name -> Function.
type Record struct {
	NVRTC string                         `json:"nvrtc"`
	Archs map[string]map[string]Function `json:"archs"`
}

func main() {
	out := flag.String("o", "", "write the record (JSON) to this file")
	base := flag.String("base", "", "compare with this saved record, or these (comma-separated: several compiles of the old sources)")
	archList := flag.String("archs", "sm_80,sm_86,sm_89,sm_90a", "architectures, comma-separated")
	cache := flag.Bool("cache", false, "use the kernel cache (a cached CUBIN is the one these sources compile to)")
	verbose := flag.Bool("v", false, "list every entry compared, not only the differences")
	flag.StringVar(&dumpDir, "dump", "", "also write each CUBIN to DIR/<arch>/<family>.cubin (for a closer look at a difference)")
	flag.BoolVar(&withPTX, "ptx", true, "also record each entry's PTX hash (from the sources in -src), to tell ptxas' own variation from a change")
	flag.StringVar(&srcDir, "src", "kernels/cuda", "the CUDA sources the binary embeds (for -ptx): run from the repository root")
	famList := flag.String("families", "", "only these families, comma-separated (default: all); a base record's other entries then count as missing")
	flag.Parse()
	if *famList != "" {
		only = strings.Split(*famList, ",")
	}
	if err := run(*out, *base, *archList, *cache, *verbose, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "sassdiff:", err)
		os.Exit(1)
	}
}

// errDiffer is returned when a comparison finds differences.
var errDiffer = errors.New("the SASS differs from the base record")

func run(out, base, archList string, cache, verbose bool, w io.Writer) error {
	var archs []kernels.Arch
	for _, name := range strings.Split(archList, ",") {
		a, err := kernels.ParseArch(name)
		if err != nil {
			return err
		}
		archs = append(archs, a)
	}
	c, err := nvrtc.Open()
	if err != nil {
		return err
	}
	major, minor := c.Version()
	rec := Record{NVRTC: fmt.Sprintf("%d.%d", major, minor), Archs: map[string]map[string]Function{}}
	for _, a := range archs {
		t0 := time.Now()
		fns, err := record(c, a, cache)
		if err != nil {
			return err
		}
		rec.Archs[a.String()] = fns
		fmt.Fprintf(os.Stderr, "sassdiff: %s: %d functions in %v\n", a, len(fns), time.Since(t0).Round(time.Second))
	}
	if out != "" {
		b, err := json.MarshalIndent(rec, "", " ")
		if err != nil {
			return err
		}
		if err := os.WriteFile(out, append(b, '\n'), 0o644); err != nil {
			return err
		}
	}
	if base == "" {
		return nil
	}
	var olds []Record
	for _, name := range strings.Split(base, ",") {
		b, err := os.ReadFile(name)
		if err != nil {
			return err
		}
		var old Record
		if err := json.Unmarshal(b, &old); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		if old.NVRTC != rec.NVRTC {
			fmt.Fprintf(w, "warning: %s built by NVRTC %s, this run by %s\n", name, old.NVRTC, rec.NVRTC)
		}
		olds = append(olds, old)
	}
	differ := false
	for _, a := range archs {
		var old []map[string]Function
		for _, o := range olds {
			old = append(old, o.Archs[a.String()])
		}
		if compare(w, a.String(), old, rec.Archs[a.String()], verbose) {
			differ = true
		}
	}
	if differ {
		return errDiffer
	}
	return nil
}

// only limits the families compiled (-families).
var only []string

// dumpDir is where -dump writes the CUBINs ("": nowhere).
var dumpDir string

// withPTX (-ptx) records PTX hashes too, read from srcDir (-src).
var (
	withPTX bool
	srcDir  string
)

// families is every family built for a: the engine's and the test-only ones
// (or those of -families that are built for a).
func families(a kernels.Arch) []string {
	if only != nil {
		var fams []string
		for _, f := range only {
			if targets, err := kernels.FamilyTargets(f); err != nil || targets == nil || slices.Contains(targets, a) {
				fams = append(fams, f) // an unknown name fails the build with its error
			}
		}
		return fams
	}
	fams := kernels.FamiliesFor(a)
	for _, f := range kernels.CheckFamilies() {
		if targets, err := kernels.FamilyTargets(f); err == nil && (targets == nil || slices.Contains(targets, a)) {
			fams = append(fams, f)
		}
	}
	return fams
}

// record compiles every family for a and reads its functions.
func record(c *nvrtc.Compiler, a kernels.Arch, cache bool) (map[string]Function, error) {
	b, err := kernels.NewBuilder(c, kernels.WithMode(kernels.ModeNVRTC), kernels.WithCache(cache),
		kernels.WithFamilies(families(a)...)).Build(a)
	if err != nil {
		return nil, err
	}
	var pc *ptxCompiler
	if withPTX {
		if pc, err = openPTX(c); err != nil {
			return nil, err
		}
	}
	fns := map[string]Function{}
	for fam, m := range b.Modules {
		var ptxHashes map[string]string
		if pc != nil {
			text, err := pc.ptx(fam, a, srcDir)
			if err != nil {
				return nil, err
			}
			ptxHashes = entryPTX(text)
			if dumpDir != "" {
				dir := filepath.Join(dumpDir, a.String())
				if err := os.MkdirAll(dir, 0o755); err != nil {
					return nil, err
				}
				if err := os.WriteFile(filepath.Join(dir, fam+".ptx"), []byte(text), 0o644); err != nil {
					return nil, err
				}
			}
		}
		if dumpDir != "" {
			dir := filepath.Join(dumpDir, a.String())
			if err := os.MkdirAll(dir, 0o755); err != nil {
				return nil, err
			}
			if err := os.WriteFile(filepath.Join(dir, fam+".cubin"), m.CUBIN, 0o644); err != nil {
				return nil, err
			}
		}
		f, err := elf.NewFile(bytes.NewReader(elfHeaderFixed(m.CUBIN)))
		if err != nil {
			return nil, fmt.Errorf("%s %s: %w", a, fam, err)
		}
		for _, s := range f.Sections {
			name, ok := strings.CutPrefix(s.Name, ".text.")
			if !ok {
				continue
			}
			data, err := s.Data()
			if err != nil {
				return nil, fmt.Errorf("%s %s %s: %w", a, fam, s.Name, err)
			}
			if _, dup := fns[name]; dup {
				return nil, fmt.Errorf("%s: %s is defined by two families", a, name)
			}
			sum, canon := sha256.Sum256(data), sha256.Sum256(canonical(data))
			fn := Function{Family: fam, TextSHA256: hex.EncodeToString(sum[:]), CanonSHA256: hex.EncodeToString(canon[:]),
				PTXSHA256: ptxHashes[name], TextBytes: len(data)}
			if r, ok := m.Resource(name); ok {
				fn.Entry = !r.Device
				fn.Registers, fn.SharedBytes, fn.StackBytes = r.Registers, r.SharedBytes, r.StackBytes
				fn.SpillStores, fn.SpillLoads = r.SpillStores, r.SpillLoads
			}
			fns[name] = fn
		}
		f.Close()
	}
	return fns, nil
}

// canonical returns a copy of SASS (16-byte instructions, sm_70 and newer)
// with what ptxas leaves to chance taken out. NVRTC 12.4 does not compile a
// kernel to the same bytes twice: from one compile of unchanged sources to
// the next it swaps the two multiplicands of some FFMA instructions (and so
// their operand-reuse flags). a*b+c and b*a+c are the same IEEE operation
// (the product is exact before the one rounding), and reuse flags are hints
// to the register file, not semantics. So, for the register forms of FFMA,
// FMUL and FADD, the two source registers are put in ascending order, and
// every instruction's four reuse flags are cleared. Anything else that
// differs is a real difference.
func canonical(text []byte) []byte {
	b := slices.Clone(text)
	for i := 0; i+16 <= len(b); i += 16 {
		in := b[i : i+16]
		switch op := (uint16(in[0]) | uint16(in[1])<<8) & 0xfff; op {
		case 0x223, 0x220, 0x221: // FFMA, FMUL, FADD R, R, R(, R)
			if in[3] > in[4] {
				in[3], in[4] = in[4], in[3]
			}
		}
		in[15] &^= 0x3c // reuse flags: bits 122-125
	}
	return b
}

// elfHeaderFixed returns a copy of a CUBIN that debug/elf accepts: NVIDIA
// stores its own ABI version in the header's e_version word (bytes 20-23,
// 64-bit ELF), which debug/elf requires to be EV_CURRENT (1).
func elfHeaderFixed(cubin []byte) []byte {
	b := slices.Clone(cubin)
	if len(b) >= 24 {
		b[20], b[21], b[22], b[23] = 1, 0, 0, 0 // little-endian, as every CUBIN is
	}
	return b
}

// compare prints the comparison of one architecture and reports whether
// anything differs. With several old records (compiles of the same old
// sources), an entry matches if it matches any of them: NVRTC's output
// varies between compiles, and new code that equals one of the old
// sources' outcomes is code the old sources also produce.
func compare(w io.Writer, arch string, olds []map[string]Function, cur map[string]Function, verbose bool) bool {
	old := olds[0]
	names := make([]string, 0, len(old)+len(cur))
	for n := range old {
		names = append(names, n)
	}
	for n := range cur {
		if _, ok := old[n]; !ok {
			names = append(names, n)
		}
	}
	// matches reports whether some old record's entry n has c's field.
	matches := func(n string, field func(Function) string, c Function) bool {
		for _, m := range olds {
			if o, ok := m[n]; ok && field(o) != "" && field(o) == field(c) {
				return true
			}
		}
		return false
	}
	text := func(f Function) string { return f.TextSHA256 }
	canon := func(f Function) string { return f.CanonSHA256 }
	ptx := func(f Function) string { return f.PTXSHA256 }
	slices.Sort(names)
	var same, equiv, samePTX, differ, missing, added int
	for _, n := range names {
		o, inOld := old[n]
		c, inCur := cur[n]
		switch {
		case !inCur && only != nil:
			continue // not compiled this run (-families)
		case !inCur:
			missing++
			fmt.Fprintf(w, "%s %s: MISSING (was in %s)\n", arch, n, o.Family)
		case !inOld:
			added++
			fmt.Fprintf(w, "%s %s: NEW in %s (%d instructions, %d registers)\n", arch, n, c.Family, c.TextBytes/16, c.Registers)
		case matches(n, text, c):
			same++
			if verbose {
				fmt.Fprintf(w, "%s %s: identical (%s, %d instructions)\n", arch, n, c.Family, c.TextBytes/16)
			}
		case matches(n, canon, c):
			equiv++
			if verbose {
				fmt.Fprintf(w, "%s %s: equivalent (%s, %d instructions: multiplicand order or reuse flags only)\n", arch, n, c.Family, c.TextBytes/16)
			}
		case matches(n, ptx, c):
			samePTX++
			fmt.Fprintf(w, "%s %s: same PTX, SASS differs (ptxas' own variation): instructions %d -> %d, registers %d -> %d\n",
				arch, n, o.TextBytes/16, c.TextBytes/16, o.Registers, c.Registers)
		default:
			differ++
			fmt.Fprintf(w, "%s %s: DIFFERENT: instructions %d -> %d, registers %d -> %d, shared %d -> %d, spills %d/%d -> %d/%d\n",
				arch, n, o.TextBytes/16, c.TextBytes/16, o.Registers, c.Registers, o.SharedBytes, c.SharedBytes,
				o.SpillStores, o.SpillLoads, c.SpillStores, c.SpillLoads)
		}
	}
	fmt.Fprintf(w, "%s: %d functions compared: %d identical, %d equivalent, %d same PTX, %d different, %d missing, %d new\n",
		arch, same+equiv+samePTX+differ+missing+added, same, equiv, samePTX, differ, missing, added)
	return differ > 0 || missing > 0 || added > 0
}
