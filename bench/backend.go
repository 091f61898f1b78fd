package main

import (
	"fmt"
	"slices"
	"strings"

	"github.com/detgemm/detgemm/cudaload"
)

// DType is an element type of A, B and C.
type DType string

// The element types the bench sweeps.
const (
	BF16 DType = "bf16"
	F16  DType = "f16"
	F32  DType = "f32"
)

// Size is the element size in bytes.
func (d DType) Size() int {
	if d == F32 {
		return 4
	}
	return 2
}

// The math modes the cuBLAS backend offers; other backends may name theirs.
const (
	modeDefault  = "default"
	modePedantic = "pedantic"
	modeTF32     = "tf32"
)

// The engine's modes: its IEEE tier (f32 for f32 inputs, typed for bf16 and
// f16) and which product of the triad runs on the shape's operands.
const (
	modeFwd = "fwd"
	modeDX  = "dx"
	modeDW  = "dw"
)

// The engine's tensor-core tier (bf16 and f16 only), each product of the
// triad on the shape's operands.
const (
	modeTCFwd = "tc-fwd"
	modeTCDX  = "tc-dx"
	modeTCDW  = "tc-dw"
)

// allModes is every mode --modes accepts, in table order.
var allModes = []string{modeDefault, modePedantic, modeTF32, modeFwd, modeDX, modeDW, modeTCFwd, modeTCDX, modeTCDW, modeCopy, modeRead}

// parseDTypes reads --dtypes.
func parseDTypes(list string) ([]DType, error) {
	var out []DType
	for _, f := range strings.Split(list, ",") {
		d := DType(strings.ToLower(strings.TrimSpace(f)))
		switch d {
		case BF16, F16, F32:
			out = append(out, d)
		default:
			return nil, fmt.Errorf("--dtypes: unknown type %q (want bf16, f16, f32)", f)
		}
	}
	return out, nil
}

// parseModes reads --modes.
func parseModes(list string) ([]string, error) {
	var out []string
	for _, f := range strings.Split(list, ",") {
		m := strings.ToLower(strings.TrimSpace(f))
		if !slices.Contains(allModes, m) {
			return nil, fmt.Errorf("--modes: unknown mode %q (want %s)", f, strings.Join(allModes, ", "))
		}
		out = append(out, m)
	}
	return out, nil
}

// Problem is one row of the sweep: a shape, an element type and a backend's
// math mode.
type Problem struct {
	Shape Shape
	DType DType
	Mode  string
}

// InputSet is one set of device buffers for a problem, row-major, in the
// problem's element type: the inputs A[M,K], B[K,N] and C[M,N] (random;
// forward reads A and B, dX reads C as dY and B as W, dW reads A and C),
// and two outputs, Y[M,N] (forward) and D[M,K] (dX), so that no backend
// writes what another one reads: rows measured in turns all see the same
// random inputs. The harness rotates over several sets so that the L2
// cache cannot hold the operands between launches.
type InputSet struct {
	A, B, C cudaload.DevicePtr
	Y, D    cudaload.DevicePtr
}

// Backend is one GEMM implementation under measurement: cuBLAS now, the
// engine's tiers later, all printed in one table.
type Backend interface {
	// Name labels the backend's rows ("cuBLAS").
	Name() string
	// Modes lists the math modes the backend offers for an element type,
	// in table order.
	Modes(dt DType) []string
	// Prepare readies the backend for one problem on these input sets; the
	// Runner it returns enqueues launches on stream.
	Prepare(ctx *cudaload.Context, stream *cudaload.Stream, p Problem, sets []InputSet) (Runner, error)
	// Close releases what the backend holds.
	Close() error
}

// Runner launches one prepared problem.
type Runner interface {
	// Launch enqueues one GEMM on input set i (0 <= i < len(sets)), without
	// waiting for it.
	Launch(i int) error
	// Close releases what Prepare made.
	Close() error
}

// referenceBackend names the backend that the vs-cuBLAS column divides by.
const referenceBackend = "cuBLAS"
