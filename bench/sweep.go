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
	shapes, source, err := loadShapes(cfg.shapes, cfg.shapesFile)
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
	backends := []Backend{cb}
	eb, err := newEngineBackend(ctx, stream)
	if err != nil {
		return fmt.Errorf("detgemm engine: %w", err)
	}
	backends = append(backends, eb)
	defer func() {
		for _, b := range backends {
			_ = b.Close()
		}
	}()

	ccMajor, ccMinor := dev.ComputeCapability()
	rep := &Report{
		Schema: reportSchema,
		Date:   time.Now().UTC().Format(time.RFC3339),
		GPU: GPUInfo{
			Name: dev.Name(), Ordinal: dev.Ordinal(), ComputeCapability: fmt.Sprintf("%d.%d", ccMajor, ccMinor),
			SMs: dev.SMCount(), L2Bytes: dev.L2CacheSize(), MemoryBytes: dev.TotalMemory(),
		},
		Driver: LibraryInfo{Version: cudaload.FormatVersion(drv.Version()), Code: drv.Version(), Path: drv.Path(), Release: driverRelease(),
			Comment: "CUDA driver API version (cuDriverGetVersion)"},
		CUBLAS: LibraryInfo{Version: cb.VersionString(), Code: cb.version, Path: cb.Path()},
		Config: RunConfig{
			Shapes: shapes, ShapesSource: source, DTypes: cfg.dtypes, Modes: cfg.modes,
			Repeats: cfg.repeats, MinTimeUS: float64(cfg.minTime.Microseconds()), Seed: cfg.seed,
			MemoryBudget: int64(dev.TotalMemory() / 4),
		},
	}

	var bundle *kernels.Bundle
	if cfg.startup {
		fmt.Fprintf(stderr, "building kernels for %s (cold, then a warm start in a fresh process)...\n", dev.Name())
		bundle, rep.Startup = measureStartup(dev)
	} else {
		bundle, rep.Startup = buildUntimed(dev)
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
			}
			if err != nil {
				rep.Inputs += ": " + oneLine(err.Error())
			}
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

	fmt.Fprintln(stderr, "measuring device-to-device copy bandwidth...")
	rep.Copy, err = measureCopy(ctx, t, copyBytes(int64(dev.L2CacheSize()), dev.TotalMemory()), mcfg)
	if err != nil {
		return err
	}
	peaks, havePeaks := lookupPeaks(dev.Name())
	if havePeaks {
		rep.Peaks = &peaks
	}

	prog := &progress{w: stderr}
	for _, b := range backends {
		for _, dt := range cfg.dtypes {
			prog.total += len(shapes) * len(selectModes(b, dt, cfg.modes))
		}
	}
	for _, s := range shapes {
		for _, dt := range cfg.dtypes {
			rep.Rows = append(rep.Rows, measureProblem(ctx, stream, t, im, backends, s, dt, cfg.modes, mcfg, rep, peaks, prog)...)
		}
	}
	prog.finish()
	fillRatios(rep.Rows)

	printReport(stdout, rep)
	if cfg.jsonPath != "" {
		if err := writeJSON(cfg.jsonPath, rep); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "\nfigures written to %s\n", cfg.jsonPath)
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
func selectModes(b Backend, dt DType, want []string) []string {
	var out []string
	for _, m := range b.Modes(dt) {
		if slices.Contains(want, m) {
			out = append(out, m)
		}
	}
	return out
}

// measureProblem fills the input sets for one shape and type once and
// measures every backend and mode on them.
func measureProblem(ctx *cudaload.Context, stream *cudaload.Stream, t *timer, im *inputMaker, backends []Backend,
	s Shape, dt DType, modes []string, mcfg measureConfig, rep *Report, peaks Peaks, prog *progress) []Row {
	var rows []Row
	sb := setBytes(s, dt)
	nsets := setsFor(sb, int64(rep.GPU.L2Bytes), rep.Config.MemoryBudget)
	var arena *inputArena
	var setErr error
	for _, b := range backends {
		for _, mode := range selectModes(b, dt, modes) {
			prog.step(fmt.Sprintf("%s %s %s %s", s, dt, b.Name(), mode))
			row := Row{Shape: s, DType: dt, Backend: b.Name(), Mode: mode, Sets: nsets, SetBytes: sb}
			if arena == nil && setErr == nil {
				arena, setErr = im.makeSets(s, dt, nsets)
				if setErr != nil {
					setErr = fmt.Errorf("inputs (%d sets of %d bytes): %w", nsets, sb, setErr)
				}
			}
			err := setErr
			if err == nil {
				err = measureRow(ctx, stream, t, b, Problem{Shape: s, DType: dt, Mode: mode}, arena.sets, mcfg, &row)
			}
			if err != nil {
				row.Error = oneLine(err.Error())
			} else {
				peak, name := peaks.peakFor(dt, mode)
				if peak > 0 {
					row.PeakName, row.PeakTFLOPS = name, peak
				}
				row.TFLOPS = tflops(s, row.MedianUS)
				row.Roofline = roofline(s, dt, row.MedianUS, rep.Copy.BytesPerSec, peak, name)
			}
			rows = append(rows, row)
		}
	}
	im.free(arena)
	return rows
}

// measureRow times one backend on one problem.
func measureRow(ctx *cudaload.Context, stream *cudaload.Stream, t *timer, b Backend, p Problem, sets []InputSet, mcfg measureConfig, row *Row) error {
	r, err := b.Prepare(ctx, stream, p, sets)
	if err != nil {
		return err
	}
	next := 0
	// Launches cycle through the sets across measurements, so each launch
	// uses the set least recently touched, however R and the set count
	// compare.
	m, err := measure(t, func() error {
		i := next
		next = (next + 1) % len(sets)
		return r.Launch(i)
	}, 1, mcfg)
	err = errors.Join(err, r.Close())
	if err != nil {
		return err
	}
	row.MedianUS, row.MinUS, row.MaxUS = m.Stats.Median, m.Stats.Min, m.Stats.Max
	row.SamplesUS, row.Launches = m.SamplesUS, m.Launches
	return nil
}
