package main

import (
	"bytes"
	"os"
	"testing"
)

// testdata/loop.sass is an excerpt of cuobjdump -sass of detgemm's own
// gemm_matmul CUBIN (detgemm_mm_bgrad_fold): a 13-instruction loop from
// 0x8d0 to the backward branch at 0x990, cut mid-function at both ends.
func readLoop(t *testing.T) map[string][]Inst {
	t.Helper()
	b, err := os.ReadFile("testdata/loop.sass")
	if err != nil {
		t.Fatal(err)
	}
	funcs, order, err := Parse(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	if len(order) != 1 || order[0] != "detgemm_mm_bgrad_fold" {
		t.Fatalf("functions %v, want [detgemm_mm_bgrad_fold]", order)
	}
	return funcs
}

func TestParseReadsInstructionsAndControlCodes(t *testing.T) {
	fn := readLoop(t)["detgemm_mm_bgrad_fold"]
	// 0x8c0 .. 0x9a0: the dangling word before 0x8c0 and the 0x9b0 line
	// without its second word are not instructions.
	if len(fn) != 15 || fn[0].Addr != 0x8c0 || fn[len(fn)-1].Addr != 0x9a0 {
		t.Fatalf("%d instructions from %#x to %#x, want 15 from 0x8c0 to 0x9a0", len(fn), fn[0].Addr, fn[len(fn)-1].Addr)
	}
	// Decoded by hand from the second words: 0x000fcc00078e0009 (stall 6),
	// 0x0002a2000c1e1900 (stall 1, LDG writing scoreboard 2),
	// 0x024fd40000000000 (stall 10, waiting on scoreboards 2 and 5: 0x24),
	// 0x000fea000383ffff (stall 5).
	for _, tc := range []struct {
		addr        uint64
		op          string
		stall, wait int
	}{
		{0x8d0, "IMAD", 6, 0},
		{0x8e0, "LDG", 1, 0},
		{0x980, "FADD", 10, 0x24},
		{0x990, "BRA", 5, 0},
	} {
		var in *Inst
		for i := range fn {
			if fn[i].Addr == tc.addr {
				in = &fn[i]
			}
		}
		if in == nil {
			t.Fatalf("no instruction at %#x", tc.addr)
		}
		if in.Op() != tc.op || in.Stall() != tc.stall || in.Wait() != tc.wait {
			t.Errorf("%#x %q: op %q stall %d wait %#x, want %q %d %#x", tc.addr, in.Text, in.Op(), in.Stall(), in.Wait(),
				tc.op, tc.stall, tc.wait)
		}
	}
}

func TestLoopsAndSummaries(t *testing.T) {
	fn := readLoop(t)["detgemm_mm_bgrad_fold"]
	// The forward branch at 0x9a0 is not a loop; min filters by length.
	for _, tc := range []struct {
		min, loops int
	}{{1, 1}, {13, 1}, {14, 0}} {
		if got := len(Loops(fn, tc.min)); got != tc.loops {
			t.Errorf("Loops(min %d): %d loops, want %d", tc.min, got, tc.loops)
		}
	}
	l := Loops(fn, 1)[0]
	if l.Lo != 0x8d0 || l.Hi != 0x990 || len(l.Body) != 13 {
		t.Fatalf("loop %#x-%#x with %d instructions, want 0x8d0-0x990 with 13", l.Lo, l.Hi, len(l.Body))
	}
	whole := Summarize(l.Body, nil)
	want := 0
	for _, in := range l.Body {
		want += in.Stall()
	}
	if whole.Insts != 13 || whole.Stall != want || whole.Ops["IADD3"] != 2 || whole.Ops["BRA"] != 1 {
		t.Errorf("summary %+v, want 13 instructions, stall %d, IADD3 2, BRA 1", whole, want)
	}
	// Skipping (0x8f0, 0x930) leaves out 0x900 .. 0x920: three instructions.
	spans, err := parseSpans("0x8f0-0x930")
	if err != nil {
		t.Fatal(err)
	}
	part := Summarize(l.Body, spans)
	if part.Insts != 10 || part.Ops["UIADD3"] != 1 { // 0x940 UIADD3.X stays
		t.Errorf("with the skip: %+v, want 10 instructions and one UIADD3", part)
	}
}

func TestParseSpansRejectsBadRanges(t *testing.T) {
	for _, s := range []string{"0x10", "0x20-0x10", "zz-0x10", "0x10-0x10"} {
		if _, err := parseSpans(s); err == nil {
			t.Errorf("parseSpans(%q): no error", s)
		}
	}
	if sp, err := parseSpans("0x10-0x20,30-40"); err != nil || len(sp) != 2 || sp[1] != (Span{0x30, 0x40}) {
		t.Errorf("parseSpans: %v, %v", sp, err)
	}
}
