package main

import (
	"errors"
	"fmt"
	"io"
	"runtime"
	"slices"
	"time"

	"github.com/detgemm/detgemm/cudaload"
	"github.com/detgemm/detgemm/kernels"
)

// run measures everything cfg asks for and prints the report to stdout,
// progress to stderr. Errors before the first row (no driver, no device,
// no cuBLAS) end the run; a row that fails is recorded and the sweep goes
// on.
func run(cfg *config, stdout, stderr io.Writer) error {
	shapes, source, err := loadShapesOrSet(cfg.shapes, cfg.shapesFile, cfg.shapesSet)
	if err != nil {
		return err
	}

	// cuBLAS works in the context current on the calling OS thread, so the
	// whole run stays on one thread with the bench's context bound to it.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()

	drv, err := cudaload.Open()
	if err != nil {
		return err
	}
	count, err := drv.DeviceCount()
	if err != nil {
		return err
	}
	if cfg.device >= count {
		return fmt.Errorf("--device %d: the driver sees %d device(s)", cfg.device, count)
	}
	dev, err := drv.Device(cfg.device)
	if err != nil {
		return err
	}
	ctx, err := dev.PrimaryContext()
	if err != nil {
		return err
	}
	defer ctx.Close()
	if err := bindThread(ctx); err != nil {
		return err
	}
	stream, err := ctx.NewStream()
	if err != nil {
		return err
	}
	defer stream.Close()

	cb, err := newCublasBackend(stream)
	if err != nil {
		return err
	}
	backends := []backend{cb}
	// Deferred now, so a backend that fails to start does not leak the
	// ones before it; the closure sees the later appends.
	defer func() {
		for _, b := range backends {
			_ = b.Close()
		}
	}()
	var ltInfo *libraryInfo
	budget := int64(dev.TotalMemory() / 4)
	if wantsLt(cfg.modes) {
		lb, err := newLtBackend(ctx, stream)
		if err != nil {
			return err
		}
		backends = append(backends, lb)
		ltInfo = lb.Info()
		if wantsLtFP8(cfg.modes) {
			backends = append(backends, &ltFP8Backend{lt: lb, l2: int64(dev.L2CacheSize()), budget: budget})
		}
	}
	eb, err := newEngineBackend(ctx, stream)
	if err != nil {
		return fmt.Errorf("detgemm engine: %w", err)
	}
	copies := &copyBackend{}
	mb := &matmulBackend{eng: eb.eng, stream: stream}
	gb := &gatedBackend{eng: eb.eng}
	sb := &sparseBackend{eng: eb.eng, stream: stream, l2: int64(dev.L2CacheSize()), budget: budget}
	fb := &fp8Backend{eng: eb.eng, stream: stream, l2: sb.l2, budget: budget}
	backends = append(backends, eb, mb, gb, sb, fb)
	var spltInfo *libraryInfo
	if wantsCuSPARSELt(cfg.modes) {
		// Optional: without the library its rows say why, the run goes on.
		slb := newCusparseltBackend()
		slb.l2, slb.budget = sb.l2, budget
		backends = append(backends, slb)
		spltInfo = slb.Info()
	}
	backends = append(backends, copies)

	ccMajor, ccMinor := dev.ComputeCapability()
	rep := &report{
		Schema:    reportSchema,
		Date:      time.Now().UTC().Format(time.RFC3339),
		Command:   cfg.args,
		Commit:    sourceCommit(cfg.commit, workingDir()),
		GoVersion: runtime.Version(),
		GPU: gpuInfo{
			Name: dev.Name(), Ordinal: dev.Ordinal(), ComputeCapability: fmt.Sprintf("%d.%d", ccMajor, ccMinor),
			SMs: dev.SMCount(), L2Bytes: dev.L2CacheSize(), MemoryBytes: dev.TotalMemory(),
		},
		Driver: libraryInfo{Version: cudaload.FormatVersion(drv.Version()), Code: drv.Version(), Path: drv.Path(), Release: driverRelease(),
			Comment: "CUDA driver API version (cuDriverGetVersion)"},
		CUBLAS:     libraryInfo{Version: cb.VersionString(), Code: cb.version, Path: cb.Path()},
		CUBLASLt:   ltInfo,
		CuSPARSELt: spltInfo,
		Config: runConfig{
			Shapes: shapes, ShapesSource: source, DTypes: cfg.dtypes, Modes: cfg.modes,
			Repeats: cfg.repeats, MinTimeUS: float64(cfg.minTime.Microseconds()), Seed: cfg.seed,
			MemoryBudget: budget,
		},
	}

	prog := newProgress(stderr, cfg.quiet)
	var bundle *kernels.Bundle
	if cfg.startup {
		prog.note("building kernels for %s (cold, then a warm start in a fresh process)...", dev.Name())
		bundle, rep.Startup = measureStartup(dev, drv.Version())
	} else {
		bundle, rep.Startup = buildUntimed(dev, drv.Version())
	}
	if err := bindThread(ctx); err != nil {
		return err
	}

	im := &inputMaker{ctx: ctx, stream: stream, seed: cfg.seed}
	rep.Inputs = fmt.Sprintf("uniform [-1, 1) drawn in f32 (PCG, seed %d); bf16/f16 narrowed on the host (util kernels unavailable)", cfg.seed)
	if bundle != nil {
		if m, ok := bundle.Modules[utilFamily]; ok {
			mod, err := ctx.LoadModule(m.CUBIN)
			if err == nil {
				defer mod.Close()
				im.conv, err = newConverter(mod, dev.SMCount())
				if err == nil {
					major, _ := dev.ComputeCapability()
					err = copies.useUtil(mod, dev.SMCount(), major)
				}
			}
			if err != nil {
				rep.Inputs += ": " + oneLine(err.Error())
			}
		}
	}
	mb.im, gb.im, fb.im = im, im, im
	for _, b := range backends {
		if lb, ok := b.(*ltBackend); ok {
			lb.im = im
		}
	}
	if wantsMatmul(cfg.modes) {
		// The separate activation pass of mm-bias-then-relu; without it
		// only that mode's rows fail.
		if mod, err := mb.useTriad(ctx, bundle); err == nil {
			defer mod.Close()
		}
	}
	if im.conv != nil {
		rep.Inputs = fmt.Sprintf("uniform [-1, 1) drawn in f32 (PCG, seed %d); bf16/f16 narrowed on the device by %s / %s (RNE)",
			cfg.seed, kernToBF16, kernToF16)
	}

	t, err := newTimer(ctx, stream)
	if err != nil {
		return err
	}
	defer t.close()
	mcfg := measureConfig{Repeats: cfg.repeats, MinTime: cfg.minTime, MaxLaunches: 1 << 16}

	prog.note("measuring device-to-device copy bandwidth...")
	rep.Copy, err = measureCopy(ctx, t, copyBytes(int64(dev.L2CacheSize()), dev.TotalMemory()), mcfg)
	if err != nil {
		return err
	}
	peaks, havePeaks := lookupPeaks(dev.Name())
	if havePeaks {
		rep.Peaks = &peaks
	}

	for _, dt := range cfg.dtypes {
		for _, b := range backends {
			if len(selectModes(b, dt, cfg.modes)) > 0 {
				prog.total += len(shapes) // problems, each measured in one go
				break
			}
		}
	}
	for _, s := range shapes {
		for _, dt := range cfg.dtypes {
			rep.Rows = append(rep.Rows, measureProblem(ctx, stream, t, im, backends, s, dt, cfg.modes, mcfg, rep, peaks, prog)...)
		}
	}
	prog.finish()
	fillRatios(rep.Rows)

	// The JSON first: the figures are kept even if rendering fails.
	if cfg.jsonPath != "" {
		if err := writeJSON(cfg.jsonPath, rep); err != nil {
			return err
		}
	}
	if err := emit(cfg, rep, stdout, stderr); err != nil {
		return err
	}
	if cfg.jsonPath != "" {
		if cfg.format == formatTable {
			fmt.Fprintf(stdout, "\nfigures written to %s\n", cfg.jsonPath)
		} else if !cfg.quiet {
			fmt.Fprintf(stderr, "figures written to %s\n", cfg.jsonPath)
		}
	}
	return nil
}

// bindThread makes ctx current on the calling OS thread and keeps the
// calling goroutine on it. cudaload binds its context for each call with
// cuCtxSetCurrent and leaves it current; cuBLAS, which binds nothing
// itself, then finds it there. The lock nests with cudaload's own, so it
// holds after each call returns.
func bindThread(ctx *cudaload.Context) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread() // undo this call's lock only: run holds the outer one
	return ctx.Synchronize()
}

// selectModes is the backend's modes for dt that --modes asked for.
func selectModes(b backend, dt dtype, want []string) []string {
	var out []string
	for _, m := range b.Modes(dt) {
		if slices.Contains(want, m) {
			out = append(out, m)
		}
	}
	return out
}

// measureProblem fills the input sets for one shape and type once, readies
// every backend and mode on them, and measures them in turns (measureTurns),
// so the rows of one problem share the run's drift.
func measureProblem(ctx *cudaload.Context, stream *cudaload.Stream, t *timer, im *inputMaker, backends []backend,
	s shape, dt dtype, modes []string, mcfg measureConfig, rep *report, peaks peaks, prog *progress) []row {
	var rows []row
	sb := setBytes(s, dt)
	nsets := setsFor(sb, int64(rep.GPU.L2Bytes), rep.Config.MemoryBudget)
	if alloc := setAlloc(s, dt); rep.Config.MemoryBudget > 0 && int64(nsets)*alloc > rep.Config.MemoryBudget {
		nsets = max(1, int(rep.Config.MemoryBudget/alloc))
	}
	for _, b := range backends {
		for _, mode := range selectModes(b, dt, modes) {
			rows = append(rows, row{Shape: s, DType: dt, Backend: b.Name(), Mode: mode, Sets: nsets, SetBytes: sb})
		}
	}
	if len(rows) == 0 {
		return nil
	}
	prog.step(fmt.Sprintf("%s %s: %d rows in turns", s, dt, len(rows)))
	arena, err := im.makeSets(s, dt, nsets)
	if err != nil {
		err = fmt.Errorf("inputs (%d sets of %d bytes): %w", nsets, setAlloc(s, dt), err)
		for i := range rows {
			rows[i].Error = oneLine(err.Error())
		}
		return rows
	}
	defer im.free(arena)

	// Ready every row; a row whose backend cannot take the problem keeps
	// its error and stays out of the turns.
	runners := make([]runner, len(rows))
	var launches []func() error
	var timed []int // row index of each launch function
	i := 0
	for _, b := range backends {
		for _, mode := range selectModes(b, dt, modes) {
			r, err := b.Prepare(ctx, stream, problem{Shape: s, DType: dt, Mode: mode}, arena.sets)
			if err != nil {
				rows[i].Error = oneLine(err.Error())
			} else {
				runners[i] = r
				if rot, ok := r.(rotator); ok {
					// The row rotates over copies of its own.
					rows[i].Sets, rows[i].SetBytes = rot.rotation()
				}
				next := 0
				// Launches cycle through the sets across measurements, so
				// each launch uses the set least recently touched.
				launches = append(launches, func() error {
					k := next
					next = (next + 1) % len(arena.sets)
					return r.Launch(k)
				})
				timed = append(timed, i)
			}
			i++
		}
	}
	ms, errs := measureTurns(t, launches, 1, mcfg)
	for j, ri := range timed {
		row := &rows[ri]
		err := errors.Join(errs[j], runners[ri].Close())
		if err != nil {
			row.Error = oneLine(err.Error())
			continue
		}
		m := ms[j]
		row.MedianUS, row.MinUS, row.MaxUS = m.Stats.Median, m.Stats.Min, m.Stats.Max
		row.SamplesUS, row.Launches = m.SamplesUS, m.Launches
		peak, name := peaks.peakFor(dt, row.Mode)
		if peak > 0 {
			row.PeakName, row.PeakTFLOPS = name, peak
		}
		row.TFLOPS = tflops(s, row.MedianUS)
		row.Roofline = rooflineOf(s, dt, row.MedianUS, rep.Copy.BytesPerSec, peak, name)
		fillBandwidth(row, rep.Copy.BytesPerSec)
		fillSparse(row, rep.Copy.BytesPerSec)
		fillFP8(row, rep.Copy.BytesPerSec)
	}
	return rows
}
