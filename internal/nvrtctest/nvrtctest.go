// Package nvrtctest holds the one policy every NVRTC-dependent test follows:
// when NVRTC cannot be opened the test is skipped with the reason, unless
// DETGEMM_REQUIRE_NVRTC=1 is set (CI sets it), in which case it fails, so
// the compile tests can never silently stop running.
package nvrtctest

import (
	"os"
	"testing"

	"github.com/detgemm/detgemm/nvrtc"
)

// EnvRequire names the variable that turns a missing NVRTC into a failure.
const EnvRequire = "DETGEMM_REQUIRE_NVRTC"

// Compiler returns the process's NVRTC, or skips t (fails it under
// DETGEMM_REQUIRE_NVRTC=1) saying why it could not be opened.
func Compiler(t testing.TB) *nvrtc.Compiler {
	t.Helper()
	c, err := nvrtc.Open()
	if fail, msg := decide(err, os.Getenv(EnvRequire)); msg != "" {
		if fail {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return c
}

// decide maps an Open result and the value of DETGEMM_REQUIRE_NVRTC to what
// the test must do: nothing (empty message), skip, or fail.
func decide(openErr error, require string) (fail bool, msg string) {
	if openErr == nil {
		return false, ""
	}
	if require == "1" {
		return true, EnvRequire + "=1 but NVRTC could not be opened: " + openErr.Error()
	}
	return false, "NVRTC not available (set " + EnvRequire + "=1 to make this a failure): " + openErr.Error()
}
