// Reporting of the experiment runner: the Summary of a grid, its markdown
// tables in the layout of the seed paper, and the files written to OutDir.

package celegans

import (
	"cmp"
	"encoding/json"
	"fmt"
	"math"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"gonum.org/v1/gonum/stat"
	"gonum.org/v1/plot"

	"github.com/permlab/permlab/compare"
	"github.com/permlab/permlab/internal/atomicfile"
)

// Summary aggregates the runs of an Experiment over seeds.
type Summary struct {
	Connectome string        `json:"connectome"`
	Neurons    int           `json:"neurons"`
	Edges      int           `json:"edges"`
	T          int           `json:"T"`
	Seeds      int           `json:"seeds"`
	SeedStart  int           `json:"seed_start"`
	Budget     time.Duration `json:"budget_ns"` // per run, the same for every method
	Settings   Settings      `json:"settings"`
	Methods    []Method      `json:"methods"`
	Cells      []CellInfo    `json:"cells"`
	Entries    []Entry       `json:"entries"`    // one per (cell, method) with at least one run, cells then methods
	Failures   []*Record     `json:"failures"`   // failed runs not yet redone
	Missing    int           `json:"missing"`    // tasks of the grid neither done nor failed
	Duplicates int           `json:"duplicates"` // extra successful records of a task (a shard run twice), ignored
	Figures    []string      `json:"figures"`    // PNG files written to OutDir

	records []*Record // successful runs of the grid, for figures
}

// CellInfo is a Cell with its width resolved on the run's connectome.
type CellInfo struct {
	Key            string  `json:"key"`
	Table          int     `json:"table"`
	Label          string  `json:"label"`
	Header         string  `json:"header"`
	Worms          int     `json:"worms"`
	Known          int     `json:"known"`
	Nu             float64 `json:"nu"`
	MeanCandidates float64 `json:"mean_candidates"` // MeanCandidates(Nu), no known neurons
	Target         float64 `json:"target_candidates,omitempty"`
	// Configs is the fingerprint of each method's runs on the cell, by
	// which Report picks the records of this grid from the results files.
	Configs map[Method]string `json:"configs,omitempty"`
}

// Entry is the mean and standard deviation over seeds of one method on one
// cell. SDs are the sample standard deviations (0 with a single run).
type Entry struct {
	Cell              string   `json:"cell"`
	Method            Method   `json:"method"`
	Runs              int      `json:"runs"`
	Accuracy          float64  `json:"accuracy"`
	AccuracySD        float64  `json:"accuracy_sd"`
	AccuracyUnknown   float64  `json:"accuracy_unknown"`
	AccuracyUnknownSD float64  `json:"accuracy_unknown_sd"`
	ElapsedSec        float64  `json:"elapsed_s"`  // mean wall time per run
	Iterations        float64  `json:"iterations"` // mean VI steps or MCMC sweeps per run
	Paper             *float64 `json:"paper,omitempty"`

	// MCMC: the worst (largest) split R̂ and the smallest ESS over the
	// runs that report them.
	RHatMax *float64 `json:"rhat_max,omitempty"`
	ESSMin  *float64 `json:"ess_min,omitempty"`

	// Runs whose records carry the log-likelihood gap to the truth
	// (Record.LogLikGap), its median over them, and how many of them have
	// a positive gap: estimates the data favour over the true identities.
	GapRuns     int      `json:"gap_runs,omitempty"`
	GapMedian   *float64 `json:"gap_median,omitempty"`
	GapPositive int      `json:"gap_positive,omitempty"`

	// With accuracy traces and a paper value: how many runs reached the
	// paper's accuracy (over all neurons) and the median time at which
	// they first did.
	Traced       int      `json:"traced,omitempty"`
	Reached      int      `json:"reached,omitempty"`
	ReachMedianS *float64 `json:"reach_median_s,omitempty"`
}

// Entry returns the entry of method m on the cell with the given key.
func (s *Summary) Entry(cell string, m Method) (Entry, bool) {
	for _, e := range s.Entries {
		if e.Cell == cell && e.Method == m {
			return e, true
		}
	}
	return Entry{}, false
}

// Records returns the successful runs of the grid, cells then seeds then
// methods in the experiment's order.
func (s *Summary) Records() []*Record { return s.records }

func (e *Experiment) summarize(cells []plannedCell, done map[compare.Task]*Record, failures []*Record) *Summary {
	return summarize(&Summary{
		Connectome: e.ConnectomeName, Neurons: e.Connectome.N(), Edges: e.Connectome.Edges(),
		T: e.T, Seeds: e.Seeds, SeedStart: e.SeedStart, Budget: e.Settings.Budget, Settings: e.Settings,
		Methods: append([]Method(nil), e.Methods...),
	}, cells, done, failures)
}

// summarize fills s, whose header fields (connectome, seeds, settings,
// methods) are set, with the entries of the grid's cells from the records.
func summarize(s *Summary, cells []plannedCell, done map[compare.Task]*Record, failures []*Record) *Summary {
	seeds := make([]int, s.Seeds)
	for i := range seeds {
		seeds[i] = s.SeedStart + i
	}
	inGrid := make(map[compare.Task]bool)
	for _, c := range cells {
		s.Cells = append(s.Cells, CellInfo{
			Key: c.Key(), Table: c.Table, Label: c.Label, Header: c.title(),
			Worms: c.Worms, Known: c.Known, Nu: c.nu, MeanCandidates: c.mean, Target: c.Candidates,
			Configs: c.config,
		})
		for _, m := range s.Methods {
			var recs []*Record
			for _, seed := range seeds {
				t := taskOf(c.Key(), seed, m)
				inGrid[t] = true
				if r := done[t]; r != nil {
					recs = append(recs, r)
				}
			}
			if len(recs) == 0 {
				continue
			}
			s.Entries = append(s.Entries, entryOf(c.Cell, m, recs))
		}
	}
	for _, c := range cells {
		for _, seed := range seeds {
			for _, m := range s.Methods {
				if r := done[taskOf(c.Key(), seed, m)]; r != nil {
					s.records = append(s.records, r)
				}
			}
		}
	}
	failed := make(map[compare.Task]bool)
	for _, r := range failures {
		if inGrid[r.task()] {
			s.Failures = append(s.Failures, r)
			failed[r.task()] = true
		}
	}
	for t := range inGrid {
		if done[t] == nil && !failed[t] {
			s.Missing++
		}
	}
	if s.Failures == nil {
		s.Failures = []*Record{}
	}
	return s
}

func entryOf(c Cell, m Method, recs []*Record) Entry {
	acc := make([]float64, len(recs))
	unk := make([]float64, len(recs))
	var sec, it float64
	for i, r := range recs {
		acc[i], unk[i] = r.Accuracy, r.AccuracyUnknown
		sec += r.ElapsedSec
		it += float64(r.Iterations)
	}
	n := float64(len(recs))
	e := Entry{Cell: c.Key(), Method: m, Runs: len(recs), ElapsedSec: sec / n, Iterations: it / n}
	e.Accuracy, e.AccuracySD = meanSD(acc)
	e.AccuracyUnknown, e.AccuracyUnknownSD = meanSD(unk)
	var reach []float64
	for _, r := range recs {
		if r.RHat > 0 && (e.RHatMax == nil || r.RHat > *e.RHatMax) {
			v := r.RHat
			e.RHatMax = &v
		}
		if r.ESS > 0 && (e.ESSMin == nil || r.ESS < *e.ESSMin) {
			v := r.ESS
			e.ESSMin = &v
		}
	}
	var gaps []float64
	for _, r := range recs {
		if r.LogLikGap == nil {
			continue
		}
		gaps = append(gaps, *r.LogLikGap)
		if *r.LogLikGap > 0 {
			e.GapPositive++
		}
	}
	if e.GapRuns = len(gaps); e.GapRuns > 0 {
		sort.Float64s(gaps)
		med := stat.Quantile(0.5, stat.Empirical, gaps, nil)
		e.GapMedian = &med
	}
	if v, ok := c.Paper[m]; ok {
		e.Paper = &v
		for _, r := range recs {
			if len(r.Trace) == 0 {
				continue
			}
			e.Traced++
			if t, ok := firstReach(r.Trace, v); ok {
				reach = append(reach, t)
			}
		}
	}
	if e.Reached = len(reach); e.Reached > 0 {
		sort.Float64s(reach)
		med := stat.Quantile(0.5, stat.Empirical, reach, nil)
		e.ReachMedianS = &med
	}
	return e
}

// firstReach returns the time of the first trace point whose accuracy over
// all neurons is at least target.
func firstReach(trace []TraceRecord, target float64) (float64, bool) {
	for _, tp := range trace {
		if tp.Accuracy >= target {
			return tp.Sec, true
		}
	}
	return 0, false
}

func meanSD(x []float64) (mean, sd float64) {
	if len(x) == 1 {
		return x[0], 0
	}
	return stat.MeanStdDev(x, nil)
}

// methodTitle is the row name of a method in the paper's tables.
func methodTitle(m Method) string {
	switch m {
	case MCMC:
		return "MCMC"
	case Rounding:
		return "Linderman et al. (rounding)"
	case GumbelSinkhorn:
		return "Gumbel-Sinkhorn"
	case GumbelSinkhornNoReg:
		return "Gumbel-Sinkhorn, no reg."
	}
	return string(m)
}

func tableTitle(t int) string {
	switch t {
	case 3:
		return "Table 3 (4 worms; known neurons and candidate width)"
	case 7:
		return "Table 7 (25 known neurons; mean candidates and worms)"
	}
	return "Other cells"
}

// tables returns the table ids of the summary's cells in order of first
// appearance, and the cells of each.
func (s *Summary) tables() ([]int, map[int][]CellInfo) {
	var ids []int
	by := make(map[int][]CellInfo)
	for _, c := range s.Cells {
		if _, ok := by[c.Table]; !ok {
			ids = append(ids, c.Table)
		}
		by[c.Table] = append(by[c.Table], c)
	}
	return ids, by
}

// polished returns the number of runs whose record says how much polishing
// gained, and their mean gain.
func (s *Summary) polished() (n int, mean float64) {
	for _, r := range s.records {
		if r.PolishGain != nil {
			n++
			mean += *r.PolishGain
		}
	}
	if n > 0 {
		mean /= float64(n)
	}
	return n, mean
}

// Markdown returns the summary as markdown: for each table of the seed paper
// in the grid, the accuracy over all neurons and over the unknown neurons,
// methods in rows and cells in columns, each entry "mean ± sd (paper)", then
// the mean wall time and iterations per run, the cells' parameters and the
// failed runs.
func (s *Summary) Markdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "Connectome: %s, %d neurons, %d edges; T = %d; %s.\n", s.Connectome, s.Neurons, s.Edges, s.T, seedRange(s.SeedStart, s.Seeds))
	fmt.Fprintf(&b, "Every method gets the same wall-clock budget per run: %s (MCMC's is not smaller than VI's), "+
		"and stops earlier after %d VI steps or %d MCMC sweeps. Runs are sequential.\n", budgetText(s.Budget), s.Settings.Steps, s.Settings.Sweeps)
	estimate := "the matching of the posterior mean"
	if s.Settings.Draws > 0 {
		// Results of the engines (Settings.Draws is theirs; records of the
		// methods' own loops, which matched the posterior mean, predate it).
		estimate = fmt.Sprintf("the masked matching of the assignment frequencies of posterior draws "+
			"(%d hard draws of the fitted guide for the variational methods; for MCMC, the recorded states of the chains that its estimator %q keeps)",
			s.Settings.Draws, cmp.Or(s.Settings.Estimator, EstimateHalf))
	}
	fmt.Fprintf(&b, "Entries: mean ± sd over seeds of the fraction of neurons identified correctly, from %s; "+
		"(paper value) from the seed paper, which does not say whether known neurons are counted.\n", estimate)
	if n, mean := s.polished(); n > 0 {
		fmt.Fprintf(&b, "Polished: %d of %d runs had their estimate polished by a local search under the model (10%% of the budget) and kept where the collapsed likelihood rose; it rose by %.1f nats on average.\n",
			n, len(s.records), mean)
	}
	ids, by := s.tables()
	for _, id := range ids {
		cells := by[id]
		for _, unknown := range []bool{false, true} {
			what := "accuracy over all neurons"
			if unknown {
				what = "accuracy over the unknown neurons"
			}
			fmt.Fprintf(&b, "\n### %s: %s\n\n", tableTitle(id), what)
			s.writeTable(&b, cells, func(e Entry) string {
				v, sd := e.Accuracy, e.AccuracySD
				if unknown {
					v, sd = e.AccuracyUnknown, e.AccuracyUnknownSD
				}
				out := fmt.Sprintf("%.3f", v)
				if e.Runs > 1 {
					out += fmt.Sprintf(" ± %.3f", sd)
				}
				if e.Runs < s.Seeds {
					out += fmt.Sprintf(" [n=%d]", e.Runs)
				}
				return out
			}, true)
		}
		fmt.Fprintf(&b, "\n### %s: mean wall time (s) / iterations per run\n\n", tableTitle(id))
		s.writeTable(&b, cells, func(e Entry) string {
			return fmt.Sprintf("%.1f / %.0f", e.ElapsedSec, e.Iterations)
		}, false)
		if s.has(cells, func(e Entry) bool { return e.RHatMax != nil }) {
			fmt.Fprintf(&b, "\n### %s: MCMC diagnostics, worst split R̂ / smallest ESS of the log likelihood over seeds\n\n", tableTitle(id))
			s.writeTable(&b, cells, func(e Entry) string {
				if e.RHatMax == nil || e.ESSMin == nil {
					return "–"
				}
				return fmt.Sprintf("%.2f / %.0f", *e.RHatMax, *e.ESSMin)
			}, false)
		}
		if s.has(cells, func(e Entry) bool { return e.GapRuns > 0 }) {
			fmt.Fprintf(&b, "\n### %s: log p(Y | estimate) − log p(Y | truth), W integrated out: median over seeds (runs where the data favour the estimate over the truth / runs)\n\n", tableTitle(id))
			s.writeTable(&b, cells, func(e Entry) string {
				if e.GapMedian == nil {
					return "–"
				}
				return fmt.Sprintf("%+.1f (%d/%d)", *e.GapMedian, e.GapPositive, e.GapRuns)
			}, false)
		}
		if s.has(cells, func(e Entry) bool { return e.Traced > 0 }) {
			fmt.Fprintf(&b, "\n### %s: median time (s) to first reach the paper's accuracy (all neurons), runs that reached it / runs traced\n\n", tableTitle(id))
			s.writeTable(&b, cells, func(e Entry) string {
				if e.Traced == 0 {
					return "–"
				}
				if e.ReachMedianS == nil {
					return fmt.Sprintf("never (0/%d)", e.Traced)
				}
				return fmt.Sprintf("%.1f (%d/%d)", *e.ReachMedianS, e.Reached, e.Traced)
			}, false)
		}
	}

	b.WriteString("\nCells:\n")
	for _, c := range s.Cells {
		fmt.Fprintf(&b, "- %s (%s): %d worm(s), %d known, nu = %.4g, %.1f mean candidates", c.Key, c.Header, c.Worms, c.Known, c.Nu, c.MeanCandidates)
		if c.Target > 0 {
			fmt.Fprintf(&b, " (target %g)", c.Target)
		}
		b.WriteString("\n")
	}
	if len(s.Failures) > 0 {
		b.WriteString("\nFailed runs (tried again on the next run):\n")
		for _, r := range s.Failures {
			fmt.Fprintf(&b, "- %s: %s\n", r.task(), r.Error)
		}
	}
	if s.Missing > 0 {
		fmt.Fprintf(&b, "\n%d runs of the grid are not done yet; run again with the same output directory to finish them.\n", s.Missing)
	}
	return b.String()
}

// has reports whether some entry of the cells satisfies f.
func (s *Summary) has(cells []CellInfo, f func(Entry) bool) bool {
	for _, c := range cells {
		for _, m := range s.Methods {
			if e, ok := s.Entry(c.Key, m); ok && f(e) {
				return true
			}
		}
	}
	return false
}

func (s *Summary) writeTable(b *strings.Builder, cells []CellInfo, format func(Entry) string, paper bool) {
	b.WriteString("| method |")
	for _, c := range cells {
		fmt.Fprintf(b, " %s |", c.Header)
	}
	b.WriteString("\n|---|")
	for range cells {
		b.WriteString("---|")
	}
	b.WriteString("\n")
	failed := make(map[compare.Task]bool)
	for _, r := range s.Failures {
		failed[taskOf(r.Cell, 0, r.Method)] = true
	}
	for _, m := range s.Methods {
		fmt.Fprintf(b, "| %s |", methodTitle(m))
		for _, c := range cells {
			e, ok := s.Entry(c.Key, m)
			var cell string
			switch {
			case ok:
				cell = format(e)
			case failed[taskOf(c.Key, 0, m)]:
				cell = "failed"
			default:
				cell = "–"
			}
			if paper {
				if v, ok := paperValue(c, m); ok {
					cell += fmt.Sprintf(" (%s)", strings.TrimPrefix(fmt.Sprintf("%.2f", v), "0"))
				}
			}
			fmt.Fprintf(b, " %s |", cell)
		}
		b.WriteString("\n")
	}
}

// paperValue returns the published accuracy of m on the cell of the seed
// paper's tables with the given info.
func paperValue(c CellInfo, m Method) (float64, bool) {
	var pool []Cell
	switch c.Table {
	case 3:
		pool = Table3Cells()
	case 7:
		pool = Table7Cells()
	default:
		return 0, false
	}
	for _, pc := range pool {
		if pc.Label == c.Label {
			v, ok := pc.Paper[m]
			return v, ok
		}
	}
	return 0, false
}

// writeReports writes summary.json, report.md and the figures to OutDir.
func (e *Experiment) writeReports(s *Summary) error {
	type figure struct {
		name string
		make func() (*plot.Plot, error)
		w    float64
	}
	var figs []figure
	if len(s.Entries) > 0 {
		ids, by := s.tables()
		for _, id := range ids {
			figs = append(figs, figure{accuracyFigureName(id), func() (*plot.Plot, error) { return AccuracyFigure(s, id) }, math.Max(6, 2+1.1*float64(len(by[id])))})
		}
		cell := s.Cells[0].Key
		if e.TraceCell != "" {
			cell = resolveCellKey(s, e.TraceCell)
		}
		for _, r := range s.records {
			if r.Cell == cell {
				figs = append(figs, figure{traceFigureName(cell), func() (*plot.Plot, error) { return TraceFigure(s, cell) }, 7})
				break
			}
		}
	}
	s.Figures = s.Figures[:0]
	for _, f := range figs {
		s.Figures = append(s.Figures, f.name)
	}

	js, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return fmt.Errorf("celegans: Experiment: summary: %w", err)
	}
	if err := writeFileAtomic(filepath.Join(e.OutDir, SummaryFile), append(js, '\n')); err != nil {
		return err
	}
	if err := writeFileAtomic(filepath.Join(e.OutDir, ReportFile), []byte(s.Markdown())); err != nil {
		return err
	}
	for _, f := range figs {
		p, err := f.make()
		if err != nil {
			return err
		}
		if err := savePlot(p, f.w, 4.5, filepath.Join(e.OutDir, f.name)); err != nil {
			return err
		}
	}
	return nil
}

func accuracyFigureName(table int) string {
	if table == 0 {
		return "accuracy.png"
	}
	return fmt.Sprintf("accuracy_table%d.png", table)
}

func traceFigureName(cell string) string {
	r := strings.NewReplacer("/", "_", "%", "pct", " ", "_")
	return "trace_" + r.Replace(cell) + ".png"
}

// resolveCellKey maps a label to the key of the first cell with that label.
func resolveCellKey(s *Summary, cell string) string {
	for _, c := range s.Cells {
		if c.Key == cell {
			return cell
		}
	}
	for _, c := range s.Cells {
		if c.Label == cell {
			return c.Key
		}
	}
	return cell
}

func writeFileAtomic(path string, data []byte) error {
	if err := atomicfile.WriteFile(path, data); err != nil {
		return fmt.Errorf("celegans: Experiment: %w", err)
	}
	return nil
}

// seedRange describes n seeds from start: "5 seed(s)" for the usual seeds
// 1-5, with the range when they start elsewhere.
func seedRange(start, n int) string {
	if start <= 1 {
		return fmt.Sprintf("%d seed(s)", n)
	}
	return fmt.Sprintf("%d seed(s), %d-%d", n, start, start+n-1)
}
