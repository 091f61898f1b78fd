package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// schemaPrefix starts every version of the report's schema field.
const schemaPrefix = "detgemm-bench/"

// errReportFormat is matched (errors.Is) by every error of readReport about
// a file that is not a bench report this bench can read.
var errReportFormat = errors.New("not a detgemm bench report")

// reportError says which file could not be read as a report, and why.
type reportError struct {
	path   string
	reason string
	err    error // the JSON decoder's error, if any
}

func (e *reportError) Error() string {
	return fmt.Sprintf("%s: %s (want the JSON file that go run ./bench --json FILE writes)", e.path, e.reason)
}

// Is makes every reportError match errReportFormat.
func (e *reportError) Is(target error) bool { return target == errReportFormat }

// Unwrap gives the decoder's error.
func (e *reportError) Unwrap() error { return e.err }

// schemaVersion parses the report's schema field: "detgemm-bench/N" is
// version N; a missing field is version 1 (the first bench wrote it, but a
// hand-edited file may lack it).
func schemaVersion(schema string) (int, error) {
	if schema == "" {
		return 1, nil
	}
	n, ok := strings.CutPrefix(schema, schemaPrefix)
	if !ok {
		return 0, fmt.Errorf("schema %q is not %sN", schema, schemaPrefix)
	}
	v, err := strconv.Atoi(n)
	if err != nil || v < 1 {
		return 0, fmt.Errorf("schema %q: the version is not a positive number", schema)
	}
	return v, nil
}

// readReport loads a saved run, of any schema version. Fields this bench
// does not know (a newer version's) are ignored; fields an older version
// lacks stay zero. newer is true when the file's version is above this
// bench's, so the caller can say that some figures may be left out.
func readReport(path string) (rep *report, newer bool, err error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, false, err
	}
	return parseReport(path, b)
}

// parseReport is readReport on the file's bytes; name labels errors.
func parseReport(name string, b []byte) (*report, bool, error) {
	var head struct {
		Schema *string          `json:"schema"`
		Rows   *json.RawMessage `json:"rows"`
	}
	if err := json.Unmarshal(b, &head); err != nil {
		return nil, false, &reportError{name, "not JSON: " + err.Error(), err}
	}
	schema := ""
	if head.Schema != nil {
		schema = *head.Schema
	}
	v, err := schemaVersion(schema)
	if err != nil {
		return nil, false, &reportError{name, err.Error(), nil}
	}
	if head.Rows == nil {
		return nil, false, &reportError{name, `no "rows" field`, nil}
	}
	rep := &report{}
	if err := json.Unmarshal(b, rep); err != nil {
		return nil, false, &reportError{name, "a field has the wrong type: " + err.Error(), err}
	}
	if rep.Schema == "" {
		rep.Schema = schemaPrefix + "1"
	}
	cur, _ := schemaVersion(reportSchema)
	return rep, v > cur, nil
}
