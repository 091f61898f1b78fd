package gemm

import (
	"fmt"
	"math"

	"github.com/detgemm/detgemm/cudaload"
)

// tcDWFamily is the tensor-core tier's dW for short reductions
// (kernels/cuda/gemm_tc_dw_stream.cu): one pass over the f32 master, each
// block's master tile requested first as whole rows into shared memory, X
// and dY staged in chunks of 32 rows while it flies. Its kernels run
// gemm_tc's chain per element, so the dispatcher may send any dW call to
// either family.
const tcDWFamily = "gemm_tc_dw_stream"

// The tile of gemm_tc_dw_stream.cu, numbered apart from the other
// families': 64 rows of dW × 128 columns, 8 warps of 16×64, three ring
// slots. (32×256 and 128×128 tiles and bulk copies of the master were
// slower: bench/NOTES-tcdw.md.)
const tcTileDW64 tcTile = 48

// tcDWIDs is gemm_tc_dw_stream's lookup table, from the entry
// descriptions.
var tcDWIDs = indexOf(tcKeyIn(tcDWGeometries), "tcdw")

// tcDWGeometry is a gemm_tc_dw_stream tile: bm rows × bn columns of dW per
// block of `threads`, a ring `stages` deep.
type tcDWGeometry struct {
	name    string
	bm, bn  int64
	stages  int64
	threads uint32
}

var tcDWGeometries = map[tcTile]tcDWGeometry{
	tcTileDW64: {"tcdw64", 64, 128, 3, 256},
}

// tcDWTiles lists the stream tiles.
var tcDWTiles = []tcTile{tcTileDW64}

func isTCDW(t tcTile) bool { _, ok := tcDWGeometries[t]; return ok }

// Staging constants of gemm_tc_dw_stream.cu: rows of M per ring slot and
// floats of padding per staged master row.
const (
	tcDWBR   = 32
	tcDWCPad = 8
)

// tcDWSharedBytes is gemm_tc_dw_stream.cu's Tile::SMEM: the master tile
// (bm rows of bn floats, each padded by tcDWCPad) and the ring's slots of
// tcDWBR rows of X (bm wide) and dY (bn wide), each row padded by tcPad
// halves.
func tcDWSharedBytes(t tcTile) uint32 {
	g := tcDWGeometries[t]
	return uint32(g.bm*(g.bn+tcDWCPad)*4 + g.stages*tcDWBR*(g.bm+tcPad+g.bn+tcPad)*2)
}

// blocks is the one-dimensional grid: row tiles × column tiles.
func (g tcDWGeometry) blocks(rows, cols int64) int64 {
	return ceilDiv(rows, g.bm) * ceilDiv(cols, g.bn)
}

// tcDWVecOK reports whether the _vec kernels can run p: tcVecOK for X and
// dY, and 16-byte pieces of master rows (dW 16-byte aligned, ldc and N
// multiples of 4).
func tcDWVecOK(p problem) bool {
	return tcVecOK(p) && p.c%16 == 0 && p.ldc%4 == 0 && p.cols%4 == 0
}

// tcDWUsable reports whether stream tile t can run p: dW only, a grid
// within grid.x, shared memory within the GPU's block.
func tcDWUsable(t tcTile, p problem, maxShared uint32) bool {
	g, ok := tcDWGeometries[t]
	return ok && p.layout == layoutTN && g.blocks(p.rows, p.cols) <= math.MaxInt32 && tcDWSharedBytes(t) <= maxShared
}

// tcDWMaxRed is the longest reduction (dW's batch rows M) the family
// takes by rule.
const tcDWMaxRed = 128

// familyTCDW describes gemm_tc_dw_stream: a dW call whose reduction is at
// most tcDWMaxRed takes tcdw64, on the 16-byte path where tcDWVecOK allows
// and the element path otherwise, before every other kernel. The stream
// beats the fastest gemm_tc or gemm_wgmma tile up to 128 batch rows on
// both paths, and loses to gemm_wgmma from 256; the rule is one limit for
// every GPU, since neither the element path beyond 128 nor an older GPU
// was timed (bench/NOTES-tcdw.md; bench/NOTES-engine.md, tc_dw_stream.go).
// A filter naming a load path only leaves it out (gemm_tc's choice); one
// pinning tcdw64 takes it for dW of any length.
var familyTCDW = &family{
	name:    "gemm_tc_dw_stream",
	tc:      true,
	layouts: layoutsOf(layoutTN),
	class:   classRule,
	admits:  func(f filter) bool { return f.tc == (tcForce{}) || isTCDW(f.tc.tile) },
	plan: func(d *device, p problem, f filter) (pl plan, c cost, ok bool, err error) {
		t := f.tc.tile
		if t == 0 {
			if p.red > tcDWMaxRed || !tcDWUsable(tcTileDW64, p, d.tcShared) {
				return pl, cost{}, false, nil
			}
			t = tcTileDW64
		}
		vec, err := tcPathOf(tcDWVecOK(p), f.tc)
		if err != nil {
			return pl, cost{}, false, err
		}
		if !tcDWUsable(t, p, d.tcShared) {
			return pl, cost{}, false, fmt.Errorf("%w: %v runs dW only, within grid.x and the block's shared memory (%d×%d outputs)", errTCKernel, t, p.rows, p.cols)
		}
		pl.tc = tcLaunch{k: tcKey{t, p.layout, p.in, p.out, vec}}
		return pl, ruleCost, true, nil
	},
	// One slab only: ref.TCDWSlabs cuts dW's reduction from 1024 rows, so
	// only a filter pinning the stream reaches a cut plan, and is refused.
	finish: func(_ *device, p problem, _ filter, pl plan) (plan, error) {
		tcCut(&p, &pl)
		if pl.tc.slabs > 1 {
			return pl, fmt.Errorf("%w: %v runs one slab; this dW's plan has %d", errTCKernel, pl.tc.k.tile, pl.tc.slabs)
		}
		return pl, tcSettle(&p, &pl)
	},
	launch: func(l launcher, p problem, pl plan) error { return l.tcDW(&p, pl.tc.k) },
}

// tcDW enqueues a gemm_tc_dw_stream kernel (gemm_tc's arguments): a
// one-dimensional grid of its tiles.
func (l launcher) tcDW(p *problem, k tcKey) error {
	id := tcDWIDs[k]
	if err := l.need(p, id); err != nil {
		return err
	}
	l.tcArgs(p)
	g := tcDWGeometries[k.tile]
	grid := cudaload.Dim3{X: uint32(g.blocks(p.rows, p.cols)), Y: 1, Z: 1}
	return l.launch(p, id, grid, g.threads, tcDWSharedBytes(k.tile), g.bm, g.bn)
}

func (g tcDWGeometry) tileName() string { return g.name }
