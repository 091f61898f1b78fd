package cublaslt

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"

	"github.com/detgemm/detgemm/bench/cublas"
	"github.com/detgemm/detgemm/internal/dynlib"
)

func fakeEnv(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

func TestCandidatesSonamesFirstThenCublasFolders(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("Linux layout")
	}
	root := t.TempDir()
	lib64 := filepath.Join(root, "lib64")
	require.NoError(t, os.MkdirAll(lib64, 0o755))
	got, _ := search(fakeEnv(map[string]string{"CUDA_PATH": root}), "")
	require.GreaterOrEqual(t, len(got), 6)
	require.Equal(t, []string{"libcublasLt.so.13", "libcublasLt.so.12", "libcublasLt.so.11"}, got[:3],
		"sonames through the system loader come first, newest major first")
	require.Equal(t, filepath.Join(lib64, "libcublasLt.so.13"), got[3], "then the folders cuBLAS is searched in")
	require.Equal(t, filepath.Join(lib64, "libcublasLt.so.12"), got[4])
}

func TestCandidatesFindPythonWheelDirs(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("Linux layout")
	}
	venv := t.TempDir()
	wheel := filepath.Join(venv, "lib", "python3.12", "site-packages", "nvidia", "cublas", "lib")
	require.NoError(t, os.MkdirAll(wheel, 0o755))
	got, _ := search(fakeEnv(map[string]string{"VIRTUAL_ENV": venv}), "")
	require.Contains(t, got, filepath.Join(wheel, "libcublasLt.so.12"))
}

func TestCandidatesOverrideIsExclusive(t *testing.T) {
	env := fakeEnv(map[string]string{EnvLibrary: "/opt/x/libcublasLt.so.12", "CUDA_PATH": t.TempDir()})
	got, _ := search(env, "")
	require.Equal(t, []string{"/opt/x/libcublasLt.so.12"}, got)
	got, _ = search(env, "/elsewhere/lib.so")
	require.Equal(t, []string{"/elsewhere/lib.so"}, got, "the option beats the environment")

	dir := t.TempDir()
	got, _ = search(fakeEnv(map[string]string{EnvLibrary: dir}), "")
	require.Len(t, got, len(libraryNames), "a directory override is searched for every name")
	for i, n := range libraryNames {
		require.Equal(t, filepath.Join(dir, n), got[i])
	}
}

func TestOpenMissingLibraryMatchesOwnSentinelOnly(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "libcublasLt.so.99")
	_, err := Open(WithLibraryPath(missing))
	require.Error(t, err)
	require.ErrorIs(t, err, ErrNotFound)
	require.ErrorIs(t, err, dynlib.ErrNotFound)
	require.False(t, errors.Is(err, cublas.ErrNotFound), "cuBLAS's sentinel is not cuBLASLt's")
	var nf *dynlib.NotFoundError
	require.True(t, errors.As(err, &nf))
	require.Len(t, nf.Attempts, 1)
	require.Equal(t, missing, nf.Attempts[0].Path)
	require.Contains(t, err.Error(), "cuBLASLt (libcublasLt) not found")
	require.Contains(t, err.Error(), EnvLibrary, "the hint names the override")
}

func TestOpenRejectsLibraryWithoutSymbols(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("needs libc.so.6")
	}
	_, err := Open(WithLibraryPath("libc.so.6"))
	require.ErrorIs(t, err, ErrNotFound)
	require.Contains(t, err.Error(), "cublasLtCreate", "the first missing symbol is the reason")
}

// TestEnumValuesMatchTheHeader pins every number to the value in
// cublasLt.h / library_types.h (the pages named in enums.go).
func TestEnumValuesMatchTheHeader(t *testing.T) {
	for _, tc := range []struct {
		name      string
		got, want uint32
	}{
		{"DEFAULT", uint32(EpilogueDefault), 1},
		{"RELU", uint32(EpilogueReLU), 2},
		{"RELU_AUX", uint32(EpilogueReLUAux), 130},
		{"BIAS", uint32(EpilogueBias), 4},
		{"RELU_BIAS", uint32(EpilogueReLUBias), 6},
		{"RELU_AUX_BIAS", uint32(EpilogueReLUAuxBias), 134},
		{"DRELU", uint32(EpilogueDReLU), 136},
		{"DRELU_BGRAD", uint32(EpilogueDReLUBGrad), 152},
		{"GELU", uint32(EpilogueGELU), 32},
		{"GELU_AUX", uint32(EpilogueGELUAux), 160},
		{"GELU_BIAS", uint32(EpilogueGELUBias), 36},
		{"GELU_AUX_BIAS", uint32(EpilogueGELUAuxBias), 164},
		{"DGELU", uint32(EpilogueDGELU), 192},
		{"DGELU_BGRAD", uint32(EpilogueDGELUBGrad), 208},
		{"BGRADA", uint32(EpilogueBGradA), 256},
		{"BGRADB", uint32(EpilogueBGradB), 512},
		{"MATMUL_DESC_TRANSA", descTransA, 3},
		{"MATMUL_DESC_TRANSB", descTransB, 4},
		{"CUBLAS_OP_N", opN, 0},
		{"CUBLAS_OP_T", opT, 1},
		{"MATMUL_DESC_EPILOGUE", descEpilogue, 7},
		{"MATMUL_DESC_BIAS_POINTER", descBiasPointer, 8},
		{"MATMUL_DESC_EPILOGUE_AUX_POINTER", descAuxPointer, 11},
		{"MATMUL_DESC_EPILOGUE_AUX_LD", descAuxLD, 12},
		{"MATRIX_LAYOUT_ORDER", layoutOrder, 1},
		{"ORDER_COL", orderCol, 0},
		{"MATMUL_PREF_MAX_WORKSPACE_BYTES", prefMaxWorkspaceBytes, 1},
		{"CUBLAS_COMPUTE_32F", computeType32F, 68},
		{"CUDA_R_32F", uint32(R32F), 0},
		{"CUDA_R_16F", uint32(R16F), 2},
		{"CUDA_R_16BF", uint32(R16BF), 14},
		{"CUDA_R_8F_E4M3", uint32(R8FE4M3), 28},
		{"CUDA_R_8F_E5M2", uint32(R8FE5M2), 29},
		{"MATMUL_DESC_A_SCALE_POINTER", descAScalePointer, 17},
		{"MATMUL_DESC_B_SCALE_POINTER", descBScalePointer, 18},
		{"MATMUL_DESC_FAST_ACCUM", descFastAccum, 25},
	} {
		require.Equal(t, tc.want, tc.got, tc.name)
	}
	require.Equal(t, "GELU_AUX_BIAS", EpilogueGELUAuxBias.String())
	require.Equal(t, "EPILOGUE(3)", Epilogue(3).String())
}

func TestHeuristicResultHasTheCLayout(t *testing.T) {
	// cublasLtMatmulHeuristicResult_t: algo (8 uint64), size_t
	// workspaceSize, cublasStatus_t state, float wavesCount, int reserved[4].
	require.Equal(t, uintptr(96), unsafe.Sizeof(heuristicResult{}))
	require.Equal(t, uintptr(64), unsafe.Offsetof(heuristicResult{}.workspace))
}

func TestEpilogueNeedsBiasAndAux(t *testing.T) {
	for _, tc := range []struct {
		e         Epilogue
		bias, aux bool
	}{
		{EpilogueDefault, false, false},
		{EpilogueReLU, false, false},
		{EpilogueGELU, false, false},
		{EpilogueBias, true, false},
		{EpilogueReLUBias, true, false},
		{EpilogueGELUBias, true, false},
		{EpilogueReLUAux, false, true},
		{EpilogueGELUAux, false, true},
		{EpilogueReLUAuxBias, true, true},
		{EpilogueGELUAuxBias, true, true},
		{EpilogueDReLU, false, true},
		{EpilogueDGELU, false, true},
		{EpilogueDReLUBGrad, true, true},
		{EpilogueDGELUBGrad, true, true},
		{EpilogueBGradA, true, false},
		{EpilogueBGradB, true, false},
	} {
		require.Equal(t, tc.bias, tc.e.NeedsBias(), "%v bias", tc.e)
		require.Equal(t, tc.aux, tc.e.NeedsAux(), "%v aux", tc.e)
	}
}

func TestMatmulRejectsArgumentsBeforeCallingTheLibrary(t *testing.T) {
	h := &Handle{lib: &Library{}, h: 1, plans: map[planKey]*plan{}, scal: &[2]float32{1, 0}}
	ok := MatmulArgs{M: 8, K: 8, N: 8, A: 1, B: 1, D: 1, In: R16BF, Out: R16BF}
	for _, tc := range []struct {
		name string
		edit func(*MatmulArgs)
	}{
		{"zero M", func(a *MatmulArgs) { a.M = 0 }},
		{"K beyond a C int", func(a *MatmulArgs) { a.K = 1 << 31 }},
		{"f32 inputs", func(a *MatmulArgs) { a.In, a.Out = R32F, R32F }},
		{"f16 out of bf16", func(a *MatmulArgs) { a.Out = R16F }},
		{"unknown epilogue", func(a *MatmulArgs) { a.Epilogue = 3 }},
		{"bias epilogue without bias", func(a *MatmulArgs) { a.Epilogue = EpilogueGELUBias }},
		{"aux epilogue without aux", func(a *MatmulArgs) { a.Epilogue, a.Bias = EpilogueGELUAuxBias, 1 }},
		{"aux ld below N", func(a *MatmulArgs) { a.Epilogue, a.Bias, a.Aux, a.AuxLD = EpilogueGELUAuxBias, 1, 1, 4 }},
		{"lda below K", func(a *MatmulArgs) { a.LDA = 7 }},
		{"negative ldb", func(a *MatmulArgs) { a.LDB = -8 }},
		{"ldd below N", func(a *MatmulArgs) { a.N, a.LDD = 16, 8 }},
		{"lda below M with TransA", func(a *MatmulArgs) { a.M, a.TransA, a.LDA = 16, true, 8 }},
		{"ldb below K with TransB", func(a *MatmulArgs) { a.K, a.TransB, a.LDB = 16, true, 8 }},
		{"ld beyond a C int", func(a *MatmulArgs) { a.LDD = 1 << 31 }},
	} {
		a := ok
		tc.edit(&a)
		require.ErrorIs(t, h.Matmul(&a), ErrInvalidArgument, tc.name)
	}
	require.Empty(t, h.plans, "nothing was planned")
}

func TestClosedHandleIsAnError(t *testing.T) {
	h := &Handle{lib: &Library{}}
	require.ErrorIs(t, h.Matmul(&MatmulArgs{}), ErrClosed)
	require.NoError(t, h.Destroy())
}

func TestStatusErrorsMatchCublasStatuses(t *testing.T) {
	require.NoError(t, check("op", 0))
	err := check("cublasLtMatmul", 15)
	require.EqualError(t, err, "cublasLtMatmul: CUBLAS_STATUS_NOT_SUPPORTED (15)")
	require.ErrorIs(t, err, StatusNotSupported)
	require.ErrorIs(t, err, cublas.StatusNotSupported, "one enumeration for both libraries")
	var e *Error
	require.True(t, errors.As(err, &e))
	require.Equal(t, "cublasLtMatmul", e.Op)
}

func TestFormatVersion(t *testing.T) {
	require.Equal(t, "12.4.5", FormatVersion(120405))
	require.Equal(t, "13.1.0", FormatVersion(130100))
}

func TestLeadingDimensionsDefaultToTheStoredRowLength(t *testing.T) {
	for _, tc := range []struct {
		name           string
		transA, transB bool
		lda, ldb, ldd  int
		want           [3]int
	}{
		{"nn dense", false, false, 0, 0, 0, [3]int{3, 5, 5}},
		{"tn dense", true, false, 0, 0, 0, [3]int{2, 5, 5}},
		{"nt dense", false, true, 0, 0, 0, [3]int{3, 3, 5}},
		{"tt padded", true, true, 66, 67, 69, [3]int{66, 67, 69}},
	} {
		a := MatmulArgs{M: 2, K: 3, N: 5, TransA: tc.transA, TransB: tc.transB, LDA: tc.lda, LDB: tc.ldb, LDD: tc.ldd, In: R16BF, Out: R16BF}
		lda, ldb, ldd, err := validate(&a, EpilogueDefault)
		require.NoError(t, err, tc.name)
		require.Equal(t, tc.want, [3]int{lda, ldb, ldd}, tc.name)
	}
	k := planKey{m: 2, k: 3, n: 5, transA: true, lda: 2, ldb: 5, ldd: 5, epi: EpilogueBGradA}
	require.Equal(t, "2x3x5 tn lda=2 ldb=5 ldd=5 BGRADA", k.String())
}

func TestFP8ArgumentsAreTheTNFormOnly(t *testing.T) {
	h := &Handle{lib: &Library{}, h: 1, plans: map[planKey]*plan{}, scal: &[2]float32{1, 0}}
	ok := MatmulArgs{M: 64, K: 128, N: 32, A: 1, B: 1, D: 1, TransB: true, In: R8FE4M3, Out: R16BF, ScaleA: 1, ScaleB: 1, FastAccum: true}
	lda, ldb, ldd, err := validate(&ok, EpilogueDefault)
	require.NoError(t, err)
	require.Equal(t, [3]int{128, 128, 32}, [3]int{lda, ldb, ldd}, "A stored M×K and B stored N×K: both rows are K long")
	for _, tc := range []struct {
		name string
		edit func(*MatmulArgs)
	}{
		{"NN", func(a *MatmulArgs) { a.TransB = false }},
		{"TT", func(a *MatmulArgs) { a.TransA = true }},
		{"E5M2 for both", func(a *MatmulArgs) { a.In = R8FE5M2 }},
		{"fp8 out", func(a *MatmulArgs) { a.Out = R8FE4M3 }},
		{"an epilogue", func(a *MatmulArgs) { a.Epilogue, a.Bias = EpilogueBias, 1 }},
		{"scales on bf16", func(a *MatmulArgs) { a.In, a.TransB = R16BF, false }},
		{"fast accumulation on bf16", func(a *MatmulArgs) { a.In, a.TransB, a.ScaleA, a.ScaleB = R16BF, false, 0, 0 }},
	} {
		a := ok
		tc.edit(&a)
		require.ErrorIs(t, h.Matmul(&a), ErrInvalidArgument, tc.name)
	}
	require.Empty(t, h.plans, "nothing was planned")
	for _, out := range []DataType{R16BF, R16F, R32F} {
		a := ok
		a.Out, a.ScaleA, a.ScaleB = out, 0, 0
		_, _, _, err := validate(&a, EpilogueDefault)
		require.NoError(t, err, "out %d, scales left at 1", out)
	}
	require.Equal(t, 1, R8FE4M3.Size())
	require.True(t, R8FE5M2.FP8())
	require.False(t, R16BF.FP8())
	k := planKey{m: 64, k: 128, n: 32, transB: true, lda: 128, ldb: 128, ldd: 32, in: R8FE4M3, out: R16BF, epi: EpilogueDefault, fastAccum: true}
	require.Equal(t, "64x128x32 nt lda=128 ldb=128 ldd=32 DEFAULT fp8 fast-accum", k.String())
}
