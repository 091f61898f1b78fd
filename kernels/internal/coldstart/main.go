// Command coldstart measures how long a fresh process takes to get a
// working gemm.Engine: driver, context, the first gemm.New, a second
// gemm.New on the same context, and a Close. Each run is a new process
// (this binary started again) with an empty cache directory, so nothing
// is warm but the operating system's file cache.
//
//	go build -o coldstart ./kernels/internal/coldstart
//	./coldstart                        # embedded set, NVRTC unreachable, 5 runs
//	./coldstart -scenario nvrtc        # NVRTC fallback (embedded set disabled), empty cache
//	./coldstart -scenario warm         # NVRTC fallback from a filled cache
//	./coldstart -runs 5 -json          # one JSON object per scenario
//
// It prints the median of each step over the runs, in milliseconds.
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"time"

	"github.com/detgemm/detgemm/cudaload"
	"github.com/detgemm/detgemm/gemm"
	"github.com/detgemm/detgemm/kernels"
	"github.com/detgemm/detgemm/nvrtc"
)

const envChild = "DETGEMM_COLDSTART_CHILD"

// sample is one child's timings, in milliseconds.
type sample struct {
	DriverMS  float64 `json:"driver_ms"`  // cudaload.Open
	ContextMS float64 `json:"context_ms"` // device 0's primary context, first call done
	NewMS     float64 `json:"new_ms"`     // the first gemm.New
	BuildMS   float64 `json:"build_ms"`   // of which getting the CUBINs
	LoadMS    float64 `json:"load_ms"`    // of which loading them
	SecondMS  float64 `json:"second_ms"`  // a second gemm.New on the same context
	CloseMS   float64 `json:"close_ms"`   // closing both
	TotalMS   float64 `json:"total_ms"`   // driver + context + first New
	Report    string  `json:"report"`
}

// summary is the medians of a scenario.
type summary struct {
	Scenario string   `json:"scenario"`
	Runs     int      `json:"runs"`
	Median   sample   `json:"median"`
	Samples  []sample `json:"samples"`
}

func main() {
	if os.Getenv(envChild) != "" {
		s, err := child()
		if err != nil {
			fmt.Fprintln(os.Stderr, "coldstart child:", err)
			os.Exit(1)
		}
		_ = json.NewEncoder(os.Stdout).Encode(s)
		return
	}
	runs := flag.Int("runs", 5, "fresh processes per scenario")
	scenario := flag.String("scenario", "embedded", "embedded (NVRTC unreachable), nvrtc (embedded set off, empty cache), warm (embedded set off, filled cache), or all")
	asJSON := flag.Bool("json", false, "print JSON instead of a table")
	flag.Parse()
	names := []string{*scenario}
	if *scenario == "all" {
		names = []string{"embedded", "nvrtc", "warm"}
	}
	for _, name := range names {
		s, err := measure(name, *runs)
		if err != nil {
			fmt.Fprintln(os.Stderr, "coldstart:", err)
			os.Exit(1)
		}
		if *asJSON {
			_ = json.NewEncoder(os.Stdout).Encode(s)
			continue
		}
		m := s.Median
		fmt.Printf("%-8s median of %d: total %.1f ms (driver %.1f, context %.1f, New %.1f = build %.1f + load %.1f); second New %.2f ms; close %.1f ms\n",
			name, s.Runs, m.TotalMS, m.DriverMS, m.ContextMS, m.NewMS, m.BuildMS, m.LoadMS, m.SecondMS, m.CloseMS)
		fmt.Printf("         %s\n", s.Samples[0].Report)
	}
}

func measure(scenario string, runs int) (*summary, error) {
	env := []string{envChild + "=1"}
	switch scenario {
	case "embedded":
		env = append(env, nvrtc.EnvLibrary+"=/nonexistent/libnvrtc.so", kernels.EnvKernels+"=embedded")
	case "nvrtc", "warm":
		env = append(env, kernels.EnvKernels+"=nvrtc")
	default:
		return nil, fmt.Errorf("unknown scenario %q", scenario)
	}
	warmDir := ""
	if scenario == "warm" {
		d, err := os.MkdirTemp("", "detgemm-coldstart-")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(d)
		warmDir = d
		if _, err := runChild(append(env, kernels.EnvCacheDir+"="+d)); err != nil { // fill it
			return nil, err
		}
	}
	s := &summary{Scenario: scenario, Runs: runs}
	for range runs {
		dir := warmDir
		if dir == "" {
			d, err := os.MkdirTemp("", "detgemm-coldstart-")
			if err != nil {
				return nil, err
			}
			dir = d
		}
		smp, err := runChild(append(env, kernels.EnvCacheDir+"="+dir))
		if dir != warmDir {
			os.RemoveAll(dir)
		}
		if err != nil {
			return nil, err
		}
		s.Samples = append(s.Samples, *smp)
	}
	med := func(f func(sample) float64) float64 {
		v := make([]float64, len(s.Samples))
		for i, x := range s.Samples {
			v[i] = f(x)
		}
		slices.Sort(v)
		return v[len(v)/2]
	}
	s.Median = sample{
		DriverMS: med(func(x sample) float64 { return x.DriverMS }), ContextMS: med(func(x sample) float64 { return x.ContextMS }),
		NewMS: med(func(x sample) float64 { return x.NewMS }), BuildMS: med(func(x sample) float64 { return x.BuildMS }),
		LoadMS: med(func(x sample) float64 { return x.LoadMS }), SecondMS: med(func(x sample) float64 { return x.SecondMS }),
		CloseMS: med(func(x sample) float64 { return x.CloseMS }), TotalMS: med(func(x sample) float64 { return x.TotalMS }),
	}
	return s, nil
}

func runChild(env []string) (*sample, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("child: %w: %s", err, strings.TrimSpace(errb.String()))
	}
	var s sample
	if err := json.Unmarshal(out.Bytes(), &s); err != nil {
		return nil, fmt.Errorf("child output %q: %w", out.String(), err)
	}
	return &s, nil
}

func child() (*sample, error) {
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	t0 := time.Now()
	drv, err := cudaload.Open()
	if err != nil {
		return nil, err
	}
	t1 := time.Now()
	dev, err := drv.Device(0)
	if err != nil {
		return nil, err
	}
	ctx, err := dev.PrimaryContext()
	if err != nil {
		return nil, err
	}
	defer ctx.Close()
	if err := ctx.Synchronize(); err != nil {
		return nil, err
	}
	t2 := time.Now()
	eng, err := gemm.New(ctx)
	if err != nil {
		return nil, err
	}
	t3 := time.Now()
	eng2, err := gemm.New(ctx)
	if err != nil {
		return nil, err
	}
	t4 := time.Now()
	if err := eng2.Close(); err != nil {
		return nil, err
	}
	if err := eng.Close(); err != nil {
		return nil, err
	}
	t5 := time.Now()
	rep := eng.BuildReport()
	return &sample{
		DriverMS: ms(t1.Sub(t0)), ContextMS: ms(t2.Sub(t1)), NewMS: ms(t3.Sub(t2)),
		BuildMS: ms(rep.BuildTime), LoadMS: ms(rep.LoadTime), SecondMS: ms(t4.Sub(t3)), CloseMS: ms(t5.Sub(t4)),
		TotalMS: ms(t3.Sub(t0)), Report: rep.String(),
	}, nil
}
