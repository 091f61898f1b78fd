package ref

import "fmt"

// DType names an element type: F32, BF16 and F16, the types of the IEEE
// and tensor-core tiers, and the 8-bit floating-point types E4M3 and E5M2,
// which only the fp8 operations take (FP8Matmul, FP8Quantize, FP8Step).
type DType uint8

// The element types. The zero DType is invalid, so a forgotten field is
// caught rather than read as float32.
const (
	F32  DType = iota + 1 // IEEE binary32
	BF16                  // bfloat16: 8 significant bits, float32's exponent range
	F16                   // IEEE binary16
	// E4M3 is OCP's 8-bit E4M3 ("E4M3FN"): 4 significant bits, bias 7,
	// subnormals, no infinities, NaN 0x7F and 0xFF, largest finite 448.
	E4M3
	// E5M2 is OCP's 8-bit E5M2: 3 significant bits, bias 15, subnormals,
	// ±Inf, NaNs, largest finite 57344.
	E5M2
)

// Size is the element size in bytes (0 for an invalid DType).
func (d DType) Size() int {
	switch d {
	case F32:
		return 4
	case BF16, F16:
		return 2
	case E4M3, E5M2:
		return 1
	}
	return 0
}

// Valid reports whether d is one of F32, BF16, F16: a type of the IEEE and
// tensor-core tiers (Options.In and Out). The 8-bit types are not: see FP8.
func (d DType) Valid() bool { return d == F32 || d == BF16 || d == F16 }

// Half reports whether d is a 16-bit type (BF16 or F16).
func (d DType) Half() bool { return d == BF16 || d == F16 }

// FP8 reports whether d is an 8-bit floating-point type (E4M3 or E5M2).
func (d DType) FP8() bool { return d == E4M3 || d == E5M2 }

// String returns "f32", "bf16", "f16", "e4m3", "e5m2", or "DType(n)" for an
// invalid value.
func (d DType) String() string {
	switch d {
	case F32:
		return "f32"
	case BF16:
		return "bf16"
	case F16:
		return "f16"
	case E4M3:
		return "e4m3"
	case E5M2:
		return "e5m2"
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
