package kernels

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestArchStringIsNVRTCsName(t *testing.T) {
	require.Equal(t, "sm_80", Arch{Major: 8}.String())
	require.Equal(t, "sm_86", Arch{Major: 8, Minor: 6}.String())
	require.Equal(t, "sm_90a", Arch{Major: 9, Specific: true}.String())
	require.Equal(t, "sm_100a", Arch{Major: 10, Specific: true}.String())
}

func TestParseArchRoundTripsAndRejectsGarbage(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Arch
		err  error
	}{
		{"sm_80", Arch{Major: 8}, nil},
		{"sm_86", Arch{Major: 8, Minor: 6}, nil},
		{"sm_89", Arch{Major: 8, Minor: 9}, nil},
		{"sm_90", Arch{Major: 9}, nil},
		{"sm_90a", Arch{Major: 9, Specific: true}, nil},
		{"SM_90A", Arch{Major: 9, Specific: true}, nil},
		{"90a", Arch{Major: 9, Specific: true}, nil},
		{"sm_100a", Arch{Major: 10, Specific: true}, nil},
		{"sm_120", Arch{Major: 12}, nil},
		{"sm_75", Arch{Major: 7, Minor: 5}, nil}, // parses; Build refuses it
		{"sm_80a", Arch{}, ErrInvalidArch},       // no such variant
		{"compute_80", Arch{}, ErrInvalidArch},
		{"sm_", Arch{}, ErrInvalidArch},
		{"sm_9", Arch{}, ErrInvalidArch},
		{"sm_-90", Arch{}, ErrInvalidArch},
		{"sm_+90", Arch{}, ErrInvalidArch},
		{"", Arch{}, ErrInvalidArch},
	} {
		t.Run(tc.in, func(t *testing.T) {
			got, err := ParseArch(tc.in)
			if tc.err != nil {
				require.ErrorIs(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
			again, err := ParseArch(got.String())
			require.NoError(t, err)
			require.Equal(t, got, again)
		})
	}
}

func TestArchForPicksSm90aOnHopperWithNVRTC12(t *testing.T) {
	for _, tc := range []struct {
		cc1, cc2, nvrtc int
		want            string
	}{
		{9, 0, 12, "sm_90a"},
		{9, 0, 13, "sm_90a"},
		{9, 0, 11, "sm_90"},
		{8, 0, 12, "sm_80"},
		{8, 6, 13, "sm_86"},
		{8, 9, 12, "sm_89"},
		{10, 0, 13, "sm_100"}, // wgmma is Hopper-only; Blackwell gets its exact arch
		{12, 0, 13, "sm_120"},
	} {
		require.Equal(t, tc.want, ArchFor(tc.cc1, tc.cc2, tc.nvrtc).String(), "CC %d.%d NVRTC %d", tc.cc1, tc.cc2, tc.nvrtc)
	}
}

func TestArchBelowAmpereIsUnsupported(t *testing.T) {
	for _, a := range []Arch{{Major: 7, Minor: 5}, {Major: 7}, {Major: 6, Minor: 1}} {
		err := a.check()
		require.ErrorIs(t, err, ErrUnsupportedArch)
		require.Contains(t, err.Error(), "detgemm needs Ampere (sm_80) or newer")
		require.Contains(t, err.Error(), a.String())

		_, err = Build(a, WithCache(false))
		require.ErrorIs(t, err, ErrUnsupportedArch, "Build says so before looking for NVRTC")
	}
	for _, a := range SupportedArchs() {
		require.NoError(t, a.check())
	}
	require.ErrorIs(t, Arch{Major: 8, Specific: true}.check(), ErrInvalidArch)
}

func TestSupportedArchsAreTheTestedSet(t *testing.T) {
	var names []string
	for _, a := range SupportedArchs() {
		names = append(names, a.String())
	}
	require.Equal(t, []string{"sm_80", "sm_86", "sm_89", "sm_90", "sm_90a"}, names)
	SupportedArchs()[0].Major = 1 // a copy: callers cannot change the list
	require.Equal(t, 8, SupportedArchs()[0].Major)
}
