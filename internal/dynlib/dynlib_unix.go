//go:build (darwin || freebsd || linux || netbsd) && !android

package dynlib

import "github.com/ebitengine/purego"

func open(path string) (uintptr, error) {
	return purego.Dlopen(path, purego.RTLD_NOW|purego.RTLD_GLOBAL)
}

func lookup(h uintptr, name string) (uintptr, error) {
	return purego.Dlsym(h, name)
}
