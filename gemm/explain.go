package gemm

import (
	"fmt"
	"strings"

	"github.com/detgemm/detgemm/cudaload"
)

// Explanation is what the engine would run for one call, without running
// it: the plan (strategy, slabs, workspace) and every kernel launch in
// order. Engine.Explain returns it. It decides speed only: every kernel
// the dispatcher can pick gives the call the same bits.
type Explanation struct {
	Op       string // "Forward", "DW" or "DX"
	Tier     Tier
	In, Out  DType
	M, K, N  int      // the call's dimensions, as named in its Args
	Strategy Strategy // as Engine.Strategy reports it
	// Tile is the outputs one block of the main kernel computes, rows ×
	// columns ("128x128"; "4x256" for the one-launch rows kernel at four
	// rows a block).
	Tile string
	// Slabs is the plan's S: the reduction's slabs, each an ascending chain,
	// folded in a fixed order (1: one chain).
	Slabs int64
	// SlabsPerBlock is split-slab's G, the slabs one block computes (for
	// tiled with a split tail, the tail's G); 0 elsewhere.
	SlabsPerBlock int64
	// WorkspaceBytes is the workspace the call needs, as
	// Engine.WorkspaceBytes reports it.
	WorkspaceBytes uint64
	// Launches are the kernels the call enqueues, in stream order.
	Launches []Launch
}

// Launch is one kernel launch of a call.
type Launch struct {
	Kernel      string        // the CUDA entry point, e.g. "detgemm_simt_nn_f32_f32"
	Family      string        // its source, kernels/cuda/<Family>.cu
	Grid        cudaload.Dim3 // blocks
	Threads     uint32        // threads a block (one-dimensional blocks)
	SharedBytes uint32        // dynamic shared memory a block
}

// String reads "detgemm_fold_store_f32 (gemm_fold) grid (528,1,1) block
// 256 shared 0 B".
func (l Launch) String() string {
	return fmt.Sprintf("%s (%s) grid %v block %d shared %d B", l.Kernel, l.Family, l.Grid, l.Threads, l.SharedBytes)
}

// Kernels is the entry points of x.Launches, in order.
func (x Explanation) Kernels() []string {
	out := make([]string, len(x.Launches))
	for i, l := range x.Launches {
		out[i] = l.Kernel
	}
	return out
}

// String is a one-paragraph summary: the call, the plan, then one line a
// launch.
func (x Explanation) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s M=%d K=%d N=%d tier %v %v→%v: %v, tile %s, %d slab", x.Op, x.M, x.K, x.N, x.Tier, x.In, x.Out, x.Strategy, x.Tile, x.Slabs)
	if x.Slabs != 1 {
		b.WriteString("s")
	}
	if x.SlabsPerBlock > 0 {
		fmt.Fprintf(&b, " (%d a block)", x.SlabsPerBlock)
	}
	fmt.Fprintf(&b, ", workspace %d B", x.WorkspaceBytes)
	for i, l := range x.Launches {
		fmt.Fprintf(&b, "\n  %d. %v", i+1, l)
	}
	return b.String()
}

// Explain says what c would run on this engine, without launching anything
// or allocating: the strategy, the plan's slabs, the workspace and each
// kernel launch (entry point, grid, block, shared memory). It makes the
// decision the call itself makes — the same dispatcher, fed the same
// problem — so a call with these arguments on this engine runs exactly
// these launches.
//
// The pointers matter where set: alignment picks the load path of some
// kernels (16-byte copies or element-wise), so Explain validates them as
// the call does. With every pointer of c left zero it reads the tier,
// types and shape only and assumes buffers as MemAlloc returns them
// (256-byte aligned), like Strategy and WorkspaceBytes.
func (e *Engine) Explain(c Call) (Explanation, error) {
	set, err := pointersSet(c)
	if err != nil {
		return Explanation{}, err
	}
	p, err := c.build(set)
	if err != nil {
		return Explanation{}, err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	pl, err := e.choose(p)
	if err != nil {
		return Explanation{}, err
	}
	x := Explanation{Op: p.op, Tier: p.tier, In: p.in, Out: p.out, Strategy: pl.strategy, Slabs: pl.slabs,
		WorkspaceBytes: pl.ws + pl.ctrs}
	switch p.layout {
	case layoutNN:
		x.M, x.K, x.N = int(p.rows), int(p.red), int(p.cols)
	case layoutTN:
		x.M, x.K, x.N = int(p.red), int(p.rows), int(p.cols)
	default:
		x.M, x.K, x.N = int(p.rows), int(p.cols), int(p.red)
	}
	if p.tier == TierTensorCore {
		err = e.explainTC(&x, p)
	} else {
		err = e.explainIEEE(&x, p, pl)
	}
	if err != nil {
		return Explanation{}, err
	}
	return x, nil
}

// pointersSet reports whether c sets any device pointer; a nil *Args is an
// error, as a nil Call is.
func pointersSet(c Call) (bool, error) {
	nilArgs := func() (bool, error) {
		return false, argErr("Explain", "call", ErrNilPointer, "nil Call")
	}
	switch a := c.(type) {
	case nil:
		return nilArgs()
	case ForwardArgs:
		return a.X != 0 || a.W != 0 || a.Y != 0 || a.Bias != 0, nil
	case *ForwardArgs:
		if a == nil {
			return nilArgs()
		}
		return pointersSet(*a)
	case DWArgs:
		return a.X != 0 || a.DY != 0 || a.DW != 0, nil
	case *DWArgs:
		if a == nil {
			return nilArgs()
		}
		return pointersSet(*a)
	case DXArgs:
		return a.DY != 0 || a.W != 0 || a.DX != 0, nil
	case *DXArgs:
		if a == nil {
			return nilArgs()
		}
		return pointersSet(*a)
	}
	return true, nil
}

// tileName formats a block's outputs.
func tileName(rows, cols int64) string { return fmt.Sprintf("%dx%d", rows, cols) }

// explainIEEE follows run (launch.go) for the f32 and typed tiers: the
// same plan pl, the same rules for the rows paths and the tiled tail.
func (e *Engine) explainIEEE(x *Explanation, p problem, pl plan) error {
	add := func(name, family string, grid cudaload.Dim3, threads, shared uint32) {
		x.Launches = append(x.Launches, Launch{name, family, grid, threads, shared})
	}
	// Mirrors launchSlabs and launchFold.
	slabs := func(p problem, pl plan) {
		k := slabsKey{p.layout, p.in}
		name := k.name()
		if pl.width == narrowWidth {
			name = k.name64()
		}
		add(name, slabsFamily, cudaload.Dim3{X: uint32(ceilDiv(p.rows, tileRows)), Y: uint32(ceilDiv(p.cols, pl.width)), Z: uint32(pl.groups)}, slabsThreads, 0)
	}
	fold := func(p problem) {
		n := uint64(p.rows) * uint64(p.cols)
		add(foldKey{p.out, p.layout == layoutTN}.name(), foldFamily, cudaload.Dim3{X: foldBlocks(n, e.sms), Y: 1, Z: 1}, foldThreads, 0)
	}
	switch pl.strategy {
	case StrategySplitSlab:
		x.Tile, x.SlabsPerBlock = tileName(tileRows, pl.width), pl.perBlock
		slabs(p, pl)
		fold(p)
	case StrategyStream:
		k := streamKey{p.in, pl.sr}
		x.Tile = tileName(pl.sr, streamCols)
		add(k.name(), streamFamily, cudaload.Dim3{X: uint32(ceilDiv(p.cols, streamCols)), Y: uint32(ceilDiv(p.rows, pl.sr)), Z: 1}, streamThreads, k.sharedBytes())
	case StrategyRows:
		switch {
		case e.rowsTMA(p, pl.mr):
			mr := rowsTMAMR(p.rows)
			waves := rowsTMAWaves(p, e.sms)
			x.Tile = tileName(int64(mr), rowsTMACols)
			add(rowsTMAKey{p.layout, p.in, p.out, mr, waves}.name(), rowsTMAFamily,
				cudaload.Dim3{X: uint32(ceilDiv(p.cols, rowsTMACols)), Y: uint32(ceilDiv(p.rows, int64(mr))), Z: 1},
				rowsTMAThreads(p.in, mr, waves), rowsTMASharedBytes(p.in, mr, waves))
		case e.rowsOneLaunch(p, pl.mr):
			jt := rowsFusedCols(pl.mr)
			x.Tile = tileName(int64(pl.mr), jt)
			add(rowsFusedKey{p.layout, p.in, p.out, pl.mr}.name(), rowsFamily,
				cudaload.Dim3{X: uint32(ceilDiv(p.cols, jt)), Y: uint32(pl.slabs), Z: uint32(ceilDiv(p.rows, int64(pl.mr)))},
				uint32(rowsFusedThreads(pl.mr)), rowsFusedSharedBytes(p.in, pl.mr, p.layout == layoutNT))
		default:
			jt := int64(rowsThreads * pl.cn)
			x.Tile = tileName(int64(pl.mr), jt)
			add(rowsKey{p.layout, p.in, pl.mr}.name(), rowsFamily,
				cudaload.Dim3{X: uint32(ceilDiv(p.cols, jt)), Y: uint32(pl.slabs), Z: uint32(ceilDiv(p.rows, int64(pl.mr)))},
				rowsThreads, rowsSharedBytes(p.in, pl.mr, pl.cn))
			fold(p)
		}
	default:
		e.explainTiled(x, p, pl, add, slabs, fold)
	}
	return nil
}

// explainTiled mirrors launchTiled: one grid, or a head and a tail.
func (e *Engine) explainTiled(x *Explanation, p problem, pl plan, add func(string, string, cudaload.Dim3, uint32, uint32),
	slabs func(problem, plan), fold func(problem)) {
	k := kernelKey{p.layout, p.in, p.out}
	name, shared, regBlocks := k.simtName(), uint32(simtSharedBytes), simtRegBlocks
	if pl.width == narrowWidth {
		name, shared, regBlocks = k.simt64Name(), simt64SharedBytes, simt64RegBlocks
	}
	x.Tile = tileName(tileRows, pl.width)
	grid := func(p problem, ty int64) cudaload.Dim3 {
		return cudaload.Dim3{X: uint32(ceilDiv(p.rows, tileRows)), Y: uint32(ty), Z: 1}
	}
	tx, ty := ceilDiv(p.rows, tileRows), ceilDiv(p.cols, pl.width)
	if pl.tailRow > 0 {
		head, tail := p.split(cutRows, pl.tailRow)
		x.SlabsPerBlock = pl.tailG
		add(name, simtFamily, grid(head, ty), simtThreads, shared)
		tp := plan{strategy: StrategySplitSlab, slabs: pl.slabs, perBlock: pl.tailG,
			groups: ceilDiv(pl.slabs, pl.tailG), width: squareWidth}
		slabs(tail, tp)
		fold(tail)
		return
	}
	cut, kk := cutNone, int64(0)
	if e.loneShared > shared {
		sms := int64(e.sms)
		if e.force.tailSMs > 0 {
			sms = e.force.tailSMs
		}
		cut, kk = tiledTail(tx, ty, blocksPerSM(shared, regBlocks, e.smemPerSM), sms)
	}
	if cut == cutNone {
		add(name, simtFamily, grid(p, ty), simtThreads, shared)
		return
	}
	at, headTY, tailTY := kk*tileRows, ty, ty
	if cut == cutCols {
		at, headTY, tailTY = kk*pl.width, kk, ty-kk
	}
	head, tail := p.split(cut, at)
	add(name, simtFamily, grid(head, headTY), simtThreads, shared)
	add(name, simtFamily, grid(tail, tailTY), simtThreads, e.loneShared)
}

// explainTC follows launchTC (tc.go): chooseTCLaunch's kernel, then
// gemm_fold where the plan's slabs go to planes or the result to the
// workspace.
func (e *Engine) explainTC(x *Explanation, p problem) error {
	r, err := chooseTCLaunch(p, e.sms, e.tcShared, e.hasWG, e.tcForce)
	if err != nil {
		return fmt.Errorf("gemm.%s: %w", p.op, err)
	}
	k := r.k
	x.Slabs = r.slabs
	var l Launch
	switch {
	case isWG(k.tile):
		g := wgGeometries[k.tile]
		items := tcCeilDiv(p.rows, g.bm) * tcCeilDiv(p.cols, g.bn)
		if r.planes {
			items *= r.slabs
		}
		family := wgFamily
		if wgRunSum(k.tile) {
			family = wgSlabsFamily
		}
		x.Tile = tileName(g.bm, g.bn)
		l = Launch{k.name(), family, cudaload.Dim3{X: uint32(min(items, int64(max(e.sms, 1)))), Y: 1, Z: 1}, g.threads(), wgSharedBytes(k.tile)}
	case isTCDW(k.tile):
		g := tcDWGeometries[k.tile]
		x.Tile = tileName(g.bm, g.bn)
		l = Launch{k.name(), tcDWFamily, cudaload.Dim3{X: uint32(g.blocks(p.rows, p.cols)), Y: 1, Z: 1}, g.threads, tcDWSharedBytes(k.tile)}
	case tcRowsGeometries[k.tile].name != "":
		g := tcRowsGeometries[k.tile]
		name, family := k.name(), tcRowsFamily
		if g.tma {
			family = tcRowsTMAFamily
		}
		if e.fns.tcRowsOne[k] != nil && r.slabs <= 1 {
			name = k.oneSlabName()
		}
		x.Tile = tileName(g.mr, g.bn)
		l = Launch{name, family, cudaload.Dim3{X: uint32(g.blocks(p.rows, p.cols)), Y: 1, Z: 1}, g.threads(), tcRowsSharedBytes(k.tile, k.layout)}
	default:
		g := tcGeometries[k.tile]
		z := uint32(1)
		if r.planes {
			z = uint32(r.slabs)
		}
		x.Tile = tileName(g.bm, g.bn)
		l = Launch{k.name(), tcFamily, cudaload.Dim3{X: uint32(tcCeilDiv(p.rows, g.bm)), Y: uint32(tcCeilDiv(p.cols, g.bn)), Z: z}, g.threads, tcSharedBytes(k.tile, k.layout)}
	}
	x.Launches = append(x.Launches, l)
	if r.foldPlanes(p) > 0 {
		n := uint64(p.rows) * uint64(p.cols)
		x.Launches = append(x.Launches, Launch{foldKey{p.out, p.layout == layoutTN && r.planes}.name(), foldFamily,
			cudaload.Dim3{X: foldBlocks(n, e.sms), Y: 1, Z: 1}, foldThreads, 0})
	}
	return nil
}
