package main

import (
	"errors"
	"io"
	"os"
	"testing"
)

// FuzzParseReport feeds the --from loader arbitrary bytes. It never
// panics: it refuses with an error matching errReportFormat, or returns a
// report that renders as table, JSON, Markdown and CSV without panicking,
// whose JSON loads again.
func FuzzParseReport(f *testing.F) {
	fixture, err := os.ReadFile("testdata/fixture-v1.json")
	if err != nil {
		f.Fatal(err)
	}
	// The fixture cut to a few rows: the fuzzer mutates a 50 kB input too
	// slowly to explore it.
	rep, _, err := parseReport("fixture", fixture)
	if err != nil {
		f.Fatal(err)
	}
	for _, n := range []int{1, 4} {
		small := *rep
		small.Rows = rep.Rows[:min(n, len(rep.Rows))]
		var js jsonBuffer
		if err := writeReportJSON(&js, &small); err != nil {
			f.Fatal(err)
		}
		f.Add([]byte(js))
	}
	for _, s := range []string{
		``, `null`, `[]`, `{}`, `"x"`, `{"rows":null}`, `{"rows":[]}`, `{"rows":{}}`,
		`{"schema":"detgemm-bench/1","rows":[]}`,
		`{"schema":"detgemm-bench/999","rows":[{}]}`,
		`{"schema":"detgemm-bench/0","rows":[]}`,
		`{"schema":"detgemm-bench/-1","rows":[]}`,
		`{"schema":"other/1","rows":[]}`,
		`{"schema":"detgemm-bench/99999999999999999999","rows":[]}`,
		`{"schema":7,"rows":[]}`,
		`{"rows":[{"shape":{"m":-1,"k":0,"n":9223372036854775807},"mode":"","median_us":-1}]}`,
		`{"rows":[{"median_us":1e308,"tflops":-0,"dtype":"bf16"},{"median_us":0}]}`,
		`{"rows":[null,null]}`,
		`{"rows":[1]}`,
		`{"rows":[], "gpu": null, "startup": {}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		rep, _, err := parseReport("fuzz.json", b)
		if err != nil {
			if !errors.Is(err, errReportFormat) {
				t.Fatalf("untyped error %v", err)
			}
			if rep != nil {
				t.Fatal("a report with an error")
			}
			return
		}
		if rep == nil {
			t.Fatal("no report and no error")
		}
		for _, format := range formats {
			if err := renderReport(io.Discard, rep, format, "go run ./bench --from fuzz.json"); err != nil {
				t.Fatalf("%s: %v", format, err)
			}
		}
		var js jsonBuffer
		if err := writeReportJSON(&js, rep); err != nil {
			t.Fatal(err)
		}
		if _, _, err := parseReport("again.json", js); err != nil {
			t.Fatalf("the rendered JSON does not load again: %v", err)
		}
	})
}

// jsonBuffer collects what a writer gets.
type jsonBuffer []byte

func (j *jsonBuffer) Write(p []byte) (int, error) { *j = append(*j, p...); return len(p), nil }
