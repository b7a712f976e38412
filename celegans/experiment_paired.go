package celegans

import (
	"fmt"
	"math"
	"strings"

	"gonum.org/v1/gonum/stat/distuv"
)

// PairedMarkdown compares two experiments run on the same grid, s and base
// (for example the tables with polishing on and off), run by run: for every
// cell and method it pairs the two runs of each seed, which share the
// problem (connectome, simulated worms, masks), and reports the mean of the
// differences s − base in accuracy, over all neurons and over the unknown
// ones, with the half-width of its 95% confidence interval from the
// Student t distribution of the paired differences. An entry whose interval
// excludes 0, marked *, moved beyond the seed-to-seed noise of the
// difference. Seeds that only one of the two ran are left out, and an
// entry with fewer than two pairs has no interval. label and baseLabel name
// the two in the text.
//
// It is an error if the two grids differ in connectome, cells or methods.
func (s *Summary) PairedMarkdown(base *Summary, label, baseLabel string) (string, error) {
	if s.Connectome != base.Connectome || s.Neurons != base.Neurons || s.T != base.T {
		return "", fmt.Errorf("celegans: PairedMarkdown: the experiments ran on different problems (%s, N = %d, T = %d against %s, N = %d, T = %d)",
			s.Connectome, s.Neurons, s.T, base.Connectome, base.Neurons, base.T)
	}
	if len(s.Cells) != len(base.Cells) {
		return "", fmt.Errorf("celegans: PairedMarkdown: %d cells against %d", len(s.Cells), len(base.Cells))
	}
	for i, c := range s.Cells {
		if c.Key != base.Cells[i].Key {
			return "", fmt.Errorf("celegans: PairedMarkdown: cell %d is %s against %s", i, c.Key, base.Cells[i].Key)
		}
	}
	if fmt.Sprint(s.Methods) != fmt.Sprint(base.Methods) {
		return "", fmt.Errorf("celegans: PairedMarkdown: methods %v against %v", s.Methods, base.Methods)
	}
	type key struct {
		cell   string
		method Method
		seed   int
	}
	baseRuns := make(map[key]*Record, len(base.records))
	for _, r := range base.records {
		baseRuns[key{r.Cell, r.Method, r.Seed}] = r
	}
	// diffs[cell][method] are the paired differences, all neurons and unknown.
	type pairs struct{ all, unknown []float64 }
	diffs := make(map[string]map[Method]*pairs)
	total, marked := 0, 0
	for _, r := range s.records {
		b := baseRuns[key{r.Cell, r.Method, r.Seed}]
		if b == nil {
			continue
		}
		if diffs[r.Cell] == nil {
			diffs[r.Cell] = make(map[Method]*pairs)
		}
		p := diffs[r.Cell][r.Method]
		if p == nil {
			p = new(pairs)
			diffs[r.Cell][r.Method] = p
		}
		p.all = append(p.all, r.Accuracy-b.Accuracy)
		p.unknown = append(p.unknown, r.AccuracyUnknown-b.AccuracyUnknown)
	}
	// cellText formats the mean difference and its interval, counting the
	// entries and the marked ones.
	cellText := func(d []float64) string {
		if len(d) == 0 {
			return "–"
		}
		mean, sd := meanSD(d)
		if len(d) < 2 {
			return fmt.Sprintf("%+.3f [n=1]", mean)
		}
		total++
		half := distuv.StudentsT{Mu: 0, Sigma: 1, Nu: float64(len(d) - 1)}.Quantile(0.975) * sd / math.Sqrt(float64(len(d)))
		mark := ""
		if math.Abs(mean) > half {
			mark = " *"
			marked++
		}
		out := fmt.Sprintf("%+.3f ± %.3f%s", mean, half, mark)
		if len(d) < s.Seeds {
			out += fmt.Sprintf(" [n=%d]", len(d))
		}
		return out
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Paired differences %s − %s in the fraction of neurons identified correctly: for every cell and method, the mean over seeds of the difference between the two runs of a seed (the same worms and masks), ± the half-width of its 95%% confidence interval (Student t, seeds − 1 degrees of freedom); * marks an interval that excludes 0.\n", label, baseLabel)
	ids, by := s.tables()
	for _, id := range ids {
		for _, unknown := range []bool{false, true} {
			what := "all neurons"
			if unknown {
				what = "the unknown neurons"
			}
			fmt.Fprintf(&b, "\n### %s: %s − %s, accuracy over %s\n\n", tableTitle(id), label, baseLabel, what)
			s.writeTable(&b, by[id], func(e Entry) string {
				p := diffs[e.Cell][e.Method]
				if p == nil {
					return "–"
				}
				if unknown {
					return cellText(p.unknown)
				}
				return cellText(p.all)
			}, false)
		}
	}
	fmt.Fprintf(&b, "\n%d of %d intervals exclude 0. With independent entries and no true difference, about %.1f would by chance (5%%); the entries of one method are not independent across the two accuracies.\n",
		marked, total, 0.05*float64(total))
	return b.String(), nil
}
