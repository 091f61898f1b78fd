package gemm

import (
	"fmt"

	"github.com/detgemm/detgemm/cudaload"
	"github.com/detgemm/detgemm/gemm/internal/entries"
	"github.com/detgemm/detgemm/gemm/ref"
)

// The stream family: gemm_dw_stream, dW with a short reduction. One kernel
// streams the f32 master once, each block copying its tile of dW to shared
// memory while it runs the slab chains over M; no workspace.

// streamFamily is the stream family's kernel source.
const streamFamily = entries.DWStreamFamily

// streamIDs is the stream family's lookup table, from the entry
// descriptions.
var streamIDs = indexOf(func(k entries.Key) streamKey { return streamKey{dtypeOf(k.In), int64(k.SR)} }, "dwstream")

// The stream strategy's parameters. They decide speed only.
const (
	// streamMaxM is the largest M (dW's reduction) the dispatcher streams:
	// beyond it the tiled kernels, whose inner loop runs nearer the FMA
	// rate, win back the master's prologue they pay (bench/NOTES-dw.md,
	// round 2; bench/NOTES-engine.md, stream.go).
	streamMaxM = 96
	// streamStage is gemm_dw_stream.cu's CH: the rows of M one stage holds.
	streamStage = 16
	// streamTall and streamShort are the rows of dW one stream block owns
	// (gemm_dw_stream.cu's BR: 8 or 4 rows a thread, 128 columns).
	streamTall  = 64
	streamShort = 32
	// streamCols is the columns of dW one stream block owns.
	streamCols = 128
	// streamThreads is the stream kernels' block size.
	streamThreads = 256
)

// streamFits reports whether the stream kernel with blocks of sr dW rows
// can run the tile problem: DW (layout tn), M at most 2^30 (the kernel
// counts M in 32 bits), the row blocks within grid.y.
func streamFits(l layout, rows, red, sr int64) bool {
	return l == layoutTN && red <= 1<<30 && ceilDiv(rows, sr) <= maxGridYZ
}

// streamRowsFor is the block height the stream strategy uses for a
// reduction of red rows: 32-row blocks (five an SM, 80 KiB of master in
// flight) while M fits one stage and the call is a pure stream; 64-row
// blocks (three an SM, 96 KiB; 32 fmas per three shared-memory reads
// against 16 per two) beyond, where the fmas start to count
// (bench/NOTES-dw.md, round 2; bench/NOTES-engine.md, stream.go).
func streamRowsFor(red int64) int64 {
	if red <= streamStage {
		return streamShort
	}
	return streamTall
}

// stream: gemm_dw_stream, grid (column blocks of 128, row blocks of
// pl.sr).
func (l launcher) stream(p *problem, pl *plan) error {
	k := streamKey{p.in, pl.sr}
	id := streamIDs[k]
	if err := l.need(p, id); err != nil {
		return err
	}
	l.e.args.Reset().
		Ptr(cudaload.DevicePtr(p.a)).Ptr(cudaload.DevicePtr(p.b)).Ptr(cudaload.DevicePtr(p.c)).
		Int64(p.rows).Int64(p.cols).Int64(p.red).Int64(p.lda).Int64(p.ldb).Int64(p.ldc)
	grid := cudaload.Dim3{X: uint32(ceilDiv(p.cols, streamCols)), Y: uint32(ceilDiv(p.rows, pl.sr)), Z: 1}
	return l.launch(p, id, grid, streamThreads, k.sharedBytes(), pl.sr, streamCols)
}

// streamKey names a stream kernel: input type and the rows of dW a block
// owns (streamTall or streamShort).
type streamKey struct {
	in DType
	sr int64
}

func (k streamKey) name() string {
	if k.sr == streamShort {
		return fmt.Sprintf("detgemm_dwstream32_%v", k.in)
	}
	return fmt.Sprintf("detgemm_dwstream_%v", k.in)
}

// sharedBytes is the kernel's dynamic shared memory (gemm_dw_stream.cu's
// SM_BYTES): the master tile and two stages of X and dY rows.
func (k streamKey) sharedBytes() uint32 {
	if k.sr == streamShort {
		return 36864
	}
	return 57344
}

// familyStream describes the stream family: dW whose reduction M is at
// most streamMaxM, taken by rule (bench/NOTES-dw.md, round 2), in
// streamShort-row blocks while M fits one stage and streamTall-row ones
// beyond (streamRowsFor). A filter pinning StrategyStream takes it for
// any M the kernel can count, with f.streamRows' block height if set.
var familyStream = &family{
	name:    "stream",
	layouts: layoutsOf(layoutTN),
	class:   classRule,
	admits:  func(f filter) bool { return f.strategy == 0 || f.strategy == StrategyStream },
	plan:    planStream,
	launch:  func(l launcher, p problem, pl plan) error { return l.stream(&p, &pl) },
}

// planStream is familyStream's plan: one kernel, no workspace.
func planStream(_ *device, p problem, f filter) (pl plan, c cost, ok bool, err error) {
	sr := streamRowsFor(p.red)
	if f.strategy == StrategyStream {
		if f.streamRows != 0 {
			sr = f.streamRows
		}
		if (sr != streamTall && sr != streamShort) || !streamFits(p.layout, p.rows, p.red, sr) {
			return pl, cost{}, false, fmt.Errorf("%w: stream needs dW, M ≤ 2^30 and at most %d blocks of %d or %d rows (layout %v, rows = %d, M = %d, block rows %d)",
				errStrategy, maxGridYZ, streamTall, streamShort, p.layout, p.rows, p.red, sr)
		}
	} else if !streamFits(p.layout, p.rows, p.red, streamShort) || p.red > streamMaxM {
		return pl, cost{}, false, nil
	}
	pl = plan{strategy: StrategyStream, slabs: ceilDiv(p.red, ref.SlabLen), sr: sr}
	return pl, ruleCost, true, nil
}
