package ref

import (
	"errors"
	"math"
)

// The 2:4 structured-sparsity format (docs/contract.md, section "2:4
// sparse format"): a weight W[K,N], row-major with leading dimension
// ld >= N, is 2:4 sparse along K when every group of 4 consecutive rows
// 4q..4q+3 of one column n holds at most 2 nonzero elements. Prune24 makes
// it so (magnitude pruning), Compress24 stores it as the sparse tensor
// cores read it (Sparse24: the kept values transposed, N rows of K/2, and
// one 4-bit pattern a group), Sparse24.Decompress and Mask24 go back, and
// MetaToBaracuda / MetaFromBaracuda convert the metadata from and to the
// layout of baracuda-kernels' GemmSparse24Plan.

// Sentinels of the 2:4 format's refusals.
var (
	// ErrNot24: a group of 4 along K holds more than 2 nonzeros where a
	// 2:4-sparse weight is needed (Compress24); the message names the
	// first such group in the order (q ascending, then n).
	ErrNot24 = errors.New("not 2:4 sparse")
	// ErrMeta24: 2:4 metadata holds a pattern that is not one of the six
	// (first kept position < second, both 0..3), or a word's unused
	// nibble (groups past K/4) is not 0x4; in baracuda's layout, a byte
	// with bits 4-7 set or first >= second.
	ErrMeta24 = errors.New("invalid 2:4 metadata")
)

// Sparse24 is a 2:4-sparse weight W[K,N] compressed along K, in the layout
// of the sparse tensor cores' operand:
//
//   - Values: N rows of K/2 elements of Type (BF16 or F16 bits), row n
//     holding column n of W: for each group q ascending, its two kept
//     elements in ascending row order at Values[n·K/2 + 2q] and [.. + 2q+1].
//   - Meta: N rows of ceil(K/32) words; group q of column n is the nibble
//     at bits 4·(q%8) .. 4·(q%8)+3 of Meta[n·ceil(K/32) + q/8]: bits 0-1 the
//     first kept row (4q + that), bits 2-3 the second, first < second (so
//     the nibble is 0x4, 0x8, 0xC, 0x9, 0xD or 0xE). The nibbles of groups
//     past K/4 (K % 32 != 0) are 0x4.
//
// K is a multiple of 16 (a row of Values is whole 16-byte chunks).
type Sparse24 struct {
	Type   DType
	K, N   int
	Values []uint16
	Meta   []uint32
}

// Sparse24Len is the length of a compressed K×N weight's Values (N·K/2)
// and Meta (N·ceil(K/32)); K and N positive, K a multiple of 16.
func Sparse24Len(K, N int) (values, meta int) {
	return N * (K / 2), N * Meta24Words(K)
}

// Meta24Words is the metadata words of one row (one column of W):
// ceil(K/32).
func Meta24Words(K int) int { return (K + 31) / 32 }

// meta24Unused is the nibble of a group past K/4: the valid pattern
// (0, 1).
const meta24Unused = 0x4

// meta24Valid reports whether nibble v is one of the six patterns.
func meta24Valid(v uint32) bool { return v&3 < v>>2&3 }

// key24 is element w's rank for pruning: |w| widened exactly to float32,
// as bits (their order is the magnitudes' order), and every NaN above
// every number (+Inf included), NaNs equal to each other.
func key24(f float32) uint32 {
	b := math.Float32bits(f) &^ (1 << 31)
	if b > 0x7F800000 {
		return math.MaxUint32
	}
	return b
}

// Keep24 is Prune24's rule on one group of four elements (given widened
// exactly to float32): the rows it keeps, ascending. Element i is kept iff
// fewer than 2 elements j beat it, j beating i when |w_j| > |w_i|, or they
// are equal and j < i, a NaN counting above every number and two NaNs
// equal: the two largest magnitudes, ties to the lower row, NaNs first.
func Keep24(g [4]float32) (first, second int) {
	return keep24([4]uint32{key24(g[0]), key24(g[1]), key24(g[2]), key24(g[3])})
}

// keep24 is Keep24 on the keys (key24).
func keep24(k [4]uint32) (p0, p1 int) {
	p0, p1 = -1, -1
	for i := range 4 {
		beat := 0
		for j := range 4 {
			if k[j] > k[i] || k[j] == k[i] && j < i {
				beat++
			}
		}
		if beat < 2 {
			if p0 < 0 {
				p0 = i
			} else {
				p1 = i
			}
		}
	}
	return p0, p1
}

// w24 is a weight operand as the format functions read and write it: the
// elements of one type, by row-major index.
type w24 struct {
	d DType
	o Operand
}

func (w w24) f32(i int) float32 {
	if w.o.Bits != nil {
		return w.d.ToF32(w.o.Bits[i])
	}
	return w.o.Values[i]
}

// bits is element i's bits in its type (half: the 16-bit pattern; Values
// of a half type were checked exact).
func (w w24) bits(i int) uint32 {
	if w.o.Bits != nil {
		return uint32(w.o.Bits[i])
	}
	if w.d.Half() {
		return uint32(w.d.FromF32(w.o.Values[i]))
	}
	return math.Float32bits(w.o.Values[i])
}

// isZero: ±0 (a NaN is nonzero).
func (w w24) isZero(i int) bool {
	if w.o.Bits != nil {
		return w.o.Bits[i]&0x7FFF == 0
	}
	return w.o.Values[i] == 0
}

// zero stores +0 at i.
func (w w24) zero(i int) {
	if w.o.Bits != nil {
		w.o.Bits[i] = 0
	} else {
		w.o.Values[i] = 0
	}
}

// set stores the 16-bit pattern h at i (a half type).
func (w w24) set(i int, h uint16) {
	if w.o.Bits != nil {
		w.o.Bits[i] = h
	} else {
		w.o.Values[i] = w.d.ToF32(h)
	}
}

// check24 validates a K×N weight of type d with leading dimension ld: d
// one of types, K positive and a multiple of kmul, N positive, ld >= N, the
// operand in a form its type allows and long enough; with exact, Values of
// a half type must hold values of that type (ErrInexact).
func check24(op, arg string, d DType, w Operand, K, N, ld, kmul int, exact bool, types ...DType) (w24, error) {
	ok := false
	for _, t := range types {
		ok = ok || d == t
	}
	if !ok {
		return w24{}, argErr(op, "dtype", ErrDType, "%v: want one of %v", d, types)
	}
	if err := checkDims(op, "KN", K, N); err != nil {
		return w24{}, err
	}
	if K%kmul != 0 {
		why := "groups of 4 along K"
		if kmul == 16 {
			why = "the compressed rows are whole 16-byte chunks"
		}
		return w24{}, argErr(op, "K", ErrDim, "%d is not a multiple of %d (%s)", K, kmul, why)
	}
	if ld < N {
		return w24{}, argErr(op, "ld", ErrLeadingDim, "%d is below N = %d", ld, N)
	}
	ext, ok := mul(K-1, ld) // K >= 4, ld >= 1
	if !ok || ext > math.MaxInt-N {
		return w24{}, argErr(op, "ld", ErrLeadingDim, "(K-1)·ld + N overflows int (K %d, ld %d)", K, ld)
	}
	need := ext + N
	switch {
	case w.Values != nil && w.Bits != nil:
		return w24{}, argErr(op, arg, ErrDType, "both Values and Bits are set")
	case w.Bits != nil && !d.Half():
		return w24{}, argErr(op, arg, ErrDType, "Bits given for %v (want Values)", d)
	}
	if err := checkLen(op, arg, w.len(), need, "(K-1)·ld + N"); err != nil {
		return w24{}, err
	}
	if exact && w.Values != nil && d.Half() {
		for k := range K {
			for n := range N {
				v := w.Values[k*ld+n]
				if v == v && d.ToF32(d.FromF32(v)) != v {
					return w24{}, argErr(op, arg, ErrInexact, "element (%d, %d) = %v is not a %v value", k, n, v, d)
				}
			}
		}
	}
	return w24{d: d, o: w}, nil
}

// Prune24 prunes the weight W[K,N] (type d: F32, BF16 or F16; row-major,
// leading dimension ld >= N) to 2:4 along K, in place: in each group of 4
// rows 4q..4q+3 of a column it keeps the two elements of largest
// magnitude (compared widened exactly to float32; a NaN above every
// number, two NaNs equal; ties to the lower row) and sets the other two to
// +0. K must be a multiple of 4. Elements outside the K×N window (the
// columns past N of each row) are not touched. Half types may be given as
// Bits or as exact Values.
func Prune24(d DType, w Operand, K, N, ld int) error {
	x, err := check24("Prune24", "w", d, w, K, N, ld, 4, false, F32, BF16, F16)
	if err != nil {
		return err
	}
	for q := range K / 4 {
		for n := range N {
			var k [4]uint32
			for r := range 4 {
				k[r] = key24(x.f32((4*q+r)*ld + n))
			}
			p0, p1 := keep24(k)
			for r := range 4 {
				if r != p0 && r != p1 {
					x.zero((4*q+r)*ld + n)
				}
			}
		}
	}
	return nil
}

// positions24 is Compress24's choice of the kept rows of one group: the
// nonzero elements' (a -0 is zero, a NaN nonzero), then the lowest zero
// rows until there are two, ascending; nz is the count of nonzeros (more
// than 2: not 2:4).
func positions24(zero [4]bool) (p0, p1, nz int) {
	var p [2]int
	n := 0
	for r := range 4 {
		if !zero[r] {
			if n < 2 {
				p[n] = r
			}
			n++
		}
	}
	nz = n
	for r := 0; r < 4 && n < 2; r++ {
		if zero[r] {
			p[n] = r
			n++
		}
	}
	if p[0] > p[1] {
		p[0], p[1] = p[1], p[0]
	}
	return p[0], p[1], nz
}

// Compress24 compresses the 2:4-sparse weight W[K,N] (type BF16 or F16,
// given as Bits or exact Values; row-major, leading dimension ld >= N; K a
// multiple of 16) into a Sparse24. Each group keeps the rows of its
// nonzero elements, filled up to two with its lowest zero rows; the stored
// values are the elements' bits as they are (a -0 kept stays -0). A group
// with more than 2 nonzeros is an *ArgError matching ErrNot24 that names
// the first such group in the order q ascending, then n.
func Compress24(d DType, w Operand, K, N, ld int) (Sparse24, error) {
	const op = "Compress24"
	x, err := check24(op, "w", d, w, K, N, ld, 16, true, BF16, F16)
	if err != nil {
		return Sparse24{}, err
	}
	nv, nm := Sparse24Len(K, N)
	s := Sparse24{Type: d, K: K, N: N, Values: make([]uint16, nv), Meta: make([]uint32, nm)}
	mw := Meta24Words(K)
	for i := range s.Meta {
		s.Meta[i] = 0x44444444
	}
	for q := range K / 4 {
		for n := range N {
			var z [4]bool
			for r := range 4 {
				z[r] = x.isZero((4*q+r)*ld + n)
			}
			p0, p1, nz := positions24(z)
			if nz > 2 {
				return Sparse24{}, argErr(op, "w", ErrNot24, "rows %d..%d of column %d hold %d nonzeros", 4*q, 4*q+3, n, nz)
			}
			s.Values[n*(K/2)+2*q] = uint16(x.bits((4*q+p0)*ld + n))
			s.Values[n*(K/2)+2*q+1] = uint16(x.bits((4*q+p1)*ld + n))
			word := &s.Meta[n*mw+q/8]
			sh := 4 * uint(q%8)
			*word = *word&^(0xF<<sh) | uint32(p0|p1<<2)<<sh
		}
	}
	return s, nil
}

// checkMeta24 validates metadata of a K×N weight (K a multiple of 4): its
// length, every used nibble one of the six, every unused one 0x4. The
// first bad word (n ascending, then the word) is named.
func checkMeta24(op, arg string, meta []uint32, K, N int) error {
	mw := Meta24Words(K)
	if err := checkLen(op, arg, len(meta), N*mw, "N·ceil(K/32)"); err != nil {
		return err
	}
	Q := K / 4
	for n := range N {
		for i := range mw {
			v := meta[n*mw+i]
			for g := range 8 {
				q := 8*i + g
				b := v >> (4 * g) & 0xF
				if q < Q && !meta24Valid(b) {
					return argErr(op, arg, ErrMeta24, "column %d, rows %d..%d: pattern %#x is not two ascending positions (word %d = %#08x)",
						n, 4*q, 4*q+3, b, n*mw+i, v)
				}
				if q >= Q && b != meta24Unused {
					return argErr(op, arg, ErrMeta24, "column %d: the nibble of group %d, past K/4 = %d, is %#x, not 0x4 (word %d = %#08x)",
						n, q, Q, b, n*mw+i, v)
				}
			}
		}
	}
	return nil
}

// Validate checks s: Type BF16 or F16, K a positive multiple of 16, N
// positive, Values and Meta long enough, and the metadata valid (ErrMeta24
// names the first bad pattern).
func (s Sparse24) Validate() error {
	return s.validate("Sparse24.Validate")
}

func (s Sparse24) validate(op string) error {
	if !s.Type.Half() {
		return argErr(op, "Type", ErrDType, "%v: want bf16 or f16", s.Type)
	}
	if err := checkDims(op, "KN", s.K, s.N); err != nil {
		return err
	}
	if s.K%16 != 0 {
		return argErr(op, "K", ErrDim, "%d is not a multiple of 16", s.K)
	}
	nv, _ := Sparse24Len(s.K, s.N)
	if err := checkLen(op, "Values", len(s.Values), nv, "N·K/2"); err != nil {
		return err
	}
	return checkMeta24(op, "Meta", s.Meta, s.K, s.N)
}

// Decompress writes the dense weight W[K,N] of s into dst (s.Type, as Bits
// or Values; row-major, leading dimension ld >= N): the stored values at
// the rows the metadata keeps, +0 at the others. Elements outside the K×N
// window are not touched. So Decompress(Compress24(W)) is W, except that a
// -0 at a row the compression dropped comes back +0. Invalid metadata is
// an *ArgError matching ErrMeta24, and dst is then not written.
func (s Sparse24) Decompress(dst Operand, ld int) error {
	const op = "Sparse24.Decompress"
	if err := s.validate(op); err != nil {
		return err
	}
	x, err := check24(op, "dst", s.Type, dst, s.K, s.N, ld, 16, false, BF16, F16)
	if err != nil {
		return err
	}
	mw := Meta24Words(s.K)
	for q := range s.K / 4 {
		for n := range s.N {
			b := s.Meta[n*mw+q/8] >> (4 * uint(q%8))
			p0, p1 := int(b&3), int(b>>2&3)
			for r := range 4 {
				var h uint16
				switch r {
				case p0:
					h = s.Values[n*(s.K/2)+2*q]
				case p1:
					h = s.Values[n*(s.K/2)+2*q+1]
				}
				x.set((4*q+r)*ld+n, h)
			}
		}
	}
	return nil
}

// Mask24 sets to +0 every element of the weight W[K,N] (type d: F32, BF16
// or F16; row-major, leading dimension ld >= N; K a multiple of 4) at a
// row that meta (N·ceil(K/32) words, Sparse24's layout) does not keep, and
// leaves the kept ones as they are: after an optimizer step, it keeps the
// pruned weights at zero. Invalid metadata is an *ArgError matching
// ErrMeta24, and w is then not written.
func Mask24(d DType, w Operand, meta []uint32, K, N, ld int) error {
	const op = "Mask24"
	x, err := check24(op, "w", d, w, K, N, ld, 4, false, F32, BF16, F16)
	if err != nil {
		return err
	}
	if err := checkMeta24(op, "meta", meta, K, N); err != nil {
		return err
	}
	mw := Meta24Words(K)
	for q := range K / 4 {
		for n := range N {
			b := meta[n*mw+q/8] >> (4 * uint(q%8))
			p0, p1 := int(b&3), int(b>>2&3)
			for r := range 4 {
				if r != p0 && r != p1 {
					x.zero((4*q+r)*ld + n)
				}
			}
		}
	}
	return nil
}

// checkMetaShape validates the K and N of a metadata conversion: positive,
// K a multiple of 8 (baracuda's layout: a 16-bit word holds 2 groups).
func checkMetaShape(op string, K, N int) error {
	if err := checkDims(op, "KN", K, N); err != nil {
		return err
	}
	if K%8 != 0 {
		return argErr(op, "K", ErrDim, "%d is not a multiple of 8 (baracuda's metadata holds two groups a 16-bit word)", K)
	}
	return nil
}

// MetaToBaracuda converts metadata of a K×N weight (Sparse24's layout,
// N·ceil(K/32) words, validated: ErrMeta24) to baracuda-kernels'
// GemmSparse24Plan layout: N rows of K/8 uint16, one byte a group (group
// 2p of a row in the low byte of word p, 2p+1 in the high byte), bits 0-1
// the first kept position, bits 2-3 the second, bits 4-7 zero. K must be a
// multiple of 8. The values need no conversion: both are [N][K/2].
func MetaToBaracuda(meta []uint32, K, N int) ([]uint16, error) {
	const op = "MetaToBaracuda"
	if err := checkMetaShape(op, K, N); err != nil {
		return nil, err
	}
	if err := checkMeta24(op, "meta", meta, K, N); err != nil {
		return nil, err
	}
	mw, bw := Meta24Words(K), K/8
	out := make([]uint16, N*bw)
	for n := range N {
		for q := range K / 4 {
			b := uint16(meta[n*mw+q/8] >> (4 * uint(q%8)) & 0xF)
			out[n*bw+q/2] |= b << (8 * uint(q%2))
		}
	}
	return out, nil
}

// MetaFromBaracuda converts baracuda-kernels' metadata of a K×N weight (N
// rows of K/8 uint16, MetaToBaracuda's layout) to Sparse24's. A byte with
// bits 4-7 set, or whose first position is not below its second, is an
// *ArgError matching ErrMeta24 naming the first (n ascending, then the
// group).
func MetaFromBaracuda(b []uint16, K, N int) ([]uint32, error) {
	const op = "MetaFromBaracuda"
	if err := checkMetaShape(op, K, N); err != nil {
		return nil, err
	}
	bw, mw := K/8, Meta24Words(K)
	if err := checkLen(op, "meta", len(b), N*bw, "N·K/8"); err != nil {
		return nil, err
	}
	out := make([]uint32, N*mw)
	for i := range out {
		out[i] = 0x44444444
	}
	for n := range N {
		for q := range K / 4 {
			v := uint32(b[n*bw+q/2] >> (8 * uint(q%2)) & 0xFF)
			if v > 0xF || !meta24Valid(v) {
				return nil, argErr(op, "meta", ErrMeta24, "column %d, rows %d..%d: byte %#02x is not two ascending positions in bits 0-3 (word %d = %#04x)",
					n, 4*q, 4*q+3, v, n*bw+q/2, b[n*bw+q/2])
			}
			w := &out[n*mw+q/8]
			sh := 4 * uint(q%8)
			*w = *w&^(0xF<<sh) | v<<sh
		}
	}
	return out, nil
}
