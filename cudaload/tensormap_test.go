package cudaload

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// tiled holds EncodeTiled's arguments; valid2D is a bf16 K-major tile of
// 64x128 with 128-byte swizzle, the shape a Hopper GEMM feeds TMA.
type tiled struct {
	dtype                                 TensorMapDataType
	rank                                  int
	base                                  DevicePtr
	dims, strides                         []uint64
	box, elem                             []uint32
	interleave, swizzle, l2promo, oobFill int
}

func valid2D() tiled {
	return tiled{
		dtype: TensorMapBFloat16, rank: 2, base: 0x7f0000000000,
		dims: []uint64{4096, 1024}, strides: []uint64{4096 * 2},
		box: []uint32{64, 128}, elem: []uint32{1, 1},
		swizzle: TensorMapSwizzle128B, l2promo: TensorMapL2Promotion128B,
	}
}

func (a tiled) validate() error {
	return validateTiled(a.dtype, a.rank, a.base, a.dims, a.strides, a.box, a.elem, a.interleave, a.swizzle, a.l2promo, a.oobFill)
}

func TestEncodeTiledValidatesDocumentedLimits(t *testing.T) {
	tests := []struct {
		name    string
		edit    func(*tiled)
		wantErr string // "" for valid
	}{
		{"valid 2D bf16 128B swizzle", func(*tiled) {}, ""},
		{"valid rank 1", func(a *tiled) {
			a.rank, a.dims, a.strides, a.box, a.elem, a.swizzle = 1, []uint64{1 << 20}, nil, []uint32{256}, []uint32{1}, 0
		}, ""},
		{"valid rank 5", func(a *tiled) {
			a.rank = 5
			a.dims = []uint64{64, 2, 3, 4, 5}
			a.strides = []uint64{128, 256, 768, 3072}
			a.box = []uint32{64, 1, 1, 1, 1}
			a.elem = []uint32{1, 1, 1, 1, 1}
		}, ""},
		{"rank 0", func(a *tiled) { a.rank = 0 }, "rank 0"},
		{"rank 6", func(a *tiled) { a.rank = 6 }, "rank 6"},
		{"unknown dtype", func(a *tiled) { a.dtype = 99 }, "data type 99"},
		{"dims length", func(a *tiled) { a.dims = a.dims[:1] }, "needs 2 dims"},
		{"strides length", func(a *tiled) { a.strides = []uint64{8192, 8192} }, "needs 1 byte strides"},
		{"zero dim", func(a *tiled) { a.dims[1] = 0 }, "dims[1] = 0"},
		{"dim above 2^32", func(a *tiled) { a.dims[0] = 1<<32 + 1 }, "dims[0]"},
		{"stride not multiple of 16", func(a *tiled) { a.strides[0] = 8200 }, "stridesBytes[0] = 8200"},
		{"stride 2^40", func(a *tiled) { a.strides[0] = 1 << 40 }, "stridesBytes[0]"},
		{"box zero", func(a *tiled) { a.box[1] = 0 }, "box[1] = 0"},
		{"box above 256", func(a *tiled) { a.box[1] = 257 }, "box[1] = 257"},
		{"element stride zero", func(a *tiled) { a.elem[0] = 0 }, "elemStrides[0] = 0"},
		{"element stride 9", func(a *tiled) { a.elem[1] = 9 }, "elemStrides[1] = 9"},
		{"base zero", func(a *tiled) { a.base = 0 }, "base address is 0"},
		{"base misaligned", func(a *tiled) { a.base += 8 }, "not 16-byte aligned"},
		{"inner box not 16 bytes", func(a *tiled) { a.box[0], a.swizzle = 4, 0 }, "not a multiple of 16"},
		{"inner box wider than swizzle", func(a *tiled) { a.box[0] = 128 }, "128-byte swizzle span"},
		{"interleave needs rank 3", func(a *tiled) { a.interleave = TensorMapInterleave16B }, "rank >= 3"},
		{"unknown interleave", func(a *tiled) { a.interleave = 3 }, "interleave 3"},
		{"unknown swizzle", func(a *tiled) { a.swizzle = 7 }, "swizzle 7"},
		{"unknown l2 promotion", func(a *tiled) { a.l2promo = 4 }, "L2 promotion 4"},
		{"unknown oob fill", func(a *tiled) { a.oobFill = 2 }, "fill 2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := valid2D()
			tt.edit(&a)
			err := a.validate()
			if tt.wantErr == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, ErrInvalidArgument)
			require.ErrorIs(t, err, ErrInvalidValue)
			require.Contains(t, err.Error(), tt.wantErr)
		})
	}
}

func TestTensorMapElementSizes(t *testing.T) {
	for dt, want := range map[TensorMapDataType]int{
		TensorMapUint8: 1, TensorMapBFloat16: 2, TensorMapFloat16: 2, TensorMapFloat32: 4,
		TensorMapTFloat32: 4, TensorMapFloat64: 8, TensorMapInt64: 8, 13: 0,
	} {
		require.Equal(t, want, dt.ElementSize(), "type %d", dt)
	}
}

// TestTiledEncoderWithoutContextIsTyped: an encoder of no context, or no
// encoder at all, answers with the closed-object error, never a panic.
func TestTiledEncoderWithoutContextIsTyped(t *testing.T) {
	var tm TensorMap
	for name, enc := range map[string]*TiledEncoder{
		"nil encoder":        nil,
		"nil context's":      (*Context)(nil).NewTiledEncoder(),
		"zero-value encoder": {},
	} {
		err := enc.Encode2D(&tm, TensorMapBFloat16, 1<<20, 64, 64, 128, 64, 64, TensorMapSwizzle128B, TensorMapL2PromotionNone, TensorMapOOBFillNone)
		var closed *ClosedError
		require.ErrorAs(t, err, &closed, name)
		err = enc.Encode3D(&tm, TensorMapBFloat16, 1<<20, [3]uint64{64, 64, 2}, [2]uint64{256, 128}, [3]uint32{64, 64, 2}, TensorMapSwizzle128B, TensorMapL2PromotionNone, TensorMapOOBFillNone)
		require.ErrorAs(t, err, &closed, name)
	}
}
