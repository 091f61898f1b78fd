package triad

import (
	"errors"
	"math"
	"testing"

	"github.com/detgemm/detgemm/gemm"
	"github.com/detgemm/detgemm/gemm/ref"
)

// triadSentinels are the errors triad's calls refuse with.
var triadSentinels = []error{ErrNilTensor, ErrShape, ErrDType, ErrBackend, ErrConfig, ErrNoGraphs, ErrClosed, gemm.ErrTier}

func triadTyped(err error) bool {
	for _, s := range triadSentinels {
		if errors.Is(err, s) {
			return true
		}
	}
	return false
}

// fuzzSmall bounds the elements FuzzTriadCPU allocates.
const fuzzSmall = 1024

// Known overflows, found by FuzzTriadCPU and reported to triad's owner:
// with these inputs the calls panic instead of refusing. The target keeps
// away from them until they are fixed; then drop the guards.
//   - Tensor.View(row0, rows) with row0+rows overflowing int (View(MaxInt, 1)).
//   - CPU.Alloc admits up to 2^60 elements and make panics above what Go
//     can allocate (Alloc(F32, 1<<30, 1<<30)).
//   - NewTask(seed, in, hidden, out, rows) multiplies its sizes unchecked
//     (NewTask(1, 1<<62, 3, 1, 1)).
const triadOverflowsFixed = true

// FuzzTriadCPU drives the CPU backend's shape-taking entry points with
// fuzzed sizes, dtypes and tiers: Alloc, Tensor.View, NewLinear,
// Linear.SetParams, Linear.Forward, NewTask, and NewMLP with each
// activation (the gated ones among them, and one that is not an Act) with
// its Step, Forward and batch invariance, dense, 2:4 sparse or fp8 (data
// bits 16 and 17 pick a sparse MLP and a sparse Linear, 18 and 19 an fp8
// MLP and an fp8 Linear). Nothing may panic; a refusal
// matches one of triad's sentinels (or gemm.ErrTier); small valid shapes
// are accepted, and an f32 Linear's Forward gives the IEEE f32 bits of
// ref.Options.Forward.
func FuzzTriadCPU(f *testing.F) {
	type seed struct {
		dtype, tier     uint8
		rows, cols      int64
		row0, vrows     int64
		in, out, xr, xc int64
		dw, db          int8
		hidden          int64
		data            uint64
	}
	const big = math.MaxInt64
	for _, s := range []seed{
		{1, 1, 4, 3, 1, 2, 3, 5, 2, 3, 0, 0, 4, 1},
		{2, 2, 4, 3, 0, 4, 16, 8, 3, 16, 0, 0, 4, 2},
		{3, 3, 1, 1, 0, 1, 16, 16, 1, 16, 0, 0, 1, 3},
		{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 4},
		{9, 9, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, 5},
		{1, 2, 4, 3, 4, 1, 3, 5, 2, 3, 0, 0, 4, 6},  // view past the end; f32 in the typed tier
		{2, 1, 4, 3, 3, 2, 3, 5, 2, 4, 1, -1, 4, 7}, // mismatched x; bad SetParams lengths
		{1, 1, big, big, big, big, big, big, big, big, 0, 0, big, 8},
		{1, 1, 1 << 31, 1 << 31, 1 << 31, 1, 1 << 31, 1, 1, 1, 0, 0, 1 << 31, 9},
		{1, 1, 1 << 62, 2, 0, 1, 1 << 62, 2, 1, 1, 0, 0, 2, 10},
		// An MLP with each activation (data>>8 picks it): gated with a
		// hidden width of 16, then of 12 (refused), and one past the acts.
		{1, 1, 4, 3, 0, 1, 5, 3, 4, 5, 0, 0, 16, 2 << 8},
		{1, 1, 4, 3, 0, 1, 5, 3, 4, 5, 0, 0, 16, 3 << 8},
		{3, 2, 4, 3, 0, 1, 5, 3, 4, 5, 0, 0, 16, 4 << 8},
		{2, 3, 4, 3, 0, 1, 5, 3, 9, 5, 0, 0, 24, 5<<8 | 1},
		{1, 1, 4, 3, 0, 1, 5, 3, 4, 5, 0, 0, 12, 4 << 8},
		{1, 1, 4, 3, 0, 1, 5, 3, 4, 5, 0, 0, 16, uint64(numActs) << 8},
		// 2:4 sparse (data bit 16: the MLP, 17: the Linear): ReLU and GELU
		// in the tensor-core tier, then a refused width, tier and gate.
		{uint8(BF16), uint8(gemm.TierTensorCore), 4, 3, 0, 1, 16, 5, 7, 16, 0, 0, 32, 3 << 16},
		{uint8(F16), uint8(gemm.TierTensorCore), 4, 3, 0, 1, 32, 3, 5, 32, 0, 0, 16, 3<<16 | 1<<8},
		{uint8(BF16), uint8(gemm.TierTensorCore), 4, 3, 0, 1, 16, 5, 7, 16, 0, 0, 24, 3 << 16},
		{uint8(BF16), uint8(gemm.TierTyped), 4, 3, 0, 1, 16, 5, 7, 16, 0, 0, 32, 3 << 16},
		{uint8(BF16), uint8(gemm.TierTensorCore), 4, 3, 0, 1, 16, 5, 7, 16, 0, 0, 32, 3<<16 | 4<<8},
		// fp8 (data bit 18: the MLP, 19: the Linear): ReLU and GELU in the
		// tensor-core tier, then a refused width, tier, gate and Sparse24.
		{uint8(BF16), uint8(gemm.TierTensorCore), 4, 3, 0, 1, 16, 32, 7, 16, 0, 0, 32, 3 << 18},
		{uint8(F16), uint8(gemm.TierTensorCore), 4, 3, 0, 1, 32, 16, 5, 32, 0, 0, 16, 3<<18 | 1<<8},
		{uint8(BF16), uint8(gemm.TierTensorCore), 4, 3, 0, 1, 16, 5, 7, 16, 0, 0, 32, 3 << 18},
		{uint8(BF16), uint8(gemm.TierTyped), 4, 3, 0, 1, 16, 16, 7, 16, 0, 0, 32, 3 << 18},
		{uint8(BF16), uint8(gemm.TierTensorCore), 4, 3, 0, 1, 16, 16, 7, 16, 0, 0, 32, 3<<18 | 4<<8},
		{uint8(BF16), uint8(gemm.TierTensorCore), 4, 3, 0, 1, 16, 16, 7, 16, 0, 0, 32, 15 << 16},
	} {
		f.Add(s.dtype, s.tier, s.rows, s.cols, s.row0, s.vrows, s.in, s.out, s.xr, s.xc, s.dw, s.db, s.hidden, s.data)
	}
	f.Fuzz(func(t *testing.T, dtype, tier uint8, rows, cols, row0, vrows, in, out, xr, xc int64, dw, db int8, hidden int64, data uint64) {
		cpu := NewCPU(1 + int(data%3))
		d := DType(dtype)
		small := func(a, b int64) bool { return a > 0 && b > 0 && a <= fuzzSmall && b <= fuzzSmall && a*b <= fuzzSmall }
		typed := func(what string, err error) {
			t.Helper()
			if err != nil && !triadTyped(err) {
				t.Fatalf("%s: untyped error %v", what, err)
			}
		}

		// Alloc and View.
		admitted := rows > 0 && cols > 0 && rows <= (1<<62)/cols/4 && rows <= MaxHostTensorBytes/cols/int64(max(d.Size(), 1))
		// A shape the backend admits is allocated only when small: the test
		// must not take the host's memory.
		if small(rows, cols) || !admitted {
			x, err := cpu.Alloc(d, int(rows), int(cols))
			typed("Alloc", err)
			if (err == nil) != (d.Valid() && admitted) {
				t.Fatalf("Alloc(%v, %d, %d): %v", d, rows, cols, err)
			}
			if err == nil && small(rows, cols) {
				if overflow := vrows > 0 && row0 > math.MaxInt64-vrows; !overflow || triadOverflowsFixed {
					v, err := x.View(int(row0), int(vrows))
					typed("View", err)
					ok := row0 >= 0 && vrows > 0 && row0+vrows <= rows
					if (err == nil) != ok {
						t.Fatalf("View(%d, %d) of %d rows: %v", row0, vrows, rows, err)
					}
					if err == nil && (v.Rows() != int(vrows) || v.Cols() != int(cols) || v.DType() != d) {
						t.Fatalf("View(%d, %d): %d×%d %v", row0, vrows, v.Rows(), v.Cols(), v.DType())
					}
				}
				if err := x.Free(); err != nil {
					t.Fatal(err)
				}
			}
		}

		// A layer, its parameters and a forward pass.
		cfg := LinearConfig{In: int(in), Out: int(out), Tier: gemm.Tier(tier), DType: d, Sparse24: data>>17&1 == 1, FP8: data>>19&1 == 1,
			MaxRows: int(min(max(xr, 0), fuzzSmall))}
		func() {
			if !small(in, out) && in > 0 && out > 0 {
				return
			}
			l, err := NewLinear(cpu, cfg)
			typed("NewLinear", err)
			if err != nil {
				return
			}
			defer l.Close()
			w := fuzzValues(int(in*out)+int(dw), data)
			b := fuzzValues(int(out)+int(db), data+1)
			err = l.SetParams(w, b)
			typed("SetParams", err)
			if (err == nil) != (dw == 0 && db == 0) {
				t.Fatalf("SetParams with %d and %d extra values: %v", dw, db, err)
			}
			if !small(xr, xc) || !small(xr, out) {
				return
			}
			x, err := cpu.Alloc(d, int(xr), int(xc))
			if err != nil {
				t.Fatal(err)
			}
			xv := fuzzValues(int(xr*xc), data+2)
			if err := cpu.Write(x, xv); err != nil {
				t.Fatal(err)
			}
			y, err := cpu.Alloc(d, int(xr), int(out))
			if err != nil {
				t.Fatal(err)
			}
			err = l.Forward(x, y)
			typed("Forward", err)
			if (err == nil) != (xc == in) {
				t.Fatalf("Forward of %d×%d into a %d→%d layer: %v", xr, xc, in, out, err)
			}
			if err != nil || d != F32 || dw != 0 || db != 0 {
				return
			}
			got, err := cpu.Read(y)
			if err != nil {
				t.Fatal(err)
			}
			want := make([]float32, xr*out)
			if err := (ref.Options{Tier: ref.IEEE, In: ref.F32}).Forward(ref.Values(want), ref.Values(xv), ref.Values(w), b, int(xr), int(in), int(out)); err != nil {
				t.Fatal(err)
			}
			for i := range want {
				if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
					t.Fatalf("y[%d] = %v, the reference gives %v", i, got[i], want[i])
				}
			}
		}()

		// An MLP in → hidden → out on xr rows with the activation data>>8
		// picks (numActs: not an Act).
		fuzzMLP(t, cpu, d, gemm.Tier(tier), Act((data>>8)%uint64(numActs+1)), data>>16&1 == 1, data>>18&1 == 1, in, hidden, out, xr, data, typed)

		// NewTask with the layer's sizes and a hidden width.
		tooBig := func(a, b int64) bool { return a > 0 && b > 0 && a > MaxTaskElements/b }
		if (small(in, hidden) && small(hidden, out) && small(xr, in) && small(xr, out) && small(xr, hidden)) ||
			in <= 0 || hidden <= 0 || out <= 0 || xr <= 0 ||
			tooBig(in, hidden) || tooBig(hidden, out) || tooBig(xr, in) || tooBig(xr, hidden) || tooBig(xr, out) {
			task, err := NewTask(data, int(in), int(hidden), int(out), int(xr))
			typed("NewTask", err)
			fits := !tooBig(in, hidden) && !tooBig(hidden, out) && !tooBig(xr, in) && !tooBig(xr, hidden) && !tooBig(xr, out)
			if (err == nil) != (in > 0 && hidden > 0 && out > 0 && xr > 0 && fits) {
				t.Fatalf("NewTask(%d, %d, %d, %d): %v", in, hidden, out, xr, err)
			}
			if err == nil && (len(task.X) != int(xr*in) || len(task.Y) != int(xr*out)) {
				t.Fatalf("NewTask: %d and %d values", len(task.X), len(task.Y))
			}
		}
	})
}

// fuzzValues is n deterministic values in [-1, 1) (none when n <= 0).
func fuzzValues(n int, seed uint64) []float32 {
	if n <= 0 {
		return nil
	}
	v := make([]float32, n)
	s := seed | 1
	for i := range v {
		s ^= s << 13
		s ^= s >> 7
		s ^= s << 17
		v[i] = float32(int32(s>>32)) / (1 << 31)
	}
	return v
}

// fuzzMLPMax bounds the widths and rows of FuzzTriadCPU's networks.
const fuzzMLPMax = 64

// fuzzMLP makes an MLP in → hidden → out for xr rows with act: refused
// exactly when a width or xr is not positive, the tier does not run d, act
// is not an Act, or act is gated and hidden is not a multiple of 8, or
// (sparse) the tier is not the tensor cores', act is gated, or in or
// hidden is not a multiple of 16, or (fp8) the tier is not the tensor
// cores', act is neither ReLU nor GELU, the network is also sparse, or a
// width is not a multiple of 16 (the widths checked before any
// allocation, so huge ones are refused at once);
// else (small shapes only) a Step, a Forward and the batch invariance of
// its first rows run without an error.
func fuzzMLP(t *testing.T, cpu *CPU, d DType, tier gemm.Tier, act Act, sparse, fp8 bool, in, hidden, out, xr int64, data uint64, typed func(string, error)) {
	t.Helper()
	valid := in > 0 && hidden > 0 && out > 0 && xr > 0
	if valid && (in > fuzzMLPMax || hidden > fuzzMLPMax || out > fuzzMLPMax || xr > fuzzMLPMax) {
		return // a valid shape that would take time or memory
	}
	ok := valid && tier.Accepts(d, d) == nil && act.Valid() && (!act.Gated() || hidden%8 == 0) &&
		(!sparse || tier == gemm.TierTensorCore && !act.Gated() && in%16 == 0 && hidden%16 == 0) &&
		(!fp8 || tier == gemm.TierTensorCore && (act == ActReLU || act == ActGELU) && !sparse && in%16 == 0 && hidden%16 == 0 && out%16 == 0)
	m, err := NewMLP(cpu, MLPConfig{Sizes: []int{int(in), int(hidden), int(out)}, Tier: tier, DType: d, MaxRows: int(xr), Seed: data, Act: act,
		Opt: SGD{LR: 0.01, Momentum: 0.5}, Sparse24: sparse, FP8: fp8})
	typed("NewMLP", err)
	if (err == nil) != ok {
		t.Fatalf("NewMLP(%d → %d → %d, %d rows, %v, %v, %v, sparse %v, fp8 %v): %v", in, hidden, out, xr, tier, d, act, sparse, fp8, err)
	}
	if err != nil {
		if act.Gated() && valid && tier.Accepts(d, d) == nil && hidden%8 != 0 && !errors.Is(err, ErrShape) {
			t.Fatalf("NewMLP with a %v hidden width of %d: %v, want ErrShape", act, hidden, err)
		}
		return
	}
	defer m.Close()
	x, err := cpu.Alloc(d, int(xr), int(in))
	if err != nil {
		t.Fatal(err)
	}
	y, err := cpu.Alloc(d, int(xr), int(out))
	if err != nil {
		t.Fatal(err)
	}
	if err := cpu.Write(x, fuzzValues(int(xr*in), data+3)); err != nil {
		t.Fatal(err)
	}
	if err := cpu.Write(y, fuzzValues(int(xr*out), data+4)); err != nil {
		t.Fatal(err)
	}
	if err := m.Step(x, y); err != nil {
		t.Fatalf("Step (%v): %v", act, err)
	}
	n, diff, err := BatchInvariance(m, x, 2)
	if err != nil || n != min(2, int(xr)) || diff != 0 {
		t.Fatalf("BatchInvariance (%v): %d rows compared, %d differ, %v", act, n, diff, err)
	}
}
