package cudaload

import (
	"encoding/binary"
	"math"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"
)

// packed returns the bytes of the packed values.
func packed(a *Args) []byte { return a.buf[a.start : a.start+a.size] }

func TestArgsPacksAtRealSizeAndNaturalAlignment(t *testing.T) {
	var tm TensorMap
	for i := range tm {
		tm[i] = byte(i)
	}
	tests := []struct {
		name     string
		pack     func(*Args)
		wantOffs []uint32
		wantSize int
	}{
		{"pointer then ints", func(a *Args) { a.Ptr(1).Uint32(2).Int32(3) }, []uint32{0, 8, 12}, 16},
		{"int then pointer pads to 8", func(a *Args) { a.Uint32(1).Ptr(2) }, []uint32{0, 8}, 16},
		{"int then int64 pads to 8", func(a *Args) { a.Int32(1).Int64(2).Float32(3) }, []uint32{0, 8, 16}, 20},
		{"floats pack densely", func(a *Args) { a.Float32(1).Float32(2).Float32(3) }, []uint32{0, 4, 8}, 12},
		{"tensor map at 64", func(a *Args) { a.Ptr(1).Uint32(2).TensorMap(&tm).Uint32(3) }, []uint32{0, 8, 64, 192}, 196},
		{"probe_args layout", func(a *Args) { a.Ptr(1).Uint32(2).Uint64(3).Float32(4).Bytes(tm[:], 64).Uint32(5) }, []uint32{0, 8, 16, 24, 64, 192}, 196},
		{"odd bytes then int", func(a *Args) { a.Bytes([]byte{1, 2, 3}, 1).Uint32(4) }, []uint32{0, 4}, 8},
		{"16-aligned struct", func(a *Args) { a.Uint32(1).Bytes(make([]byte, 16), 16) }, []uint32{0, 16}, 32},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var a Args
			tt.pack(&a)
			require.NoError(t, a.Err())
			require.Equal(t, tt.wantOffs, a.offs)
			require.Equal(t, len(tt.wantOffs), a.Len())
			require.Equal(t, tt.wantSize, a.Size())
		})
	}
}

func TestArgsStoresValuesInNativeLayout(t *testing.T) {
	var tm TensorMap
	for i := range tm {
		tm[i] = byte(255 - i)
	}
	var a Args
	a.Ptr(0x1122334455667788).Uint32(0xdeadbeef).Uint64(0x0102030405060708).Float32(1.5).TensorMap(&tm).Int32(-2).Float64(-0.25)
	require.NoError(t, a.Err())
	b := packed(&a)
	ne := binary.NativeEndian
	require.Equal(t, uint64(0x1122334455667788), ne.Uint64(b[0:]))
	require.Equal(t, uint32(0xdeadbeef), ne.Uint32(b[8:]))
	require.Equal(t, uint64(0x0102030405060708), ne.Uint64(b[16:]))
	require.Equal(t, math.Float32bits(1.5), ne.Uint32(b[24:]))
	require.Equal(t, make([]byte, 64-28), b[28:64], "padding is zero")
	require.Equal(t, tm[:], b[64:192])
	require.Equal(t, uint32(0xfffffffe), ne.Uint32(b[192:]))
	require.Equal(t, math.Float64bits(-0.25), ne.Uint64(b[200:]))
}

func TestArgsBlockStartIs64ByteAlignedAcrossGrowth(t *testing.T) {
	var a Args
	for i := 0; i < 200; i++ {
		a.Uint64(uint64(i))
		require.Zero(t, uintptr(unsafe.Pointer(&a.buf[a.start]))%argsBaseAlign, "after %d params", i+1)
	}
	b := packed(&a)
	for i := 0; i < 200; i++ {
		require.Equal(t, uint64(i), binary.NativeEndian.Uint64(b[8*i:]), "value %d survived growth", i)
	}
}

func TestArgsResetKeepsStorageAndAllocatesNothing(t *testing.T) {
	var a Args
	var tm TensorMap
	pack := func() { a.Reset().Ptr(1).Uint32(2).Uint64(3).Float32(4).TensorMap(&tm).Uint32(5) }
	pack()
	require.Zero(t, testing.AllocsPerRun(100, pack))
	require.Equal(t, 6, a.Len())
}

func TestArgsRemembersTheFirstError(t *testing.T) {
	tests := []struct {
		name string
		pack func(*Args)
	}{
		{"alignment not a power of two", func(a *Args) { a.Bytes([]byte{1, 2, 3}, 3) }},
		{"alignment zero", func(a *Args) { a.Bytes([]byte{1}, 0) }},
		{"alignment above 64", func(a *Args) { a.Bytes([]byte{1}, 128) }},
		{"empty bytes", func(a *Args) { a.Bytes(nil, 4) }},
		{"past the parameter limit", func(a *Args) { a.Bytes(make([]byte, MaxParamBytes), 4).Uint32(1) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var a Args
			a.Uint32(7)
			tt.pack(&a)
			a.Uint32(8) // ignored after the error
			require.ErrorIs(t, a.Err(), ErrInvalidArgument)
			_, err := a.prepare()
			require.ErrorIs(t, err, ErrInvalidArgument)
			a.Reset()
			require.NoError(t, a.Err())
			require.Zero(t, a.Len())
		})
	}
}

func TestArgsPrepareWritesPointerTableIntoTheBlock(t *testing.T) {
	var a Args
	var tm TensorMap
	a.Ptr(1).Uint32(2).TensorMap(&tm).Uint64(3)
	table, err := a.prepare()
	require.NoError(t, err)
	defer a.release()
	base := uintptr(unsafe.Pointer(&a.buf[a.start]))
	require.Zero(t, table%uintptr(ptrSize))
	lo := uintptr(unsafe.Pointer(&a.buf[0]))
	require.True(t, table >= lo && table+uintptr(a.Len()*ptrSize) <= lo+uintptr(len(a.buf)), "table lies inside the pinned block")
	for i, off := range a.offs {
		entry := *(*uintptr)(unsafe.Pointer(&a.buf[int(table-lo)+i*ptrSize]))
		require.Equal(t, base+uintptr(off), entry, "param %d", i)
	}
}

func TestArgsEmptyPreparesNullTable(t *testing.T) {
	var a Args
	table, err := a.prepare()
	require.NoError(t, err)
	require.Zero(t, table)
}

func BenchmarkArgsPack(b *testing.B) {
	var a Args
	var tm TensorMap
	b.ReportAllocs()
	for b.Loop() {
		a.Reset().Ptr(0x1000).Ptr(0x2000).Uint32(4096).Uint32(4096).Float32(1).TensorMap(&tm)
		if _, err := a.prepare(); err != nil {
			b.Fatal(err)
		}
		a.release()
	}
}
