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
// gated SwiGLU and GeGLU and the three tiers, then ReLU and GELU with
// --sparse24 and with --fp8 (at --out 16), are the golden ones (for ReLU,
// those the README quotes: 59d14124…, abe77f67…, 4ff42ba2…).
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
	for _, act := range []string{"relu", "gelu"} {
		o, err := parseFlags([]string{"--cpu", "--quiet", "--act", act, "--tier", "tc", "--sparse24"}, io.Discard)
		require.NoError(t, err)
		cfg, err := o.config()
		require.NoError(t, err)
		r, d, err := train(triad.NewCPU(0), cfg, o, 1, io.Discard, io.Discard)
		require.NoError(t, err)
		require.NoError(t, r.Close())
		got = append(got, golden.Entry{Key: sparseGoldenKey(act, cfg, o), Digest: d})
	}
	for _, act := range []string{"relu", "gelu"} {
		o, err := parseFlags(fp8Args(act, "--cpu"), io.Discard)
		require.NoError(t, err)
		cfg, err := o.config()
		require.NoError(t, err)
		r, d, err := train(triad.NewCPU(0), cfg, o, 1, io.Discard, io.Discard)
		require.NoError(t, err)
		require.NoError(t, r.Close())
		got = append(got, golden.Entry{Key: fp8GoldenKey(act, cfg, o), Digest: d})
	}
	if *update {
		require.NoError(t, golden.Write(demoGoldenPath, golden.Colon, demoGoldenHeader, got))
		return
	}
	g, err := golden.Read(demoGoldenPath, golden.Colon)
	require.NoError(t, err)
	require.NoError(t, g.Compare(got))
}

// sparseGoldenKey is the golden key of a --sparse24 run.
func sparseGoldenKey(act string, cfg triad.TrainConfig, o options) string {
	return fmt.Sprintf("--act %s --tier tc --sparse24 (%v) %dx%dx%dx%d batch=%d steps=%d epochs=%d seed=%d", act, cfg.DType,
		cfg.In, cfg.Hidden, cfg.Hidden, cfg.Out, cfg.Batch, cfg.Steps, o.epochs, cfg.Seed)
}

// fp8Args are the flags of the golden --fp8 runs: the default sizes but
// --out 16 (fp8 widths are multiples of 16), and extra.
func fp8Args(act string, extra ...string) []string {
	return append([]string{"--quiet", "--act", act, "--tier", "tc", "--fp8", "--out", "16"}, extra...)
}

// fp8GoldenKey is the golden key of an --fp8 run.
func fp8GoldenKey(act string, cfg triad.TrainConfig, o options) string {
	return fmt.Sprintf("--act %s --tier tc --fp8 (%v) %dx%dx%dx%d batch=%d steps=%d epochs=%d seed=%d", act, cfg.DType,
		cfg.In, cfg.Hidden, cfg.Hidden, cfg.Out, cfg.Batch, cfg.Steps, o.epochs, cfg.Seed)
}

// The demo with --fp8 passes its checks on the CPU, for ReLU and GELU and
// both 16-bit types, and says what the fp8 layers do.
func TestDemoOnTheCPUPassesEveryCheckWithFP8(t *testing.T) {
	for _, act := range []string{"relu", "gelu"} {
		for _, d := range []string{"bf16", "f16"} {
			o := small("tc", d)
			o.act, o.fp8, o.in, o.hidden, o.out = act, true, 16, 32, 16
			t.Run(act+"/"+d, func(t *testing.T) {
				var out bytes.Buffer
				ok, err := run(o, &out, io.Discard)
				require.NoError(t, err)
				require.True(t, ok, out.String())
				require.Contains(t, out.String(), "fp8: every layer's forward (x E4M3 a scale per row")
				require.Contains(t, out.String(), "(bit-identical)")
				require.Contains(t, out.String(), "50 rows computed at batch 1 vs inside one batch of 120: 0 differ")
			})
		}
	}
	var out bytes.Buffer
	_, err := run(small("tc", ""), &out, io.Discard)
	require.NoError(t, err)
	require.NotContains(t, out.String(), "fp8", "without --fp8 the output is what it was")
}

// --fp8's refusals say what to change.
func TestDemoExplainsWhatFP8Needs(t *testing.T) {
	fp8 := func(f func(*options)) options {
		o := small("tc", "")
		o.fp8, o.in, o.hidden, o.out = true, 16, 32, 16
		f(&o)
		return o
	}
	for _, c := range []struct {
		o    options
		want string
	}{
		{fp8(func(o *options) { o.tier, o.dtype = "typed", "bf16" }), "use --tier tc"},
		{fp8(func(o *options) { o.tier, o.dtype = "f32", "" }), "use --tier tc"},
		{fp8(func(o *options) { o.sparse24 = true }), "--fp8 and --sparse24 do not combine"},
		{fp8(func(o *options) { o.act = "swiglu" }), "--act relu or gelu, not swiglu"},
		{fp8(func(o *options) { o.out = 8 }), "not 16, 32 and 8: try --out 16"},
		{fp8(func(o *options) { o.in = 6 }), "--fp8 needs --in, --hidden and --out multiples of 16"},
	} {
		_, err := run(c.o, io.Discard, io.Discard)
		require.ErrorContains(t, err, c.want)
	}
	// --fp8 alone takes an output width of 16; an explicit --out 8 is refused.
	o, err := parseFlags([]string{"--tier", "tc", "--fp8"}, io.Discard)
	require.NoError(t, err)
	require.Equal(t, 16, o.out)
	_, err = o.config()
	require.NoError(t, err)
	o, err = parseFlags([]string{"--tier", "tc", "--fp8", "--out", "8"}, io.Discard)
	require.NoError(t, err)
	_, err = o.config()
	require.ErrorContains(t, err, "try --out 16")
	o, err = parseFlags([]string{"--tier", "tc"}, io.Discard)
	require.NoError(t, err)
	require.Equal(t, 8, o.out, "without --fp8 the output width stays 8")
}

// On an sm_90 GPU the demo with --fp8 prints the golden digests (the CPU
// backend's) and passes every check, graph replay included. It skips
// without a usable GPU.
func TestDemoOnTheGPUPrintsTheFP8GoldenDigests(t *testing.T) {
	if testing.Short() {
		t.Skip("trains the demo's default network four times")
	}
	g, err := triad.OpenGPU(0)
	if err != nil {
		t.Skipf("no usable GPU: %v", err)
	}
	arch := g.Engine().Arch()
	require.NoError(t, g.Close())
	if arch.Major != 9 || arch.Minor != 0 {
		t.Skipf("the fp8 products run on an sm_90 GPU; this GPU is %v", arch)
	}
	file, err := golden.Read(demoGoldenPath, golden.Colon)
	require.NoError(t, err)
	for _, act := range []string{"relu", "gelu"} {
		t.Run(act, func(t *testing.T) {
			o, err := parseFlags(fp8Args(act), io.Discard)
			require.NoError(t, err)
			cfg, err := o.config()
			require.NoError(t, err)
			var out bytes.Buffer
			ok, err := run(o, &out, io.Discard)
			require.NoError(t, err)
			s := out.String()
			t.Log("\n" + s)
			require.True(t, ok, s)
			require.Contains(t, s, "backend: gpu")
			require.Contains(t, s, "graph replay (3 steps)")
			const prefix = "final weights, run 1: sha256 "
			i := strings.Index(s, prefix)
			require.GreaterOrEqual(t, i, 0, s)
			d := s[i+len(prefix) : i+len(prefix)+64]
			require.NoError(t, file.Check(fp8GoldenKey(act, cfg, o), d))
		})
	}
}

// The demo with --sparse24 passes its checks on the CPU, for ReLU and GELU
// and both 16-bit types, and says what the sparse layers do.
func TestDemoOnTheCPUPassesEveryCheckWithSparse24(t *testing.T) {
	for _, act := range []string{"relu", "gelu"} {
		for _, d := range []string{"bf16", "f16"} {
			o := small("tc", d)
			o.act, o.sparse24, o.in, o.hidden = act, true, 16, 32
			t.Run(act+"/"+d, func(t *testing.T) {
				var out bytes.Buffer
				ok, err := run(o, &out, io.Discard)
				require.NoError(t, err)
				require.True(t, ok, out.String())
				require.Contains(t, out.String(), "2:4 sparse: every layer keeps 2 of every 4 weights")
				require.Contains(t, out.String(), "(bit-identical)")
			})
		}
	}
	var out bytes.Buffer
	_, err := run(small("tc", ""), &out, io.Discard)
	require.NoError(t, err)
	require.NotContains(t, out.String(), "2:4 sparse", "without --sparse24 the output is what it was")
}

// On an sm_90 GPU the demo with --sparse24 prints the golden digests (the
// CPU backend's) and passes every check, graph replay included. It skips
// without a usable GPU.
func TestDemoOnTheGPUPrintsTheSparse24GoldenDigests(t *testing.T) {
	if testing.Short() {
		t.Skip("trains the demo's default network four times")
	}
	g, err := triad.OpenGPU(0)
	if err != nil {
		t.Skipf("no usable GPU: %v", err)
	}
	arch := g.Engine().Arch()
	require.NoError(t, g.Close())
	if arch.Major != 9 || arch.Minor != 0 {
		t.Skipf("the golden tensor-core digests are an sm_90 GPU's; this GPU is %v", arch)
	}
	file, err := golden.Read(demoGoldenPath, golden.Colon)
	require.NoError(t, err)
	for _, act := range []string{"relu", "gelu"} {
		t.Run(act, func(t *testing.T) {
			o, err := parseFlags([]string{"--quiet", "--act", act, "--tier", "tc", "--sparse24"}, io.Discard)
			require.NoError(t, err)
			cfg, err := o.config()
			require.NoError(t, err)
			var out bytes.Buffer
			ok, err := run(o, &out, io.Discard)
			require.NoError(t, err)
			s := out.String()
			t.Log("\n" + s)
			require.True(t, ok, s)
			require.Contains(t, s, "backend: gpu")
			require.Contains(t, s, "graph replay (3 steps)")
			const prefix = "final weights, run 1: sha256 "
			i := strings.Index(s, prefix)
			require.GreaterOrEqual(t, i, 0, s)
			d := s[i+len(prefix) : i+len(prefix)+64]
			require.NoError(t, file.Check(sparseGoldenKey(act, cfg, o), d))
		})
	}
}

func TestDemoRejectsBadFlags(t *testing.T) {
	for _, o := range []options{small("f32", "bf16"), small("typed", "f32"), small("tc", "f32"), small("tensor", ""),
		func() options { o := small("f32", ""); o.act = "tanh"; return o }(),
		func() options { o := small("f32", ""); o.act = "swiglu"; o.hidden = 10; return o }(),
		func() options { o := small("f32", ""); o.epochs = 0; return o }(),
		func() options { o := small("typed", "bf16"); o.sparse24, o.in, o.hidden = true, 16, 32; return o }(),
		func() options { o := small("f32", ""); o.sparse24, o.in, o.hidden = true, 16, 32; return o }(),
		func() options { o := small("tc", ""); o.sparse24 = true; return o }(), // --in 6, --hidden 10
		func() options {
			o := small("tc", "")
			o.sparse24, o.in, o.hidden, o.act = true, 16, 32, "swiglu"
			return o
		}(),
		func() options { o := small("typed", "bf16"); o.fp8, o.in, o.hidden, o.out = true, 16, 32, 16; return o }(),
		func() options { o := small("tc", ""); o.fp8 = true; return o }(), // --in 6, --hidden 10, --out 3
		func() options {
			o := small("tc", "")
			o.fp8, o.in, o.hidden, o.out, o.act = true, 16, 32, 16, "geglu"
			return o
		}(),
		func() options {
			o := small("tc", "")
			o.fp8, o.sparse24, o.in, o.hidden, o.out = true, true, 16, 32, 16
			return o
		}()} {
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
		"f32 ", "typed ", "tc ", "relu ", "gelu ", "swiglu ", "geglu ", "glu ", "reglu ", "-tier", "-dtype", "-act", "-sparse24", "2:4 sparse", "-fp8", "E5M2", "scale per row", "-quiet", "-cpu", "-epochs", "-seed", "Exit status"} {
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
		{[]string{"--tier", "tc", "--sparse24"}, true},
		{[]string{"--tier", "tc", "--fp8", "--out", "16", "--act", "gelu"}, true},
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
