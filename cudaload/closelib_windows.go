//go:build windows

package cudaload

import "syscall"

// closeLibrary unloads a candidate that was rejected.
func closeLibrary(handle uintptr) { _ = syscall.FreeLibrary(syscall.Handle(handle)) }
