package cli

import (
	"bytes"
	"errors"
	"flag"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	newFS := func() *flag.FlagSet {
		fs := flag.NewFlagSet("x", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		fs.Int("n", 1, "")
		return fs
	}
	if err := Parse(newFS(), []string{"-n", "2"}); err != nil {
		t.Errorf("good flags: %v", err)
	}
	if err := Parse(newFS(), []string{"-h"}); !errors.Is(err, flag.ErrHelp) {
		t.Errorf("-h: %v", err)
	}
	err := Parse(newFS(), []string{"-n", "x"})
	var u *UsageError
	if !errors.As(err, &u) || !u.Reported {
		t.Errorf("bad value: %v, want a reported usage error", err)
	}
	err = Parse(newFS(), []string{"stray", "-n", "2"})
	if !IsUsage(err) || !strings.Contains(err.Error(), `unexpected argument "stray"`) {
		t.Errorf("stray argument: %v", err)
	}
}

func TestExit(t *testing.T) {
	for _, tc := range []struct {
		err  error
		code int
		out  string
	}{
		{nil, 0, ""},
		{flag.ErrHelp, 0, ""},
		{Usagef("-n must be >= 1"), ExitUsage, "prog: -n must be >= 1\n"},
		{&UsageError{Err: errors.New("printed"), Reported: true}, ExitUsage, ""},
		{errors.New("prog: disk full"), ExitFailure, "prog: disk full\n"},
		{errors.New("lib: broken"), ExitFailure, "prog: lib: broken\n"},
	} {
		var buf bytes.Buffer
		if code := Exit(&buf, "prog", tc.err); code != tc.code || buf.String() != tc.out {
			t.Errorf("%v: status %d, output %q; want %d, %q", tc.err, code, buf.String(), tc.code, tc.out)
		}
	}
}

func TestCheck(t *testing.T) {
	var c Check
	c.AtLeast("-a", 1, 1)
	c.Positive("-b", 0.5)
	c.NonNegative("-c", 0)
	c.OneOf("-d", "x", "x", "y")
	if c.Err() != nil {
		t.Fatalf("passing checks: %v", c.Err())
	}
	c.Positive("-e", math.Inf(1))
	c.AtLeast("-f", 0, 1)
	if err := c.Err(); !IsUsage(err) || err.Error() != "-e must be finite and > 0, got +Inf" {
		t.Errorf("first failure: %v", err)
	}
	for _, tc := range []struct {
		check func(*Check)
		want  string
	}{
		{func(c *Check) { c.AtLeast("-n", -1, 0) }, "-n must be >= 0, got -1"},
		{func(c *Check) { c.Positive("-s", math.NaN()) }, "-s must be finite and > 0, got NaN"},
		{func(c *Check) { c.NonNegative("-r", -1) }, "-r must be finite and >= 0, got -1"},
		{func(c *Check) { c.OneOf("-m", "z", "x", "y") }, `-m "z": want x, y`},
		{func(c *Check) { c.That(false, "-%s broken", "q") }, "-q broken"},
	} {
		var c Check
		tc.check(&c)
		if err := c.Err(); err == nil || err.Error() != tc.want {
			t.Errorf("got %v, want %q", err, tc.want)
		}
	}
}

func TestPaths(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "missing")
	for _, tc := range []struct {
		err  error
		want string // "" for no error
	}{
		{InputFile("-f", file), ""},
		{InputFile("-f", missing), "-f " + missing + ": no such file or directory"},
		{InputFile("-f", dir), "-f " + dir + ": is a directory, not a file"},
		{InputFile("-f", ""), "-f must not be empty"},
		{InputDir("-d", dir), ""},
		{InputDir("-d", file), "-d " + file + ": not a directory"},
		{InputDir("-d", missing), "-d " + missing + ": no such file or directory"},
		{OutputDir("-o", dir), ""},
		{OutputDir("-o", filepath.Join(missing, "a", "b")), ""},
		{OutputDir("-o", file), "-o " + file + ": not a directory"},
		{OutputDir("-o", filepath.Join(file, "a")), "-o " + filepath.Join(file, "a") + ": " + file + " is not a directory"},
		{OutputDir("-o", ""), "-o must not be empty"},
		{OutputFile("-w", file), ""},
		{OutputFile("-w", filepath.Join(missing, "w.nn")), ""},
		{OutputFile("-w", dir), "-w " + dir + ": is a directory, not a file"},
		{OutputFile("-w", filepath.Join(file, "w.nn")), "-w " + filepath.Join(file, "w.nn") + ": not a directory"},
	} {
		switch {
		case tc.want == "" && tc.err != nil:
			t.Errorf("unexpected error %v", tc.err)
		case tc.want != "" && (tc.err == nil || tc.err.Error() != tc.want || !IsUsage(tc.err)):
			t.Errorf("error %v, want %q", tc.err, tc.want)
		}
	}
	// The checks leave nothing behind.
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 {
		t.Errorf("%d entries in %s, want only the file", len(entries), dir)
	}
	if data, err := os.ReadFile(file); err != nil || string(data) != "x" {
		t.Errorf("the file changed: %q, %v", data, err)
	}
}
