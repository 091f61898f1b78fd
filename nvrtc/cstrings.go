package nvrtc

import (
	"fmt"
	"runtime"
	"strings"
	"unsafe"
)

// cString returns a NUL-terminated copy of s. The caller passes
// &b[0] to C and keeps b alive (runtime.KeepAlive) until the call returns.
func cString(what, s string) ([]byte, error) {
	if strings.IndexByte(s, 0) >= 0 {
		return nil, fmt.Errorf("%w: %s contains a NUL byte", ErrInvalidArgument, what)
	}
	b := make([]byte, len(s)+1)
	copy(b, s)
	return b, nil
}

// cStringArray is a C array of char* (const char* const*) built from Go
// strings. Its strings and the array itself are pinned, so the pointers
// stored in the array stay valid while C reads them; call free once the C
// call has returned.
type cStringArray struct {
	pinner runtime.Pinner
	bufs   [][]byte
	ptrs   []*byte
}

func newCStringArray(what string, ss []string) (*cStringArray, error) {
	a := &cStringArray{bufs: make([][]byte, len(ss)), ptrs: make([]*byte, len(ss))}
	for i, s := range ss {
		b, err := cString(fmt.Sprintf("%s[%d]", what, i), s)
		if err != nil {
			return nil, err
		}
		a.bufs[i] = b
		a.ptrs[i] = &b[0]
	}
	for _, p := range a.ptrs {
		a.pinner.Pin(p)
	}
	if len(a.ptrs) > 0 {
		a.pinner.Pin(&a.ptrs[0])
	}
	return a, nil
}

// addr is the array's address for C, or 0 (NULL) when it is empty.
func (a *cStringArray) addr() uintptr {
	if len(a.ptrs) == 0 {
		return 0
	}
	return uintptr(unsafe.Pointer(&a.ptrs[0]))
}

func (a *cStringArray) free() { a.pinner.Unpin() }

// goString copies the NUL-terminated C string at p (static storage inside
// libnvrtc) into a Go string.
func goString(p uintptr) string {
	if p == 0 {
		return ""
	}
	// Going through a pointer to p keeps vet's unsafeptr check quiet about
	// a C address that the Go heap never owned.
	base := *(*unsafe.Pointer)(unsafe.Pointer(&p))
	n := 0
	for *(*byte)(unsafe.Add(base, n)) != 0 {
		n++
	}
	return string(unsafe.Slice((*byte)(base), n))
}
