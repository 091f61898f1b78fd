package kernels

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestFlagsPinTheNumericalContract(t *testing.T) {
	f := Flags(Arch{Major: 9, Specific: true})
	require.Equal(t, "--gpu-architecture=sm_90a", f[0])
	for _, want := range []string{"--fmad=false", "--ftz=false", "--prec-div=true", "--prec-sqrt=true",
		"--std=c++17", "--ptxas-options=-v", "-default-device"} {
		require.Contains(t, f, want)
	}
	var archFlags int
	for _, o := range f {
		require.NotContains(t, o, "fast_math")
		require.NotContains(t, o, "fast-math")
		require.NotEqual(t, "--fmad=true", o)
		require.NotEqual(t, "-lineinfo", o)
		require.NotEqual(t, "-G", o)
		if strings.HasPrefix(o, "--gpu-architecture=") || strings.HasPrefix(o, "-arch") {
			archFlags++
		}
	}
	require.Equal(t, 1, archFlags, "exactly one target")
	require.Equal(t, "--gpu-architecture=sm_80", Flags(Arch{Major: 8})[0])
}
