package embedset

import (
	"bytes"
	"compress/gzip"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/stretchr/testify/require"
)

func TestPackUnpackAndReadSet(t *testing.T) {
	cubin := append([]byte("\x7fELF"), make([]byte, 60)...)
	src := strings.Repeat("ab", 32)
	m, err := NewMeta("util", "sm_90a", "cuda13", "13.0", src, cubin)
	require.NoError(t, err)
	require.Equal(t, 13000, m.MinDriver)
	data, err := Pack(m, cubin, "ptxas info")
	require.NoError(t, err)
	again, err := Pack(m, cubin, "ptxas info")
	require.NoError(t, err)
	require.Equal(t, data, again, "no time stamp: the files are reproducible")
	got, c, log, err := Unpack(data, nil)
	require.NoError(t, err)
	require.Equal(t, m, got)
	require.Equal(t, cubin, c)
	require.Equal(t, "ptxas info", log)

	base, err := NewMeta("util", "sm_80", Base, "12.4", src, cubin)
	require.NoError(t, err)
	bdata, err := Pack(base, cubin, "")
	require.NoError(t, err)
	es, err := ReadSet(fstest.MapFS{
		"sm_90a+cuda13/util.gz": {Data: data},
		"sm_80/util.gz":         {Data: bdata},
		"README.md":             {Data: []byte("x")},
	})
	require.NoError(t, err)
	require.Len(t, es, 2)
	require.Equal(t, "sm_80", es[0].Arch, "table order: architecture first")
	require.Equal(t, len(data), es[1].Packed)

	for _, tc := range []struct {
		name string
		fs   fstest.MapFS
		want string
	}{
		{"wrong directory", fstest.MapFS{"sm_90a/util.gz": {Data: data}}, "belongs in sm_90a+cuda13/util.gz"},
		{"no metadata", fstest.MapFS{"sm_80/util.gz": {Data: mustPlainGzip(t)}}, "no detgemm-cubin/1 metadata"},
		{"stray file", fstest.MapFS{"sm_80/util.bin": {Data: bdata}}, "not <dir>/<family>.gz"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ReadSet(tc.fs)
			require.ErrorIs(t, err, ErrBadFile)
			require.Contains(t, err.Error(), tc.want)
		})
	}
	_, err = NewMeta("util", "sm_90a", "cuda13", "12.4", src, cubin)
	require.ErrorIs(t, err, ErrBadFile, "cuda13 is NVRTC 13's")
	_, err = LookupVariant("cuda99")
	require.Error(t, err)
	legacy := m
	legacy.CUBINSHA256 = strings.Repeat("0", 64)
	_, _, _, err = Unpack(data, &legacy)
	require.ErrorIs(t, err, ErrBadFile, "a legacy table's checksum is checked")
	require.Contains(t, err.Error(), "checksum")
}

// mustPlainGzip is a file as written before the header carried metadata.
func mustPlainGzip(t *testing.T) []byte {
	var b bytes.Buffer
	w := gzip.NewWriter(&b)
	_, err := w.Write([]byte("\x04\x00\x00\x00\x00\x00\x00\x00\x7fELF"))
	require.NoError(t, err)
	require.NoError(t, w.Close())
	return b.Bytes()
}
