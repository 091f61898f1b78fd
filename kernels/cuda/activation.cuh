// activation.cuh: the transcendental functions of the epilogues (GELU and
// its gradient, sigmoid, tanh, exp, ReLU), each a fixed sequence of f32
// operations that gemm/ref performs identically. The text below the
// pragma is docs/contract.md's CUDA block (section "Transcendentals"),
// character for character; gemm/ref's tests check that it still is.
#pragma once

// Transcribed from gemm/ref/activation.go. __uint_as_float(h) is the constant
// whose bits are h. Compile with --fmad=false (as every detgemm kernel).
#define DG_F(h) __uint_as_float(h##u)
__device__ __forceinline__ float dg_pow2(int k) { return __uint_as_float((unsigned)(k + 127) << 23); }
__device__ __forceinline__ float dg_abs(float x) { return __uint_as_float(__float_as_uint(x) & 0x7FFFFFFFu); }
__device__ __forceinline__ float dg_copysign(float x, float s) {
  return __uint_as_float((__float_as_uint(x) & 0x7FFFFFFFu) | (__float_as_uint(s) & 0x80000000u));
}

// e^(y+yl) = 2^k·(1+q): k = rint(y·log2 e) by the 1.5·2^23 shifter,
// r = y − k·ln2 (hi part exact) + yl, q = expm1(r) = r + r²·P(r) (Taylor, 1/9! .. 1/2).
__device__ __forceinline__ float dg_exp_reduce(float y, float yl, int *k) {
  float t  = __fmul_rn(y, DG_F(0x3FB8AA3B));
  float j  = __fadd_rn(t, DG_F(0x4B400000));
  float kf = __fsub_rn(j, DG_F(0x4B400000));
  *k = (int)__float_as_uint(j) - 0x4B400000;
  float r = __fmaf_rn(-kf, DG_F(0x3F317200), y);
  r = __fmaf_rn(-kf, DG_F(0x35BFBE8E), r);
  r = __fadd_rn(r, yl);
  float s = __fmul_rn(r, r);
  float p = DG_F(0x3638EF1D);
  p = __fmaf_rn(p, r, DG_F(0x37D00D01));
  p = __fmaf_rn(p, r, DG_F(0x39500D01));
  p = __fmaf_rn(p, r, DG_F(0x3AB60B61));
  p = __fmaf_rn(p, r, DG_F(0x3C088889));
  p = __fmaf_rn(p, r, DG_F(0x3D2AAAAB));
  p = __fmaf_rn(p, r, DG_F(0x3E2AAAAB));
  p = __fmaf_rn(p, r, DG_F(0x3F000000));
  return __fmaf_rn(s, p, r);
}
// (1+q)·2^k in two exact power-of-two steps: one rounding, also into subnormals or Inf.
__device__ __forceinline__ float dg_exp_scale(float q, int k) {
  float e = __fadd_rn(1.0f, q);
  int k1 = k >> 1;                       // arithmetic shift: floor(k/2)
  return __fmul_rn(__fmul_rn(e, dg_pow2(k1)), dg_pow2(k - k1));
}
__device__ __forceinline__ float dg_exp(float x) {
  if (x != x) return DG_F(0x7FFFFFFF);
  if (x >= 89.0f) return DG_F(0x7F800000);
  if (x < -104.0f) return 0.0f;
  int k; float q = dg_exp_reduce(x, 0.0f, &k);
  return dg_exp_scale(q, k);
}
__device__ __forceinline__ float dg_tanh(float x) {
  if (x != x) return DG_F(0x7FFFFFFF);
  float a = dg_abs(x), t;
  if (a >= DG_F(0x41108000)) {           // 9.03125: tanh rounds to 1 from here
    t = 1.0f;
  } else if (a < DG_F(0x3F0CCCCD)) {     // 0.55: em/(em+2), em = expm1(2a); k <= 2
    int k; float q = dg_exp_reduce(__fadd_rn(a, a), 0.0f, &k);
    float p = dg_pow2(k);
    float em = __fadd_rn(__fmul_rn(q, p), __fsub_rn(p, 1.0f));
    t = __fdiv_rn(em, __fadd_rn(em, 2.0f));
  } else {                               // 1 − 2/(e^(2a)+1)
    int k; float q = dg_exp_reduce(__fadd_rn(a, a), 0.0f, &k);
    float e = __fmul_rn(__fadd_rn(1.0f, q), dg_pow2(k));
    t = __fsub_rn(1.0f, __fdiv_rn(2.0f, __fadd_rn(e, 1.0f)));
  }
  return dg_copysign(t, x);
}
// σ(|z+zl|) and σ(−|z+zl|) from one e = e^(−|z+zl|).
__device__ __forceinline__ void dg_sigmoid_parts(float z, float zl, float *pos, float *neg) {
  float y = z, yl = zl;
  if (z >= 0.0f) { y = -z; yl = -zl; }
  float e = 0.0f;
  if (y >= -104.0f) { int k; float q = dg_exp_reduce(y, yl, &k); e = dg_exp_scale(q, k); }
  float d = __fadd_rn(1.0f, e);
  *pos = __fdiv_rn(1.0f, d);
  *neg = __fdiv_rn(e, d);
}
// σ(z+zl) as dg_sigmoid_parts gives it (pos for z >= 0, else neg), with that one division only.
__device__ __forceinline__ float dg_sigmoid_one(float z, float zl) {
  float y = z, yl = zl;
  if (z >= 0.0f) { y = -z; yl = -zl; }
  float e = 0.0f;
  if (y >= -104.0f) { int k; float q = dg_exp_reduce(y, yl, &k); e = dg_exp_scale(q, k); }
  float d = __fadd_rn(1.0f, e);
  return __fdiv_rn(z >= 0.0f ? 1.0f : e, d);   // one division for every lane, no divergence
}
__device__ __forceinline__ float dg_sigmoid(float x) {
  if (x != x) return DG_F(0x7FFFFFFF);
  return dg_sigmoid_one(x, 0.0f);
}
// z + zl = x·(K0 + K1·x²) to about twice binary32's precision; |x| < 16.
__device__ __forceinline__ float dg_gelu_arg(float x, float *x2o, float *zlo) {
  const float k0 = DG_F(0x3FCC422A), k0l = DG_F(0xB342BC9B);
  const float k1 = DG_F(0x3D922279), k1l = DG_F(0x3124D8B5);
  float x2  = __fmul_rn(x, x);
  float x2l = __fmaf_rn(x, x, -x2);
  float p   = __fmul_rn(k1, x2);
  float pl  = __fmaf_rn(k1, x2, -p);
  float w   = __fadd_rn(k0, p);
  float t   = __fsub_rn(w, k0);
  float wl  = __fadd_rn(__fsub_rn(k0, __fsub_rn(w, t)), __fsub_rn(p, t));
  wl = __fadd_rn(wl, __fadd_rn(pl, __fmaf_rn(k1, x2l, __fmaf_rn(k1l, x2, k0l))));
  float z  = __fmul_rn(x, w);
  float zl = __fmaf_rn(x, w, -z);
  zl = __fmaf_rn(x, wl, zl);
  *x2o = x2; *zlo = zl;
  return z;
}
__device__ __forceinline__ float dg_gelu(float x) {
  if (x != x) return DG_F(0x7FFFFFFF);
  if (dg_abs(x) >= DG_F(0x41800000)) return x > 0.0f ? x : DG_F(0x80000000);  // |x| >= 16: x or −0
  float x2, zl, z = dg_gelu_arg(x, &x2, &zl);
  return __fmul_rn(x, dg_sigmoid_one(z, zl));
}
__device__ __forceinline__ float dg_gelu_grad(float x) {
  if (x != x) return DG_F(0x7FFFFFFF);
  if (dg_abs(x) >= DG_F(0x41800000)) return x > 0.0f ? 1.0f : DG_F(0x80000000);  // 1 or −0
  float x2, zl, z = dg_gelu_arg(x, &x2, &zl);
  float zp = __fmaf_rn(DG_F(0x3E5B33B6), x2, DG_F(0x3FCC422A));   // K0 + 3·K1·x²
  float pos, neg; dg_sigmoid_parts(z, zl, &pos, &neg);
  float s = pos, sm = neg;
  if (z < 0.0f) { s = neg; sm = pos; }
  return __fmul_rn(s, __fmaf_rn(__fmul_rn(x, sm), zp, 1.0f));   // σ(z)·(1 + x·σ(−z)·z')
}
__device__ __forceinline__ float dg_relu(float x) {
  return x > 0.0f ? x : (x != x ? DG_F(0x7FFFFFFF) : 0.0f);
}
// SiLU x·σ(x) and its derivative σ(x)·(1 + x·σ(−x)), σ(x) and σ(−x) from one exponential.
__device__ __forceinline__ float dg_silu(float x) {
  if (x != x) return DG_F(0x7FFFFFFF);
  if (x == DG_F(0xFF800000)) return DG_F(0x80000000);             // −Inf: −0
  return __fmul_rn(x, dg_sigmoid_one(x, 0.0f));
}
__device__ __forceinline__ float dg_silu_grad(float x) {
  if (x != x) return DG_F(0x7FFFFFFF);
  if (x == DG_F(0x7F800000)) return 1.0f;                         // +Inf: 1
  if (x == DG_F(0xFF800000)) return DG_F(0x80000000);             // −Inf: −0
  float pos, neg; dg_sigmoid_parts(x, 0.0f, &pos, &neg);
  float s = pos, sm = neg;
  if (x < 0.0f) { s = neg; sm = pos; }
  return __fmul_rn(s, __fmaf_rn(x, sm, 1.0f));
}
// Gated activations, y = a·act(b): g = 1 GLU (σ), 2 ReGLU (relu), 3 SwiGLU (silu),
// 4 GeGLU (gelu), gemm/ref's Gate codes; any other g is the identity (never reached).
__device__ __forceinline__ float dg_gate_act(int g, float b) {
  switch (g) {
  case 1: return dg_sigmoid(b);
  case 2: return dg_relu(b);
  case 3: return dg_silu(b);
  case 4: return dg_gelu(b);
  }
  return b;
}
// act′(b): GLU σ(b)·σ(−b); ReGLU 1 for b > 0, NaN for NaN, else +0; SwiGLU silu′; GeGLU gelu′.
__device__ __forceinline__ float dg_gate_grad(int g, float b) {
  switch (g) {
  case 1: {
    if (b != b) return DG_F(0x7FFFFFFF);
    float pos, neg; dg_sigmoid_parts(b, 0.0f, &pos, &neg);
    float s = pos, sm = neg;
    if (b < 0.0f) { s = neg; sm = pos; }
    return __fmul_rn(s, sm);
  }
  case 2: return b > 0.0f ? 1.0f : (b != b ? DG_F(0x7FFFFFFF) : 0.0f);
  case 3: return dg_silu_grad(b);
  case 4: return dg_gelu_grad(b);
  }
  return 1.0f;
}
// dg_gate_act and dg_gate_grad together, bit for bit, from one exponential (GeGLU: one dg_gelu_arg).
__device__ __forceinline__ void dg_gate_act_grad(int g, float b, float *act, float *grad) {
  switch (g) {
  case 1: {
    if (b != b) { *act = DG_F(0x7FFFFFFF); *grad = DG_F(0x7FFFFFFF); return; }
    float pos, neg; dg_sigmoid_parts(b, 0.0f, &pos, &neg);
    float s = pos, sm = neg;
    if (b < 0.0f) { s = neg; sm = pos; }
    *act = s; *grad = __fmul_rn(s, sm);
    return;
  }
  case 2: *act = dg_relu(b); *grad = dg_gate_grad(2, b); return;
  case 3: {
    if (b != b) { *act = DG_F(0x7FFFFFFF); *grad = DG_F(0x7FFFFFFF); return; }
    if (b == DG_F(0x7F800000)) { *act = b; *grad = 1.0f; return; }
    if (b == DG_F(0xFF800000)) { *act = DG_F(0x80000000); *grad = DG_F(0x80000000); return; }
    float pos, neg; dg_sigmoid_parts(b, 0.0f, &pos, &neg);
    float s = pos, sm = neg;
    if (b < 0.0f) { s = neg; sm = pos; }
    *act = __fmul_rn(b, s); *grad = __fmul_rn(s, __fmaf_rn(b, sm, 1.0f));
    return;
  }
  case 4: {
    if (b != b) { *act = DG_F(0x7FFFFFFF); *grad = DG_F(0x7FFFFFFF); return; }
    if (dg_abs(b) >= DG_F(0x41800000)) {
      *act = b > 0.0f ? b : DG_F(0x80000000); *grad = b > 0.0f ? 1.0f : DG_F(0x80000000);
      return;
    }
    float x2, zl, z = dg_gelu_arg(b, &x2, &zl);
    float zp = __fmaf_rn(DG_F(0x3E5B33B6), x2, DG_F(0x3FCC422A));
    float pos, neg; dg_sigmoid_parts(z, zl, &pos, &neg);
    float s = pos, sm = neg;
    if (z < 0.0f) { s = neg; sm = pos; }
    *act = __fmul_rn(b, s); *grad = __fmul_rn(s, __fmaf_rn(__fmul_rn(b, sm), zp, 1.0f));
    return;
  }
  }
  *act = b; *grad = 1.0f;
}
