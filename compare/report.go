package compare

import (
	"fmt"
	"math"
	"strings"
)

// Stat is the mean and sample standard deviation of a metric over the seeds
// that have it.
type Stat struct {
	Mean, SD float64
	N        int
}

// Stat returns the metric over the seeds of one method on one problem.
// Records without the metric, or with a NaN, are left out.
func (s *Summary) Stat(problem, method, metric string) Stat {
	var xs []float64
	for _, r := range s.Records {
		if r.Problem != problem || r.Method != method {
			continue
		}
		if v, ok := r.Metrics[metric]; ok && !math.IsNaN(v) {
			xs = append(xs, v)
		}
	}
	return meanSD(xs)
}

func meanSD(xs []float64) Stat {
	st := Stat{N: len(xs), Mean: math.NaN(), SD: math.NaN()}
	if len(xs) == 0 {
		return st
	}
	m := 0.0
	for _, x := range xs {
		m += x
	}
	m /= float64(len(xs))
	st.Mean = m
	if len(xs) > 1 {
		v := 0.0
		for _, x := range xs {
			v += (x - m) * (x - m)
		}
		st.SD = math.Sqrt(v / float64(len(xs)-1))
	}
	return st
}

// Table returns a markdown table of one metric: a row per method, a column
// per problem, each entry "mean ± sd" over the seeds, with the number of
// seeds in brackets when some are missing, and "–" when none ran. digits
// sets the decimals.
func (s *Summary) Table(metric string, digits int) string {
	g := s.Grid
	var b strings.Builder
	b.WriteString("| method |")
	for _, p := range g.Problems {
		fmt.Fprintf(&b, " %s |", p)
	}
	b.WriteString("\n|---|")
	b.WriteString(strings.Repeat("---|", len(g.Problems)))
	b.WriteString("\n")
	for _, m := range g.Methods {
		fmt.Fprintf(&b, "| %s |", m)
		for _, p := range g.Problems {
			st := s.Stat(p, m, metric)
			switch {
			case st.N == 0:
				b.WriteString(" – |")
			case st.N == 1:
				fmt.Fprintf(&b, " %.*f |", digits, st.Mean)
			default:
				fmt.Fprintf(&b, " %.*f ± %.*f |", digits, st.Mean, digits, st.SD)
			}
			if st.N > 0 && st.N < len(g.Seeds) {
				s := b.String()
				b.Reset()
				b.WriteString(strings.TrimSuffix(s, " |"))
				fmt.Fprintf(&b, " (%d of %d) |", st.N, len(g.Seeds))
			}
		}
		b.WriteString("\n")
	}
	return b.String()
}

// Status returns a one-paragraph account of the summary: runs kept,
// missing, failed, duplicated and stale.
func (s *Summary) Status() string {
	total := len(s.Grid.Problems) * len(s.Grid.Seeds) * len(s.Grid.Methods)
	msg := fmt.Sprintf("%d of %d runs done", len(s.Records), total)
	if len(s.Failures) > 0 {
		msg += fmt.Sprintf(", %d failed (run again to retry)", len(s.Failures))
	}
	if n := len(s.Missing) - len(s.Failures); n > 0 {
		msg += fmt.Sprintf(", %d not run yet", n)
	}
	if s.Duplicates > 0 {
		msg += fmt.Sprintf(", %d duplicate records ignored (the first finished is kept)", s.Duplicates)
	}
	if s.Stale > 0 {
		msg += fmt.Sprintf(", %d records of another configuration ignored", s.Stale)
	}
	return msg + "."
}
