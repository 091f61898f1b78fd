// Command gencubin writes kernels' embedded CUBIN set: the files
// kernels/embedded/<dir>/<family>.gz (dir is the architecture for the base
// variant, <arch>+<variant> for the others) and kernels/zembedded.go, the
// table generated from the metadata in the files' gzip headers.
//
// Build one variant with the NVRTC on hand (its major version must be the
// variant's: 12 for base, 13 for cuda13); only that variant's directories
// of the architectures built are replaced, then the table is regenerated
// from every file present:
//
//	go generate ./kernels                                   # base, NVRTC 12.x
//	go run ./kernels/internal/gencubin -variant cuda13     # cuda13, NVRTC 13.x (from kernels/)
//
// -families F1,F2 compiles only those families; the others keep their
// files under -out (or are absent), e.g. one changed family of the cuda13
// variant rebuilt on a GPU machine into a scratch directory and imported.
//
// Other modes need no NVRTC:
//
//	-retable                     regenerate zembedded.go from the files
//	-retable -drop-stale         ... after removing files built from other sources
//	-import DIR -variant cuda13  copy a set built elsewhere (DIR/<dir>/<family>.gz),
//	                             checking its metadata and source hashes
//	-import DIR -legacy-table T  the same for files written before the header
//	                             carried metadata, described by their old table T
//
// The CUBINs are built with exactly the flags of kernels.Flags (the
// production build) and no cache, so every entry is compiled here.
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/detgemm/detgemm/kernels"
	"github.com/detgemm/detgemm/kernels/internal/embedset"
	"github.com/detgemm/detgemm/nvrtc"
)

// useCache: -use-cache, read by buildArch.
var useCache = flag.Bool("use-cache", false, "reuse the kernels disk cache (DETGEMM_CACHE_DIR, else the user cache): entries an engine compiled on this machine from the same sources, flags and NVRTC (the cache key covers them all), so a set rebuilt right after a GPU run compiles only what that run did not")

// families: -families, read by buildArch.
var families = flag.String("families", "", "comma-separated families to compile (default: every family of each arch); a family left out keeps its file under -out where there is one and is otherwise absent, so a GPU machine can rebuild one changed family of a variant in seconds")

// selected reports whether -families asks for fam (every family when unset).
func selected(fam string) bool {
	return *families == "" || slices.Contains(strings.Split(*families, ","), fam)
}

func main() {
	out := flag.String("out", "embedded", "directory of the compressed CUBINs")
	table := flag.String("table", "zembedded.go", "generated Go file recording the set")
	variant := flag.String("variant", embedset.Base, "variant to build or import: base (NVRTC 12.x) or cuda13 (NVRTC 13.x)")
	archList := flag.String("archs", "", "architectures to build or import (default: the variant's)")
	parallel := flag.Int("archs-parallel", 2, "architectures compiled at once (each compiles its families concurrently)")
	retable := flag.Bool("retable", false, "only regenerate the table from the files under -out (no NVRTC)")
	dropStale := flag.Bool("drop-stale", false, "with -retable: remove files built from sources or flags other than this checkout's")
	importDir := flag.String("import", "", "copy the variant's files from this directory (built elsewhere) instead of compiling")
	legacy := flag.String("legacy-table", "", "with -import: the old zembedded.go describing files without header metadata")
	ifStale := flag.Bool("if-stale", false, "build only when the variant's files for the archs are missing or were built from other sources or flags (then `go generate ./...` needs no NVRTC on an up-to-date tree)")
	flag.Parse()
	var err error
	switch {
	case *families != "":
		for _, f := range strings.Split(*families, ",") {
			if !slices.Contains(kernels.Families(), f) {
				err = fmt.Errorf("-families: %q is not a kernel family (kernels/cuda holds %s)", f, strings.Join(kernels.Families(), ", "))
				break
			}
		}
		if err == nil && (*retable || *importDir != "") {
			err = errors.New("-families applies to a build, not to -retable or -import")
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "gencubin:", err)
		os.Exit(2)
	}
	switch {
	case *retable:
		err = writeTable(*out, *table, *dropStale)
	case *importDir != "":
		err = importSet(*importDir, *legacy, *out, *table, *variant, *archList)
	default:
		err = build(*out, *table, *variant, *archList, *parallel, *ifStale)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "gencubin:", err)
		os.Exit(1)
	}
}

// archsFor parses the -archs list, defaulting to the variant's.
func archsFor(v embedset.Variant, list string) ([]kernels.Arch, error) {
	names := v.Archs
	if list != "" {
		names = strings.Split(list, ",")
	}
	var archs []kernels.Arch
	for _, name := range names {
		a, err := kernels.ParseArch(strings.TrimSpace(name))
		if err != nil {
			return nil, err
		}
		archs = append(archs, a)
	}
	return archs, nil
}

type file struct {
	meta embedset.Meta
	data []byte
}

func build(out, table, variant, archList string, parallel int, ifStale bool) error {
	v, err := embedset.LookupVariant(variant)
	if err != nil {
		return err
	}
	wanted, err := archsFor(v, archList)
	if err != nil {
		return err
	}
	if ifStale {
		current, err := upToDate(out, v.Name, wanted)
		if err != nil {
			return err
		}
		if current {
			fmt.Fprintf(os.Stderr, "gencubin: the %s set for %v matches the sources; nothing to build\n", v.Name, wanted)
			return writeTable(out, table, false)
		}
	}
	c, err := nvrtc.Open()
	if err != nil {
		return err
	}
	major, minor := c.Version()
	if major != v.NVRTCMajor {
		return fmt.Errorf("variant %s is built by NVRTC %d.x; this is NVRTC %d.%d (set %s, or pick the variant of this NVRTC)",
			v.Name, v.NVRTCMajor, major, minor, nvrtc.EnvLibrary)
	}
	supported, _ := c.SupportedArchs()
	var archs []kernels.Arch
	for _, a := range wanted {
		if len(supported) > 0 && !slices.Contains(supported, a.Major*10+a.Minor) {
			fmt.Fprintf(os.Stderr, "gencubin: NVRTC %d.%d cannot target %s; left out\n", major, minor, a)
			continue
		}
		archs = append(archs, a)
	}
	if len(archs) == 0 {
		return fmt.Errorf("NVRTC %d.%d can target none of %v", major, minor, wanted)
	}
	nv := fmt.Sprintf("%d.%d", major, minor)
	results := make([][]file, len(archs))
	errs := make([]error, len(archs))
	sem := make(chan struct{}, max(parallel, 1))
	var wg sync.WaitGroup
	for i, a := range archs {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			t0 := time.Now()
			results[i], errs[i] = buildArch(c, a, v.Name, nv, out, ifStale)
			fmt.Fprintf(os.Stderr, "gencubin: %s: %d families in %v\n", a, len(results[i]), time.Since(t0).Round(time.Millisecond))
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	for i, a := range archs {
		if err := replaceDir(out, embedset.Dir(a.String(), v.Name), results[i]); err != nil {
			return err
		}
	}
	return writeTable(out, table, false)
}

// upToDate reports whether out holds, for every arch, exactly the families
// kernels builds there in variant, each built from this checkout's sources
// and flags (its recorded source hash).
func upToDate(out, variant string, archs []kernels.Arch) (bool, error) {
	es, err := embedset.ReadSet(os.DirFS(out))
	if err != nil {
		return false, err
	}
	have := map[string]string{} // dir/family -> source hash
	for _, e := range es {
		have[embedset.Dir(e.Arch, e.Variant)+"/"+e.Family] = e.SourceHash
	}
	for _, a := range archs {
		dir := embedset.Dir(a.String(), variant)
		fams := kernels.FamiliesFor(a)
		n := 0
		for k := range have {
			if strings.HasPrefix(k, dir+"/") {
				n++
			}
		}
		if n != len(fams) {
			return false, nil
		}
		for _, f := range fams {
			h, err := kernels.SourceHash(f, a)
			if err != nil {
				return false, err
			}
			if have[dir+"/"+f] != h {
				return false, nil
			}
		}
	}
	return true, nil
}

// buildArch compiles every family of arch (concurrently, inside Build) and
// packs each module with its metadata.
//
// With reuse (-if-stale), a family whose file in dir already records this
// checkout's source hash and this NVRTC is kept as it is and not compiled:
// a change to one family's .cu rebuilds that family alone.
func buildArch(c *nvrtc.Compiler, arch kernels.Arch, variant, nv, dir string, reuse bool) ([]file, error) {
	hashes := map[string]string{}
	kept := map[string]file{}
	var stale []string
	for _, fam := range kernels.FamiliesFor(arch) {
		h, err := kernels.SourceHash(fam, arch)
		if err != nil {
			return nil, err
		}
		hashes[fam] = h
		if !selected(fam) {
			// Left out of this build: the file already under -out, as it is.
			if data, err := os.ReadFile(filepath.Join(dir, embedset.Dir(arch.String(), variant), fam+".gz")); err == nil {
				if m, _, _, err := embedset.Unpack(data, nil); err == nil {
					kept[fam] = file{m, data}
				}
			}
			continue
		}
		if reuse {
			if data, err := os.ReadFile(filepath.Join(dir, embedset.Dir(arch.String(), variant), fam+".gz")); err == nil {
				if m, _, _, err := embedset.Unpack(data, nil); err == nil && m.SourceHash == h && m.NVRTC == nv {
					kept[fam] = file{m, data}
					continue
				}
			}
		}
		stale = append(stale, fam)
	}
	modules := map[string]*kernels.Module{}
	if len(stale) > 0 {
		b, err := kernels.NewBuilder(c, kernels.WithMode(kernels.ModeNVRTC), kernels.WithCache(*useCache), kernels.WithFamilies(stale...)).Build(arch)
		if err != nil {
			return nil, err
		}
		modules = b.Modules
	}
	var out []file
	for _, fam := range kernels.FamiliesFor(arch) {
		if f, ok := kept[fam]; ok {
			out = append(out, f)
			continue
		}
		if !selected(fam) {
			continue // not asked for and not under -out
		}
		m, ok := modules[fam]
		if !ok {
			return nil, fmt.Errorf("%s: %s missing from the build", arch, fam)
		}
		meta, err := embedset.NewMeta(fam, arch.String(), variant, nv, hashes[fam], m.CUBIN)
		if err != nil {
			return nil, err
		}
		data, err := embedset.Pack(meta, m.CUBIN, m.Log)
		if err != nil {
			return nil, err
		}
		out = append(out, file{meta, data})
	}
	return out, nil
}

// replaceDir writes files as out/dir, beside the old directory and then
// swapped in, so a failed run leaves the committed set whole.
func replaceDir(out, dir string, files []file) error {
	final := filepath.Join(out, dir)
	tmp := final + ".new"
	if err := os.RemoveAll(tmp); err != nil {
		return err
	}
	if err := os.MkdirAll(tmp, 0o755); err != nil {
		return err
	}
	for _, f := range files {
		if err := os.WriteFile(filepath.Join(tmp, f.meta.Family+".gz"), f.data, 0o644); err != nil {
			return err
		}
	}
	if err := os.RemoveAll(final); err != nil {
		return err
	}
	return os.Rename(tmp, final)
}

// importSet copies one variant of a set built on another machine: from
// DIR/<dir>/ or DIR/<arch>/ per architecture. Every family of each
// architecture must be there, built from this checkout's sources.
func importSet(dir, legacyTable, out, table, variant, archList string) error {
	v, err := embedset.LookupVariant(variant)
	if err != nil {
		return err
	}
	archs, err := archsFor(v, archList)
	if err != nil {
		return err
	}
	var legacy map[string]embedset.Meta
	if legacyTable != "" {
		if legacy, err = readLegacyTable(legacyTable, v); err != nil {
			return err
		}
	}
	for _, a := range archs {
		src := filepath.Join(dir, embedset.Dir(a.String(), v.Name))
		if _, err := os.Stat(src); err != nil {
			src = filepath.Join(dir, a.String())
		}
		var files []file
		for _, fam := range kernels.FamiliesFor(a) {
			data, err := os.ReadFile(filepath.Join(src, fam+".gz"))
			if err != nil {
				return err
			}
			var lm *embedset.Meta
			if legacy != nil {
				m, ok := legacy[fam+"/"+a.String()]
				if !ok {
					return fmt.Errorf("%s: no row for %s/%s", legacyTable, a, fam)
				}
				lm = &m
			}
			m, cubin, log, err := embedset.Unpack(data, lm)
			if err != nil {
				return fmt.Errorf("%s/%s.gz: %w", src, fam, err)
			}
			if m.Family != fam || m.Arch != a.String() || m.Variant != v.Name {
				return fmt.Errorf("%s/%s.gz holds %s for %s, variant %s", src, fam, m.Family, m.Arch, m.Variant)
			}
			if err := m.Check(); err != nil {
				return err
			}
			h, err := kernels.SourceHash(fam, a)
			if err != nil {
				return err
			}
			if h != m.SourceHash {
				return fmt.Errorf("%s/%s.gz was built from other kernel sources or flags than this checkout's; rebuild it", src, fam)
			}
			if data, err = embedset.Pack(m, cubin, log); err != nil {
				return err
			}
			files = append(files, file{m, data})
		}
		if err := replaceDir(out, embedset.Dir(a.String(), v.Name), files); err != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "gencubin: imported %s variant %s: %d families\n", a, v.Name, len(files))
	}
	return writeTable(out, table, false)
}

var (
	legacyRow   = regexp.MustCompile(`\{family: "([^"]+)", arch: "([^"]+)", sourceHash: "([0-9a-f]{64})", cubinSHA256: "([0-9a-f]{64})", size: (\d+), packed: \d+\}`)
	legacyNVRTC = regexp.MustCompile(`const embeddedNVRTC = "([0-9.]+)"`)
)

// readLegacyTable parses a zembedded.go of the format before variants.
func readLegacyTable(name string, v embedset.Variant) (map[string]embedset.Meta, error) {
	src, err := os.ReadFile(name)
	if err != nil {
		return nil, err
	}
	nv := legacyNVRTC.FindSubmatch(src)
	if nv == nil {
		return nil, fmt.Errorf("%s: no embeddedNVRTC constant", name)
	}
	out := map[string]embedset.Meta{}
	for _, m := range legacyRow.FindAllSubmatch(src, -1) {
		size, _ := strconv.Atoi(string(m[5]))
		out[string(m[1])+"/"+string(m[2])] = embedset.Meta{Family: string(m[1]), Arch: string(m[2]), Variant: v.Name,
			NVRTC: string(nv[1]), MinDriver: v.MinDriver, SourceHash: string(m[3]), CUBINSHA256: string(m[4]), Size: size}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no rows", name)
	}
	return out, nil
}

// writeTable regenerates the table from the files under out, reporting
// (or, with drop, removing) the directories holding files built from other
// sources: a variant's directory is kept whole or not at all.
func writeTable(out, table string, drop bool) error {
	es, err := embedset.ReadSet(os.DirFS(out))
	if err != nil {
		return err
	}
	stale := map[string]bool{}
	for _, e := range es {
		a, err := kernels.ParseArch(e.Arch)
		if err != nil {
			return err
		}
		if h, err := kernels.SourceHash(e.Family, a); err != nil || h != e.SourceHash {
			stale[embedset.Dir(e.Arch, e.Variant)] = true
		}
	}
	for dir := range stale {
		p := filepath.Join(out, dir)
		if !drop {
			fmt.Fprintf(os.Stderr, "gencubin: warning: %s is stale (built from other kernel sources or flags); "+
				"rebuild that variant, or run -retable -drop-stale to remove it\n", p)
			continue
		}
		if err := os.RemoveAll(p); err != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "gencubin: removed stale %s\n", p)
	}
	var kept []embedset.Entry
	total := 0
	for _, e := range es {
		if drop && stale[embedset.Dir(e.Arch, e.Variant)] {
			continue
		}
		kept = append(kept, e)
		total += e.Packed
	}
	src, err := embedset.TableSource(kept)
	if err != nil {
		return fmt.Errorf("formatting %s: %w", table, err)
	}
	if err := os.WriteFile(table, src, 0o644); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "gencubin: %s: %d CUBINs, %d bytes compressed\n", table, len(kept), total)
	return nil
}
