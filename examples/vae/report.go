package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/permlab/permlab/models/vae"
	"github.com/permlab/permlab/nn"
	"gonum.org/v1/gonum/stat"
)

// writeReport prints what -report (with -against, if given) asks for.
func writeReport(o *options, w io.Writer) error {
	if o.against != "" {
		return reportPairs(o.report, o.against, w)
	}
	return report(o.report, w)
}

// report prints, as Markdown, the runs whose summary.json files lie under
// dir (any depth; a file is a summary if its name ends in .json and it has
// an "estimator"; one without "eval_split" predates the flag and was
// evaluated on the test set): one table of the test-set runs,
// mean ± sd over seeds for each estimator and setting, one of the
// validation (tuning) runs, a row per run, and for runs with an AIS
// estimate a row per run and, where a setting has several seeds, their
// mean ± sd over seeds. The docs' generated blocks are
// this output, so every number in them comes from committed files.
func report(dir string, w io.Writer) error {
	runs, err := readSummaries(dir)
	if err != nil {
		return err
	}
	var test, tune, ais, settled []summary
	for _, s := range runs {
		if s.Settled != nil {
			settled = append(settled, s) // AIS on a sample: the estimate is for all images
		} else if s.AIS != nil {
			ais = append(ais, s) // its own table: one seed's runs differ in their schedule
		} else if s.EvalSplit == "test" {
			test = append(test, s)
		} else {
			tune = append(tune, s)
		}
	}
	if len(test) > 0 {
		writeTestTable(w, test)
	}
	if len(tune) > 0 {
		if len(test) > 0 {
			fmt.Fprintln(w)
		}
		writeTuneTable(w, tune)
	}
	if len(ais) > 0 {
		if len(test)+len(tune) > 0 {
			fmt.Fprintln(w)
		}
		writeAISTable(w, ais)
		writeAISSeeds(w, ais)
	}
	if len(settled) > 0 {
		if len(test)+len(tune)+len(ais) > 0 {
			fmt.Fprintln(w)
		}
		writeSettledTable(w, settled)
		writeSettledDiffs(w, settled)
	}
	return nil
}

// readSummaries reads the run summaries under dir (see report), sorted so
// that the runs of one setting are adjacent and in the order of their seeds.
func readSummaries(dir string) ([]summary, error) {
	var runs []summary
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() || !strings.HasSuffix(path, ".json") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		var s summary
		if err := json.Unmarshal(b, &s); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		if s.Estimator == "" {
			return nil // not a summary (val.json, run.json)
		}
		if s.EvalSplit == "" && s.Test != nil {
			s.EvalSplit = "test" // written before -eval-split existed
		}
		if s.EvalSplit != "test" && s.EvalSplit != "validation" {
			return fmt.Errorf("%s: no evaluation (eval_split %q)", path, s.EvalSplit)
		}
		if (s.EvalSplit == "test") != (s.Test != nil) || (s.EvalSplit == "validation") != (s.ValEval != nil) {
			return fmt.Errorf("%s: eval_split %q does not match the evaluation it holds", path, s.EvalSplit)
		}
		if st := s.Settled; st != nil && st.Subset == nil && s.AIS != nil {
			st.Subset = s.AIS.Subset // written before Settled kept its sample
		}
		runs = append(runs, s)
		return nil
	})
	if err != nil {
		return nil, err
	}
	if len(runs) == 0 {
		return nil, errors.New("no summaries with an eval_split under " + dir)
	}
	slices.SortStableFunc(runs, func(a, b summary) int {
		if c := estimatorRank(a.Estimator) - estimatorRank(b.Estimator); c != 0 {
			return c
		}
		if c := cmpFloat(a.Config.PriorTemp, b.Config.PriorTemp); c != 0 {
			return c
		}
		if c := int(a.Config.Precision) - int(b.Config.Precision); c != 0 {
			return c
		}
		ea, eb := a.eval(), b.eval()
		if c := eb.Images - ea.Images; c != 0 { // the larger evaluation first
			return c
		}
		if c := ea.K - eb.K; c != 0 {
			return c
		}
		if c := aisSteps(a) - aisSteps(b); c != 0 {
			return c
		}
		return int(a.Seed) - int(b.Seed)
	})
	return runs, nil
}

// writeSettledDiffs prints, for every seed with settled estimates of both
// Concrete and Gumbel space on the same sample with the same schedule,
// their difference paired image by image (vae.SettledDiff) beside the
// paper's 111.9 − 111.5, and where a schedule has several seeds a row of
// their mean ± sd.
func writeSettledDiffs(w io.Writer, runs []summary) {
	type diff struct {
		g     summary // the Gumbel-space run
		d, se float64
		paper float64
	}
	var diffs []diff
	for _, g := range runs {
		if g.Estimator != vae.GumbelSpace.String() {
			continue
		}
		for _, c := range runs {
			if c.Estimator != vae.Concrete.String() || c.Seed != g.Seed || c.EvalSplit != g.EvalSplit ||
				estimatorLabel(c) != strings.Replace(estimatorLabel(g), vae.GumbelSpace.String(), vae.Concrete.String(), 1) ||
				c.AIS.Steps != g.AIS.Steps || c.AIS.Chains != g.AIS.Chains {
				continue
			}
			d, se, err := vae.SettledDiff(c.Settled, g.Settled)
			if err != nil {
				continue // not the same sample
			}
			diffs = append(diffs, diff{g: g, d: d, se: se, paper: paperOf(g) - paperOf(c)})
		}
	}
	if len(diffs) == 0 {
		return
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| seed | images | AIS steps × chains | AIS sample | settled −log p(x), Gumbel space − Concrete (paired) | paper (read as a −ELBO) |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|")
	for _, x := range diffs {
		g := x.g
		fmt.Fprintf(w, "| %d | %d%s | %d × %d | %d images | %.2f ± %.2f | %.1f |\n", g.Seed, g.Settled.Images, splitNote(g),
			g.AIS.Steps, g.AIS.Chains, g.Settled.Sample, x.d, x.se, x.paper)
	}
	pools := groupBy(diffs, func(x diff) string {
		return fmt.Sprintf("%s|%s|%d|%d|%d", estimatorLabel(x.g), x.g.EvalSplit, x.g.Settled.Images, x.g.AIS.Steps, x.g.AIS.Chains)
	})
	for _, p := range pools {
		if len(p) < 2 {
			continue
		}
		var seeds []string
		var ds []float64
		var gs []summary
		for _, x := range p {
			seeds, ds, gs = append(seeds, strconv.FormatUint(x.g.Seed, 10)), append(ds, x.d), append(gs, x.g)
		}
		g := p[0].g
		fmt.Fprintf(w, "| **seeds %s**, mean ± sd | %d%s | %d × %d | %s images | **%s** | %.1f |\n", strings.Join(seeds, ", "),
			g.Settled.Images, splitNote(g), g.AIS.Steps, g.AIS.Chains, sampleSizes(gs), meanSD(ds), p[0].paper)
	}
}

// writeSettledTable lists the runs whose AIS ran on a random sample of the
// images (-ais-sample), one row each, with the estimate for all of them
// (vae.Settle) beside the paper's number, and where a setting has several
// seeds a row of their mean ± sd. Runs that differ only in the size of the
// AIS sample are one setting: each estimates the same mean over all the
// images, the sample size sets only its standard error.
func writeSettledTable(w io.Writer, runs []summary) {
	fmt.Fprintln(w, "| estimator | λ_p | seed | images | IW −log p(x) | AIS steps × chains | AIS sample | IW − AIS on the sample | settled −log p(x) | paper (read as a −ELBO) | AIS minutes |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|---|---|---|")
	groups := groupBy(runs, func(s summary) string {
		return fmt.Sprintf("%s|%s|%s|%d|%d|%d|%d", estimatorLabel(s), priorTemp(s), s.EvalSplit, s.Settled.Images, s.Settled.K, s.AIS.Steps, s.AIS.Chains)
	})
	for _, g := range groups {
		var seeds []string
		var iw, gap, est []float64
		for _, s := range g {
			st := s.Settled
			fmt.Fprintf(w, "| %s | %s | %d | %d%s | %.2f (K = %d) | %d × %d | %d images | %.2f ± %.2f | %.2f ± %.2f | %.1f | %.1f |\n",
				estimatorLabel(s), priorTemp(s), s.Seed, st.Images, splitNote(s), st.IW, st.K, s.AIS.Steps, s.AIS.Chains,
				st.Sample, st.Gap, st.GapSE, st.NegLogPx, st.NegLogPxSE, paperOf(s), s.AISSecs/60)
			seeds = append(seeds, strconv.FormatUint(s.Seed, 10))
			iw, gap, est = append(iw, st.IW), append(gap, st.Gap), append(est, st.NegLogPx)
		}
		if len(g) < 2 {
			continue
		}
		s := g[0]
		fmt.Fprintf(w, "| **%s, seeds %s** | %s | mean ± sd | %d%s | %s (K = %d) | %d × %d | %s images | %s | **%s** | %.1f | |\n",
			estimatorLabel(s), strings.Join(seeds, ", "), priorTemp(s), s.Settled.Images, splitNote(s), meanSD(iw), s.Settled.K,
			s.AIS.Steps, s.AIS.Chains, sampleSizes(g), meanSD(gap), meanSD(est), paperOf(s))
	}
}

func aisSteps(s summary) int {
	if s.AIS == nil {
		return 0
	}
	return s.AIS.Steps
}

// writeAISTable lists the runs with an AIS estimate (-ais-steps), one row
// each, beside the importance-weighted estimate on the same images.
func writeAISTable(w io.Writer, runs []summary) {
	fmt.Fprintln(w, "| estimator | λ_p | seed | images | IW −log p(x) | AIS steps × chains | AIS −log p(x) | log-weight sd | BDMC gap (simulated images) | AIS minutes |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|---|---|")
	for _, s := range runs {
		e, a := s.eval(), s.AIS
		gap := "–"
		if b := s.BDMC; b != nil {
			gap = fmt.Sprintf("%.3f ± %.3f (%d)", b.Gap, b.GapSE, b.Images)
		}
		fmt.Fprintf(w, "| %s | %s | %d | %d%s | %.2f (K = %d) | %d × %d | %.2f ± %.2f | %.3f | %s | %.1f |\n",
			estimatorLabel(s), priorTemp(s), s.Seed, a.Images, splitNote(s), e.NegLogPx, e.K, a.Steps, a.Chains,
			a.NegLogPx, a.NegLogPxSE, a.LogWeightSD, gap, s.AISSecs/60)
	}
}

// writeAISSeeds pools, for every AIS setting run with more than one seed,
// the seeds' estimates: mean ± sample sd over seeds of the IW and AIS
// estimates on the same images and of their difference. It prints nothing
// when every setting has one seed.
func writeAISSeeds(w io.Writer, runs []summary) {
	groups := groupBy(runs, func(s summary) string {
		return fmt.Sprintf("%s|%s|%s|%d|%d|%d|%d", estimatorLabel(s), priorTemp(s), s.EvalSplit, s.AIS.Images, s.eval().K, s.AIS.Steps, s.AIS.Chains)
	})
	header := false
	for _, g := range groups {
		if len(g) < 2 {
			continue
		}
		if !header {
			fmt.Fprintln(w)
			fmt.Fprintln(w, "| estimator | λ_p | seeds | images | IW −log p(x) | AIS steps × chains | AIS −log p(x) | IW − AIS |")
			fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|")
			header = true
		}
		var seeds []string
		var iw, ais, diff []float64
		for _, s := range g {
			seeds = append(seeds, strconv.FormatUint(s.Seed, 10))
			iw = append(iw, s.eval().NegLogPx)
			ais = append(ais, s.AIS.NegLogPx)
			diff = append(diff, s.eval().NegLogPx-s.AIS.NegLogPx)
		}
		s := g[0]
		fmt.Fprintf(w, "| %s | %s | %s | %d%s | %s (K = %d) | %d × %d | %s | %s |\n",
			estimatorLabel(s), priorTemp(s), strings.Join(seeds, ", "), s.AIS.Images, splitNote(s), meanSD(iw), s.eval().K,
			s.AIS.Steps, s.AIS.Chains, meanSD(ais), meanSD(diff))
	}
}

// estimatorRank orders estimators as the paper's table does (that of
// package vae's constants), unknown names last.
func estimatorRank(name string) int {
	e, err := vae.ParseEstimator(name)
	if err != nil {
		return math.MaxInt32
	}
	return int(e)
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// eval returns the run's final evaluation, on whichever split it used.
func (s summary) eval() *vae.Eval {
	if s.Test != nil {
		return s.Test
	}
	return s.ValEval
}

// priorTemp names the prior temperature of a run as the flag gives it.
func priorTemp(s summary) string {
	if s.Estimator == "gumbel-softmax" {
		return "–"
	}
	if s.Config.PriorTemp == 0 {
		return "τ"
	}
	return strconv.FormatFloat(s.Config.PriorTemp, 'g', -1, 64)
}

// estimatorLabel names a run's estimator, with "(float32)" for a run whose
// products were float32 (float64 runs, the default, carry no mark) and
// ", evaluated in P" for one whose final evaluation ran in another
// precision (-eval-precision).
func estimatorLabel(s summary) string {
	l := s.Estimator
	if s.Config.Precision != nn.Float64 {
		l += " (" + s.Config.Precision.String() + ")"
	}
	if s.EvalPrecision != "" {
		l += ", evaluated in " + s.EvalPrecision
	}
	return l
}

// groupBy cuts xs, sorted so that the elements of one setting are
// adjacent, into runs of equal key: the runs of one setting, which differ
// only in their seed.
func groupBy[T any](xs []T, key func(T) string) [][]T {
	var groups [][]T
	last := ""
	for i, x := range xs {
		k := key(x)
		if i == 0 || k != last {
			groups = append(groups, nil)
		}
		groups[len(groups)-1] = append(groups[len(groups)-1], x)
		last = k
	}
	return groups
}

// sampleSizes lists the distinct AIS sample sizes of runs, in order.
func sampleSizes(runs []summary) string {
	var sizes []string
	for _, s := range runs {
		if n := strconv.Itoa(s.Settled.Sample); !slices.Contains(sizes, n) {
			sizes = append(sizes, n)
		}
	}
	return strings.Join(sizes, ", ")
}

// splitNote marks the images of a run evaluated on another split than the
// test set (" validation"); "" for the test set.
func splitNote(s summary) string {
	if s.EvalSplit == "test" {
		return ""
	}
	return " " + s.EvalSplit
}

func writeTestTable(w io.Writer, runs []summary) {
	groups := groupBy(runs, func(s summary) string {
		return fmt.Sprintf("%s|%s|%d|%d|%d", estimatorLabel(s), priorTemp(s), s.Epochs, s.Test.K, s.Test.Images)
	})
	fmt.Fprintln(w, "| estimator | λ_p | seeds | epochs | test −ELBO | paper (read as a −ELBO) | test IW bound on −log p(x) | train time per run |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|")
	for _, g := range groups {
		var seeds []string
		var elbo, iw []float64
		for _, s := range g {
			seeds = append(seeds, strconv.FormatUint(s.Seed, 10))
			elbo = append(elbo, s.Test.NegELBO)
			iw = append(iw, s.Test.NegLogPx)
		}
		s := g[0]
		fmt.Fprintf(w, "| %s | %s | %s | %d | %s | %.1f | %s (K = %d, %d images) | %s |\n",
			estimatorLabel(s), priorTemp(s), strings.Join(seeds, ", "), s.Epochs, meanSD(elbo), paperOf(s), meanSD(iw),
			s.Test.K, s.Test.Images, minutesRange(g))
	}
}

func writeTuneTable(w io.Writer, runs []summary) {
	fmt.Fprintln(w, "| estimator | λ_p | seed | epochs | validation −ELBO, last epoch | validation IW −log p(x) |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|")
	for _, s := range runs {
		last := "–"
		if n := len(s.ValNegELBO); n > 0 && s.ValNegELBO[n-1] != nil {
			last = fmt.Sprintf("%.2f ± %.2f (%d images)", *s.ValNegELBO[n-1], *s.ValStdErr[n-1], s.ValImages)
		}
		e := s.ValEval
		fmt.Fprintf(w, "| %s | %s | %d | %d | %s | %.2f ± %.2f (K = %d, %d images) |\n",
			estimatorLabel(s), priorTemp(s), s.Seed, s.Epochs, last, e.NegLogPx, e.NegLogPxSE, e.K, e.Images)
	}
}

// meanSD formats the mean ± sample standard deviation of xs (only the
// value for one run).
func meanSD(xs []float64) string {
	if len(xs) == 1 {
		return fmt.Sprintf("%.2f", xs[0])
	}
	m, sd := stat.MeanStdDev(xs, nil)
	return fmt.Sprintf("%.2f ± %.2f", m, sd)
}

// minutesRange gives the range of the runs' training wall times. A resumed
// run's summary times only its last invocation, so such runs are marked.
func minutesRange(runs []summary) string {
	lo, hi, resumed := math.Inf(1), math.Inf(-1), false
	evalOnly := true
	for _, s := range runs {
		evalOnly = evalOnly && s.ResumedStep > 0 && s.ResumedStep == s.Steps
	}
	if evalOnly {
		return "evaluation of trained runs"
	}
	for _, s := range runs {
		lo, hi = min(lo, s.TrainSecs), max(hi, s.TrainSecs)
		resumed = resumed || s.ResumedStep > 0
	}
	out := fmt.Sprintf("%.0f–%.0f min", lo/60, hi/60)
	if lo/60 >= 0.5 && math.Round(lo/60) == math.Round(hi/60) {
		out = fmt.Sprintf("%.0f min", lo/60)
	}
	if resumed {
		out += " (last invocation of a resumed run)"
	}
	return out
}

func paperOf(s summary) float64 {
	e, err := vae.ParseEstimator(s.Estimator)
	if err != nil {
		return math.NaN()
	}
	return paperFor(e)
}
