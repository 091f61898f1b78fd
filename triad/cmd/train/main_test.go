package main

import (
	"bytes"
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
