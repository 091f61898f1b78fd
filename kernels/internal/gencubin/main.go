// Command gencubin compiles every kernel family with NVRTC for the
// architectures detgemm ships prebuilt, and writes the embedded set:
// kernels/embedded/<arch>/<family>.gz and kernels/zembedded.go, the table
// recording, per CUBIN, the hash of the sources and flags it was built
// from. It is run by go generate in package kernels:
//
//	go generate ./kernels
//
// The CUBINs are built with exactly the flags of kernels.Flags (the
// production build) and no cache, so every entry is compiled here.
package main

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"flag"
	"fmt"
	"go/format"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/detgemm/detgemm/kernels"
	"github.com/detgemm/detgemm/nvrtc"
)

func main() {
	out := flag.String("out", "embedded", "directory of the compressed CUBINs (replaced)")
	table := flag.String("table", "zembedded.go", "generated Go file recording the set")
	archList := flag.String("archs", "sm_80,sm_86,sm_89,sm_90a,sm_100a,sm_120",
		"architectures to build; those the NVRTC on hand cannot target are left out with a note")
	parallel := flag.Int("archs-parallel", 2, "architectures compiled at once (each compiles its families concurrently)")
	flag.Parse()
	if err := run(*out, *table, *archList, *parallel); err != nil {
		fmt.Fprintln(os.Stderr, "gencubin:", err)
		os.Exit(1)
	}
}

type entry struct {
	family, arch, sourceHash, cubinSum string
	size, packed                       int
	data                               []byte
}

func run(out, table, archList string, parallel int) error {
	c, err := nvrtc.Open()
	if err != nil {
		return err
	}
	major, minor := c.Version()
	supported, _ := c.SupportedArchs()
	var archs []kernels.Arch
	for _, name := range strings.Split(archList, ",") {
		a, err := kernels.ParseArch(name)
		if err != nil {
			return err
		}
		if len(supported) > 0 && !slices.Contains(supported, a.Major*10+a.Minor) || a.Specific && major < 12 {
			fmt.Fprintf(os.Stderr, "gencubin: NVRTC %d.%d cannot target %s; left out\n", major, minor, a)
			continue
		}
		archs = append(archs, a)
	}
	if len(archs) == 0 {
		return fmt.Errorf("NVRTC %d.%d can target none of %s", major, minor, archList)
	}

	results := make([][]entry, len(archs))
	errs := make([]error, len(archs))
	sem := make(chan struct{}, max(parallel, 1))
	var wg sync.WaitGroup
	for i, a := range archs {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			t0 := time.Now()
			results[i], errs[i] = buildArch(c, a)
			fmt.Fprintf(os.Stderr, "gencubin: %s: %d families in %v\n", a, len(results[i]), time.Since(t0).Round(time.Millisecond))
		})
	}
	wg.Wait()
	var all []entry
	for i := range archs {
		if errs[i] != nil {
			return errs[i]
		}
		all = append(all, results[i]...)
	}

	// Write the new set beside the old one, then swap, so a failed run
	// leaves the committed set whole.
	tmp := out + ".new"
	if err := os.RemoveAll(tmp); err != nil {
		return err
	}
	total := 0
	for _, e := range all {
		p := filepath.Join(tmp, e.arch, e.family+".gz")
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, e.data, 0o644); err != nil {
			return err
		}
		total += e.packed
	}
	src, err := format.Source(tableSource(fmt.Sprintf("%d.%d", major, minor), archs, all))
	if err != nil {
		return fmt.Errorf("formatting %s: %w", table, err)
	}
	if err := os.RemoveAll(out); err != nil {
		return err
	}
	if err := os.Rename(tmp, out); err != nil {
		return err
	}
	if err := os.WriteFile(table, src, 0o644); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "gencubin: %d CUBINs for %d architectures, %d bytes compressed\n", len(all), len(archs), total)
	return nil
}

// buildArch compiles every family of arch (concurrently, inside Build) and
// packs each module: uint64 CUBIN length, CUBIN, NVRTC log, gzipped.
func buildArch(c *nvrtc.Compiler, arch kernels.Arch) ([]entry, error) {
	b, err := kernels.NewBuilder(c, kernels.WithMode(kernels.ModeNVRTC), kernels.WithCache(false)).Build(arch)
	if err != nil {
		return nil, err
	}
	var out []entry
	for _, fam := range kernels.FamiliesFor(arch) {
		m, ok := b.Modules[fam]
		if !ok {
			return nil, fmt.Errorf("%s: %s missing from the build", arch, fam)
		}
		h, err := kernels.SourceHash(fam, arch)
		if err != nil {
			return nil, err
		}
		var raw bytes.Buffer
		_ = binary.Write(&raw, binary.LittleEndian, uint64(len(m.CUBIN)))
		raw.Write(m.CUBIN)
		raw.WriteString(m.Log)
		var z bytes.Buffer
		w, err := gzip.NewWriterLevel(&z, gzip.BestCompression)
		if err != nil {
			return nil, err
		}
		if _, err := w.Write(raw.Bytes()); err != nil {
			return nil, err
		}
		if err := w.Close(); err != nil {
			return nil, err
		}
		sum := sha256.Sum256(m.CUBIN)
		out = append(out, entry{family: fam, arch: arch.String(), sourceHash: h, cubinSum: hex.EncodeToString(sum[:]),
			size: len(m.CUBIN), packed: z.Len(), data: z.Bytes()})
	}
	return out, nil
}

func tableSource(nvrtcVersion string, archs []kernels.Arch, all []entry) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "// Code generated by kernels/internal/gencubin; DO NOT EDIT.\n\n")
	fmt.Fprintf(&b, "//go:build !detgemm_noembed\n\n")
	fmt.Fprintf(&b, "package kernels\n\n")
	fmt.Fprintf(&b, "// embeddedNVRTC is the NVRTC version that compiled the embedded set.\n")
	fmt.Fprintf(&b, "const embeddedNVRTC = %q\n\n", nvrtcVersion)
	fmt.Fprintf(&b, "// embeddedArchs are the architectures the set was built for.\n")
	fmt.Fprintf(&b, "var embeddedArchs = []string{")
	for i, a := range archs {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%q", a.String())
	}
	fmt.Fprintf(&b, "}\n\n")
	fmt.Fprintf(&b, "// embeddedTable has one row per CUBIN in embedded/<arch>/<family>.gz.\n")
	fmt.Fprintf(&b, "var embeddedTable = []embeddedRow{\n")
	for _, e := range all {
		fmt.Fprintf(&b, "\t{family: %q, arch: %q, sourceHash: %q, cubinSHA256: %q, size: %d, packed: %d},\n",
			e.family, e.arch, e.sourceHash, e.cubinSum, e.size, e.packed)
	}
	fmt.Fprintf(&b, "}\n")
	return b.Bytes()
}
