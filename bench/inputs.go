package main

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"
	"unsafe"

	"github.com/detgemm/detgemm/cudaload"
	"github.com/detgemm/detgemm/gemm/ref"
)

// inputMaker fills input sets with seeded random values in [-1, 1): drawn
// in f32 on the host with PCG, uploaded, and narrowed on the device by the
// util kernels (or on the host when those are unavailable). The values
// depend on the seed, the shape, the set and the operand only, so every
// element type and every run sees the same numbers.
type inputMaker struct {
	ctx    *cudaload.Context
	stream *cudaload.Stream
	seed   uint64
	conv   *converter // nil: narrow on the host

	host   []float32 // reused between problems
	host16 []uint16
}

// inputArena is every input set of one problem in one device allocation:
// all the A matrices, then all the B, C, Y and D, each starting on a
// 256-byte boundary (as cudaMalloc'd buffers do, so no backend is handed
// a less aligned operand than it would get from a user). One allocation,
// one upload and one narrowing launch per operand keep the set-up of
// thousands of small sets cheap.
type inputArena struct {
	base cudaload.DevicePtr
	sets []inputSet
}

// matrixAlign is the alignment of every matrix in an arena.
const matrixAlign = 256

// setBytes is the traffic of one launch that the L2 must not absorb: the
// GEMM's A and B read and its output written. It sizes the rotation
// (setsFor); the arena also holds each set's other operands (setAlloc).
func setBytes(s shape, dt dtype) int64 {
	return gemmBytes(s, dt)
}

// setElems is the element count of A, B, C, Y and D of one set.
func setElems(s shape) [5]uint64 {
	mk, kn, mn := uint64(s.M)*uint64(s.K), uint64(s.K)*uint64(s.N), uint64(s.M)*uint64(s.N)
	return [5]uint64{mk, kn, mn, mn, mk}
}

// setAlloc is the device memory one set occupies in an arena.
func setAlloc(s shape, dt dtype) int64 {
	var b uint64
	for _, e := range setElems(s) {
		b += (e*uint64(dt.Size()) + matrixAlign - 1) &^ (matrixAlign - 1)
	}
	return int64(b)
}

// makeSets allocates n sets and fills the inputs A, B and C with random
// values; the outputs Y and D are filled with 0xFF bytes (a NaN in every
// type) rather than left as whatever memory held.
func (im *inputMaker) makeSets(s shape, dt dtype, n int) (*inputArena, error) {
	sz := uint64(dt.Size())
	elems := setElems(s)
	var stride, region [5]uint64 // bytes from one set's matrix to the next; region offsets
	var total uint64
	for i, e := range elems {
		stride[i] = (e*sz + matrixAlign - 1) &^ (matrixAlign - 1)
		region[i] = total
		total += stride[i] * uint64(n)
	}
	base, err := im.ctx.MemAlloc(total)
	if err != nil {
		return nil, err
	}
	a := &inputArena{base: base, sets: make([]inputSet, n)}
	at := func(op, set int) cudaload.DevicePtr {
		return base + cudaload.DevicePtr(region[op]+stride[op]*uint64(set))
	}
	for i := range a.sets {
		a.sets[i] = inputSet{A: at(0, i), B: at(1, i), C: at(2, i), Y: at(3, i), D: at(4, i)}
	}
	for op, name := range []byte{'A', 'B', 'C'} {
		if err == nil {
			err = im.fillRegion(at(op, 0), s, dt, n, elems[op], stride[op]/sz, name)
		}
	}
	if err == nil {
		err = im.ctx.MemsetD8(at(3, 0), 0xff, total-region[3])
	}
	if err == nil {
		// The memset runs on the legacy stream, which the bench's
		// non-blocking stream does not wait for: finish it first.
		err = im.ctx.Synchronize()
	}
	if err != nil {
		im.free(a)
		return nil, err
	}
	return a, nil
}

// free releases an arena; nil is a no-op.
func (im *inputMaker) free(a *inputArena) {
	if a != nil && a.base != 0 {
		_ = im.ctx.MemFree(a.base)
		a.base, a.sets = 0, nil
	}
}

// fillRegion writes one operand of every set: n matrices of elems random
// values, strideElems apart (the padding between them is zero).
func (im *inputMaker) fillRegion(dst cudaload.DevicePtr, s shape, dt dtype, n int, elems, strideElems uint64, operand byte) error {
	total := uint64(n) * strideElems
	if uint64(cap(im.host)) < total {
		im.host = make([]float32, total)
	}
	h := im.host[:total]
	jobs := make([]fillJob, n)
	for i := range jobs {
		m := h[uint64(i)*strideElems : uint64(i+1)*strideElems]
		jobs[i] = fillJob{m[:elems], streamID(s, i, operand)}
		clear(m[elems:])
	}
	randomFillAll(jobs, im.seed)
	// Every copy and kernel goes on the bench's stream, in order, and the
	// function waits for them: the host buffers are reused by the next call.
	switch {
	case dt == f32:
		if err := im.stream.MemcpyHtoDAsync(dst, unsafe.Pointer(&h[0]), total*4); err != nil {
			return err
		}
		return im.stream.Synchronize()
	case im.conv != nil:
		staging, err := im.ctx.MemAlloc(total * 4)
		if err != nil {
			return err
		}
		defer im.ctx.MemFree(staging)
		if err := im.stream.MemcpyHtoDAsync(staging, unsafe.Pointer(&h[0]), total*4); err != nil {
			return err
		}
		if err := im.conv.narrow(im.stream, dt, staging, dst, total); err != nil {
			return err
		}
		return im.stream.Synchronize() // before the staging buffer is freed
	default:
		if uint64(cap(im.host16)) < total {
			im.host16 = make([]uint16, total)
		}
		h16 := im.host16[:total]
		narrowHost(h16, h, dt)
		if err := im.stream.MemcpyHtoDAsync(dst, unsafe.Pointer(&h16[0]), total*2); err != nil {
			return err
		}
		return im.stream.Synchronize()
	}
}

// narrowHost rounds on the host with the CPU reference's conversions (the
// same RNE as the util kernels).
func narrowHost(dst []uint16, src []float32, dt dtype) {
	conv := ref.BF16FromF32
	if dt == f16 {
		conv = ref.F16FromF32
	}
	for i, v := range src {
		dst[i] = conv(v)
	}
}

// fillChunk is how many values one PCG stream draws; the chunks are filled
// in parallel, and the values do not depend on how many workers ran.
const fillChunk = 1 << 20

// fillJob is one matrix to fill from its own PCG stream key.
type fillJob struct {
	dst    []float32
	stream uint64
}

// randomFill sets dst to uniform values in [-1, 1) from PCG streams keyed by
// seed, stream and chunk index.
func randomFill(dst []float32, seed, stream uint64) {
	randomFillAll([]fillJob{{dst, stream}}, seed)
}

// randomFillAll fills every job, spreading their chunks over the CPUs (many
// small matrices fill as fast as one large one).
func randomFillAll(jobs []fillJob, seed uint64) {
	type task struct {
		job, chunk int
	}
	var tasks []task
	for j, jb := range jobs {
		for c := 0; c*fillChunk < len(jb.dst); c++ {
			tasks = append(tasks, task{j, c})
		}
	}
	next := make(chan task, len(tasks))
	for _, t := range tasks {
		next <- t
	}
	close(next)
	var wg sync.WaitGroup
	for w := 0; w < min(len(tasks), runtime.GOMAXPROCS(0)); w++ {
		wg.Go(func() {
			for t := range next {
				jb := jobs[t.job]
				r := rand.New(rand.NewPCG(seed, mix(jb.stream, uint64(t.chunk))))
				part := jb.dst[t.chunk*fillChunk : min(len(jb.dst), (t.chunk+1)*fillChunk)]
				for i := range part {
					part[i] = 2*r.Float32() - 1
				}
			}
		})
	}
	wg.Wait()
}

// streamID keys one operand of one set of one shape.
func streamID(s shape, set int, operand byte) uint64 {
	h := mix(uint64(s.M), uint64(s.K))
	h = mix(h, uint64(s.N))
	h = mix(h, uint64(set))
	return mix(h, uint64(operand))
}

// mix is splitmix64's finaliser over a ^ rotated b: a cheap, well-spread
// way to derive independent PCG streams from small integers.
func mix(a, b uint64) uint64 {
	z := a ^ (b*0x9e3779b97f4a7c15 + 0x632be59bd9b4e019)
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	return z ^ z>>31
}

// converter narrows f32 to bf16 or f16 on the device with the util family's
// kernels, so the bench exercises them on every run.
type converter struct {
	toBF16, toF16 *cudaload.Function
	blocks        uint32
	args          cudaload.Args
}

// Names of the util family's kernels the bench launches.
const (
	utilFamily  = "util"
	kernToBF16  = "detgemm_f32_to_bf16_rne"
	kernToF16   = "detgemm_f32_to_f16_rne"
	convThreads = 256
)

// newConverter finds the narrowing kernels in the loaded util module.
func newConverter(m *cudaload.Module, sms int) (*converter, error) {
	bf, err := m.Function(kernToBF16)
	if err != nil {
		return nil, err
	}
	hf, err := m.Function(kernToF16)
	if err != nil {
		return nil, err
	}
	return &converter{toBF16: bf, toF16: hf, blocks: uint32(max(1, sms) * 8)}, nil
}

// narrow launches the kernel for dt over n elements. The kernels are
// grid-stride loops, so a grid of a few blocks per SM covers any n.
func (c *converter) narrow(stream *cudaload.Stream, dt dtype, in, out cudaload.DevicePtr, n uint64) error {
	f := c.toBF16
	switch dt {
	case bf16:
	case f16:
		f = c.toF16
	default:
		return errors.New("narrow: no conversion to " + string(dt))
	}
	blocks := uint32(min(uint64(c.blocks), (n+convThreads-1)/convThreads))
	c.args.Reset().Ptr(in).Ptr(out).Uint64(n)
	if err := f.Launch(cudaload.LaunchConfig{
		Grid:   cudaload.Dim3{X: blocks, Y: 1, Z: 1},
		Block:  cudaload.Dim3{X: convThreads, Y: 1, Z: 1},
		Stream: stream,
	}, &c.args); err != nil {
		return fmt.Errorf("%s: %w", f.Name(), err)
	}
	return nil
}
