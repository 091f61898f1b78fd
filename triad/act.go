package triad

import (
	"fmt"

	"github.com/detgemm/detgemm/gemm"
)

// Act is the activation between an MLP's hidden layers. Each hidden layer
// runs it fused into its product (the gemm Matmul epilogues ReluAuxBias or
// GeluAuxBias forward, DReluBgrad or DGeluBgrad backward; for a gated
// activation Gated…AuxBias forward and DGated… backward; see the package
// comment); the last layer has none.
//
// A gated activation (ActGLU, ActReGLU, ActSwiGLU, ActGeGLU; Gated reports
// it) makes each hidden layer a gated block: its Linear projects to twice
// the block's width, a linear half a and a gate half b, and the block's
// output is a·act(b) (see MLP for the weights' layout).
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
	// ActGLU is the gated block a·σ(b) (ref.GLU: σ is ref.Sigmoid32).
	ActGLU
	// ActReGLU is the gated block a·relu(b) (ref.ReGLU).
	ActReGLU
	// ActSwiGLU is the gated block a·silu(b) = a·b·σ(b) (ref.SwiGLU:
	// ref.Silu32).
	ActSwiGLU
	// ActGeGLU is the gated block a·gelu(b), GELU's tanh form (ref.GeGLU:
	// ref.Gelu32).
	ActGeGLU
	numActs
)

// actNames are the activations' names, as String writes them and ParseAct
// reads them.
var actNames = [numActs]string{"relu", "gelu", "glu", "reglu", "swiglu", "geglu"}

// Valid reports whether a is one of the activations.
func (a Act) Valid() bool { return a < numActs }

// Gated reports whether a is a gated activation (GLU, ReGLU, SwiGLU or
// GeGLU): a hidden layer then projects to twice its width.
func (a Act) Gated() bool { return a >= ActGLU && a < numActs }

// gate is a gated activation's gemm.Gate (0 for the others).
func (a Act) gate() gemm.Gate {
	switch a {
	case ActGLU:
		return gemm.GLU
	case ActReGLU:
		return gemm.ReGLU
	case ActSwiGLU:
		return gemm.SwiGLU
	case ActGeGLU:
		return gemm.GeGLU
	}
	return 0
}

// String returns "relu", "gelu", "glu", "reglu", "swiglu", "geglu" or
// "Act(n)".
func (a Act) String() string {
	if a.Valid() {
		return actNames[a]
	}
	return fmt.Sprintf("Act(%d)", uint8(a))
}

// ParseAct returns the activation named s ("relu", "gelu", "glu",
// "reglu", "swiglu" or "geglu", as String writes them), or an *Error
// matching ErrConfig.
func ParseAct(s string) (Act, error) {
	for a := range numActs {
		if a.String() == s {
			return a, nil
		}
	}
	return 0, argErr("ParseAct", "s", ErrConfig, "%q: want relu, gelu, glu, reglu, swiglu or geglu", s)
}

// checkAct refuses an activation that is not one of the constants.
func checkAct(op string, a Act) error {
	if !a.Valid() {
		return argErr(op, "Act", ErrConfig, "%v: want ActReLU, ActGELU, ActGLU, ActReGLU, ActSwiGLU or ActGeGLU", a)
	}
	return nil
}

// forwardEpilogue is the Matmul epilogue of a hidden layer's forward:
// D = act(x·W + b) and its aux (the ReLU mask of D, or the GELU
// pre-activation); for a gated act, D = a·act(b) from the product's two
// halves and the aux the whole pre-activation (both halves).
func (a Act) forwardEpilogue() gemm.Epilogue {
	switch a {
	case ActGELU:
		return gemm.GeluAuxBias
	case ActGLU:
		return gemm.GatedGLUAuxBias
	case ActReGLU:
		return gemm.GatedReGLUAuxBias
	case ActSwiGLU:
		return gemm.GatedSwiGLUAuxBias
	case ActGeGLU:
		return gemm.GatedGeGLUAuxBias
	}
	return gemm.ReluAuxBias
}

// backwardEpilogue is the Matmul epilogue of the product dy·Wᵀ that
// flows back into a hidden layer: the activation's gradient from the
// forward's aux, and (ReLU, GELU) that layer's bias gradient. A gated
// act's epilogue writes the gradient of both halves of the pre-activation
// and sums no bias gradient: the MLP runs the bias-gradient pass on it.
func (a Act) backwardEpilogue() gemm.Epilogue {
	switch a {
	case ActGELU:
		return gemm.DGeluBgrad
	case ActGLU:
		return gemm.DGatedGLU
	case ActReGLU:
		return gemm.DGatedReGLU
	case ActSwiGLU:
		return gemm.DGatedSwiGLU
	case ActGeGLU:
		return gemm.DGatedGeGLU
	}
	return gemm.DReluBgrad
}

// projection is the width of a hidden layer's Linear for a block of width
// w: 2·w for a gated act (the halves a and b), w otherwise.
func (a Act) projection(w int) int {
	if a.Gated() {
		return 2 * w
	}
	return w
}
