package gemm

import (
	"fmt"
	"math"

	"github.com/detgemm/detgemm/cudaload"
	"github.com/detgemm/detgemm/gemm/ref"
)

// tcSlabs is the tensor-core plan's cut of p's reduction into S slabs of L
// terms (the last may be shorter): ref.TCSlabs for Forward and dX (a
// function of the reduction and the other output dimension, never M),
// ref.TCDWSlabs for dW. S = 1, L = red for most shapes.
func tcSlabs(p problem) (S, L int64) {
	var s, l int
	if p.layout == layoutTN {
		s, l = ref.TCDWSlabs(int(p.red), int(p.rows), int(p.cols))
	} else {
		s, l = ref.TCSlabs(int(p.red), int(p.cols))
	}
	return int64(s), int64(l)
}

// tcLaunch is how a tensor-core call runs: the kernel, the plan's slabs, and
// where they are folded.
type tcLaunch struct {
	k      tcKey
	slabs  int64
	slabL  int64
	planes bool // one block a tile and slab, each slab's chain to a partial plane, then gemm_fold
	runsum bool // gemm_wgmma: a block a tile, its slabs' running sum in the workspace (L2)
	// toWS: the kernel's result goes to the workspace as f32 (the slab
	// variants write f32 only), rounded to the output type by gemm_fold
	// as one plane: running sums (or a forced slab variant) with a 16-bit
	// output.
	toWS bool
	// one: the kernel's one-slab twin runs (gemm_tc_rows_tma's NAME_one,
	// built without the slab fold) where the plan has one slab.
	one bool
}

// foldPlanes is the number of workspace planes gemm_fold adds after the
// kernel: 0 for none (no fold).
func (r tcLaunch) foldPlanes(p problem) int64 {
	switch {
	case r.planes && p.layout == layoutTN:
		return r.slabs - 1
	case r.planes:
		return r.slabs
	case r.toWS:
		return 1
	}
	return 0
}

// wsMode is the ws_mode argument of the gemm_wgmma_slabs kernels (wgmma.cuh).
func (r tcLaunch) wsMode() int32 {
	switch {
	case r.planes:
		return 1 // WS_PLANES
	case r.runsum:
		return 2 // WS_RUNSUM
	}
	return 0
}

// runBytes is the running sums' part of the workspace: an f32 per element
// of every tile (wgmma.cuh's runsum_add), 0 without running sums.
func (r tcLaunch) runBytes(p problem) uint64 {
	if !r.runsum {
		return 0
	}
	g := wgGeometries[r.k.tile]
	return 4 * uint64(ceilDiv(p.rows, g.bm)*ceilDiv(p.cols, g.bn)) * uint64(g.bm*g.bn)
}

// wsBytes is the workspace: the running sums (runBytes), then planes of
// f32 outputs for gemm_fold (foldPlanes: every slab's on planes for
// Forward and dX, every slab's but the first for dW, which folds slab 0 in
// place; one where the last sum is rounded by gemm_fold). ok is false on
// overflow.
func (r tcLaunch) wsBytes(p problem) (uint64, bool) {
	n := uint64(r.foldPlanes(p))
	b := n * uint64(p.rows)
	if b/uint64(p.rows) != n {
		return 0, false
	}
	c := b * uint64(p.cols)
	if c/uint64(p.cols) != b || c > math.MaxUint64/8 {
		return 0, false
	}
	return r.runBytes(p) + 4*c, true
}

// chooseTCLaunch picks the kernel of a tensor-core call (chooseTCKernel, then
// tcRowsOnHopper) and how it runs the plan's slabs. Every kernel gives each
// element the plan's bits, so this decides speed only.
//
//   - One slab: the kernel as chosen.
//   - The rows kernels (gemm_tc_rows, gemm_tc_rows_tma): the slabs fold in
//     registers (four or eight more a thread).
//   - gemm_wgmma: the slab variants of 128×128, 128×192 and 128×256
//     (wgSlabTiles, gemm_wgmma_slabs.cu; the plain kernels run one slab, and the variants
//     write f32 only). Where planes are faster (wgPlanesFaster: the
//     128×128 grid leaves SMs idle, the shapes the cut is for), 128×128,
//     one block a tile and slab, partials to planes and gemm_fold.
//     Otherwise each block keeps the running sums of its tile's slabs in
//     the workspace (in L2 between slabs), on the variant of least
//     modelled time; a 16-bit output is then rounded by gemm_fold from
//     f32 in the workspace. dW takes planes (its cut needs a small
//     master). A forced 128×128, 128×192 or 128×256 takes its slab
//     variant, running sums where its grid fills the GPU and planes
//     otherwise; 192×192 is refused.
//   - gemm_tc: planes. tc128's dW has no slabs (its 128-register cap),
//     so the dispatcher takes tc64 there, and a forced tc128 is refused.
//   - gemm_tc_dw_stream takes only dW calls of at most 128 batch rows,
//     whose plan has one slab (ref.TCDWSlabs cuts from 1024).
func chooseTCLaunch(p problem, sms int, maxShared uint32, hasWG bool, f tcForce) (tcLaunch, error) {
	k, err := chooseTCKernel(p, sms, maxShared, hasWG, f)
	if err == nil {
		k, err = tcRowsOnHopper(k, p, hasWG, maxShared, f)
	}
	if err != nil {
		return tcLaunch{}, err
	}
	S, L := tcSlabs(p)
	r := tcLaunch{k: k, slabs: S, slabL: L}
	if S == 1 {
		if wgRunSum(k.tile) { // a slab variant forced: it writes f32 only
			r.k.out, r.toWS = F32, p.out != F32
		}
		return r, nil
	}
	forced := f != (tcForce{})
	switch {
	case isTCDW(k.tile):
		return tcLaunch{}, fmt.Errorf("%w: %v runs one slab; this dW's plan has %d", errTCKernel, k.tile, S)
	case tcRowsGeometries[k.tile].name != "":
		return r, nil
	case isWG(k.tile):
		n := int64(max(sms, 1))
		tiles := func(t tcTile) int64 {
			g := wgGeometries[t]
			return ceilDiv(p.rows, g.bm) * ceilDiv(p.cols, g.bn)
		}
		switch {
		case forced:
			t, ok := wgSlabTiles[k.tile]
			if !ok && !wgRunSum(k.tile) {
				return tcLaunch{}, fmt.Errorf("%w: %v runs one slab; this call's plan has %d", errTCKernel, k.tile, S)
			}
			if ok {
				r.k.tile = t
			}
			r.runsum = p.layout != layoutTN && tiles(r.k.tile) >= n
		case wgPlanesFaster(tiles(tcTileWG128x128), S, n):
			r.k.tile = tcTileWG128x128S
		default:
			r.runsum = p.layout != layoutTN
			best := 0.0
			for _, t := range []tcTile{tcTileWG128x256S, tcTileWG128x192S, tcTileWG128x128S} {
				if c := wgCost(t, p, sms); best == 0 || c < best {
					r.k.tile, best = t, c
				}
			}
		}
		r.planes = !r.runsum
		r.k.out = F32
		r.toWS = r.runsum && p.out != F32
	default:
		if k.tile == tcTile128 && p.layout == layoutTN {
			if forced {
				return tcLaunch{}, fmt.Errorf("%w: tc128's dW runs one slab; this call's plan has %d", errTCKernel, S)
			}
			r.k.tile = tcTile64
		}
		r.planes = true
	}
	if r.planes {
		r.k.out = F32 // the partials; gemm_fold rounds to p.out
	}
	if _, ok := r.wsBytes(p); !ok {
		return tcLaunch{}, fmt.Errorf("%w: %d slabs of %d×%d f32 partials overflow 64 bits", ErrTooLarge, S, p.rows, p.cols)
	}
	return r, nil
}

// wgRunSum reports whether wgmma tile t is a slab variant (Tile::SLABS,
// which keep running sums: Tile::RUNSUM).
func wgRunSum(t tcTile) bool {
	return t == tcTileWG128x128S || t == tcTileWG128x192S || t == tcTileWG128x256S
}

// wgPlanesFaster reports whether a grid of tiles 128×128 tiles runs an
// S-slab plan faster on planes (tiles·S blocks of a slab each, rounds of
// 1/S the work) than as running sums (tiles blocks): by the rounds of the
// busiest SM, the planes paying for their traffic about a quarter of a
// tile's time per tile an SM (S planes written and read against a
// reduction of several thousand steps). 32 tiles of 3 slabs on 132 SMs:
// 0.33 + 0.06 against 1, planes; 128 tiles: 1 + 0.24 against 1, running
// sums.
func wgPlanesFaster(tiles, S, sms int64) bool {
	planes := float64(ceilDiv(tiles*S, sms))/float64(S) + 0.25*float64(tiles)/float64(sms)
	return planes < float64(ceilDiv(tiles, sms))
}

// tcFold adds a planes run's partials in order: Forward and dX store
// p_0 + p_1 + … (slab 0 started at the bias) rounded to the output type;
// dW adds the planes of slabs 1… to the master, where slab 0 left its
// chain from the old value.
func (l launcher) tcFold(p problem, r tcLaunch) error {
	acc := p.layout == layoutTN && r.planes
	id := kernelIndex.fold[foldKey{p.out, acc}]
	if err := l.need(p, id); err != nil {
		return err
	}
	planes := r.foldPlanes(p)
	n := uint64(p.rows) * uint64(p.cols)
	l.e.args.Reset().
		Ptr(l.e.ws.ptr + cudaload.DevicePtr(r.runBytes(p))).Ptr(cudaload.DevicePtr(p.c)).Ptr(0).
		Uint64(n).Uint64(uint64(p.cols)).Uint64(uint64(planes))
	return l.launch(p, id, cudaload.Dim3{X: foldBlocks(n, l.e.sms), Y: 1, Z: 1}, foldThreads, 0, 1, 1)
}
