package main

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"unsafe"

	"github.com/detgemm/detgemm/cudaload"
)

// stridePad is how many elements the strided modes add to each row of A,
// B and D: a leading dimension of the row length + 64, so that with row
// lengths that are multiples of 8 every row still starts on a 16-byte
// boundary (64 bf16 are 128 bytes) and the vector paths stay open.
const stridePad = 64

// deviceBuffers owns the device memory a runner allocates beyond the
// problem's input sets (bias vectors, aux matrices, padded copies), so one
// Close frees all of it.
type deviceBuffers struct {
	ctx  *cudaload.Context
	ptrs []cudaload.DevicePtr
}

// alloc allocates bytes, naming what for in the error.
func (d *deviceBuffers) alloc(what string, bytes uint64) (cudaload.DevicePtr, error) {
	p, err := d.ctx.MemAlloc(max(bytes, 1))
	if err != nil {
		return 0, fmt.Errorf("%s (%d bytes): %w", what, bytes, err)
	}
	d.ptrs = append(d.ptrs, p)
	return p, nil
}

// perSet allocates n buffers of bytes each in one allocation, each on a
// matrixAlign boundary, and returns the first and the distance between
// them: one per input set, so that what a launch writes or reads rotates
// with the inputs and does not stay in L2.
func (d *deviceBuffers) perSet(what string, n int, bytes uint64) (cudaload.DevicePtr, uint64, error) {
	stride := (bytes + matrixAlign - 1) &^ (matrixAlign - 1)
	p, err := d.alloc(fmt.Sprintf("%s, %d sets", what, n), stride*uint64(n))
	return p, stride, err
}

// free releases everything, newest first.
func (d *deviceBuffers) free() error {
	var errs []error
	for i := len(d.ptrs) - 1; i >= 0; i-- {
		errs = append(errs, d.ctx.MemFree(d.ptrs[i]))
	}
	d.ptrs = nil
	return errors.Join(errs...)
}

// paddedSet is one input set's A[M,K], B[K,N] and D[M,N] stored with rows
// stridePad elements longer than their length (row-major, untransposed).
type paddedSet struct {
	A, B, D cudaload.DevicePtr
}

// padded is the strided modes' copy of the input sets.
type padded struct {
	sets          []paddedSet
	lda, ldb, ldd int
}

// makePadded allocates n padded sets for s and fills A and B (their
// padding too) with random values of dt; D is left as allocated (every
// element of it that a product writes is written by every launch).
func makePadded(bufs *deviceBuffers, im *inputMaker, s shape, dt dtype, n int) (*padded, error) {
	p := &padded{sets: make([]paddedSet, n), lda: s.K + stridePad, ldb: s.N + stridePad, ldd: s.N + stridePad}
	sz := uint64(dt.Size())
	mats := []struct {
		what    string
		rows    int
		ld      int
		operand byte
		put     func(*paddedSet, cudaload.DevicePtr)
	}{
		{"padded A", s.M, p.lda, 'a', func(ps *paddedSet, v cudaload.DevicePtr) { ps.A = v }},
		{"padded B", s.K, p.ldb, 'b', func(ps *paddedSet, v cudaload.DevicePtr) { ps.B = v }},
		{"padded D", s.M, p.ldd, 0, func(ps *paddedSet, v cudaload.DevicePtr) { ps.D = v }},
	}
	for _, m := range mats {
		elems := uint64(m.rows) * uint64(m.ld)
		base, stride, err := bufs.perSet(m.what, n, elems*sz)
		if err != nil {
			return nil, err
		}
		for i := range p.sets {
			m.put(&p.sets[i], base+cudaload.DevicePtr(uint64(i)*stride))
		}
		if m.operand != 0 {
			if err := im.fillRegion(base, s, dt, n, elems, stride/sz, m.operand); err != nil {
				return nil, fmt.Errorf("%s: %w", m.what, err)
			}
		}
	}
	return p, nil
}

// fillRandom fills n buffers of elems values of dt, strideBytes apart,
// with random values in [-1, 1) (the inputs' generator, keyed by key).
func (im *inputMaker) fillRandom(dst cudaload.DevicePtr, s shape, dt dtype, n int, elems, strideBytes uint64, key byte) error {
	return im.fillRegion(dst, s, dt, n, elems, strideBytes/uint64(dt.Size()), key)
}

// fillMask fills n ReLU masks of elems bytes, strideBytes apart, with
// random bytes 0 and 1 (gemm.ReluMaskZero and ReluMaskPass: a mask a
// forward run could have written).
func (im *inputMaker) fillMask(dst cudaload.DevicePtr, s shape, n int, elems, strideBytes uint64, key byte) error {
	h := make([]byte, uint64(n)*strideBytes)
	for i := 0; i < n; i++ {
		r := rand.New(rand.NewPCG(im.seed, streamID(s, i, key)))
		m := h[uint64(i)*strideBytes : uint64(i)*strideBytes+elems]
		for j := range m {
			m[j] = byte(r.Uint32() & 1)
		}
	}
	if len(h) == 0 {
		return nil
	}
	if err := im.stream.MemcpyHtoDAsync(dst, unsafe.Pointer(&h[0]), uint64(len(h))); err != nil {
		return err
	}
	return im.stream.Synchronize() // before h goes
}
