// Package cli holds what the example programs share in checking their
// command lines before they read any data or start any work: usage errors
// (exit status 2) told apart from failures (status 1), checks of flag values
// whose messages name the flag, and checks that the input paths a flag
// names exist and that the output paths can be written.
package cli

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// Exit statuses of the example programs.
const (
	ExitFailure = 1 // the work failed (data unreadable, training failed, ...)
	ExitUsage   = 2 // the command line is wrong; nothing was done
)

// UsageError is an error in the command line: a bad flag value, a stray
// argument, an input a flag names that is not there, an output that cannot
// be written. Programs exit with ExitUsage on one.
type UsageError struct {
	Err error
	// Reported is set when the message has been printed already (the flag
	// package prints its own parse errors with the usage).
	Reported bool
}

func (e *UsageError) Error() string { return e.Err.Error() }
func (e *UsageError) Unwrap() error { return e.Err }

// Usagef returns a UsageError with the formatted message.
func Usagef(format string, a ...any) error {
	return &UsageError{Err: fmt.Errorf(format, a...)}
}

// Usage marks err as a usage error; nil stays nil.
func Usage(err error) error {
	if err == nil || IsUsage(err) {
		return err
	}
	return &UsageError{Err: err}
}

// IsUsage reports whether err is, or wraps, a UsageError.
func IsUsage(err error) bool {
	var u *UsageError
	return errors.As(err, &u)
}

// Parse parses args with fs, which must use flag.ContinueOnError, and
// rejects positional arguments: every program here takes flags only. It
// returns flag.ErrHelp for -h, and a UsageError for anything else wrong.
func Parse(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return &UsageError{Err: err, Reported: true}
	}
	if fs.NArg() > 0 {
		return Usagef("unexpected argument %q: this command takes flags only (see -h)", fs.Arg(0))
	}
	return nil
}

// Given reports whether the flag name was set on the command line parsed by
// fs (nil: none was).
func Given(fs *flag.FlagSet, name string) bool {
	found := false
	if fs != nil {
		fs.Visit(func(f *flag.Flag) { found = found || f.Name == name })
	}
	return found
}

// Exit prints err to stderr as "prog: err" (unless it was printed already,
// and without repeating a "prog: " the message starts with) and returns
// the exit status: 0 for nil and flag.ErrHelp, ExitUsage for a usage
// error, ExitFailure for any other.
func Exit(stderr io.Writer, prog string, err error) int {
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
		return 0
	}
	var u *UsageError
	usage := errors.As(err, &u)
	if !usage || !u.Reported {
		fmt.Fprintln(stderr, prog+":", strings.TrimPrefix(err.Error(), prog+": "))
	}
	if usage {
		return ExitUsage
	}
	return ExitFailure
}

// Check collects the first failed check of a command line's flags as a
// UsageError. Names are given as on the command line, "-steps". Checks of
// paths are skipped once one has failed, so that a bad flag leaves no trace
// on the file system.
type Check struct{ err error }

// Err returns the first failed check, nil if every one passed.
func (c *Check) Err() error { return c.err }

// That fails with the formatted message unless ok.
func (c *Check) That(ok bool, format string, a ...any) {
	if !ok && c.err == nil {
		c.err = Usagef(format, a...)
	}
}

// Add records err (a failed check when non-nil) as a usage error.
func (c *Check) Add(err error) {
	if err != nil && c.err == nil {
		c.err = Usage(err)
	}
}

// AtLeast checks that the integer flag name is >= lo.
func (c *Check) AtLeast(name string, v, lo int) {
	c.That(v >= lo, "%s must be >= %d, got %d", name, lo, v)
}

// Positive checks that the float flag name is finite and > 0.
func (c *Check) Positive(name string, v float64) {
	c.That(v > 0 && !math.IsInf(v, 0), "%s must be finite and > 0, got %v", name, v)
}

// NonNegative checks that the float flag name is finite and >= 0.
func (c *Check) NonNegative(name string, v float64) {
	c.That(v >= 0 && !math.IsInf(v, 0), "%s must be finite and >= 0, got %v", name, v)
}

// OneOf checks that the string flag name is one of the options.
func (c *Check) OneOf(name, v string, options ...string) {
	for _, o := range options {
		if v == o {
			return
		}
	}
	c.That(false, "%s %q: want %s", name, v, strings.Join(options, ", "))
}

// InputFile checks that path, the value of flag name, is a file that can
// be opened for reading.
func (c *Check) InputFile(name, path string) {
	if c.err == nil {
		c.Add(InputFile(name, path))
	}
}

// InputDir checks that path, the value of flag name, is a directory.
func (c *Check) InputDir(name, path string) {
	if c.err == nil {
		c.Add(InputDir(name, path))
	}
}

// OutputDir checks that dir, the value of flag name, is or can be made a
// directory this process can write in; see OutputDir.
func (c *Check) OutputDir(name, dir string) {
	if c.err == nil {
		c.Add(OutputDir(name, dir))
	}
}

// OutputFile checks that path, the value of flag name, can be written; see
// OutputFile.
func (c *Check) OutputFile(name, path string) {
	if c.err == nil {
		c.Add(OutputFile(name, path))
	}
}

// InputFile returns a usage error naming flag name unless path is a file
// that can be opened for reading.
func InputFile(name, path string) error {
	if path == "" {
		return Usagef("%s must not be empty", name)
	}
	fi, err := os.Stat(path)
	if err != nil {
		return Usagef("%s %s: %v", name, path, reason(err))
	}
	if fi.IsDir() {
		return Usagef("%s %s: is a directory, not a file", name, path)
	}
	f, err := os.Open(path)
	if err != nil {
		return Usagef("%s %s: %v", name, path, reason(err))
	}
	return f.Close()
}

// InputDir returns a usage error naming flag name unless path is a
// directory.
func InputDir(name, path string) error {
	if path == "" {
		return Usagef("%s must not be empty", name)
	}
	fi, err := os.Stat(path)
	if err != nil {
		return Usagef("%s %s: %v", name, path, reason(err))
	}
	if !fi.IsDir() {
		return Usagef("%s %s: not a directory", name, path)
	}
	return nil
}

// OutputDir returns a usage error naming flag name unless dir is a
// directory this process can create files in, or a path whose nearest
// existing ancestor is: it creates and removes a temporary file there, and
// creates no directory.
func OutputDir(name, dir string) error {
	if dir == "" {
		return Usagef("%s must not be empty", name)
	}
	d := filepath.Clean(dir)
	for {
		fi, err := os.Stat(d)
		if err == nil {
			if !fi.IsDir() {
				if d == filepath.Clean(dir) {
					return Usagef("%s %s: not a directory", name, dir)
				}
				return Usagef("%s %s: %s is not a directory", name, dir, d)
			}
			break
		}
		if !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, syscall.ENOTDIR) {
			return Usagef("%s %s: %v", name, dir, reason(err))
		}
		parent := filepath.Dir(d)
		if parent == d {
			return Usagef("%s %s: %v", name, dir, reason(err))
		}
		d = parent
	}
	f, err := os.CreateTemp(d, ".write-check-*")
	if err != nil {
		return Usagef("%s %s: cannot write in %s: %v", name, dir, d, reason(err))
	}
	f.Close()
	if err := os.Remove(f.Name()); err != nil {
		return Usagef("%s %s: %v", name, dir, err)
	}
	return nil
}

// OutputFile returns a usage error naming flag name unless path can be
// written: its directory passes OutputDir, and the file, if it is there,
// is not a directory and opens for writing (without being changed).
func OutputFile(name, path string) error {
	if path == "" {
		return Usagef("%s must not be empty", name)
	}
	fi, err := os.Stat(path)
	switch {
	case err == nil && fi.IsDir():
		return Usagef("%s %s: is a directory, not a file", name, path)
	case err == nil:
		f, err := os.OpenFile(path, os.O_WRONLY, 0)
		if err != nil {
			return Usagef("%s %s: %v", name, path, reason(err))
		}
		return f.Close()
	case !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, syscall.ENOTDIR):
		return Usagef("%s %s: %v", name, path, reason(err))
	}
	if err := OutputDir(name, filepath.Dir(path)); err != nil {
		return Usagef("%s %s: %v", name, path, strings.TrimPrefix(err.Error(), name+" "+filepath.Dir(path)+": "))
	}
	return nil
}

// reason is the cause of a path error without the path, which the
// messages give once.
func reason(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
