package triad

import (
	"fmt"
	"testing"

	"github.com/detgemm/detgemm/gemm"
	"github.com/stretchr/testify/require"
)

// recorder is the CPU backend that also records the engine products the
// GPU backend would make (the same forwardCallOf, dwCallOf and dxCallOf
// values GPU.forward, dw and dx launch, and the forwardActDescOf and
// dxActDescOf requests GPU.forwardAct and dxAct plan), and whose capture
// records the work it is asked to prepare, then runs fn at once.
type recorder struct {
	*CPU
	made     []product // the products, in order
	prepared []product // the work given to the last capture
	captured []product // the products made inside the last capture
}

func newRecorder() *recorder { return &recorder{CPU: NewCPU(0)} }

// own hands tensors of the recorder to the CPU's checks, which want their
// own backend; the copy shares the storage.
func (r *recorder) own(t *Tensor) *Tensor {
	if t == nil || t.be != Backend(r) {
		return t
	}
	c := *t
	c.be = r.CPU
	return &c
}

func (r *recorder) Alloc(d DType, rows, cols int) (*Tensor, error) {
	t, err := r.CPU.Alloc(d, rows, cols)
	if t != nil {
		t.be = r
	}
	return t, err
}

func (r *recorder) Write(t *Tensor, v []float32) error { return r.CPU.Write(r.own(t), v) }
func (r *recorder) Read(t *Tensor) ([]float32, error)  { return r.CPU.Read(r.own(t)) }
func (r *recorder) readRaw(t *Tensor) ([]float32, []uint16, error) {
	return r.CPU.readRaw(r.own(t))
}

func (r *recorder) forward(tier gemm.Tier, x, w, b, y *Tensor) error {
	r.made = append(r.made, product{call: forwardCallOf(tier, x, w)})
	return r.CPU.forward(tier, x, w, b, y)
}

func (r *recorder) forwardAct(tier gemm.Tier, act Act, x, w, b, y, aux *Tensor) error {
	r.made = append(r.made, product{desc: forwardActDescOf(tier, act, x, w)})
	return r.CPU.forwardAct(tier, act, x, w, b, y, aux)
}

func (r *recorder) dxAct(tier gemm.Tier, act Act, dy, w, aux, dx, db *Tensor) error {
	r.made = append(r.made, product{desc: dxActDescOf(tier, act, dy, w)})
	return r.CPU.dxAct(tier, act, dy, w, aux, dx, db)
}

func (r *recorder) dw(tier gemm.Tier, x, dy, dw *Tensor) error {
	r.made = append(r.made, product{call: dwCallOf(tier, x, dy)})
	return r.CPU.dw(tier, x, dy, dw)
}

func (r *recorder) dx(tier gemm.Tier, dy, w, dx *Tensor) error {
	r.made = append(r.made, product{call: dxCallOf(tier, dy, w)})
	return r.CPU.dx(tier, dy, w, dx)
}

type noReplay struct{}

func (noReplay) replay() error { return nil }
func (noReplay) close() error  { return nil }

func (r *recorder) capture(work []product, fn func() error) (replayer, error) {
	r.prepared = append([]product(nil), work...)
	before := len(r.made)
	if err := fn(); err != nil {
		return nil, err
	}
	r.captured = append([]product(nil), r.made[before:]...)
	return noReplay{}, nil
}

// The work CaptureStep prepares (calls presized, Matmuls planned) is
// exactly the engine work the captured step does, for every tier,
// activation, depth and batch: so no product of a captured step can need
// workspace or a plan that was not made before the capture.
func TestCaptureStepPresizesEveryCallOfTheStep(t *testing.T) {
	nets := [][]int{{24, 64, 6}, {1, 1}, {7, 1000, 1, 24}, {64, 24, 6, 1, 1000}}
	for _, tc := range tierCases {
		for _, sizes := range nets {
			for _, rows := range []int{1, 257, 300} {
				for _, act := range []Act{ActReLU, ActGELU} {
					t.Run(fmt.Sprintf("%v/%v/%v/rows%d", tc, act, sizes, rows), func(t *testing.T) {
						be := newRecorder()
						m, err := NewMLP(be, MLPConfig{Sizes: sizes, Tier: tc.tier, DType: tc.d, MaxRows: 300, Seed: 3, Opt: SGD{LR: 0.01}, Act: act})
						require.NoError(t, err)
						defer m.Close()
						x := tensorOf(t, be, tc.d, rows, sizes[0], randValues(1, rows*sizes[0], 1))
						y := tensorOf(t, be, tc.d, rows, sizes[len(sizes)-1], randValues(2, rows*sizes[len(sizes)-1], 1))

						g, err := m.CaptureStep(x, y)
						require.NoError(t, err)
						defer g.Close()
						require.Equal(t, be.captured, be.prepared, "prepared work vs products made while capturing")
						layers := len(sizes) - 1
						require.Len(t, be.captured, 3*layers-1, "a forward and a dW per layer, a dX per layer but the first")
						fused := 0
						for _, p := range be.captured {
							if p.call == nil {
								fused++
							}
						}
						require.Equal(t, 2*(layers-1), fused, "a fused forward per hidden layer and a fused dX into each")

						// A direct step makes the same products as the captured one.
						be.made = nil
						require.NoError(t, m.Step(x, y))
						require.Equal(t, be.prepared, be.made, "direct step vs prepared work")
					})
				}
			}
		}
	}
}
