package main

import (
	"errors"
	"fmt"

	"github.com/detgemm/detgemm/cudaload"
)

// The copy backend's modes.
const (
	modeCopy = "copy" // a device-to-device copy moving the problem's bytes
	modeRead = "read" // a kernel reading the problem's bytes once
)

// readThreads is the block size of the read kernel; it runs
// readBlocksPerSM blocks an SM (a full SM of threads).
const (
	kernReadXOR     = "detgemm_read_xor"
	readThreads     = 256
	readBlocksPerSM = 8
)

// copyBackend times a device-to-device copy that moves as many bytes as
// the roofline counts for the problem (gemmBytes: each input read once, the
// output written once): one cuMemcpyDtoDAsync of half of them, on buffers
// of its own, rotated like the inputs. It is the floor for a
// bandwidth-bound GEMM of that size. The large copy behind the roofline
// (report.Copy, 256 MiB or more) hides the start and the drain of a
// launch; a GEMM that reads 33 MB pays them, and so does this copy.
// Mode read is the other floor: a GEMV reads almost all its bytes and
// writes few, and memory may serve pure reads faster than a copy's mix, so
// the util family's read kernel (detgemm_read_xor) reads all the bytes
// once, over a full GPU of threads. On sm_90 and newer it is launched
// overlapped (programmatic dependent launch), as detgemm launches its
// few-row kernels, so the floor pays the same launch gaps.
type copyBackend struct {
	read    *cudaload.Function // nil until the util module is loaded
	sms     int
	overlap bool
}

// Name implements backend.
func (*copyBackend) Name() string { return "copy" }

// Modes implements backend: every type, both floors.
func (*copyBackend) Modes(dtype) []string { return []string{modeCopy, modeRead} }

// Close implements backend.
func (*copyBackend) Close() error { return nil }

// useUtil takes the read kernel from the loaded util module, for a device
// of sms multiprocessors and compute capability major.x.
func (b *copyBackend) useUtil(m *cudaload.Module, sms, major int) error {
	f, err := m.Function(kernReadXOR)
	if err != nil {
		return err
	}
	b.read, b.sms, b.overlap = f, max(sms, 1), major >= 9
	return nil
}

// copyHalf is the size of the copy standing for problem s in type dt: half
// of gemmBytes (a copy reads and writes each byte it moves), at least 256
// bytes, a multiple of 256.
func copyHalf(s shape, dt dtype) uint64 {
	return max(uint64(gemmBytes(s, dt)/2+255)&^255, 256)
}

// Prepare implements backend: a source and a destination buffer per input
// set (copy: half the bytes each; read: all of them, and a word a warp),
// the sources filled so the floors read written memory.
func (b *copyBackend) Prepare(ctx *cudaload.Context, stream *cudaload.Stream, p problem, sets []inputSet) (runner, error) {
	r := &copyRunner{ctx: ctx, s: stream}
	switch p.Mode {
	case modeCopy:
		r.bytes, r.dstBytes = copyHalf(p.Shape, p.DType), copyHalf(p.Shape, p.DType)
	case modeRead:
		if b.read == nil {
			return nil, fmt.Errorf("copy backend: %s unavailable (util kernels not loaded)", kernReadXOR)
		}
		r.fn, r.overlap = b.read, b.overlap
		r.bytes = 2 * copyHalf(p.Shape, p.DType)
		r.blocks = uint32(b.sms * readBlocksPerSM)
		r.dstBytes = uint64(r.blocks) * readThreads / 32 * 4
	default:
		return nil, fmt.Errorf("copy backend: mode %q", p.Mode)
	}
	for range sets {
		src, err := ctx.MemAlloc(r.bytes)
		if err != nil {
			return nil, errors.Join(fmt.Errorf("copy backend: %w", err), r.Close())
		}
		r.src = append(r.src, src)
		dst, err := ctx.MemAlloc(r.dstBytes)
		if err != nil {
			return nil, errors.Join(fmt.Errorf("copy backend: %w", err), r.Close())
		}
		r.dst = append(r.dst, dst)
		if err := ctx.MemsetD8(src, 0x3c, r.bytes); err != nil {
			return nil, errors.Join(fmt.Errorf("copy backend: %w", err), r.Close())
		}
	}
	// The memsets ran on the legacy stream; the copies go on the bench's.
	if err := ctx.Synchronize(); err != nil {
		return nil, errors.Join(fmt.Errorf("copy backend: %w", err), r.Close())
	}
	return r, nil
}

// copyRunner copies src[i] to dst[i], or reads src[i] with fn, on the
// bench's stream.
type copyRunner struct {
	ctx             *cudaload.Context
	s               *cudaload.Stream
	bytes, dstBytes uint64
	src, dst        []cudaload.DevicePtr
	fn              *cudaload.Function // read mode
	overlap         bool               // read mode: launched overlapped
	blocks          uint32
	args            cudaload.Args
}

// Launch implements runner.
func (r *copyRunner) Launch(i int) error {
	if r.fn == nil {
		return r.s.MemcpyDtoDAsync(r.dst[i], r.src[i], r.bytes)
	}
	r.args.Reset().Ptr(r.src[i]).Uint64(r.bytes / 16).Ptr(r.dst[i])
	return r.fn.Launch(cudaload.LaunchConfig{
		Grid:    cudaload.Dim3{X: r.blocks, Y: 1, Z: 1},
		Block:   cudaload.Dim3{X: readThreads, Y: 1, Z: 1},
		Stream:  r.s,
		Overlap: r.overlap,
	}, &r.args)
}

// Close implements runner.
func (r *copyRunner) Close() error {
	var errs []error
	for _, p := range append(r.src, r.dst...) {
		errs = append(errs, r.ctx.MemFree(p))
	}
	r.src, r.dst = nil, nil
	return errors.Join(errs...)
}
