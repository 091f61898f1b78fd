package triad

import (
	"fmt"

	"github.com/detgemm/detgemm/gemm"
)

// Act is the activation between an MLP's hidden layers. Each hidden layer
// runs it fused into its product (the gemm Matmul epilogues ReluAuxBias or
// GeluAuxBias forward, DReluBgrad or DGeluBgrad backward; see the package
// comment); the last layer has none.
type Act uint8

// The activations. The zero value is ActReLU, so a config that names none
// trains exactly as before Act existed.
const (
	// ActReLU is relu(x) = x for x > 0, the canonical NaN for a NaN, +0
	// otherwise (ref.Relu32).
	ActReLU Act = iota
	// ActGELU is GELU's tanh form, ref.Gelu32 (a fixed sequence of f32
	// operations, the same bits on the GPU and the CPU); its gradient is
	// ref.GeluGrad32 of the stored pre-activation.
	ActGELU
	numActs
)

// Valid reports whether a is one of the activations.
func (a Act) Valid() bool { return a < numActs }

// String returns "relu", "gelu" or "Act(n)".
func (a Act) String() string {
	switch a {
	case ActReLU:
		return "relu"
	case ActGELU:
		return "gelu"
	}
	return fmt.Sprintf("Act(%d)", uint8(a))
}

// ParseAct returns the activation named s ("relu" or "gelu", as String
// writes them), or an *Error matching ErrConfig.
func ParseAct(s string) (Act, error) {
	for a := range numActs {
		if a.String() == s {
			return a, nil
		}
	}
	return 0, argErr("ParseAct", "s", ErrConfig, "%q: want relu or gelu", s)
}

// checkAct refuses an activation that is not one of the constants.
func checkAct(op string, a Act) error {
	if !a.Valid() {
		return argErr(op, "Act", ErrConfig, "%v: want ActReLU or ActGELU", a)
	}
	return nil
}

// forwardEpilogue is the Matmul epilogue of a hidden layer's forward:
// D = act(x·W + b), and its aux (the ReLU mask of D, or the GELU
// pre-activation).
func (a Act) forwardEpilogue() gemm.Epilogue {
	if a == ActGELU {
		return gemm.GeluAuxBias
	}
	return gemm.ReluAuxBias
}

// backwardEpilogue is the Matmul epilogue of the product dy·Wᵀ that
// flows back into a hidden layer: the activation's gradient from the
// forward's aux, and that layer's bias gradient.
func (a Act) backwardEpilogue() gemm.Epilogue {
	if a == ActGELU {
		return gemm.DGeluBgrad
	}
	return gemm.DReluBgrad
}
