package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/detgemm/detgemm/internal/golden"
	"github.com/detgemm/detgemm/triad"
	"github.com/stretchr/testify/require"
)

// update writes testdata/golden/triad_demo.txt from the CPU backend.
// Changing these bits is a contract change: say so in CHANGELOG.md.
var update = flag.Bool("update", false, "write the demo's golden digests from the CPU backend")

// demoGoldenPath holds the final-weight digests `make demo` prints (run 1
// and run 2 alike) for each activation and tier at the default flags.
const demoGoldenPath = "../../../testdata/golden/triad_demo.txt"

var demoGoldenHeader = []string{
	"The final-weight digests the demo (go run ./triad/cmd/train --quiet) prints at its default sizes,",
	"per activation and tier, computed on the CPU backend (go test ./triad/cmd/train -run TestDemoDigestsMatchGolden -update).",
	"A GPU prints the same (tier tc: an sm_90 GPU). Each line: the flags, then the SHA-256 of the final f32 weights and biases.",
}

func small(tier, dtype string) options {
	return options{tier: tier, dtype: dtype, in: 6, hidden: 10, out: 3, batch: 40, steps: 3, epochs: 2, seed: 7,
		lr: 0.05, momentum: 0.9, cpu: true, compare: 50}
}

func TestDemoOnTheCPUPassesEveryCheck(t *testing.T) {
	for _, o := range []options{small("f32", ""), small("typed", "bf16"), small("typed", "f16"), small("tc", ""), small("tc", "f16")} {
		t.Run(o.tier+o.dtype, func(t *testing.T) {
			var out bytes.Buffer
			ok, err := run(o, &out, io.Discard)
			require.NoError(t, err)
			require.True(t, ok, out.String())
			s := out.String()
			require.Contains(t, s, "(bit-identical)")
			require.Contains(t, s, "50 rows computed at batch 1 vs inside one batch of 120: 0 differ")
			require.Contains(t, s, "graph replay: skipped")
			require.Equal(t, 2*o.epochs, strings.Count(s, "  epoch "), "a loss line per epoch and run")
		})
	}
}

// The demo passes its checks with each activation (a gated one on a
// hidden width that is a multiple of 8).
func TestDemoOnTheCPUPassesEveryCheckWithEachActivation(t *testing.T) {
	for _, act := range []string{"relu", "gelu", "swiglu", "geglu", "glu", "reglu"} {
		for _, o := range []options{small("f32", ""), small("tc", "bf16")} {
			o.act = act
			if a, _ := triad.ParseAct(act); a.Gated() {
				o.hidden = 16
			}
			t.Run(act+"/"+o.tier, func(t *testing.T) {
				var out bytes.Buffer
				ok, err := run(o, &out, io.Discard)
				require.NoError(t, err)
				require.True(t, ok, out.String())
				require.Contains(t, out.String(), "("+act+"), tier ")
			})
		}
	}
}

// The digests the demo prints at its default flags, for ReLU, GELU and the
// gated SwiGLU and GeGLU and the three tiers, are the golden ones (for ReLU, those the README
// quotes: 59d14124…, abe77f67…, 4ff42ba2…).
func TestDemoDigestsMatchGolden(t *testing.T) {
	if testing.Short() {
		t.Skip("trains the demo's default network six times")
	}
	var got []golden.Entry
	for _, act := range []string{"relu", "gelu", "swiglu", "geglu"} {
		for _, tier := range []string{"f32", "typed", "tc"} {
			o, err := parseFlags([]string{"--cpu", "--quiet", "--act", act, "--tier", tier}, io.Discard)
			require.NoError(t, err)
			cfg, err := o.config()
			require.NoError(t, err)
			be := triad.NewCPU(0)
			r, d, err := train(be, cfg, o, 1, io.Discard, io.Discard)
			require.NoError(t, err)
			require.NoError(t, r.Close())
			key := fmt.Sprintf("--act %s --tier %s (%v) %dx%dx%dx%d batch=%d steps=%d epochs=%d seed=%d", act, tier, cfg.DType,
				cfg.In, cfg.Hidden, cfg.Hidden, cfg.Out, cfg.Batch, cfg.Steps, o.epochs, cfg.Seed)
			got = append(got, golden.Entry{Key: key, Digest: d})
		}
	}
	if *update {
		require.NoError(t, golden.Write(demoGoldenPath, golden.Colon, demoGoldenHeader, got))
		return
	}
	g, err := golden.Read(demoGoldenPath, golden.Colon)
	require.NoError(t, err)
	require.NoError(t, g.Compare(got))
}

func TestDemoRejectsBadFlags(t *testing.T) {
	for _, o := range []options{small("f32", "bf16"), small("typed", "f32"), small("tc", "f32"), small("tensor", ""),
		func() options { o := small("f32", ""); o.act = "tanh"; return o }(),
		func() options { o := small("f32", ""); o.act = "swiglu"; o.hidden = 10; return o }(),
		func() options { o := small("f32", ""); o.epochs = 0; return o }()} {
		_, err := run(o, io.Discard, io.Discard)
		require.Error(t, err)
	}
}

func TestDemoWritesPlainLinesWithoutATerminal(t *testing.T) {
	var out, errOut bytes.Buffer
	ok, err := run(small("typed", "f16"), &out, &errOut)
	require.NoError(t, err)
	require.True(t, ok)
	require.Empty(t, errOut.String(), "no progress on a stderr that is not a terminal")
	require.NotContains(t, out.String(), "\r")
	require.NotContains(t, out.String(), "\033")
}

func TestDemoDrawsTheBarWhenAsked(t *testing.T) {
	o := small("f32", "")
	o.bar = true
	var out, errOut bytes.Buffer
	_, err := run(o, &out, &errOut)
	require.NoError(t, err)
	require.Contains(t, errOut.String(), "\rrun 1 [")
	require.NotContains(t, out.String(), "\r", "the bar goes to stderr only")
}

func TestDemoQuietPrintsTheSameResultsWithoutEpochLines(t *testing.T) {
	results := func(s string) []string {
		var keep []string
		for _, l := range strings.Split(s, "\n") {
			if strings.Contains(l, "sha256") || strings.HasPrefix(l, "batch invariance") {
				keep = append(keep, l)
			}
		}
		return keep
	}
	var loud, quiet bytes.Buffer
	o := small("tc", "bf16")
	_, err := run(o, &loud, io.Discard)
	require.NoError(t, err)
	o.quiet = true
	ok, err := run(o, &quiet, io.Discard)
	require.NoError(t, err)
	require.True(t, ok)
	require.NotContains(t, quiet.String(), "  epoch ")
	require.Contains(t, quiet.String(), "checks passed")
	require.Len(t, results(quiet.String()), 3)
	require.Equal(t, results(loud.String()), results(quiet.String()))
}

func TestHelpSaysWhatTheProgramDoesAndListsTheFlags(t *testing.T) {
	var help bytes.Buffer
	_, err := parseFlags([]string{"-h"}, &help)
	require.ErrorIs(t, err, flag.ErrHelp)
	for _, want := range []string{"Usage: train [flags]", "bit-identical", "CPU backend",
		"f32 ", "typed ", "tc ", "relu ", "gelu ", "swiglu ", "geglu ", "glu ", "reglu ", "-tier", "-dtype", "-act", "-quiet", "-cpu", "-epochs", "-seed", "Exit status"} {
		require.Contains(t, help.String(), want)
	}
}

func TestParseFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		ok   bool
	}{
		{nil, true},
		{[]string{"--tier", "tc", "--dtype", "f16", "--quiet"}, true},
		{[]string{"--act", "gelu", "--tier", "typed"}, true},
		{[]string{"--act", "swiglu", "--tier", "tc"}, true},
		{[]string{"--act", "geglu"}, true},
		{[]string{"-quiet", "-cpu", "-epochs", "3"}, true},
		{[]string{"--bogus"}, false},
		{[]string{"--epochs", "many"}, false},
		{[]string{"extra"}, false},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			var errOut bytes.Buffer
			o, err := parseFlags(tc.args, &errOut)
			if !tc.ok {
				require.Error(t, err)
				require.NotEmpty(t, errOut.String(), "a bad command line is explained")
				return
			}
			require.NoError(t, err)
			require.Empty(t, errOut.String())
			require.False(t, o.bar, "the bar is main's decision, from stderr")
		})
	}
	o, err := parseFlags([]string{"--tier", "tc", "--quiet"}, io.Discard)
	require.NoError(t, err)
	require.Equal(t, "tc", o.tier)
	require.True(t, o.quiet)
	_, err = o.config()
	require.NoError(t, err)
}

func TestFallbackNoteKeepsTheWholeReasonAndTheHint(t *testing.T) {
	long := strings.Repeat("/a/very/long/candidate/path/libcuda.so.1: no such file\n  ", 8)
	reason := errors.New("CUDA driver (libcuda.so.1) not found; tried 8 candidate(s):\n  " + long +
		"\n(set DETGEMM_LIBCUDA to the path of the driver library to choose one explicitly)")
	note := fallbackNote(reason)
	require.Greater(t, len(note), 300)
	require.Equal(t, 8, strings.Count(note, "/a/very/long/candidate/path/libcuda.so.1: no such file"))
	require.Contains(t, note, "\n  (set DETGEMM_LIBCUDA to the path of the driver library to choose one explicitly)\n")
	require.True(t, strings.HasPrefix(note, "no usable GPU; running on the CPU backend"))
	require.NotContains(t, note, "…")
}
