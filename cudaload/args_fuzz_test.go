package cudaload

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"
	"unsafe"
)

// FuzzArgs runs a fuzzed program of packing calls on one Args: each byte
// picks an operation (a scalar of each size, a by-value Bytes of fuzzed
// length and alignment, a TensorMap, a Reset), the following bytes its
// value. Nothing may panic; a refusal is an *ArgumentError matching
// ErrInvalidArgument, remembered until Reset, after which packing changes
// nothing; every parameter lies at its natural alignment within
// MaxParamBytes, holds the bytes packed, and the launch table prepare
// builds points at each of them.
func FuzzArgs(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3, 4, 5, 6})
	f.Add([]byte{1, 7, 0, 8, 1})                        // int32 then a pointer: padding
	f.Add([]byte{7, 0x80, 0x40, 0, 0})                  // Bytes of 128, align 64
	f.Add([]byte{7, 0x00, 0x03, 0})                     // Bytes, align 3
	f.Add([]byte{7, 0x00, 0x00, 0})                     // empty Bytes
	f.Add([]byte{7, 0xff, 0x7f, 0x80})                  // Bytes past MaxParamBytes
	f.Add(bytes.Repeat([]byte{8}, 300))                 // TensorMaps past the limit
	f.Add(append(bytes.Repeat([]byte{8}, 300), 9, 0))   // then Reset, then more
	f.Add(bytes.Repeat([]byte{3, 1, 2, 3, 4, 5}, 4000)) // many scalars
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, prog []byte) {
		var a Args
		type packed struct {
			off   int
			align int
			value []byte
		}
		var want []packed
		failed := false
		next := func(n int) []byte { // the next n program bytes as a value
			v := make([]byte, n)
			k := copy(v, prog)
			prog = prog[k:]
			return v
		}
		for len(prog) > 0 {
			op := prog[0] % 10
			prog = prog[1:]
			before, beforeLen := a.Size(), a.Len()
			var v []byte
			align := 0
			switch op {
			case 0:
				v, align = next(8), 8
				a.Ptr(DevicePtr(binary.LittleEndian.Uint64(v)))
			case 1:
				v, align = next(4), 4
				a.Int32(int32(binary.LittleEndian.Uint32(v)))
			case 2:
				v, align = next(4), 4
				a.Uint32(binary.LittleEndian.Uint32(v))
			case 3:
				v, align = next(8), 8
				a.Int64(int64(binary.LittleEndian.Uint64(v)))
			case 4:
				v, align = next(8), 8
				a.Uint64(binary.LittleEndian.Uint64(v))
			case 5:
				v, align = next(4), 4
				a.Float32(*(*float32)(unsafe.Pointer(&v[0])))
			case 6:
				v, align = next(8), 8
				a.Float64(*(*float64)(unsafe.Pointer(&v[0])))
			case 7:
				h := next(3)
				n := int(binary.LittleEndian.Uint16(h[:2]) & 0x7fff)
				align = int(int8(h[2])) // negative, zero and non-powers too
				v = next(n)
				a.Bytes(v, align)
			case 8:
				var tm TensorMap
				copy(tm[:], next(len(tm)))
				v, align = tm[:], 64
				a.TensorMap(&tm)
			case 9:
				a.Reset()
				want, failed = want[:0], false
				if a.Size() != 0 || a.Len() != 0 || a.Err() != nil {
					t.Fatalf("Reset left %v, err %v", &a, a.Err())
				}
				continue
			}
			if err := a.Err(); err != nil {
				if !errors.Is(err, ErrInvalidArgument) {
					t.Fatalf("op %d: untyped error %v", op, err)
				}
				var ae *ArgumentError
				if !errors.As(err, &ae) {
					t.Fatalf("op %d: %T is not an *ArgumentError", op, err)
				}
				if a.Size() != before || a.Len() != beforeLen {
					t.Fatalf("op %d: a refused pack changed the block: %d→%d bytes, %d→%d params", op, before, a.Size(), beforeLen, a.Len())
				}
				failed = true
				continue
			}
			if failed {
				t.Fatalf("op %d: the error was forgotten", op)
			}
			off := int(a.offs[len(a.offs)-1])
			want = append(want, packed{off, align, v})
		}
		if a.Size() > MaxParamBytes {
			t.Fatalf("%v: past MaxParamBytes", &a)
		}
		_ = a.String()
		if failed {
			if _, err := a.prepare(); !errors.Is(err, ErrInvalidArgument) {
				t.Fatalf("prepare after a refusal: %v", err)
			}
			return
		}
		if a.Len() != len(want) {
			t.Fatalf("Len %d, packed %d", a.Len(), len(want))
		}
		end := 0
		for i, p := range want {
			if p.off%p.align != 0 || p.off < end {
				t.Fatalf("param %d at %d (align %d) overlaps or misaligns (previous end %d)", i, p.off, p.align, end)
			}
			end = p.off + len(p.value)
			if got := a.buf[a.start+p.off : a.start+end]; !bytes.Equal(got, p.value) {
				t.Fatalf("param %d holds %x, packed %x", i, got, p.value)
			}
		}
		if end != a.Size() {
			t.Fatalf("Size %d, last parameter ends at %d", a.Size(), end)
		}
		tab, err := a.prepare()
		if err != nil {
			t.Fatal(err)
		}
		defer a.release()
		if len(want) == 0 {
			if tab != 0 {
				t.Fatalf("no parameters, table %#x", tab)
			}
			return
		}
		base := uintptr(unsafe.Pointer(&a.buf[a.start]))
		if base%argsBaseAlign != 0 {
			t.Fatalf("block at %#x is not %d-byte aligned", base, argsBaseAlign)
		}
		at := int(tab - uintptr(unsafe.Pointer(&a.buf[0]))) // the table's index in buf
		for i, p := range want {
			if got := *(*uintptr)(unsafe.Pointer(&a.buf[at+i*ptrSize])); got != base+uintptr(p.off) {
				t.Fatalf("table entry %d is %#x, want %#x", i, got, base+uintptr(p.off))
			}
		}
	})
}

// FuzzLaunchConfigValidate: any grid and block either validate or give an
// *ArgumentError; a zero dimension never validates.
func FuzzLaunchConfigValidate(f *testing.F) {
	f.Add(uint32(1), uint32(1), uint32(1), uint32(1), uint32(1), uint32(1), uint32(0))
	f.Add(uint32(0), uint32(1), uint32(1), uint32(256), uint32(1), uint32(1), uint32(0))
	f.Add(uint32(1<<31), uint32(65535), uint32(65535), uint32(1024), uint32(1), uint32(0), uint32(1<<31))
	f.Add(^uint32(0), ^uint32(0), ^uint32(0), ^uint32(0), ^uint32(0), ^uint32(0), ^uint32(0))
	f.Fuzz(func(t *testing.T, gx, gy, gz, bx, by, bz, shared uint32) {
		c := LaunchConfig{Grid: Dim3{gx, gy, gz}, Block: Dim3{bx, by, bz}, SharedMemBytes: shared}
		err := c.Validate()
		zero := gx == 0 || gy == 0 || gz == 0 || bx == 0 || by == 0 || bz == 0
		if zero != (err != nil) {
			t.Fatalf("%v / %v: Validate %v", c.Grid, c.Block, err)
		}
		if err != nil && !errors.Is(err, ErrInvalidArgument) {
			t.Fatalf("untyped %v", err)
		}
		_ = c.Grid.String()
		if n := c.Grid.Count(); n != uint64(gx)*uint64(gy)*uint64(gz) {
			t.Fatalf("Count %d", n)
		}
		// A nil function refuses the launch before reading the config.
		var fn *Function
		if err := fn.Launch(c, nil); err == nil {
			t.Fatal("nil Function launched")
		}
	})
}
