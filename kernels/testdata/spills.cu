// The source of ptxas_spills_sm_80.log and ptxas_spills_sm_90a.log, compiled
// with --ptxas-options=-v --maxrregcount=32 by NVRTC 12.4 so that ptxas
// reports a stack frame, spills, shared memory and a separately compiled
// device function. Test input for ParseResources only.
__device__ __noinline__ float helper(const float* p, int n) { float a[32]; for (int i = 0; i < 32; i++) a[i] = p[i*n]; float s = 0; for (int i = 0; i < n; i++) s += a[(i*7)%32]; return s; }
extern "C" __global__ void __launch_bounds__(1024, 2) spilly(float* p, int n) {
  float v[48];
  #pragma unroll
  for (int i = 0; i < 48; i++) v[i] = p[threadIdx.x + i * 1024];
  float s = helper(p, n);
  #pragma unroll
  for (int j = 0; j < 48; j++) {
  #pragma unroll
   for (int i = 0; i < 48; i++) s += v[i] * v[(i + j) % 48]; }
  p[threadIdx.x] = s;
}
extern "C" __global__ void shared_user(float* p) { __shared__ float tile[64][65]; tile[threadIdx.y][threadIdx.x] = p[threadIdx.x]; __syncthreads(); p[threadIdx.y] = tile[threadIdx.x][threadIdx.y]; }
