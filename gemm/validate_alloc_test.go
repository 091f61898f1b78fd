package gemm

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestValidationAllocatesNothing: checking a valid call is on every call's
// path, so it must not allocate (errors may).
func TestValidationAllocatesNothing(t *testing.T) {
	const x, w, y, b = 1 << 20, 1 << 30, 1 << 36, 1 << 34
	for _, c := range []struct {
		name  string
		check func() error
	}{
		{"forward with bias", func() error {
			_, err := ForwardArgs{Tier: TierTensorCore, M: 1024, K: 512, N: 768, X: x, W: w, Bias: b, Y: y, In: BF16, Out: BF16}.problem()
			return err
		}},
		{"forward", func() error {
			_, err := ForwardArgs{Tier: TierF32, M: 3, K: 5, N: 7, X: x, W: w, Y: y, In: F32, Out: F32}.problem()
			return err
		}},
		{"dW", func() error {
			_, err := DWArgs{Tier: TierTyped, M: 64, K: 32, N: 16, X: x, DY: w, DW: y, In: F16}.problem()
			return err
		}},
		{"dX", func() error {
			_, err := DXArgs{Tier: TierTyped, M: 64, N: 32, K: 16, DY: x, W: w, DX: y, In: BF16, Out: F32}.problem()
			return err
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			require.NoError(t, c.check())
			var err error
			require.Zero(t, testing.AllocsPerRun(20, func() { err = c.check() }))
			require.NoError(t, err)
		})
	}
}
