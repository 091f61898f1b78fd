package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strings"
	"time"
)

// buildCommit is the source revision, set at link time by make gpu-bin
// (-ldflags "-X main.buildCommit=..."): binaries built with -buildvcs=false
// or for another machine carry no VCS stamp.
var buildCommit string

// sourceCommit says which revision the bench was built from: --commit if
// given, else the link-time stamp, else the Go toolchain's VCS stamp, else
// git in dir (go run does not stamp). "" when none can tell.
func sourceCommit(flagValue, dir string) string {
	if flagValue != "" {
		return flagValue
	}
	if buildCommit != "" {
		return buildCommit
	}
	if c := vcsStamp(); c != "" {
		return c
	}
	return gitCommit(dir)
}

// vcsStamp reads vcs.revision (and vcs.modified) from the build info.
func vcsStamp() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return ""
	}
	var rev string
	var dirty bool
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if rev == "" {
		return ""
	}
	rev = rev[:min(len(rev), 12)]
	if dirty {
		rev += "-dirty"
	}
	return rev
}

// gitCommit asks git for the checkout's revision, with a short deadline;
// "" when git or the checkout is missing (the GPU machine may have
// neither).
func gitCommit(dir string) string {
	if dir == "" {
		return ""
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	git := func(args ...string) (string, bool) {
		out, err := exec.CommandContext(ctx, "git", append([]string{"-C", dir}, args...)...).Output()
		return strings.TrimSpace(string(out)), err == nil
	}
	rev, ok := git("rev-parse", "--short=12", "HEAD")
	if !ok || rev == "" {
		return ""
	}
	if st, ok := git("status", "--porcelain", "--untracked-files=no"); ok && st != "" {
		rev += "-dirty"
	}
	return rev
}

// commandLine is args as recorded in the report, with the program name
// made readable: go run's build directory, or make gpu-bin's .gpu/bench,
// is written as "go run ./bench".
func commandLine(args []string) []string {
	if len(args) == 0 {
		return nil
	}
	out := append([]string(nil), args...)
	// The bench built by go run, or by make gpu-bin for a machine without Go
	// (.gpu/bench): the same program, named as a reader would run it.
	if isGoRunBinary(out[0]) || filepath.Base(out[0]) == "bench" {
		out = append([]string{"go", "run", "./bench"}, out[1:]...)
	}
	return out
}

// isGoRunBinary reports whether prog lives in go run's build directory:
// a temporary go-buildNNN/.../exe, or (Go 1.24 and later, which cache
// go run's binaries) the build cache's go-build/xx/<hash>-d.
func isGoRunBinary(prog string) bool {
	dir := filepath.ToSlash(filepath.Dir(prog))
	return strings.Contains(dir, "/go-build") && (strings.HasSuffix(dir, "/exe") || strings.HasSuffix(dir, "-d"))
}

// shellJoin writes a command line that a POSIX shell reads back as args:
// words with anything but safe characters go in single quotes.
func shellJoin(args []string) string {
	var b strings.Builder
	for i, a := range args {
		if i > 0 {
			b.WriteByte(' ')
		}
		if a != "" && strings.Trim(a, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./=:,+@%") == "" {
			b.WriteString(a)
			continue
		}
		b.WriteString("'" + strings.ReplaceAll(a, "'", `'\''`) + "'")
	}
	return b.String()
}

// workingDir is the current directory, "" if unknown.
func workingDir() string {
	wd, err := os.Getwd()
	if err != nil {
		return ""
	}
	return wd
}
