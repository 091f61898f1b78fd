package ref

import "fmt"

// DType names an element type of the IEEE tiers.
type DType uint8

// The element types. The zero DType is invalid, so a forgotten field is
// caught rather than read as float32.
const (
	F32  DType = iota + 1 // IEEE binary32
	BF16                  // bfloat16: 8 significant bits, float32's exponent range
	F16                   // IEEE binary16
)

// Size is the element size in bytes (0 for an invalid DType).
func (d DType) Size() int {
	switch d {
	case F32:
		return 4
	case BF16, F16:
		return 2
	}
	return 0
}

// Valid reports whether d is one of F32, BF16, F16.
func (d DType) Valid() bool { return d.Size() != 0 }

// Half reports whether d is a 16-bit type (BF16 or F16).
func (d DType) Half() bool { return d == BF16 || d == F16 }

// String returns "f32", "bf16", "f16", or "DType(n)" for an invalid value.
func (d DType) String() string {
	switch d {
	case F32:
		return "f32"
	case BF16:
		return "bf16"
	case F16:
		return "f16"
	}
	return fmt.Sprintf("DType(%d)", uint8(d))
}

// ToF32 widens one element of the 16-bit type d to float32, exactly (NaN
// becomes the canonical float32 NaN). It returns a NaN for a d that is not
// BF16 or F16; Upcast validates instead.
func (d DType) ToF32(h uint16) float32 {
	switch d {
	case BF16:
		return F32FromBF16(h)
	case F16:
		return F32FromF16(h)
	}
	return canonicalNaN
}

// FromF32 rounds f to the 16-bit type d, round to nearest, ties to even (NaN
// becomes d's canonical NaN). It returns d's canonical NaN pattern (0x7FFF)
// for a d that is not BF16 or F16; Round validates instead.
func (d DType) FromF32(f float32) uint16 {
	switch d {
	case BF16:
		return BF16FromF32(f)
	case F16:
		return F16FromF32(f)
	}
	return 0x7FFF
}

// checkHalf rejects a dtype other than BF16 and F16.
func checkHalf(op string, d DType) error {
	if !d.Half() {
		return argErr(op, "dtype", ErrDType, "%v is not a 16-bit type (want bf16 or f16)", d)
	}
	return nil
}

// Upcast widens the first len(src) elements of type d into dst, exactly.
// d must be BF16 or F16 and dst at least as long as src.
func Upcast(d DType, dst []float32, src []uint16) error {
	if err := checkHalf("Upcast", d); err != nil {
		return err
	}
	if err := checkLen("Upcast", "dst", len(dst), len(src), "len(src)"); err != nil {
		return err
	}
	dst = dst[:len(src)]
	switch d {
	case BF16:
		for i, h := range src {
			dst[i] = F32FromBF16(h)
		}
	case F16:
		for i, h := range src {
			dst[i] = F32FromF16(h)
		}
	}
	return nil
}

// Round rounds the first len(src) float32 values to type d into dst, one
// round to nearest, ties to even each: the store of the typed tier. d must be
// BF16 or F16 and dst at least as long as src.
func Round(d DType, dst []uint16, src []float32) error {
	if err := checkHalf("Round", d); err != nil {
		return err
	}
	if err := checkLen("Round", "dst", len(dst), len(src), "len(src)"); err != nil {
		return err
	}
	dst = dst[:len(src)]
	switch d {
	case BF16:
		for i, f := range src {
			dst[i] = BF16FromF32(f)
		}
	case F16:
		for i, f := range src {
			dst[i] = F16FromF32(f)
		}
	}
	return nil
}
