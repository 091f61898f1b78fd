package main

import (
	"bytes"
	"errors"
	"flag"
	"io"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

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

func TestDemoRejectsBadFlags(t *testing.T) {
	for _, o := range []options{small("f32", "bf16"), small("typed", "f32"), small("tc", "f32"), small("tensor", ""), func() options { o := small("f32", ""); o.epochs = 0; return o }()} {
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
		"f32 ", "typed ", "tc ", "-tier", "-dtype", "-quiet", "-cpu", "-epochs", "-seed", "Exit status"} {
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
