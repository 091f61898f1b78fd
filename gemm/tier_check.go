package gemm

// Accepts reports whether calls of tier t may take inputs of type in and
// write outputs of type out: nil, or the *ArgError Forward, DW and DX return
// for that pair (matching ErrDType, or ErrTier for a value that is not a
// tier). Layers built on the engine (package triad) ask it when they are
// made, so they refuse what the engine would refuse, by the engine's rule.
func (t Tier) Accepts(in, out DType) error { return checkTier("Tier.Accepts", t, in, out) }
