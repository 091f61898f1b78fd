package gemm

// variant is one registered way to compute a call: a kernel family in one
// configuration, and the filter that makes the planner take it. Every
// variant computes the plan's bits; the contract suite
// (contract_gpu_test.go) proves it for each variant usable on its GPU, on
// every shape of its list the variant fits, so a new variant is verified
// by adding its line here.
type variant struct {
	name string
	kind string // the entries Kind of the plan's first launch
	tc   bool   // the tensor-core tier (else the IEEE tiers)
	f    filter
	// fits, where set, narrows the plans that are this variant (a tiled grid
	// with a split tail or a cut); nil: any plan whose first launch is kind.
	fits func(plan) bool
	// on, where set, says on which engines the variant can occur at all
	// beyond having its kernels (the tail cut needs a block to be able to
	// hold an SM alone); nil: wherever its kernels are loaded.
	on func(*Engine) bool
}

// variants is every registered variant.
var variants = []variant{
	{name: "tiled", kind: "simt", f: filter{strategy: StrategyTiled, width: squareWidth}},
	{name: "tiled-narrow", kind: "simt64", f: filter{strategy: StrategyTiled, width: narrowWidth}},
	{name: "tiled-cut", kind: "simt", f: filter{strategy: StrategyTiled, width: squareWidth, tailSMs: 2},
		fits: func(pl plan) bool { return pl.cut != cutNone }, on: func(e *Engine) bool { return e.loneShared > simtSharedBytes }},
	{name: "tiled-narrow-cut", kind: "simt64", f: filter{strategy: StrategyTiled, width: narrowWidth, tailSMs: 2},
		fits: func(pl plan) bool { return pl.cut != cutNone }, on: func(e *Engine) bool { return e.loneShared > simt64SharedBytes }},
	{name: "tiled-split-tail", kind: "simt", f: filter{strategy: StrategyTiled, splitTail: true, tailSMs: 2},
		fits: func(pl plan) bool { return pl.tailRow > 0 }},
	{name: "split-slab", kind: "slabs", f: filter{strategy: StrategySplitSlab, width: squareWidth}},
	{name: "split-slab-G1", kind: "slabs", f: filter{strategy: StrategySplitSlab, width: squareWidth, perBlock: 1}},
	{name: "split-slab-G3", kind: "slabs", f: filter{strategy: StrategySplitSlab, width: squareWidth, perBlock: 3}},
	{name: "split-slab-narrow", kind: "slabs64", f: filter{strategy: StrategySplitSlab, width: narrowWidth}},
	{name: "split-slab-narrow-G1", kind: "slabs64", f: filter{strategy: StrategySplitSlab, width: narrowWidth, perBlock: 1}},
	{name: "rows-two-launch", kind: "rows", f: filter{strategy: StrategyRows, rowsPath: rowsPathTwo}},
	{name: "rows-one-launch", kind: "rowsf", f: filter{strategy: StrategyRows, rowsPath: rowsPathOne}},
	{name: "rows-tma", kind: "rowst", f: filter{strategy: StrategyRows, rowsPath: rowsPathTMA}},
	{name: "stream-tall", kind: "dwstream", f: filter{strategy: StrategyStream, streamRows: streamTall}},
	{name: "stream-short", kind: "dwstream", f: filter{strategy: StrategyStream, streamRows: streamShort}},

	{name: "tc256-vec", kind: "tc", tc: true, f: filter{tc: tcForce{tcTile256, tcPathVec}}},
	{name: "tc128-vec", kind: "tc", tc: true, f: filter{tc: tcForce{tcTile128, tcPathVec}}},
	{name: "tc128-any", kind: "tc", tc: true, f: filter{tc: tcForce{tcTile128, tcPathAny}}},
	{name: "tc64-vec", kind: "tc", tc: true, f: filter{tc: tcForce{tcTile64, tcPathVec}}},
	{name: "tc64-any", kind: "tc", tc: true, f: filter{tc: tcForce{tcTile64, tcPathAny}}},
	{name: "tc-planes", kind: "tc", tc: true, f: filter{tc: tcForce{tcTile64, tcPathVec}},
		fits: func(pl plan) bool { return pl.tc.planes }},
	{name: "wg128x256", kind: "wg", tc: true, f: filter{tc: tcForce{tcTileWG128x256, tcPathVec}}},
	{name: "wg128x192", kind: "wg", tc: true, f: filter{tc: tcForce{tcTileWG128x192, tcPathVec}}},
	{name: "wg128x128", kind: "wg", tc: true, f: filter{tc: tcForce{tcTileWG128x128, tcPathVec}}},
	{name: "wg192x192", kind: "wg", tc: true, f: filter{tc: tcForce{tcTileWG192x192, tcPathVec}}},
	{name: "wg128x96", kind: "wg", tc: true, f: filter{tc: tcForce{tcTileWG128x96, tcPathVec}}},
	{name: "wg128x64", kind: "wg", tc: true, f: filter{tc: tcForce{tcTileWG128x64, tcPathVec}}},
	{name: "wg128x128s", kind: "wg", tc: true, f: filter{tc: tcForce{tcTileWG128x128S, tcPathVec}}},
	{name: "wg128x192s", kind: "wg", tc: true, f: filter{tc: tcForce{tcTileWG128x192S, tcPathVec}}},
	{name: "wg128x256s", kind: "wg", tc: true, f: filter{tc: tcForce{tcTileWG128x256S, tcPathVec}}},
	{name: "wg-runsum", kind: "wg", tc: true, f: filter{tc: tcForce{tcTileWG128x128S, tcPathVec}},
		fits: func(pl plan) bool { return pl.tc.runsum }},
	{name: "wg128x192r", kind: "wg", tc: true, f: filter{tc: tcForce{tcTileWG128x192R, tcPathVec}}},
	{name: "wg-regsum", kind: "wg", tc: true, f: filter{tc: tcForce{tcTileWG128x192R, tcPathVec}},
		fits: func(pl plan) bool { return pl.tc.regsum }},
	{name: "wg-regsum-tail", kind: "wg", tc: true, f: filter{tc: tcForce{tcTileWG128x192R, tcPathVec}, regsumTail: true},
		fits: func(pl plan) bool { return pl.tc.tailRow > 0 }},
	{name: "tcrows8", kind: "tcrows", tc: true, f: filter{tc: tcForce{tcTileRows8, tcPathVec}}},
	{name: "tcrows16", kind: "tcrows", tc: true, f: filter{tc: tcForce{tcTileRows16, tcPathVec}}},
	{name: "tmarows8", kind: "tmarows", tc: true, f: filter{tc: tcForce{tcTileRowsTMA8, tcPathVec}}},
	{name: "tmarows16", kind: "tmarows", tc: true, f: filter{tc: tcForce{tcTileRowsTMA16, tcPathVec}}},
	{name: "tmarows8-one", kind: "tmarows_one", tc: true, f: filter{tc: tcForce{tcTileRowsTMA8, tcPathVec}}},
	{name: "tmarows16-one", kind: "tmarows_one", tc: true, f: filter{tc: tcForce{tcTileRowsTMA16, tcPathVec}}},
	{name: "tcdw64-vec", kind: "tcdw", tc: true, f: filter{tc: tcForce{tcTileDW64, tcPathVec}}},
	{name: "tcdw64-any", kind: "tcdw", tc: true, f: filter{tc: tcForce{tcTileDW64, tcPathAny}}},
}
