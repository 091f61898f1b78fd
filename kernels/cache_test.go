package kernels

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/detgemm/detgemm/nvrtc"
)

var fakeCUBIN = append([]byte{0x7f, 'E', 'L', 'F', 2, 1, 1}, bytes.Repeat([]byte{0xab}, 41)...)

func testKey(s string) [32]byte {
	return cacheKey("util", s, nil, []string{"--gpu-architecture=sm_80"}, Arch{Major: 8}, "12.4")
}

func TestEntryRoundTrips(t *testing.T) {
	key := testKey("src")
	cubin, log, err := decodeEntry(key, encodeEntry(key, fakeCUBIN, "ptxas info    : Used 10 registers\n"))
	require.NoError(t, err)
	require.Equal(t, fakeCUBIN, cubin)
	require.Equal(t, "ptxas info    : Used 10 registers\n", log)

	_, log, err = decodeEntry(key, encodeEntry(key, fakeCUBIN, ""))
	require.NoError(t, err)
	require.Empty(t, log)
}

func TestEntryCorruptionIsAlwaysDetected(t *testing.T) {
	key := testKey("src")
	good := encodeEntry(key, fakeCUBIN, "log text")

	// Every single-bit flip anywhere in the entry is caught.
	for i := range good {
		for bit := range 8 {
			bad := bytes.Clone(good)
			bad[i] ^= 1 << bit
			_, _, err := decodeEntry(key, bad)
			require.ErrorIs(t, err, errCorrupt, "flip of bit %d at byte %d went unnoticed", bit, i)
		}
	}
	// Every truncation is caught, and so is trailing garbage.
	for n := range len(good) {
		_, _, err := decodeEntry(key, good[:n])
		require.ErrorIs(t, err, errCorrupt, "truncation to %d bytes went unnoticed", n)
	}
	_, _, err := decodeEntry(key, append(bytes.Clone(good), 0))
	require.ErrorIs(t, err, errCorrupt)
	// An intact entry for another key is not used.
	_, _, err = decodeEntry(testKey("other source"), good)
	require.ErrorIs(t, err, errCorrupt)
}

func TestEntryRejectsNonELFPayload(t *testing.T) {
	key := testKey("src")
	_, _, err := decodeEntry(key, encodeEntry(key, []byte("PTX text, not ELF"), ""))
	require.ErrorIs(t, err, errCorrupt)
}

func TestCacheKeyCoversEveryInput(t *testing.T) {
	hdr := []nvrtc.Header{{Name: "prelude.cuh", Source: "p"}}
	base := func() (string, string, []nvrtc.Header, []string, Arch, string) {
		return "util", "src", hdr, []string{"--fmad=false"}, Arch{Major: 9}, "12.4"
	}
	k0 := cacheKey(base())
	variants := map[string][32]byte{}
	f, s, h, fl, a, v := base()
	variants["family"] = cacheKey("other", s, h, fl, a, v)
	variants["source"] = cacheKey(f, "src2", h, fl, a, v)
	variants["header source"] = cacheKey(f, s, []nvrtc.Header{{Name: "prelude.cuh", Source: "q"}}, fl, a, v)
	variants["header name"] = cacheKey(f, s, []nvrtc.Header{{Name: "other.cuh", Source: "p"}}, fl, a, v)
	variants["no header"] = cacheKey(f, s, nil, fl, a, v)
	variants["flags"] = cacheKey(f, s, h, []string{"--fmad=true"}, a, v)
	variants["arch"] = cacheKey(f, s, h, fl, Arch{Major: 9, Specific: true}, v)
	variants["nvrtc"] = cacheKey(f, s, h, fl, a, "12.8")
	// Length prefixes: moving a byte between fields changes the key.
	variants["boundary"] = cacheKey("utils", "rc", h, fl, a, v)
	for name, k := range variants {
		require.NotEqual(t, k0, k, "changing the %s must change the key", name)
	}
	require.Equal(t, k0, cacheKey(base()), "the key is a pure function")
}

func TestCacheDirPrecedence(t *testing.T) {
	userCache, err := os.UserCacheDir()
	if err != nil {
		userCache = ""
	}
	for _, tc := range []struct {
		name string
		opts []BuildOption
		env  map[string]string
		want string
	}{
		{"default", nil, nil, filepath.Join(userCache, "detgemm")},
		{"env dir", nil, map[string]string{EnvCacheDir: "/env/cache"}, "/env/cache"},
		{"option dir wins", []BuildOption{WithCacheDir("/opt/cache")}, map[string]string{EnvCacheDir: "/env/cache"}, "/opt/cache"},
		{"env off", nil, map[string]string{EnvCache: "off", EnvCacheDir: "/env/cache"}, ""},
		{"env OFF", nil, map[string]string{EnvCache: "OFF"}, ""},
		{"env 0", nil, map[string]string{EnvCache: "0"}, ""},
		{"env on is not off", nil, map[string]string{EnvCache: "on", EnvCacheDir: "/env/cache"}, "/env/cache"},
		{"option off", []BuildOption{WithCache(false), WithCacheDir("/opt/cache")}, nil, ""},
		{"option on beats env off", []BuildOption{WithCache(true)}, map[string]string{EnvCache: "off", EnvCacheDir: "/env/cache"}, "/env/cache"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := NewBuilder(nil, tc.opts...)
			got, warning := cacheDirFor(b.cfg, func(k string) string { return tc.env[k] })
			if tc.name == "default" && userCache == "" {
				require.Empty(t, got)
				require.NotEmpty(t, warning)
				return
			}
			require.Equal(t, tc.want, got)
			require.Empty(t, warning)
		})
	}
}

func TestStoreLeavesNoTemporaryFiles(t *testing.T) {
	dir := t.TempDir()
	c := diskCache{dir: filepath.Join(dir, "nested", "cache")}
	key := testKey("src")
	require.Empty(t, c.store("x.cubin", key, fakeCUBIN, "log"))
	require.Empty(t, c.store("x.cubin", key, fakeCUBIN, "log"), "overwriting an entry succeeds")
	entries, err := os.ReadDir(c.dir)
	require.NoError(t, err)
	require.Len(t, entries, 1)
	require.Equal(t, "x.cubin", entries[0].Name())

	cubin, log, ok, warning := c.load("x.cubin", key)
	require.True(t, ok)
	require.Empty(t, warning)
	require.Equal(t, fakeCUBIN, cubin)
	require.Equal(t, "log", log)

	_, _, ok, warning = c.load("missing.cubin", key)
	require.False(t, ok)
	require.Empty(t, warning, "a missing entry is a plain miss")
}

func TestStoreIntoUnusableDirWarnsInsteadOfFailing(t *testing.T) {
	file := filepath.Join(t.TempDir(), "a-file")
	require.NoError(t, os.WriteFile(file, nil, 0o644))
	c := diskCache{dir: filepath.Join(file, "cache")} // a directory cannot live under a file
	w := c.store("x.cubin", testKey("src"), fakeCUBIN, "")
	require.Contains(t, w, "cannot create")
	_, _, ok, w := c.load("x.cubin", testKey("src"))
	require.False(t, ok)
	require.Contains(t, w, "cannot read")
}
