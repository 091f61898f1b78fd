package triad

import (
	"errors"

	"github.com/detgemm/detgemm/gemm"
)

// TrainConfig describes a training run on a Task.
type TrainConfig struct {
	In, Hidden, Out int // the student is In → Hidden → Hidden → Out (a gated Act: Hidden % 8 == 0)
	Tier            gemm.Tier
	DType           DType
	Batch           int // rows per step
	Steps           int // steps per epoch; the task has Steps·Batch samples
	Seed            uint64
	Opt             SGD
	Act             Act // the hidden layers' activation; the zero value is ActReLU; a gated one makes gated blocks
	// Sparse24 makes every layer 2:4 sparse (MLPConfig.Sparse24): tier
	// tensor-core, In and Hidden multiples of 16, ReLU or GELU.
	Sparse24 bool
	// FP8 makes every layer an fp8 layer (MLPConfig.FP8): tier
	// tensor-core, In, Hidden and Out multiples of 16, ReLU or GELU, not
	// with Sparse24.
	FP8 bool
}

// Sizes are the student's layer widths.
func (c TrainConfig) Sizes() []int { return []int{c.In, c.Hidden, c.Hidden, c.Out} }

// Run is a student MLP and its task's data, uploaded once to the backend.
// An epoch is Steps steps over consecutive batches of the data, with no
// host round trip until the epoch's loss is read.
type Run struct {
	Model  *MLP
	Task   *Task
	X, T   *Tensor // the whole data set [Steps·Batch, In] and [Steps·Batch, Out]
	be     Backend
	cfg    TrainConfig
	xb, tb []*Tensor // the batches: views of X and T
}

// NewRun makes the task and the student from cfg.Seed on be. The student's
// workspaces hold the whole data set, so Model.Forward can run it in one
// batch.
func NewRun(be Backend, cfg TrainConfig) (*Run, error) {
	if cfg.Batch <= 0 || cfg.Steps <= 0 {
		return nil, argErr("NewRun", "Batch/Steps", ErrConfig, "batch %d and steps %d must be positive", cfg.Batch, cfg.Steps)
	}
	if cfg.Act.Gated() && cfg.Hidden%8 != 0 {
		return nil, argErr("NewRun", "Hidden", ErrShape, "%d is not a multiple of 8: a %v block pairs 8-column blocks of its two halves", cfg.Hidden, cfg.Act)
	}
	if cfg.Sparse24 {
		if err := checkSparseMLP("NewRun", cfg.Tier, cfg.Act, "In", []int{cfg.In}); err != nil {
			return nil, err
		}
		if err := checkSparseMLP("NewRun", cfg.Tier, cfg.Act, "Hidden", []int{cfg.Hidden}); err != nil {
			return nil, err
		}
	}
	if cfg.FP8 {
		for _, w := range []struct {
			arg string
			n   int
		}{{"In", cfg.In}, {"Hidden", cfg.Hidden}, {"Out", cfg.Out}} {
			if err := checkFP8MLP("NewRun", cfg.Tier, cfg.Act, cfg.Sparse24, w.arg, []int{w.n}); err != nil {
				return nil, err
			}
		}
	}
	rows := cfg.Batch * cfg.Steps
	task, err := NewTask(cfg.Seed, cfg.In, cfg.Hidden, cfg.Out, rows)
	if err != nil {
		return nil, err
	}
	r := &Run{Task: task, be: be, cfg: cfg}
	r.Model, err = NewMLP(be, MLPConfig{Sizes: cfg.Sizes(), Tier: cfg.Tier, DType: cfg.DType, MaxRows: rows, Seed: cfg.Seed, Opt: cfg.Opt, Act: cfg.Act, Sparse24: cfg.Sparse24,
		FP8: cfg.FP8})
	if err != nil {
		return nil, err
	}
	fail := func(err error) (*Run, error) { return nil, errors.Join(err, r.Close()) }
	if r.X, err = be.Alloc(cfg.DType, rows, cfg.In); err != nil {
		return fail(err)
	}
	if r.T, err = be.Alloc(cfg.DType, rows, cfg.Out); err != nil {
		return fail(err)
	}
	if err := be.Write(r.X, task.X); err != nil {
		return fail(err)
	}
	if err := be.Write(r.T, task.Y); err != nil {
		return fail(err)
	}
	for s := range cfg.Steps {
		xb, _ := r.X.View(s*cfg.Batch, cfg.Batch)
		tb, _ := r.T.View(s*cfg.Batch, cfg.Batch)
		r.xb, r.tb = append(r.xb, xb), append(r.tb, tb)
	}
	return r, nil
}

// Batch returns step s's inputs and targets (views of X and T).
func (r *Run) Batch(s int) (x, t *Tensor) { return r.xb[s], r.tb[s] }

// Epoch queues the epoch's steps (calling onStep after queueing each, for
// progress) and returns the mean of their losses, read once at the end.
func (r *Run) Epoch(onStep func(step int)) (float64, error) {
	if err := r.Model.ResetLoss(); err != nil {
		return 0, err
	}
	for s := range r.cfg.Steps {
		if err := r.Model.Step(r.xb[s], r.tb[s]); err != nil {
			return 0, err
		}
		if onStep != nil {
			onStep(s)
		}
	}
	_, sum, err := r.Model.Loss()
	return float64(sum) / float64(r.cfg.Steps), err
}

// Close frees the model and the data.
func (r *Run) Close() error {
	return errors.Join(r.Model.Close(), r.X.Free(), r.T.Free())
}
