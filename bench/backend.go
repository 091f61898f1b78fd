package main

import (
	"fmt"
	"slices"
	"strings"

	"github.com/detgemm/detgemm/cudaload"
)

// dtype is an element type of A, B and C.
type dtype string

// The element types the bench sweeps.
const (
	bf16 dtype = "bf16"
	f16  dtype = "f16"
	f32  dtype = "f32"
)

// Size is the element size in bytes.
func (d dtype) Size() int {
	if d == f32 {
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

// defaultModes is --modes's default: every mode but the opt-in cuBLASLt
// ones, so a plain run (and the README's tables) measures what it always
// has.
var defaultModes = []string{modeDefault, modePedantic, modeTF32, modeFwd, modeDX, modeDW, modeTCFwd, modeTCDX, modeTCDW, modeCopy, modeRead}

// allModes is every mode --modes accepts, in table order: the default ones,
// then cuBLASLt's, then the engine's Matmul modes, then its standalone
// gated activations, then its 2:4 sparse modes and cuSPARSELt's, then its
// fp8 modes and cuBLASLt's.
var allModes = append(append(append(append(append(append(append(append([]string{}, defaultModes...), ltModes...), mmModeNames()...), gatedModeNames()...),
	sparseModes...), modeCuSPARSELt), fp8Modes...), ltFP8Modes...)

// modeGroups are names --modes expands into lists of modes.
var modeGroups = map[string]func() []string{
	// matmul: issue 21's comparison in one word: cuBLAS's default row,
	// every tensor-core Matmul mode and the cuBLASLt mode paired with each.
	"matmul": matmulGroup,
	// gated: issue 23's gated activations: fused, unfused, standalone,
	// beside the plain product (both libraries) and the copy floor.
	"gated": gatedGroup,
	// sparse: issue 24's 2:4 sparse forward and prune + compress beside
	// the dense products (both libraries and the engine's tensor-core
	// forward), cuSPARSELt and the copy floor.
	"sparse": sparseGroup,
	// fp8: the fp8 products (the engine's five and cuBLASLt's two) and
	// the activation's quantization, beside cuBLAS's bf16 product.
	"fp8": fp8Group,
}

// modeGroupNames lists modeGroups' names, sorted, for help and errors.
func modeGroupNames() string {
	names := make([]string, 0, len(modeGroups))
	for n := range modeGroups {
		names = append(names, n)
	}
	slices.Sort(names)
	return strings.Join(names, ", ")
}

// matmulGroup is the "matmul" group: cuBLAS default, then every
// tensor-core Matmul mode of issue 21 (not the gated ones) followed by
// its cuBLASLt pair.
func matmulGroup() []string {
	out := []string{modeDefault}
	for _, m := range mmModes {
		if m.gated {
			continue
		}
		out = append(out, tcPrefix+m.name)
		if m.lt != "" {
			out = append(out, m.lt)
		}
	}
	return out
}

// gatedGroup is the "gated" group: cuBLAS default and the copy floor (its
// bandwidth, beside the standalone passes'), the plain tensor-core product
// and every gated tensor-core Matmul mode, cuBLASLt's plain product (it
// has no gated epilogue), then the standalone gated activations.
func gatedGroup() []string {
	out := []string{modeDefault, modeCopy, tcPrefix + modeMM}
	for _, m := range mmModes {
		if m.gated {
			out = append(out, tcPrefix+m.name)
		}
	}
	return append(append(out, modeLt), gatedModeNames()...)
}

// parseDTypes reads --dtypes.
func parseDTypes(list string) ([]dtype, error) {
	var out []dtype
	for _, f := range strings.Split(list, ",") {
		d := dtype(strings.ToLower(strings.TrimSpace(f)))
		switch d {
		case bf16, f16, f32:
			out = append(out, d)
		default:
			return nil, fmt.Errorf("--dtypes: unknown type %q (want bf16, f16, f32)", f)
		}
	}
	return out, nil
}

// parseModes reads --modes: mode names and group names (modeGroups),
// each mode kept once, in the order first named.
func parseModes(list string) ([]string, error) {
	var out []string
	add := func(m string) {
		if !slices.Contains(out, m) {
			out = append(out, m)
		}
	}
	for _, f := range strings.Split(list, ",") {
		m := strings.ToLower(strings.TrimSpace(f))
		if g, ok := modeGroups[m]; ok {
			for _, x := range g() {
				add(x)
			}
			continue
		}
		if !slices.Contains(allModes, m) {
			return nil, fmt.Errorf("--modes: unknown mode %q (want %s, or a group: %s)", f, strings.Join(allModes, ", "), modeGroupNames())
		}
		add(m)
	}
	return out, nil
}

// problem is one row of the sweep: a shape, an element type and a backend's
// math mode.
type problem struct {
	Shape shape
	DType dtype
	Mode  string
}

// inputSet is one set of device buffers for a problem, row-major, in the
// problem's element type: the inputs A[M,K], B[K,N] and C[M,N] (random;
// forward reads A and B, dX reads C as dY and B as W, dW reads A and C),
// and two outputs, Y[M,N] (forward) and D[M,K] (dX), so that no backend
// writes what another one reads: rows measured in turns all see the same
// random inputs. The harness rotates over several sets so that the L2
// cache cannot hold the operands between launches.
type inputSet struct {
	A, B, C cudaload.DevicePtr
	Y, D    cudaload.DevicePtr
}

// backend is one GEMM implementation under measurement: cuBLAS now, the
// engine's tiers later, all printed in one table.
type backend interface {
	// Name labels the backend's rows ("cuBLAS").
	Name() string
	// Modes lists the math modes the backend offers for an element type,
	// in table order.
	Modes(dt dtype) []string
	// Prepare readies the backend for one problem on these input sets; the
	// runner it returns enqueues launches on stream.
	Prepare(ctx *cudaload.Context, stream *cudaload.Stream, p problem, sets []inputSet) (runner, error)
	// Close releases what the backend holds.
	Close() error
}

// rotator is a runner that rotates over buffers of its own rather than
// the problem's input sets (the fp8 rows: their operands are fp8 codes,
// not the sets' bf16 values): rotation is how many copies it cycles
// through and one launch's traffic, recorded as the row's input_sets and
// bytes_per_set.
type rotator interface {
	rotation() (copies int, bytesPerLaunch int64)
}

// runner launches one prepared problem.
type runner interface {
	// Launch enqueues one GEMM on input set i (0 <= i < len(sets)), without
	// waiting for it.
	Launch(i int) error
	// Close releases what Prepare made.
	Close() error
}

// referenceBackend names the backend that the vs-cuBLAS column divides by.
const referenceBackend = "cuBLAS"
