package kernels

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// ErrUnsupportedArch is matched when detgemm cannot run on an architecture.
var ErrUnsupportedArch = errors.New("detgemm needs Ampere (sm_80) or newer")

// ErrInvalidArch is matched when an architecture name cannot be parsed or
// names something that does not exist (sm_80a).
var ErrInvalidArch = errors.New("kernels: invalid GPU architecture")

// ErrArchNotInNVRTC is matched when the NVRTC in use cannot compile for the
// requested architecture (too old for it).
var ErrArchNotInNVRTC = errors.New("kernels: NVRTC cannot compile for this architecture")

// Arch is a real GPU architecture: the compute capability, and Specific for
// the architecture-specific variant (sm_90a) whose instructions (wgmma,
// setmaxnreg) exist on that one architecture only.
type Arch struct {
	Major, Minor int
	Specific     bool
}

// String returns NVRTC's name for it: "sm_90" or "sm_90a".
func (a Arch) String() string {
	s := fmt.Sprintf("sm_%d%d", a.Major, a.Minor)
	if a.Specific {
		s += "a"
	}
	return s
}

// number is the form NVRTC's supported-architecture list uses: 90 for sm_90
// and sm_90a alike.
func (a Arch) number() int { return a.Major*10 + a.Minor }

// ParseArch parses "sm_90", "sm_90a", "sm_100a" (the "sm_" prefix may be
// left out). It checks syntax only; Build says whether detgemm supports it.
func ParseArch(s string) (Arch, error) {
	t := strings.TrimPrefix(strings.ToLower(strings.TrimSpace(s)), "sm_")
	specific := false
	if u, ok := strings.CutSuffix(t, "a"); ok {
		t, specific = u, true
	}
	n, err := strconv.Atoi(t)
	if err != nil || n < 10 || n > 999 || strings.HasPrefix(t, "+") || strings.HasPrefix(t, "-") {
		return Arch{}, fmt.Errorf("%w: %q (want sm_XY or sm_XYa, e.g. sm_90a)", ErrInvalidArch, s)
	}
	a := Arch{Major: n / 10, Minor: n % 10, Specific: specific}
	if err := a.checkSpecific(); err != nil {
		return Arch{}, err
	}
	return a, nil
}

// checkSpecific rejects "a" variants before Hopper, which do not exist.
func (a Arch) checkSpecific() error {
	if a.Specific && a.Major < 9 {
		return fmt.Errorf("%w: %s (architecture-specific variants start at sm_90a)", ErrInvalidArch, a)
	}
	return nil
}

// check says whether detgemm runs on a.
func (a Arch) check() error {
	if err := a.checkSpecific(); err != nil {
		return err
	}
	if a.Major < 8 {
		return fmt.Errorf("kernels: %s: %w", a, ErrUnsupportedArch)
	}
	return nil
}

// ArchFor picks the architecture to compile for on a device of compute
// capability ccMajor.ccMinor with NVRTC major version nvrtcMajor: sm_90a on
// Hopper (CC 9.0) when NVRTC is 12 or newer, so the wgmma families can be
// built; the device's exact architecture otherwise. A binary for sm_90a runs
// only on CC 9.0, which is exactly the device asked about.
func ArchFor(ccMajor, ccMinor, nvrtcMajor int) Arch {
	return Arch{
		Major:    ccMajor,
		Minor:    ccMinor,
		Specific: ccMajor == 9 && ccMinor == 0 && nvrtcMajor >= 12,
	}
}

// SupportedArchs lists the architectures detgemm's tests build every family
// for: Ampere (sm_80, sm_86), Ada (sm_89) and Hopper (sm_90, sm_90a).
func SupportedArchs() []Arch {
	return []Arch{
		{Major: 8, Minor: 0},
		{Major: 8, Minor: 6},
		{Major: 8, Minor: 9},
		{Major: 9, Minor: 0},
		{Major: 9, Minor: 0, Specific: true},
	}
}
