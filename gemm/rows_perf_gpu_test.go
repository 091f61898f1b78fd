package gemm

import (
	"bytes"
	"fmt"
	"math"
	"os"
	"testing"
	"time"

	"github.com/detgemm/detgemm/cudaload"
	"github.com/detgemm/detgemm/kernels"
	"github.com/stretchr/testify/require"
)

// TestRowsFusedVariants times the MR = 4 one-launch rows kernel against its
// round-7 variants (the old all-copy block, deeper rings, narrower blocks,
// an L2 prefetch hint) launched
// directly, and the engine's two launches, on few-row shapes with the
// weights rotated over sets larger than the L2; each variant's output is
// first compared byte for byte with the kernel the engine uses. It runs
// only with DETGEMM_ROWS_PERF=1.
func TestRowsFusedVariants(t *testing.T) {
	if os.Getenv("DETGEMM_ROWS_PERF") == "" {
		t.Skip("set DETGEMM_ROWS_PERF=1 to time the rows variants")
	}
	eng, ctx := gpuEngine(t)
	b, err := kernels.Build(eng.Arch())
	require.NoError(t, err)
	mod, err := ctx.LoadModule(b.Modules[rowsFamily].CUBIN)
	require.NoError(t, err)
	defer mod.Close()
	type variant struct {
		suf                 string
		mto, pw, ct, stages int
	}
	variants := []variant{{"", 0, 2, 64, 4}, {"old", 0, 0, 64, 4}, {"p2s6", 0, 2, 64, 6}, {"p4s6", 0, 4, 64, 6},
		{"c32p2", 0, 2, 32, 4}, {"c32p2s8", 0, 2, 32, 8}, {"p2h", 0, 2, 64, 4}}
	fn := func(l layout, d DType, v variant) (f *cudaload.Function, threads, smem, jt uint32) {
		name := fmt.Sprintf("detgemm_rowsf_%v_%v_%v_m4", l, d, d)
		if v.suf != "" {
			name = fmt.Sprintf("detgemm_rowsfx_%v_%v_m4_%s", l, d, v.suf)
		}
		f, err := mod.Function(name)
		require.NoError(t, err, name)
		es := d.Size()
		jt = uint32(4 * v.ct)
		kc := 16384 / (256 * es)
		elems := kc * int(jt)
		if l == layoutNT {
			elems = int(jt) * (kc + 16/es)
		}
		smem = uint32(4*260*4 + v.stages*elems*es)
		if v.pw > 0 {
			smem += uint32(16 * v.stages)
		}
		require.NoError(t, f.SetMaxDynamicSharedMemory(int(smem)))
		mt := 4
		if v.mto > 0 {
			mt = v.mto
		}
		return f, uint32(4/mt*v.ct + 32*v.pw), smem, jt
	}
	start, end := mustEvent(t, ctx), mustEvent(t, ctx)
	var args cudaload.Args
	launch := func(f *cudaload.Function, threads, smem, jt uint32, a, w, ws, ctr, y cudaload.DevicePtr, M, R, cols int, nt bool) error {
		ldb := int64(cols)
		if nt {
			ldb = int64(R)
		}
		args.Reset().Ptr(a).Ptr(w).Ptr(ws).Ptr(ctr).Ptr(y).Ptr(0).
			Int64(int64(M)).Int64(int64(cols)).Int64(int64(R)).Int64(int64(R)).Int64(ldb)
		grid := cudaload.Dim3{X: uint32(ceilDiv(int64(cols), int64(jt))), Y: uint32(ceilDiv(int64(R), 256)), Z: 1}
		return f.Launch(cudaload.LaunchConfig{Grid: grid, Block: cudaload.Dim3{X: threads, Y: 1, Z: 1}, SharedMemBytes: smem, Stream: eng.Stream()}, &args)
	}
	r := newRand(t)
	const sets = 6
	for _, d := range []DType{F32, BF16} {
		for _, l := range []layout{layoutNN, layoutNT} {
			shapes := [][3]int{{1, 4096, 4096}, {4, 4096, 4096}, {1, 4096, 11008}, {1, 11008, 4096}}
			if l == layoutNT {
				shapes = [][3]int{{1, 4096, 4096}, {1, 11008, 4096}}
			}
			// Bits: every variant against the engine's kernel, M = 3, a short last slab.
			{
				M, R, cols := 3, 4136, 1032
				x := upload(t, ctx, randomOperand(r, d, M*R))
				w := upload(t, ctx, randomOperand(r, d, R*cols))
				ws := alloc(t, ctx, uint64(ceilDiv(int64(R), 256))*uint64(M*cols)*4)
				ctr := alloc(t, ctx, 64)
				require.NoError(t, ctx.MemsetD8(ctr, 0, 64))
				var want []byte
				for _, v := range variants {
					f, th, sm, jt := fn(l, d, v)
					y := poisoned(t, ctx, uint64(M*cols*d.Size()))
					require.NoError(t, launch(f, th, sm, jt, x, w, ws, ctr, y, M, R, cols, l == layoutNT))
					require.NoError(t, eng.Stream().Synchronize())
					got := make([]byte, M*cols*d.Size())
					require.NoError(t, cudaload.CopyFromDevice(ctx, got, y))
					if want == nil {
						want = got
					}
					require.True(t, bytes.Equal(want, got), "%v %v variant %q differs from the engine's kernel", l, d, v.suf)
				}
			}
			for _, s := range shapes {
				M, R, cols := s[0], s[1], s[2]
				var ws []cudaload.DevicePtr
				for range sets {
					p := alloc(t, ctx, uint64(R*cols*d.Size()))
					require.NoError(t, ctx.MemsetD8(p, 0x3c, uint64(R*cols*d.Size())))
					ws = append(ws, p)
				}
				x, y := alloc(t, ctx, uint64(M*R*d.Size())), alloc(t, ctx, uint64(M*cols*4))
				require.NoError(t, ctx.MemsetD8(x, 0x3c, uint64(M*R*d.Size())))
				part := alloc(t, ctx, uint64(ceilDiv(int64(R), 256))*uint64(M*cols)*4)
				ctr := alloc(t, ctx, 4096)
				require.NoError(t, ctx.MemsetD8(ctr, 0, 4096))
				time1 := func(name string, run func(i int) error) {
					require.NoError(t, run(0))
					const reps = 30
					best := time.Duration(math.MaxInt64)
					for range 3 {
						require.NoError(t, start.Record(eng.Stream()))
						for i := range reps {
							require.NoError(t, run(i+1))
						}
						require.NoError(t, end.Record(eng.Stream()))
						require.NoError(t, end.Synchronize())
						dt, err := cudaload.ElapsedTime(start, end)
						require.NoError(t, err)
						best = min(best, dt/reps)
					}
					by := float64(d.Size()) * float64(R*cols+M*R+M*cols)
					t.Logf("rowsvar %v %-4v M=%d R=%-5d cols=%-5d %-8s %7.2f us %5.2f TB/s", l, d, M, R, cols, name,
						float64(best.Nanoseconds())/1e3, by/best.Seconds()/1e12)
				}
				for _, v := range variants {
					f, th, sm, jt := fn(l, d, v)
					name := v.suf
					if name == "" {
						name = "base"
					}
					time1(name, func(i int) error {
						return launch(f, th, sm, jt, x, ws[i%sets], part, ctr, y, M, R, cols, l == layoutNT)
					})
				}
				{
					old := eng.force
					eng.force = force{strategy: StrategyRows, rowsPath: rowsPathTwo}
					tier := TierF32
					if d != F32 {
						tier = TierTyped
					}
					time1("two", func(i int) error {
						if l == layoutNT { // dY [M, R], W [cols, R]: N = R, K = cols
							return eng.DX(DXArgs{Tier: tier, M: M, N: R, K: cols, DY: x, W: ws[i%sets], DX: y, In: d, Out: d})
						}
						return eng.Forward(ForwardArgs{Tier: tier, M: M, K: R, N: cols, X: x, W: ws[i%sets], Y: y, In: d, Out: d})
					})
					eng.force = old
				}
			}
		}
	}
}
