package gemm

import (
	"math"

	"github.com/detgemm/detgemm/cudaload"
	"github.com/detgemm/detgemm/gemm/internal/entries"
)

// mmGated is a plan of a gated epilogue (docs/contract.md, "Gated
// epilogues"): the product as the Default (or Bias) epilogue with an f32
// output, onto a plane of the workspace, in rounds of rows; after each
// round the gated kernel reads the plane (the pre-activation v, or dy)
// and writes D (and the forward's aux). The product's f32 output is the
// request's v exactly, so the bits are the contract's by construction.
type mmGated struct {
	gate     Gate
	backward bool
	inner    [2]mmPlan // a whole round's rows, the last round's
	// The two-kernel path's workspace and counters, for a fused plan's
	// Run with operands the TMA cannot stage.
	fallbackWS, fallbackCtr uint64
}

// gatedFusable reports whether the fused wgmma kernel runs p: wgFusable's
// conditions (one slab, operand rows that can be 16-byte aligned, ...)
// and a kernel for the gate, layout and types.
func (e *Engine) gatedFusable(p *mmPlan) bool {
	d := p.d
	if d.Out != d.In {
		return false
	}
	return e.wgFusable(p)
}

// gatedFusedMinRounds is the rounds of fused tiles (tiles over SMs) from
// which a gated request takes the fused kernel without being asked. The
// fused kernel writes no f32 plane, but it has one tile (128×256) where
// Forward's kernels choose among several for the grid, and its epilogue
// runs while the tile's tensor cores wait. It was faster than the product
// and the gated kernel for every gate and direction measured, at
// 4096×4096×22016 and ×11008: 21 and 10 rounds on 132 SMs
// (bench/NOTES-matmul.md, "The fused kernels' epilogues branch-free").
// Smaller grids keep the two kernels, where the product's own choice of
// tile weighs more (measured only on the plain activations, whose fused
// kernel lost at 1.5 and 3 rounds).
const gatedFusedMinRounds = 10

// gatedPrefersFused reports whether the engine, left to choose, runs the
// gated plan p as the fused kernel.
func (e *Engine) gatedPrefersFused(p *mmPlan) bool {
	g := wgGeometries[mmDefaultWGTile]
	tiles := ceilDiv(int64(p.d.M), int64(g.bm)) * ceilDiv(int64(p.d.N), int64(g.bn))
	return !e.mmUnfused && e.sms > 0 && tiles >= gatedFusedMinRounds*int64(e.sms)
}

// gatedEpi splits a gated epilogue into its gate, direction and operands
// (ref's order: each gate's forward four are plain, Bias, Aux, AuxBias).
func gatedEpi(ep Epilogue) (g Gate, backward, bias, aux bool) {
	g = ep.Gate()
	if g == 0 {
		return 0, false, false, false
	}
	if ep.GatedBackward() {
		return g, true, false, true
	}
	k := int(ep-GatedGLU) % 4
	return g, false, k == 1 || k == 3, k >= 2
}

// gatedSpec is a gated epilogue's operands in mmSpec's terms (act unused).
func gatedSpec(ep Epilogue) mmSpec {
	_, bwd, bias, aux := gatedEpi(ep)
	return mmSpec{bias: bias, auxOut: aux && !bwd, auxIn: bwd}
}

// gatedCols is D's and the aux's width for a gated epilogue on a product
// N wide: the forward writes N/2 outputs (and the N pre-activations), the
// backward 2N gradients (reading the 2N pre-activations).
func gatedCols(ep Epilogue, N int) (dCols, auxCols int) {
	if _, bwd, _, _ := gatedEpi(ep); bwd {
		return 2 * N, 2 * N
	}
	return N / 2, N
}

// planGated validates a gated request and plans it (d's tier and types
// already checked).
func (e *Engine) planGated(d MatmulDesc) (mmPlan, error) {
	const op = "Matmul"
	g, bwd, bias, aux := gatedEpi(d.Epilogue)
	if err := checkDims(op, "M", d.M, "N", d.N, "K", d.K); err != nil {
		return mmPlan{}, err
	}
	if math.IsNaN(float64(d.Alpha)) || math.IsInf(float64(d.Alpha), 0) {
		return mmPlan{}, argErr(op, "Alpha", ErrDimension, "alpha %g must be finite", d.Alpha)
	}
	switch {
	case d.Beta != 0:
		return mmPlan{}, argErr(op, "Beta", ErrOperand, "%g: %v takes no C (beta must be 0)", d.Beta, d.Epilogue)
	case d.ReduceOverBatch:
		return mmPlan{}, argErr(op, "ReduceOverBatch", ErrEpilogue, "%v is not for a weight gradient", d.Epilogue)
	case !bwd && d.N%16 != 0:
		return mmPlan{}, argErr(op, "N", ErrDimension, "%d: %v pairs 8-column blocks of a and b, so N must be a multiple of 16", d.N, d.Epilogue)
	case bwd && d.N%8 != 0:
		return mmPlan{}, argErr(op, "N", ErrDimension, "%d: %v writes 8-column blocks of da and db, so N must be a multiple of 8", d.N, d.Epilogue)
	}
	aRows, aCols, bRows, bCols := d.stored()
	dCols, auxCols := gatedCols(d.Epilogue, d.N)
	var err error
	for _, x := range []struct {
		arg        string
		ld         *int
		rows, cols int
		used       bool
	}{{"LDA", &d.LDA, aRows, aCols, true}, {"LDB", &d.LDB, bRows, bCols, true}, {"LDC", &d.LDC, d.M, d.N, false},
		{"LDD", &d.LDD, d.M, dCols, true}, {"LDAux", &d.LDAux, d.M, auxCols, aux}} {
		if !x.used {
			*x.ld = x.cols
			continue
		}
		if *x.ld, err = mmResolveLD(x.arg, *x.ld, x.rows, x.cols); err != nil {
			return mmPlan{}, err
		}
	}
	p := mmPlan{d: d, spec: gatedSpec(d.Epilogue), gated: &mmGated{gate: g, backward: bwd}}
	p.spec.act = entries.ActGate + int(g)
	if bwd {
		p.spec.act = entries.ActDGate + int(g)
	}
	M, N := int64(d.M), int64(d.N)
	p.chunk = mmRoundRows(M, uint64(N)*4)
	inner := d
	inner.Out, inner.Epilogue, inner.LDC, inner.LDD, inner.LDAux = F32, Default, 0, 0, 0
	if bias {
		inner.Epilogue = Bias
	}
	var op64 uint64
	for i, rows := range []int64{p.chunk, M % p.chunk} {
		if rows == 0 {
			continue
		}
		in := inner
		in.M = int(rows)
		ip, err := e.newMatmulPlan(in)
		if err != nil {
			return mmPlan{}, err
		}
		p.gated.inner[i] = ip
		op64, p.ctrBytes = max(op64, ip.wsBytes), max(p.ctrBytes, ip.ctrBytes)
	}
	first := &p.gated.inner[0]
	p.planeOff = (op64 + 255) &^ 255
	p.wsBytes = p.planeOff + uint64(p.chunk)*uint64(N)*4
	p.slabs = first.slabs
	p.precision = first.precision
	if e.gatedFusable(&p) && (e.mmForce != 0 || e.gatedPrefersFused(&p)) {
		// One kernel: the fused wgmma tile, on grids of several rounds
		// (gatedPrefersFused) or when DETGEMM_MATMUL_FUSED asks for it. A
		// Run whose operands the TMA cannot stage takes the two-kernel
		// path, allocating its workspace then.
		p.wgTile = e.wgTileFor(&p)
		p.form = mmFormFold
		if d.Alpha == 1 {
			p.form = mmFormStart
		}
		p.gated.fallbackWS, p.gated.fallbackCtr = p.wsBytes, p.ctrBytes
		p.wsBytes, p.ctrBytes = 0, 0
		p.precision.Reduction = first.precision.Reduction + "; the gate fused"
		lay := mmLayout{!d.TransA, !d.TransB}
		p.kernels = []string{mmWGIDs[mmWGKey{p.wgTile, lay, d.In, d.Out, p.spec.act}].entry().Name}
		return p, nil
	}
	p.precision.Reduction = first.precision.Reduction + "; onto f32, then the gate"
	p.kernels = append(p.kernels, first.kernels...)
	if bwd {
		ids := gatedBwdIDs
		if d.Out != F32 {
			ids = gatedBwdFIDs
		}
		p.kernels = append(p.kernels, ids[gatedKey{d.Out, d.Out, true}].entry().Name)
	} else {
		p.kernels = append(p.kernels, gatedFwdID(F32, d.Out, g, true).entry().Name)
	}
	return p, nil
}

// runGated enqueues a gated plan (e.mu held).
func (p *mmPlan) runGated(e *Engine, a MatmulArgs) error {
	d, g := p.d, p.gated
	l := launcher{e: &e.device}
	prob := problem{op: "Matmul", tier: d.Tier, in: d.In, out: d.Out}
	in, out := int64(d.In.Size()), uint64(d.Out.Size())
	N := int64(d.N)
	if p.wgTile != 0 {
		if a.A%16 == 0 && a.B%16 == 0 {
			return p.wgRun(l, &prob, a)
		}
		if err := e.ws.ensure("Matmul", g.fallbackWS, e.stream.IsCapturing, e.ctx.MemAlloc); err != nil {
			return err
		}
		if err := e.ws.ensureCounters("Matmul", g.fallbackCtr, e.stream.IsCapturing, e.ctx.MemAlloc, e.zero); err != nil {
			return err
		}
	}
	plane := e.ws.ptr + cudaload.DevicePtr(p.planeOff)
	for i0 := int64(0); i0 < int64(d.M); i0 += p.chunk {
		rows := min(p.chunk, int64(d.M)-i0)
		ip := &g.inner[0]
		if rows != p.chunk {
			ip = &g.inner[1]
		}
		aOff := i0 * int64(d.LDA) * in
		if d.TransA {
			aOff = i0 * in
		}
		ia := MatmulArgs{A: a.A + cudaload.DevicePtr(aOff), B: a.B, D: plane}
		if p.spec.bias {
			ia.Bias = a.Bias
		}
		if err := ip.run(e, ia); err != nil {
			return err
		}
		D := a.D + cudaload.DevicePtr(uint64(i0)*uint64(d.LDD)*out)
		if !g.backward {
			var ha, hb cudaload.DevicePtr
			if a.Aux != 0 {
				ha = a.Aux + cudaload.DevicePtr(uint64(i0)*uint64(d.LDAux)*out)
				hb = ha + cudaload.DevicePtr(8*out)
			}
			if err := l.gatedFwd(&prob, F32, d.Out, g.gate, rows, N/2, plane, N, plane+8*4, N, true,
				D, int64(d.LDD), ha, hb, int64(d.LDAux), 4, out); err != nil {
				return err
			}
			continue
		}
		ids := gatedBwdIDs
		if d.Out != F32 {
			ids = gatedBwdFIDs
		}
		A := a.Aux + cudaload.DevicePtr(uint64(i0)*uint64(d.LDAux)*out)
		if err := l.gatedBwd(&prob, ids, d.Out, g.gate, rows, N, plane, N, 4, A, int64(d.LDAux),
			A+cudaload.DevicePtr(8*out), int64(d.LDAux), true, D, int64(d.LDD), D+cudaload.DevicePtr(8*out), int64(d.LDD)); err != nil {
			return err
		}
	}
	return nil
}
