package main

import (
	"errors"
	"fmt"

	"github.com/detgemm/detgemm/cudaload"
	"github.com/detgemm/detgemm/gemm"
)

// The standalone gated activations' modes (issue 23): the engine's
// GatedForward and GatedBackward alone, no product. On a shape MxKxN they
// run rows = M, n = N/2 (K unused): the forward reads the input M × N
// (a and b as GatedHalves: a the first N/2 columns) and writes y M × N/2;
// the backward reads h M × N and dy M × N/2 and writes dh M × N.
const (
	modeGatedGLUFwd    = "gated-glu-fwd"
	modeGatedGLUBwd    = "gated-glu-bwd"
	modeGatedReGLUFwd  = "gated-reglu-fwd"
	modeGatedReGLUBwd  = "gated-reglu-bwd"
	modeGatedSwiGLUFwd = "gated-swiglu-fwd"
	modeGatedSwiGLUBwd = "gated-swiglu-bwd"
	modeGatedGeGLUFwd  = "gated-geglu-fwd"
	modeGatedGeGLUBwd  = "gated-geglu-bwd"
)

// gatedMode is one standalone gated activation.
type gatedMode struct {
	name     string
	gate     gemm.Gate
	backward bool
}

// gatedModes is every standalone gated mode in table order.
var gatedModes = []gatedMode{
	{modeGatedGLUFwd, gemm.GLU, false},
	{modeGatedGLUBwd, gemm.GLU, true},
	{modeGatedReGLUFwd, gemm.ReGLU, false},
	{modeGatedReGLUBwd, gemm.ReGLU, true},
	{modeGatedSwiGLUFwd, gemm.SwiGLU, false},
	{modeGatedSwiGLUBwd, gemm.SwiGLU, true},
	{modeGatedGeGLUFwd, gemm.GeGLU, false},
	{modeGatedGeGLUBwd, gemm.GeGLU, true},
}

// gatedModeNames lists gatedModes' names in table order.
func gatedModeNames() []string {
	out := make([]string, len(gatedModes))
	for i, m := range gatedModes {
		out[i] = m.name
	}
	return out
}

// lookupGated finds a standalone gated mode by name.
func lookupGated(mode string) (gatedMode, bool) {
	for _, m := range gatedModes {
		if m.name == mode {
			return m, true
		}
	}
	return gatedMode{}, false
}

// gatedLayout is the standalone modes' layout: the halves of a fused
// gate-up projection's output, the usual one outside the engine.
const gatedLayout = gemm.GatedHalves

// gatedDesc is what a standalone mode runs on a problem: rows M, n = N/2.
func gatedDesc(m gatedMode, p problem) (gemm.GatedDesc, error) {
	s := p.Shape
	if s.N%2 != 0 {
		return gemm.GatedDesc{}, fmt.Errorf("%s: N = %d is not even (the input is a and b, N/2 columns each)", m.name, s.N)
	}
	t, _ := engineDType(p.DType)
	return gemm.GatedDesc{Gate: m.gate, Type: t, Layout: gatedLayout, Rows: s.M, N: s.N / 2}, nil
}

// gatedBytes is what one launch of a standalone gated mode reads and
// writes: forward the input (2n a row) and y (n), backward h (2n), dy (n)
// and dh (2n), over rows = M, n = N/2, in the problem's type.
func gatedBytes(m gatedMode, s shape, dt dtype) int64 {
	rows, n := int64(s.M), int64(s.N/2)
	per := 2*n + n
	if m.backward {
		per += 2 * n
	}
	return per * rows * int64(dt.Size())
}

// gatedBackend measures the engine's standalone gated activations on the
// engine the engine backend made; its rows are "detgemm" rows, each with
// its achieved bandwidth (row.BytesPerSec: gatedBytes over the median) to
// read beside the copy floor's.
type gatedBackend struct {
	eng *gemm.Engine
	im  *inputMaker // fills dy; set by run
}

// Name implements backend.
func (*gatedBackend) Name() string { return "detgemm" }

// Modes implements backend: every mode for every type.
func (*gatedBackend) Modes(dtype) []string { return gatedModeNames() }

// Close implements backend; the engine belongs to the engine backend.
func (*gatedBackend) Close() error { return nil }

// Prepare implements backend. The inputs rotate with the sets: the input
// (forward) or h (backward) is the set's C (M × N, random, which no backend
// writes); y (forward) or dh (backward) goes to the set's Y (M × N, an
// output); the backward's dy (M × N/2) is one buffer per set made here,
// random in [-1, 1). A panic inside the engine becomes the row's error.
func (b *gatedBackend) Prepare(ctx *cudaload.Context, _ *cudaload.Stream, p problem, sets []inputSet) (_ runner, err error) {
	m, ok := lookupGated(p.Mode)
	if !ok {
		return nil, fmt.Errorf("detgemm has no gated mode %q", p.Mode)
	}
	if len(sets) == 0 {
		return nil, fmt.Errorf("no input sets")
	}
	desc, err := gatedDesc(m, p)
	if err != nil {
		return nil, err
	}
	r := &gatedRunner{b: b, desc: desc, backward: m.backward, args: make([]gemm.GatedArgs, len(sets)), bufs: deviceBuffers{ctx: ctx}}
	defer func() {
		if v := recover(); v != nil {
			err = fmt.Errorf("gemm panicked: %v", v)
		}
		if err != nil {
			err = errors.Join(err, r.Close())
		}
	}()
	for i, set := range sets {
		r.args[i] = gemm.GatedArgs{X: set.C, Y: set.Y}
	}
	if !m.backward {
		return r, nil
	}
	elems := uint64(desc.Rows) * uint64(desc.N)
	dy, stride, err := r.bufs.perSet("dy", len(sets), elems*uint64(p.DType.Size()))
	if err != nil {
		return nil, err
	}
	if err := b.im.fillRandom(dy, p.Shape, p.DType, len(sets), elems, stride, 'y'); err != nil {
		return nil, err
	}
	for i, set := range sets {
		r.args[i] = gemm.GatedArgs{X: set.C, Y: dy + cudaload.DevicePtr(uint64(i)*stride), G: set.Y}
	}
	return r, nil
}

type gatedRunner struct {
	b        *gatedBackend
	desc     gemm.GatedDesc
	backward bool
	args     []gemm.GatedArgs // one per input set
	bufs     deviceBuffers
}

// Launch implements runner: GatedForward or GatedBackward on set i. A
// panic inside the engine becomes an error.
func (r *gatedRunner) Launch(i int) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = fmt.Errorf("gemm panicked: %v", v)
		}
	}()
	if r.backward {
		return r.b.eng.GatedBackward(r.desc, r.args[i])
	}
	return r.b.eng.GatedForward(r.desc, r.args[i])
}

// Close implements runner: the buffers Prepare made.
func (r *gatedRunner) Close() error { return r.bufs.free() }
