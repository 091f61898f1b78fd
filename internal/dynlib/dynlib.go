// Package dynlib opens shared libraries at run time from an ordered list of
// candidates and resolves their symbols without panicking. It is the one place
// where detgemm's loaders (the CUDA driver, NVRTC, cuBLAS in the bench) search
// for a library, so every loader reports a failed search the same way: one
// error that lists each candidate and why it did not load, the folders that
// were skipped because they are not present, and what to do.
//
// Each loader gives its failures its own sentinel (NotFoundError.Sentinel,
// SymbolError.Sentinel), so a program can tell a missing NVRTC from a missing
// driver with errors.Is; this package's ErrNotFound and ErrSymbolNotFound
// match every library's and are meant for code inside the module that
// handles them all alike.
package dynlib

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// ErrNotFound is matched (errors.Is) by every *NotFoundError, whichever
// library it is about.
var ErrNotFound = errors.New("shared library not found")

// ErrSymbolNotFound is matched by every *SymbolError.
var ErrSymbolNotFound = errors.New("symbol not found")

// Attempt records one candidate that was tried and why it failed.
type Attempt struct {
	Path string // what was passed to the loader: a soname or an absolute path
	Err  error  // the loader's reason
}

// NotFoundError says that no candidate for a library could be opened.
type NotFoundError struct {
	Library string // what was searched for, e.g. "CUDA driver (libcuda)"
	// Sentinel is the loader's own not-found sentinel (e.g.
	// nvrtc.ErrNotFound), matched by errors.Is besides ErrNotFound; nil
	// for none.
	Sentinel error
	Attempts []Attempt // every candidate, in the order tried
	// Skipped lists the folders (or folder patterns) in the search that
	// were not present, so a reader sees where the library was looked for.
	Skipped []string
	// Reason, when set, says why no search was made at all (an operating
	// system without CUDA); Attempts and Skipped are then empty.
	Reason string
	// Hint says what to do; it ends the message.
	Hint string
}

// Error implements the error interface: one line per candidate with the
// loader's reason (without the path the loader repeats at its start), a
// line naming the skipped folders, then the hint.
func (e *NotFoundError) Error() string {
	var b strings.Builder
	if e.Reason != "" {
		fmt.Fprintf(&b, "%s not found: %s", e.Library, e.Reason)
	} else {
		fmt.Fprintf(&b, "%s not found; tried %d candidate(s):", e.Library, len(e.Attempts))
		for _, a := range e.Attempts {
			fmt.Fprintf(&b, "\n  %s: %s", a.Path, reason(a))
		}
		if len(e.Skipped) > 0 {
			b.WriteString("\nskipped (not present): ")
			b.WriteString(strings.Join(e.Skipped, ", "))
		}
	}
	if e.Hint != "" {
		b.WriteString("\n")
		b.WriteString(e.Hint)
	}
	return b.String()
}

// reason is an attempt's error text without a leading copy of its path:
// dlerror's messages start with the file name ("libcuda.so.1: cannot open
// shared object file: ..."), which the line already shows.
func reason(a Attempt) string {
	if a.Err == nil {
		return "(no reason given)"
	}
	return trimPathPrefix(a.Err.Error(), a.Path)
}

func trimPathPrefix(msg, path string) string {
	if path != "" && strings.HasPrefix(msg, path+": ") {
		return msg[len(path)+2:]
	}
	return msg
}

// Is reports ErrNotFound and the library's Sentinel.
func (e *NotFoundError) Is(target error) bool {
	return target == ErrNotFound || (e.Sentinel != nil && target == e.Sentinel)
}

// Unwrap returns every candidate's reason, so errors.Is can ask why a
// candidate failed (a stub, a missing symbol, no device) without parsing.
func (e *NotFoundError) Unwrap() []error {
	out := make([]error, 0, len(e.Attempts))
	for _, a := range e.Attempts {
		if a.Err != nil {
			out = append(out, a.Err)
		}
	}
	return out
}

// UnsupportedOS returns the error every loader gives on an operating system
// where CUDA does not exist, or nil where it may: NVIDIA dropped macOS
// after CUDA 10.2, so on darwin there is no driver, NVRTC or cuBLAS to
// find and no search is made. The error matches ErrNotFound and sentinel.
func UnsupportedOS(library string, sentinel error, goos string) *NotFoundError {
	if goos != "darwin" && goos != "ios" {
		return nil
	}
	return &NotFoundError{
		Library:  library,
		Sentinel: sentinel,
		Reason: "CUDA is not available on macOS: NVIDIA dropped macOS support after CUDA 10.2, " +
			"so there is no driver, NVRTC or cuBLAS for it; run on Linux or Windows with an NVIDIA GPU",
	}
}

// SymbolError says that a library lacks a symbol.
type SymbolError struct {
	Library string // the path the library was opened from
	Symbol  string
	Err     error
	// Sentinel is the loader's own missing-symbol sentinel, matched by
	// errors.Is besides ErrSymbolNotFound; nil for none.
	Sentinel error
}

// Error implements the error interface.
func (e *SymbolError) Error() string {
	if e.Err == nil {
		return fmt.Sprintf("symbol %s not found in %s", e.Symbol, e.Library)
	}
	// dlerror names the file again, by its resolved path, and the symbol.
	msg := e.Err.Error()
	if i := strings.Index(msg, ": "); i > 0 && filepath.Base(msg[:i]) == filepath.Base(e.Library) {
		msg = msg[i+2:]
	}
	if msg == "" || msg == "undefined symbol: "+e.Symbol {
		return fmt.Sprintf("symbol %s not found in %s", e.Symbol, e.Library)
	}
	return fmt.Sprintf("symbol %s not found in %s: %s", e.Symbol, e.Library, msg)
}

// Is reports ErrSymbolNotFound and the library's Sentinel.
func (e *SymbolError) Is(target error) bool {
	return target == ErrSymbolNotFound || (e.Sentinel != nil && target == e.Sentinel)
}

// Library is an opened shared library.
type Library struct {
	Path   string  // the candidate that loaded
	Handle uintptr // the loader's handle
}

// Lookup returns the address of symbol, or a *SymbolError.
func (l *Library) Lookup(symbol string) (uintptr, error) {
	p, err := lookup(l.Handle, symbol)
	if err != nil {
		return 0, &SymbolError{Library: l.Path, Symbol: symbol, Err: err}
	}
	if p == 0 {
		return 0, &SymbolError{Library: l.Path, Symbol: symbol, Err: errors.New("null address")}
	}
	return p, nil
}

// Open tries each candidate in order and returns the first that loads. The
// check function, when not nil, may reject a library that loaded (for example
// a toolkit stub); its error is recorded as that candidate's reason and the
// search goes on. When nothing loads, the error is a *NotFoundError naming
// every candidate and why it failed; a candidate rejected by check is also
// returned wrapped in it, so callers can tell "found but unusable" apart.
// Callers fill in the error's Sentinel, Skipped and Hint.
func Open(library string, candidates []string, check func(*Library) error) (*Library, error) {
	nf := &NotFoundError{Library: library}
	for _, c := range dedupe(candidates) {
		h, err := open(c)
		if err != nil {
			nf.Attempts = append(nf.Attempts, Attempt{Path: c, Err: err})
			continue
		}
		lib := &Library{Path: c, Handle: h}
		if check != nil {
			if err := check(lib); err != nil {
				nf.Attempts = append(nf.Attempts, Attempt{Path: c, Err: err})
				continue
			}
		}
		return lib, nil
	}
	if len(nf.Attempts) == 0 {
		nf.Attempts = append(nf.Attempts, Attempt{Path: "(none)", Err: errors.New("no candidate paths")})
	}
	return nil, nf
}

// Candidates is Search without the skipped folders.
func Candidates(names []string, dirs []string) []string {
	c, _ := Search(names, dirs)
	return c
}

// Search builds the search list: names as given (the system loader's own
// search, by soname), then each name joined to each folder of dirs that is
// present, in the order given. It also returns the folders that are not
// present, for the error message. An entry of dirs may be a pattern
// (filepath.Match syntax): it stands for the folders it matches, newest
// version first (see SortNewestFirst), and is skipped as written when it
// matches none. Folders are searched by absolute path because setting
// LD_LIBRARY_PATH from inside a process does not change dlopen's search. A
// folder reached twice (a symlink such as /usr/local/cuda to a versioned
// toolkit) is searched once.
func Search(names []string, dirs []string) (candidates, skipped []string) {
	out := append([]string(nil), names...)
	seen := map[string]bool{}
	add := func(d string) {
		key := d
		if r, err := filepath.EvalSymlinks(d); err == nil {
			key = r
		}
		if seen[key] {
			return
		}
		seen[key] = true
		for _, n := range names {
			out = append(out, filepath.Join(d, n))
		}
	}
	for _, d := range dirs {
		if d == "" {
			continue
		}
		if !hasMeta(d) {
			if isDir(d) {
				add(d)
			} else {
				skipped = append(skipped, d)
			}
			continue
		}
		matches := GlobNewestFirst(d)
		if len(matches) == 0 {
			skipped = append(skipped, d)
		}
		for _, m := range matches {
			add(m)
		}
	}
	return dedupe(out), dedupe(skipped)
}

// Roots expands each pattern into the folders it matches, newest version
// first, and keeps a pattern that matches nothing as written (so the
// folders built from it are reported as skipped). Plain paths pass through.
func Roots(patterns ...string) []string {
	var out []string
	for _, p := range patterns {
		if p == "" {
			continue
		}
		if !hasMeta(p) {
			out = append(out, p)
			continue
		}
		if m := GlobNewestFirst(p); len(m) > 0 {
			out = append(out, m...)
		} else {
			out = append(out, p)
		}
	}
	return out
}

// GlobNewestFirst returns the folders matching pattern, newest version
// first (SortNewestFirst).
func GlobNewestFirst(pattern string) []string {
	m, _ := filepath.Glob(pattern)
	dirs := m[:0]
	for _, p := range m {
		if isDir(p) {
			dirs = append(dirs, p)
		}
	}
	SortNewestFirst(dirs)
	return dirs
}

func hasMeta(p string) bool { return strings.ContainsAny(p, `*?[`) }

func isDir(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.IsDir()
}

func dedupe(in []string) []string {
	seen := make(map[string]bool, len(in))
	out := in[:0:0]
	for _, s := range in {
		if s == "" || seen[s] {
			continue
		}
		seen[s] = true
		out = append(out, s)
	}
	return out
}

// Override is the candidate list of a library the user named (an option or
// an environment variable): a directory stands for each of names inside it,
// anything else (a file or a soname) for itself. It is the whole list: a
// library the user named is never silently replaced by another.
func Override(names []string, path string) []string {
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		out := make([]string, 0, len(names))
		for _, n := range names {
			out = append(out, filepath.Join(path, n))
		}
		return out
	}
	return []string{path}
}
