package gemm

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestTierAcceptsExactlyTheDTypePairsCallsTake(t *testing.T) {
	for _, c := range []struct {
		tier    Tier
		in, out DType
		want    error // nil: accepted
	}{
		{TierF32, F32, F32, nil},
		{TierF32, BF16, BF16, ErrDType},
		{TierF32, F32, BF16, ErrDType},
		{TierTyped, BF16, BF16, nil},
		{TierTyped, F16, F32, nil},
		{TierTyped, F32, F32, ErrDType},
		{TierTyped, BF16, F16, ErrDType},
		{TierTensorCore, F16, F16, nil},
		{TierTensorCore, BF16, F32, nil},
		{TierTensorCore, F32, F32, ErrDType},
		{0, F32, F32, ErrTier},
		{Tier(9), BF16, BF16, ErrTier},
	} {
		err := c.tier.Accepts(c.in, c.out)
		if c.want == nil {
			require.NoError(t, err, "%v %v→%v", c.tier, c.in, c.out)
			continue
		}
		require.ErrorIs(t, err, c.want, "%v %v→%v", c.tier, c.in, c.out)
		var ae *ArgError
		require.ErrorAs(t, err, &ae)
	}
}
