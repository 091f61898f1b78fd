package triad

import (
	"math/rand/v2"

	"github.com/detgemm/detgemm/gemm/ref"
)

// Task is a synthetic regression problem made from a seed: inputs drawn
// uniformly from [−1, 1), targets from a random "teacher" network
// in → hidden → out with a ReLU, computed with the CPU reference (so the
// data has the same bits on every machine).
type Task struct {
	In, Out, Rows int
	X             []float32 // [Rows, In]
	Y             []float32 // [Rows, Out]
}

// MaxTaskElements caps each buffer NewTask makes (its weights, inputs,
// hidden activations and targets), 1 GiB of f32 each.
const MaxTaskElements = 1 << 28

// NewTask draws rows samples of the teacher made from seed. Sizes that make
// a buffer of more than MaxTaskElements values are refused with ErrShape.
func NewTask(seed uint64, in, hidden, out, rows int) (*Task, error) {
	if in <= 0 || hidden <= 0 || out <= 0 || rows <= 0 {
		return nil, argErr("NewTask", "sizes", ErrShape, "in %d, hidden %d, out %d, rows %d must be positive", in, hidden, out, rows)
	}
	// Every buffer the task makes, checked before any is allocated (the
	// products can overflow int).
	for _, p := range [][2]int{{in, hidden}, {hidden, out}, {rows, in}, {rows, hidden}, {rows, out}} {
		if p[0] > MaxTaskElements/p[1] {
			return nil, argErr("NewTask", "sizes", ErrShape, "in %d, hidden %d, out %d, rows %d make a buffer of more than %d values", in, hidden, out, rows, MaxTaskElements)
		}
	}
	r := rand.New(rand.NewPCG(seed, 0x7eac4e5))
	uniform := func(n int, scale float32) []float32 {
		v := make([]float32, n)
		for i := range v {
			v[i] = mul32(float32(r.Float64()*2-1), scale)
		}
		return v
	}
	w1, b1 := uniform(in*hidden, 1/float32(in)*2), uniform(hidden, 0.5)
	w2, b2 := uniform(hidden*out, 1/float32(hidden)*2), uniform(out, 0.1)
	x := uniform(rows*in, 1)
	h := make([]float32, rows*hidden)
	if err := (ref.Options{Tier: ref.IEEE, In: ref.F32}).Forward(ref.Values(h), ref.Values(x), ref.Values(w1), b1, rows, in, hidden); err != nil {
		return nil, err
	}
	for i, v := range h {
		h[i] = reluF32(v)
	}
	y := make([]float32, rows*out)
	if err := (ref.Options{Tier: ref.IEEE, In: ref.F32}).Forward(ref.Values(y), ref.Values(h), ref.Values(w2), b2, rows, hidden, out); err != nil {
		return nil, err
	}
	return &Task{In: in, Out: out, Rows: rows, X: x, Y: y}, nil
}
