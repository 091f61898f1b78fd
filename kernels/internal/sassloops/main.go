// Command sassloops reads a kernel's machine code off a CUBIN and reports
// its loops: for every backward branch whose body is long enough, the
// number of instructions and the sum of their stall counts, the cycles
// ptxas' own schedule gives one warp to issue the body (scoreboard waits
// for MUFU results and memory aside), with the opcodes that fill it. It is
// how an epilogue's rolled turn is weighed on a machine without a GPU
// (bench/NOTES-matmul.md, twenty-sixth session): a turn's stall sum is its
// time with one warp a scheduler, and its instruction count what two warps
// share.
//
// The CUBIN comes from the embedded set or from a file:
//
//	go run ./kernels/internal/sassloops -family gemm_wgmma_matmul -kernel 'wgmm128x256_gelu_nn_bf16'
//	go run ./kernels/internal/sassloops -variant cuda13 -family gemm_wgmma_matmul -kernel gelu_nn_bf16
//	go run ./kernels/internal/sassloops -cubin /tmp/x.cubin -kernel . -skip 0xb7b0-0xc010
//
// It needs cuobjdump (12.4 reads both sets): from PATH, -cuobjdump, or
// Debian trixie's non-free nvidia-cuda-toolkit unpacked without
// installing it (apt-get download nvidia-cuda-toolkit; dpkg -x). -skip
// leaves address ranges out of the sums (a branch's arm the case at hand
// jumps over); -list prints each instruction of the reported loops with
// its stall count and wait mask.
package main

import (
	"bytes"
	"cmp"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/detgemm/detgemm/kernels/internal/embedset"
)

// Inst is one SASS instruction as cuobjdump prints it.
type Inst struct {
	Addr uint64
	Text string // without the trailing ';'
	Hi   uint64 // the second 64-bit word: the control code in bits 41-63
}

// Stall is the cycles ptxas makes the warp wait before its next instruction.
func (in Inst) Stall() int { return int(in.Hi>>41) & 15 }

// Wait is the scoreboard mask the instruction waits on before it issues.
func (in Inst) Wait() int { return int(in.Hi>>52) & 63 }

// Op is the opcode without modifiers or predicate.
func (in Inst) Op() string {
	f := strings.Fields(in.Text)
	if len(f) > 1 && strings.HasPrefix(f[0], "@") {
		f = f[1:]
	}
	if len(f) == 0 {
		return ""
	}
	op, _, _ := strings.Cut(f[0], ".")
	return op
}

var (
	reInst = regexp.MustCompile(`^\s*/\*([0-9a-f]{4,})\*/\s+(.*?)\s*;\s*/\* (0x[0-9a-f]+) \*/`)
	reHi   = regexp.MustCompile(`^\s*/\* (0x[0-9a-f]+) \*/`)
	reFunc = regexp.MustCompile(`^\s*Function : (\S+)`)
	reBra  = regexp.MustCompile(`\bBRA (?:!?U?P\d, )?0x([0-9a-f]+)`)
)

// Parse splits cuobjdump -sass output into functions.
func Parse(r io.Reader) (map[string][]Inst, []string, error) {
	b, err := io.ReadAll(r)
	if err != nil {
		return nil, nil, err
	}
	lines := strings.Split(string(b), "\n")
	funcs := map[string][]Inst{}
	var order []string
	cur := ""
	for i := 0; i < len(lines); i++ {
		if m := reFunc.FindStringSubmatch(lines[i]); m != nil {
			cur = m[1]
			order = append(order, cur)
			continue
		}
		m := reInst.FindStringSubmatch(lines[i])
		if m == nil || cur == "" || i+1 >= len(lines) {
			continue
		}
		h := reHi.FindStringSubmatch(lines[i+1])
		if h == nil {
			continue
		}
		addr, _ := strconv.ParseUint(m[1], 16, 64)
		hi, _ := strconv.ParseUint(h[1][2:], 16, 64)
		funcs[cur] = append(funcs[cur], Inst{Addr: addr, Text: m[2], Hi: hi})
		i++
	}
	return funcs, order, nil
}

// Loop is a backward branch's body, [Lo, Hi] by address.
type Loop struct {
	Lo, Hi uint64
	Body   []Inst
}

// Loops returns the bodies of the backward branches of fn with at least min instructions.
func Loops(fn []Inst, min int) []Loop {
	var ls []Loop
	for _, in := range fn {
		m := reBra.FindStringSubmatch(in.Text)
		if m == nil {
			continue
		}
		to, _ := strconv.ParseUint(m[1], 16, 64)
		if to >= in.Addr {
			continue
		}
		// fn is in address order: the body is the run from the target to the branch.
		lo, _ := slices.BinarySearchFunc(fn, to, func(x Inst, a uint64) int { return cmp.Compare(x.Addr, a) })
		hi, _ := slices.BinarySearchFunc(fn, in.Addr, func(x Inst, a uint64) int { return cmp.Compare(x.Addr, a) })
		body := fn[lo : hi+1]
		if len(body) >= min {
			ls = append(ls, Loop{Lo: to, Hi: in.Addr, Body: body})
		}
	}
	return ls
}

// Span is an address range [Lo, Hi).
type Span struct{ Lo, Hi uint64 }

func parseSpans(s string) ([]Span, error) {
	var out []Span
	for _, f := range strings.Split(s, ",") {
		if f == "" {
			continue
		}
		a, b, ok := strings.Cut(f, "-")
		lo, err1 := strconv.ParseUint(strings.TrimPrefix(a, "0x"), 16, 64)
		hi, err2 := strconv.ParseUint(strings.TrimPrefix(b, "0x"), 16, 64)
		if !ok || err1 != nil || err2 != nil || hi <= lo {
			return nil, fmt.Errorf("bad -skip range %q: want 0xLO-0xHI", f)
		}
		out = append(out, Span{lo, hi})
	}
	return out, nil
}

// Summary is what a body costs: instructions, stall cycles and opcode counts.
type Summary struct {
	Insts, Stall int
	Ops          map[string]int
}

// Summarize adds up body, leaving out the instructions inside skip.
func Summarize(body []Inst, skip []Span) Summary {
	s := Summary{Ops: map[string]int{}}
	for _, in := range body {
		if slices.ContainsFunc(skip, func(sp Span) bool { return in.Addr > sp.Lo && in.Addr < sp.Hi }) {
			continue
		}
		s.Insts++
		s.Stall += in.Stall()
		s.Ops[in.Op()]++
	}
	return s
}

func (s Summary) top(n int) string {
	type kv struct {
		k string
		v int
	}
	var kvs []kv
	for k, v := range s.Ops {
		kvs = append(kvs, kv{k, v})
	}
	slices.SortFunc(kvs, func(a, b kv) int {
		if a.v != b.v {
			return b.v - a.v
		}
		return strings.Compare(a.k, b.k)
	})
	var parts []string
	for i, e := range kvs {
		if i == n {
			break
		}
		parts = append(parts, fmt.Sprintf("%s %d", e.k, e.v))
	}
	return strings.Join(parts, ", ")
}

// embeddedCUBIN reads family's CUBIN for arch and variant from the set in dir.
func embeddedCUBIN(dir, arch, variant, family string) ([]byte, error) {
	data, err := os.ReadFile(filepath.Join(dir, embedset.Dir(arch, variant), family+".gz"))
	if err != nil {
		return nil, err
	}
	_, cubin, _, err := embedset.Unpack(data, nil)
	return cubin, err
}

func findCuobjdump(flagged string) (string, error) {
	if flagged != "" {
		return flagged, nil
	}
	if p, err := exec.LookPath("cuobjdump"); err == nil {
		return p, nil
	}
	return "", errors.New("no cuobjdump: put it on PATH or pass -cuobjdump (Debian trixie non-free nvidia-cuda-toolkit: apt-get download, dpkg -x)")
}

func run(w io.Writer, args []string) error {
	fs := flag.NewFlagSet("sassloops", flag.ContinueOnError)
	cubinPath := fs.String("cubin", "", "read this CUBIN instead of the embedded set")
	setDir := fs.String("set", "kernels/embedded", "the embedded set's directory")
	arch := fs.String("arch", "sm_90a", "architecture of the embedded CUBIN")
	variant := fs.String("variant", "base", "variant of the embedded CUBIN (base, cuda13)")
	family := fs.String("family", "", "kernel family of the embedded CUBIN")
	kernel := fs.String("kernel", ".", "regular expression of the kernels to report")
	minLen := fs.Int("min", 200, "report loops of at least this many instructions")
	skip := fs.String("skip", "", "address ranges left out of the sums: 0xLO-0xHI[,...]")
	list := fs.Bool("list", false, "print every instruction of the reported loops")
	tool := fs.String("cuobjdump", "", "path of cuobjdump")
	if err := fs.Parse(args); err != nil {
		return err
	}
	re, err := regexp.Compile(*kernel)
	if err != nil {
		return err
	}
	spans, err := parseSpans(*skip)
	if err != nil {
		return err
	}
	var cubin []byte
	switch {
	case *cubinPath != "":
		cubin, err = os.ReadFile(*cubinPath)
	case *family != "":
		cubin, err = embeddedCUBIN(*setDir, *arch, *variant, *family)
	default:
		err = errors.New("name -family (the embedded set) or -cubin")
	}
	if err != nil {
		return err
	}
	cuobjdump, err := findCuobjdump(*tool)
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp("", "sassloops-*.cubin")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(cubin); err != nil {
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	var out, stderr bytes.Buffer
	cmd := exec.Command(cuobjdump, "-sass", tmp.Name())
	cmd.Stdout, cmd.Stderr = &out, &stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("cuobjdump: %v: %s", err, stderr.String())
	}
	funcs, order, err := Parse(&out)
	if err != nil {
		return err
	}
	slices.Sort(order)
	n := 0
	for _, name := range order {
		if !re.MatchString(name) {
			continue
		}
		n++
		fn := funcs[name]
		fmt.Fprintf(w, "%s: %d instructions\n", name, len(fn))
		for _, l := range Loops(fn, *minLen) {
			s := Summarize(l.Body, spans)
			fmt.Fprintf(w, "  loop %#x-%#x: %d instructions, stall %d (%.2f an instruction); %s\n",
				l.Lo, l.Hi, s.Insts, s.Stall, float64(s.Stall)/float64(max(s.Insts, 1)), s.top(10))
			if *list {
				for _, in := range l.Body {
					fmt.Fprintf(w, "    %#06x s%-2d w%02x %s\n", in.Addr, in.Stall(), in.Wait(), in.Text)
				}
			}
		}
	}
	if n == 0 {
		return fmt.Errorf("no kernel matches %q", *kernel)
	}
	return nil
}

func main() {
	if err := run(os.Stdout, os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "sassloops:", err)
		os.Exit(1)
	}
}
