package cudaload

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// The fake driver (fakedriver_linux_test.go) answers every entry point with
// success and writes nothing, so these tests prove the package's own
// checks and bookkeeping; buffer_gpu_test.go proves the bytes.

func TestFakeDriverMemGetInfo(t *testing.T) {
	ctx := fakeContext(t)
	free, total, err := ctx.MemGetInfo()
	require.NoError(t, err)
	require.Zero(t, free, "the fake driver writes nothing")
	require.Zero(t, total)
	require.NoError(t, ctx.Close())
	_, _, err = ctx.MemGetInfo()
	require.ErrorIs(t, err, ErrClosed)
}

func TestSymbolTableBindsMemGetInfoV2(t *testing.T) {
	var s symbols
	for _, row := range s.table() {
		if row.dst == &s.cuMemGetInfo {
			require.Equal(t, []string{"cuMemGetInfo_v2"}, row.names, "cuMemGetInfo is the 32-bit CUDA 3.x ABI")
			return
		}
	}
	t.Fatal("cuMemGetInfo_v2 is not in the symbol table")
}

func TestBufferSizesFromElementCount(t *testing.T) {
	ctx := fakeContext(t)
	f, err := NewBuffer[float32](ctx, 5)
	require.NoError(t, err)
	require.Equal(t, 5, f.Len())
	require.Equal(t, uint64(20), f.Bytes())
	require.Same(t, ctx, f.Context())
	type bf16 uint16
	h, err := NewBuffer[bf16](ctx, 3)
	require.NoError(t, err)
	require.Equal(t, uint64(6), h.Bytes())
	d, err := NewBuffer[float64](ctx, 2)
	require.NoError(t, err)
	require.Equal(t, uint64(16), d.Bytes())
	u, err := NewBufferFrom(ctx, []uint8{1, 2, 3})
	require.NoError(t, err)
	require.Equal(t, 3, u.Len())
	require.Equal(t, uint64(3), u.Bytes())
	for _, c := range []interface{ Close() error }{f, h, d, u} {
		require.NoError(t, c.Close())
	}
}

func TestBufferRefusesBadLengths(t *testing.T) {
	ctx := fakeContext(t)
	for _, n := range []int{0, -1} {
		_, err := NewBuffer[int32](ctx, n)
		require.ErrorIs(t, err, ErrInvalidArgument, "n = %d", n)
	}
	_, err := NewBuffer[uint64](ctx, 1<<61)
	require.ErrorIs(t, err, ErrInvalidArgument, "2^61 elements of 8 bytes overflow")
	_, err = NewBufferFrom[float32](ctx, nil)
	require.ErrorIs(t, err, ErrInvalidArgument)

	b, err := NewBuffer[float32](ctx, 4)
	require.NoError(t, err)
	defer b.Close()
	for _, c := range []struct {
		name string
		op   func() error
		host int
	}{
		{"CopyFromHost short", func() error { return b.CopyFromHost(make([]float32, 3)) }, 3},
		{"CopyFromHost long", func() error { return b.CopyFromHost(make([]float32, 5)) }, 5},
		{"CopyFromHost nil", func() error { return b.CopyFromHost(nil) }, 0},
		{"CopyToHost short", func() error { return b.CopyToHost(make([]float32, 1)) }, 1},
		{"CopyToHost long", func() error { return b.CopyToHost(make([]float32, 8)) }, 8},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := c.op()
			require.ErrorIs(t, err, ErrLengthMismatch)
			require.ErrorIs(t, err, ErrInvalidArgument)
			var le *LengthError
			require.ErrorAs(t, err, &le)
			require.Equal(t, 4, le.Buffer)
			require.Equal(t, c.host, le.Host)
			require.Contains(t, err.Error(), "exactly Len()")
		})
	}
	require.NoError(t, b.CopyFromHost(make([]float32, 4)))
	require.NoError(t, b.CopyToHost(make([]float32, 4)))
}

func TestBufferAfterCloseIsAnErrorNotACrash(t *testing.T) {
	ctx := fakeContext(t)
	b, err := NewBuffer[uint16](ctx, 8)
	require.NoError(t, err)
	require.NoError(t, b.Close())
	require.NoError(t, b.Close(), "Close is idempotent")
	require.Zero(t, b.Ptr())
	require.Equal(t, 8, b.Len(), "the length stays readable")
	for _, err := range []error{b.CopyFromHost(make([]uint16, 8)), b.CopyToHost(make([]uint16, 8))} {
		require.ErrorIs(t, err, ErrClosed)
		var ce *ClosedError
		require.ErrorAs(t, err, &ce)
		require.Equal(t, "buffer", ce.Object)
	}

	// A buffer of a closed context: the copy reaches the context's check.
	b, err = NewBuffer[uint16](ctx, 8)
	require.NoError(t, err)
	require.NoError(t, ctx.Close())
	require.ErrorIs(t, b.CopyFromHost(make([]uint16, 8)), ErrClosed)
	_, err = NewBuffer[uint16](ctx, 8)
	require.ErrorIs(t, err, ErrClosed)
}
