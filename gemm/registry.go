package gemm

import (
	"github.com/detgemm/detgemm/cudaload"
	"github.com/detgemm/detgemm/gemm/internal/entries"
)

// kernelID names one CUDA entry point: an index into kernelEntries, 0 for
// none. The engine's function table is indexed by it.
type kernelID int32

// kernelEntries is every entry point the engine may load, from the
// descriptions in internal/entries (which also generate the .cu files'
// ENTRY lists); index 0 is a placeholder for "none".
var kernelEntries = append([]entries.Entry{{}}, entries.All()...)

// entry is the description of id.
func (id kernelID) entry() entries.Entry { return kernelEntries[id] }

// layoutOf is the layout a description names ("nn", "nt", "tn").
func layoutOf(s string) layout {
	switch s {
	case "nt":
		return layoutNT
	case "tn":
		return layoutTN
	}
	return layoutNN
}

// dtypeOf is the dtype a description names ("f32", "bf16", "f16"; 0 for
// none).
func dtypeOf(s string) DType {
	for _, d := range []DType{F32, BF16, F16} {
		if d.String() == s {
			return d
		}
	}
	return 0
}

// functions is the loaded entry points, indexed by kernelID; nil where the
// engine did not load one (a family its GPU lacks, a tile too big for its
// blocks).
type functions []*cudaload.Function

// indexOf maps each entry point of the given kinds to its family's typed
// key: the family's lookup table, derived from the descriptions.
func indexOf[K comparable](key func(entries.Key) K, kinds ...string) map[K]kernelID {
	m := map[K]kernelID{}
	for id, en := range kernelEntries {
		for _, k := range kinds {
			if en.Kind == k {
				m[key(en.Key)] = kernelID(id)
			}
		}
	}
	return m
}
