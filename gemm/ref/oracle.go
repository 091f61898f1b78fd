package ref

import "math"

// The float64 oracle: the same three operations summed in float64, in plain
// ascending order. It is not bit-compatible with anything; it measures how
// far the f32 plan is from the exact result. Each product of two float32
// values is exact in float64, so a compiler that fuses the multiply into the
// addition computes the same sums and the oracle means the same everywhere.

// ForwardF64 computes dst[M,N] = X[M,K] @ W[K,N] (+ bias[N]) in float64. A
// bias of length 0 means no bias.
func ForwardF64(dst []float64, x, w, bias []float32, M, K, N int) error {
	const op = "ForwardF64"
	if err := checkForward(op, len(dst), len(x), len(w), len(bias), M, K, N); err != nil {
		return err
	}
	for m := range M {
		row := dst[m*N : m*N+N]
		clear(row)
		for k, xv := range x[m*K : m*K+K] {
			xf := float64(xv)
			for n, wv := range w[k*N : k*N+N] {
				row[n] += xf * float64(wv)
			}
		}
		if len(bias) != 0 {
			for n := range row {
				row[n] += float64(bias[n])
			}
		}
	}
	return nil
}

// DXF64 computes dst[M,K] = dY[M,N] @ W[K,N]ᵀ in float64.
func DXF64(dst []float64, dy, w []float32, M, N, K int) error {
	const op = "DXF64"
	if err := checkDX(op, len(dst), len(dy), len(w), M, N, K); err != nil {
		return err
	}
	for m := range M {
		dyRow := dy[m*N : m*N+N]
		for k := range K {
			var s float64
			for n, wv := range w[k*N : k*N+N] {
				s += float64(dyRow[n]) * float64(wv)
			}
			dst[m*K+k] = s
		}
	}
	return nil
}

// DWF64 accumulates dw[K,N] += X[M,K]ᵀ @ dY[M,N] in float64.
func DWF64(dw []float64, x, dy []float32, M, K, N int) error {
	const op = "DWF64"
	if err := checkDW(op, len(dw), len(x), len(dy), M, K, N); err != nil {
		return err
	}
	for m := range M {
		dyRow := dy[m*N : m*N+N]
		for k, xv := range x[m*K : m*K+K] {
			xf := float64(xv)
			row := dw[k*N : k*N+N]
			for n, d := range dyRow {
				row[n] += xf * float64(d)
			}
		}
	}
	return nil
}

// RelError returns ‖got − want‖₂ / ‖want‖₂ over the elements of want, for
// comparing a float32 result with the oracle. It never lets a broken result
// pass a bound: a length mismatch, any NaN or infinity in got or want, or a
// nonzero got against an all-zero want gives +Inf (and an all-zero got
// against an all-zero want gives 0).
func RelError(got []float32, want []float64) float64 {
	if len(got) != len(want) {
		return math.Inf(1)
	}
	var num, den float64
	for i, w := range want {
		g := float64(got[i])
		if math.IsNaN(g) || math.IsInf(g, 0) || math.IsNaN(w) || math.IsInf(w, 0) {
			return math.Inf(1)
		}
		d := g - w
		num += d * d
		den += w * w
	}
	switch {
	case num == 0:
		return 0
	case den == 0:
		return math.Inf(1)
	}
	return math.Sqrt(num) / math.Sqrt(den)
}

// checkForward, checkDX and checkDW check the oracle's shapes and lengths.
func checkForward(op string, ldst, lx, lw, lbias, M, K, N int) error {
	if err := checkDims(op, "MKN", M, K, N); err != nil {
		return err
	}
	if err := checkLens(op, "x", lx, M*K, "M*K", "w", lw, K*N, "K*N"); err != nil {
		return err
	}
	if lbias != 0 {
		if err := checkLen(op, "bias", lbias, N, "N"); err != nil {
			return err
		}
	}
	return checkLen(op, "dst", ldst, M*N, "M*N")
}

func checkDX(op string, ldst, ldy, lw, M, N, K int) error {
	if err := checkDims(op, "MNK", M, N, K); err != nil {
		return err
	}
	if err := checkLens(op, "dy", ldy, M*N, "M*N", "w", lw, K*N, "K*N"); err != nil {
		return err
	}
	return checkLen(op, "dst", ldst, M*K, "M*K")
}

func checkDW(op string, ldw, lx, ldy, M, K, N int) error {
	if err := checkDims(op, "MKN", M, K, N); err != nil {
		return err
	}
	if err := checkLens(op, "x", lx, M*K, "M*K", "dy", ldy, M*N, "M*N"); err != nil {
		return err
	}
	return checkLen(op, "dw", ldw, K*N, "K*N")
}
