package nvrtctest

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestDecideFailsOnlyWhenRequired(t *testing.T) {
	openErr := errors.New("libnvrtc.so.12: cannot open shared object file")
	for _, tc := range []struct {
		name     string
		err      error
		require  string
		wantFail bool
		wantMsg  bool
	}{
		{"found, not required", nil, "", false, false},
		{"found, required", nil, "1", false, false},
		{"missing, not required: skip", openErr, "", false, true},
		{"missing, required: fail", openErr, "1", true, true},
		{"missing, other value: skip", openErr, "0", false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fail, msg := decide(tc.err, tc.require)
			require.Equal(t, tc.wantFail, fail)
			require.Equal(t, tc.wantMsg, msg != "")
			if tc.wantMsg {
				require.Contains(t, msg, "cannot open shared object file", "the reason is part of the message")
				require.Contains(t, msg, EnvRequire)
			}
		})
	}
}

func TestCompilerSkipsOrFailsByPolicy(t *testing.T) {
	// Whatever the environment, Compiler either returns a usable compiler or
	// stops the test; reaching the end means it returned one.
	c := Compiler(t)
	major, _ := c.Version()
	require.GreaterOrEqual(t, major, 11)
}
