package main

import "os"

// driverRelease reads the kernel module's version; "" when unavailable.
func driverRelease() string {
	b, err := os.ReadFile("/proc/driver/nvidia/version")
	if err != nil {
		return ""
	}
	return parseDriverRelease(string(b))
}
