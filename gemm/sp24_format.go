package gemm

import (
	"fmt"
	"math"
	"math/bits"

	"github.com/detgemm/detgemm/cudaload"
	"github.com/detgemm/detgemm/gemm/internal/entries"
	"github.com/detgemm/detgemm/gemm/ref"
)

// The 2:4 sparse format on the GPU (docs/contract.md, section "2:4 sparse
// format"): a weight W[K,N] (row-major, leading dimension ldw >= N, 0
// meaning N) pruned to 2:4 along K, compressed to values (N rows of K/2
// 16-bit elements, 16-byte aligned) and metadata (N rows of ceil(K/32)
// words, 4-byte aligned), decompressed and masked — every bit as
// gemm/ref's Prune24, Compress24, Sparse24.Decompress and Mask24 give it.

// ErrNot24 and ErrMeta24 are gemm/ref's sentinels: a group of 4 along K
// with more than 2 nonzeros (Compress24), and metadata that holds a pattern
// other than two ascending rows, or an unused nibble other than 0x4
// (CheckMeta24).
var (
	ErrNot24  = ref.ErrNot24
	ErrMeta24 = ref.ErrMeta24
)

// Sparse24Bytes is the device memory of a K×N weight of type t (BF16 or
// F16) compressed to 2:4: values N·K/2 elements of 2 bytes, meta
// N·ceil(K/32) words of 4 bytes; both 0 for a t that is not 16-bit or a
// shape that is not positive.
func Sparse24Bytes(t DType, K, N int) (values, meta uint64) {
	if !t.Half() || K <= 0 || N <= 0 {
		return 0, 0
	}
	return uint64(N) * uint64(K/2) * 2, uint64(N) * uint64(ref.Meta24Words(K)) * 4
}

// sp24FormatFamily holds the format's kernels.
const sp24FormatFamily = entries.SP24FormatFamily

// sp24FKey is one format kernel: its type and whether it takes two 16-bit
// columns a thread.
type sp24FKey struct {
	t  DType
	v2 bool
}

var (
	sp24PruneIDs         = indexOf(sp24FKeyOf, "sp24prune")
	sp24MaskIDs          = indexOf(sp24FKeyOf, "sp24mask")
	sp24CompressIDs      = indexOf(sp24FKeyOf, "sp24compress")
	sp24PruneCompressIDs = indexOf(sp24FKeyOf, "sp24prunecompress")
	sp24DecompressIDs    = indexOf(sp24FKeyOf, "sp24decompress")
	sp24CheckMetaID      = indexOf(sp24FKeyOf, "sp24checkmeta")[sp24FKey{}]
)

func sp24FKeyOf(k entries.Key) sp24FKey { return sp24FKey{dtypeOf(k.In), k.Vec} }

// The format kernels' launch: 256 threads on 32·V columns × 32 groups.
const (
	sp24Threads    = 256
	sp24TileGroups = 32
)

// sp24Call is a validated format call.
type sp24Call struct {
	op        string
	t         DType
	K, N, ldw int64
	w         cudaload.DevicePtr
	values    cudaload.DevicePtr
	meta      cudaload.DevicePtr
	v2        bool // two 16-bit columns a thread
}

// sp24Uses says which buffers a format operation reads or writes.
type sp24Uses struct {
	kmul          int     // K's multiple: 4 (prune, mask) or 16 (the compressed form)
	types         []DType // the weight types it takes
	w, vals, meta bool    // uses W, values, meta
	wOut          bool    // writes W (else reads it)
	compOut       bool    // writes values and meta (else reads them)
}

// checkSp24 validates a format call: the type, K and N positive (K a
// multiple of u.kmul), ldw (0: N) at least N, every pointer it uses non-zero
// and aligned (W to its elements, values to 16 bytes, meta to 4), the
// buffers' ranges not wrapping, and no output overlapping another buffer.
func checkSp24(op string, t DType, K, N, ldw int, w, values, meta cudaload.DevicePtr, u sp24Uses) (sp24Call, error) {
	c := sp24Call{op: op, t: t}
	okType := false
	for _, x := range u.types {
		okType = okType || t == x
	}
	if !okType {
		return c, argErr(op, "t", ErrDType, "%v: want one of %v", t, u.types)
	}
	if K <= 0 || N <= 0 {
		return c, argErr(op, "K", ErrDimension, "K %d and N %d must be positive", K, N)
	}
	if K%u.kmul != 0 {
		why := "groups of 4 along K"
		if u.kmul == 16 {
			why = "the compressed rows are whole 16-byte chunks"
		}
		return c, argErr(op, "K", ErrDimension, "%d is not a multiple of %d (%s)", K, u.kmul, why)
	}
	if K > math.MaxInt32 || N > math.MaxInt32 {
		return c, argErr(op, "K", ErrTooLarge, "K %d, N %d: each at most %d", K, N, math.MaxInt32)
	}
	if u.w {
		switch {
		case ldw == 0:
			ldw = N
		case ldw < 0:
			return c, argErr(op, "ldw", ErrLeadingDim, "%d is negative", ldw)
		case ldw < N:
			return c, argErr(op, "ldw", ErrLeadingDim, "%d is below N = %d; the rows would overlap", ldw, N)
		}
		hi, lo := bits.Mul64(uint64(K-1), uint64(ldw))
		if hi != 0 || lo > math.MaxInt64/8-uint64(N) {
			return c, argErr(op, "ldw", ErrTooLarge, "%d rows of stride %d overflow 64-bit indexing", K, ldw)
		}
	} else if ldw != 0 {
		return c, argErr(op, "ldw", ErrLeadingDim, "%d given, but %s has no dense weight; leave it 0", ldw, op)
	}
	c.K, c.N, c.ldw, c.w, c.values, c.meta = int64(K), int64(N), int64(ldw), w, values, meta
	size := uint64(t.Size())
	vb, mb := uint64(N)*uint64(K/2)*2, uint64(N)*uint64(ref.Meta24Words(K))*4
	bufs := []callBuf{
		{mmBuf{"w", w, 0, size}, u.w, false, u.wOut, false},
		{mmBuf{"values", values, vb, 16}, u.vals, false, u.compOut, false},
		{mmBuf{"meta", meta, mb, 4}, u.meta, false, u.compOut, false},
	}
	if u.w {
		bufs[0].bytes = extentBytes(K, N, ldw, int(size))
	}
	if err := checkCallBufs(op, bufs, op+" does not use it; pass 0"); err != nil {
		return c, err
	}
	c.v2 = t.Half() && u.w && N%2 == 0 && ldw%2 == 0 && uint64(w)%4 == 0
	return c, nil
}

var (
	sp24Half = []DType{BF16, F16}
	sp24Any  = []DType{F32, BF16, F16}
)

// grid is the tiled kernels' grid: column tiles on x, group tiles on y (the
// kernels loop over the y tiles past 65535).
func (c sp24Call) grid() cudaload.Dim3 {
	v := int64(1)
	if c.v2 {
		v = 2
	}
	x := ceilDiv(c.N, 32*v)
	y := min(ceilDiv(c.K/4, sp24TileGroups), maxGridYZ)
	return cudaload.Dim3{X: uint32(x), Y: uint32(y), Z: 1}
}

// Prune24 prunes the weight W[K,N] (type t: F32, BF16 or F16; K a multiple
// of 4) to 2:4 along K in place on the engine's stream: in every group of 4
// rows of a column the two elements of largest magnitude stay (a NaN above
// every number, ties to the lower row) and the other two become +0, as
// ref.Prune24 does. Elements past column N of a row are not touched. Bad
// arguments return an *ArgError (ErrDType, ErrDimension, ErrLeadingDim,
// ErrTooLarge, ErrNilPointer, ErrMisaligned, ErrOperand) and nothing is
// launched.
func (e *Engine) Prune24(t DType, w cudaload.DevicePtr, K, N, ldw int) error {
	c, err := checkSp24("Prune24", t, K, N, ldw, w, 0, 0, sp24Uses{kmul: 4, types: sp24Any, w: true, wOut: true})
	if err != nil {
		return err
	}
	return e.sp24Run(c, sp24PruneIDs, func(a *cudaload.Args) { a.Int64(c.K).Int64(c.N).Ptr(c.w).Int64(c.ldw) })
}

// PruneCompress24 prunes the weight W[K,N] (BF16 or F16; K a multiple of
// 16) as Prune24 does and writes it compressed to values and meta (the
// layout of ref.Sparse24), on the engine's stream, reading W once and
// leaving it unchanged: the bits of ref.Compress24 after ref.Prune24. A
// pruned weight is always 2:4, so nothing can be refused after the launch;
// bad arguments are Prune24's errors, and ErrAlias where an output
// overlaps another buffer.
func (e *Engine) PruneCompress24(t DType, w cudaload.DevicePtr, K, N, ldw int, values, meta cudaload.DevicePtr) error {
	c, err := checkSp24("PruneCompress24", t, K, N, ldw, w, values, meta,
		sp24Uses{kmul: 16, types: sp24Half, w: true, vals: true, meta: true, compOut: true})
	if err != nil {
		return err
	}
	return e.sp24Run(c, sp24PruneCompressIDs, func(a *cudaload.Args) {
		a.Int64(c.K).Int64(c.N).Ptr(c.w).Int64(c.ldw).Ptr(c.values).Ptr(c.meta).Ptr(0)
	})
}

// Decompress24 writes the dense weight W[K,N] (BF16 or F16; K a multiple of
// 16) of values and meta on the engine's stream: the kept values at their
// rows, +0 at the others, as ref.Sparse24.Decompress does. The metadata is
// not validated (CheckMeta24 does that): a group whose pattern is not two
// ascending rows is written as four +0. Elements past column N of a row are
// not touched. Bad arguments are PruneCompress24's errors.
func (e *Engine) Decompress24(t DType, values, meta cudaload.DevicePtr, K, N int, w cudaload.DevicePtr, ldw int) error {
	c, err := checkSp24("Decompress24", t, K, N, ldw, w, values, meta,
		sp24Uses{kmul: 16, types: sp24Half, w: true, vals: true, meta: true, wOut: true})
	if err != nil {
		return err
	}
	return e.sp24Run(c, sp24DecompressIDs, func(a *cudaload.Args) {
		a.Int64(c.K).Int64(c.N).Ptr(c.values).Ptr(c.meta).Ptr(c.w).Int64(c.ldw)
	})
}

// Mask24 sets to +0, in place on the engine's stream, every element of the
// weight W[K,N] (type t: F32, BF16 or F16; K a multiple of 4) at a row that
// meta (N·ceil(K/32) words, ref.Sparse24's layout) does not keep, as
// ref.Mask24 does: after an optimizer step it keeps the pruned weights at
// zero. The metadata is not validated (CheckMeta24 does that): a group
// whose pattern is not two ascending rows is masked whole. Bad arguments
// are Prune24's errors, and ErrAlias where meta overlaps W.
func (e *Engine) Mask24(t DType, w cudaload.DevicePtr, K, N, ldw int, meta cudaload.DevicePtr) error {
	c, err := checkSp24("Mask24", t, K, N, ldw, w, 0, meta, sp24Uses{kmul: 4, types: sp24Any, w: true, meta: true, wOut: true})
	if err != nil {
		return err
	}
	return e.sp24Run(c, sp24MaskIDs, func(a *cudaload.Args) { a.Int64(c.K).Int64(c.N).Ptr(c.w).Int64(c.ldw).Ptr(c.meta) })
}

// Compress24 compresses the 2:4-sparse weight W[K,N] (BF16 or F16; K a
// multiple of 16) to values and meta as ref.Compress24 does: each group
// keeps the rows of its nonzeros (a -0 is zero, a NaN nonzero), filled up
// to two with its lowest zero rows. It is synchronous: it waits for the
// engine's stream and reads back whether a group holds more than two
// nonzeros; the first such group (q ascending, then n) is an *ArgError
// matching ErrNot24 with ref.Compress24's reason, and values and meta then
// hold garbage for that group. So it cannot run while the stream captures
// a graph; PruneCompress24, which never fails after its checks, can.
func (e *Engine) Compress24(t DType, w cudaload.DevicePtr, K, N, ldw int, values, meta cudaload.DevicePtr) error {
	const op = "Compress24"
	c, err := checkSp24(op, t, K, N, ldw, w, values, meta,
		sp24Uses{kmul: 16, types: sp24Half, w: true, vals: true, meta: true, compOut: true})
	if err != nil {
		return err
	}
	bad, err := e.sp24Flagged(c, func(flag cudaload.DevicePtr) error {
		return e.sp24Launch(c, sp24CompressIDs[sp24FKey{c.t, c.v2}], c.grid(), func(a *cudaload.Args) {
			a.Int64(c.K).Int64(c.N).Ptr(c.w).Int64(c.ldw).Ptr(c.values).Ptr(c.meta).Ptr(flag)
		})
	})
	if err != nil || bad == math.MaxUint64 {
		return err
	}
	q, n := int64(bad)/c.N, int64(bad)%c.N
	// The group's four elements say how many nonzeros it holds.
	size := int64(t.Size())
	nz := 0
	for r := range int64(4) {
		var h [1]uint16
		if err := cudaload.CopyFromDevice(e.ctx, h[:], w+cudaload.DevicePtr(((4*q+r)*c.ldw+n)*size)); err != nil {
			return fmt.Errorf("gemm.%s: reading the bad group back: %w", op, err)
		}
		if h[0]&0x7FFF != 0 {
			nz++
		}
	}
	return argErr(op, "w", ErrNot24, "rows %d..%d of column %d hold %d nonzeros", 4*q, 4*q+3, n, nz)
}

// CheckMeta24 validates the metadata of a K×N weight (K a multiple of 4)
// on the GPU: every used nibble two ascending rows, every unused one (a
// group past K/4) 0x4. It is synchronous, like Compress24; the first bad
// word (row-major) is an *ArgError matching ErrMeta24 with the reason
// ref.Sparse24.Validate gives.
func (e *Engine) CheckMeta24(meta cudaload.DevicePtr, K, N int) error {
	const op = "CheckMeta24"
	c, err := checkSp24(op, F32, K, N, 0, 0, 0, meta, sp24Uses{kmul: 4, types: sp24Any, meta: true})
	if err != nil {
		return err
	}
	mw := int64(ref.Meta24Words(K))
	bad, err := e.sp24Flagged(c, func(flag cudaload.DevicePtr) error {
		blocks := min(ceilDiv(c.N*mw, sp24Threads), int64(max(e.sms, 1))*16)
		return e.sp24Launch(c, sp24CheckMetaID, cudaload.Dim3{X: uint32(blocks), Y: 1, Z: 1}, func(a *cudaload.Args) {
			a.Int64(c.K).Int64(c.N).Ptr(c.meta).Ptr(flag)
		})
	})
	if err != nil || bad == math.MaxUint64 {
		return err
	}
	var word [1]uint32
	if err := cudaload.CopyFromDevice(e.ctx, word[:], meta+cudaload.DevicePtr(bad*4)); err != nil {
		return fmt.Errorf("gemm.%s: reading the bad word back: %w", op, err)
	}
	return argErr(op, "meta", ErrMeta24, "%s", meta24Reason(int64(bad), mw, c.K/4, word[0]))
}

// meta24Reason says what is wrong with metadata word i (of mw a row, for
// Q groups), as ref's validation says it.
func meta24Reason(i, mw, Q int64, v uint32) string {
	n, wi := i/mw, i%mw
	for g := range int64(8) {
		q := 8*wi + g
		b := v >> (4 * g) & 0xF
		if q < Q && b&3 >= b>>2&3 {
			return fmt.Sprintf("column %d, rows %d..%d: pattern %#x is not two ascending positions (word %d = %#08x)", n, 4*q, 4*q+3, b, i, v)
		}
		if q >= Q && b != 0x4 {
			return fmt.Sprintf("column %d: the nibble of group %d, past K/4 = %d, is %#x, not 0x4 (word %d = %#08x)", n, q, Q, b, i, v)
		}
	}
	return fmt.Sprintf("word %d = %#08x", i, v) // not reached: the kernel found it bad
}

// sp24Run enqueues a tiled format kernel from ids.
func (e *Engine) sp24Run(c sp24Call, ids map[sp24FKey]kernelID, args func(*cudaload.Args)) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return ErrClosed
	}
	return e.sp24Launch(c, ids[sp24FKey{c.t, c.v2}], c.grid(), args)
}

// sp24Launch enqueues kernel id (e.mu held).
func (e *Engine) sp24Launch(c sp24Call, id kernelID, grid cudaload.Dim3, args func(*cudaload.Args)) error {
	l := launcher{e: &e.device}
	p := problem{op: c.op, in: c.t, out: c.t}
	if err := l.need(&p, id); err != nil {
		return err
	}
	args(e.args.Reset())
	return l.launch(&p, id, grid, sp24Threads, 0, 1, 1)
}

// sp24Flagged runs launch with a fresh 8-byte flag set to all ones, waits
// for the stream, and returns the flag (the kernels lower it with an
// atomic minimum).
func (e *Engine) sp24Flagged(c sp24Call, launch func(flag cudaload.DevicePtr) error) (uint64, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return 0, ErrClosed
	}
	if capturing, err := e.stream.IsCapturing(); err != nil {
		return 0, fmt.Errorf("gemm.%s: %w", c.op, err)
	} else if capturing {
		return 0, fmt.Errorf("gemm.%s: the stream is capturing a CUDA graph, and %s waits for its result (PruneCompress24, Decompress24 and Mask24 can be captured)", c.op, c.op)
	}
	flag, err := e.ctx.MemAlloc(8)
	if err != nil {
		return 0, fmt.Errorf("gemm.%s: %w", c.op, err)
	}
	defer func() { _ = e.ctx.MemFree(flag) }()
	if err := e.stream.MemsetD32Async(flag, math.MaxUint32, 2); err != nil {
		return 0, fmt.Errorf("gemm.%s: %w", c.op, err)
	}
	if err := launch(flag); err != nil {
		return 0, err
	}
	if err := e.stream.Synchronize(); err != nil {
		return 0, fmt.Errorf("gemm.%s: %w", c.op, err)
	}
	var got [1]uint64
	if err := cudaload.CopyFromDevice(e.ctx, got[:], flag); err != nil {
		return 0, fmt.Errorf("gemm.%s: %w", c.op, err)
	}
	return got[0], nil
}
