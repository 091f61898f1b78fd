package gemm

import (
	"fmt"
	"math"
	"os"
	"sort"
	"strings"
	"testing"

	"github.com/detgemm/detgemm/cudaload"
	"github.com/detgemm/detgemm/gemm/ref"
	"github.com/detgemm/detgemm/kernels"
	"github.com/stretchr/testify/require"
)

// TestDWMicroBatchesAcrossStrategies: dW over 1024 rows in one tiled call
// equals micro-batches split at a multiple of 256 rows run by split-slab.
func TestDWMicroBatchesAcrossStrategies(t *testing.T) {
	eng, ctx := gpuEngine(t)
	r := newRand(t)
	const M, K, N = 1024, 70, 300
	for _, in := range []DType{F32, BF16} {
		tier := TierF32
		if in.Half() {
			tier = TierTyped
		}
		x, dy := randomOperand(r, in, M*K), randomOperand(r, in, M*N)
		xP, dyP := upload(t, ctx, x), upload(t, ctx, dy)
		dw0 := randomOperand(r, F32, K*N)
		one := upload(t, ctx, dw0)
		tiled, split := forced(eng, filter{strategy: StrategyTiled}), forced(eng, filter{strategy: StrategySplitSlab, perBlock: 1})
		require.NoError(t, tiled.DW(DWArgs{Tier: tier, M: M, K: K, N: N, X: xP, DY: dyP, DW: one, In: in}))
		two := upload(t, ctx, dw0)
		es := cudaload.DevicePtr(in.Size())
		require.NoError(t, split.DW(DWArgs{Tier: tier, M: 256, K: K, N: N, X: xP, DY: dyP, DW: two, In: in}))
		require.NoError(t, split.DW(DWArgs{Tier: tier, M: M - 256, K: K, N: N, X: xP + 256*K*es, DY: dyP + 256*N*es, DW: two, In: in}))
		want := append([]float32(nil), dw0.values...)
		require.NoError(t, refIEEE.DW(want, ref.Values(x.values), ref.Values(dy.values), M, K, N))
		requireSameBits(t, refBits(F32, want), readBits(t, eng, ctx, one, F32, K*N), N, fmt.Sprintf("%v one tiled call", in))
		requireSameBits(t, refBits(F32, want), readBits(t, eng, ctx, two, F32, K*N), N, fmt.Sprintf("%v two split-slab calls", in))
	}
}

// TestHeadlineShapesSameBitsAcrossStrategies runs the bench's problem
// shapes — the ones the new strategies exist for — by the dispatcher's
// choice and by the tiled kernel, and requires identical bits (and the
// reference's, where the CPU can afford it).
func TestHeadlineShapesSameBitsAcrossStrategies(t *testing.T) {
	eng, ctx := gpuEngine(t)
	r := newRand(t)
	for _, c := range []struct {
		op        string
		a, red, b int // (M, K, N) for Forward, (M, N, K) for DX
		want      Strategy
		in        DType
		checkRef  bool
	}{
		{"Forward", 1, 4096, 4096, StrategyRows, F32, true},
		{"Forward", 1, 4096, 4096, StrategyRows, BF16, true},
		{"Forward", 16, 4096, 4096, StrategyRows, F32, false},
		{"Forward", 16, 4096, 4096, StrategyRows, BF16, false},
		{"DX", 8, 11008, 4096, StrategyRows, F32, false},
		{"DX", 128, 11008, 4096, StrategySplitSlab, F32, false},
		{"DX", 128, 11008, 4096, StrategySplitSlab, BF16, false},
	} {
		name := fmt.Sprintf("%s/%v/%dx%dx%d", c.op, c.in, c.a, c.red, c.b)
		t.Run(name, func(t *testing.T) {
			tier := TierF32
			if c.in.Half() {
				tier = TierTyped
			}
			lhs, rhs := randomOperand(r, c.in, c.a*c.red), randomOperand(r, c.in, c.red*c.b)
			lhsP, rhsP := upload(t, ctx, lhs), upload(t, ctx, rhs)
			n := c.a * c.b
			var call Call
			run := func(f filter) []uint32 {
				eng := forced(eng, f)
				out := poisoned(t, ctx, uint64(n*c.in.Size()))
				if c.op == "Forward" {
					a := ForwardArgs{Tier: tier, M: c.a, K: c.red, N: c.b, X: lhsP, W: rhsP, Y: out, In: c.in, Out: c.in}
					call = a
					require.NoError(t, eng.Forward(a))
				} else {
					a := DXArgs{Tier: tier, M: c.a, N: c.red, K: c.b, DY: lhsP, W: rhsP, DX: out, In: c.in, Out: c.in}
					call = a
					require.NoError(t, eng.DX(a))
				}
				return readBits(t, eng, ctx, out, c.in, n)
			}
			auto := run(filter{})
			got, err := eng.Strategy(call)
			require.NoError(t, err)
			if eng.sms >= 100 { // the dispatch rule's expectations are for big GPUs
				require.Equal(t, c.want, got)
			}
			requireSameBits(t, run(filter{strategy: StrategyTiled}), auto, c.b, name+": tiled vs "+got.String())
			if c.checkRef {
				want := make([]float32, n)
				if c.op == "Forward" {
					require.NoError(t, refIEEE.Forward(ref.Values(want), ref.Values(lhs.values), ref.Values(rhs.values), nil, c.a, c.red, c.b))
				} else {
					require.NoError(t, refIEEE.DX(ref.Values(want), ref.Values(lhs.values), ref.Values(rhs.values), c.a, c.red, c.b))
				}
				requireSameBits(t, refBits(c.in, want), auto, c.b, name+": reference")
			}
		})
	}
}

// TestPresizedCallsAllocateNothing: after Presize, calls of the presized
// shapes (and smaller ones) run on the same workspace, and the queries
// agree with what the calls use.
func TestPresizedCallsAllocateNothing(t *testing.T) {
	eng, ctx := gpuEngine(t)
	r := newRand(t)
	const M, K, N = 16, 4096, 2048
	shape := ForwardArgs{Tier: TierF32, M: M, K: K, N: N, In: F32, Out: F32}
	need, err := eng.WorkspaceBytes(shape)
	require.NoError(t, err)
	require.Equal(t, uint64(16*M*N*4+N/256*4), need, "16 slabs of f32 partials, a counter per 256 columns")
	s, err := eng.Strategy(shape)
	require.NoError(t, err)
	require.Equal(t, StrategyRows, s)
	require.NoError(t, eng.Presize(shape, DXArgs{Tier: TierF32, M: 4, N: 1000, K: 3000, In: F32, Out: F32}))
	eng.mu.Lock()
	ptr, bytes, ctr := eng.ws.ptr, eng.ws.bytes, eng.ws.ctr
	eng.mu.Unlock()
	require.GreaterOrEqual(t, bytes, uint64(16*M*N*4))

	x, w := upload(t, ctx, randomOperand(r, F32, M*K)), upload(t, ctx, randomOperand(r, F32, K*N))
	y := poisoned(t, ctx, M*N*4)
	for _, m := range []int{M, 1, 7} {
		a := shape
		a.M, a.X, a.W, a.Y = m, x, w, y
		require.NoError(t, eng.Forward(a))
	}
	require.NoError(t, eng.Synchronize())
	eng.mu.Lock()
	defer eng.mu.Unlock()
	require.Equal(t, ptr, eng.ws.ptr, "no new workspace")
	require.Equal(t, bytes, eng.ws.bytes)
	require.Equal(t, ctr, eng.ws.ctr, "no new counters")
}

// TestRowsOneLaunchMatchesReferenceBitForBit drives the one-launch rows
// kernel (the last block of each column run folds) through its edges on
// 16-byte-aligned operands, where it is the path taken: every IEEE combo,
// both layouts, one to seventeen slabs (more than one batch of eight in the
// fold), last slabs shorter than a chunk and than an unrolled group,
// column runs cut short, several row groups, bias on and off; each shape
// twice, and shapes of different grids in turn, so a counter a launch
// failed to reset would show as a wrong or missing fold.
func TestRowsOneLaunchMatchesReferenceBitForBit(t *testing.T) {
	base, ctx := gpuEngine(t)
	r := newRand(t)
	eng := forced(base, filter{strategy: StrategyRows, rowsPath: rowsPathOne})
	// (M, K+3, N) for Forward (K odd: the last slab ends in single steps),
	// (M, N, K) for DX (N a multiple of 8: W's rows aligned).
	shapes := [][3]int{
		{1, 4096, 520}, {3, 2296, 136}, {4, 8, 1032}, {5, 4104, 264}, {16, 264, 8},
		{17, 520, 1000}, {32, 1288, 128}, {33, 256, 392}, {2, 4352, 8},
	}
	for _, op := range []string{"Forward", "DX"} {
		for _, c := range ieeeCombos {
			for i, s := range shapes {
				for rep := 0; rep < 2; rep++ {
					name := fmt.Sprintf("%s/%v/%v-%v/%dx%dx%d/%d", op, c.tier, c.in, c.out, s[0], s[1], s[2], rep)
					if op == "Forward" && s[2]*c.in.Size()%16 != 0 {
						continue // W's rows unaligned: the two-launch path (covered elsewhere)
					}
					red := s[1]
					p, err := DXArgs{Tier: c.tier, M: s[0], N: red, K: s[2], In: c.in, Out: c.out}.build(false)
					if op == "Forward" {
						red -= 3
						p, err = ForwardArgs{Tier: c.tier, M: s[0], K: red, N: s[2], In: c.in, Out: c.out}.build(false)
					}
					require.NoError(t, err)
					require.True(t, eng.rowsOneLaunch(p, rowsMR(int64(s[0])), &eng.f), name) // with W 256-byte aligned, as upload's are
					want, got, cols := runOp(t, eng, ctx, r, op, c.tier, c.in, c.out, s[0], red, s[2], (i+rep)%2 == 0)
					requireSameBits(t, want, got, cols, name)
				}
			}
		}
	}
}

func TestPresizeRejectsInvalidShapes(t *testing.T) {
	eng, _ := gpuEngine(t)
	require.ErrorIs(t, eng.Presize(ForwardArgs{Tier: TierF32, M: 0, K: 1, N: 1, In: F32, Out: F32}), ErrDimension)
	require.ErrorIs(t, eng.Presize(nil), ErrNilPointer)
	_, err := eng.WorkspaceBytes(DWArgs{Tier: TierTensorCore, M: 1, K: 1, N: 1, In: F32})
	require.ErrorIs(t, err, ErrDType)
}

// TestFastF16WideningIsExact: widen_f16.cuh's cvt.f32.f16 widening (used
// by the tiled, split-slab and rows families) gives the reference's bits
// for every binary16 code, and a NaN for every NaN code.
func TestFastF16WideningIsExact(t *testing.T) {
	eng, ctx := gpuEngine(t)
	fn := checkFunction(t, eng, ctx, "check_widen_f16", "detgemm_rows_f16_widen_check")
	codes := make([]uint16, 1<<16)
	for i := range codes {
		codes[i] = uint16(i)
	}
	in := alloc(t, ctx, 2<<16)
	require.NoError(t, cudaload.CopyToDevice(ctx, in, codes))
	out := poisoned(t, ctx, 4<<16)
	var a cudaload.Args
	a.Ptr(in).Ptr(out).Uint64(uint64(len(codes)))
	require.NoError(t, fn.Launch(cudaload.LaunchConfig{Grid: cudaload.Dim3{X: 256, Y: 1, Z: 1}, Block: cudaload.Dim3{X: 256, Y: 1, Z: 1}}, &a))
	require.NoError(t, ctx.Synchronize())
	got := make([]float32, len(codes))
	require.NoError(t, cudaload.CopyFromDevice(ctx, got, out))
	for i, h := range codes {
		want := F16.ToF32(h)
		if want != want {
			require.True(t, got[i] != got[i], "f16 %#04x widens to a NaN", h)
			continue
		}
		require.Equal(t, math.Float32bits(want), math.Float32bits(got[i]), "f16 %#04x", h)
	}
}

// envTimings turns on TestStrategyTimings, a measuring aid rather than a
// test: it prints the time of every strategy (and split-slab G, and tile
// width) on the bench's shapes, the figures the dispatch model is
// calibrated with. A value other than "1" keeps only the shapes whose
// "op MxKxN" (e.g. "dx 2048x768x3072") contains one of its comma-separated
// parts.
const envTimings = "DETGEMM_TIMINGS"

func TestStrategyTimings(t *testing.T) {
	if os.Getenv(envTimings) == "" {
		t.Skipf("set %s=1 to time every strategy on the bench's shapes", envTimings)
	}
	eng, ctx := gpuEngine(t)
	start, err := ctx.NewEvent()
	require.NoError(t, err)
	defer start.Close()
	end, err := ctx.NewEvent()
	require.NoError(t, err)
	defer end.Close()
	// perCall times n rounds of call(i) between two events, five times, and
	// returns the median µs per call.
	perCall := func(call func(i int) error) float64 {
		for i := 0; i < 3; i++ {
			require.NoError(t, call(i))
		}
		require.NoError(t, eng.Synchronize())
		n := 8
		var samples []float64
		for rep := 0; rep < 6; rep++ {
			require.NoError(t, start.Record(eng.Stream()))
			for i := 0; i < n; i++ {
				require.NoError(t, call(i))
			}
			require.NoError(t, end.Record(eng.Stream()))
			require.NoError(t, end.Synchronize())
			d, err := cudaload.ElapsedTime(start, end)
			require.NoError(t, err)
			us := float64(d.Nanoseconds()) / 1e3 / float64(n)
			if rep == 0 { // size the batches to about 3 ms
				n = max(8, min(2000, int(3000/max(us, 1))))
				continue
			}
			samples = append(samples, us)
		}
		sort.Float64s(samples)
		return samples[len(samples)/2]
	}
	for _, c := range []struct {
		op      string
		M, K, N int
		in      DType
	}{
		{"fwd", 1, 4096, 4096, F32}, {"fwd", 1, 4096, 4096, BF16}, {"fwd", 1, 4096, 4096, F16},
		{"fwd", 16, 4096, 4096, F32}, {"fwd", 16, 4096, 4096, BF16},
		{"dx", 1, 4096, 4096, F32}, {"dx", 16, 4096, 4096, BF16},
		{"fwd", 2048, 768, 3072, F32}, {"dx", 2048, 768, 3072, F32}, {"dw", 2048, 768, 3072, F32},
		{"fwd", 2048, 768, 3072, BF16}, {"dx", 2048, 768, 3072, BF16}, {"dw", 2048, 768, 3072, BF16},
		{"fwd", 4096, 1536, 3072, F32}, {"dx", 4096, 1536, 3072, F32}, {"dw", 4096, 1536, 3072, F32},
		{"fwd", 2048, 768, 512, F32}, {"dx", 2048, 768, 512, F32}, {"dw", 2048, 768, 512, F32},
		{"fwd", 4096, 4096, 4096, F32}, {"fwd", 4096, 4096, 4096, F16},
		{"dx", 128, 4096, 11008, F32}, {"fwd", 64, 4096, 4096, F32},
		{"fwd", 1, 256, 128, F32}, {"fwd", 1, 4096, 128, F32}, // host and launch overhead
		{"dx", 2048, 768, 512, BF16}, {"dw", 2048, 768, 512, BF16}, {"fwd", 2048, 768, 512, BF16},
		{"fwd", 512, 1024, 1024, F32}, {"dw", 1024, 1024, 1024, F32},
		// dW with short reductions: the stream strategy's crossover.
		{"dw", 1, 4096, 4096, F32}, {"dw", 1, 4096, 4096, BF16}, {"dw", 4, 4096, 4096, F32},
		{"dw", 16, 4096, 4096, F32}, {"dw", 16, 4096, 4096, BF16}, {"dw", 32, 4096, 4096, F32},
		{"dw", 64, 4096, 4096, F32}, {"dw", 128, 4096, 4096, F32}, {"dw", 256, 4096, 4096, F32},
		{"dw", 512, 4096, 4096, F32}, {"dw", 64, 4096, 4096, BF16}, {"dw", 256, 4096, 4096, BF16},
		{"dw", 16, 4096, 11008, F32}, {"dw", 128, 4096, 11008, F32}, {"dw", 128, 4096, 11008, BF16},
		{"dw", 256, 4096, 11008, F32}, {"dw", 512, 4096, 11008, BF16}, {"dw", 16, 1024, 1024, F32},
		{"dw", 64, 768, 3072, F32}, {"dw", 256, 768, 3072, F32}, {"dw", 96, 4096, 4096, F32},
	} {
		if sel := os.Getenv(envTimings); sel != "1" {
			keep := false
			for _, part := range strings.Split(sel, ",") {
				keep = keep || strings.Contains(fmt.Sprintf("%s %dx%dx%d", c.op, c.M, c.K, c.N), part)
			}
			if !keep {
				continue
			}
		}
		tier := TierF32
		if c.in.Half() {
			tier = TierTyped
		}
		es := uint64(c.in.Size())
		mk := uint64(c.M * c.K)
		kn := uint64(c.K * c.N)
		mn := uint64(c.M * c.N)
		setBytes := (mk + kn + mn) * es
		sets := int(max(2, min(8, (256<<20)/max(setBytes, 1))))
		type set struct{ x, w, y, dw cudaload.DevicePtr }
		ss := make([]set, sets)
		for i := range ss {
			ss[i] = set{alloc(t, ctx, mk*es), alloc(t, ctx, kn*es), alloc(t, ctx, mn*es), alloc(t, ctx, kn*4)}
			for _, b := range []struct {
				p cudaload.DevicePtr
				n uint64
			}{{ss[i].x, mk * es}, {ss[i].w, kn * es}, {ss[i].y, mn * es}, {ss[i].dw, kn * 4}} {
				require.NoError(t, ctx.MemsetD8(b.p, 0x3c, b.n)) // small finite values in every type
			}
		}
		callFor := func(i int) Call {
			s := ss[i%sets]
			switch c.op {
			case "fwd":
				return ForwardArgs{Tier: tier, M: c.M, K: c.K, N: c.N, X: s.x, W: s.w, Y: s.y, In: c.in, Out: c.in}
			case "dx":
				return DXArgs{Tier: tier, M: c.M, N: c.N, K: c.K, DY: s.y, W: s.w, DX: s.x, In: c.in, Out: c.in}
			}
			return DWArgs{Tier: tier, M: c.M, K: c.K, N: c.N, X: s.x, DY: s.y, DW: s.dw, In: c.in}
		}
		p, err := callFor(0).build(true)
		require.NoError(t, err)
		auto, err := eng.choose(p, &filter{})
		require.NoError(t, err)
		flops := 2 * float64(c.M) * float64(c.K) * float64(c.N)
		line := fmt.Sprintf("%-4s %5dx%5dx%5d %-4v auto=%v/w%d/G%d:", c.op, c.M, c.K, c.N, c.in, auto.strategy, auto.width, auto.perBlock)
		add := func(name string, f filter) {
			if _, err := choose(p.layout, p.rows, p.cols, p.red, eng.sms, &f); err != nil {
				return
			}
			us := perCall(func(i int) error { return enqueue(t, forced(eng, f), callFor(i)) })
			line += fmt.Sprintf(" %s %.1f (%.1fT)", name, us, flops/us/1e6)
		}
		add("auto", filter{})
		add("tiled", filter{strategy: StrategyTiled})
		if c.M <= 32 && c.op != "dw" {
			add("rows", filter{strategy: StrategyRows})
			// The rows strategy's two kernels apart.
			pl, err := choose(p.layout, p.rows, p.cols, p.red, eng.sms, &filter{strategy: StrategyRows})
			require.NoError(t, err)
			// No lock: perCall synchronises through the engine, and this
			// test is the engine's only user.
			kern := perCall(func(i int) error {
				q, _ := callFor(i).build(true)
				return launcher{e: &eng.device}.rows(&q, &pl)
			})
			fold := perCall(func(i int) error {
				q, _ := callFor(i).build(true)
				return launcher{e: &eng.device}.fold(&q, &pl)
			})
			line += fmt.Sprintf(" [rows kernel %.1f fold %.1f]", kern, fold)
		}
		if c.M > 32 || c.op == "dw" {
			add("narrow", filter{strategy: StrategyTiled, width: narrowWidth})
		}
		if c.op == "dw" {
			add("stream", filter{strategy: StrategyStream, streamRows: streamTall})
			add("stream32", filter{strategy: StrategyStream, streamRows: streamShort})
		}
		if S := int64(p.red+255) / 256; S >= 2 && c.M > 32 || c.op == "dw" {
			seen := map[int64]bool{}
			for z := int64(1); z <= S; z++ {
				g := (S + z - 1) / z
				if seen[g] || (g > 16 && z > 1 && g != S) {
					continue
				}
				seen[g] = true
				add(fmt.Sprintf("G%d", g), filter{strategy: StrategySplitSlab, perBlock: g})
				add(fmt.Sprintf("nG%d", g), filter{strategy: StrategySplitSlab, perBlock: g, width: narrowWidth})
			}
		}
		fmt.Println(line)
		os.Stdout.Sync()
	}
	// The kernels as this GPU's NVRTC built them: registers and spills.
	b, err := kernels.Build(eng.Arch())
	require.NoError(t, err)
	for _, fam := range []string{simtFamily, slabsFamily, rowsFamily, rowsFusedFamily, streamFamily} {
		for _, r := range b.Modules[fam].Resources {
			fmt.Printf("resources %s %s: %d registers, %d stack, %d/%d spill\n", b.NVRTCVersion, r.Kernel, r.Registers, r.StackBytes, r.SpillStores, r.SpillLoads)
		}
	}
}
