package gemm

import (
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/detgemm/detgemm/cudaload"
	"github.com/detgemm/detgemm/gemm/ref"
	"github.com/detgemm/detgemm/internal/golden"
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

// goldenReference computes the case on the CPU reference o (refIEEE, or
// refTC for the tensor-core file), as output bits.
func goldenReference(t *testing.T, o ref.Options, g goldenCase) []uint32 {
	lhs, rhs, extra := goldenInputs(g)
	switch g.op {
	case "Forward":
		y := make([]float32, g.a*g.b)
		require.NoError(t, o.Forward(ref.Values(y), ref.Values(lhs.values), ref.Values(rhs.values), extra.values, g.a, g.r, g.b))
		return refBits(g.out, y)
	case "DX":
		dx := make([]float32, g.a*g.b)
		require.NoError(t, o.DX(ref.Values(dx), ref.Values(lhs.values), ref.Values(rhs.values), g.a, g.r, g.b))
		return refBits(g.out, dx)
	default:
		dw := append([]float32(nil), extra.values...)
		require.NoError(t, o.DW(dw, ref.Values(lhs.values), ref.Values(rhs.values), g.a, g.r, g.b))
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

// ieeeGoldenHeader is ieee.txt's comment block, written back by
// -update-golden.
var ieeeGoldenHeader = []string{
	"SHA-256 of the output bits (little-endian, stored width) of the IEEE tiers on seeded inputs.",
	"Written by: go test ./gemm -run TestGoldenDigestsFromCPUReference -update-golden",
	"Changing a digest changes the numerical contract: record it in CHANGELOG.md.",
}

// readGolden reads one of gemm's golden files; test names the test whose
// -update-golden writes it.
func readGolden(t *testing.T, path, test string) *golden.File {
	t.Helper()
	g, err := golden.Read(path, golden.Arrow)
	require.NoError(t, err, "golden digests missing: run go test ./gemm -run %s -update-golden", test)
	return g
}

// goldenDigests computes every case's digest (out gives a case's output
// bits in its stored type), in case order: the order of the file's lines.
func goldenDigests(cases []goldenCase, out func(goldenCase) []uint32) []golden.Entry {
	got := make([]golden.Entry, len(cases))
	for i, g := range cases {
		got[i] = golden.Entry{Key: g.key(), Digest: digestBits(g.out, out(g))}
	}
	return got
}

// requireGoldenFile checks the CPU's digests of cases against the file at
// path, which must hold exactly those cases; with -update-golden it first
// rewrites the file from them. The file must also be what -update-golden
// would write (header, order), so rewriting an unchanged contract leaves it
// byte for byte as it is.
func requireGoldenFile(t *testing.T, path, test string, header []string, cases []goldenCase, out func(goldenCase) []uint32) {
	t.Helper()
	got := goldenDigests(cases, out)
	if *updateGolden {
		require.NoError(t, golden.Write(path, golden.Arrow, header, got))
	}
	file := readGolden(t, path, test)
	require.NoError(t, file.Compare(got))
	require.Equal(t, golden.Format(golden.Arrow, file.Header, file.Entries), golden.Format(golden.Arrow, header, got),
		"-update-golden would rewrite %s: its header or case order differs from the test's", path)
}

// TestGoldenDigestsFromCPUReference recomputes every golden case on the CPU
// reference (no GPU needed) and checks the digests on file.
func TestGoldenDigestsFromCPUReference(t *testing.T) {
	requireGoldenFile(t, goldenPath, "TestGoldenDigestsFromCPUReference", ieeeGoldenHeader, goldenCases(),
		func(g goldenCase) []uint32 { return goldenReference(t, refIEEE, g) })
}

// TestGoldenDigestsOnGPU runs every golden case on the device.
func TestGoldenDigestsOnGPU(t *testing.T) {
	eng, ctx := gpuEngine(t)
	file := readGolden(t, goldenPath, "TestGoldenDigestsFromCPUReference")
	require.NoError(t, file.Compare(goldenDigests(goldenCases(), func(g goldenCase) []uint32 { return goldenOnDevice(t, eng, ctx, g) })))
}

// goldenOnDevice runs a golden case on eng, as output bits in the stored
// type (dW: the float32 master).
func goldenOnDevice(t *testing.T, eng *Engine, ctx *cudaload.Context, g goldenCase) []uint32 {
	t.Helper()
	lhs, rhs, extra := goldenInputs(g)
	switch g.op {
	case "Forward":
		y := poisoned(t, ctx, uint64(g.a*g.b*g.out.Size()))
		require.NoError(t, eng.Forward(ForwardArgs{Tier: g.tier, M: g.a, K: g.r, N: g.b, X: upload(t, ctx, lhs), W: upload(t, ctx, rhs),
			Bias: upload(t, ctx, extra), Y: y, In: g.in, Out: g.out}))
		return readBits(t, eng, ctx, y, g.out, g.a*g.b)
	case "DX":
		dx := poisoned(t, ctx, uint64(g.a*g.b*g.out.Size()))
		require.NoError(t, eng.DX(DXArgs{Tier: g.tier, M: g.a, N: g.r, K: g.b, DY: upload(t, ctx, lhs), W: upload(t, ctx, rhs), DX: dx, In: g.in, Out: g.out}))
		return readBits(t, eng, ctx, dx, g.out, g.a*g.b)
	}
	dw := upload(t, ctx, extra)
	require.NoError(t, eng.DW(DWArgs{Tier: g.tier, M: g.a, K: g.r, N: g.b, X: upload(t, ctx, lhs), DY: upload(t, ctx, rhs), DW: dw, In: g.in}))
	return readBits(t, eng, ctx, dw, F32, g.r*g.b)
}
