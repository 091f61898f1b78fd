package cudaload

import (
	"unsafe"

	"github.com/ebitengine/purego"
)

// DeviceAttribute is a CUdevice_attribute, for Device.Attribute.
type DeviceAttribute int

// Device attributes this package reads; any other CUdevice_attribute value
// may be passed to Device.Attribute as well.
const (
	DevAttrMaxThreadsPerBlock               DeviceAttribute = 1
	DevAttrMaxBlockDimX                     DeviceAttribute = 2
	DevAttrMaxBlockDimY                     DeviceAttribute = 3
	DevAttrMaxBlockDimZ                     DeviceAttribute = 4
	DevAttrMaxGridDimX                      DeviceAttribute = 5
	DevAttrMaxGridDimY                      DeviceAttribute = 6
	DevAttrMaxGridDimZ                      DeviceAttribute = 7
	DevAttrMaxSharedMemoryPerBlock          DeviceAttribute = 8
	DevAttrWarpSize                         DeviceAttribute = 10
	DevAttrMaxRegistersPerBlock             DeviceAttribute = 12
	DevAttrClockRate                        DeviceAttribute = 13 // kHz
	DevAttrMultiprocessorCount              DeviceAttribute = 16
	DevAttrMemoryClockRate                  DeviceAttribute = 36 // kHz
	DevAttrGlobalMemoryBusWidth             DeviceAttribute = 37 // bits
	DevAttrL2CacheSize                      DeviceAttribute = 38 // bytes
	DevAttrMaxThreadsPerMultiprocessor      DeviceAttribute = 39
	DevAttrComputeCapabilityMajor           DeviceAttribute = 75
	DevAttrComputeCapabilityMinor           DeviceAttribute = 76
	DevAttrMaxSharedMemoryPerMultiprocessor DeviceAttribute = 81 // bytes
	DevAttrMaxRegistersPerMultiprocessor    DeviceAttribute = 82
	DevAttrMaxSharedMemoryPerBlockOptin     DeviceAttribute = 97 // bytes
)

// Device is one CUDA device and its properties, read once when the Device
// is first returned by Driver.Device. It is safe for concurrent use.
type Device struct {
	drv        *Driver
	ordinal    int
	handle     int32 // CUdevice
	name       string
	ccMajor    int
	ccMinor    int
	smCount    int
	smemOptin  int
	l2Size     int
	totalBytes uint64
}

func newDevice(d *Driver, ordinal int) (*Device, error) {
	var h int32
	r, _, _ := purego.SyscallN(d.sym.cuDeviceGet, uintptr(unsafe.Pointer(&h)), uintptr(ordinal))
	if err := check("cuDeviceGet", Result(int32(r))); err != nil {
		return nil, err
	}
	dev := &Device{drv: d, ordinal: ordinal, handle: h}

	var name [256]byte
	r, _, _ = purego.SyscallN(d.sym.cuDeviceGetName, uintptr(unsafe.Pointer(&name[0])), uintptr(len(name)), uintptr(h))
	if err := check("cuDeviceGetName", Result(int32(r))); err != nil {
		return nil, err
	}
	dev.name = goString(&name[0])

	var total uint64
	r, _, _ = purego.SyscallN(d.sym.cuDeviceTotalMem, uintptr(unsafe.Pointer(&total)), uintptr(h))
	if err := check("cuDeviceTotalMem_v2", Result(int32(r))); err != nil {
		return nil, err
	}
	dev.totalBytes = total

	for _, q := range []struct {
		attr DeviceAttribute
		dst  *int
	}{
		{DevAttrComputeCapabilityMajor, &dev.ccMajor},
		{DevAttrComputeCapabilityMinor, &dev.ccMinor},
		{DevAttrMultiprocessorCount, &dev.smCount},
		{DevAttrMaxSharedMemoryPerBlockOptin, &dev.smemOptin},
		{DevAttrL2CacheSize, &dev.l2Size},
	} {
		v, err := dev.Attribute(q.attr)
		if err != nil {
			return nil, err
		}
		*q.dst = v
	}
	return dev, nil
}

// Ordinal is the device's index as passed to Driver.Device.
func (dev *Device) Ordinal() int { return dev.ordinal }

// Name is the device's product name, e.g. "NVIDIA H200".
func (dev *Device) Name() string { return dev.name }

// ComputeCapability is the SM architecture version, e.g. (9, 0) for Hopper.
func (dev *Device) ComputeCapability() (major, minor int) { return dev.ccMajor, dev.ccMinor }

// SMCount is the number of streaming multiprocessors.
func (dev *Device) SMCount() int { return dev.smCount }

// MaxSharedMemoryPerBlockOptin is the most shared memory, in bytes, one
// block may use after Function.SetMaxDynamicSharedMemory opts in.
func (dev *Device) MaxSharedMemoryPerBlockOptin() int { return dev.smemOptin }

// L2CacheSize is the L2 cache size in bytes.
func (dev *Device) L2CacheSize() int { return dev.l2Size }

// TotalMemory is the device memory size in bytes.
func (dev *Device) TotalMemory() uint64 { return dev.totalBytes }

// Attribute reads any device attribute (cuDeviceGetAttribute).
func (dev *Device) Attribute(a DeviceAttribute) (int, error) {
	if dev == nil || dev.drv.opened("Device.Attribute") != nil {
		return 0, argError("Device.Attribute", "the Device was not returned by Driver.Device")
	}
	var v int32
	r, _, _ := purego.SyscallN(dev.drv.sym.cuDeviceGetAttribute, uintptr(unsafe.Pointer(&v)), uintptr(uint32(a)), uintptr(dev.handle))
	if err := check("cuDeviceGetAttribute", Result(int32(r))); err != nil {
		return 0, err
	}
	return int(v), nil
}

// PrimaryContext retains the device's primary context (the one the CUDA
// runtime also uses, so memory and modules are shared with libraries such
// as cuBLAS in the same process). Each call retains once; Close on the
// returned Context releases once.
func (dev *Device) PrimaryContext() (*Context, error) {
	if dev == nil || dev.drv.opened("PrimaryContext") != nil {
		return nil, argError("PrimaryContext", "the Device was not returned by Driver.Device")
	}
	var h uintptr
	r, _, _ := purego.SyscallN(dev.drv.sym.cuDevicePrimaryCtxRetain, uintptr(unsafe.Pointer(&h)), uintptr(dev.handle))
	if err := check("cuDevicePrimaryCtxRetain", Result(int32(r))); err != nil {
		return nil, err
	}
	return &Context{drv: dev.drv, dev: dev, handle: h}, nil
}
