//go:build linux

package cudaload

import (
	"errors"
	"testing"
)

// FuzzEncodeTiled feeds EncodeTiled, Encode2D and Encode3D fuzzed tensor
// maps on the fake driver (libm standing in for libcuda, which lacks
// cuTensorMapEncodeTiled). Nothing may panic. A map the documented limits
// refuse gives an *ArgumentError (ErrInvalidArgument); one they admit
// reaches the driver, here ErrSymbolMissing; a nil or closed context
// gives ErrClosed.
func FuzzEncodeTiled(f *testing.F) {
	type seed struct {
		dtype                                 int
		rank                                  int
		base                                  uint64
		d0, d1, d2, s0, s1                    uint64
		b0, b1, b2, e0, e1, e2                uint32
		interleave, swizzle, l2promo, oobFill int
		nDims, nStrides, nBox, nElem          uint8
		ctx                                   uint8
	}
	valid := seed{9, 2, 0x7f0000000000, 4096, 1024, 1, 8192, 0, 64, 128, 1, 1, 1, 1, 0, 3, 2, 0, 2, 1, 2, 2, 0}
	seeds := []seed{valid}
	edit := func(fn func(*seed)) {
		s := valid
		fn(&s)
		seeds = append(seeds, s)
	}
	edit(func(s *seed) { s.rank, s.nDims, s.nStrides, s.nBox, s.nElem = 1, 1, 0, 1, 1 })
	edit(func(s *seed) { s.rank, s.nDims, s.nStrides, s.nBox, s.nElem = 3, 3, 2, 3, 3; s.s1 = 1 << 39 })
	edit(func(s *seed) { s.rank = 0 })
	edit(func(s *seed) { s.rank = -1 << 31 })
	edit(func(s *seed) { s.rank = 6 })
	edit(func(s *seed) { s.dtype = -1 })
	edit(func(s *seed) { s.dtype = 16 })
	edit(func(s *seed) { s.base = 0 })
	edit(func(s *seed) { s.base = 0x7f0000000008 })
	edit(func(s *seed) { s.d0 = 0 })
	edit(func(s *seed) { s.d0 = 1<<32 + 1 })
	edit(func(s *seed) { s.d1 = ^uint64(0) })
	edit(func(s *seed) { s.s0 = 8 })
	edit(func(s *seed) { s.s0 = 1 << 40 })
	edit(func(s *seed) { s.b0 = 0 })
	edit(func(s *seed) { s.b0 = 257 })
	edit(func(s *seed) { s.b0 = 3 })
	edit(func(s *seed) { s.b0 = 128 }) // 256 bytes past the 128-byte swizzle
	edit(func(s *seed) { s.e0 = 9 })
	edit(func(s *seed) { s.interleave = 2 })
	edit(func(s *seed) {
		s.interleave = 1
		s.rank, s.nDims, s.nStrides, s.nBox, s.nElem = 3, 3, 2, 3, 3
		s.s1 = 1 << 20
	})
	edit(func(s *seed) { s.swizzle = 7 })
	edit(func(s *seed) { s.l2promo = -1 })
	edit(func(s *seed) { s.oobFill = 2 })
	edit(func(s *seed) { s.nDims = 0 })    // empty dims slice
	edit(func(s *seed) { s.nBox = 3 })     // more box entries than rank
	edit(func(s *seed) { s.nElem = 0 })    // no element strides
	edit(func(s *seed) { s.nStrides = 5 }) // too many strides
	edit(func(s *seed) { s.ctx = 1 })      // nil context
	edit(func(s *seed) { s.ctx = 2 })      // closed context
	for _, s := range seeds {
		f.Add(s.dtype, s.rank, s.base, s.d0, s.d1, s.d2, s.s0, s.s1, s.b0, s.b1, s.b2, s.e0, s.e1, s.e2,
			s.interleave, s.swizzle, s.l2promo, s.oobFill, s.nDims, s.nStrides, s.nBox, s.nElem, s.ctx)
	}
	live := fakeContext(f)
	closed := fakeContext(f)
	if err := closed.Close(); err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, dtype, rank int, base, d0, d1, d2, s0, s1 uint64, b0, b1, b2, e0, e1, e2 uint32,
		interleave, swizzle, l2promo, oobFill int, nDims, nStrides, nBox, nElem, ctxMode uint8) {
		ctx := live
		switch ctxMode % 3 {
		case 1:
			ctx = nil
		case 2:
			ctx = closed
		}
		cut := func(n uint8, m int) int { return int(n) % (m + 1) }
		dims := []uint64{d0, d1, d2, d0, d1, d2}[:cut(nDims, 6)]
		strides := []uint64{s0, s1, s0, s1, s0}[:cut(nStrides, 5)]
		box := []uint32{b0, b1, b2, b0, b1, b2}[:cut(nBox, 6)]
		elem := []uint32{e0, e1, e2, e0, e1, e2}[:cut(nElem, 6)]
		dt := TensorMapDataType(dtype)
		check := func(what string, err error, validErr error) {
			t.Helper()
			switch {
			case err == nil:
				t.Fatalf("%s: the fake driver cannot encode, yet no error", what)
			case ctxMode%3 != 0:
				if !errors.Is(err, ErrClosed) {
					t.Fatalf("%s on a nil or closed context: %v", what, err)
				}
			case validErr != nil:
				var ae *ArgumentError
				if !errors.As(err, &ae) || !errors.Is(err, ErrInvalidArgument) {
					t.Fatalf("%s refused (%v) but not with an *ArgumentError: %v", what, validErr, err)
				}
			case !errors.Is(err, ErrSymbolMissing):
				t.Fatalf("%s: valid arguments should reach the driver, got %v", what, err)
			}
		}
		_, err := ctx.EncodeTiled(dt, rank, DevicePtr(base), dims, strides, box, elem, interleave, swizzle, l2promo, oobFill)
		check("EncodeTiled", err, validateTiled(dt, rank, DevicePtr(base), dims, strides, box, elem, interleave, swizzle, l2promo, oobFill))

		var tm TensorMap
		enc := ctx.NewTiledEncoder()
		one := []uint32{1, 1, 1}
		err = enc.Encode2D(&tm, dt, DevicePtr(base), d0, d1, s0, b0, b1, swizzle, l2promo, oobFill)
		check("Encode2D", err, validateTiled(dt, 2, DevicePtr(base), []uint64{d0, d1}, []uint64{s0}, []uint32{b0, b1}, one[:2], 0, swizzle, l2promo, oobFill))
		err = enc.Encode3D(&tm, dt, DevicePtr(base), [3]uint64{d0, d1, d2}, [2]uint64{s0, s1}, [3]uint32{b0, b1, b2}, swizzle, l2promo, oobFill)
		check("Encode3D", err, validateTiled(dt, 3, DevicePtr(base), []uint64{d0, d1, d2}, []uint64{s0, s1}, []uint32{b0, b1, b2}, one, 0, swizzle, l2promo, oobFill))
		if ctxMode%3 == 0 {
			if err := enc.Encode2D(nil, dt, DevicePtr(base), d0, d1, s0, b0, b1, swizzle, l2promo, oobFill); !errors.Is(err, ErrInvalidArgument) {
				t.Fatalf("Encode2D into a nil map: %v", err)
			}
		}
	})
}
