package gemm

import (
	"bufio"
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/detgemm/detgemm/gemm/ref"
	"github.com/stretchr/testify/require"
)

// updateGolden rewrites testdata/golden/ieee.txt from the CPU reference.
// Changing bits is a contract change: say so in CHANGELOG.md.
var updateGolden = flag.Bool("update-golden", false, "rewrite the golden digests from the CPU reference")

const goldenPath = "../testdata/golden/ieee.txt"

// goldenCase is one line of the golden file: an op on fixed seeded inputs.
type goldenCase struct {
	op      string
	tier    Tier
	in, out DType
	a, r, b int // (M, K, N) for Forward and DW, (M, N, K) for DX
	seed    uint64
}

func (g goldenCase) key() string {
	return fmt.Sprintf("%s %v %v %v %dx%dx%d seed=%d", g.op, g.tier, g.in, g.out, g.a, g.r, g.b, g.seed)
}

func goldenCases() []goldenCase {
	var out []goldenCase
	shapes := [][3]int{{1, 4097, 5}, {7, 300, 33}, {64, 512, 96}, {130, 1000, 17}}
	for _, op := range []string{"Forward", "DX", "DW"} {
		for _, c := range ieeeCombos {
			if op == "DW" && c.out != F32 {
				continue
			}
			for i, s := range shapes {
				out = append(out, goldenCase{op, c.tier, c.in, c.out, s[0], s[1], s[2], uint64(1000 + i)})
			}
		}
	}
	return out
}

// goldenInputs draws the case's operands from its seed alone, so every
// machine makes the same bits: (lhs, rhs, extra) are (X, W, bias) for
// Forward, (dY, W, -) for DX and (X, dY, dW_old) for DW.
func goldenInputs(g goldenCase) (lhs, rhs, extra operand) {
	r := rand.New(rand.NewPCG(g.seed, 0x5eed))
	// Its own generator, fixed forever: the digests depend on every bit.
	draw := func(d DType, n int) operand {
		v := make([]float32, n)
		for i := range v {
			v[i] = float32(r.Float64()*2 - 1)
		}
		return fromValues(d, v)
	}
	switch g.op {
	case "Forward":
		return draw(g.in, g.a*g.r), draw(g.in, g.r*g.b), draw(F32, g.b)
	case "DX":
		return draw(g.in, g.a*g.r), draw(g.in, g.b*g.r), operand{}
	default:
		return draw(g.in, g.a*g.r), draw(g.in, g.a*g.b), draw(F32, g.r*g.b)
	}
}

// goldenReference computes the case on the CPU reference, as output bits.
func goldenReference(t *testing.T, g goldenCase) []uint32 {
	lhs, rhs, extra := goldenInputs(g)
	switch g.op {
	case "Forward":
		y := make([]float32, g.a*g.b)
		require.NoError(t, ref.Forward(y, lhs.values, rhs.values, extra.values, g.a, g.r, g.b))
		return refBits(g.out, y)
	case "DX":
		dx := make([]float32, g.a*g.b)
		require.NoError(t, ref.DX(dx, lhs.values, rhs.values, g.a, g.r, g.b))
		return refBits(g.out, dx)
	default:
		dw := append([]float32(nil), extra.values...)
		require.NoError(t, ref.DW(dw, lhs.values, rhs.values, g.a, g.r, g.b))
		return refBits(F32, dw)
	}
}

// digestBits hashes output bits in their stored width.
func digestBits(d DType, b []uint32) string {
	if d.Half() {
		h := make([]uint16, len(b))
		for i, v := range b {
			h[i] = uint16(v)
		}
		return ref.Digest(h)
	}
	f := make([]float32, len(b))
	for i, v := range b {
		f[i] = math.Float32frombits(v)
	}
	return ref.Digest(f)
}

func readGolden(t *testing.T) map[string]string {
	f, err := os.Open(goldenPath)
	require.NoError(t, err, "golden digests missing: run go test ./gemm -run TestGoldenDigests -update-golden")
	defer f.Close()
	out := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		key, digest, ok := strings.Cut(line, " => ")
		require.True(t, ok, "bad golden line %q", line)
		out[key] = digest
	}
	require.NoError(t, sc.Err())
	return out
}

// TestGoldenDigestsFromCPUReference recomputes every golden case on the CPU
// reference (no GPU needed) and checks the digests on file.
func TestGoldenDigestsFromCPUReference(t *testing.T) {
	cases := goldenCases()
	if *updateGolden {
		var b strings.Builder
		b.WriteString("# SHA-256 of the output bits (little-endian, stored width) of the IEEE tiers on seeded inputs.\n")
		b.WriteString("# Written by: go test ./gemm -run TestGoldenDigestsFromCPUReference -update-golden\n")
		b.WriteString("# Changing a digest changes the numerical contract: record it in CHANGELOG.md.\n")
		for _, g := range cases {
			fmt.Fprintf(&b, "%s => %s\n", g.key(), digestBits(g.out, goldenReference(t, g)))
		}
		require.NoError(t, os.MkdirAll(filepath.Dir(goldenPath), 0o755))
		require.NoError(t, os.WriteFile(goldenPath, []byte(b.String()), 0o644))
	}
	golden := readGolden(t)
	require.Len(t, golden, len(cases), "the golden file and the case list disagree")
	for _, g := range cases {
		want, ok := golden[g.key()]
		require.True(t, ok, "no golden digest for %s", g.key())
		require.Equal(t, want, digestBits(g.out, goldenReference(t, g)), g.key())
	}
}

// TestGoldenDigestsOnGPU runs every golden case on the device.
func TestGoldenDigestsOnGPU(t *testing.T) {
	eng, ctx := gpuEngine(t)
	golden := readGolden(t)
	for _, g := range goldenCases() {
		lhs, rhs, extra := goldenInputs(g)
		var got []uint32
		switch g.op {
		case "Forward":
			y := poisoned(t, ctx, uint64(g.a*g.b*g.out.Size()))
			require.NoError(t, eng.Forward(ForwardArgs{Tier: g.tier, M: g.a, K: g.r, N: g.b, X: upload(t, ctx, lhs), W: upload(t, ctx, rhs),
				Bias: upload(t, ctx, extra), Y: y, In: g.in, Out: g.out}))
			got = readBits(t, eng, ctx, y, g.out, g.a*g.b)
		case "DX":
			dx := poisoned(t, ctx, uint64(g.a*g.b*g.out.Size()))
			require.NoError(t, eng.DX(DXArgs{Tier: g.tier, M: g.a, N: g.r, K: g.b, DY: upload(t, ctx, lhs), W: upload(t, ctx, rhs), DX: dx, In: g.in, Out: g.out}))
			got = readBits(t, eng, ctx, dx, g.out, g.a*g.b)
		default:
			dw := upload(t, ctx, extra)
			require.NoError(t, eng.DW(DWArgs{Tier: g.tier, M: g.a, K: g.r, N: g.b, X: upload(t, ctx, lhs), DY: upload(t, ctx, rhs), DW: dw, In: g.in}))
			got = readBits(t, eng, ctx, dw, F32, g.r*g.b)
		}
		require.Equal(t, golden[g.key()], digestBits(g.out, got), g.key())
	}
}
