package cudaload

import (
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"
)

func TestLaunchConfigRejectsZeroDimensions(t *testing.T) {
	one := Dim3{1, 1, 1}
	tests := []struct {
		name    string
		cfg     LaunchConfig
		wantErr string
	}{
		{"valid", LaunchConfig{Grid: Dim3{100, 2, 1}, Block: Dim3{256, 1, 1}}, ""},
		{"zero value", LaunchConfig{}, "Grid.X is 0"},
		{"grid y zero", LaunchConfig{Grid: Dim3{1, 0, 1}, Block: one}, "Grid.Y is 0"},
		{"grid z zero", LaunchConfig{Grid: Dim3{1, 1, 0}, Block: one}, "Grid.Z is 0"},
		{"block x zero", LaunchConfig{Grid: one, Block: Dim3{0, 1, 1}}, "Block.X is 0"},
		{"block z zero", LaunchConfig{Grid: one, Block: Dim3{32, 1, 0}}, "Block.Z is 0"},
		// Device limits are the driver's to enforce (ErrInvalidValue from
		// cuLaunchKernel), so they pass here.
		{"too many threads is the driver's call", LaunchConfig{Grid: one, Block: Dim3{2048, 1, 1}}, ""},
		{"huge shared memory is the driver's call", LaunchConfig{Grid: one, Block: one, SharedMemBytes: 1 << 30}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.cfg.Validate()
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

func TestLaunchConfigRejectsClosedStream(t *testing.T) {
	s := &Stream{}
	s.closed.Store(true)
	err := LaunchConfig{Grid: Dim3{1, 1, 1}, Block: Dim3{1, 1, 1}, Stream: s}.Validate()
	require.ErrorIs(t, err, ErrClosed)
}

func TestDim3CountAndString(t *testing.T) {
	d := Dim3{65535, 65535, 64}
	require.Equal(t, uint64(65535)*65535*64, d.Count())
	require.Equal(t, "(65535,65535,64)", d.String())
}

func TestLaunchErrorUnwrapsToTheCode(t *testing.T) {
	err := error(&LaunchError{Kernel: "k", Grid: Dim3{1, 1, 1}, Block: Dim3{2048, 1, 1}, Err: newError("cuLaunchKernel", ErrInvalidValue)})
	require.ErrorIs(t, err, ErrInvalidValue)
	var e *Error
	require.ErrorAs(t, err, &e)
	require.Equal(t, "cuLaunchKernel", e.Op)
	require.Contains(t, err.Error(), "block (2048,1,1)")
}

func TestNilAndZeroObjectsReportClosedInsteadOfCrashing(t *testing.T) {
	var c *Context
	_, err := c.MemAlloc(16)
	require.ErrorIs(t, err, ErrClosed)
	require.ErrorIs(t, c.Synchronize(), ErrClosed)
	require.NoError(t, c.Close())
	var s *Stream
	require.ErrorIs(t, s.Synchronize(), ErrClosed)
	require.NoError(t, s.Close())
	require.Zero(t, s.Handle())
	var e *Event
	require.ErrorIs(t, e.Synchronize(), ErrClosed)
	require.NoError(t, e.Close())
	_, err = ElapsedTime(e, e)
	require.ErrorIs(t, err, ErrClosed)
	var m *Module
	_, err = m.Function("k")
	require.ErrorIs(t, err, ErrClosed)
	require.NoError(t, m.Close())
	var f *Function
	require.ErrorIs(t, f.Launch(LaunchConfig{Grid: Dim3{1, 1, 1}, Block: Dim3{1, 1, 1}}, nil), ErrClosed)
	_, err = f.Attribute(AttrNumRegs)
	require.ErrorIs(t, err, ErrClosed)
	_, err = c.EncodeTiled(TensorMapFloat32, 1, 16, []uint64{4}, nil, []uint32{4}, []uint32{1}, 0, 0, 0, 0)
	require.ErrorIs(t, err, ErrClosed)
}

func TestZeroValueObjectsReturnErrorsNotPanics(t *testing.T) {
	var d Driver
	_, err := d.DeviceCount()
	require.ErrorIs(t, err, ErrInvalidArgument)
	_, err = d.Device(0)
	require.ErrorIs(t, err, ErrInvalidArgument)
	var dev Device
	_, err = dev.Attribute(DevAttrWarpSize)
	require.ErrorIs(t, err, ErrInvalidArgument)
	_, err = dev.PrimaryContext()
	require.ErrorIs(t, err, ErrInvalidArgument)
	var c Context
	_, err = c.MemAlloc(64)
	require.ErrorIs(t, err, ErrClosed)
	require.NoError(t, c.Close())
	var s Stream
	require.ErrorIs(t, s.MemsetD32Async(0, 0, 1), ErrClosed)
	var e Event
	require.ErrorIs(t, e.Record(nil), ErrClosed)
	var m Module
	_, err = m.Function("k")
	require.ErrorIs(t, err, ErrClosed)
	var f Function
	require.ErrorIs(t, f.Launch(LaunchConfig{Grid: Dim3{1, 1, 1}, Block: Dim3{1, 1, 1}}, nil), ErrClosed)
	require.ErrorIs(t, f.SetMaxDynamicSharedMemory(0), ErrClosed)
}

func TestZeroValueStreamIsRefusedNotUsedAsDefault(t *testing.T) {
	var s Stream
	err := LaunchConfig{Grid: Dim3{1, 1, 1}, Block: Dim3{1, 1, 1}, Stream: &s}.Validate()
	require.ErrorIs(t, err, ErrClosed)
	e := &Event{}
	require.ErrorIs(t, e.Record(&s), ErrClosed)
}

// TestLaunchExStructsMatchTheDriverABI: CUlaunchConfig and
// CUlaunchAttribute as cuda.h lays them out on a 64-bit host.
func TestLaunchExStructsMatchTheDriverABI(t *testing.T) {
	var c launchConfigC
	require.Equal(t, uintptr(56), unsafe.Sizeof(c))
	require.Equal(t, uintptr(24), unsafe.Offsetof(c.shared))
	require.Equal(t, uintptr(32), unsafe.Offsetof(c.stream))
	require.Equal(t, uintptr(40), unsafe.Offsetof(c.attrs))
	require.Equal(t, uintptr(48), unsafe.Offsetof(c.numAttrs))
	var a launchAttributeC
	require.Equal(t, uintptr(72), unsafe.Sizeof(a))
	require.Equal(t, uintptr(8), unsafe.Offsetof(a.value))
}
