//go:build !windows

package cublaslt

// libraryNames are the sonames tried, newest major first; each major's
// soname stays stable across its minor releases.
var libraryNames = []string{"libcublasLt.so.13", "libcublasLt.so.12", "libcublasLt.so.11"}
