package kernels

import (
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strings"

	"github.com/detgemm/detgemm/nvrtc"
)

//go:embed cuda/*.cu cuda/*.cuh
var sources embed.FS

const (
	sourceDir    = "cuda"
	familySuffix = ".cu"
	headerSuffix = ".cuh"
)

// ErrUnknownFamily is matched when a family name has no source file.
var ErrUnknownFamily = errors.New("kernels: unknown kernel family")

// Families returns the names of the kernel families (the .cu files without
// their extension), sorted.
func Families() []string {
	var out []string
	for _, name := range sourceNames() {
		if f, ok := strings.CutSuffix(name, familySuffix); ok {
			out = append(out, f)
		}
	}
	return out
}

// Source returns the CUDA C source of one family, as embedded.
func Source(family string) (string, error) {
	if strings.ContainsAny(family, `/\.`) || family == "" {
		return "", fmt.Errorf("%w: %q", ErrUnknownFamily, family)
	}
	b, err := sources.ReadFile(path.Join(sourceDir, family+familySuffix))
	if err != nil {
		return "", fmt.Errorf("%w: %q (have %s)", ErrUnknownFamily, family, strings.Join(Families(), ", "))
	}
	return string(b), nil
}

// headers returns the shared headers (prelude.cuh, ...) sorted by name,
// ready to hand to NVRTC; every family may include any of them.
func headers() []nvrtc.Header {
	var out []nvrtc.Header
	for _, name := range sourceNames() {
		if !strings.HasSuffix(name, headerSuffix) {
			continue
		}
		b, err := sources.ReadFile(path.Join(sourceDir, name))
		if err != nil {
			continue // cannot happen for a name ReadDir just listed
		}
		out = append(out, nvrtc.Header{Name: name, Source: string(b)})
	}
	return out
}

// sourceNames lists cuda/ sorted; embed.FS directories are static.
func sourceNames() []string {
	entries, err := fs.ReadDir(sources, sourceDir)
	if err != nil {
		return nil
	}
	names := make([]string, 0, len(entries))
	for _, e := range entries {
		names = append(names, e.Name())
	}
	sort.Strings(names)
	return names
}
