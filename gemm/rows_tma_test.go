package gemm

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// The kernel traps when launched with less shared memory than Cfg<DT>::SMEM;
// these are its sizes worked by hand from gemm_rows_tma.cu.
func TestRowsTMASharedBytesMatchTheKernel(t *testing.T) {
	// 1 KiB slack + slots × (W box + x box, to 1 KiB) + MAXS·MR·32·4 + 2·slots·8;
	// f32 at MR = 16 stages half slabs of 128 steps, two slots a group.
	// The many-wave ring (waves) keeps four slots so that three blocks share
	// an SM's 228 KiB.
	for _, c := range []struct {
		in                      DType
		mr, groups, stages, wps int
		box, maxs               int
		waves                   bool
	}{
		{F32, 1, 6, 6, 1, 32768 + 1024, 32, false}, {F32, 4, 5, 5, 1, 32768 + 4096, 32, false}, {F32, 16, 4, 8, 2, 16384 + 8192, 16, false},
		{BF16, 1, 10, 10, 1, 16384 + 1024, 32, false}, // 16896 rounded up to 1 KiB
		{BF16, 4, 8, 8, 1, 16384 + 2048, 32, false}, {F16, 4, 8, 8, 1, 16384 + 2048, 32, false}, {BF16, 16, 6, 6, 2, 16384 + 8192, 16, false},
		{BF16, 1, 4, 4, 1, 16384 + 1024, 32, true}, {F16, 1, 4, 4, 1, 16384 + 1024, 32, true},
	} {
		want := uint32(1024 + c.stages*c.box + c.maxs*c.mr*32*4 + 2*c.stages*8)
		require.Equal(t, want, rowsTMASharedBytes(c.in, c.mr, c.waves), "%v MR=%d", c.in, c.mr)
		require.LessOrEqual(t, want, uint32(227<<10), "fits an H100/H200 block")
		if c.waves {
			require.LessOrEqual(t, 3*(want+1024), uint32(228<<10), "three blocks an SM (1 KiB reserved a block)")
		}
		require.Equal(t, c.stages, rowsTMAStages(c.in, c.mr, c.waves))
		require.Equal(t, uint32(32*(c.groups*c.wps+1)), rowsTMAThreads(c.in, c.mr, c.waves), "the groups' warps and the producer")
		require.Equal(t, int64(c.maxs), rowsTMAMaxSlabs(c.mr))
	}
	require.Equal(t, 1, rowsTMAMR(1))
	require.Equal(t, 4, rowsTMAMR(2))
	require.Equal(t, 4, rowsTMAMR(4))
	require.Equal(t, 16, rowsTMAMR(5))
	require.Equal(t, 16, rowsTMAMR(16))
}

func TestRowsTMAFitsOnlyWhatTMAAndTheBlockCanTake(t *testing.T) {
	base := problem{layout: layoutNN, in: F32, out: F32, rows: 1, cols: 4096, red: 4096, a: 256, b: 512, lda: 4096, ldb: 4096}
	require.True(t, rowsTMAFits(base))
	for name, mut := range map[string]func(p *problem){
		"dW layout":            func(p *problem) { p.layout = layoutTN },
		"33 slabs":             func(p *problem) { p.red = 32*256 + 1 },
		"17 slabs of 16 rows":  func(p *problem) { p.rows, p.red = 16, 16*256+1 },
		"x unaligned":          func(p *problem) { p.a = 260 },
		"W unaligned":          func(p *problem) { p.b = 520 },
		"x rows unaligned":     func(p *problem) { p.lda = 4097 },
		"W rows unaligned":     func(p *problem) { p.ldb = 4094 },
		"16-bit rows of 12 B":  func(p *problem) { p.in, p.out, p.ldb = BF16, BF16, 4100 },
		"columns past 2^31":    func(p *problem) { p.cols = 1 << 31 },
		"row groups past grid": func(p *problem) { p.rows = 16*maxGridYZ + 1 },
	} {
		p := base
		mut(&p)
		require.False(t, rowsTMAFits(p), name)
	}
	p := base
	p.red = 32 * 256
	require.True(t, rowsTMAFits(p), "32 slabs fold in the block")
	p.in, p.out, p.ldb, p.lda = BF16, F32, 8, 8
	require.True(t, rowsTMAFits(p), "16-bit rows of 16 bytes")
	p.layout = layoutNT
	require.True(t, rowsTMAFits(p), "dX")
}

// The dispatcher's rule: every dX and every f32 call, 16-bit Forward only
// while its strips run in one wave; never without the sm_90a family.
func TestRowsTMAAutoRule(t *testing.T) {
	e := &Engine{device: device{hasWG: true, sms: 132}}
	var f filter
	p := problem{layout: layoutNN, in: BF16, out: BF16, rows: 1, cols: 4096, red: 4096, a: 256, b: 512, lda: 4096, ldb: 4096}
	require.True(t, e.rowsTMA(p, 4, &f), "128 strips on 132 SMs")
	require.False(t, e.rowsTMA(p, 32, &f), "at most 16 rows")
	q := p
	q.cols = 1024
	require.True(t, e.rowsTMA(q, 4, &f), "32 strips: one wave")
	q.cols = 132*32 + 8
	require.True(t, e.rowsTMA(q, 4, &f), "133 strips of bf16 Forward at one row: the many-wave ring")
	require.True(t, rowsTMAWaves(q, 132))
	require.False(t, rowsTMAWaves(p, 132), "128 strips: the deep ring")
	q.rows = 2
	require.False(t, e.rowsTMA(q, 4, &f), "133 strips of bf16 Forward at two rows: a second wave")
	require.False(t, rowsTMAWaves(q, 132), "the many-wave ring takes one row")
	q.rows = 1
	q.in, q.out = F32, F32
	require.True(t, e.rowsTMA(q, 4, &f), "f32 Forward, any number of waves")
	q.in, q.out, q.layout = BF16, BF16, layoutNT
	require.True(t, e.rowsTMA(q, 4, &f), "dX, any number of waves")
	f.rowsPath = rowsPathTMA
	q.layout = layoutNN
	require.True(t, e.rowsTMA(q, 4, &f), "forced")
	f.rowsPath = rowsPathOne
	require.False(t, e.rowsTMA(p, 4, &f), "the one-launch path forced")
	f.rowsPath = rowsPathAuto
	r := p
	r.rows, r.in, r.out = 16, F32, F32
	require.True(t, e.rowsTMA(r, 16, &f), "16 rows of f32 in one full wave")
	r.cols = 11008
	require.True(t, e.rowsTMA(r, 16, &f), "16 rows of f32, 344 strips")
	r.cols = 1024
	require.False(t, e.rowsTMA(r, 16, &f), "16 rows, 32 strips: the FMA loop bounds it")
	r.cols, r.in, r.out = 4096, BF16, BF16
	require.True(t, e.rowsTMA(r, 16, &f), "16 rows of bf16 in one full wave")
	r.cols = 11008
	require.False(t, e.rowsTMA(r, 16, &f), "16 rows of bf16, 344 strips")
	r.cols, r.rows = 4096, 8
	require.True(t, e.rowsTMA(r, 16, &f), "8 rows of bf16 in one full wave")
	r.cols = 11008
	require.False(t, e.rowsTMA(r, 16, &f), "8 rows of bf16, 344 strips")
	e = &Engine{device: device{hasWG: false, sms: 132}}
	require.False(t, e.rowsTMA(p, 4, &f), "no sm_90a family")
}
