package gemm

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/detgemm/detgemm/kernels"
	"github.com/stretchr/testify/require"
)

// updatePlans rewrites testdata/plans.txt.gz from today's dispatcher. It
// was run once, on the engine before issue 20's refactor; every later
// change to the engine must reproduce the file, not rewrite it.
var updatePlans = flag.Bool("update-plans", false, "rewrite testdata/plans.txt.gz (only on an engine whose decisions are known good)")

// plansFile holds a line per call of planCalls: the call, then
// Explain(call).String() (kernels, grids, blocks, shared memory, slabs,
// workspace) or the error, the launches joined by " | ".
const plansFile = "testdata/plans.txt.gz"

// planDevices are the GPUs the fingerprint covers: the fake devices of
// explain_test.go, an H100 SXM and an L40S-like sm_89 card.
var planDevices = append(slices.Clip(fakeDevices),
	fakeDevice{"H100 sm_90a", kernels.Arch{Major: 9, Minor: 0, Specific: true}, 132, 232448, 233472},
	fakeDevice{"L40S sm_89", kernels.Arch{Major: 8, Minor: 9}, 142, 101376, 102400},
)

// planTypes are the tier and dtype combinations of the fingerprint; dW
// writes f32 whatever the entry says.
var planTypes = []struct {
	tier    Tier
	in, out DType
}{
	{TierF32, F32, F32},
	{TierTyped, BF16, BF16}, {TierTyped, BF16, F32}, {TierTyped, F16, F16}, {TierTyped, F16, F32},
	{TierTensorCore, BF16, BF16}, {TierTensorCore, BF16, F32}, {TierTensorCore, F16, F16}, {TierTensorCore, F16, F32},
}

// planCalls is the grid of calls whose decisions the fingerprint records:
// every op × tier × dtype pair × M × K × N of the lists below, aligned and
// (f32 and bf16) with the first operand one element off 16 bytes, which
// forces the element-wise paths (odd K or N misalign the leading
// dimensions too), Forward with and without a bias (f32→f32 and
// bf16→bf16: the bias is a pointer the plan never reads), and a few shapes
// near the grid and workspace limits.
func planCalls() []explainCase {
	ms := []int{1, 2, 4, 5, 8, 15, 16, 17, 31, 32, 33, 64, 96, 97, 128, 200, 256, 300, 1000, 2048, 4096, 8192}
	kn := []int{1, 7, 64, 255, 256, 257, 768, 1000, 1536, 3072, 4096, 11008, 14336, 16384}
	big := [][3]int{
		{1, 1 << 20, 4096}, {32, 1 << 22, 1024}, {4096, 1 << 20, 4096}, {16, 1 << 24, 64},
		{1, 1<<24 + 256, 1}, {128, 4096, 65535 * 128}, {1, 4096, 65535*128 + 1},
		{8192, 65536, 65536}, {1 << 24, 256, 256}, {2147483392, 64, 64}, {1 << 31, 16, 16},
		{100000, 8192, 8192}, {512, 1 << 18, 16384},
	}
	var out []explainCase
	add := func(op string, ty int, m, k, n int, mis, bias bool) {
		t := planTypes[ty]
		o := t.out
		if op == "DW" {
			if o != F32 {
				return
			}
		}
		out = append(out, explainCase{op: op, tier: t.tier, in: t.in, out: o, m: m, k: k, n: n, misalign: mis, bias: bias})
	}
	for _, op := range []string{"Forward", "DX", "DW"} {
		for ty := range planTypes {
			biases, miss := []bool{false}, []bool{false}
			if planTypes[ty].in != F16 {
				miss = []bool{false, true}
				if op == "Forward" && planTypes[ty].out == planTypes[ty].in {
					biases = []bool{false, true}
				}
			}
			for _, bias := range biases {
				for _, mis := range miss {
					for _, m := range ms {
						for _, k := range kn {
							for _, n := range kn {
								add(op, ty, m, k, n, mis, bias)
							}
						}
					}
					for _, s := range big {
						add(op, ty, s[0], s[1], s[2], mis, bias)
					}
				}
			}
		}
	}
	return out
}

// planLine is one call's line of the fingerprint: the device and the
// call, then what decides its speed — the strategy, tile, slabs, slabs a
// block and workspace, and each launch's entry point, grid, block and
// shared memory (not its family: the file a kernel lives in may move) —
// or the error.
func planLine(d fakeDevice, e *Engine, c explainCase) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s|%s|%v|%v|%v|%d|%d|%d|mis=%v|bias=%v: ", d.name, c.op, c.tier, c.in, c.out, c.m, c.k, c.n, c.misalign, c.bias)
	x, err := e.Explain(c.call())
	if err != nil {
		// The kind, not the message: messages may be reworded.
		kind := "other"
		for _, s := range []error{ErrTooLarge, ErrDimension, ErrMisaligned, ErrNilPointer, ErrDType, ErrTier, ErrAlias} {
			if errors.Is(err, s) {
				kind = s.Error()
				break
			}
		}
		fmt.Fprintf(&b, "error: %s", kind)
		return b.String()
	}
	fmt.Fprintf(&b, "%v %s S=%d G=%d ws=%d", x.Strategy, x.Tile, x.Slabs, x.SlabsPerBlock, x.WorkspaceBytes)
	for _, l := range x.Launches {
		fmt.Fprintf(&b, "; %s (%d,%d,%d) %d %d", l.Kernel, l.Grid.X, l.Grid.Y, l.Grid.Z, l.Threads, l.SharedBytes)
	}
	return b.String()
}

// planLines is the whole fingerprint, sorted.
func planLines() []string {
	calls := planCalls()
	var lines []string
	for _, d := range planDevices {
		e, _ := fakeEngine(d)
		for _, c := range calls {
			lines = append(lines, planLine(d, e, c))
		}
	}
	slices.Sort(lines)
	return lines
}

// TestDispatchDecisionsMatchTheFingerprint proves that the engine picks,
// for every call of planCalls on every device of planDevices, exactly the
// kernels, grids, blocks, shared memory, slabs and workspace recorded in
// testdata/plans.txt.gz: which kernel runs a shape is what fixes the
// engine's speed (the bits are fixed by the plan, which every kernel
// implements), so a refactor that keeps this file keeps the speed.
func TestDispatchDecisionsMatchTheFingerprint(t *testing.T) {
	if testing.Short() {
		t.Skip("the fingerprint explains about a million calls")
	}
	got := planLines()
	if *updatePlans {
		var buf bytes.Buffer
		zw, err := gzip.NewWriterLevel(&buf, gzip.BestCompression)
		require.NoError(t, err)
		for _, l := range got {
			_, err = zw.Write([]byte(l + "\n"))
			require.NoError(t, err)
		}
		require.NoError(t, zw.Close())
		require.NoError(t, os.MkdirAll(filepath.Dir(plansFile), 0o755))
		require.NoError(t, os.WriteFile(plansFile, buf.Bytes(), 0o644))
		t.Logf("wrote %d lines, %d bytes", len(got), buf.Len())
		return
	}
	f, err := os.Open(plansFile)
	require.NoError(t, err)
	defer f.Close()
	zr, err := gzip.NewReader(f)
	require.NoError(t, err)
	var want []string
	sc := bufio.NewScanner(zr)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		want = append(want, sc.Text())
	}
	require.NoError(t, sc.Err())
	var diffs []string
	i, j := 0, 0
	for (i < len(want) || j < len(got)) && len(diffs) < 20 {
		switch {
		case i < len(want) && j < len(got) && want[i] == got[j]:
			i++
			j++
		case j >= len(got) || i < len(want) && want[i] < got[j]:
			diffs = append(diffs, "- "+want[i])
			i++
		default:
			diffs = append(diffs, "+ "+got[j])
			j++
		}
	}
	if len(diffs) > 0 {
		t.Fatalf("dispatch decisions differ from %s (- recorded, + now; first %d differences):\n%s",
			plansFile, len(diffs), strings.Join(diffs, "\n"))
	}
	require.Equal(t, len(want), len(got))
}
