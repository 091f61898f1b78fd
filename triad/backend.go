package triad

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"math"

	"github.com/detgemm/detgemm/gemm"
)

// Backend runs the triad's operations: the GPU (the engine and the triad
// kernels) or the CPU (gemm/ref and Go loops). Both produce identical bits
// for the f32 and typed tiers; every operation's order is documented in the
// package comment. The interface is sealed (its operations are
// unexported); NewCPU and NewGPU make the two implementations.
//
// A Backend is not safe for concurrent use. On the GPU, operations are
// queued on one stream and run in order; Read and Synchronize wait.
type Backend interface {
	// Name is "cpu" or "gpu".
	Name() string
	// Alloc returns a zeroed rows×cols tensor of d.
	Alloc(d DType, rows, cols int) (*Tensor, error)
	// Write stores values into t (len(values) == t.Len()), each rounded
	// once to nearest even for a 16-bit t.
	Write(t *Tensor, values []float32) error
	// Read waits for queued work and returns t's values, widened exactly
	// to float32 for a 16-bit t.
	Read(t *Tensor) ([]float32, error)
	// Synchronize waits for queued work and reports its errors.
	Synchronize() error
	// Close frees every tensor the backend allocated and its resources.
	Close() error

	ops
}

// ops are the operations Linear and MLP build on; shapes and dtypes are
// validated by the callers.
type ops interface {
	free(t *Tensor) error
	allocMask(rows, cols int) (*Tensor, error) // a zeroed ReLU mask, one byte per element
	readRaw(t *Tensor) ([]float32, []uint16, error)
	zero(t *Tensor) error
	forward(tier gemm.Tier, x, w, b, y *Tensor) error // y = x·w (+ b), b may be nil
	dw(tier gemm.Tier, x, dy, dw *Tensor) error       // dw += xᵀ·dy
	dx(tier gemm.Tier, dy, w, dx *Tensor) error       // dx = dy·wᵀ
	biasGrad(dy, db *Tensor) error                    // db += Σ_rows dy
	// forwardAct is y = act(x·w + b) fused (forwardActDesc), writing aux:
	// the ReLU mask of y, or the GELU pre-activation (of y's dtype). For a
	// gated act, x·w + b is 2·width wide (blocks of 8 of a and b), y the
	// width of a·act(b), and aux the whole pre-activation.
	forwardAct(tier gemm.Tier, act Act, x, w, b, y, aux *Tensor) error
	// dxAct is dx = act′(dy·wᵀ) fused (dxActDesc), from the forward's aux,
	// and db += Σ_rows dx. For a gated act, dx is the 2·width gradient of
	// the pre-activation (the layout of aux) and db must be nil: the gated
	// epilogues sum no bias gradient.
	dxAct(tier gemm.Tier, act Act, dy, w, aux, dx, db *Tensor) error
	// relu and reluGrad are ReLU and its gradient as separate passes: the
	// MLP fuses them into its products, and the fused ReLU is tested to
	// give exactly their bits.
	relu(x, y *Tensor) error
	reluGrad(h, dy, dx *Tensor) error
	mseLoss(y, t, loss *Tensor) error // loss[0] = mse, loss[1] += mse
	mseGrad(y, t, dy *Tensor) error   // dy = (2/n)·(y − t)
	sgd(w, v, g, work *Tensor, lr, mu float32) error
	// The 2:4 sparse layers' operations (LinearConfig.Sparse24; sparse24.go).
	allocWords(rows, cols int) (*Tensor, error) // zeroed 32-bit words: 2:4 metadata
	writeWords(t *Tensor, words []uint32) error
	readWords(t *Tensor) ([]uint32, error)
	// check24 refuses what the backend cannot run: a sparse forward of a
	// K×N weight with activations of d.
	check24(d DType, k, n int) error
	// forward24 is y = ep(x·W (+ b)) on the sparse tensor cores, W given
	// compressed (values [N, K/2] of x's dtype and meta [N, ceil(K/32)]
	// words), aux as ep says (nil for none).
	forward24(ep gemm.Epilogue, x, values, meta, b, y, aux *Tensor) error
	// compress24 prunes the 16-bit work [K, N] by magnitude and compresses
	// it into values and meta, leaving work unchanged (PruneCompress24).
	compress24(work, values, meta *Tensor) error
	// mask24 sets to +0 every element of w [K, N] at a row meta does not
	// keep (Mask24).
	mask24(w, meta *Tensor) error
	// The fp8 layers' operations (LinearConfig.FP8; fp8.go).
	allocFP8(d DType, rows, cols int) (*Tensor, error) // zeroed codes of E4M3 or E5M2, one byte each
	// checkFP8 refuses what the backend cannot run: the fp8 products of a
	// K×N weight with activations of d.
	checkFP8(d DType, k, n int) error
	// quantizeFP8 is q = x (or xᵀ with transpose) of q's fp8 type, a scale
	// per row of q into scales (QuantizeFP8, GroupRow).
	quantizeFP8(x *Tensor, transpose bool, q, scales *Tensor) error
	// fp8Matmul is d[M,N] = ep(a[M,K]·b[N,K]ᵀ (+ bias)) on the fp8 tensor
	// cores, a and b with a scale per row (sa [M], sb [N]), promoted
	// accumulation (fp8DescOf); bias is read only by a Bias epilogue.
	fp8Matmul(ep gemm.Epilogue, a, sa, b, sb, bias, d *Tensor) error
	// geluGrad is dx = RNE(dy·GeluGrad32(h)) elementwise, h, dy and dx of
	// one 16-bit type and shape; ones (every element 1) and spare (written)
	// are contiguous scratch of that shape and type.
	geluGrad(h, dy, dx, ones, spare *Tensor) error
	// capture records fn as a graph, after preparing work (the engine
	// products fn makes): presizing the workspace of its calls and planning
	// its Matmuls, since nothing may be allocated while capturing.
	capture(work []product, fn func() error) (replayer, error)
}

// replayer is a captured sequence of work (a CUDA graph).
type replayer interface {
	replay() error
	close() error
}

// Digest waits for queued work and returns the SHA-256, in lowercase hex,
// of the tensors' bits in order: 4 little-endian bytes per f32 element (its
// IEEE pattern), 2 per bf16 or f16 element. One tensor's digest equals
// ref.Digest of its bits.
func Digest(be Backend, ts ...*Tensor) (string, error) {
	h := sha256.New()
	var buf []byte
	for _, t := range ts {
		if err := check("Digest", "tensor", be, t, 0, -1, -1); err != nil {
			return "", err
		}
		f, u, err := be.readRaw(t)
		if err != nil {
			return "", err
		}
		buf = buf[:0]
		for _, v := range f {
			buf = binary.LittleEndian.AppendUint32(buf, math.Float32bits(v))
		}
		for _, v := range u {
			buf = binary.LittleEndian.AppendUint16(buf, v)
		}
		h.Write(buf)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// widen returns raw storage as float32 values, exactly (16-bit elements
// widen; f32 storage is returned as is).
func widen(d DType, f []float32, u []uint16) []float32 {
	if d == F32 {
		return f
	}
	out := make([]float32, len(u))
	for i, h := range u {
		out[i] = d.ToF32(h)
	}
	return out
}
