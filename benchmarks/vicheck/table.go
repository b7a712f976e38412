package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"slices"
	"sort"
)

// group is the key rows are summarised by.
type group struct {
	Family string
	N      int
	Level  float64
}

func groupsOf[T any](rows []T, key func(T) group) ([]group, map[group][]T) {
	by := map[group][]T{}
	var order []group
	for _, r := range rows {
		k := key(r)
		if _, ok := by[k]; !ok {
			order = append(order, k)
		}
		by[k] = append(by[k], r)
	}
	return order, by
}

func median(x []float64) float64 {
	if len(x) == 0 {
		return 0
	}
	s := slices.Clone(x)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func maxOf(x []float64) float64 {
	m := 0.0
	for _, v := range x {
		m = max(m, v)
	}
	return m
}

// smallSummary is the goal of the small check over all rows.
type smallSummary struct {
	Sets, Right, PlainRight, Silent, PlainSilent int
	CalOK                                        int     // TVCal <= 0.05
	CalFrac, CalFracMax, CalThird                float64 // median and largest WallCal / WallMCMC, share at most 1/3
	SpeedUp                                      float64 // median WallMCMC / WallVI
}

func summarizeSmall(rows []smallRow) smallSummary {
	var s smallSummary
	var frac, speed []float64
	for _, r := range rows {
		s.Sets++
		if r.Right {
			s.Right++
		} else if !r.Warned {
			s.Silent++
		}
		if r.PlainRight {
			s.PlainRight++
		} else if !r.PlainWarned {
			s.PlainSilent++
		}
		if r.TVCal <= 0.05 {
			s.CalOK++
		}
		frac = append(frac, r.WallCal/r.WallMCMC)
		speed = append(speed, r.WallMCMC/r.WallVI)
	}
	s.CalFrac, s.CalFracMax, s.SpeedUp = median(frac), maxOf(frac), median(speed)
	for _, f := range frac {
		if f <= 1.0/3 {
			s.CalThird++
		}
	}
	s.CalThird /= float64(len(frac))
	return s
}

func printTables(w io.Writer, dir string) error {
	small, errS := readRows[smallRow](filepath.Join(dir, "small.jsonl"))
	large, errL := readRows[largeRow](filepath.Join(dir, "large.jsonl"))
	switch {
	case errS != nil && !errors.Is(errS, fs.ErrNotExist):
		return errS
	case errL != nil && !errors.Is(errL, fs.ErrNotExist):
		return errL
	case errS != nil && errL != nil:
		return fmt.Errorf("no results in %s (small.jsonl, large.jsonl): run the check first", dir)
	}
	if errS == nil {
		writeSmall(w, small)
		fmt.Fprintln(w)
	}
	if errL == nil {
		writeLarge(w, large)
	}
	return nil
}

func writeSmall(w io.Writer, rows []smallRow) {
	fmt.Fprintln(w, "### Against exact enumeration (n ≤ 8)")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Right: VI's answer has at least 0.9 times the exact posterior probability of the most probable permutation. Silent: wrong without a warning. TV: the largest row total-variation distance to the exact marginals (median over data sets / worst). Times in seconds, medians.")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| family | n | level | data sets | plain VI right | VI right | silent (plain → checked) | TV plain VI | TV calibrated (med / max) | TV MCMC (med / max) | s plain VI | s VI | s MCMC | s calibration |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
	order, by := groupsOf(rows, func(r smallRow) group { return group{r.Family, r.N, r.Level} })
	for _, g := range order {
		rs := by[g]
		s := summarizeSmall(rs)
		var tvVI, tvCal, tvMC, wp, wv, wm, wc []float64
		for _, r := range rs {
			tvVI = append(tvVI, r.TVVI)
			tvCal = append(tvCal, r.TVCal)
			tvMC = append(tvMC, r.TVMCMC)
			wp = append(wp, r.WallPlain)
			wv = append(wv, r.WallVI)
			wm = append(wm, r.WallMCMC)
			wc = append(wc, r.WallCal)
		}
		fmt.Fprintf(w, "| %s | %d | %s | %d | %d | %d | %d → %d | %.2f | %.3f / %.3f | %.3f / %.3f | %.2f | %.2f | %.2f | %.2f |\n",
			g.Family, g.N, fmtG(g.Level), s.Sets, s.PlainRight, s.Right, s.PlainSilent, s.Silent,
			median(tvVI), median(tvCal), maxOf(tvCal), median(tvMC), maxOf(tvMC),
			median(wp), median(wv), median(wm), median(wc))
	}
	s := summarizeSmall(rows)
	fmt.Fprintln(w)
	fmt.Fprintf(w, "All %d data sets: VI right in %d (%.0f%%; plain VI %d, %.0f%%), wrong without a warning in %d (plain VI %d). Calibrated marginals within TV 0.05 of exact in %d (%.0f%%), at a median %.2f of default MCMC's wall time (at most a third in %.0f%% of the data sets, at most %.2f); default MCMC takes a median %.2f times VI's.\n",
		s.Sets, s.Right, 100*float64(s.Right)/float64(s.Sets), s.PlainRight, 100*float64(s.PlainRight)/float64(s.Sets),
		s.Silent, s.PlainSilent, s.CalOK, 100*float64(s.CalOK)/float64(s.Sets), s.CalFrac, 100*s.CalThird, s.CalFracMax, s.SpeedUp)
}

func writeLarge(w io.Writer, rows []largeRow) {
	fmt.Fprintln(w, "### Against long MCMC (n = 20, 40)")
	fmt.Fprintln(w)
	fmt.Fprintf(w, "Within: VI's answer is at most 1 nat below the most probable state that long MCMC runs visit (4 chains × %d sweeps, 8 temperatures), both scored by the model's exact log joint. Silent: outside without a warning. Times in seconds, medians.\n", longBurn+longDraws)
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| family | n | level | data sets | plain VI within | VI within | silent (plain → checked) | warned | J VI − J MCMC (med / min) | s plain VI | s VI | s MCMC (default) | MCMC / VI |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|---|---|---|---|---|")
	order, by := groupsOf(rows, func(r largeRow) group { return group{r.Family, r.N, r.Level} })
	total, within, silent, plainSilent := 0, 0, 0, 0
	for _, g := range order {
		rs := by[g]
		var pw, vw, ps, vs, warned int
		var diff, wp, wv, wm, ratio []float64
		for _, r := range rs {
			if r.PlainWithin {
				pw++
			} else if !r.PlainWarned {
				ps++
			}
			if r.Within {
				vw++
			} else if !r.Warned {
				vs++
			}
			if r.Warned {
				warned++
			}
			diff = append(diff, r.JVI-r.JMCMC)
			wp = append(wp, r.WallPlain)
			wv = append(wv, r.WallVI)
			wm = append(wm, r.WallMCMC)
			ratio = append(ratio, r.WallMCMC/r.WallVI)
		}
		total += len(rs)
		within += vw
		silent += vs
		plainSilent += ps
		fmt.Fprintf(w, "| %s | %d | %s | %d | %d | %d | %d → %d | %d | %+.2f / %+.2f | %.2f | %.2f | %.2f | %.1f |\n",
			g.Family, g.N, fmtG(g.Level), len(rs), pw, vw, ps, vs, warned, median(diff), slices.Min(diff),
			median(wp), median(wv), median(wm), median(ratio))
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "All %d data sets: VI within 1 nat of long MCMC's best in %d, outside without a warning in %d (plain VI: %d).\n", total, within, silent, plainSilent)
}
