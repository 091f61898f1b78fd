package triad

import "math"

// BatchInvariance runs the network on x [rows, in] in one batch, then on
// each of its first n rows alone (a batch of one), and counts the rows
// whose outputs differ in any bit. The engine's contract says none do.
func BatchInvariance(m *MLP, x *Tensor, n int) (compared, differing int, err error) {
	if err := m.checkBatch("BatchInvariance", x, nil); err != nil {
		return 0, 0, err
	}
	n = min(n, x.rows)
	y, err := m.Forward(x)
	if err != nil {
		return 0, 0, err
	}
	whole, whole16, err := m.be.readRaw(y)
	if err != nil {
		return 0, 0, err
	}
	cols := y.cols
	for r := range n {
		xr, _ := x.View(r, 1)
		yr, err := m.Forward(xr)
		if err != nil {
			return compared, differing, err
		}
		f, u, err := m.be.readRaw(yr)
		if err != nil {
			return compared, differing, err
		}
		same := true
		for j := range cols {
			if f != nil && math.Float32bits(f[j]) != math.Float32bits(whole[r*cols+j]) ||
				u != nil && u[j] != whole16[r*cols+j] {
				same = false
			}
		}
		compared++
		if !same {
			differing++
		}
	}
	return compared, differing, nil
}

// GraphReplay trains two fresh copies of the network described by cfg from
// the same seed for steps steps on batch 0: one calling Step, one replaying
// a CUDA graph of the step captured once. It returns both parameter
// digests; the contract says they are equal. A backend without graphs
// returns ErrNoGraphs.
func GraphReplay(be Backend, cfg TrainConfig, steps int) (direct, replay string, err error) {
	one := cfg
	one.Steps = 1
	a, err := NewRun(be, one)
	if err != nil {
		return "", "", err
	}
	defer a.Close()
	b, err := NewRun(be, one)
	if err != nil {
		return "", "", err
	}
	defer b.Close()

	xb, tb := b.Batch(0)
	g, err := b.Model.CaptureStep(xb, tb)
	if err != nil {
		return "", "", err
	}
	defer g.Close()
	xa, ta := a.Batch(0)
	for range steps {
		if err := a.Model.Step(xa, ta); err != nil {
			return "", "", err
		}
		if err := g.Replay(); err != nil {
			return "", "", err
		}
	}
	if direct, err = a.Model.Digest(); err != nil {
		return "", "", err
	}
	replay, err = b.Model.Digest()
	return direct, replay, err
}
