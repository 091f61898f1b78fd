package gemm

import (
	"fmt"

	"github.com/detgemm/detgemm/gemm/ref"
)

// DType is an element type. It is the CPU reference's type, so values pass
// between the two without conversion.
type DType = ref.DType

// The element types; the zero DType is invalid.
const (
	F32  = ref.F32
	BF16 = ref.BF16
	F16  = ref.F16
)

// Tier is a numerical contract, chosen by the caller in every call.
type Tier uint8

// The tiers. The zero Tier is invalid, so a forgotten field is an error
// rather than a silent choice.
const (
	TierF32        Tier = iota + 1 // f32 inputs, IEEE fmaf chains on CUDA cores
	TierTyped                      // bf16/f16 inputs, the f32 plans, one RNE rounding at the store
	TierTensorCore                 // bf16/f16 inputs on tensor cores (mma.sync), f32 accumulation
)

// String returns "f32", "typed", "tensor-core", or "Tier(n)".
func (t Tier) String() string {
	switch t {
	case TierF32:
		return "f32"
	case TierTyped:
		return "typed"
	case TierTensorCore:
		return "tensor-core"
	}
	return fmt.Sprintf("Tier(%d)", uint8(t))
}
