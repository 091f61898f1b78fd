package gemm

import (
	"errors"
	"math"
	"testing"

	"github.com/detgemm/detgemm/cudaload"
	"github.com/detgemm/detgemm/gemm/ref"
	"github.com/stretchr/testify/require"
)

// TestSparse24EngineRefusesBadCalls: every bad argument of the format's
// Engine methods is an *ArgError with its sentinel, found before the
// engine is touched (the zero Engine here has no GPU).
func TestSparse24EngineRefusesBadCalls(t *testing.T) {
	e := &Engine{}
	const w, v, m = cudaload.DevicePtr(1 << 40), cudaload.DevicePtr(2 << 40), cudaload.DevicePtr(3 << 40)
	for _, c := range []struct {
		name string
		err  error
		want error
	}{
		{"prune dtype", e.Prune24(DType(7), w, 16, 8, 8), ErrDType},
		{"prune K%4", e.Prune24(BF16, w, 18, 8, 8), ErrDimension},
		{"prune K 0", e.Prune24(BF16, w, 0, 8, 8), ErrDimension},
		{"prune N<0", e.Prune24(F32, w, 16, -8, 8), ErrDimension},
		{"prune huge", e.Prune24(F32, w, 1<<32, 8, 8), ErrTooLarge},
		{"prune ldw<N", e.Prune24(F32, w, 16, 8, 7), ErrLeadingDim},
		{"prune ldw<0", e.Prune24(F32, w, 16, 8, -1), ErrLeadingDim},
		{"prune extent", e.Prune24(F32, w, 1<<30, 8, 1<<40), ErrTooLarge},
		{"prune nil", e.Prune24(F32, 0, 16, 8, 8), ErrNilPointer},
		{"prune misaligned", e.Prune24(F32, w+2, 16, 8, 8), ErrMisaligned},
		{"prune bf16 odd", e.Prune24(BF16, w+1, 16, 8, 8), ErrMisaligned},
		{"prune wraps", e.Prune24(F32, cudaload.DevicePtr(math.MaxUint64-63), 16, 8, 8), ErrTooLarge},
		{"compress f32", e.Compress24(F32, w, 16, 8, 8, v, m), ErrDType},
		{"compress K%16", e.Compress24(BF16, w, 24, 8, 8, v, m), ErrDimension},
		{"compress values misaligned", e.Compress24(BF16, w, 16, 8, 8, v+4, m), ErrMisaligned},
		{"compress meta misaligned", e.Compress24(BF16, w, 16, 8, 8, v, m+2), ErrMisaligned},
		{"compress nil values", e.Compress24(BF16, w, 16, 8, 8, 0, m), ErrNilPointer},
		{"compress nil meta", e.Compress24(F16, w, 16, 8, 8, v, 0), ErrNilPointer},
		{"compress values over w", e.Compress24(BF16, w, 16, 8, 8, w+16, m), ErrAlias},
		{"compress meta over values", e.Compress24(BF16, w, 16, 8, 8, v, v+64), ErrAlias},
		{"prunecompress meta over w", e.PruneCompress24(BF16, w, 16, 8, 8, v, w+4), ErrAlias},
		{"prunecompress f32", e.PruneCompress24(F32, w, 16, 8, 8, v, m), ErrDType},
		{"decompress w over values", e.Decompress24(F16, v, m, 16, 8, v+32, 8), ErrAlias},
		{"decompress ldw<N", e.Decompress24(F16, v, m, 16, 8, w, 4), ErrLeadingDim},
		{"decompress K%16", e.Decompress24(F16, v, m, 20, 8, w, 8), ErrDimension},
		{"mask meta over w", e.Mask24(F32, w, 16, 8, 8, w+64), ErrAlias},
		{"mask nil meta", e.Mask24(F32, w, 16, 8, 8, 0), ErrNilPointer},
		{"check K%4", e.CheckMeta24(m, 6, 8), ErrDimension},
		{"check nil", e.CheckMeta24(0, 16, 8), ErrNilPointer},
	} {
		require.ErrorIs(t, c.err, c.want, c.name)
		var ae *ArgError
		require.ErrorAs(t, c.err, &ae, c.name)
	}
}

// TestSparse24BytesAndMetaReason: the sizes are ref's lengths in bytes,
// and the engine's reason for a bad metadata word is ref's.
func TestSparse24BytesAndMetaReason(t *testing.T) {
	for _, s := range [][2]int{{16, 1}, {48, 7}, {4096, 11008}, {1040, 3}} {
		v, m := Sparse24Bytes(BF16, s[0], s[1])
		nv, nm := ref.Sparse24Len(s[0], s[1])
		require.Equal(t, uint64(2*nv), v)
		require.Equal(t, uint64(4*nm), m)
	}
	v, m := Sparse24Bytes(F32, 16, 4)
	require.Zero(t, v+m)
	for _, c := range []struct {
		K, N, i int
		word    uint32
	}{{48, 3, 3, 0x54444444}, {64, 2, 2, 0x44444405}, {16, 5, 4, 0x44404444}, {96, 4, 9, 0x4444444F}, {80, 2, 5, 0x440E9EE9}} {
		mw := ref.Meta24Words(c.K)
		meta := make([]uint32, c.N*mw)
		for i := range meta {
			meta[i] = 0x44444444
		}
		meta[c.i] = c.word
		want := ref.Sparse24{Type: BF16, K: c.K, N: c.N, Values: make([]uint16, c.N*c.K/2), Meta: meta}.Validate()
		var ae *ArgError
		require.True(t, errors.As(want, &ae), "%+v: %v", c, want)
		require.Equal(t, ae.Reason, meta24Reason(int64(c.i), int64(mw), int64(c.K/4), c.word), "%+v", c)
	}
}

// FuzzSparse24Engine: the format's Engine checks never panic; they return
// a typed error, or a call whose buffers lie inside their ranges with the
// two-column kernels only where every access stays aligned.
func FuzzSparse24Engine(f *testing.F) {
	f.Add(uint8(0), uint8(2), 16, 8, 8, uint64(1<<40), uint64(2<<40), uint64(3<<40))
	f.Add(uint8(1), uint8(3), 48, 7, 9, uint64(1<<40+2), uint64(2<<40), uint64(3<<40))
	f.Add(uint8(2), uint8(1), 4, 3, 0, uint64(1<<40), uint64(0), uint64(0))
	f.Add(uint8(3), uint8(2), 32, 1, 1, uint64(1<<40), uint64(1<<40+8), uint64(3<<40))
	f.Add(uint8(4), uint8(3), 1<<31, 1<<31, 1<<40, uint64(math.MaxUint64-7), uint64(1), uint64(2))
	f.Add(uint8(5), uint8(0), -16, 0, -1, uint64(0), uint64(0), uint64(0))
	f.Fuzz(func(t *testing.T, op, ty uint8, K, N, ldw int, w, v, m uint64) {
		d := []DType{0, F32, BF16, F16, 9}[ty%5]
		var uses sp24Uses
		switch op % 6 {
		case 0:
			uses = sp24Uses{kmul: 4, types: sp24Any, w: true, wOut: true}
			v, m = 0, 0
		case 1:
			uses = sp24Uses{kmul: 16, types: sp24Half, w: true, vals: true, meta: true, compOut: true}
		case 2:
			uses = sp24Uses{kmul: 16, types: sp24Half, w: true, vals: true, meta: true, wOut: true}
		case 3:
			uses = sp24Uses{kmul: 4, types: sp24Any, w: true, meta: true, wOut: true}
			v = 0
		case 4:
			uses = sp24Uses{kmul: 4, types: sp24Any, meta: true}
			w, v, ldw = 0, 0, 0
		default: // the raw values, whatever the operation uses
			uses = sp24Uses{kmul: 4, types: sp24Any, w: true, meta: true, wOut: true}
		}
		c, err := checkSp24("Fuzz", d, K, N, ldw, cudaload.DevicePtr(w), cudaload.DevicePtr(v), cudaload.DevicePtr(m), uses)
		if err != nil {
			var ae *ArgError
			if !errors.As(err, &ae) {
				t.Fatalf("untyped error %v", err)
			}
			return
		}
		if c.K <= 0 || c.N <= 0 || c.K%int64(uses.kmul) != 0 || (uses.w && c.ldw < c.N) {
			t.Fatalf("accepted K %d N %d ldw %d", c.K, c.N, c.ldw)
		}
		if c.v2 && (c.N%2 != 0 || c.ldw%2 != 0 || uint64(c.w)%4 != 0) {
			t.Fatalf("two columns a thread where an access is misaligned: %+v", c)
		}
		g := c.grid()
		if uses.w && (g.X == 0 || g.Y == 0 || g.Y > maxGridYZ) {
			t.Fatalf("grid %+v for %+v", g, c)
		}
	})
}

// sp24FormatNames is the name of every format kernel as its key gives it
// (for TestEveryEntryIsNamedByItsKey's map).
func sp24FormatNames() map[kernelID]string {
	named := map[kernelID]string{sp24CheckMetaID: "detgemm_sp24_checkmeta"}
	for verb, ids := range map[string]map[sp24FKey]kernelID{"prune": sp24PruneIDs, "mask": sp24MaskIDs,
		"compress": sp24CompressIDs, "prunecompress": sp24PruneCompressIDs, "decompress": sp24DecompressIDs} {
		for k, id := range ids {
			name := "detgemm_sp24_" + verb + "_" + k.t.String()
			if k.v2 {
				name += "_v2"
			}
			named[id] = name
		}
	}
	return named
}

// TestSparse24FormatEntriesAreNamedByTheirKeys: every entry of the
// family has one key, whose name is the entry's.
func TestSparse24FormatEntriesAreNamedByTheirKeys(t *testing.T) {
	named := sp24FormatNames()
	n := 0
	for id, en := range kernelEntries {
		if en.Family != sp24FormatFamily {
			continue
		}
		n++
		require.Equal(t, en.Name, named[kernelID(id)])
	}
	require.Len(t, named, n)
	require.Equal(t, 23, n, "prune and mask of 3 types, compress, prune+compress and decompress of 2, 16-bit ones twice, the check")
}
