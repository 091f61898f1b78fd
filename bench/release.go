package main

import (
	"regexp"
	"strings"
)

// releasePattern matches a driver release number such as 580.159 or
// 535.104.05.
var releasePattern = regexp.MustCompile(`^[0-9]{3,}\.[0-9]+(\.[0-9]+)?$`)

// parseDriverRelease finds the release number in the first line of
// /proc/driver/nvidia/version ("NVRM version: NVIDIA UNIX x86_64 Kernel
// Module  580.159  Thu ..."); the CUDA driver API itself only reports the
// CUDA version it implements.
func parseDriverRelease(text string) string {
	first, _, _ := strings.Cut(text, "\n")
	for _, f := range strings.Fields(first) {
		if releasePattern.MatchString(f) {
			return f
		}
	}
	return ""
}
