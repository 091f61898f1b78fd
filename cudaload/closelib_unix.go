//go:build (darwin || freebsd || linux || netbsd) && !android

package cudaload

import "github.com/ebitengine/purego"

// closeLibrary unloads a candidate that was rejected, so a stub that shares
// the driver's soname cannot shadow the real driver in a later dlopen.
func closeLibrary(handle uintptr) { _ = purego.Dlclose(handle) }
