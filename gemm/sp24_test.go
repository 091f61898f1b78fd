package gemm

import (
	"errors"
	"math"
	"testing"

	"github.com/detgemm/detgemm/cudaload"
	"github.com/detgemm/detgemm/gemm/internal/entries"
	"github.com/detgemm/detgemm/gemm/ref"
	"github.com/detgemm/detgemm/kernels"
)

// sp24TestEngine is an engine that validates and plans sparse forwards
// but launches nothing (closed): enough for the refusal tests and the fuzz
// target, without a GPU.
func sp24TestEngine(arch kernels.Arch) *Engine {
	e := &Engine{}
	e.arch = arch
	e.closed = true
	return e
}

var hopper = kernels.Arch{Major: 9, Specific: true}

func TestSparse24Refuses(t *testing.T) {
	e := sp24TestEngine(hopper)
	good := Sparse24Desc{In: BF16, Out: BF16, M: 5, N: 24, K: 64}
	args := Sparse24Args{X: 1 << 40, Values: 2 << 40, Meta: 3 << 40, Y: 4 << 40}
	for _, c := range []struct {
		name string
		d    func(*Sparse24Desc)
		a    func(*Sparse24Args)
		want error
	}{
		{"f32 in", func(d *Sparse24Desc) { d.In, d.Out = F32, F32 }, nil, ErrDType},
		{"f16 out of bf16", func(d *Sparse24Desc) { d.Out = F16 }, nil, ErrDType},
		{"K % 16", func(d *Sparse24Desc) { d.K = 40 }, nil, ErrDimension},
		{"N 0", func(d *Sparse24Desc) { d.N = 0 }, nil, ErrDimension},
		{"M < 0", func(d *Sparse24Desc) { d.M = -1 }, nil, ErrDimension},
		{"LDX % 8", func(d *Sparse24Desc) { d.LDX = 68 }, nil, ErrLeadingDim},
		{"LDX < K", func(d *Sparse24Desc) { d.LDX = 32 }, nil, ErrLeadingDim},
		{"LDY < N", func(d *Sparse24Desc) { d.LDY = 23 }, nil, ErrLeadingDim},
		{"LDAux unused", func(d *Sparse24Desc) { d.LDAux = 30 }, nil, ErrLeadingDim},
		{"backward epilogue", func(d *Sparse24Desc) { d.Epilogue = DGelu }, nil, ErrEpilogue},
		{"gated epilogue", func(d *Sparse24Desc) { d.Epilogue = GatedSwiGLU }, nil, ErrEpilogue},
		{"nil X", nil, func(a *Sparse24Args) { a.X = 0 }, ErrNilPointer},
		{"X misaligned", nil, func(a *Sparse24Args) { a.X += 8 }, ErrMisaligned},
		{"Values misaligned", nil, func(a *Sparse24Args) { a.Values += 2 }, ErrMisaligned},
		{"Meta misaligned", nil, func(a *Sparse24Args) { a.Meta += 2 }, ErrMisaligned},
		{"bias unused", nil, func(a *Sparse24Args) { a.Bias = 5 << 40 }, ErrOperand},
		{"bias missing", func(d *Sparse24Desc) { d.Epilogue = Bias }, nil, ErrNilPointer},
		{"aux missing", func(d *Sparse24Desc) { d.Epilogue = GeluAux }, nil, ErrNilPointer},
		{"Y over X", nil, func(a *Sparse24Args) { a.Y = a.X + 64 }, ErrAlias},
		{"Y over Meta", nil, func(a *Sparse24Args) { a.Y = a.Meta }, ErrAlias},
	} {
		d, a := good, args
		if c.d != nil {
			c.d(&d)
		}
		if c.a != nil {
			c.a(&a)
		}
		p, err := e.PlanSparse24(d)
		if err == nil {
			err = p.Run(a)
		}
		var ae *ArgError
		if !errors.Is(err, c.want) || !errors.As(err, &ae) {
			t.Errorf("%s: got %v, want %v", c.name, err, c.want)
		}
	}
	if err := sp24TestEngine(kernels.Arch{Major: 7, Minor: 5}).CanImplementSparse24(good); !errors.Is(err, ErrArch) {
		t.Errorf("sm_75: got %v, want ErrArch", err)
	}
	p, err := e.PlanSparse24(good)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Run(args); !errors.Is(err, ErrClosed) {
		t.Fatalf("a valid run on a closed engine: %v", err)
	}
	if pr := p.Precision(); !pr.Deterministic || !pr.BatchInvariant || pr.GPUIndependent || p.WorkspaceBytes() != 0 {
		t.Errorf("precision %+v, workspace %d", pr, p.WorkspaceBytes())
	}
}

// TestSparse24TileByM: the tile follows M (and every tile runs the same
// chain, which the GPU tests check).
func TestSparse24TileByM(t *testing.T) {
	e := sp24TestEngine(hopper)
	for _, c := range []struct {
		M    int
		tile string
	}{{0, "s"}, {1, "s"}, {16, "s"}, {17, "m"}, {128, "m"}, {129, "m"}} { // no loaded "l": falls back to "m"
		p, err := e.PlanSparse24(Sparse24Desc{In: F16, Out: F32, M: c.M, N: 8, K: 16})
		if err != nil {
			t.Fatal(err)
		}
		if p.tile.name != c.tile {
			t.Errorf("M %d: tile %s, want %s", c.M, p.tile.name, c.tile)
		}
	}
	// An sm_90a engine holding every kernel: the rows tiles up to 32 rows
	// (32 rows a block only where the grid has at most a block an SM), to
	// 64 rows the 32-row tile where its grid is at most two blocks an SM,
	// the wgmma.sp tiles past that (to 64 rows only where the 64 × 64 mma.sp
	// grid leaves SMs idle), 256 rows m for a grid that fills the SMs
	// without GELU.
	h := sp24TestEngine(hopper)
	h.sms = 132
	h.fns = make(functions, len(entries.All())+1)
	for i := range h.fns {
		h.fns[i] = &cudaload.Function{}
	}
	for _, c := range []struct {
		M, N int
		ep   Epilogue
		tile string
	}{{1, 4096, Default, "r8"}, {8, 11008, Gelu, "r8"}, {9, 4096, Bias, "r16"}, {16, 11008, Default, "r16"},
		{17, 4096, Relu, "r32"}, {32, 4224, Default, "r32"}, {32, 4256, Default, "r16"}, {33, 4096, Default, "w64x64"}, {64, 4096, Default, "w64x64"}, {64, 4224, Default, "w64x64"}, {64, 4256, Gelu, "w64x64"}, {64, 11008, Relu, "w64x64"}, {33, 8448, Default, "w64x64"}, {40, 8384, Default, "w64x64"}, {48, 2048, Default, "r32"}, {64, 1024, Default, "r32"}, {128, 4096, Default, "w64"}, {128, 8448, Default, "w64"}, {128, 8704, Default, "w128"},
		{128, 11008, GeluBias, "w128"}, {4096, 11008, Default, "w256"}, {4096, 11008, Gelu, "w128"}, {0, 64, Default, "r8"}} {
		p, err := h.newSparse24Plan(Sparse24Desc{In: BF16, Out: BF16, M: c.M, N: c.N, K: 128, Epilogue: c.ep})
		if err != nil {
			t.Fatal(err)
		}
		if p.tile.name != c.tile {
			t.Errorf("sm_90a M %d N %d %v: tile %s, want %s", c.M, c.N, c.ep, p.tile.name, c.tile)
		}
	}
	// The wgmma.sp tiles issue both k32 steps of every stage, stages in
	// pairs: a reduction of an odd count of stages, or whose last stage ends
	// in its first half (K % 128 other than 0 or 112), takes gemm_sp24's
	// tiles, even when a test forces a wgmma.sp tile.
	for _, c := range []struct {
		K     int
		force string
		tile  string
	}{{4096, "", "w256"}, {4048, "", "l"}, {4064, "", "l"}, {4080, "", "w256"}, {4032, "", "l"}, {1040, "w128", "l"}, {1136, "w128", "w128"}} {
		sp24ForceTile = c.force
		p, err := h.newSparse24Plan(Sparse24Desc{In: BF16, Out: BF16, M: 4096, N: 11008, K: c.K})
		sp24ForceTile = ""
		if err != nil {
			t.Fatal(err)
		}
		if p.tile.name != c.tile {
			t.Errorf("sm_90a K %d (forced %q): tile %s, want %s", c.K, c.force, p.tile.name, c.tile)
		}
	}
}

// FuzzSparse24Forward: any description and pointers give a typed error or
// a plan whose run passes its checks; an accepted small description is
// one gemm/ref accepts too.
func FuzzSparse24Forward(f *testing.F) {
	f.Add(uint8(1), uint8(1), uint8(0), 5, 24, 64, 0, 0, 0, uint64(1<<40), uint64(0))
	f.Add(uint8(2), uint8(0), uint8(9), 1, 7, 48, 56, 9, 8, uint64(1<<40), uint64(1))
	f.Add(uint8(1), uint8(3), uint8(5), 300, 33, 1040, 1040, 40, 33, uint64(1<<40), uint64(2))
	f.Add(uint8(0), uint8(0), uint8(33), -1, 0, 8, -1, -1, -1, uint64(0), uint64(3))
	f.Add(uint8(1), uint8(1), uint8(1), math.MaxInt32, math.MaxInt32, 1<<30, math.MaxInt, 0, 0, uint64(math.MaxUint64-64), uint64(4))
	f.Fuzz(func(t *testing.T, in, out, ep uint8, M, N, K, ldx, ldy, ldaux int, base, shift uint64) {
		d := Sparse24Desc{In: []DType{0, BF16, F16, F32}[in%4], Out: []DType{0, BF16, F16, F32}[out%4], M: M, N: N, K: K,
			LDX: ldx, LDY: ldy, Epilogue: Epilogue(ep % 40), LDAux: ldaux}
		e := sp24TestEngine(hopper)
		p, err := e.newSparse24Plan(d)
		var ae *ArgError
		if err != nil {
			if !errors.As(err, &ae) {
				t.Fatalf("untyped error %v", err)
			}
			return
		}
		b := cudaload.DevicePtr(base)
		a := Sparse24Args{X: b, Values: b + 1<<44, Meta: b + 2<<44, Y: b + 3<<44 + cudaload.DevicePtr(shift%64)}
		if p.bias {
			a.Bias = b + 4<<44
		}
		if p.aux {
			a.Aux = b + 5<<44
		}
		if err := p.Run(a); !errors.Is(err, ErrClosed) && !errors.As(err, &ae) {
			t.Fatalf("run: untyped error %v", err)
		}
		pd := p.Desc()
		if pd.LDX < pd.K || pd.LDX%8 != 0 || pd.LDY < pd.N || pd.K%16 != 0 {
			t.Fatalf("accepted %+v", pd)
		}
		if M < 1 || M > 8 || N > 40 || K > 128 || pd.LDX > 200 || pd.LDY > 64 || pd.LDAux > 64 {
			return
		}
		kw := (K + 31) / 32
		meta := make([]uint32, N*kw)
		for i := range meta {
			meta[i] = 0x44444444
		}
		req := ref.Sparse24Request{M: M, N: N, K: K, X: ref.Bits(make([]uint16, (M-1)*pd.LDX+K)), LDX: pd.LDX,
			Values: make([]uint16, N*K/2), Meta: meta, LDY: pd.LDY, Epilogue: d.Epilogue, LDAux: d.LDAux}
		if pd.Out == F32 {
			req.Y = ref.Values(make([]float32, (M-1)*pd.LDY+N))
		} else {
			req.Y = ref.Bits(make([]uint16, (M-1)*pd.LDY+N))
		}
		if p.bias {
			req.Bias = make([]float32, N)
		}
		if p.aux && p.mask {
			req.ReluMask = make([]uint8, (M-1)*pd.LDAux+N)
		} else if p.aux && pd.Out == F32 {
			req.Aux = ref.Values(make([]float32, (M-1)*pd.LDAux+N))
		} else if p.aux {
			req.Aux = ref.Bits(make([]uint16, (M-1)*pd.LDAux+N))
		}
		o := ref.Options{Tier: ref.TensorCore, In: d.In, Out: pd.Out, Model: ref.Hopper}
		if err := o.Sparse24Forward(req); err != nil {
			t.Fatalf("the engine accepts %+v, gemm/ref refuses: %v", pd, err)
		}
	})
}
