// Package golden reads, checks and writes the digest files under
// testdata/golden, which pin the output bits of the engine and the triad:
// a change to any of those bits changes the numerical contract, and the
// tests that compare against these files are what notice.
//
// # Format
//
// A golden file is UTF-8 text, one case a line: the case's key, a
// separator, the digest. Lines starting with '#' are comments (the ones
// before the first case are the file's header, kept by Parse and written
// back by Write); blank lines are ignored; surrounding spaces are trimmed.
// gemm's files separate key and digest with " => " (Arrow), the triad's
// with ": " (Colon); a key never holds its file's separator, so a line is
// cut at the separator's first occurrence. A key appears at most once.
//
// The digest is opaque to this package: gemm writes one SHA-256 in hex, the
// triad a SHA-256 followed by "loss=… sum=…" fields. A mismatch is reported
// field by field (fields are separated by spaces) so a reader sees whether
// the weights or only the loss moved.
package golden

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// The separators the checked-in files use between key and digest.
const (
	Arrow = " => " // gemm: ieee.txt, tc_sm90.txt
	Colon = ": "   // triad: triad.txt
)

// ErrFormat is matched by every error about a file that is not a golden
// file: a case line without the separator, an empty key or digest, or a
// key given twice.
var ErrFormat = errors.New("golden: malformed golden file")

// ErrMismatch is matched by a *MismatchError: computed digests that differ
// from the file's.
var ErrMismatch = errors.New("golden: digests differ from the golden file")

// Entry is one case: its key and its digest.
type Entry struct {
	Key, Digest string
}

// File is a golden file as read.
type File struct {
	// Name is the path the file was read from (or the name given to
	// Parse); errors and diffs cite it.
	Name string
	// Header is the comment lines before the first case, without the
	// leading '#' and one following space.
	Header []string
	// Entries are the cases in file order.
	Entries []Entry
	index   map[string]int
}

// Read parses the golden file at path, whose cases use sep.
func Read(path, sep string) (*File, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return Parse(path, f, sep)
}

// Parse reads a golden file from r; name labels its errors.
func Parse(name string, r io.Reader, sep string) (*File, error) {
	if sep == "" {
		return nil, fmt.Errorf("%w: %s: no separator given", ErrFormat, name)
	}
	g := &File{Name: name, index: map[string]int{}}
	sc := bufio.NewScanner(r)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		if c, ok := strings.CutPrefix(line, "#"); ok {
			if len(g.Entries) == 0 {
				g.Header = append(g.Header, strings.TrimPrefix(c, " "))
			}
			continue
		}
		key, digest, ok := strings.Cut(line, sep)
		key, digest = strings.TrimSpace(key), strings.TrimSpace(digest)
		switch {
		case !ok:
			return nil, fmt.Errorf("%w: %s:%d: no %q between key and digest in %q", ErrFormat, name, n, sep, line)
		case key == "" || digest == "":
			return nil, fmt.Errorf("%w: %s:%d: empty key or digest in %q", ErrFormat, name, n, line)
		}
		if first, dup := g.index[key]; dup {
			return nil, fmt.Errorf("%w: %s:%d: key %q given twice (first as case %d)", ErrFormat, name, n, key, first+1)
		}
		g.index[key] = len(g.Entries)
		g.Entries = append(g.Entries, Entry{Key: key, Digest: digest})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("golden: reading %s: %w", name, err)
	}
	return g, nil
}

// Len is the number of cases.
func (g *File) Len() int { return len(g.Entries) }

// Digest returns the file's digest for key.
func (g *File) Digest(key string) (string, bool) {
	i, ok := g.index[key]
	if !ok {
		return "", false
	}
	return g.Entries[i].Digest, true
}

// Check compares one computed case with the file: nil when the file holds
// key with digest got, else a *MismatchError. Tests that run cases one at
// a time (some skipped) use it; Compare checks a whole file.
func (g *File) Check(key, got string) error {
	want, _ := g.Digest(key)
	if want == got {
		return nil
	}
	return &MismatchError{Name: g.Name, Cases: 1, Diffs: []Diff{{Key: key, Want: want, Got: got}}}
}

// Compare checks computed cases against the whole file: every case must
// be in the file with the same digest, and every case of the file must
// have been computed (a line nobody checks is a stale pin). It returns nil
// or a *MismatchError listing every difference, in the order of got, then
// of the file.
func (g *File) Compare(got []Entry) error {
	var diffs []Diff
	cases := len(got)
	seen := make(map[string]bool, len(got))
	for _, e := range got {
		seen[e.Key] = true
		if want, ok := g.Digest(e.Key); !ok || want != e.Digest {
			diffs = append(diffs, Diff{Key: e.Key, Want: want, Got: e.Digest})
		}
	}
	for _, e := range g.Entries {
		if !seen[e.Key] {
			cases++
			diffs = append(diffs, Diff{Key: e.Key, Want: e.Digest})
		}
	}
	if diffs == nil {
		return nil
	}
	return &MismatchError{Name: g.Name, Cases: cases, Diffs: diffs}
}

// Write writes a golden file: header as comment lines, then one line per
// entry, key and digest joined by sep. It creates the directory. Existing
// golden files are rewritten only on purpose (a contract change, recorded
// in CHANGELOG.md), by the test flag that says so.
func Write(path, sep string, header []string, entries []Entry) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, []byte(Format(sep, header, entries)), 0o644)
}

// Format is the text Write writes.
func Format(sep string, header []string, entries []Entry) string {
	var b strings.Builder
	for _, h := range header {
		b.WriteString("#")
		if h != "" {
			b.WriteString(" " + h)
		}
		b.WriteString("\n")
	}
	for _, e := range entries {
		b.WriteString(e.Key + sep + e.Digest + "\n")
	}
	return b.String()
}

// Diff is one case on which the file and the computation disagree. Want
// is empty for a case the file lacks; Got is empty for a case of the file
// that was not computed.
type Diff struct {
	Key, Want, Got string
}

// MismatchError lists the cases whose digests differ from a golden file.
// Its message is a readable diff: per case the file's and the computed
// digest, and which of their space-separated fields differ.
type MismatchError struct {
	Name  string // the golden file
	Cases int    // how many cases were compared
	Diffs []Diff
}

// Is makes every MismatchError match ErrMismatch.
func (e *MismatchError) Is(target error) bool { return target == ErrMismatch }

func (e *MismatchError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "golden: %s: %d of %d cases differ (a changed digest changes the numerical contract)", e.Name, len(e.Diffs), e.Cases)
	for _, d := range e.Diffs {
		fmt.Fprintf(&b, "\n  %s", d.Key)
		switch {
		case d.Want == "":
			fmt.Fprintf(&b, "\n    file: (no such case)\n    got:  %s", d.Got)
		case d.Got == "":
			fmt.Fprintf(&b, "\n    file: %s\n    got:  (not computed)", d.Want)
		default:
			fmt.Fprintf(&b, "\n    file: %s\n    got:  %s\n    differs in: %s", d.Want, d.Got, strings.Join(fieldsDiffering(d.Want, d.Got), ", "))
		}
	}
	return b.String()
}

// fieldsDiffering names the space-separated fields in which two digests
// differ: "name" for a name=value field, "digest" for a first field without
// a name, "field N" for the others; "layout" when the field counts differ.
func fieldsDiffering(want, got string) []string {
	w, g := strings.Fields(want), strings.Fields(got)
	if len(w) != len(g) {
		return []string{fmt.Sprintf("layout (%d fields in the file, %d computed)", len(w), len(g))}
	}
	var out []string
	for i := range w {
		if w[i] == g[i] {
			continue
		}
		name, _, named := strings.Cut(w[i], "=")
		switch {
		case named:
			out = append(out, name)
		case i == 0:
			out = append(out, "digest")
		default:
			out = append(out, fmt.Sprintf("field %d", i+1))
		}
	}
	return out
}
