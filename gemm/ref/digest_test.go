package ref

import (
	"math"
	"testing"
)

func TestDigestIsOfLittleEndianBits(t *testing.T) {
	tests := []struct {
		name string
		got  string
		want string
	}{
		// sha256 of no bytes.
		{"empty", Digest([]float32{}), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"},
		// sha256sum of the bytes 00 00 80 3f (1.0f) and 80 3f (bf16 1.0).
		{"float32 1", Digest([]float32{1}), "e00e5eb9444182f352323374ef4e08ebcb784725fdd4fd612d7730540b3e0c8c"},
		{"bf16 1", Digest([]uint16{0x3F80}), "b9c205bdac187f20bf876cea369cb6032ad1bf69043b31d716b36b8defbffdf2"},
	}
	for _, tc := range tests {
		if tc.got != tc.want {
			t.Errorf("%s: %s, want %s", tc.name, tc.got, tc.want)
		}
	}
	if Digest([]float32{0}) == Digest([]float32{float32(math.Copysign(0, -1))}) {
		t.Error("+0 and -0 have the same digest")
	}
}
