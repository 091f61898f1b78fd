//go:build windows

package cublaslt

// libraryNames are the DLL names tried, newest major first.
var libraryNames = []string{"cublasLt64_13.dll", "cublasLt64_12.dll", "cublasLt64_11.dll"}
