package cudaload

import (
	"sync"

	"github.com/detgemm/detgemm/internal/dynlib"
	"unsafe"

	"github.com/ebitengine/purego"
)

// Driver is a loaded and initialised CUDA driver. It is safe for
// concurrent use and stays loaded for the life of the process.
type Driver struct {
	lib     *dynlib.Library
	path    string
	version int
	sym     symbols

	tensorMapOnce sync.Once
	tensorMapFn   uintptr
	tensorMapErr  error

	launchExOnce sync.Once
	launchExFn   uintptr // cuLaunchKernelEx, 0 where the driver lacks it

	devMu   sync.Mutex
	devices map[int]*Device
}

// Path is the candidate the driver was loaded from (a soname such as
// "libcuda.so.1", or an absolute path).
func (d *Driver) Path() string {
	if d == nil {
		return ""
	}
	return d.path
}

// Version is cuDriverGetVersion: 1000*major + 10*minor, e.g. 13000.
func (d *Driver) Version() int {
	if d == nil {
		return 0
	}
	return d.version
}

// launchKernelEx resolves the optional cuLaunchKernelEx (CUDA 12.0+) once;
// 0 where the driver lacks it.
func (d *Driver) launchKernelEx() uintptr {
	d.launchExOnce.Do(func() {
		if d.lib != nil {
			if p, err := d.lib.Lookup("cuLaunchKernelEx"); err == nil {
				d.launchExFn = p
			}
		}
	})
	return d.launchExFn
}

// opened refuses a nil or zero Driver (one not returned by Open).
func (d *Driver) opened(op string) error {
	if d == nil || d.sym.cuLaunchKernel == 0 {
		return argError(op, "the Driver was not returned by Open")
	}
	return nil
}

// DeviceCount is the number of CUDA devices the driver sees.
func (d *Driver) DeviceCount() (int, error) {
	if err := d.opened("DeviceCount"); err != nil {
		return 0, err
	}
	var n int32
	r, _, _ := purego.SyscallN(d.sym.cuDeviceGetCount, uintptr(unsafe.Pointer(&n)))
	if err := check("cuDeviceGetCount", Result(int32(r))); err != nil {
		return 0, err
	}
	return int(n), nil
}

// Device returns the device with the given ordinal (0-based), with its
// properties queried once. The same *Device is returned for an ordinal on
// every call.
func (d *Driver) Device(ordinal int) (*Device, error) {
	if err := d.opened("Device"); err != nil {
		return nil, err
	}
	if ordinal < 0 {
		return nil, argError("Device", "negative ordinal %d", ordinal)
	}
	d.devMu.Lock()
	defer d.devMu.Unlock()
	if dev := d.devices[ordinal]; dev != nil {
		return dev, nil
	}
	dev, err := newDevice(d, ordinal)
	if err != nil {
		return nil, err
	}
	if d.devices == nil {
		d.devices = make(map[int]*Device)
	}
	d.devices[ordinal] = dev
	return dev, nil
}

// errorText asks the driver for a status code's name or message through fn
// (cuGetErrorName or cuGetErrorString); false when the driver does not know
// the code.
func (d *Driver) errorText(fn uintptr, code Result) (string, bool) {
	if fn == 0 {
		return "", false
	}
	var p *byte
	r, _, _ := purego.SyscallN(fn, uintptr(uint32(code)), uintptr(unsafe.Pointer(&p)))
	if Result(int32(r)) != Success || p == nil {
		return "", false
	}
	return goString(p), true
}
