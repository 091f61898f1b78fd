// Package dynlib opens shared libraries at run time from an ordered list of
// candidates and resolves their symbols without panicking. It is the one place
// where detgemm's loaders (the CUDA driver, NVRTC, cuBLAS in the bench) search
// for a library, so every loader reports a failed search the same way: one
// error that lists each candidate and why it did not load.
package dynlib

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// ErrNotFound is matched (errors.Is) by every *NotFoundError.
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
	Library  string    // what was searched for, e.g. "CUDA driver (libcuda)"
	Attempts []Attempt // every candidate, in the order tried
}

// Error implements the error interface.
func (e *NotFoundError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s not found; tried %d candidate(s):", e.Library, len(e.Attempts))
	for _, a := range e.Attempts {
		fmt.Fprintf(&b, "\n  %s: %v", a.Path, a.Err)
	}
	return b.String()
}

// Is reports ErrNotFound.
func (e *NotFoundError) Is(target error) bool { return target == ErrNotFound }

// SymbolError says that a library lacks a symbol.
type SymbolError struct {
	Library string // the path the library was opened from
	Symbol  string
	Err     error
}

// Error implements the error interface.
func (e *SymbolError) Error() string {
	return fmt.Sprintf("symbol %s not found in %s: %v", e.Symbol, e.Library, e.Err)
}

// Is reports ErrSymbolNotFound.
func (e *SymbolError) Is(target error) bool { return target == ErrSymbolNotFound }

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

// Candidates builds the search list: names as given (the system loader's own
// search, by soname), then each name joined to each directory that exists.
// Directories are tried in the order given; missing ones are skipped because
// setting LD_LIBRARY_PATH from inside a process does not change dlopen's
// search, so absolute paths are the only way to reach them.
func Candidates(names []string, dirs []string) []string {
	out := append([]string(nil), names...)
	for _, d := range dirs {
		if d == "" {
			continue
		}
		if fi, err := os.Stat(d); err != nil || !fi.IsDir() {
			continue
		}
		for _, n := range names {
			out = append(out, filepath.Join(d, n))
		}
	}
	return dedupe(out)
}

// GlobDirs expands shell patterns (filepath.Glob) into the directories they
// match, in sorted order per pattern; patterns that match nothing add nothing.
func GlobDirs(patterns ...string) []string {
	var out []string
	for _, p := range patterns {
		m, _ := filepath.Glob(p)
		out = append(out, m...)
	}
	return out
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
