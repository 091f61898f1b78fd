package argerr_test

import (
	"errors"
	"testing"

	"github.com/detgemm/detgemm/cudaload"
	"github.com/detgemm/detgemm/gemm"
	"github.com/detgemm/detgemm/gemm/ref"
	"github.com/detgemm/detgemm/internal/argerr"
	"github.com/detgemm/detgemm/triad"
)

// TestPackagesShareOneErrorTypeAndSentinels: a refusal of gemm, of
// gemm/ref and of triad, each from a real call, is the one *argerr.Error
// (so errors.As finds it as gemm.ArgError, ref.ArgError and triad.Error
// alike) and matches the same sentinel through every package's name for it.
func TestPackagesShareOneErrorTypeAndSentinels(t *testing.T) {
	gemmErr := (&gemm.Engine{}).Forward(gemm.ForwardArgs{Tier: gemm.TierF32, M: 1, K: 1, N: 1, In: gemm.BF16, Out: gemm.F32})
	refErr := ref.Options{Tier: ref.IEEE}.Forward(ref.Values(nil), ref.Values(nil), ref.Values(nil), nil, 1, 1, 1)
	_, triadErr := triad.NewCPU(1).Alloc(triad.DType(0), 1, 1)
	for _, c := range []struct {
		pkg string
		err error
	}{{"gemm", gemmErr}, {"ref", refErr}, {"triad", triadErr}} {
		for _, s := range []error{argerr.ErrDType, gemm.ErrDType, ref.ErrDType, triad.ErrDType} {
			if !errors.Is(c.err, s) {
				t.Errorf("%s: %v does not match %v", c.pkg, c.err, s)
			}
		}
		var (
			one *argerr.Error
			g   *gemm.ArgError
			r   *ref.ArgError
			tr  *triad.Error
		)
		if !errors.As(c.err, &one) || !errors.As(c.err, &g) || !errors.As(c.err, &r) || !errors.As(c.err, &tr) {
			t.Fatalf("%s: %T is not the one argument-error type", c.pkg, c.err)
		}
		if one.Pkg != c.pkg || one.Err != argerr.ErrDType {
			t.Errorf("%s: Pkg %q, Err %v", c.pkg, one.Pkg, one.Err)
		}
	}
}

// TestSharedSentinelsAreOneVariable: the packages' names for a shared
// sentinel are the same error, and the sentinels only one package returns
// stay apart.
func TestSharedSentinelsAreOneVariable(t *testing.T) {
	for _, c := range []struct {
		name string
		errs []error
	}{
		{"dimension", []error{argerr.ErrDimension, gemm.ErrDimension, ref.ErrDim}},
		{"dtype", []error{argerr.ErrDType, gemm.ErrDType, ref.ErrDType, triad.ErrDType}},
		{"tier", []error{argerr.ErrTier, gemm.ErrTier, ref.ErrTier}},
		{"closed", []error{argerr.ErrClosed, gemm.ErrClosed, triad.ErrClosed, cudaload.ErrClosed}},
	} {
		for _, e := range c.errs[1:] {
			if e != c.errs[0] {
				t.Errorf("%s: %v is a separate variable", c.name, e)
			}
		}
	}
	if errors.Is(ref.ErrLength, triad.ErrShape) || errors.Is(gemm.ErrTooLarge, argerr.ErrDimension) {
		t.Error("package-specific sentinels match each other")
	}
}

// TestErrorReadsPackageOpArgReason: the message names the package, the
// operation, the argument and the reason.
func TestErrorReadsPackageOpArgReason(t *testing.T) {
	for _, c := range []struct {
		err  error
		want string
	}{
		{argerr.New("gemm", "Forward", "K", argerr.ErrDimension, "%d is not positive", 0), "gemm.Forward: K: 0 is not positive"},
		{argerr.New("triad", "Linear.Forward", "x", triad.ErrShape, "3 columns, want 4"), "triad.Linear.Forward: x: 3 columns, want 4"},
		{&argerr.Error{Op: "Forward", Arg: "x", Reason: "short"}, "Forward: x: short"},
	} {
		if got := c.err.Error(); got != c.want {
			t.Errorf("got %q, want %q", got, c.want)
		}
	}
}
