package triad

import (
	"flag"
	"fmt"
	"math"
	"testing"

	"github.com/detgemm/detgemm/internal/golden"
	"github.com/stretchr/testify/require"
)

// update rewrites testdata/golden/triad.txt and triad_gelu.txt from the
// CPU backend. Changing these bits is a contract change: say so in
// CHANGELOG.md.
var update = flag.Bool("update", false, "rewrite the triad golden digests from the CPU backend")

// The golden digests of the short runs: with ReLU (the runs from before
// MLPConfig.Act existed, unchanged by the fused epilogues) and with GELU.
const (
	goldenPath     = "../testdata/golden/triad.txt"
	goldenGELUPath = "../testdata/golden/triad_gelu.txt"
)

// shortConfig is a small run that still crosses a slab boundary: 300 rows
// per step make the dW, db and loss plans fold two slabs.
func shortConfig(tc tierCase) TrainConfig {
	return TrainConfig{In: 12, Hidden: 24, Out: 5, Tier: tc.tier, DType: tc.d, Batch: 300, Steps: 3, Seed: 42,
		Opt: SGD{LR: 0.05, Momentum: 0.9}}
}

const shortEpochs = 2

// shortConfigAct is shortConfig with the hidden layers' activation act.
func shortConfigAct(tc tierCase, act Act) TrainConfig {
	c := shortConfig(tc)
	c.Act = act
	return c
}

// trainDigest runs cfg for epochs and returns the digest of the final
// weights followed by the bits of the last loss and the loss sum.
func trainDigest(t *testing.T, be Backend, cfg TrainConfig, epochs int) string {
	t.Helper()
	r, err := NewRun(be, cfg)
	require.NoError(t, err)
	defer r.Close()
	for range epochs {
		_, err := r.Epoch(nil)
		require.NoError(t, err)
	}
	d, err := r.Model.Digest()
	require.NoError(t, err)
	last, sum, err := r.Model.Loss()
	require.NoError(t, err)
	return fmt.Sprintf("%s loss=%08x sum=%08x", d, math.Float32bits(last), math.Float32bits(sum))
}

// requireLearnsInvariantly trains cfg on be for one epoch and then epochs
// more: the loss falls (and is a number), and the trained model's rows do
// not depend on the batch (64 rows of the inputs, one at a time and together).
func requireLearnsInvariantly(t *testing.T, be Backend, cfg TrainConfig, epochs int) {
	t.Helper()
	r, err := NewRun(be, cfg)
	require.NoError(t, err)
	defer r.Close()
	first, err := r.Epoch(nil)
	require.NoError(t, err)
	var last float64
	for range epochs {
		last, err = r.Epoch(nil)
		require.NoError(t, err)
	}
	require.Less(t, last, first)
	require.False(t, math.IsNaN(last))
	n, diff, err := BatchInvariance(r.Model, r.X, 64)
	require.NoError(t, err)
	require.Equal(t, 64, n)
	require.Zero(t, diff)
}

func goldenKey(tc tierCase) string {
	c := shortConfig(tc)
	return fmt.Sprintf("train %v %dx%dx%dx%d batch=%d steps=%d epochs=%d seed=%d", tc, c.In, c.Hidden, c.Hidden, c.Out, c.Batch, c.Steps, shortEpochs, c.Seed)
}

// goldenKeyAct is the key of the short run with act in its file: the ReLU
// runs keep goldenKey, the key they had before Act existed.
func goldenKeyAct(tc tierCase, act Act) string {
	if act == ActReLU {
		return goldenKey(tc)
	}
	return act.String() + " " + goldenKey(tc)
}

// goldenPathOf is the file of act's short runs.
func goldenPathOf(act Act) string {
	if act == ActGELU {
		return goldenGELUPath
	}
	return goldenPath
}

// goldenHeader is triad.txt's comment block, written back by -update.
var goldenHeader = []string{
	"Digests of short triad training runs on the CPU backend (go test ./triad -update).",
	"Each line: the run, then the SHA-256 of the final f32 weights and biases and the bits of the last loss and the loss sum.",
}

// goldenGELUHeader is triad_gelu.txt's comment block.
var goldenGELUHeader = []string{
	"Digests of short triad training runs with GELU (MLPConfig.Act = ActGELU) on the CPU backend (go test ./triad -update).",
	"Each line: the run, then the SHA-256 of the final f32 weights and biases and the bits of the last loss and the loss sum.",
}

func readGolden(t *testing.T) *golden.File { return readGoldenAct(t, ActReLU) }

func readGoldenAct(t *testing.T, act Act) *golden.File {
	t.Helper()
	g, err := golden.Read(goldenPathOf(act), golden.Colon)
	require.NoError(t, err, "run go test ./triad -run TestTrainingDigestMatchesGolden -update to create it")
	return g
}

func TestTrainingDigestIsStableRunToRun(t *testing.T) {
	for _, tc := range tierCases {
		t.Run(tc.String(), func(t *testing.T) {
			a := trainDigest(t, NewCPU(1), shortConfig(tc), shortEpochs)
			b := trainDigest(t, NewCPU(2), shortConfig(tc), shortEpochs)
			require.Equal(t, a, b, "two runs (1 and 2 workers) from one seed")
		})
	}
}

func TestTrainingDigestMatchesGolden(t *testing.T) {
	for _, act := range []Act{ActReLU, ActGELU} {
		t.Run(act.String(), func(t *testing.T) {
			var got []golden.Entry
			for _, tc := range tierCases {
				got = append(got, golden.Entry{Key: goldenKeyAct(tc, act), Digest: trainDigest(t, NewCPU(0), shortConfigAct(tc, act), shortEpochs)})
			}
			if *update {
				header := goldenHeader
				if act == ActGELU {
					header = goldenGELUHeader
				}
				require.NoError(t, golden.Write(goldenPathOf(act), golden.Colon, header, got))
				return
			}
			require.NoError(t, readGoldenAct(t, act).Compare(got))
		})
	}
}

// GELU trains: two runs from one seed agree, and the loss falls.
func TestTrainingWithGELU(t *testing.T) {
	for _, tc := range tierCases {
		t.Run(tc.String(), func(t *testing.T) {
			cfg := shortConfigAct(tc, ActGELU)
			require.Equal(t, trainDigest(t, NewCPU(1), cfg, shortEpochs), trainDigest(t, NewCPU(2), cfg, shortEpochs),
				"two runs (1 and 2 workers) from one seed")
			requireLearnsInvariantly(t, NewCPU(0), cfg, 4)
		})
	}
}

func TestMLPRowsAreBatchInvariant(t *testing.T) {
	for _, tc := range tierCases {
		t.Run(tc.String(), func(t *testing.T) {
			be := NewCPU(2)
			r, err := NewRun(be, shortConfig(tc))
			require.NoError(t, err)
			defer r.Close()
			_, err = r.Epoch(nil)
			require.NoError(t, err)
			n, diff, err := BatchInvariance(r.Model, r.X, 64)
			require.NoError(t, err)
			require.Equal(t, 64, n)
			require.Zero(t, diff)
		})
	}
}

func TestTrainingReducesTheLoss(t *testing.T) {
	r, err := NewRun(NewCPU(0), shortConfig(tierCases[0]))
	require.NoError(t, err)
	defer r.Close()
	first, err := r.Epoch(nil)
	require.NoError(t, err)
	var last float64
	for range 5 {
		last, err = r.Epoch(nil)
		require.NoError(t, err)
	}
	require.Less(t, last, first)
}
