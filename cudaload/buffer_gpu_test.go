package cudaload_test

import (
	"testing"

	"github.com/detgemm/detgemm/cudaload"
	"github.com/detgemm/detgemm/internal/gputest"
	"github.com/stretchr/testify/require"
)

func TestGPUMemGetInfo(t *testing.T) {
	ctx := gputest.Context(t)
	free, total, err := ctx.MemGetInfo()
	require.NoError(t, err)
	require.Equal(t, ctx.Device().TotalMemory(), total, "cuMemGetInfo_v2 and cuDeviceTotalMem_v2 agree")
	require.NotZero(t, free)
	require.LessOrEqual(t, free, total)
}

// roundTrip copies src to a new buffer and back, and checks the bytes and
// the buffer's size.
func roundTrip[T cudaload.Element](t *testing.T, ctx *cudaload.Context, src []T, size uint64) {
	t.Helper()
	b, err := cudaload.NewBufferFrom(ctx, src)
	require.NoError(t, err)
	defer func() { require.NoError(t, b.Close()) }()
	require.Equal(t, len(src), b.Len())
	require.Equal(t, uint64(len(src))*size, b.Bytes())
	require.NotZero(t, b.Ptr())
	got := make([]T, len(src))
	require.NoError(t, b.CopyToHost(got))
	require.Equal(t, src, got)
}

func TestGPUBufferRoundTrips(t *testing.T) {
	ctx := gputest.Context(t)
	const n = 1<<20 + 3 // not a multiple of anything the driver likes
	f32 := make([]float32, n)
	u16 := make([]uint16, n)
	i32 := make([]int32, n)
	u8 := make([]uint8, n)
	for i := range n {
		f32[i] = float32(i) * 0.25
		u16[i] = uint16(i * 7)
		i32[i] = int32(-i)
		u8[i] = uint8(i)
	}
	roundTrip(t, ctx, f32, 4)
	roundTrip(t, ctx, u16, 2)
	roundTrip(t, ctx, i32, 4)
	roundTrip(t, ctx, u8, 1)
}

func TestGPUBufferWorksWithRawPointerAPIs(t *testing.T) {
	ctx := gputest.Context(t)
	b, err := cudaload.NewBuffer[uint32](ctx, 1000)
	require.NoError(t, err)
	require.NoError(t, ctx.MemsetD32(b.Ptr(), 0xdeadbeef, uint64(b.Len())))
	got := make([]uint32, b.Len())
	require.NoError(t, b.CopyToHost(got))
	for i, v := range got {
		require.Equal(t, uint32(0xdeadbeef), v, "element %d", i)
	}
	require.ErrorIs(t, b.CopyToHost(got[:999]), cudaload.ErrLengthMismatch)
	require.NoError(t, b.Close())
	require.NoError(t, b.Close())
	require.ErrorIs(t, b.CopyToHost(got), cudaload.ErrClosed)
}
