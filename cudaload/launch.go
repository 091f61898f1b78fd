package cudaload

import (
	"runtime"
	"strconv"
	"sync"
	"unsafe"
)

// Dim3 is a grid or block size in three dimensions.
type Dim3 struct{ X, Y, Z uint32 }

// Count is X*Y*Z.
func (d Dim3) Count() uint64 { return uint64(d.X) * uint64(d.Y) * uint64(d.Z) }

// String formats as "(X,Y,Z)".
func (d Dim3) String() string {
	return "(" + strconv.FormatUint(uint64(d.X), 10) + "," + strconv.FormatUint(uint64(d.Y), 10) + "," + strconv.FormatUint(uint64(d.Z), 10) + ")"
}

// LaunchConfig is the shape of a kernel launch.
type LaunchConfig struct {
	Grid, Block    Dim3
	SharedMemBytes uint32  // dynamic shared memory per block
	Stream         *Stream // nil: the legacy default stream
	// Overlap lets the grid start while the kernel ahead of it in the
	// stream is still running (programmatic dependent launch: sm_90 or
	// newer, a CUDA 12 driver). The kernel must execute
	// griddepcontrol.wait before it reads or writes global memory that
	// kernel may touch; the wait returns once that kernel has finished and
	// its writes are visible. Where the driver lacks cuLaunchKernelEx the
	// launch is an ordinary one, and the wait returns at once.
	Overlap bool
}

// Validate checks what is wrong on every device: a zero grid or block
// dimension, or a closed stream (or one of a closed context). Device
// limits (threads per block, grid size, shared memory) are the driver's
// to check; it answers with ErrInvalidValue.
func (c LaunchConfig) Validate() error {
	for _, d := range [...]struct {
		name string
		v    uint32
	}{
		{"Grid.X", c.Grid.X}, {"Grid.Y", c.Grid.Y}, {"Grid.Z", c.Grid.Z},
		{"Block.X", c.Block.X}, {"Block.Y", c.Block.Y}, {"Block.Z", c.Block.Z},
	} {
		if d.v == 0 {
			return argError("Launch", "%s is 0 (grid %v, block %v)", d.name, c.Grid, c.Block)
		}
	}
	if c.Stream != nil {
		if err := c.Stream.usable("Launch"); err != nil {
			return err
		}
	}
	return nil
}

// Launch queues the kernel on cfg.Stream with the packed arguments
// (cuLaunchKernel); args may be nil for a kernel without parameters. It
// returns once the launch is queued: errors in the kernel's execution
// surface at the next synchronisation. A launch the driver refuses (too
// many threads, too much shared memory) returns a *LaunchError wrapping
// the driver's *Error, typically ErrInvalidValue, and leaves the context
// usable.
//
// Launch is the hot path: after the first call with a given Args it
// allocates nothing, and its host cost is a few hundred nanoseconds on top
// of the driver's own.
func (f *Function) Launch(cfg LaunchConfig, args *Args) error {
	if err := f.usable("Launch"); err != nil {
		return err
	}
	if err := cfg.Validate(); err != nil {
		return err
	}
	if cfg.Stream != nil && cfg.Stream.ctx != f.mod.ctx && cfg.Stream.ctx.handle != f.mod.ctx.handle {
		return argError("Launch", "stream belongs to another context")
	}
	var params uintptr
	if args != nil {
		p, err := args.prepare()
		if err != nil {
			return err
		}
		params = p
	}
	c := f.mod.ctx
	var stream uintptr
	if cfg.Stream != nil {
		stream = cfg.Stream.handle
	}
	var ex uintptr
	if cfg.Overlap {
		ex = c.drv.launchKernelEx()
	}
	op := "cuLaunchKernel"
	runtime.LockOSThread()
	r := Success
	bound := c.bind()
	if bound == Success {
		if ex != 0 {
			op = "cuLaunchKernelEx"
			r = launchOverlapped(ex, f.handle, cfg, stream, params)
		} else {
			r = call(c.drv.sym.cuLaunchKernel, f.handle,
				uintptr(cfg.Grid.X), uintptr(cfg.Grid.Y), uintptr(cfg.Grid.Z),
				uintptr(cfg.Block.X), uintptr(cfg.Block.Y), uintptr(cfg.Block.Z),
				uintptr(cfg.SharedMemBytes), stream, params, 0)
		}
	}
	runtime.UnlockOSThread()
	if params != 0 {
		args.release()
	}
	if bound != Success {
		return newError("cuCtxSetCurrent", bound)
	}
	if r != Success {
		return &LaunchError{Kernel: f.name, Grid: cfg.Grid, Block: cfg.Block, SharedMemBytes: cfg.SharedMemBytes, Err: newError(op, r)}
	}
	return nil
}

// launchConfigC is CUlaunchConfig on a 64-bit host.
type launchConfigC struct {
	gridX, gridY, gridZ    uint32
	blockX, blockY, blockZ uint32
	shared                 uint32
	_                      uint32
	stream                 uintptr
	attrs                  uintptr // *CUlaunchAttribute
	numAttrs               uint32
	_                      uint32
}

// launchAttributeC is CUlaunchAttribute: an id, padding to 8 bytes, and
// the 64-byte CUlaunchAttributeValue union.
type launchAttributeC struct {
	id    uint32
	_     uint32
	value [64]byte
}

// attrProgrammaticStreamSerialization is
// CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION; its value is the
// int programmaticStreamSerializationAllowed.
const attrProgrammaticStreamSerialization = 6

// launchExFrame is cuLaunchKernelEx's config and its one attribute in one
// heap object, pooled so an overlapped launch allocates nothing.
type launchExFrame struct {
	cfg  launchConfigC
	attr launchAttributeC
}

var launchExPool = sync.Pool{New: func() any { return new(launchExFrame) }}

// launchOverlapped is cuLaunchKernelEx with programmatic stream
// serialization allowed.
func launchOverlapped(ex, fn uintptr, cfg LaunchConfig, stream, params uintptr) Result {
	fr := launchExPool.Get().(*launchExFrame)
	*fr = launchExFrame{}
	fr.cfg = launchConfigC{
		gridX: cfg.Grid.X, gridY: cfg.Grid.Y, gridZ: cfg.Grid.Z,
		blockX: cfg.Block.X, blockY: cfg.Block.Y, blockZ: cfg.Block.Z,
		shared: cfg.SharedMemBytes, stream: stream,
		attrs: uintptr(unsafe.Pointer(&fr.attr)), numAttrs: 1,
	}
	fr.attr.id = attrProgrammaticStreamSerialization
	fr.attr.value[0] = 1 // little-endian int 1
	r := callKeep(ex, unsafe.Pointer(fr), uintptr(unsafe.Pointer(&fr.cfg)), fn, params, 0)
	launchExPool.Put(fr)
	return r
}

// LaunchError is a launch the driver refused, with the launch's shape.
// errors.Is(err, ErrInvalidValue) and friends match through Unwrap.
type LaunchError struct {
	Kernel         string
	Grid, Block    Dim3
	SharedMemBytes uint32
	Err            *Error
}

// Error implements the error interface.
func (e *LaunchError) Error() string {
	return "launch " + e.Kernel + " grid " + e.Grid.String() + " block " + e.Block.String() +
		" shared " + strconv.FormatUint(uint64(e.SharedMemBytes), 10) + " B: " + e.Err.Error()
}

// Unwrap returns the driver error.
func (e *LaunchError) Unwrap() error { return e.Err }
