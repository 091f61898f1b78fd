package main

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"sync"
	"unsafe"

	"github.com/detgemm/detgemm/cudaload"
	"github.com/detgemm/detgemm/gemm"
)

// The fp8 modes (opt-in through --modes; their rows are filed under bf16,
// the type of their output and of the quantizer's input, and run only for
// it). On a shape MxKxN the products compute
//
//	D[M,N] = A[M,K]·B[N,K]ᵀ,
//
// A and B E4M3 codes, both K-major (A stored M×K, B stored N×K: the only
// form Hopper's fp8 tensor cores and cuBLASLt's fp8 kernels read), f32
// scales: the engine's FP8Plan made once, Run per launch.
const (
	// fp8-fast: one scale per tensor, AccumFast (one tensor-core chain
	// over all of K), bf16 out.
	modeFP8Fast = "fp8-fast"
	// fp8-prom: one scale per tensor, AccumPromoted (a chain per 128
	// positions of K, each added in f32), bf16 out.
	modeFP8Prom = "fp8-prom"
	// fp8-row: a scale per row of A (M) and per row of the stored B (N),
	// AccumPromoted, bf16 out.
	modeFP8Row = "fp8-row"
	// fp8-block: DeepSeek-V3's (DeepGEMM's) scales, 1 × 128 of A along K
	// (M × ceil(K/128)) and 128 × 128 of B (ceil(N/128) × ceil(K/128)),
	// AccumPromoted, bf16 out.
	modeFP8Block = "fp8-block"
	// fp8-out8: as fp8-prom with an E4M3 D, scaled by ScaleD before the
	// conversion and its amax reported.
	modeFP8Out8 = "fp8-out8"
	// fp8-quant: QuantizeFP8 of a bf16 M×K activation (K the row) into
	// E4M3 with a scale per 1 × 128 group (N unused); no product.
	modeFP8Quant = "fp8-quant"
)

// cuBLASLt's fp8 product, the anchor of the engine's: E4M3 × E4M3 → bf16,
// one scale per tensor (A_SCALE_POINTER, B_SCALE_POINTER), the
// heuristic's first algorithm (bench/cublaslt: "fp8 products").
const (
	modeLtFP8     = "lt-fp8"      // cuBLASLt's default: partial sums promoted to f32 now and then
	modeLtFP8Fast = "lt-fp8-fast" // CUBLASLT_MATMUL_DESC_FAST_ACCUM = 1
)

// fp8Product is one of the engine's fp8 product modes.
type fp8Product struct {
	name    string
	scaling gemm.FP8Scaling
	accum   gemm.FP8Accum
	out     gemm.DType
	lt      string // the cuBLASLt mode its row is judged against
}

// fp8Products lists the engine's fp8 product modes in table order.
var fp8Products = []fp8Product{
	{modeFP8Fast, gemm.ScaleTensor, gemm.AccumFast, gemm.BF16, modeLtFP8Fast},
	{modeFP8Prom, gemm.ScaleTensor, gemm.AccumPromoted, gemm.BF16, modeLtFP8},
	{modeFP8Row, gemm.ScaleRow, gemm.AccumPromoted, gemm.BF16, modeLtFP8},
	{modeFP8Block, gemm.ScaleBlock, gemm.AccumPromoted, gemm.BF16, modeLtFP8},
	{modeFP8Out8, gemm.ScaleTensor, gemm.AccumPromoted, gemm.E4M3, modeLtFP8},
}

// fp8Modes lists the engine's fp8 modes in table order: the products,
// then the quantization.
var fp8Modes = append(fp8ProductNames(), modeFP8Quant)

// ltFP8Modes lists cuBLASLt's fp8 modes in table order.
var ltFP8Modes = []string{modeLtFP8, modeLtFP8Fast}

// fp8ProductNames lists fp8Products' names.
func fp8ProductNames() []string {
	out := make([]string, len(fp8Products))
	for i, m := range fp8Products {
		out[i] = m.name
	}
	return out
}

// lookupFP8 finds an engine fp8 product mode by name.
func lookupFP8(mode string) (fp8Product, bool) {
	for _, m := range fp8Products {
		if m.name == mode {
			return m, true
		}
	}
	return fp8Product{}, false
}

// isLtFP8 reports whether mode is one of cuBLASLt's fp8 modes.
func isLtFP8(mode string) bool { return mode == modeLtFP8 || mode == modeLtFP8Fast }

// isFP8Product reports whether mode runs an fp8 product (the engine's or
// cuBLASLt's): its compute ceiling is the fp8 tensor peak.
func isFP8Product(mode string) bool {
	_, ok := lookupFP8(mode)
	return ok || isLtFP8(mode)
}

// fp8Group is the "fp8" group: cuBLAS's bf16 product (default math: what
// the fp8 products replace), cuBLASLt's fp8 products, the engine's, and
// the quantization of the activation that feeds them.
func fp8Group() []string {
	return append(append([]string{modeDefault}, ltFP8Modes...), fp8Modes...)
}

// fp8ScaleCounts is how many f32 scales A and B take under scaling
// (gemm.FP8Args: 1 and 1; M and N; M × ceil(K/128) and ceil(N/128) ×
// ceil(K/128)).
func fp8ScaleCounts(s shape, scaling gemm.FP8Scaling) (a, b int64) {
	kb := int64((s.K + 127) / 128)
	switch scaling {
	case gemm.ScaleRow:
		return int64(s.M), int64(s.N)
	case gemm.ScaleBlock:
		return int64(s.M) * kb, int64((s.N+127)/128) * kb
	}
	return 1, 1
}

// fp8OperandBytes is one fp8 product's least traffic: A (M·K bytes) and
// B (N·K) read once, the scales read once, D (M·N of out) written once.
func fp8OperandBytes(s shape, scaling gemm.FP8Scaling, out gemm.DType) int64 {
	sa, sb := fp8ScaleCounts(s, scaling)
	m, k, n := int64(s.M), int64(s.K), int64(s.N)
	return m*k + n*k + 4*(sa+sb) + m*n*int64(out.Size())
}

// fp8QuantDesc is what fp8-quant runs on a shape: the bf16 activation
// M × K into E4M3, a scale per 1 × 128 group.
func fp8QuantDesc(s shape) gemm.FP8QuantizeDesc {
	return gemm.FP8QuantizeDesc{In: gemm.BF16, Out: gemm.E4M3, Rows: s.M, Cols: s.K, Groups: gemm.Group1x128}
}

// fp8QuantBytes is what one quantization moves: X read once (M·K·2
// bytes), Q (M·K) and the scales (4 each) written once.
func fp8QuantBytes(s shape) int64 {
	mk := int64(s.M) * int64(s.K)
	return mk*2 + mk + 4*int64(fp8QuantDesc(s).ScaleCount())
}

// fp8MovedBytes is movedBytes for the fp8 modes: a product's operand
// bytes (fp8-out8's also its ScaleD and amax; cuBLASLt's with one scale
// per tensor and a bf16 D), the quantization's.
func fp8MovedBytes(s shape, mode string) (int64, bool) {
	if m, ok := lookupFP8(mode); ok {
		b := fp8OperandBytes(s, m.scaling, m.out)
		if m.out.FP8() {
			b += 8
		}
		return b, true
	}
	switch {
	case isLtFP8(mode):
		return fp8OperandBytes(s, gemm.ScaleTensor, gemm.BF16), true
	case mode == modeFP8Quant:
		return fp8QuantBytes(s), true
	}
	return 0, false
}

// fp8Copies is how many copies of a launch's buffers the fp8 rows rotate
// over: enough that the launches' traffic (perLaunch bytes) spans three
// L2s, as setsFor asks of the dense sets, at most what budget bytes of
// copies of alloc bytes hold, and at least one.
func fp8Copies(perLaunch, alloc, l2, budget int64) int {
	n := setsFor(perLaunch, l2, 0)
	if budget > 0 && alloc > 0 && int64(n)*alloc > budget {
		n = max(1, int(budget/alloc))
	}
	return n
}

// The fp8 inputs are random valid codes: sign and mantissa uniform, the
// biased exponent uniform over eight values, 2⁻⁴ to 2³ (E4M3 fields 3 to
// 10, E5M2 11 to 18), so every code is a normal number of magnitude 1/16
// to 15: never NaN, never infinite, never saturated, and products of
// such sums stay well inside bf16 (and, with fp8-out8's ScaleD, inside
// E4M3 for the most part). One random byte makes one code.
const (
	fp8ExpLoE4M3 = 7 - 4  // bias 7
	fp8ExpLoE5M2 = 15 - 4 // bias 15
)

// fp8Code maps a random byte to a code of t (E4M3 or E5M2): bit 7 the
// sign, bits 3-5 the exponent's offset in the window, the low bits the
// mantissa.
func fp8Code(t gemm.DType, r byte) byte {
	sign, e := r&0x80, (r>>3)&7
	if t == gemm.E5M2 {
		return sign | (fp8ExpLoE5M2+e)<<2 | r&3
	}
	return sign | (fp8ExpLoE4M3+e)<<3 | r&7
}

// fillFP8Codes fills dst with random codes of t from PCG streams keyed by
// seed, stream and chunk index (fillChunk bytes a chunk), spread over the
// CPUs; the codes do not depend on how many workers ran.
func fillFP8Codes(dst []byte, t gemm.DType, seed, stream uint64) {
	chunks := (len(dst) + fillChunk - 1) / fillChunk
	next := make(chan int, chunks)
	for c := range chunks {
		next <- c
	}
	close(next)
	var wg sync.WaitGroup
	for w := 0; w < min(chunks, runtime.GOMAXPROCS(0)); w++ {
		wg.Go(func() {
			for c := range next {
				r := rand.New(rand.NewPCG(seed, mix(stream, uint64(c))))
				part := dst[c*fillChunk : min(len(dst), (c+1)*fillChunk)]
				for i := 0; i < len(part); i += 8 {
					v := r.Uint64()
					for j := i; j < min(len(part), i+8); j++ {
						part[j] = fp8Code(t, byte(v))
						v >>= 8
					}
				}
			}
		})
	}
	wg.Wait()
}

// fillFP8Scales fills dst with random scales in [0.5, 1.5): positive,
// around 1, as dequantization factors of operands quantized to use the
// format's range are (their product's magnitude then stays that of the
// codes').
func fillFP8Scales(dst []float32, seed, stream uint64) {
	r := rand.New(rand.NewPCG(seed, stream))
	for i := range dst {
		dst[i] = 0.5 + r.Float32()
	}
}

// upload copies host bytes to dst on the inputs' stream and waits (the
// host buffer is reused).
func (im *inputMaker) upload(dst cudaload.DevicePtr, src unsafe.Pointer, bytes uint64) error {
	if bytes == 0 {
		return nil
	}
	if err := im.stream.MemcpyHtoDAsync(dst, src, bytes); err != nil {
		return err
	}
	return im.stream.Synchronize()
}

// uploadF32 copies a few f32 values to dst and waits.
func (im *inputMaker) uploadF32(dst cudaload.DevicePtr, v []float32) error {
	if len(v) == 0 {
		return nil
	}
	return im.upload(dst, unsafe.Pointer(&v[0]), uint64(len(v))*4)
}

// perCopy is one operand of every copy: the first and the distance in
// bytes between them.
type perCopy struct {
	base   cudaload.DevicePtr
	stride uint64
}

// at is copy j's buffer.
func (p perCopy) at(j int) cudaload.DevicePtr {
	return p.base + cudaload.DevicePtr(uint64(j)*p.stride)
}

// fp8Operands are the copies an fp8 product rotates over: A (M×K codes),
// B (N×K codes), their scales and D (M×N of the output type).
type fp8Operands struct {
	copies           int
	a, b, sa, sb, d  perCopy
	perLaunch, alloc int64 // traffic of one launch, memory of one copy
}

// makeFP8Operands allocates the copies of s's operands under scaling with
// an output of outSize bytes an element, as many as fp8Copies allows, and
// fills A and B with random E4M3 codes and the scales with random values
// around 1 (the same numbers for every mode and library of a shape: the
// streams are keyed by shape, copy and operand only). D is left as
// allocated: every launch writes all of it.
func makeFP8Operands(bufs *deviceBuffers, im *inputMaker, s shape, scaling gemm.FP8Scaling, outSize int, l2, budget int64) (*fp8Operands, error) {
	m, k, n := uint64(s.M), uint64(s.K), uint64(s.N)
	ca, cb := fp8ScaleCounts(s, scaling)
	sizes := []uint64{m * k, n * k, 4 * uint64(ca), 4 * uint64(cb), m * n * uint64(outSize)}
	o := &fp8Operands{perLaunch: int64(sizes[0] + sizes[1] + sizes[2] + sizes[3] + sizes[4])}
	for _, sz := range sizes {
		o.alloc += int64((sz + matrixAlign - 1) &^ (matrixAlign - 1))
	}
	o.copies = fp8Copies(o.perLaunch, o.alloc, l2, budget)
	for i, dst := range []*perCopy{&o.a, &o.b, &o.sa, &o.sb, &o.d} {
		what := [...]string{"fp8 A", "fp8 B", "scales of A", "scales of B", "D"}[i]
		base, stride, err := bufs.perSet(what, o.copies, sizes[i])
		if err != nil {
			return nil, err
		}
		*dst = perCopy{base, stride}
	}
	codes := make([]byte, max(sizes[0], sizes[1]))
	scales := make([]float32, max(ca, cb))
	for j := range o.copies {
		for _, op := range []struct {
			dst   perCopy
			bytes uint64
			key   byte
		}{{o.a, sizes[0], 'p'}, {o.b, sizes[1], 'q'}} {
			c := codes[:op.bytes]
			fillFP8Codes(c, gemm.E4M3, im.seed, streamID(s, j, op.key))
			if err := im.upload(op.dst.at(j), unsafe.Pointer(&c[0]), op.bytes); err != nil {
				return nil, fmt.Errorf("fp8 operands: %w", err)
			}
		}
		for _, op := range []struct {
			dst   perCopy
			count int64
			key   byte
		}{{o.sa, ca, 's'}, {o.sb, cb, 't'}} {
			v := scales[:op.count]
			fillFP8Scales(v, im.seed, streamID(s, j, op.key))
			if err := im.uploadF32(op.dst.at(j), v); err != nil {
				return nil, fmt.Errorf("fp8 scales: %w", err)
			}
		}
	}
	return o, nil
}

// fp8Backend measures the engine's fp8 modes on the engine the engine
// backend made; its rows are "detgemm" rows. Every row rotates over
// copies of its own (fp8Copies): the fp8 operands are not the sets' bf16
// ones, and they are half as large.
type fp8Backend struct {
	eng    *gemm.Engine
	stream *cudaload.Stream
	im     *inputMaker // set by run
	// l2 is the device's L2 in bytes and budget the memory the copies may
	// take.
	l2, budget int64
}

// Name implements backend.
func (*fp8Backend) Name() string { return "detgemm" }

// Modes implements backend: the fp8 modes are filed under bf16.
func (*fp8Backend) Modes(dt dtype) []string {
	if dt != bf16 {
		return nil
	}
	return fp8Modes
}

// Close implements backend; the engine belongs to the engine backend.
func (*fp8Backend) Close() error { return nil }

// fp8Desc is the product an fp8 mode runs on s: E4M3 × E4M3, dense
// leading dimensions, no epilogue.
func fp8Desc(m fp8Product, s shape) gemm.FP8Desc {
	return gemm.FP8Desc{A: gemm.E4M3, B: gemm.E4M3, Out: m.out, M: s.M, N: s.N, K: s.K,
		Scaling: m.scaling, Accum: m.accum, Epilogue: gemm.Default}
}

// fp8OutScale is fp8-out8's ScaleD: 1/√K, which brings a sum of K random
// products of the codes (|D| about 25·√K before it) back to a few units,
// inside E4M3's range for the most part.
func fp8OutScale(K int) float32 { return float32(1 / math.Sqrt(float64(K))) }

// Prepare implements backend: the plan (products) and the copies, then
// one untimed launch, so a refusal or a fault is the row's error before
// any timing. A panic inside the engine becomes the row's error.
func (b *fp8Backend) Prepare(ctx *cudaload.Context, _ *cudaload.Stream, p problem, _ []inputSet) (_ runner, err error) {
	m, product := lookupFP8(p.Mode)
	if !product && p.Mode != modeFP8Quant {
		return nil, fmt.Errorf("detgemm has no fp8 mode %q", p.Mode)
	}
	if p.DType != bf16 {
		return nil, fmt.Errorf("%s: the fp8 rows are filed under bf16, not %s", p.Mode, p.DType)
	}
	r := &fp8Runner{b: b, bufs: deviceBuffers{ctx: ctx}}
	defer func() {
		if v := recover(); v != nil {
			err = fmt.Errorf("gemm panicked: %v", v)
		}
		if err != nil {
			err = errors.Join(err, r.Close())
		}
	}()
	s := p.Shape
	r.perLaunch, _ = fp8MovedBytes(s, p.Mode)
	if !product {
		if err := r.prepareQuant(s); err != nil {
			return nil, err
		}
	} else {
		if r.plan, err = b.eng.PlanFP8(fp8Desc(m, s)); err != nil {
			return nil, fmt.Errorf("PlanFP8: %w", err)
		}
		if r.ops, err = makeFP8Operands(&r.bufs, b.im, s, m.scaling, m.out.Size(), b.l2, b.budget); err != nil {
			return nil, err
		}
		r.copies = r.ops.copies
		if m.out.FP8() {
			if r.scaleD, err = r.bufs.alloc("ScaleD", 4); err != nil {
				return nil, err
			}
			if r.amax, err = r.bufs.alloc("Amax", 4); err != nil {
				return nil, err
			}
			if err := b.im.uploadF32(r.scaleD, []float32{fp8OutScale(s.K)}); err != nil {
				return nil, err
			}
		}
	}
	if err := r.Launch(0); err != nil {
		return nil, err
	}
	if err := b.stream.Synchronize(); err != nil {
		return nil, fmt.Errorf("the untimed first launch: %w", err)
	}
	return r, nil
}

// prepareQuant makes fp8-quant's copies: X (bf16 M×K, random in [-1, 1)
// from the inputs' generator), Q (E4M3 M×K) and the scales.
func (r *fp8Runner) prepareQuant(s shape) error {
	b := r.b
	r.quant = fp8QuantDesc(s)
	mk := uint64(s.M) * uint64(s.K)
	ns := uint64(r.quant.ScaleCount())
	alloc := int64(0)
	for _, sz := range []uint64{2 * mk, mk, 4 * ns} {
		alloc += int64((sz + matrixAlign - 1) &^ (matrixAlign - 1))
	}
	r.copies = fp8Copies(r.perLaunch, alloc, b.l2, b.budget)
	for _, op := range []struct {
		dst   *perCopy
		what  string
		bytes uint64
	}{{&r.x, "bf16 X", 2 * mk}, {&r.q, "fp8 Q", mk}, {&r.qs, "Q's scales", 4 * ns}} {
		base, stride, err := r.bufs.perSet(op.what, r.copies, op.bytes)
		if err != nil {
			return err
		}
		*op.dst = perCopy{base, stride}
	}
	return b.im.fillRandom(r.x.base, s, bf16, r.copies, mk, r.x.stride, 'x')
}

// fp8Runner launches one fp8 mode over its own copies (next is the one
// the next launch uses).
type fp8Runner struct {
	b            *fp8Backend
	bufs         deviceBuffers
	copies, next int
	// A product: the plan, its operands, and fp8-out8's ScaleD and Amax
	// (one each: 4 bytes).
	plan         *gemm.FP8Plan
	ops          *fp8Operands
	scaleD, amax cudaload.DevicePtr
	// The quantization (plan nil): its description and copies.
	quant    gemm.FP8QuantizeDesc
	x, q, qs perCopy
	// perLaunch is one launch's traffic (fp8MovedBytes).
	perLaunch int64
}

// rotation implements rotator: the copies and one launch's traffic.
func (r *fp8Runner) rotation() (int, int64) { return r.copies, r.perLaunch }

// Launch implements runner: the next copy (the input set i is not read:
// the fp8 rows have their own rotation). A panic inside the engine becomes
// an error.
func (r *fp8Runner) Launch(int) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = fmt.Errorf("gemm panicked: %v", v)
		}
	}()
	j := r.next
	r.next = (r.next + 1) % r.copies
	if r.plan == nil {
		return r.b.eng.QuantizeFP8(r.quant, gemm.FP8QuantizeArgs{X: r.x.at(j), Q: r.q.at(j), Scales: r.qs.at(j)})
	}
	o := r.ops
	return r.plan.Run(gemm.FP8Args{A: o.a.at(j), B: o.b.at(j), D: o.d.at(j), ScaleA: o.sa.at(j), ScaleB: o.sb.at(j),
		ScaleD: r.scaleD, Amax: r.amax})
}

// Close implements runner: the buffers Prepare made (a plan holds none).
// The stream is drained first: launches may still use them.
func (r *fp8Runner) Close() error {
	var err error
	if r.b.stream != nil {
		err = r.b.stream.Synchronize()
	}
	return errors.Join(err, r.bufs.free())
}
