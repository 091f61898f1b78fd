package dynlib

import (
	"slices"
	"strconv"
	"strings"
)

// SortNewestFirst orders paths by the numbers in them, compared as numbers
// and from the left, largest first: cuda-13.0 before cuda-12.10 before
// cuda-12.9 before cuda-12. Paths with the same numbers keep a fixed order
// (by text), so the search does not depend on the file system's listing.
func SortNewestFirst(paths []string) {
	slices.SortStableFunc(paths, func(a, b string) int {
		if c := compareVersions(versionOf(b), versionOf(a)); c != 0 {
			return c
		}
		return strings.Compare(a, b)
	})
}

// versionOf is the sequence of decimal numbers in s, in order.
func versionOf(s string) []int {
	var out []int
	for i := 0; i < len(s); {
		if s[i] < '0' || s[i] > '9' {
			i++
			continue
		}
		j := i
		for j < len(s) && s[j] >= '0' && s[j] <= '9' {
			j++
		}
		n, err := strconv.Atoi(s[i:j])
		if err != nil { // too many digits to be a version
			n = int(^uint(0) >> 1)
		}
		out = append(out, n)
		i = j
	}
	return out
}

// compareVersions compares element by element; a longer sequence with an
// equal prefix is the greater (12.4 > 12).
func compareVersions(a, b []int) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			if a[i] < b[i] {
				return -1
			}
			return 1
		}
	}
	switch {
	case len(a) < len(b):
		return -1
	case len(a) > len(b):
		return 1
	}
	return 0
}
