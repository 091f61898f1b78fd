package kernels

import (
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// Resource is ptxas's report for one kernel (entry function), or for a
// device function that ptxas compiled separately (not inlined), which it
// reports with its own stack frame and spills.
type Resource struct {
	Kernel      string // the entry's name, or the device function's (mangled) name
	Device      bool   // a non-inlined device function: only the stack and spill fields apply
	Registers   int    // per thread
	StackBytes  int    // the kernel's stack frame, or the cumulative stack size when larger
	SpillStores int    // bytes
	SpillLoads  int    // bytes
	SharedBytes int    // static shared memory
	ConstBytes  int    // constant banks, summed (cmem[0] holds the parameters)
}

// The ptxas -v lines ParseResources reads, as NVRTC 12 writes them:
//
//	ptxas info    : Compiling entry function 'k' for 'sm_90a'
//	ptxas info    : Function properties for k
//	ptxas         .     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
//	ptxas info    : Used 12 registers, 1024 bytes smem, 360 bytes cmem[0]
//
// The "Used" line's items vary with the architecture and the kernel (cmem
// is absent for sm_90, "N bytes cumulative stack size" appears when there
// is a stack, older releases add "N bytes lmem", newer "used N barriers"),
// so the line is read as a list of "N unit" items rather than matched as a
// whole.
var (
	reEntry      = regexp.MustCompile(`Compiling entry function '([^']+)'`)
	reProperties = regexp.MustCompile(`Function properties for (\S+)`)
	reFrame      = regexp.MustCompile(`(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads`)
	reUsed       = regexp.MustCompile(`Used (\d+) registers`)
	reUsedItem   = regexp.MustCompile(`(\d+) bytes (smem|lmem|cumulative stack size|cmem\[\d+\])`)
)

// ParseResources reads the ptxas resource report (--ptxas-options=-v) in an
// NVRTC log and returns one Resource per kernel, plus one per non-inlined
// device function (Device set: its spills are not in any kernel's line, so
// a check for "no spills" must look at those too), sorted by name. Lines it
// does not recognise (warnings, gmem totals, timing) are ignored; a kernel
// whose "Used" line is missing keeps zeros.
func ParseResources(log string) []Resource {
	byName := map[string]*Resource{}
	var order []string
	entry := func(name string) *Resource {
		r, ok := byName[name]
		if !ok {
			r = &Resource{Kernel: name}
			byName[name] = r
			order = append(order, name)
		}
		return r
	}
	// Stack frames are reported per function, entry or not; keep them by
	// name and attach them to kernels at the end.
	frames := map[string][3]int{}

	var current *Resource // the entry function being compiled
	var propsFor string   // the function the next frame line belongs to
	for _, line := range strings.Split(log, "\n") {
		line = strings.TrimRight(line, "\r")
		if m := reEntry.FindStringSubmatch(line); m != nil {
			current = entry(m[1])
			continue
		}
		if m := reProperties.FindStringSubmatch(line); m != nil {
			propsFor = m[1]
			continue
		}
		if m := reFrame.FindStringSubmatch(line); m != nil {
			if propsFor != "" {
				frames[propsFor] = [3]int{atoi(m[1]), atoi(m[2]), atoi(m[3])}
				propsFor = ""
			}
			continue
		}
		if m := reUsed.FindStringSubmatch(line); m != nil && current != nil {
			current.Registers = atoi(m[1])
			for _, it := range reUsedItem.FindAllStringSubmatch(line, -1) {
				n := atoi(it[1])
				switch unit := it[2]; {
				case unit == "smem":
					current.SharedBytes = n
				case unit == "cumulative stack size":
					current.StackBytes = max(current.StackBytes, n)
				case unit == "lmem":
					current.StackBytes = max(current.StackBytes, n)
				case strings.HasPrefix(unit, "cmem["):
					current.ConstBytes += n
				}
			}
			current = nil
		}
	}
	for name := range frames {
		if _, ok := byName[name]; !ok {
			entry(name).Device = true
		}
	}
	out := make([]Resource, 0, len(order))
	for _, name := range order {
		r := byName[name]
		if f, ok := frames[name]; ok {
			r.StackBytes = max(r.StackBytes, f[0])
			r.SpillStores, r.SpillLoads = f[1], f[2]
		}
		out = append(out, *r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Kernel < out[j].Kernel })
	return out
}

func atoi(s string) int {
	n, _ := strconv.Atoi(s) // the regexps admit digits only
	return n
}
