// Command vicheck measures whether variational inference (vi.FitModel with
// default options) returns the right answer, or says that it may not, on
// four families of small models with latent permutations, and how much its
// check of the answer by the model's exact log joint costs.
//
// On models small enough for exact enumeration (models.Exact) it compares,
// data set by data set, the exact posterior probability of VI's answer with
// that of the most probable permutation, with the check (the default) and
// without it (the paper's plain method), records whether VI warned, and
// measures the calibrated marginals (MCMC chains started from VI's polished
// states) and default MCMC against the exact marginals. On larger models it
// compares VI's answer with the most probable state that long MCMC runs
// visit. Results are written as JSON lines and summarised as Markdown
// tables:
//
//	go run ./benchmarks/vicheck                 # both checks, writes results/
//	go run ./benchmarks/vicheck -table          # the tables from the committed results
//	go run ./benchmarks/vicheck -small -seeds 2 # a quick look
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// The sizes of the two checks.
var (
	smallSizes = []int{6, 8}
	largeSizes = []int{20, 40}
)

func main() {
	if err := run(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "vicheck:", err)
		os.Exit(2)
	}
}

type config struct {
	out          string
	small, large bool
	table        bool
	seeds        int
	seed0        uint64
}

func parse(args []string, stderr io.Writer) (*config, error) {
	fs := flag.NewFlagSet("vicheck", flag.ContinueOnError)
	fs.SetOutput(stderr)
	c := &config{}
	fs.StringVar(&c.out, "out", filepath.Join("benchmarks", "vicheck", "results"), "folder of the results files (small.jsonl, large.jsonl)")
	fs.BoolVar(&c.small, "small", false, "run only the check against exact enumeration (n = 6, 8)")
	fs.BoolVar(&c.large, "large", false, "run only the check against long MCMC (n = 20, 40)")
	fs.BoolVar(&c.table, "table", false, "print the tables from the results files and run nothing")
	fs.IntVar(&c.seeds, "seeds", 5, "data sets per family, size and level (seeds seed0, seed0+1, …)")
	fs.Uint64Var(&c.seed0, "seed0", 1, "first seed")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	switch {
	case fs.NArg() > 0:
		return nil, fmt.Errorf("unexpected arguments %q", fs.Args())
	case c.seeds < 1:
		return nil, fmt.Errorf("-seeds must be >= 1, got %d", c.seeds)
	case c.table && (c.small || c.large):
		return nil, errors.New("-table runs nothing; it cannot be combined with -small or -large")
	}
	if !c.small && !c.large {
		c.small, c.large = true, true
	}
	return c, nil
}

func run(args []string, stdout, stderr io.Writer) error {
	c, err := parse(args, stderr)
	if err != nil {
		return err
	}
	if c.table {
		return printTables(stdout, c.out)
	}
	if err := os.MkdirAll(c.out, 0o755); err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if c.small {
		if err := runAll(ctx, stderr, filepath.Join(c.out, "small.jsonl"), c, smallSizes, func(ctx context.Context, f family, n int, l float64, s uint64) (any, error) {
			return checkSmall(ctx, f, n, l, s)
		}); err != nil {
			return err
		}
	}
	if c.large {
		// The large check runs each family at its first level only.
		if err := runAll(ctx, stderr, filepath.Join(c.out, "large.jsonl"), c, largeSizes, func(ctx context.Context, f family, n int, l float64, s uint64) (any, error) {
			if l != f.Levels[0] {
				return nil, nil
			}
			return checkLarge(ctx, f, n, l, s)
		}); err != nil {
			return err
		}
	}
	return printTables(stdout, c.out)
}

// runAll runs one check on every family, size, level and seed, writing a
// JSON line per data set to a temporary file renamed over path at the end,
// so that an interrupted run leaves the previous results intact.
func runAll(ctx context.Context, log io.Writer, path string, c *config, sizes []int, check func(context.Context, family, int, float64, uint64) (any, error)) error {
	tmp := path + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return err
	}
	defer os.Remove(tmp)
	w := bufio.NewWriter(f)
	enc := json.NewEncoder(w)
	began := time.Now()
	for _, fam := range families {
		for _, n := range sizes {
			for _, level := range fam.Levels {
				for k := range c.seeds {
					seed := c.seed0 + uint64(k)
					t0 := time.Now()
					row, err := check(ctx, fam, n, level, seed)
					if err != nil {
						f.Close()
						return fmt.Errorf("%s, n = %d, %s = %g, seed %d: %w", fam.Name, n, fam.Param, level, seed, err)
					}
					if row == nil {
						continue // not part of this check
					}
					if err := enc.Encode(row); err != nil {
						f.Close()
						return err
					}
					fmt.Fprintf(log, "%s n=%d %s=%g seed=%d: %.1fs (total %s)\n", fam.Name, n, fam.Param, level, seed, time.Since(t0).Seconds(), time.Since(began).Round(time.Second))
				}
			}
		}
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// readRows reads a JSON-lines results file.
func readRows[T any](path string) ([]T, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var rows []T
	for i, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		if line == "" {
			continue
		}
		var r T
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			return nil, fmt.Errorf("%s:%d: %w", path, i+1, err)
		}
		rows = append(rows, r)
	}
	return rows, nil
}

func fmtG(v float64) string { return strconv.FormatFloat(v, 'g', 3, 64) }
