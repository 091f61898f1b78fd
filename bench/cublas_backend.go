package main

import (
	"fmt"

	"github.com/detgemm/detgemm/bench/cublas"
	"github.com/detgemm/detgemm/cudaload"
)

// cublasBackend measures cublasGemmEx: the reference every other backend's
// vs-cuBLAS ratio is taken against.
type cublasBackend struct {
	lib     *cublas.Library
	h       *cublas.Handle
	version int
	// math is the handle's current math mode, so runners switch it only
	// when a different mode runs, not per launch.
	math    cublas.MathMode
	mathSet bool
}

// newCublasBackend loads cuBLAS and makes one handle bound to stream. The
// calling OS thread must have the bench's context current (see bindThread).
func newCublasBackend(stream *cudaload.Stream, opts ...cublas.Option) (*cublasBackend, error) {
	lib, err := cublas.Open(opts...)
	if err != nil {
		return nil, err
	}
	h, err := lib.Create()
	if err != nil {
		return nil, err
	}
	if err := h.SetStream(stream.Handle()); err != nil {
		_ = h.Destroy()
		return nil, err
	}
	v, err := h.Version()
	if err != nil {
		_ = h.Destroy()
		return nil, err
	}
	return &cublasBackend{lib: lib, h: h, version: v}, nil
}

// Name implements backend.
func (b *cublasBackend) Name() string { return referenceBackend }

// Modes implements backend: default and pedantic for every type, and tf32
// as an extra f32 row (TF32 tensor cores, not an IEEE f32 result).
func (b *cublasBackend) Modes(dt dtype) []string {
	if dt == f32 {
		return []string{modeDefault, modePedantic, modeTF32}
	}
	return []string{modeDefault, modePedantic}
}

// Path is the library file that loaded.
func (b *cublasBackend) Path() string { return b.lib.Path() }

// VersionString formats cublasGetVersion as major.minor.patch.
func (b *cublasBackend) VersionString() string {
	v := b.version
	return fmt.Sprintf("%d.%d.%d", v/10000, v%10000/100, v%100)
}

// cublasConfig maps a problem to cuBLAS's element type, math mode and
// compute type. Outputs are in the input type; every mode accumulates in
// f32.
func cublasConfig(p problem) (cublas.DataType, cublas.MathMode, cublas.ComputeType, error) {
	var dt cublas.DataType
	switch p.DType {
	case bf16:
		dt = cublas.R16BF
	case f16:
		dt = cublas.R16F
	case f32:
		dt = cublas.R32F
	default:
		return 0, 0, 0, fmt.Errorf("cuBLAS: no element type %q", p.DType)
	}
	switch {
	case p.Mode == modeDefault:
		return dt, cublas.DefaultMath, cublas.Compute32F, nil
	case p.Mode == modePedantic:
		return dt, cublas.PedanticMath, cublas.Compute32FPedantic, nil
	case p.Mode == modeTF32 && p.DType == f32:
		return dt, cublas.TF32TensorOpMath, cublas.Compute32FFastTF32, nil
	}
	return 0, 0, 0, fmt.Errorf("cuBLAS: no mode %q for %s", p.Mode, p.DType)
}

// Prepare implements backend.
func (b *cublasBackend) Prepare(_ *cudaload.Context, _ *cudaload.Stream, p problem, sets []inputSet) (runner, error) {
	dt, math, compute, err := cublasConfig(p)
	if err != nil {
		return nil, err
	}
	if len(sets) == 0 {
		return nil, fmt.Errorf("cuBLAS: no input sets")
	}
	return &cublasRunner{b: b, shape: p.Shape, sets: sets, dt: dt, math: math, compute: compute}, nil
}

// Close implements backend.
func (b *cublasBackend) Close() error { return b.h.Destroy() }

type cublasRunner struct {
	b       *cublasBackend
	shape   shape
	sets    []inputSet
	dt      cublas.DataType
	math    cublas.MathMode
	compute cublas.ComputeType
}

// Launch implements runner.
func (r *cublasRunner) Launch(i int) error {
	b := r.b
	if !b.mathSet || b.math != r.math {
		if err := b.h.SetMathMode(r.math); err != nil {
			return err
		}
		b.math, b.mathSet = r.math, true
	}
	s := r.sets[i]
	return b.h.RowMajorGemm(r.shape.M, r.shape.K, r.shape.N,
		uintptr(s.A), uintptr(s.B), uintptr(s.Y), r.dt, r.compute, cublas.GemmDefault)
}

// Close implements runner; the handle belongs to the backend.
func (r *cublasRunner) Close() error { return nil }
