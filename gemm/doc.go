// Package gemm is detgemm's engine: deterministic, batch-invariant matrix
// products for the training triad over raw device pointers.
//
// # Operations
//
// All matrices are row-major and contiguous.
//
//	Forward:  Y[M,N]  = X[M,K] @ W[K,N] (+ bias[N])
//	DW:       dW[K,N] += X[M,K]ᵀ @ dY[M,N]    (f32 master buffer)
//	DX:       dX[M,K] = dY[M,N] @ W[K,N]ᵀ
//
// # Tiers
//
// The caller names the tier in every call; the engine never switches to
// another one. TierF32 takes f32 inputs and runs IEEE fmaf chains on CUDA
// cores. TierTyped takes bf16 or f16 inputs, widens them exactly to f32 and
// runs the very same plans, rounding once (to nearest even) at the store, so
// its bits equal "upcast, run the f32 tier, round". TierTensorCore takes
// bf16 or f16 inputs on tensor cores (see "The tensor-core plan"); it writes
// the input type or f32, and dW into the f32 master buffer.
//
// # The IEEE plan
//
// For one output element with reduction length R (K for Forward, N for DX,
// M for DW): the range [0, R) is cut into slabs of ref.SlabLen = 256; each
// slab is one ascending fmaf chain starting from +0; the slab results fold
// left to right — Forward and DX start from the first slab's result, DW
// from the value already in dW — then Forward adds the bias (only when one is
// given) and the value is rounded once to the output type. The plan depends
// on R alone: never on M, the GPU, the grid or pointer alignment. So a
// Forward or DX row has the same bits in a batch of 1 or of 100 000, and a
// CPU reproduces them exactly (package ref). For DW, splitting the batch into
// micro-batches at multiples of 256 rows, applied in order, gives the same
// bits as one call.
//
// # The tensor-core plan
//
// Per output element the reduction is cut into S slabs (S = 1, one chain,
// for most shapes; see below). Slab 0's accumulator starts at the bias
// (Forward with a bias), +0 (Forward without one, DX) or the value already
// in dW (DW), every later slab's at +0, and each takes its part of the
// reduction in ascending 16-wide steps of mma.sync.m16n8k16 (f32
// accumulation), the last step's missing terms zero-filled on both
// operands and no step issued wholly past the end. The slabs' results are
// added in ascending order in IEEE f32 (((p_0 + p_1) + p_2) + …), and
// Forward and DX round once, to nearest even, at a bf16/f16 store. Tensor
// cores add inside a step by their own rules (not IEEE: each addend is
// truncated to a grid set by the step's largest exponent, and the sum is
// truncated to f32), so the bits depend on the GPU architecture, and the
// CPU reproduces them from ref.TCModel: ref.Hopper is verified bit for bit
// on sm_90 against every kernel below, adversarial inputs
// included. The engine runs the tier on sm_80, sm_86 and sm_89 too, but
// there the CPU model (ref.Ampere, the published description) is not
// verified. Special values are part of the model, and the GPU tests compare
// them bit for bit like any other value: NaN, ±Inf and signed zeros in X,
// W and the bias of Forward, and in X, dY and the master of DW, under every
// kernel, give the model's IEEE results (a NaN operand, Inf·0 or
// infinities of both signs give the canonical NaN; otherwise an infinite
// addend wins); a step whose exact sum reaches 2^128 gives ±Inf on the GPU
// and in the model alike (not IEEE's round-toward-zero ±MaxFloat32); and
// the sign of a zero sum follows the model's IEEE rule. (On sm_90: the
// contract suite, TestContractEveryVariant, runs Forward, DX and DW with
// special inputs under every registered kernel variant;
// TestTCDWSpecialsAsModel under every dW kernel, and
// TestTCModelEdgeRulesOnGPU on the kernel the dispatcher picks for a small
// Forward.)
//
// The cut (ref.TCSlabs) is a function of the reduction length and the
// output's other dimension only: one slab unless the reduction is at least
// 8192 long and twice the other dimension, where a grid of a few rows
// would leave most SMs idle behind one long chain; then S =
// min(12288/other, R/3072) slabs of whole 256-term chunks (dX of
// 128×4096×11008: 3 slabs; bench/NOTES-engine.md, doc.go). So a Forward or DX row
// has the same bits in a batch of 1 or 100 000. DW's cut (ref.TCDWSlabs)
// depends on the batch: one slab below 1024 rows or for a master over 2^20
// elements, else S = min(2^21/(K·N), M/512). DW micro-batches split at
// multiples of 16 rows, applied in order, give the bits of one call where
// every call's plan has one slab.
// Accuracy against a float64 oracle at K = 4096 on N(0,1) inputs (measured
// norm-wise relative error): about 4.4e-6 with f32 output (the IEEE plan:
// 3e-7), 1.7e-3 with bf16 output, 2.1e-4 with f16 output.
//
// Kernels (gemm_tc): 128×256 (8 warps of 64×64; 16-byte loads only),
// 128×128 (8 warps of 64×32) and 64×64 (4 warps of 32×32) output tiles, each
// with a 16-byte cp.async load path (_vec: both operands 16-byte aligned,
// leading dimensions multiples of 8) and an element-wise one (_any, any
// alignment). The dispatcher takes _vec where it can, and the tile with the
// least modelled time on the GPU's SM count (tc.go's familyTC): so the tile
// may depend on M, and the load path on the pointers, because every kernel
// computes the same chain per element. One launch per call, and no
// workspace, where the plan has one slab; a cut plan runs one block per
// tile and slab, each slab's chain to an f32 plane of the workspace, and
// gemm_fold adds the planes in order (tc128's DW has not the registers for
// the slab offsets: tc64 takes a cut DW).
//
// On Hopper (the kernels built for sm_90a) a second family, gemm_wgmma,
// runs the same chain with warpgroup wgmma.m64nNk16 instructions fed by the
// bulk tensor copy engine (TMA): 128×256, 128×192, 128×128 and 192×192
// tiles, one TMA producer warpgroup and one consumer warpgroup per 64 rows,
// a persistent grid of at most one block per SM. Forward and DX with few
// rows take gemm_tc_rows instead (mma.sync, W streamed once, M ≤ 16), and on
// sm_90a gemm_tc_rows_tma (the same mma.sync chain fed by TMA, M ≤ 32).
// gemm_wgmma needs what TMA needs (16-byte aligned bases,
// leading dimensions that are multiples of 8, extents below 2^31); the
// dispatcher picks it, by the same time model, wherever it applies, and
// gemm_tc everywhere else. A cut plan takes gemm_wgmma's slab variants:
// on planes with a gemm_fold where the grid would leave SMs idle (128×128,
// f32 output), else for Forward and DX each block keeping its tile's
// running sum in registers (128×192, any output), and where that grid's
// last round would be short, its last rows on planes in a launch of their
// own (wgTail); a pinned 128×128, 128×192 or 128×256 slab tile keeps the
// running sums in the workspace between slabs (a 16-bit output then
// rounded by gemm_fold); the rows kernels fold a cut plan's slabs in
// registers. DW with at most 128 batch rows takes
// gemm_tc_dw_stream on every architecture and alignment: one pass over the
// f32 master in 64×128 tiles, each staged whole into shared memory while
// the few rows of X and dY arrive, the same mma.sync chain per element.
// The contract tests run against every tile of every family.
//
// # Strategies
//
// How a call is spread over the GPU is the dispatcher's choice (see
// Strategy), made from the operation, the shape and the GPU's
// multiprocessor count (and, for the load paths, the pointers' alignment).
// Each kernel family is described once, in its own file: the ops it
// serves, the rule for the shapes and alignments it fits, its cost, the
// configuration (tile, blocks a slab, path) it runs a call with, and its
// launch. The dispatcher is one loop over these descriptions, for the
// call's tier: it takes the family of least cost, a cost being first a
// class — the families that stream an operand once (rows, stream, and on
// sm_90a wgmma's 128×128 tile where its grid is a single round) are taken
// by their measured rule wherever they fit, before any tiled kernel — then
// the modelled time, then the order of registration. So for the IEEE tiers:
//
//   - rows (Forward and DX with M ≤ 32): one block per slab and run of
//     columns, W read once, each slab's partial written to the workspace,
//     then a fold kernel adds the partials in order and rounds (in the
//     same launch, by the last block of each run, where W is 16-byte
//     aligned). On sm_90a, calls of up to 16 rows whose operands suit TMA
//     may run gemm_rows_tma instead: one block computes every slab of 32
//     output columns, W streamed by TMA, and folds them in shared memory
//     in slab order — no workspace, no second pass;
//   - stream (DW with M ≤ 96): one kernel reads and writes the f32 master
//     once, each block copying its tile of dW to shared memory while it
//     runs the slab chains over M, then folding them onto it in order;
//     no workspace;
//   - split-slab (fewer 128×128 output tiles than twice the SM count, and
//     at least two slabs): the slabs of each tile spread over several
//     blocks, partials to the workspace, the same fold;
//   - tiled (everything else): one kernel, each block folding its tile's
//     slabs in place; a grid that ends in a short round (at most one block
//     per SM) runs that round as a second launch that holds every SM to
//     one block, so the hardware cannot double them up, or, for long
//     reductions, runs the rows after its last whole round split-slab.
//
// Engine.Explain tells, without launching, which of these a call runs:
// the kernels' entry points in order, their grids, blocks and shared
// memory, the plan's slabs and the workspace.
//
// Tiled and split-slab run 128×128 output tiles, or 128×64 ones (twice
// the blocks, three an SM) where the square grid underfills the GPU and a
// time model of the grid's quantisation says the narrow tile gains at
// least 5 %. Both widths run one loop (simt_tile.cuh), so the same chains.
//
// Every strategy computes each slab as the plan's one chain and folds the
// slabs by the plan's additions in the plan's order, so kernel selection
// never changes a bit of the output: the dispatcher may look at M and at
// the GPU precisely because the bits cannot. The tests run the whole
// contract suite once per strategy, and compare rows computed alone (rows
// kernel) with the same rows inside a batch of 8192 (tiled kernel).
//
// # Workspace and CUDA graphs
//
// The rows and split-slab strategies keep S = ceil(R/256) f32 partials of
// the output shape, S·rows·cols·4 bytes, and the one-launch rows kernel 4
// bytes of arrival counter per block column and row group; a tiled grid
// whose last rows run split-slab keeps those rows' partials. Tiled
// otherwise and stream need none. The IEEE dispatcher never picks a
// strategy whose partials would pass 512 MiB: such shapes run tiled. The
// tensor-core tier needs none where its plan has one slab; a cut plan
// needs S f32 planes of the output (DW: S-1), S planes of the rows of a
// split tail, or (pinned slab tiles) its tiles' running sums plus, for a
// 16-bit output, one plane. For Forward and DX that grows with
// M — S times the output's columns is at most 12288, so about 48 KiB an
// output row, whole tiles for running sums — and is not capped, as no
// other kernel could run the call; for DW it stays below 8 MiB.
// WorkspaceBytes and Explain answer per call.
// The engine owns one workspace, grown on demand and
// freed by Close. Presize allocates it ahead for given shapes, so calls of
// those shapes allocate nothing. A call needing more than is allocated
// allocates once, outside a graph capture; while the engine's stream is
// capturing it returns ErrWorkspace instead (an allocation would break the
// capture). So before capturing calls in a CUDA graph, Presize every shape
// the graph holds. A buffer the workspace outgrows stays allocated until
// Close, because a graph captured earlier may still use it.
//
// # Overlapped launches
//
// On sm_90 and newer every engine kernel is launched with programmatic
// dependent launch: its grid may be scheduled while the kernel ahead of it
// in the stream (the engine's or the caller's) still runs, and every thread
// waits for that kernel to finish, its writes visible, before it reads or
// writes global memory. Stream order holds as for any launch; only the
// launch gap is hidden (bench/NOTES-engine.md, doc.go). Graph capture records
// the same dependency.
//
// # Concurrency
//
// An Engine owns one stream. Its methods may be called from many goroutines:
// each call validates, then enqueues under the engine's lock and returns
// without waiting; Synchronize waits for everything queued. The workspace is
// used by one call at a time because all of them run in order on that
// stream.
package gemm
