package ref

import (
	"runtime"
	"sync"
)

// serialWork is the number of multiply-adds below which a call runs on the
// calling goroutine: starting goroutines would cost more than it saves.
const serialWork = 1 << 16

// workers is the number of goroutines to use for tasks tasks of work
// multiply-adds in all.
func (o Options) workers(tasks, work int) int {
	w := o.Workers
	if w <= 0 {
		w = runtime.GOMAXPROCS(0)
	}
	if work < serialWork {
		w = 1
	}
	return max(1, min(w, tasks))
}

// parallel runs body over task ranges [lo, hi) that cover [0, tasks) without
// overlap, on w goroutines (contiguous ranges, one per goroutine).
func parallel(tasks, w int, body func(lo, hi int)) {
	if w <= 1 {
		body(0, tasks)
		return
	}
	var wg sync.WaitGroup
	for t := range w {
		lo, hi := t*tasks/w, (t+1)*tasks/w
		if lo == hi {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			body(lo, hi)
		}()
	}
	wg.Wait()
}

// workFor is i*j*r, the multiply-adds of a reduction, or the largest int
// where that overflows (i*j fits: callers checked pairwise products).
func workFor(i, j, r int) int {
	w, ok := mul(i*j, r)
	if !ok {
		return int(^uint(0) >> 1)
	}
	return w
}
