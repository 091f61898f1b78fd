package gemm

import (
	"errors"
	"testing"

	"github.com/detgemm/detgemm/gemm/ref"
	"github.com/stretchr/testify/require"
)

// tcProblem is a validated tensor-core problem with 16-byte aligned operands
// and leading dimensions as the op gives them.
func tcProblem(t *testing.T, c Call) problem {
	t.Helper()
	p, err := c.build(false)
	require.NoError(t, err)
	p.a, p.b, p.c = 0x10000, 0x20000, 0x30000
	return p
}

// chooseTCLaunch is the planner's tensor-core plan for p on a GPU of sms
// SMs whose blocks may use shared bytes, with the sm_90a families
// (gemm_wgmma, gemm_tc_rows_tma) or without, f pinning the kernel: the
// registry's loop (Engine.choose) on a bare device.
func chooseTCLaunch(p problem, sms int, shared uint32, hasWG bool, f tcForce) (tcLaunch, error) {
	pl, err := (&device{sms: sms, tcShared: shared, hasWG: hasWG}).choose(p, &filter{tc: f})
	return pl.tc, err
}

// chooseTCKernel is the kernel of chooseTCLaunch's plan.
func chooseTCKernel(p problem, sms int, shared uint32, hasWG bool, f tcForce) (tcKey, error) {
	r, err := chooseTCLaunch(p, sms, shared, hasWG, f)
	return r.k, err
}

// chooseTC is chooseTCKernel on a GPU without the sm_90a families.
func chooseTC(p problem, sms int, shared uint32, f tcForce) (tcKey, error) {
	return chooseTCKernel(p, sms, shared, false, f)
}

func TestTensorCoreTierAcceptsHalfInputsOnly(t *testing.T) {
	for _, c := range []struct {
		name    string
		in, out DType
		want    error
	}{
		{"bf16→bf16", BF16, BF16, nil}, {"bf16→f32", BF16, F32, nil},
		{"f16→f16", F16, F16, nil}, {"f16→f32", F16, F32, nil},
		{"f32 input", F32, F32, ErrDType}, {"bf16→f16", BF16, F16, ErrDType}, {"f16→bf16", F16, BF16, ErrDType},
		{"invalid input", 0, F32, ErrDType},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := ForwardArgs{Tier: TierTensorCore, M: 3, K: 5, N: 7, X: 0x1000, W: 0x2000, Y: 0x3000, In: c.in, Out: c.out}
			_, err := f.problem()
			requireIs(t, err, c.want)
			x := DXArgs{Tier: TierTensorCore, M: 3, N: 5, K: 7, DY: 0x1000, W: 0x2000, DX: 0x3000, In: c.in, Out: c.out}
			_, err = x.problem()
			requireIs(t, err, c.want)
			if c.out == F32 {
				w := DWArgs{Tier: TierTensorCore, M: 3, K: 5, N: 7, X: 0x1000, DY: 0x2000, DW: 0x3000, In: c.in}
				_, err = w.problem()
				requireIs(t, err, c.want)
			}
		})
	}
}

func requireIs(t *testing.T, err, want error) {
	t.Helper()
	if want == nil {
		require.NoError(t, err)
		return
	}
	require.True(t, errors.Is(err, want), "got %v, want %v", err, want)
}

// TestTCDispatchRule pins the dispatcher's choices on a 132-SM GPU (the
// H200): the 128×256 tile where it fills the GPU (not for dW, whose tc256
// kernel is slower), smaller tiles where a big tile's last wave would leave
// SMs idle, and gemm_tc_rows for Forward and dX of at most 16 rows.
func TestTCDispatchRule(t *testing.T) {
	const sms = 132
	for _, c := range []struct {
		name string
		call Call
		want tcTile
	}{
		{"4096³ forward", ForwardArgs{Tier: TierTensorCore, M: 4096, K: 4096, N: 4096, In: BF16, Out: BF16}, tcTile256},
		{"8192³ dX", DXArgs{Tier: TierTensorCore, M: 8192, N: 8192, K: 8192, In: BF16, Out: BF16}, tcTile256},
		{"8192³ dW", DWArgs{Tier: TierTensorCore, M: 8192, K: 8192, N: 8192, In: BF16}, tcTile128},
		{"4096×1536×3072 dW", DWArgs{Tier: TierTensorCore, M: 4096, K: 1536, N: 3072, In: BF16}, tcTile128},
		{"4096×1536×3072 forward", ForwardArgs{Tier: TierTensorCore, M: 4096, K: 1536, N: 3072, In: BF16, Out: BF16}, tcTile256},
		{"M = 1", ForwardArgs{Tier: TierTensorCore, M: 1, K: 4096, N: 4096, In: BF16, Out: BF16}, tcTileRows8},
		{"M = 8", ForwardArgs{Tier: TierTensorCore, M: 8, K: 4096, N: 11008, In: BF16, Out: F32}, tcTileRows8},
		{"M = 9 dX", DXArgs{Tier: TierTensorCore, M: 9, N: 4096, K: 11008, In: F16, Out: F16}, tcTileRows16},
		{"M = 16 dX", DXArgs{Tier: TierTensorCore, M: 16, N: 4096, K: 11008, In: F16, Out: F16}, tcTileRows16},
		{"M = 17", ForwardArgs{Tier: TierTensorCore, M: 17, K: 4096, N: 4096, In: BF16, Out: BF16}, tcTile64},
		{"M = 1 dW", DWArgs{Tier: TierTensorCore, M: 1, K: 4096, N: 4096, In: BF16}, tcTileDW64},
		{"M = 64, 1024 columns", ForwardArgs{Tier: TierTensorCore, M: 64, K: 4096, N: 1024, In: F16, Out: F32}, tcTile64},
		{"2048×768×3072", ForwardArgs{Tier: TierTensorCore, M: 2048, K: 768, N: 3072, In: BF16, Out: BF16}, tcTile128},
	} {
		t.Run(c.name, func(t *testing.T) {
			k, err := chooseTC(tcProblem(t, c.call), sms, 227<<10, tcForce{})
			require.NoError(t, err)
			require.Equal(t, c.want, k.tile, "chose %s", k.name())
			require.True(t, k.vec, "aligned operands take the 16-byte path")
		})
	}
}

func TestTCDispatchTakesTheElementPathWhenUnaligned(t *testing.T) {
	base := ForwardArgs{Tier: TierTensorCore, M: 4096, K: 4096, N: 4096, In: BF16, Out: BF16}
	for _, c := range []struct {
		name string
		edit func(p *problem)
	}{
		{"X off 16 bytes", func(p *problem) { p.a += 2 }},
		{"W off 16 bytes", func(p *problem) { p.b += 8 }},
		{"lda not a multiple of 8", func(p *problem) { p.lda = 4095 }},
		{"ldb not a multiple of 8", func(p *problem) { p.ldb = 4092 }},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := tcProblem(t, base)
			c.edit(&p)
			k, err := chooseTC(p, 132, 227<<10, tcForce{})
			require.NoError(t, err)
			require.False(t, k.vec)
			require.NotEqual(t, tcTile256, k.tile, "tc256 has no element path")
			small := p
			small.rows = 1
			k, err = chooseTC(small, 132, 227<<10, tcForce{})
			require.NoError(t, err)
			require.Equal(t, tcTile64, k.tile, "gemm_tc_rows has no element path")
			_, err = chooseTC(small, 132, 227<<10, tcForce{tile: tcTileRows8})
			require.ErrorIs(t, err, errTCKernel)
			_, err = chooseTC(p, 132, 227<<10, tcForce{path: tcPathVec})
			require.ErrorIs(t, err, errTCKernel)
			_, err = chooseTC(p, 132, 227<<10, tcForce{tile: tcTile256})
			require.ErrorIs(t, err, errTCKernel)
		})
	}
}

func TestTCForcedKernelsAreHonouredOrRefused(t *testing.T) {
	p := tcProblem(t, ForwardArgs{Tier: TierTensorCore, M: 5, K: 40, N: 16, In: F16, Out: F16})
	for _, tile := range tcTilesBySize {
		for _, path := range []tcPath{tcPathVec, tcPathAny} {
			k, err := chooseTC(p, 132, 227<<10, tcForce{tile: tile, path: path})
			if path == tcPathAny && !tcGeometries[tile].anyVariant {
				require.ErrorIs(t, err, errTCKernel)
				continue
			}
			require.NoError(t, err)
			require.Equal(t, tcKey{tile, layoutNN, F16, F16, path == tcPathVec}, k)
		}
	}
	// Grid limits: 64-wide column tiles exceed grid.y long before 128-wide ones.
	wide := tcProblem(t, ForwardArgs{Tier: TierTensorCore, M: 1, K: 16, N: 64*maxGridYZ + 64, In: BF16, Out: BF16})
	_, err := chooseTC(wide, 132, 227<<10, tcForce{tile: tcTile64})
	require.ErrorIs(t, err, errTCKernel)
	k, err := chooseTC(wide, 132, 227<<10, tcForce{})
	require.NoError(t, err)
	require.NotEqual(t, tcTile64, k.tile)
}

// TestTCRowsForcedOnlyWhereItRuns: a forced gemm_tc_rows tile runs Forward
// and dX of any row count on the 16-byte path and refuses dW and the
// element path.
func TestTCRowsForcedOnlyWhereItRuns(t *testing.T) {
	for _, tile := range tcRowsTiles {
		for _, c := range []Call{
			ForwardArgs{Tier: TierTensorCore, M: 5000, K: 40, N: 16, In: F16, Out: F16},
			DXArgs{Tier: TierTensorCore, M: 1, N: 40, K: 17, In: BF16, Out: F32},
		} {
			p := tcProblem(t, c)
			k, err := chooseTC(p, 132, 227<<10, tcForce{tile: tile})
			require.NoError(t, err)
			require.Equal(t, tcKey{tile, p.layout, p.in, p.out, true}, k)
			_, err = chooseTC(p, 132, 227<<10, tcForce{tile: tile, path: tcPathAny})
			require.ErrorIs(t, err, errTCKernel)
		}
		dw := tcProblem(t, DWArgs{Tier: TierTensorCore, M: 1, K: 40, N: 16, In: BF16})
		_, err := chooseTC(dw, 132, 227<<10, tcForce{tile: tile})
		require.ErrorIs(t, err, errTCKernel)
	}
}

// TestTCSharedMemoryFits: gemm_tc.cu asks for these sizes; every tile fits
// an sm_90 block (227 KiB) and all but tc256 a block of sm_86/89 (99 KiB),
// where the dispatcher then never picks tc256.
func TestTCSharedMemoryFits(t *testing.T) {
	require.Equal(t, uint32(4*(128*40+32*136)*2), tcSharedBytes(tcTile128, layoutNN))
	require.Equal(t, uint32(4*(128*40+256*40)*2), tcSharedBytes(tcTile256, layoutNT))
	require.Equal(t, uint32(4*(32*72+32*72)*2), tcSharedBytes(tcTile64, layoutTN))
	small := tcProblem(t, ForwardArgs{Tier: TierTensorCore, M: 8192, K: 8192, N: 8192, In: BF16, Out: BF16})
	k, err := chooseTC(small, 84, 99<<10, tcForce{})
	require.NoError(t, err)
	require.NotEqual(t, tcTile256, k.tile, "sm_86 blocks cannot hold tc256")
	_, err = chooseTC(small, 84, 99<<10, tcForce{tile: tcTile256})
	require.ErrorIs(t, err, errTCKernel)
	for _, k := range tcKeysOf(tcFamily) {
		limit := uint32(227 << 10) // sm_90
		if k.tile != tcTile256 {
			limit = 99 << 10 // sm_86 and sm_89
		}
		require.LessOrEqual(t, tcSharedBytes(k.tile, k.layout), limit, k.name())
	}
	// gemm_tc_rows: Rows::smem_bytes, and small enough for sm_86/89 blocks.
	require.Equal(t, uint32(6*((8*136+128*40)*2+16)), tcRowsSharedBytes(tcTileRows8, layoutNN))
	require.Equal(t, uint32(5*((16*136+32*136)*2+16)), tcRowsSharedBytes(tcTileRows16, layoutNT))
	for _, k := range tcKeysOf(tcRowsFamily) {
		require.LessOrEqual(t, tcRowsSharedBytes(k.tile, k.layout), uint32(99<<10), k.name())
	}
}

// TestTCWorkspaceFollowsHowTheSlabsFold: a tensor-core call needs
// workspace only where the plan cuts its reduction: on planes S f32
// outputs for Forward and dX, S-1 for dW (slab 0 folds in place); one for
// gemm_wgmma's running sums; none where the rows kernels fold in registers
// or the plan has one slab.
func TestTCWorkspaceFollowsHowTheSlabsFold(t *testing.T) {
	hopper := &Engine{device: device{sms: 132, tcShared: 227 << 10, hasWG: true}}
	ampere := &Engine{device: device{sms: 108, tcShared: 163 << 10}}
	for _, c := range []struct {
		name     string
		e        *Engine
		call     Call
		ws       uint64
		strategy Strategy
		tile     tcTile
	}{
		{"one slab", hopper, ForwardArgs{Tier: TierTensorCore, M: 1, K: 4096, N: 4096, In: BF16, Out: BF16}, 0, StrategyTiled, tcTileRowsTMA8},
		{"rows fold in registers", hopper, DXArgs{Tier: TierTensorCore, M: 16, N: 11008, K: 4096, In: F16, Out: F32}, 0, StrategyTiled, tcTileRowsTMA16},
		{"small grid: planes", hopper, DXArgs{Tier: TierTensorCore, M: 128, N: 11008, K: 4096, In: BF16, Out: BF16}, 3 * 128 * 4096 * 4, StrategySplitSlab, tcTileWG128x128S},
		{"full grid: running sums in registers", hopper, DXArgs{Tier: TierTensorCore, M: 8192, N: 11008, K: 4096, In: BF16, Out: BF16}, 0, StrategyTiled, tcTileWG128x192R},
		{"dW planes but slab 0", hopper, DWArgs{Tier: TierTensorCore, M: 2048, K: 768, N: 512, In: BF16}, 3 * 768 * 512 * 4, StrategySplitSlab, tcTileWG128x128S},
		{"dW short batch", hopper, DWArgs{Tier: TierTensorCore, M: 100, K: 64, N: 64, In: BF16}, 0, StrategyTiled, tcTileDW64},
		{"gemm_tc planes", ampere, DXArgs{Tier: TierTensorCore, M: 128, N: 11008, K: 4096, In: BF16, Out: BF16}, 3 * 128 * 4096 * 4, StrategySplitSlab, 0},
		{"gemm_tc dW on tc64", ampere, DWArgs{Tier: TierTensorCore, M: 2048, K: 768, N: 512, In: F16}, 3 * 768 * 512 * 4, StrategySplitSlab, tcTile64},
	} {
		pl, err := c.e.planCall(c.call)
		require.NoError(t, err, c.name)
		require.Equal(t, c.ws, pl.ws, c.name)
		require.Equal(t, c.strategy, pl.strategy, c.name)
		p, err := c.call.build(false)
		require.NoError(t, err, c.name)
		r, err := chooseTCLaunch(p, c.e.sms, c.e.tcShared, c.e.hasWG, tcForce{})
		require.NoError(t, err, c.name)
		if c.tile != 0 {
			require.Equal(t, c.tile, r.k.tile, c.name)
		}
		if r.planes && p.layout != layoutTN {
			require.Equal(t, F32, r.k.out, "%s: partials are f32", c.name)
		}
	}
}

// tcGoldenPath holds the tensor-core tier's digests on sm_90 (the Hopper
// model's bits); -update-golden rewrites it with the IEEE file.
const tcGoldenPath = "../testdata/golden/tc_sm90.txt"

// tcGoldenCases are the IEEE golden shapes for every op and type pair of
// the tensor-core tier, on the same seeded inputs.
func tcGoldenCases() []goldenCase {
	var out []goldenCase
	// The last two cut their reductions (ref.TCSlabs: Forward and dX 4
	// slabs; ref.TCDWSlabs: dW 2 slabs).
	shapes := [][3]int{{1, 4097, 5}, {7, 300, 33}, {64, 512, 96}, {130, 1000, 17}, {256, 64, 264}, {3, 8200, 24}, {1030, 24, 40}}
	for _, op := range []string{"Forward", "DX", "DW"} {
		for _, c := range []struct{ in, out DType }{{BF16, BF16}, {BF16, F32}, {F16, F16}, {F16, F32}} {
			if op == "DW" && c.out != F32 {
				continue
			}
			for i, s := range shapes {
				out = append(out, goldenCase{op, TierTensorCore, c.in, c.out, s[0], s[1], s[2], uint64(2000 + i)})
			}
		}
	}
	return out
}

// tcGoldenHeader is tc_sm90.txt's comment block, written back by
// -update-golden.
var tcGoldenHeader = []string{
	"SHA-256 of the output bits (little-endian, stored width) of the tensor-core tier on sm_90",
	"(the Hopper model of gemm/ref, which the H200 matches bit for bit) on seeded inputs.",
	"Written by: go test ./gemm -run TestTCGoldenDigestsFromModel -update-golden",
	"Changing a digest changes the numerical contract: record it in CHANGELOG.md.",
}

// TestTCGoldenDigestsFromModel recomputes every tensor-core golden case on
// the Hopper model (no GPU needed) and checks the digests on file; the GPU
// test checks the device against the same file.
func TestTCGoldenDigestsFromModel(t *testing.T) {
	requireGoldenFile(t, tcGoldenPath, "TestTCGoldenDigestsFromModel", tcGoldenHeader, tcGoldenCases(),
		func(g goldenCase) []uint32 { return goldenReference(t, refTC(ref.Hopper, g.in), g) })
}

// TestTCForcedKernelsOnCutPlans: a forced kernel runs a cut plan the way
// it can (the slab variant of a wgmma tile, planes where its grid leaves
// SMs idle; the rows kernels in registers) or is refused with errTCKernel
// (192×192 and tc128's dW have no slabs; the dW stream runs one slab).
func TestTCForcedKernelsOnCutPlans(t *testing.T) {
	const sms, shared = 132, 227 << 10
	cutDX := DXArgs{Tier: TierTensorCore, M: 128, N: 11008, K: 4096, In: BF16, Out: BF16}
	cutDW := DWArgs{Tier: TierTensorCore, M: 2048, K: 768, N: 512, In: BF16}
	oneSlab := ForwardArgs{Tier: TierTensorCore, M: 300, K: 1000, N: 520, In: F16, Out: F16}
	for _, c := range []struct {
		name         string
		call         Call
		f            tcForce
		refused      bool
		tile         tcTile
		planes, runs bool
		toWS         bool
		ws           uint64
	}{
		{name: "wg128x256 on planes", call: cutDX, f: tcForce{tcTileWG128x256, tcPathVec}, tile: tcTileWG128x256S, planes: true, ws: 3 * 128 * 4096 * 4},
		{name: "wg192x192 has no slabs", call: cutDX, f: tcForce{tcTileWG192x192, tcPathVec}, refused: true},
		{name: "tc128 dW has no slabs", call: cutDW, f: tcForce{tcTile128, tcPathVec}, refused: true},
		{name: "tc64 dW on planes", call: cutDW, f: tcForce{tcTile64, tcPathAny}, tile: tcTile64, planes: true, ws: 3 * 768 * 512 * 4},
		{name: "dW stream runs one slab", call: cutDW, f: tcForce{tcTileDW64, tcPathVec}, refused: true},
		{name: "rows fold in registers", call: DXArgs{Tier: TierTensorCore, M: 16, N: 11008, K: 4096, In: BF16, Out: BF16}, f: tcForce{tcTileRowsTMA16, tcPathVec}, tile: tcTileRowsTMA16},
		{name: "slab variant, one slab, 16-bit out", call: oneSlab, f: tcForce{tcTileWG128x128S, tcPathVec}, tile: tcTileWG128x128S, toWS: true, ws: 300 * 520 * 4},
	} {
		t.Run(c.name, func(t *testing.T) {
			p, err := c.call.build(false)
			require.NoError(t, err)
			r, err := chooseTCLaunch(p, sms, shared, true, c.f)
			if c.refused {
				require.ErrorIs(t, err, errTCKernel)
				return
			}
			require.NoError(t, err)
			require.Equal(t, c.tile, r.k.tile)
			require.Equal(t, c.planes, r.planes, "planes")
			require.Equal(t, c.runs, r.runsum, "running sums")
			require.Equal(t, c.toWS, r.toWS, "result to the workspace")
			if r.planes || r.toWS {
				require.Equal(t, F32, r.k.out, "the workspace is f32")
			}
			ws, ok := r.wsBytes(p)
			require.True(t, ok)
			require.Equal(t, c.ws, ws)
		})
	}
}

// BenchmarkChooseTCLaunch is the host cost of the tensor-core dispatch on
// every call: kernel choice and the plan's cut.
func BenchmarkChooseTCLaunch(b *testing.B) {
	p, err := DXArgs{Tier: TierTensorCore, M: 128, N: 11008, K: 4096, In: BF16, Out: BF16}.build(false)
	require.NoError(b, err)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := chooseTCLaunch(p, 132, 227<<10, true, tcForce{}); err != nil {
			b.Fatal(err)
		}
	}
}
