package kernels

import (
	"os"
	"testing"

	"github.com/stretchr/testify/require"
)

func readLog(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile("testdata/" + name)
	require.NoError(t, err)
	return string(b)
}

func TestParseResourcesReadsRealNVRTCLogs(t *testing.T) {
	// Logs captured from NVRTC 12.4 on this project's CI machine.
	for _, tc := range []struct {
		file string
		want []Resource
	}{
		{"ptxas_util_sm_90a.log", []Resource{ // sm_90 reports no cmem
			{Kernel: "detgemm_bf16_to_f32", Registers: 14},
			{Kernel: "detgemm_f16_to_f32", Registers: 14},
			{Kernel: "detgemm_f32_to_bf16_rne", Registers: 16},
			{Kernel: "detgemm_f32_to_f16_rne", Registers: 16},
			{Kernel: "detgemm_fill_u16", Registers: 12},
			{Kernel: "detgemm_fill_u32", Registers: 12},
		}},
		{"ptxas_spills_sm_80.log", []Resource{
			{Kernel: "_Z6helperPKfi", Device: true, SpillStores: 104, SpillLoads: 104},
			{Kernel: "shared_user", Registers: 14, SharedBytes: 16640, ConstBytes: 360},
			{Kernel: "spilly", Registers: 32, StackBytes: 4160, SpillStores: 4016, SpillLoads: 8308, ConstBytes: 364},
		}},
		{"ptxas_spills_sm_90a.log", []Resource{
			{Kernel: "_Z6helperPKfi", Device: true, SpillStores: 88, SpillLoads: 88},
			{Kernel: "shared_user", Registers: 14, SharedBytes: 16640},
			{Kernel: "spilly", Registers: 32, StackBytes: 4160, SpillStores: 4016, SpillLoads: 8308},
		}},
	} {
		t.Run(tc.file, func(t *testing.T) {
			require.Equal(t, tc.want, ParseResources(readLog(t, tc.file)))
		})
	}
}

func TestParseResourcesToleratesVariantsAndNoise(t *testing.T) {
	for _, tc := range []struct {
		name string
		log  string
		want []Resource
	}{
		{"empty", "", []Resource{}},
		{"no report (no -v)", "util.cu(3): warning #177-D: variable \"x\" was declared but never referenced\n", []Resource{}},
		{
			"CRLF, lmem, several cmem banks, barriers, timing lines",
			"ptxas info    : 8 bytes gmem, 16 bytes cmem[3]\r\n" +
				"ptxas info    : Compiling entry function 'k' for 'sm_86'\r\n" +
				"ptxas info    : Function properties for k\r\n" +
				"ptxas         .     24 bytes stack frame, 8 bytes spill stores, 12 bytes spill loads\r\n" +
				"ptxas info    : Used 40 registers, used 1 barriers, 32 bytes lmem, 2048 bytes smem, 380 bytes cmem[0], 16 bytes cmem[2]\r\n" +
				"ptxas info    : Compile time = 1.234 ms\r\n",
			[]Resource{{Kernel: "k", Registers: 40, StackBytes: 32, SpillStores: 8, SpillLoads: 12, SharedBytes: 2048, ConstBytes: 396}},
		},
		{
			"entry without a Used line keeps zeros; next entry unaffected",
			"ptxas info    : Compiling entry function 'a' for 'sm_80'\n" +
				"ptxas info    : Compiling entry function 'b' for 'sm_80'\n" +
				"ptxas info    : Used 7 registers, 360 bytes cmem[0]\n",
			[]Resource{{Kernel: "a"}, {Kernel: "b", Registers: 7, ConstBytes: 360}},
		},
		{
			"cumulative stack larger than the frame wins",
			"ptxas info    : Compiling entry function 'k' for 'sm_90'\n" +
				"ptxas info    : Function properties for k\n" +
				"ptxas         .     16 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n" +
				"ptxas info    : Used 20 registers, 64 bytes cumulative stack size\n",
			[]Resource{{Kernel: "k", Registers: 20, StackBytes: 64}},
		},
		{
			"mangled C++ entry names",
			"ptxas info    : Compiling entry function '_Z4gemmILi128EEvPf' for 'sm_80'\n" +
				"ptxas info    : Used 128 registers, 49152 bytes smem, 368 bytes cmem[0]\n",
			[]Resource{{Kernel: "_Z4gemmILi128EEvPf", Registers: 128, SharedBytes: 49152, ConstBytes: 368}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, ParseResources(tc.log))
		})
	}
}
