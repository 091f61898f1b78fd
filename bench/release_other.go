//go:build !linux

package main

// driverRelease is unknown off Linux (the bench does not query NVML).
func driverRelease() string { return "" }
