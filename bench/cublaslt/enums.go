package cublaslt

import "strconv"

// The numbers below are the C enumerators' values. The documentation pages
// they come from: cuBLAS's own reference, "cublasLtEpilogue_t",
// "cublasLtMatmulDescAttributes_t", "cublasLtMatrixLayoutAttribute_t",
// "cublasLtOrder_t" and "cublasLtMatmulPreferenceAttributes_t" under
// https://docs.nvidia.com/cuda/cublas/ (section "cuBLASLt API"), which the
// nvmath-python binding pages list value by value:
// https://docs.nvidia.com/cuda/nvmath-python/latest/bindings/generated/nvmath.bindings.cublasLt.Epilogue.html,
// ...cublasLt.MatmulDescAttribute.html, ...cublasLt.MatrixLayoutAttribute.html
// and ...cublasLt.MatmulPreferenceAttribute.html. cudaDataType_t and
// cublasComputeType_t are the cuBLAS binding's (library_types.h and
// cublas_api.h), repeated here so callers need one import.

// DataType is a cudaDataType_t.
type DataType int32

// The element types Matmul takes. The 8-bit ones are library_types.h's
// CUDA_R_8F_E4M3 = 28 and CUDA_R_8F_E5M2 = 29 (the cudaDataType_t list of
// the CUDA toolkit's library_types.h, which the nvmath-python and PyTorch
// bindings repeat; NVIDIA's CUDALibrarySamples cuBLASLt/LtFp8Matmul sample
// passes CUDA_R_8F_E4M3 for A and B).
const (
	R32F    DataType = 0  // CUDA_R_32F, float (output only here)
	R16F    DataType = 2  // CUDA_R_16F, IEEE half
	R16BF   DataType = 14 // CUDA_R_16BF, bfloat16
	R8FE4M3 DataType = 28 // CUDA_R_8F_E4M3, OCP fp8 E4M3 (inputs only here)
	R8FE5M2 DataType = 29 // CUDA_R_8F_E5M2, OCP fp8 E5M2 (inputs only here)
)

// Size is the element size in bytes (0 for a type this package does not
// know).
func (d DataType) Size() int {
	switch d {
	case R32F:
		return 4
	case R16F, R16BF:
		return 2
	case R8FE4M3, R8FE5M2:
		return 1
	}
	return 0
}

// FP8 reports whether d is one of the 8-bit floating-point types.
func (d DataType) FP8() bool { return d == R8FE4M3 || d == R8FE5M2 }

// computeType32F is CUBLAS_COMPUTE_32F: f32 accumulation, tensor cores
// allowed for half-precision inputs (cublasComputeType_t).
const computeType32F = 68

// Epilogue is a cublasLtEpilogue_t: what cuBLASLt does to the product
// before (and besides) storing D. Values from the cublasLtEpilogue_t page
// (see the file comment).
type Epilogue uint32

// The epilogues. The names follow the C enumerators without their
// CUBLASLT_EPILOGUE_ prefix.
const (
	EpilogueDefault     Epilogue = 1   // D = A·B
	EpilogueReLU        Epilogue = 2   // D = max(A·B, 0)
	EpilogueReLUAux     Epilogue = 130 // RELU, and the ReLU bit-mask into aux
	EpilogueBias        Epilogue = 4   // D = A·B + bias
	EpilogueReLUBias    Epilogue = 6   // D = max(A·B + bias, 0)
	EpilogueReLUAuxBias Epilogue = 134 // RELU_BIAS, and the bit-mask into aux
	EpilogueDReLU       Epilogue = 136 // D = A·B ⊙ relu'(aux)
	EpilogueDReLUBGrad  Epilogue = 152 // DRELU, and bias = Σ over D's rows of the result
	EpilogueGELU        Epilogue = 32  // D = gelu(A·B)
	EpilogueGELUAux     Epilogue = 160 // GELU, and aux = A·B (the pre-activation)
	EpilogueGELUBias    Epilogue = 36  // D = gelu(A·B + bias)
	EpilogueGELUAuxBias Epilogue = 164 // GELU_BIAS, and aux = A·B + bias
	EpilogueDGELU       Epilogue = 192 // D = A·B ⊙ gelu'(aux)
	EpilogueDGELUBGrad  Epilogue = 208 // DGELU, and bias = Σ over D's rows of the result
	EpilogueBGradA      Epilogue = 256 // D = A·B, and bias = the bias gradient of cuBLASLt's A
	EpilogueBGradB      Epilogue = 512 // D = A·B, and bias = the bias gradient of cuBLASLt's B
)

var epilogueNames = map[Epilogue]string{
	EpilogueDefault: "DEFAULT", EpilogueReLU: "RELU", EpilogueReLUAux: "RELU_AUX", EpilogueBias: "BIAS",
	EpilogueReLUBias: "RELU_BIAS", EpilogueReLUAuxBias: "RELU_AUX_BIAS", EpilogueDReLU: "DRELU",
	EpilogueDReLUBGrad: "DRELU_BGRAD", EpilogueGELU: "GELU", EpilogueGELUAux: "GELU_AUX",
	EpilogueGELUBias: "GELU_BIAS", EpilogueGELUAuxBias: "GELU_AUX_BIAS", EpilogueDGELU: "DGELU",
	EpilogueDGELUBGrad: "DGELU_BGRAD", EpilogueBGradA: "BGRADA", EpilogueBGradB: "BGRADB",
}

// String is the C enumerator's name without its prefix ("GELU_AUX_BIAS"),
// or "EPILOGUE(n)" for a value this package does not know.
func (e Epilogue) String() string {
	if n, ok := epilogueNames[e]; ok {
		return n
	}
	return "EPILOGUE(" + strconv.Itoa(int(e)) + ")"
}

// The flag bits the enumerators are built from (cublasLtEpilogue_t's
// definitions: BIAS is 4, the aux bit 128, BGRADA and BGRADB 256 and 512,
// DRELU_BGRAD and DGELU_BGRAD add 16 to DRELU and DGELU).
const (
	biasBit  = 4
	bgradBit = 16
	auxBit   = 128
)

// NeedsBias reports whether the epilogue reads a bias vector or writes a
// bias gradient: either way it needs the bias pointer.
func (e Epilogue) NeedsBias() bool {
	return e&biasBit != 0 || e&bgradBit != 0 || e == EpilogueBGradA || e == EpilogueBGradB
}

// NeedsAux reports whether the epilogue writes (forward) or reads
// (backward) the aux matrix.
func (e Epilogue) NeedsAux() bool { return e&auxBit != 0 }

// Matmul descriptor attributes (cublasLtMatmulDescAttributes_t).
const (
	descTransA      = 3  // CUBLASLT_MATMUL_DESC_TRANSA, int32 (cublasOperation_t)
	descTransB      = 4  // CUBLASLT_MATMUL_DESC_TRANSB, int32 (cublasOperation_t)
	descEpilogue    = 7  // CUBLASLT_MATMUL_DESC_EPILOGUE, uint32
	descBiasPointer = 8  // CUBLASLT_MATMUL_DESC_BIAS_POINTER, void*
	descAuxPointer  = 11 // CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, void*
	descAuxLD       = 12 // CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD, int64
)

// The fp8 attributes of cublasLtMatmulDescAttributes_t. A_SCALE_POINTER
// (17) and B_SCALE_POINTER (18) are listed on the nvmath-python page named
// in the file comment (...cublasLt.MatmulDescAttribute.html: "A_SCALE_POINTER
// = 17", "B_SCALE_POINTER = 18", between SM_COUNT_TARGET = 15 and
// C_SCALE_POINTER = 19); FAST_ACCUM is 25 in cublasLt.h (the enumerator
// list "... EPILOGUE_AUX_AMAX_POINTER = 24, FAST_ACCUM = 25,
// BIAS_DATA_TYPE = 26 ..." as the header's transcriptions in public
// bindings give it), and its value type is int8_t ("int8_t, default: 0 -
// fast accumulation mode is disabled", the header's own comment; PyTorch's
// scaled_gemm sets it from an int8_t too). Each scale pointer is a device
// pointer to one f32 (per-tensor scaling) that multiplies that operand
// before the product; unset, the scale is 1.
const (
	descAScalePointer = 17 // CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, void* (device f32)
	descBScalePointer = 18 // CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, void* (device f32)
	descFastAccum     = 25 // CUBLASLT_MATMUL_DESC_FAST_ACCUM, int8_t
)

// The operations of cublasOperation_t (cuBLAS's cublas_api.h) that
// descTransA and descTransB take.
const (
	opN = 0 // CUBLAS_OP_N
	opT = 1 // CUBLAS_OP_T
)

// Matrix layout attributes (cublasLtMatrixLayoutAttribute_t) and orders
// (cublasLtOrder_t).
const (
	layoutOrder = 1 // CUBLASLT_MATRIX_LAYOUT_ORDER, int32
	orderCol    = 0 // CUBLASLT_ORDER_COL
)

// Preference attributes (cublasLtMatmulPreferenceAttributes_t).
const (
	prefMaxWorkspaceBytes = 1 // CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, uint64
)
