package main

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestParseDriverRelease(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"NVRM version: NVIDIA UNIX x86_64 Kernel Module  580.159  Thu Oct  2 12:00:00 UTC 2025\nGCC version: gcc 12", "580.159"},
		{"NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  535.104.05  Release Build  (dvs-builder@U16)", "535.104.05"},
		{"GCC version: 12.2\n", ""},
		{"", ""},
	} {
		require.Equal(t, tc.want, parseDriverRelease(tc.in), tc.in)
	}
}
