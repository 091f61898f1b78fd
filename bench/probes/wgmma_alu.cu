// wgmma_alu.cu: does an ALU instruction issued by one warpgroup cost the
// tensor cores a cycle while another warpgroup's wgmma chain runs on the same
// SM? (bench/NOTES-matmul.md, twenty-eighth session.) Warpgroup 0 runs a
// chain of m64n256k16 bf16 wgmma groups from shared memory (the values do not
// matter to the rate); warpgroup 1 issues a burst of independent instructions
// of one kind at the same time. Both time themselves with clock64, one block
// an SM; the tensor chain's cycles against the burst's instruction count give
// the cost of an instruction to the tensor pipe. Not part of the library:
// built and run by hand on the GPU machine,
//   nvcc -O3 -gencode=arch=compute_90a,code=sm_90a -Xptxas -v -o wgmma_alu wgmma_alu.cu && ./wgmma_alu
#include <cstdio>
#include <cstdlib>
#include <algorithm>
#include <vector>

typedef unsigned long long u64;

__device__ __forceinline__ void wg_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void wg_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
template <int N> __device__ __forceinline__ void wg_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
}
// d += A(64x16) . B(16x256), both K-major in shared memory, f32 accumulators.
__device__ __forceinline__ void wg_m64n256(float (&d)[128], u64 da, u64 db) {
  asm volatile(
      "{\n.reg .pred p;\nsetp.ne.b32 p, %130, 0;\n"
      "wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, %80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, %96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, %112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127}, %128, %129, p, 1, 1, 0, 0;\n}\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]), "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]), "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]), "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]), "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]), "+f"(d[96]), "+f"(d[97]), "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]), "+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]), "+f"(d[110]), "+f"(d[111]), "+f"(d[112]), "+f"(d[113]), "+f"(d[114]), "+f"(d[115]), "+f"(d[116]), "+f"(d[117]), "+f"(d[118]), "+f"(d[119]), "+f"(d[120]), "+f"(d[121]), "+f"(d[122]), "+f"(d[123]), "+f"(d[124]), "+f"(d[125]), "+f"(d[126]), "+f"(d[127])
      : "l"(da), "l"(db), "r"(1));
}
// A shared-memory matrix descriptor without swizzle: start, leading and
// stride byte offsets (each >> 4).
__device__ __forceinline__ u64 desc(unsigned addr, unsigned lbo, unsigned sbo) {
  return (u64)((addr >> 4) & 0x3FFF) | ((u64)((lbo >> 4) & 0x3FFF) << 16) | ((u64)((sbo >> 4) & 0x3FFF) << 32);
}

enum { K_FFMA_RRR, K_FFMA_3R, K_FFMA_IMM, K_FADD, K_IADD, K_MUFU, K_STS, K_LDS, K_KINDS };
static const char *kind_name[K_KINDS] = {"ffma_reuse", "ffma_3r", "ffma_imm", "fadd", "iadd", "mufu_ex2", "sts", "lds"};

#define SMEM_BYTES (64 * 1024)
#define ALU_BASE (16 * 1024)  // the burst's shared-memory words lie past the wgmma operands

// out[4*block]: tensor chain cycles, ALU burst cycles, ALU start - tensor start.
extern "C" __global__ void __launch_bounds__(256, 1)
probe(int groups, int wait1, int alu_iters, int kind, long long *out, float *sink) {
  extern __shared__ __align__(1024) unsigned char smem[];
  for (int i = threadIdx.x; i < SMEM_BYTES / 4; i += blockDim.x) ((unsigned *)smem)[i] = 0x3C003C00u;
  __syncthreads();
  const unsigned base = (unsigned)__cvta_generic_to_shared(smem);
  __shared__ long long t_tensor0;
  if (threadIdx.x < 128) {
    float d[128];
#pragma unroll
    for (int i = 0; i < 128; ++i) d[i] = 0.0f;
    const u64 da = desc(base, 128, 256), db = desc(base + 4096, 128, 256);
    asm volatile("bar.sync 1, 256;\n" ::: "memory");
    long long t0 = clock64();
    for (int g = 0; g < groups; ++g) {
      wg_fence();
      wg_m64n256(d, da, db);
      wg_m64n256(d, da, db);
      wg_m64n256(d, da, db);
      wg_m64n256(d, da, db);
      wg_commit();
      if (wait1) wg_wait<1>(); else wg_wait<0>();
    }
    wg_wait<0>();
    long long t1 = clock64();
    float s = 0.0f;
#pragma unroll
    for (int i = 0; i < 128; ++i) s += d[i];
    if (s == 1234.5f) sink[threadIdx.x] = s;
    if (threadIdx.x == 0) { out[4 * blockIdx.x] = t1 - t0; t_tensor0 = t0; }
  } else {
    const int lane = threadIdx.x - 128;
    volatile float *vs = (volatile float *)(smem + ALU_BASE);
    const float xr = vs[lane], yr = vs[lane + 1];
    float a[16];
    unsigned u[16];
#pragma unroll
    for (int j = 0; j < 16; ++j) { a[j] = (float)(lane + j); u[j] = lane * 16 + j; }
    const unsigned sa = base + ALU_BASE + lane * 4;
    asm volatile("bar.sync 1, 256;\n" ::: "memory");
    long long t0 = clock64();
    switch (kind) {
    case K_FFMA_RRR:
      for (int i = 0; i < alu_iters; ++i)
#pragma unroll
        for (int j = 0; j < 16; ++j) a[j] = __fmaf_rn(a[j], xr, yr);
      break;
    case K_FFMA_3R: {
      float b[16], c[16];
#pragma unroll
      for (int j = 0; j < 16; ++j) { b[j] = vs[lane + 2 * j]; c[j] = vs[lane + 2 * j + 1]; }
      for (int i = 0; i < alu_iters; ++i)
#pragma unroll
        for (int j = 0; j < 16; ++j) a[j] = __fmaf_rn(a[j], b[j], c[j]);
      break;
    }
    case K_FFMA_IMM:
      for (int i = 0; i < alu_iters; ++i)
#pragma unroll
        for (int j = 0; j < 16; ++j) a[j] = __fmaf_rn(a[j], 0.99951171875f, 0.5f);
      break;
    case K_FADD:
      for (int i = 0; i < alu_iters; ++i)
#pragma unroll
        for (int j = 0; j < 16; ++j) a[j] = __fadd_rn(a[j], xr);
      break;
    case K_IADD:
      for (int i = 0; i < alu_iters; ++i)
#pragma unroll
        for (int j = 0; j < 16; ++j) u[j] = u[j] + u[(j + 1) & 15] + (unsigned)i;
      break;
    case K_MUFU:
      for (int i = 0; i < alu_iters; ++i)
#pragma unroll
        for (int j = 0; j < 16; ++j) asm volatile("ex2.approx.ftz.f32 %0, %0;\n" : "+f"(a[j]));
      break;
    case K_STS:
      for (int i = 0; i < alu_iters; ++i)
#pragma unroll
        for (int j = 0; j < 16; ++j) asm volatile("st.shared.b32 [%0], %1;\n" ::"r"(sa + j * 512), "r"(u[j] + i) : "memory");
      break;
    case K_LDS:
      for (int i = 0; i < alu_iters; ++i)
#pragma unroll
        for (int j = 0; j < 16; ++j) {
          unsigned v;
          asm volatile("ld.shared.b32 %0, [%1];\n" : "=r"(v) : "r"(sa + j * 512) : "memory");
          u[j] += v;
        }
      break;
    }
    long long t1 = clock64();
    float s = 0.0f;
#pragma unroll
    for (int j = 0; j < 16; ++j) s += a[j] + (float)u[j];
    if (s == 1234.5f) sink[threadIdx.x] = s;
    asm volatile("bar.sync 2, 128;\n" ::: "memory");
    if (lane == 0) { out[4 * blockIdx.x + 1] = t1 - t0; out[4 * blockIdx.x + 3] = t0; }
  }
  __syncthreads();
  if (threadIdx.x == 0) out[4 * blockIdx.x + 2] = out[4 * blockIdx.x + 3] - t_tensor0;
}

#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { printf("%s: %s\n", #x, cudaGetErrorString(e)); exit(1); } } while (0)

static long long median(std::vector<long long> v) { std::sort(v.begin(), v.end()); return v[v.size() / 2]; }

int main(int argc, char **argv) {
  int sms = 0;
  CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  cudaDeviceProp prop;
  CK(cudaGetDeviceProperties(&prop, 0));
  const int groups = argc > 1 ? atoi(argv[1]) : 256;
  printf("# %s, %d SMs; %d groups of 4 m64n256k16 (ideal %d cycles at 4096 FLOP a cycle an SM)\n", prop.name, sms, groups, groups * 4 * 128);
  CK(cudaFuncSetAttribute(probe, cudaFuncAttributeMaxDynamicSharedMemorySize, SMEM_BYTES));
  long long *out; float *sink;
  CK(cudaMalloc(&out, sizeof(long long) * 4 * sms));
  CK(cudaMalloc(&sink, sizeof(float) * 256));
  std::vector<long long> h(4 * sms);
  const int iters[] = {0, 128, 256, 512, 1024};
  printf("%-10s %5s %6s %8s %12s %12s %10s %14s\n", "kind", "wait", "iters", "instr", "tensor_cyc", "alu_cyc", "alu_lag", "extra/instr");
  for (int wait1 = 1; wait1 >= 0; --wait1) {
    for (int kind = 0; kind < K_KINDS; ++kind) {
      long long base_cyc = 0;
      for (int it : iters) {
        std::vector<long long> tc, ac, lag;
        for (int rep = 0; rep < 4; ++rep) {
          probe<<<sms, 256, SMEM_BYTES>>>(groups, wait1, it, kind, out, sink);
          CK(cudaGetLastError());
          CK(cudaDeviceSynchronize());
          if (rep == 0) continue;
          CK(cudaMemcpy(h.data(), out, sizeof(long long) * 4 * sms, cudaMemcpyDeviceToHost));
          for (int b = 0; b < sms; ++b) { tc.push_back(h[4 * b]); ac.push_back(h[4 * b + 1]); lag.push_back(h[4 * b + 2]); }
        }
        long long t = median(tc), a = median(ac), l = median(lag);
        if (it == 0) base_cyc = t;
        const long long instr = (long long)it * 16;  // the burst's own operations a thread (loop overhead not counted)
        printf("%-10s %5d %6d %8lld %12lld %12lld %10lld %14.3f\n", kind_name[kind], wait1, it, instr, t, a, l,
               instr ? (double)(t - base_cyc) / (double)instr : 0.0);
      }
    }
  }
  return 0;
}
