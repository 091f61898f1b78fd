package nvrtc_test

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/detgemm/detgemm/internal/nvrtctest"
	"github.com/detgemm/detgemm/nvrtc"
)

const tinyKernel = `
extern "C" __global__ void scale(float* p, float s, unsigned long long n) {
    unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;
    if (i < n) p[i] *= s;
}
`

var elfMagic = []byte{0x7f, 'E', 'L', 'F'}

func TestCompileTinyKernelToCUBIN(t *testing.T) {
	c := nvrtctest.Compiler(t)
	r, err := c.Compile(tinyKernel, "tiny.cu", []string{"--gpu-architecture=sm_80", "--ptxas-options=-v"})
	require.NoError(t, err)
	require.True(t, bytes.HasPrefix(r.CUBIN, elfMagic), "CUBIN must be an ELF image, got % x", r.CUBIN[:min(8, len(r.CUBIN))])
	require.Contains(t, r.Log, "Compiling entry function 'scale' for 'sm_80'", "the ptxas report is in the log")
}

func TestCompileSyntaxErrorReturnsWholeLog(t *testing.T) {
	c := nvrtctest.Compiler(t)
	src := "extern \"C\" __global__ void broken(float* p) { p[0] = undefined_name + ; }\n"
	r, err := c.Compile(src, "broken.cu", []string{"--gpu-architecture=sm_80"})
	require.Nil(t, r)
	require.ErrorIs(t, err, nvrtc.ErrCompile)
	require.ErrorIs(t, err, nvrtc.StatusCompilation)
	require.NotErrorIs(t, err, nvrtc.ErrBuiltinsMissing)

	var ce *nvrtc.CompileError
	require.True(t, errors.As(err, &ce))
	require.Equal(t, "broken.cu", ce.Name)
	require.Contains(t, ce.Log, `identifier "undefined_name" is undefined`)
	require.Contains(t, ce.Log, "broken.cu(1): error")
	require.Equal(t, ce.Log, ce.Result.Log)
	require.Contains(t, err.Error(), ce.Log[:strings.Index(ce.Log, "\n")], "the message carries the log")
}

func TestCompileUnknownOptionIsACompileError(t *testing.T) {
	c := nvrtctest.Compiler(t)
	_, err := c.Compile(tinyKernel, "tiny.cu", []string{"--gpu-architecture=sm_80", "--no-such-option"})
	require.ErrorIs(t, err, nvrtc.ErrCompile)
	require.ErrorIs(t, err, nvrtc.StatusInvalidOption)
	require.Contains(t, err.Error(), "--no-such-option")
}

func TestCompileResolvesInMemoryHeaders(t *testing.T) {
	c := nvrtctest.Compiler(t)
	src := "#include \"detgemm_test.cuh\"\nextern \"C\" __global__ void k(float* p) { p[0] = TWICE(p[0]); }\n"
	r, err := c.Compile(src, "hdr.cu", []string{"-arch=sm_90"},
		nvrtc.Header{Name: "detgemm_test.cuh", Source: "#pragma once\n#define TWICE(x) ((x) + (x))\n"})
	require.NoError(t, err)
	require.True(t, bytes.HasPrefix(r.CUBIN, elfMagic))

	_, err = c.Compile(src, "hdr.cu", []string{"-arch=sm_90"})
	require.ErrorIs(t, err, nvrtc.ErrCompile, "without the header the include fails")
}

func TestCompileRefusesPTXOnlyTargets(t *testing.T) {
	c := nvrtctest.Compiler(t)
	for _, opts := range [][]string{
		{"--gpu-architecture=compute_80"},
		{"--std=c++17"}, // NVRTC's default target is virtual
	} {
		_, err := c.Compile(tinyKernel, "tiny.cu", opts)
		require.ErrorIs(t, err, nvrtc.ErrNeedsRealArch, "%v", opts)
	}
}

func TestCompileRejectsNULInSource(t *testing.T) {
	c := nvrtctest.Compiler(t)
	_, err := c.Compile("extern \"C\" __global__ void k() {}\x00junk", "nul.cu", []string{"-arch=sm_80"})
	require.ErrorIs(t, err, nvrtc.ErrInvalidArgument)
}

func TestVersionAndSupportedArchsAreSane(t *testing.T) {
	c := nvrtctest.Compiler(t)
	major, minor := c.Version()
	require.GreaterOrEqual(t, major, 11)
	require.Less(t, major, 100)
	require.GreaterOrEqual(t, minor, 0)
	require.Less(t, minor, 100)
	require.Contains(t, c.String(), fmt.Sprintf("NVRTC %d.%d", major, minor))
	require.NotEmpty(t, c.Path())

	archs, err := c.SupportedArchs()
	require.NoError(t, err)
	require.Contains(t, archs, 80, "every NVRTC detgemm accepts targets Ampere")
	for i := 1; i < len(archs); i++ {
		require.Less(t, archs[i-1], archs[i], "ascending")
	}
}

func TestOpenIsCachedPerProcess(t *testing.T) {
	c := nvrtctest.Compiler(t)
	again, err := nvrtc.Open()
	require.NoError(t, err)
	require.Same(t, c, again)
}

func TestConcurrentCompilesAgree(t *testing.T) {
	c := nvrtctest.Compiler(t)
	const n = 6
	var wg sync.WaitGroup
	cubins := make([][]byte, n)
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() {
			arch := []string{"sm_80", "sm_90"}[i%2]
			r, err := c.Compile(tinyKernel, fmt.Sprintf("tiny%d.cu", i), []string{"--gpu-architecture=" + arch})
			errs[i] = err
			if err == nil {
				cubins[i] = r.CUBIN
			}
		})
	}
	wg.Wait()
	for i := range n {
		require.NoError(t, errs[i], "goroutine %d", i)
		require.True(t, bytes.HasPrefix(cubins[i], elfMagic))
	}
	// Same source and target give the same bytes, whichever thread compiled.
	for i := 2; i < n; i++ {
		require.Equal(t, cubins[i%2], cubins[i], "goroutine %d", i)
	}
}

// Compile a kernel to CUBIN for an Ampere GPU.
func ExampleCompiler_Compile() {
	c, err := nvrtc.Open()
	if err != nil {
		fmt.Println("no NVRTC:", err)
		return
	}
	r, err := c.Compile(`extern "C" __global__ void zero(float* p) { p[threadIdx.x] = 0.0f; }`,
		"zero.cu", []string{"--gpu-architecture=sm_80", "--ptxas-options=-v"})
	if err != nil {
		fmt.Println(err) // a *CompileError: the whole log
		return
	}
	fmt.Println(len(r.CUBIN) > 0, strings.Contains(r.Log, "Used"))
}
