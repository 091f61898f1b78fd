package gemm

import (
	"errors"
	"math"
	"testing"

	"github.com/detgemm/detgemm/cudaload"
)

// gemmSentinels are the errors a call may be refused with; every refusal
// must match one of them (errors.Is), so callers can branch on it.
var gemmSentinels = []error{ErrDimension, ErrTooLarge, ErrNilPointer, ErrMisaligned,
	ErrDType, ErrTier, ErrAlias, ErrArch, ErrClosed, ErrWorkspace}

// pointerSentinels are the refusals that only a call's pointers can cause.
var pointerSentinels = []error{ErrNilPointer, ErrMisaligned, ErrAlias, ErrTooLarge}

func isAny(err error, targets []error) bool {
	for _, s := range targets {
		if errors.Is(err, s) {
			return true
		}
	}
	return false
}

// fuzzCall builds one call from fuzzed fields. op picks Forward, DW or DX
// and whether the Call is the Args value, a pointer to it or a nil
// pointer. ptrMode picks the pointers: 0 all zero (the query form), 1
// disjoint regions 2^40 apart, each moved by its p modulo 64 (valid,
// aligned or off by a few bytes), 2 the raw p values (nil, overlapping,
// wrapping ranges).
func fuzzCall(op, tier, in, out uint8, m, k, n int64, ptrMode uint8, p [4]uint64) Call {
	var ptr [4]cudaload.DevicePtr
	switch ptrMode % 3 {
	case 1:
		for i := range ptr {
			ptr[i] = cudaload.DevicePtr(uint64(i+1)<<40 + p[i]%64)
		}
	case 2:
		for i := range ptr {
			ptr[i] = cudaload.DevicePtr(p[i])
		}
	}
	t, di, do := Tier(tier), DType(in), DType(out)
	M, K, N := int(m), int(k), int(n)
	var c Call
	switch op % 3 {
	case 0:
		a := ForwardArgs{Tier: t, M: M, K: K, N: N, X: ptr[0], W: ptr[1], Y: ptr[2], Bias: ptr[3], In: di, Out: do}
		switch op / 3 % 3 {
		case 1:
			c = &a
		case 2:
			c = (*ForwardArgs)(nil)
		default:
			c = a
		}
	case 1:
		a := DWArgs{Tier: t, M: M, K: K, N: N, X: ptr[0], DY: ptr[1], DW: ptr[2], In: di}
		switch op / 3 % 3 {
		case 1:
			c = &a
		case 2:
			c = (*DWArgs)(nil)
		default:
			c = a
		}
	default:
		a := DXArgs{Tier: t, M: M, N: N, K: K, DY: ptr[0], W: ptr[1], DX: ptr[2], In: di, Out: do}
		switch op / 3 % 3 {
		case 1:
			c = &a
		case 2:
			c = (*DXArgs)(nil)
		default:
			c = a
		}
	}
	return c
}

// runCall enqueues c on e as the public entry point would (a nil pointer
// Call has no entry point to run: it returns false).
func runCall(e *Engine, c Call) (error, bool) {
	switch a := c.(type) {
	case ForwardArgs:
		return e.Forward(a), true
	case *ForwardArgs:
		if a != nil {
			return e.Forward(*a), true
		}
	case DWArgs:
		return e.DW(a), true
	case *DWArgs:
		if a != nil {
			return e.DW(*a), true
		}
	case DXArgs:
		return e.DX(a), true
	case *DXArgs:
		if a != nil {
			return e.DX(*a), true
		}
	}
	return nil, false
}

// FuzzCall drives the validation and dispatch of Forward, DW and DX on
// fake engines (an H200, an A100, an RTX 3090; no GPU): Strategy,
// WorkspaceBytes, Explain and the call itself, which stops at its first
// kernel launch. None may panic; every refusal is a typed sentinel; the
// three queries and the call agree on whether the call is valid, Explain's
// plan is Strategy's and WorkspaceBytes', and an IEEE plan's partials stay
// within the documented 512 MiB cap.
func FuzzCall(f *testing.F) {
	type seed struct {
		op, tier, in, out, dev uint8
		m, k, n                int64
		ptrMode                uint8
		p0, p1, p2, p3         uint64
	}
	const big = math.MaxInt64
	seeds := []seed{
		// Valid calls of every tier, query form and with pointers.
		{0, 1, 1, 1, 0, 1, 4096, 4096, 0, 0, 0, 0, 0},
		{0, 2, 2, 2, 0, 8, 4096, 11008, 1, 0, 0, 0, 0},
		{1, 2, 3, 1, 1, 16, 4096, 4096, 1, 0, 0, 0, 0},
		{2, 3, 2, 1, 2, 128, 11008, 4096, 1, 0, 0, 0, 0},
		{0, 3, 3, 3, 0, 1, 4096, 4096, 1, 0, 0, 0, 0},
		{1, 3, 2, 1, 0, 64, 4096, 4096, 1, 0, 0, 0, 0},
		{2, 3, 2, 2, 0, 128, 4096, 11008, 0, 0, 0, 0, 0},
		{3, 1, 1, 1, 0, 300, 70, 500, 1, 0, 0, 0, 0}, // *ForwardArgs
		{6, 1, 1, 1, 0, 1, 1, 1, 0, 0, 0, 0, 0},      // nil *ForwardArgs
		{7, 1, 1, 1, 0, 1, 1, 1, 0, 0, 0, 0, 0},      // nil *DWArgs
		{8, 1, 1, 1, 0, 1, 1, 1, 0, 0, 0, 0, 0},      // nil *DXArgs
		// Dimensions: 0, negative, near int overflow, 2^31, the grid limits.
		{0, 1, 1, 1, 0, 0, 1, 1, 0, 0, 0, 0, 0},
		{0, 1, 1, 1, 0, 1, -1, 1, 0, 0, 0, 0, 0},
		{1, 1, 1, 1, 0, 1, 1, math.MinInt64, 0, 0, 0, 0, 0},
		{0, 1, 1, 1, 0, big, big, big, 0, 0, 0, 0, 0},
		{0, 2, 2, 2, 0, 1 << 31, 1 << 31, 1 << 31, 1, 0, 0, 0, 0},
		{1, 1, 1, 1, 0, 1 << 31, 1, 1 << 31, 0, 0, 0, 0, 0},
		{2, 3, 3, 3, 0, 1 << 32, 1 << 32, 1, 0, 0, 0, 0, 0},
		{0, 1, 1, 1, 0, 1, 1, 65535*128 + 1, 0, 0, 0, 0, 0},
		{2, 1, 1, 1, 1, math.MaxInt32*128 + 1, 1, 1, 0, 0, 0, 0, 0},
		{0, 3, 2, 2, 0, 1, 1 << 40, 8, 0, 0, 0, 0, 0},
		{1, 3, 3, 1, 0, 1 << 40, 8, 8, 0, 0, 0, 0, 0},
		{1, 1, 1, 1, 0, 1 << 30, 1 << 16, 1 << 16, 0, 0, 0, 0, 0},
		// Unknown tiers and dtypes, mismatched In/Out.
		{0, 0, 1, 1, 0, 1, 8, 8, 0, 0, 0, 0, 0},
		{0, 9, 1, 1, 0, 1, 8, 8, 0, 0, 0, 0, 0},
		{0, 1, 2, 2, 0, 1, 8, 8, 0, 0, 0, 0, 0},
		{0, 2, 1, 1, 0, 1, 8, 8, 0, 0, 0, 0, 0},
		{0, 2, 2, 3, 0, 1, 8, 8, 0, 0, 0, 0, 0},
		{2, 3, 3, 2, 0, 1, 8, 8, 0, 0, 0, 0, 0},
		{1, 2, 0, 0, 0, 1, 8, 8, 0, 0, 0, 0, 0},
		{2, 1, 1, 200, 0, 1, 8, 8, 0, 0, 0, 0, 0},
		// Pointers: misaligned by one byte, nil ones, aliasing, wrapping.
		{0, 1, 1, 1, 0, 4, 64, 64, 1, 1, 0, 0, 0},
		{0, 2, 2, 2, 0, 4, 64, 64, 1, 0, 1, 0, 0},
		{2, 3, 2, 1, 0, 4, 64, 64, 1, 0, 0, 2, 0},
		{0, 1, 1, 1, 0, 4, 64, 64, 2, 1 << 40, 2 << 40, 0, 0},
		{0, 1, 1, 1, 0, 4, 64, 64, 2, 1 << 40, 2 << 40, 1 << 40, 0},
		{1, 1, 1, 1, 0, 4, 64, 64, 2, 1 << 40, 2 << 40, 2<<40 + 256, 0},
		{2, 2, 2, 2, 0, 4, 64, 64, 2, 1 << 40, 2 << 40, 3 << 40, 0},
		{0, 1, 1, 1, 0, 4, 64, 64, 2, 1 << 40, 2 << 40, 3 << 40, 3<<40 + 16},
		{0, 1, 1, 1, 0, 1 << 20, 1 << 20, 1 << 20, 2, 1 << 40, 2 << 40, math.MaxUint64 &^ 255, 0},
		{1, 3, 2, 1, 0, 8, 8, 8, 2, math.MaxUint64 - 1, 256, 512, 0},
	}
	for _, s := range seeds {
		f.Add(s.op, s.tier, s.in, s.out, s.dev, s.m, s.k, s.n, s.ptrMode, s.p0, s.p1, s.p2, s.p3)
	}
	engines := make([]*Engine, len(fakeDevices))
	for i, d := range fakeDevices {
		engines[i], _ = fakeEngine(d)
	}
	f.Fuzz(func(t *testing.T, op, tier, in, out, dev uint8, m, k, n int64, ptrMode uint8, p0, p1, p2, p3 uint64) {
		e := engines[int(dev)%len(engines)]
		c := fuzzCall(op, tier, in, out, m, k, n, ptrMode, [4]uint64{p0, p1, p2, p3})
		typed := func(what string, err error, allowed []error) {
			t.Helper()
			if err != nil && !isAny(err, allowed) {
				t.Fatalf("%s(%#v): untyped error %v", what, c, err)
			}
		}

		s, sErr := e.Strategy(c)
		typed("Strategy", sErr, gemmSentinels)
		ws, wErr := e.WorkspaceBytes(c)
		typed("WorkspaceBytes", wErr, gemmSentinels)
		if (sErr == nil) != (wErr == nil) {
			t.Fatalf("%#v: Strategy says %v, WorkspaceBytes %v", c, sErr, wErr)
		}
		if sErr == nil {
			pl, err := e.planCall(c)
			if err != nil {
				t.Fatalf("%#v: plan %v after Strategy accepted", c, err)
			}
			if tier := Tier(tier); tier != TierTensorCore && pl.ws > maxWorkspaceBytes {
				t.Fatalf("%#v: IEEE plan %v needs %d bytes of partials, past the %d cap", c, pl.strategy, pl.ws, maxWorkspaceBytes)
			}
			if ws != pl.ws+pl.ctrs {
				t.Fatalf("%#v: WorkspaceBytes %d, plan %d + %d", c, ws, pl.ws, pl.ctrs)
			}
		}

		x, xErr := e.Explain(c)
		typed("Explain", xErr, gemmSentinels)
		set, _ := pointersSet(c) // all pointers zero is the query form
		switch {
		case xErr == nil && sErr != nil:
			t.Fatalf("%#v: Explain accepted what Strategy refused (%v)", c, sErr)
		case xErr != nil && sErr == nil:
			// Only the pointers, which the queries do not read, may add a refusal.
			if !set || !isAny(xErr, pointerSentinels) {
				t.Fatalf("%#v: Explain refused (%v) what Strategy accepted", c, xErr)
			}
		case xErr == nil:
			if x.Strategy != s || x.WorkspaceBytes != ws {
				t.Fatalf("%#v: Explain says %v, %d B; Strategy %v, WorkspaceBytes %d B", c, x.Strategy, x.WorkspaceBytes, s, ws)
			}
			if len(x.Launches) == 0 || x.Slabs < 1 {
				t.Fatalf("%#v: Explain without launches or slabs: %v", c, x)
			}
			for _, l := range x.Launches {
				if l.Kernel == "" || l.Grid.Count() == 0 || l.Threads == 0 {
					t.Fatalf("%#v: empty launch %v", c, l)
				}
			}
			_ = x.String()
		}

		// The call itself, on the fake engine, refuses exactly what Explain
		// refuses when its pointers are set, and otherwise reaches its first
		// launch (a closed-module error from cudaload).
		if !set {
			return
		}
		err, ran := runCall(e, c)
		if !ran {
			return
		}
		switch {
		case xErr == nil && !errors.Is(err, cudaload.ErrClosed):
			t.Fatalf("%#v: Explain accepted; the call returned %v before its first launch", c, err)
		case xErr != nil && !errors.Is(err, sentinelOf(xErr)):
			t.Fatalf("%#v: Explain refused with %v; the call with %v", c, xErr, err)
		}
	})
}

// sentinelOf is the gemm sentinel err matches (nil for none).
func sentinelOf(err error) error {
	for _, s := range gemmSentinels {
		if errors.Is(err, s) {
			return s
		}
	}
	return nil
}
