package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/permlab/permlab/internal/jsonl"
	"github.com/permlab/permlab/networks/sorting"
)

// Record is one line of the Table 1 results file: one trained network and
// its test metrics.
type Record struct {
	N            int               `json:"n"`
	Variant      string            `json:"variant"`
	Seed         uint64            `json:"seed"`
	Steps        int               `json:"steps"`
	Batch        int               `json:"batch"`
	Samples      int               `json:"samples"`
	Iters        int               `json:"iters"`
	Tau          float64           `json:"tau"`
	TauEnd       float64           `json:"tau_end,omitempty"`
	ValEvery     int               `json:"val_every,omitempty"`
	ValLists     int               `json:"val_lists,omitempty"`
	ValSeed      uint64            `json:"val_seed,omitempty"`
	KeptStep     int               `json:"kept_step,omitempty"`
	LR           float64           `json:"lr"`
	LREnd        float64           `json:"lr_end"`
	Noise        float64           `json:"noise"`
	TestLists    int               `json:"test_lists"`
	TestSeed     uint64            `json:"test_seed"`
	TrainSeconds float64           `json:"train_seconds"`
	TestSeconds  float64           `json:"test_seconds"`
	Results      []sorting.Metrics `json:"results"`
}

// newRecord returns the record of a network of cfg, with the weights chosen
// by val, without results.
func newRecord(cfg sorting.Config, val validation, testLists int, testSeed uint64) Record {
	return Record{
		ValEvery: val.every, ValLists: val.lists, ValSeed: val.seed,
		N: cfg.N, Variant: cfg.Variant.String(), Seed: cfg.Seed, Steps: cfg.Steps,
		Batch: cfg.Batch, Samples: cfg.Samples, Iters: cfg.Iters,
		Tau: cfg.Tau, TauEnd: cfg.TauEnd, LR: cfg.LR, LREnd: cfg.LREnd, Noise: cfg.Noise,
		TestLists: testLists, TestSeed: testSeed,
	}
}

// covers reports whether r is a finished run of the same task as want
// (same settings, test lists and seed) that tested every interval of ivs.
func (r *Record) covers(want Record, ivs []interval) bool {
	a, b := *r, want
	a.TrainSeconds, a.TestSeconds, a.KeptStep, a.Results = 0, 0, 0, nil
	b.TrainSeconds, b.TestSeconds, b.KeptStep, b.Results = 0, 0, 0, nil
	if !equalRecords(a, b) {
		return false
	}
	for _, iv := range ivs {
		if r.result(iv) == nil {
			return false
		}
	}
	return true
}

func equalRecords(a, b Record) bool {
	x, err1 := json.Marshal(a)
	y, err2 := json.Marshal(b)
	return err1 == nil && err2 == nil && bytes.Equal(x, y)
}

// result returns the metrics of interval iv, or nil.
func (r *Record) result(iv interval) *sorting.Metrics {
	for k := range r.Results {
		if m := &r.Results[k]; m.Low == iv.low && m.High == iv.high {
			return m
		}
	}
	return nil
}

// readRecords reads a JSON-lines results file; a missing file has no records.
// A torn last line (from an interrupted write) is ignored.
func readRecords(path string) ([]Record, error) { return jsonl.Read[Record](path) }

// trimTornLine drops the start of a line whose append was interrupted.
func trimTornLine(path string) error { return jsonl.TrimTorn(path) }

// appendRecord appends r as one line to path.
func appendRecord(path string, r Record) error { return jsonl.Append(path, r) }

// runTable1 trains and tests every cell of the grid not yet in o.results,
// then prints the table.
func runTable1(ctx context.Context, o *options, stdout, stderr io.Writer) error {
	if err := os.MkdirAll(filepath.Dir(o.results), 0o755); err != nil {
		return err
	}
	done, err := readRecords(o.results)
	if err != nil {
		return err
	}
	if err := trimTornLine(o.results); err != nil {
		return err
	}
	for _, n := range o.parsedNs {
		for seed := uint64(1); seed <= uint64(o.seeds); seed++ {
			for _, v := range []sorting.Variant{sorting.Paper, sorting.Standardized} {
				cfg, err := o.config(n, seed, v)
				if err != nil {
					return err
				}
				want := newRecord(cfg, o.validation(), o.testLists, o.testSeed)
				if slices.ContainsFunc(done, func(r Record) bool { return r.covers(want, o.intervals) }) {
					continue
				}
				r, err := runCell(ctx, cfg, o, stderr)
				if err != nil {
					return fmt.Errorf("n=%d %v seed %d: %w", n, v, seed, err)
				}
				if err := appendRecord(o.results, r); err != nil {
					return err
				}
				done = append(done, r)
			}
		}
	}
	rows, err := gridRecords(done, o)
	if err != nil {
		return err
	}
	md := table1Markdown(rows, o.parsedNs, o.intervals)
	if o.seedShare {
		md += "\n" + shareMarkdown(rows, o.parsedNs, o.intervals, shareLimit)
	}
	fmt.Fprint(stdout, md)
	if o.markdown != "" {
		return os.WriteFile(o.markdown, []byte(md), 0o644)
	}
	return nil
}

// gridRecords returns the records of done that belong to the grid of o:
// one of its sizes, either variant, its settings and test lists, and any
// seed, also seeds above o.seeds recorded by an earlier run.
func gridRecords(done []Record, o *options) ([]Record, error) {
	var rows []Record
	for _, r := range done {
		if !slices.Contains(o.parsedNs, r.N) {
			continue
		}
		v, err := sorting.ParseVariant(r.Variant)
		if err != nil {
			continue
		}
		cfg, err := o.config(r.N, r.Seed, v)
		if err != nil {
			return nil, err
		}
		if r.covers(newRecord(cfg, o.validation(), o.testLists, o.testSeed), o.intervals) &&
			!slices.ContainsFunc(rows, func(q Record) bool { return q.N == r.N && q.Seed == r.Seed && q.Variant == r.Variant }) {
			rows = append(rows, r)
		}
	}
	return rows, nil
}

// runCell trains and tests one network.
func runCell(ctx context.Context, cfg sorting.Config, o *options, stderr io.Writer) (Record, error) {
	r := newRecord(cfg, o.validation(), o.testLists, o.testSeed)
	net, secs, kept, err := trainOne(ctx, cfg, "", o.validation(), stderr)
	if err != nil {
		return r, err
	}
	if o.valEvery > 0 {
		r.KeptStep = kept
	}
	start := time.Now()
	ms, err := evaluate(net, o.intervals, o.testLists, o.testSeed)
	if err != nil {
		return r, err
	}
	r.TrainSeconds, r.TestSeconds, r.Results = secs, time.Since(start).Seconds(), ms
	fmt.Fprintf(stderr, "n=%d %v seed %d: prop. any wrong", cfg.N, cfg.Variant, cfg.Seed)
	for _, m := range ms {
		fmt.Fprintf(stderr, " %v %.3f", interval{m.Low, m.High}, m.PropAnyWrong)
	}
	fmt.Fprintln(stderr)
	return r, nil
}

// paperTable1 holds the seed paper's Table 1 (prop. any wrong) by interval,
// for n = 5, 10, 15, 80, 100, 120.
var (
	paperNs     = []int{5, 10, 15, 80, 100, 120}
	paperTable1 = map[interval][]string{
		{0, 1}:       {".0", ".0", ".0", ".0", ".0", ".01"},
		{0, 10}:      {".0", ".0", ".0", ".0", ".02", ".03"},
		{0, 1000}:    {".0", ".0", ".0", ".01", ".02", ".04"},
		{1, 2}:       {".0", ".0", ".0", ".01", ".04", ".08"},
		{10, 11}:     {".0", ".0", ".0", ".08", ".08", ".6"},
		{100, 101}:   {".0", ".0", ".01", ".02", ".99", "1."},
		{1000, 1001}: {".0", ".0", ".07", "1.", "1.", "1."},
	}
)

// paperValue returns the paper's entry for interval iv and size n, or "".
func paperValue(iv interval, n int) string {
	k := slices.Index(paperNs, n)
	if row, ok := paperTable1[iv]; ok && k >= 0 {
		return row[k]
	}
	return ""
}

// meanSD returns the mean and the sample standard deviation of xs (0 for
// fewer than two values).
func meanSD(xs []float64) (mean, sd float64) {
	for _, x := range xs {
		mean += x
	}
	mean /= float64(len(xs))
	if len(xs) < 2 {
		return mean, 0
	}
	for _, x := range xs {
		sd += (x - mean) * (x - mean)
	}
	return mean, math.Sqrt(sd / float64(len(xs)-1))
}

// table1Markdown formats the prop. any wrong of the records as Table 1:
// one row per interval and variant (the paper's network first), one column
// per n, each entry "mean ± sd over seeds (paper)".
func table1Markdown(rows []Record, ns []int, ivs []interval) string {
	var b strings.Builder
	b.WriteString("Prop. any wrong, mean ± sd over training seeds (a single seed: no sd; the paper's value in brackets).\n\n")
	b.WriteString("| test distribution | network |")
	for _, n := range ns {
		fmt.Fprintf(&b, " n = %d |", n)
	}
	b.WriteString("\n|---|---|" + strings.Repeat("---|", len(ns)) + "\n")
	variants := []string{sorting.Paper.String(), sorting.Standardized.String()}
	for _, iv := range ivs {
		for _, v := range variants {
			fmt.Fprintf(&b, "| %v | %s |", iv, v)
			for _, n := range ns {
				var xs []float64
				for i := range rows {
					if r := &rows[i]; r.N == n && r.Variant == v {
						if m := r.result(iv); m != nil {
							xs = append(xs, m.PropAnyWrong)
						}
					}
				}
				cell := "–"
				switch len(xs) {
				case 0:
				case 1:
					cell = fmt.Sprintf("%.3f", xs[0])
				default:
					mean, sd := meanSD(xs)
					cell = fmt.Sprintf("%.3f ± %.3f", mean, sd)
				}
				if v == sorting.Paper.String() {
					if p := paperValue(iv, n); p != "" {
						cell += " (" + p + ")"
					}
				}
				fmt.Fprintf(&b, " %s |", cell)
			}
			b.WriteString("\n")
		}
	}
	b.WriteString("\n| mean per network | |")
	for _, n := range ns {
		fmt.Fprintf(&b, " n = %d |", n)
	}
	b.WriteString("\n|---|---|" + strings.Repeat("---|", len(ns)) + "\n")
	for _, what := range []string{"seeds (per variant)", "steps", "train s", "test s"} {
		fmt.Fprintf(&b, "| %s | |", what)
		for _, n := range ns {
			var k int
			var steps, train, test float64
			seeds := map[string][]uint64{}
			for _, r := range rows {
				if r.N == n {
					k++
					seeds[r.Variant] = append(seeds[r.Variant], r.Seed)
					steps += float64(r.Steps)
					train += r.TrainSeconds
					test += r.TestSeconds
				}
			}
			switch {
			case k == 0:
				b.WriteString(" – |")
			case what == "seeds (per variant)":
				fmt.Fprintf(&b, " %d, %d |", len(seeds[sorting.Paper.String()]), len(seeds[sorting.Standardized.String()]))
			case what == "steps":
				fmt.Fprintf(&b, " %.0f |", steps/float64(k))
			case what == "train s":
				fmt.Fprintf(&b, " %.1f |", train/float64(k))
			default:
				fmt.Fprintf(&b, " %.1f |", test/float64(k))
			}
		}
		b.WriteString("\n")
	}
	return b.String()
}

// shareLimit is the prop. any wrong at or below which a network counts as
// sorting an interval.
const shareLimit = 0.01

// shareMarkdown formats, for every interval, variant and size, the share of
// the training seeds whose network has prop. any wrong <= limit on the
// interval: how often a variant generalises, where the mean of Table 1
// hides a few failed seeds among good ones.
func shareMarkdown(rows []Record, ns []int, ivs []interval, limit float64) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Share of training seeds whose network has prop. any wrong <= %g (seeds that do / seeds run).\n\n", limit)
	b.WriteString("| test distribution | network |")
	for _, n := range ns {
		fmt.Fprintf(&b, " n = %d |", n)
	}
	b.WriteString("\n|---|---|" + strings.Repeat("---|", len(ns)) + "\n")
	for _, iv := range ivs {
		for _, v := range []string{sorting.Paper.String(), sorting.Standardized.String()} {
			fmt.Fprintf(&b, "| %v | %s |", iv, v)
			for _, n := range ns {
				good, all := 0, 0
				for i := range rows {
					if r := &rows[i]; r.N == n && r.Variant == v {
						if m := r.result(iv); m != nil {
							all++
							if m.PropAnyWrong <= limit {
								good++
							}
						}
					}
				}
				if all == 0 {
					b.WriteString(" – |")
					continue
				}
				fmt.Fprintf(&b, " %d/%d (%.0f%%) |", good, all, 100*float64(good)/float64(all))
			}
			b.WriteString("\n")
		}
	}
	return b.String()
}
