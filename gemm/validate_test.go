package gemm

import (
	"errors"
	"math"
	"testing"

	"github.com/detgemm/detgemm/cudaload"
	"github.com/stretchr/testify/require"
)

func goodForward() ForwardArgs {
	return ForwardArgs{Tier: TierF32, M: 4, K: 8, N: 16, X: 0x10000, W: 0x20000, Y: 0x30000, In: F32, Out: F32}
}

func TestForwardValidationRejectsBadArguments(t *testing.T) {
	cases := []struct {
		name string
		edit func(*ForwardArgs)
		want error
	}{
		{"zero tier", func(a *ForwardArgs) { a.Tier = 0 }, ErrTier},
		{"tensor-core tier with f32 input", func(a *ForwardArgs) { a.Tier = TierTensorCore }, ErrDType},
		{"zero M", func(a *ForwardArgs) { a.M = 0 }, ErrDimension},
		{"negative K", func(a *ForwardArgs) { a.K = -3 }, ErrDimension},
		{"zero N", func(a *ForwardArgs) { a.N = 0 }, ErrDimension},
		{"f32 tier with bf16 input", func(a *ForwardArgs) { a.In = BF16 }, ErrDType},
		{"f32 tier with f16 output", func(a *ForwardArgs) { a.Out = F16 }, ErrDType},
		{"typed tier with f32 input", func(a *ForwardArgs) { a.Tier = TierTyped }, ErrDType},
		{"typed tier with mixed output", func(a *ForwardArgs) { a.Tier, a.In, a.Out = TierTyped, BF16, F16 }, ErrDType},
		{"invalid dtype", func(a *ForwardArgs) { a.In = 0 }, ErrDType},
		{"nil X", func(a *ForwardArgs) { a.X = 0 }, ErrNilPointer},
		{"nil W", func(a *ForwardArgs) { a.W = 0 }, ErrNilPointer},
		{"nil Y", func(a *ForwardArgs) { a.Y = 0 }, ErrNilPointer},
		{"misaligned X", func(a *ForwardArgs) { a.X = 0x10002 }, ErrMisaligned},
		{"misaligned bias", func(a *ForwardArgs) { a.Bias = 0x40001 }, ErrMisaligned},
		{"Y overlaps X", func(a *ForwardArgs) { a.Y = a.X + 16 }, ErrAlias},
		{"Y overlaps bias", func(a *ForwardArgs) { a.Bias = a.Y + 60 }, ErrAlias},
		{"element count overflows", func(a *ForwardArgs) { a.M, a.K = math.MaxInt64/2, 4 }, ErrTooLarge},
		{"too many column tiles", func(a *ForwardArgs) { a.M, a.K, a.N = 1, 1, 128*65535+1; a.W, a.Y = 0x1_0000_0000, 0x10_0000_0000 }, ErrTooLarge},
		{"range wraps the address space", func(a *ForwardArgs) { a.Y = cudaload.DevicePtr(^uintptr(0)-7) &^ 3 }, ErrTooLarge},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a := goodForward()
			tc.edit(&a)
			_, err := a.problem()
			require.Error(t, err)
			require.True(t, errors.Is(err, tc.want), "got %v, want %v", err, tc.want)
			var ae *ArgError
			require.True(t, errors.As(err, &ae))
			require.Equal(t, "Forward", ae.Op)
			require.Contains(t, err.Error(), "gemm.Forward: ")
		})
	}
}

func TestValidArgumentsPass(t *testing.T) {
	_, err := goodForward().problem()
	require.NoError(t, err)
	a := goodForward()
	a.Tier, a.In, a.Out, a.Bias = TierTyped, BF16, F32, 0x50000
	_, err = a.problem()
	require.NoError(t, err)
	_, err = DWArgs{Tier: TierTyped, M: 3, K: 5, N: 7, X: 0x1000, DY: 0x2000, DW: 0x3000, In: F16}.problem()
	require.NoError(t, err)
	_, err = DXArgs{Tier: TierF32, M: 3, N: 5, K: 7, DY: 0x1000, W: 0x2000, DX: 0x3000, In: F32, Out: F32}.problem()
	require.NoError(t, err)
}

func TestDWAndDXValidationNameTheirArguments(t *testing.T) {
	_, err := DWArgs{Tier: TierF32, M: 3, K: 5, N: 7, X: 0x1000, DY: 0x2000, DW: 0x1004, In: F32}.problem()
	require.ErrorIs(t, err, ErrAlias)
	require.Contains(t, err.Error(), "gemm.DW: DW: output")
	_, err = DWArgs{Tier: TierF32, M: 3, K: 0, N: 7, X: 0x1000, DY: 0x2000, DW: 0x3000, In: F32}.problem()
	require.ErrorIs(t, err, ErrDimension)
	require.Contains(t, err.Error(), "K: 0 is not positive")
	_, err = DXArgs{Tier: TierTyped, M: 3, N: 5, K: 7, DY: 0x1000, W: 0x2001, DX: 0x3000, In: BF16, Out: BF16}.problem()
	require.ErrorIs(t, err, ErrMisaligned)
	_, err = DXArgs{Tier: TierTyped, M: 3, N: 5, K: 7, DY: 0x1000, W: 0x2000, DX: 0, In: BF16, Out: BF16}.problem()
	require.ErrorIs(t, err, ErrNilPointer)
}

func TestLayoutsMapToTheKernelProblem(t *testing.T) {
	p, err := ForwardArgs{Tier: TierF32, M: 2, K: 3, N: 5, X: 0x1000, W: 0x2000, Y: 0x3000, In: F32, Out: F32}.problem()
	require.NoError(t, err)
	require.Equal(t, problem{op: "Forward", tier: TierF32, layout: layoutNN, in: F32, out: F32, rows: 2, cols: 5, red: 3,
		a: 0x1000, b: 0x2000, c: 0x3000, lda: 3, ldb: 5, ldc: 5}, p)
	p, err = DXArgs{Tier: TierF32, M: 2, N: 5, K: 3, DY: 0x1000, W: 0x2000, DX: 0x3000, In: F32, Out: F32}.problem()
	require.NoError(t, err)
	require.Equal(t, problem{op: "DX", tier: TierF32, layout: layoutNT, in: F32, out: F32, rows: 2, cols: 3, red: 5,
		a: 0x1000, b: 0x2000, c: 0x3000, lda: 5, ldb: 5, ldc: 3}, p)
	p, err = DWArgs{Tier: TierF32, M: 2, K: 3, N: 5, X: 0x1000, DY: 0x2000, DW: 0x3000, In: F32}.problem()
	require.NoError(t, err)
	require.Equal(t, problem{op: "DW", tier: TierF32, layout: layoutTN, in: F32, out: F32, rows: 3, cols: 5, red: 2,
		a: 0x1000, b: 0x2000, c: 0x3000, lda: 3, ldb: 5, ldc: 5}, p)
}

func TestEveryAcceptedCombinationHasAKernel(t *testing.T) {
	have := map[kernelKey]bool{}
	for k := range simtIDs {
		have[k] = true
	}
	for _, tier := range []Tier{TierF32, TierTyped} {
		for _, in := range []DType{F32, BF16, F16} {
			for _, out := range []DType{F32, BF16, F16} {
				a := goodForward()
				a.Tier, a.In, a.Out = tier, in, out
				if p, err := a.problem(); err == nil {
					require.True(t, have[kernelKey{p.layout, p.in, p.out}], "forward %v %v→%v", tier, in, out)
				}
				x := DXArgs{Tier: tier, M: 2, N: 3, K: 4, DY: 0x1000, W: 0x2000, DX: 0x3000, In: in, Out: out}
				if p, err := x.problem(); err == nil {
					require.True(t, have[kernelKey{p.layout, p.in, p.out}], "dx %v %v→%v", tier, in, out)
				}
			}
			w := DWArgs{Tier: tier, M: 2, K: 3, N: 4, X: 0x1000, DY: 0x2000, DW: 0x3000, In: in}
			if p, err := w.problem(); err == nil {
				require.True(t, have[kernelKey{p.layout, p.in, p.out}], "dw %v %v", tier, in)
			}
		}
	}
}
