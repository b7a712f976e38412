package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"gonum.org/v1/gonum/stat"

	"github.com/permlab/permlab/celegans"
	"github.com/permlab/permlab/internal/atomicfile"
	"github.com/permlab/permlab/internal/cli"
)

// Grid is a tuning grid: the settings variants of each method, run on the
// same cells and tuning seeds under the same budget, so that every method
// is tuned by the same protocol. Args are flags of this command common to
// every variant (cells, seeds, budget); each variant adds its own.
type Grid struct {
	Protocol string    `json:"protocol"` // how the grid was chosen, for the record
	Args     []string  `json:"args"`
	Variants []Variant `json:"variants"`
}

// Variant is one setting of one method.
type Variant struct {
	Name   string   `json:"name"`   // directory name under -out/tune; letters, digits, '-', '_', '.'
	Method string   `json:"method"` // a celegans method
	Args   []string `json:"args"`   // its flags, e.g. ["-chains", "2"]
}

var variantName = regexp.MustCompile(`^[A-Za-z0-9._-]+$`)

// readGrid reads and checks a tuning grid.
func readGrid(path string) (*Grid, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var g Grid
	dec := json.NewDecoder(strings.NewReader(string(data)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&g); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(g.Variants) == 0 {
		return nil, fmt.Errorf("%s: no variants", path)
	}
	seen := map[string]bool{}
	for i, v := range g.Variants {
		if !variantName.MatchString(v.Name) {
			return nil, fmt.Errorf("%s: variant %d: name %q must be letters, digits, '-', '_' or '.'", path, i, v.Name)
		}
		if seen[v.Name] {
			return nil, fmt.Errorf("%s: variant %q listed twice", path, v.Name)
		}
		seen[v.Name] = true
		if _, err := celegans.ParseMethod(v.Method); err != nil {
			return nil, fmt.Errorf("%s: variant %q: %w", path, v.Name, err)
		}
		for _, a := range append(append([]string{}, g.Args...), v.Args...) {
			if n := strings.TrimLeft(strings.SplitN(a, "=", 2)[0], "-"); strings.HasPrefix(a, "-") && (n == "out" || n == "methods" || n == "tune") {
				return nil, fmt.Errorf("%s: variant %q: -%s is set by the tuning runner", path, v.Name, n)
			}
		}
	}
	return &g, nil
}

// TuneRow is one variant's results over the grid's cells.
type TuneRow struct {
	Variant Variant                   `json:"variant"`
	Cells   map[string]celegans.Entry `json:"cells"` // by cell key
	// Mean is the mean over cells of the mean accuracy over all neurons,
	// MeanUnknown the same over the unknown neurons; Runs counts the runs.
	Mean        float64 `json:"mean"`
	MeanUnknown float64 `json:"mean_unknown"`
	Runs        int     `json:"runs"`
	// Iterations is the mean number of VI steps or MCMC sweeps per run, so
	// that a variant's budget use can be compared; RHatMax the worst split
	// R̂ of its MCMC runs (0 when none reports one).
	Iterations float64 `json:"iterations"`
	RHatMax    float64 `json:"rhat_max,omitempty"`
	Missing    int     `json:"missing"` // runs of the variant's grid not done
}

// runTuning runs every variant of the grid in -tune as an experiment of
// its own, in -out/tune/<name> (so each resumes and shards like any run),
// then writes the tuning table to -out/tuning.md and -out/tuning.json.
func runTuning(ctx context.Context, o *options, fs *flag.FlagSet, stdout, stderr io.Writer) int {
	g, err := readGrid(o.tune)
	if err != nil {
		fmt.Fprintln(stderr, "celegans: -tune:", err)
		return cli.ExitUsage
	}
	// The command line's own flags, but -tune, -out and -methods: they come
	// after the grid's common flags (so the command line wins) and before
	// the variant's (which define it).
	var user []string
	fs.Visit(func(f *flag.Flag) {
		if f.Name != "tune" && f.Name != "out" && f.Name != "methods" {
			user = append(user, "-"+f.Name+"="+f.Value.String())
		}
	})
	if o.report != "" {
		return reportTuning(g, o.report, stdout, stderr)
	}
	// Every variant's flags are checked before the first variant runs.
	for _, v := range g.Variants {
		var vo options
		vfs := newFlags(&vo, io.Discard)
		err := cli.Parse(vfs, variantArgs(g, user, v, o.out))
		if err == nil {
			_, _, err = vo.validate()
		}
		if err != nil {
			fmt.Fprintf(stderr, "celegans: -tune %s: variant %s: %v\n", o.tune, v.Name, err)
			return cli.ExitUsage
		}
	}
	if err := cli.OutputDir("-out", o.out); err != nil {
		return cli.Exit(stderr, "celegans", err)
	}
	var rows []TuneRow
	status := 0
	for i, v := range g.Variants {
		dir := filepath.Join(o.out, "tune", v.Name)
		args := variantArgs(g, user, v, o.out)
		fmt.Fprintf(stderr, "celegans: tuning variant %d/%d %s (%s %s)\n", i+1, len(g.Variants), v.Name, v.Method, strings.Join(v.Args, " "))
		code := run(ctx, args, io.Discard, stderr)
		if ctx.Err() != nil {
			fmt.Fprintf(stderr, "celegans: interrupted; run the same command again to resume the tuning grid\n")
			return 130
		}
		switch code {
		case 0:
		case 2: // bad flags: every variant would fail the same way
			return 2
		default:
			status = 1
		}
		if o.shard != "" || o.shards > 0 {
			continue // shards leave the reports to the collecting run
		}
		row, err := readTuneRow(dir, v)
		if err != nil {
			fmt.Fprintln(stderr, "celegans:", err)
			return 1
		}
		rows = append(rows, row)
	}
	if o.shard != "" || o.shards > 0 {
		fmt.Fprintln(stdout, "shard done; run without -shard/-shards to collect every variant and write the tuning table")
		return status
	}
	md := tuningMarkdown(g, rows)
	js, err := json.MarshalIndent(rows, "", "  ")
	if err == nil {
		err = atomicfile.WriteFile(filepath.Join(o.out, "tuning.json"), append(js, '\n'))
	}
	if err == nil {
		err = atomicfile.WriteFile(filepath.Join(o.out, "tuning.md"), []byte(md))
	}
	if err != nil {
		fmt.Fprintln(stderr, "celegans:", err)
		return 1
	}
	fmt.Fprint(stdout, md)
	fmt.Fprintf(stdout, "\nWritten to %s: tuning.md, tuning.json, and each variant's runs in tune/<name>.\n", o.out)
	return status
}

// variantArgs are the flags of variant v's run: the grid's common flags,
// the command line's (user), the variant's own, its method and its
// directory under out.
func variantArgs(g *Grid, user []string, v Variant, out string) []string {
	args := append(append(append([]string{}, g.Args...), user...), v.Args...)
	return append(args, "-methods", v.Method, "-out", filepath.Join(out, "tune", v.Name))
}

// reportTuning prints the tuning table of the grid g from the results
// files under dir/tune, running nothing and reading no data: the command
// behind the tuning table in celegans/tuning/README.md.
func reportTuning(g *Grid, dir string, stdout, stderr io.Writer) int {
	var rows []TuneRow
	for _, v := range g.Variants {
		row, err := readTuneRow(filepath.Join(dir, "tune", v.Name), v)
		if err != nil {
			fmt.Fprintln(stderr, "celegans:", err)
			return 1
		}
		rows = append(rows, row)
	}
	fmt.Fprint(stdout, tuningMarkdown(g, rows))
	return 0
}

// readTuneRow recomputes a variant's row from the results files its
// experiment wrote (celegans.Report), so that the tuning table can be
// checked against the committed files alone.
func readTuneRow(dir string, v Variant) (TuneRow, error) {
	sum, err := celegans.Report(dir)
	if err != nil {
		return TuneRow{}, fmt.Errorf("variant %s: %w", v.Name, err)
	}
	row := TuneRow{Variant: v, Cells: map[string]celegans.Entry{}, Missing: sum.Missing}
	var all, unk []float64
	for _, e := range sum.Entries {
		if string(e.Method) != v.Method {
			continue
		}
		row.Cells[e.Cell] = e
		all, unk = append(all, e.Accuracy), append(unk, e.AccuracyUnknown)
		row.Iterations += e.Iterations * float64(e.Runs)
		row.Runs += e.Runs
		if e.RHatMax != nil && *e.RHatMax > row.RHatMax {
			row.RHatMax = *e.RHatMax
		}
	}
	if row.Runs > 0 {
		row.Iterations /= float64(row.Runs)
	}
	if len(all) == 0 {
		return row, errors.New("variant " + v.Name + ": no finished runs")
	}
	row.Mean, row.MeanUnknown = stat.Mean(all, nil), stat.Mean(unk, nil)
	return row, nil
}

// tuningMarkdown is the tuning table: per method, one row per variant, the
// mean accuracy (all / unknown neurons) over the tuning seeds per cell and
// over the cells, best variant first.
func tuningMarkdown(g *Grid, rows []TuneRow) string {
	var b strings.Builder
	b.WriteString("## Tuning grid\n\n")
	if g.Protocol != "" {
		b.WriteString(g.Protocol + "\n\n")
	}
	fmt.Fprintf(&b, "Common flags: `%s`. Entries: mean accuracy over the tuning seeds, all neurons / unknown neurons; iterations: mean VI steps or MCMC sweeps per run; R̂: the worst split R̂ of the MCMC runs.\n", strings.Join(g.Args, " "))
	var cells []string
	seen := map[string]bool{}
	for _, r := range rows {
		for _, c := range sortedKeys(r.Cells) {
			if !seen[c] {
				seen[c] = true
				cells = append(cells, c)
			}
		}
	}
	for _, m := range celegans.Methods {
		var mine []TuneRow
		for _, r := range rows {
			if r.Variant.Method == string(m) {
				mine = append(mine, r)
			}
		}
		if len(mine) == 0 {
			continue
		}
		fmt.Fprintf(&b, "\n### %s (%d variants)\n\n| variant | flags | mean | iterations | R̂ |", m, len(mine))
		for _, c := range cells {
			fmt.Fprintf(&b, " %s |", c)
		}
		b.WriteString("\n|---|---|---|---|---|")
		for range cells {
			b.WriteString("---|")
		}
		b.WriteString("\n")
		best := 0
		for i, r := range mine {
			if r.Mean > mine[best].Mean {
				best = i
			}
		}
		for i, r := range mine {
			name := r.Variant.Name
			if i == best {
				name = "**" + name + "**"
			}
			rhat := "–"
			if r.RHatMax > 0 {
				rhat = fmt.Sprintf("%.2f", r.RHatMax)
			}
			fmt.Fprintf(&b, "| %s | `%s` | %.3f / %.3f | %.0f | %s |", name, strings.Join(r.Variant.Args, " "), r.Mean, r.MeanUnknown, r.Iterations, rhat)
			for _, c := range cells {
				if e, ok := r.Cells[c]; ok {
					fmt.Fprintf(&b, " %.3f / %.3f |", e.Accuracy, e.AccuracyUnknown)
				} else {
					b.WriteString(" – |")
				}
			}
			if r.Missing > 0 {
				fmt.Fprintf(&b, " (%d runs missing)", r.Missing)
			}
			b.WriteString("\n")
		}
	}
	b.WriteString("\nThe best variant of each method (bold: highest mean accuracy over all neurons and cells) is the one to evaluate on seeds 1-5.\n")
	return b.String()
}

func sortedKeys[V any](m map[string]V) []string { return slices.Sorted(maps.Keys(m)) }
