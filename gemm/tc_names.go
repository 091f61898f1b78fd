package gemm

import "fmt"

// The tensor-core tiles' and entry points' names, across every
// tensor-core family (for messages and tests): above the families, whose
// geometry tables hold the names.

func (t tcTile) String() string {
	if g, ok := tcGeometries[t]; ok {
		return g.name
	}
	if g, ok := wgGeometries[t]; ok {
		return g.name
	}
	if g, ok := tcRowsGeometries[t]; ok {
		return g.name
	}
	if g, ok := tcDWGeometries[t]; ok {
		return g.name
	}
	if t == 0 {
		return "auto"
	}
	return fmt.Sprintf("tcTile(%d)", uint8(t))
}

func (k tcKey) name() string {
	if isWG(k.tile) {
		// gemm_wgmma has the TMA path only.
		return fmt.Sprintf("detgemm_%v_%v_%v_%v", k.tile, k.layout, k.in, k.out)
	}
	path := "any"
	if k.vec {
		path = "vec"
	}
	return fmt.Sprintf("detgemm_%v_%v_%v_%v_%s", k.tile, k.layout, k.in, k.out, path)
}

// oneSlabName is the entry point of gemm_tc_rows_tma's twin of k for
// one-slab plans: the same chain without the slab fold compiled in, which
// cost the 16-row nt tile 15 % at 32 rows of dX (bench/NOTES-tcrows.md).
func (k tcKey) oneSlabName() string { return k.name() + "_one" }

// tileOf is the tensor-core tile a description names.
func tileOf(name string) tcTile {
	for _, geoms := range []map[tcTile]string{tileNames(tcGeometries), tileNames(wgGeometries), tileNames(tcRowsGeometries), tileNames(tcDWGeometries)} {
		for t, n := range geoms {
			if n == name {
				return t
			}
		}
	}
	panic("gemm: unknown tensor-core tile " + name)
}
