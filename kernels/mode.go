package kernels

import (
	"errors"
	"fmt"
	"strings"
)

// Mode says where Build takes the kernels from.
type Mode int

const (
	// ModeAuto loads a family from the embedded set when the set has it for
	// the architecture and was built from the current sources; otherwise it
	// compiles the family with NVRTC (through the disk cache). NVRTC is
	// opened only when some family has to be compiled.
	ModeAuto Mode = iota
	// ModeEmbedded loads the embedded set only: an architecture or family
	// it lacks is an error (ErrNotEmbedded), and NVRTC is never opened.
	ModeEmbedded
	// ModeNVRTC compiles every family with NVRTC (through the disk cache),
	// as detgemm did before it shipped prebuilt kernels. For development:
	// kernel sources edited after the set was generated, or comparing both
	// paths.
	ModeNVRTC
)

// EnvKernels selects the Mode when no WithMode option is given: "auto"
// (or empty), "embedded" or "nvrtc".
const EnvKernels = "DETGEMM_KERNELS"

// ErrBadMode is matched when DETGEMM_KERNELS (or a Mode value) is not one
// of the modes.
var ErrBadMode = errors.New("kernels: unknown kernels mode")

// ErrNotEmbedded is matched when ModeEmbedded is asked for and the
// embedded set lacks an architecture or family (or holds it built from
// other sources).
var ErrNotEmbedded = errors.New("kernels: not in the embedded kernel set")

// String returns the name EnvKernels takes.
func (m Mode) String() string {
	switch m {
	case ModeAuto:
		return "auto"
	case ModeEmbedded:
		return "embedded"
	case ModeNVRTC:
		return "nvrtc"
	}
	return fmt.Sprintf("Mode(%d)", int(m))
}

// ParseMode reads a mode name as EnvKernels takes it; empty is ModeAuto.
func ParseMode(s string) (Mode, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "", "auto":
		return ModeAuto, nil
	case "embedded":
		return ModeEmbedded, nil
	case "nvrtc":
		return ModeNVRTC, nil
	}
	return ModeAuto, fmt.Errorf("%w: %q (want auto, embedded or nvrtc)", ErrBadMode, s)
}

// WithMode says where the kernels come from, overriding DETGEMM_KERNELS.
func WithMode(m Mode) BuildOption {
	return func(b *buildConfig) { b.mode, b.modeSet = m, true }
}

// resolveMode applies the precedence: option, then the environment.
func resolveMode(cfg buildConfig, getenv func(string) string) (Mode, error) {
	if cfg.modeSet {
		if cfg.mode < ModeAuto || cfg.mode > ModeNVRTC {
			return ModeAuto, fmt.Errorf("%w: %v", ErrBadMode, cfg.mode)
		}
		return cfg.mode, nil
	}
	m, err := ParseMode(getenv(EnvKernels))
	if err != nil {
		return ModeAuto, fmt.Errorf("%s: %w", EnvKernels, err)
	}
	return m, nil
}

// embeddedRow describes one CUBIN of the embedded set (zembedded.go).
type embeddedRow struct {
	family, arch string
	// variant is "base" (NVRTC 12.x, old CUDA ELF ABI) or a newer build
	// ("cuda13"); minDriver the cuDriverGetVersion it needs, 0 for base.
	variant, nvrtc          string
	minDriver               int
	sourceHash, cubinSHA256 string
	size, packed            int
}
