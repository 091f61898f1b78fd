package kernels

import (
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"regexp"
	"slices"
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

// Families returns the names of the engine's kernel families (the .cu
// files without their extension, less the test-only ones: CheckFamilies),
// sorted.
func Families() []string {
	var out []string
	for _, f := range allFamilies() {
		if !isCheckFamily(f) {
			out = append(out, f)
		}
	}
	return out
}

// checkDirective marks a test-only family: a line "//detgemm:check" in its
// source. Such a family holds kernels that tests launch to check a piece of
// device code (a conversion, say) on the GPU; it is never in Families,
// FamiliesFor or the embedded set, and Build compiles it only when
// WithFamilies names it.
const checkDirective = "//detgemm:check"

// CheckFamilies returns the test-only families, sorted (see checkDirective).
func CheckFamilies() []string {
	var out []string
	for _, f := range allFamilies() {
		if isCheckFamily(f) {
			out = append(out, f)
		}
	}
	return out
}

// allFamilies lists every .cu file's family, engine and test-only alike.
func allFamilies() []string {
	var out []string
	for _, name := range sourceNames() {
		if f, ok := strings.CutSuffix(name, familySuffix); ok {
			out = append(out, f)
		}
	}
	return out
}

func isCheckFamily(family string) bool {
	src, err := Source(family)
	if err != nil {
		return false
	}
	for line := range strings.Lines(src) {
		if strings.TrimSpace(line) == checkDirective {
			return true
		}
	}
	return false
}

// ErrFamilyArch is matched when a family is asked for on an architecture it
// is not built for (see FamiliesFor).
var ErrFamilyArch = errors.New("kernels: kernel family not built for this architecture")

// onlyDirective marks a family that exists for some targets only: a line
// "//detgemm:only sm_90a" (names separated by spaces) in its source.
const onlyDirective = "//detgemm:only "

// FamilyTargets returns the architectures a family is restricted to by its
// //detgemm:only line, or nil when it is built for every architecture.
func FamilyTargets(family string) ([]Arch, error) {
	src, err := Source(family)
	if err != nil {
		return nil, err
	}
	for line := range strings.Lines(src) {
		rest, ok := strings.CutPrefix(strings.TrimSpace(line), onlyDirective)
		if !ok {
			continue
		}
		var out []Arch
		for _, name := range strings.Fields(rest) {
			a, err := ParseArch(name)
			if err != nil {
				return nil, fmt.Errorf("kernels: %s.cu: %w", family, err)
			}
			out = append(out, a)
		}
		return out, nil
	}
	return nil, nil
}

// FamiliesFor returns the families built for arch, sorted: every family
// without a //detgemm:only line, and those whose line names arch (the
// wgmma family names sm_90a: its instructions exist there only).
func FamiliesFor(arch Arch) []string {
	var out []string
	for _, f := range Families() {
		if ok, _ := familyBuildsFor(f, arch); ok {
			out = append(out, f)
		}
	}
	return out
}

func familyBuildsFor(family string, arch Arch) (bool, error) {
	targets, err := FamilyTargets(family)
	if err != nil || targets == nil {
		return err == nil, err
	}
	return slices.Contains(targets, arch), nil
}

// Source returns the CUDA C source of one family, as embedded.
func Source(family string) (string, error) {
	if strings.ContainsAny(family, `/\.`) || family == "" {
		return "", fmt.Errorf("%w: %q", ErrUnknownFamily, family)
	}
	b, err := sources.ReadFile(path.Join(sourceDir, family+familySuffix))
	if err != nil {
		return "", fmt.Errorf("%w: %q (have %s)", ErrUnknownFamily, family, strings.Join(allFamilies(), ", "))
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

// includeLine matches a quoted #include at the start of a line.
var includeLine = regexp.MustCompile(`(?m)^[ \t]*#[ \t]*include[ \t]*"([^"]+)"`)

// includedHeaders returns the shared headers that source includes, directly
// or through another header, sorted by name: the only headers that can
// change its compile. Hashing these alone (SourceHash, the cache key) means
// a change to one header, or a new family's entry list, leaves the CUBINs of
// the families that never include it valid. An include inside a comment or
// an #if still counts: a header too many costs a rebuild, never a stale
// CUBIN.
func includedHeaders(source string) []nvrtc.Header {
	all := headers()
	byName := make(map[string]string, len(all))
	for _, h := range all {
		byName[h.Name] = h.Source
	}
	need := map[string]bool{}
	var walk func(text string)
	walk = func(text string) {
		for _, m := range includeLine.FindAllStringSubmatch(text, -1) {
			src, ok := byName[m[1]]
			if !ok || need[m[1]] {
				continue // not a shared header (NVRTC reports it), or seen
			}
			need[m[1]] = true
			walk(src)
		}
	}
	walk(source)
	out := all[:0]
	for _, h := range all {
		if need[h.Name] {
			out = append(out, h)
		}
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
