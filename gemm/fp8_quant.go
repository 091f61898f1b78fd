package gemm

import (
	"fmt"
	"math"

	"github.com/detgemm/detgemm/cudaload"
	"github.com/detgemm/detgemm/gemm/internal/entries"
	"github.com/detgemm/detgemm/gemm/ref"
)

const (
	fp8Family      = entries.FP8Family
	fp8QuantFamily = entries.FP8QuantFamily
)

// FP8Groups is how QuantizeFP8 groups the elements that share a scale
// (gemm/ref's).
type FP8Groups = ref.FP8Groups

// The groups, of the quantized matrix Q: the whole tensor, each row, each
// run of 128 columns of a row (activations, DeepSeek-V3's 1 × 128), or
// blocks of 128 × 128 (weights).
const (
	GroupTensor  = ref.GroupTensor
	GroupRow     = ref.GroupRow
	Group1x128   = ref.Group1x128
	Group128x128 = ref.Group128x128
)

// FP8QuantizeDesc describes one quantization to fp8: Q = X, or Xᵀ with
// Transpose, with X of In (F32, BF16 or F16) Rows × Cols row-major (LDX,
// 0: Cols) and Q of Out (E4M3 or E5M2) row-major (LDQ, 0: Q's row
// length). Each group of Q's elements gets the scale s = amax / max finite
// of Out (1 where amax is 0 or not finite, or the division underflows),
// amax the largest |x| of the group (NaN skipped), and q =
// satfinite(RNE(x / s)): q·s approximates x. The scales are written
// row-major, tight: 1 (GroupTensor), Q's rows (GroupRow), Q's rows ×
// ceil(Q's columns / 128) (Group1x128), ceil(Q's rows / 128) × ceil(Q's
// columns / 128) (Group128x128). gemm/ref's FP8Quantize gives the same
// bits. A per-tensor scale makes every row depend on the others (the
// amax); per-row and 1 × 128 groups of an activation keep its rows
// batch-invariant.
type FP8QuantizeDesc struct {
	In, Out    DType
	Rows, Cols int
	LDX, LDQ   int
	Transpose  bool
	Groups     FP8Groups
}

// FP8QuantizeArgs is the device memory of one quantization: X (aligned to
// its element), Q and Scales (f32, 4-byte aligned).
type FP8QuantizeArgs struct {
	X, Q, Scales cudaload.DevicePtr
}

// qShape is Q's shape.
func (d FP8QuantizeDesc) qShape() (rows, cols int) {
	if d.Transpose {
		return d.Cols, d.Rows
	}
	return d.Rows, d.Cols
}

// ScaleCount is the number of scales d writes.
func (d FP8QuantizeDesc) ScaleCount() int {
	r, c := d.qShape()
	cb := (c + 127) / 128
	switch d.Groups {
	case GroupRow:
		return r
	case Group1x128:
		return r * cb
	case Group128x128:
		return (r + 127) / 128 * cb
	}
	return 1
}

// fp8QuantKey names an fp8_quant entry: kind, input and output types.
type fp8QuantKey struct{ kind, in, out string }

var fp8QuantIDs = indexOf(func(k entries.Key) fp8QuantKey { return fp8QuantKey{k.Kind, k.In, k.Out} }, "fp8amax", "fp8quant", "fp8scales")

// QuantizeFP8 enqueues the quantization d of a.X into a.Q and a.Scales on
// the engine's stream (three launches: the group maxima, the
// quantization, the scales). Bad descriptions and pointers are *ArgError
// values; nothing is launched then.
func (e *Engine) QuantizeFP8(d FP8QuantizeDesc, a FP8QuantizeArgs) error {
	const op = "QuantizeFP8"
	if !wgArch(e.arch) {
		return argErr(op, "Engine", ErrArch, "%v: the fp8 kernels are built for sm_90a (Hopper)", e.arch)
	}
	if !d.In.Valid() {
		return argErr(op, "In", ErrDType, "%v: want F32, BF16 or F16", d.In)
	}
	if !d.Out.FP8() {
		return argErr(op, "Out", ErrDType, "%v: want E4M3 or E5M2", d.Out)
	}
	if d.Groups < GroupTensor || d.Groups > Group128x128 {
		return argErr(op, "Groups", ErrScale, "%d: want GroupTensor, GroupRow, Group1x128 or Group128x128", d.Groups)
	}
	if d.Rows < 0 || d.Cols < 0 {
		return argErr(op, "Rows", ErrDimension, "Rows %d, Cols %d: must not be negative", d.Rows, d.Cols)
	}
	if d.Rows > math.MaxInt32/2 || d.Cols > math.MaxInt32/2 {
		return argErr(op, "Rows", ErrTooLarge, "Rows %d, Cols %d: at most %d each", d.Rows, d.Cols, math.MaxInt32/2)
	}
	qr, qc := d.qShape()
	var err error
	if d.LDX, err = gatedLD(op, "LDX", d.LDX, d.Rows, d.Cols); err != nil {
		return err
	}
	if d.LDQ, err = gatedLD(op, "LDQ", d.LDQ, qr, qc); err != nil {
		return err
	}
	tiles := ceilDiv(int64(qr), 32) * ceilDiv(int64(qc), 128)
	if tiles > math.MaxInt32 {
		return argErr(op, "Rows", ErrTooLarge, "%d × %d: more than 2^31-1 tiles of 32 × 128", qr, qc)
	}
	in := uint64(d.In.Size())
	ns := uint64(d.ScaleCount())
	none := qr == 0 || qc == 0
	bufs := []callBuf{
		{mmBuf{"X", a.X, extentBytes(d.Rows, d.Cols, d.LDX, int(in)), in}, true, false, false, none},
		{mmBuf{"Q", a.Q, extentBytes(qr, qc, d.LDQ, 1), 1}, true, false, true, none},
		{mmBuf{"Scales", a.Scales, 4 * ns, 4}, true, false, true, false},
	}
	if none {
		bufs[0].bytes, bufs[1].bytes = 0, 0
	}
	if err := checkCallBufs(op, bufs, ""); err != nil {
		return err
	}
	ids := [3]kernelID{fp8QuantIDs[fp8QuantKey{"fp8amax", d.In.String(), ""}],
		fp8QuantIDs[fp8QuantKey{"fp8quant", d.In.String(), d.Out.String()}], fp8QuantIDs[fp8QuantKey{"fp8scales", "", ""}]}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return ErrClosed
	}
	l := launcher{e: &e.device}
	prob := problem{op: op, in: d.In, out: d.Out}
	for _, id := range ids {
		if err := l.need(&prob, id); err != nil {
			return err
		}
	}
	if err := e.device.zero(a.Scales, 4*ns); err != nil {
		return fmt.Errorf("gemm.%s: clearing Scales: %w", op, err)
	}
	tr := int32(0)
	if d.Transpose {
		tr = 1
	}
	fmax := ref.FP8Max(d.Out)
	if tiles > 0 {
		grid := cudaload.Dim3{X: uint32(tiles), Y: 1, Z: 1}
		e.args.Reset().Ptr(a.X).Ptr(a.Scales).Int64(int64(qr)).Int64(int64(qc)).Int64(int64(d.LDX)).Int64(int64(d.LDQ)).Int32(tr).Int32(int32(d.Groups))
		if err := l.launch(&prob, ids[0], grid, 256, 0, 32, 128); err != nil {
			return err
		}
		e.args.Reset().Ptr(a.X).Ptr(a.Q).Ptr(a.Scales).Int64(int64(qr)).Int64(int64(qc)).Int64(int64(d.LDX)).Int64(int64(d.LDQ)).Int32(tr).Int32(int32(d.Groups)).Float32(fmax)
		if err := l.launch(&prob, ids[1], grid, 256, 0, 32, 128); err != nil {
			return err
		}
	}
	blocks := min(ceilDiv(int64(ns), 256), 1024)
	e.args.Reset().Ptr(a.Scales).Int64(int64(ns)).Float32(fmax)
	return l.launch(&prob, ids[2], cudaload.Dim3{X: uint32(max(blocks, 1)), Y: 1, Z: 1}, 256, 0, 1, 256)
}
