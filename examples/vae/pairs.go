package main

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"

	"gonum.org/v1/gonum/stat"
)

// reportPairs prints, as Markdown, how the runs under dir differ from the
// runs under against that share their estimator, prior temperature, seed,
// epochs and final evaluation (the same images and K): a float32 run
// against the float64 run of its seed, say. Runs with AIS are left out.
// The first table gives the differences of the final evaluation seed by
// seed and their mean ± standard error (the pairs' sample sd over √n); the
// second, how soon the paired runs part: the mean absolute difference of
// their training −ELBO at epochs 1, 5 and the last, beside the sd over
// seeds of the runs against at the same epochs. A run under dir without a
// partner is an error.
func reportPairs(dir, against string, w io.Writer) error {
	runs, err := readSummaries(dir)
	if err != nil {
		return err
	}
	others, err := readSummaries(against)
	if err != nil {
		return err
	}
	type pair struct{ r, a summary }
	var pairs []pair
	for _, r := range runs {
		if r.AIS != nil || r.Settled != nil {
			continue
		}
		i := slices.IndexFunc(others, func(a summary) bool {
			return a.AIS == nil && a.Settled == nil && a.Estimator == r.Estimator && a.Config.PriorTemp == r.Config.PriorTemp &&
				a.Seed == r.Seed && a.Epochs == r.Epochs && a.EvalSplit == r.EvalSplit &&
				a.eval().Images == r.eval().Images && a.eval().K == r.eval().K
		})
		if i < 0 {
			return fmt.Errorf("%s, λ_p %s, seed %d, %d epochs, %d %s images, K = %d: no such run under %s",
				estimatorLabel(r), priorTemp(r), r.Seed, r.Epochs, r.eval().Images, r.EvalSplit, r.eval().K, against)
		}
		pairs = append(pairs, pair{r, others[i]})
	}
	if len(pairs) == 0 {
		return fmt.Errorf("no runs without AIS under %s", dir)
	}
	groups := groupBy(pairs, func(p pair) string {
		return estimatorLabel(p.r) + "|" + estimatorLabel(p.a) + "|" + priorTemp(p.r)
	})
	// label is the first columns of a group's rows: the two settings and the seeds.
	label := func(g []pair) string {
		var seeds []string
		for _, p := range g {
			seeds = append(seeds, strconv.FormatUint(p.r.Seed, 10))
		}
		return fmt.Sprintf("%s | %s | %s | %s", estimatorLabel(g[0].r), estimatorLabel(g[0].a), priorTemp(g[0].r), strings.Join(seeds, ", "))
	}

	fmt.Fprintln(w, "| run | against | λ_p | seeds | IW −log p(x), difference by seed | mean ± se | −ELBO, difference by seed | mean ± se |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|")
	var allIW, allELBO []float64
	for _, g := range groups {
		var byIW, byELBO []string
		var iw, elbo []float64
		for _, p := range g {
			di, de := p.r.eval().NegLogPx-p.a.eval().NegLogPx, p.r.eval().NegELBO-p.a.eval().NegELBO
			byIW, byELBO = append(byIW, fmt.Sprintf("%+.2f", di)), append(byELBO, fmt.Sprintf("%+.2f", de))
			iw, elbo = append(iw, di), append(elbo, de)
		}
		allIW, allELBO = append(allIW, iw...), append(allELBO, elbo...)
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s |\n", label(g), strings.Join(byIW, " / "), meanSE(iw), strings.Join(byELBO, " / "), meanSE(elbo))
	}
	if len(groups) > 1 {
		fmt.Fprintf(w, "| **all pairs** | | | %d pairs | | **%s** | | **%s** |\n", len(allIW), meanSE(allIW), meanSE(allELBO))
	}

	fmt.Fprintln(w)
	fmt.Fprintln(w, "| run | against | λ_p | seeds | training −ELBO, mean \\|difference\\| at epochs | the same epochs, sd over seeds of the runs against |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|")
	for _, g := range groups {
		last := len(g[0].r.TrainLoss)
		for _, p := range g {
			last = min(last, len(p.r.TrainLoss), len(p.a.TrainLoss))
		}
		if last == 0 {
			continue
		}
		var names, diffs, spread []string
		prev := 0
		for _, e := range []int{1, 5, last} {
			if e > last || e <= prev {
				continue // fewer than 5 epochs
			}
			prev = e
			var d, a []float64
			for _, p := range g {
				d = append(d, math.Abs(p.r.TrainLoss[e-1]-p.a.TrainLoss[e-1]))
				a = append(a, p.a.TrainLoss[e-1])
			}
			names = append(names, strconv.Itoa(e))
			diffs = append(diffs, fmt.Sprintf("%.3f", stat.Mean(d, nil)))
			if len(a) > 1 {
				spread = append(spread, fmt.Sprintf("%.3f", stat.StdDev(a, nil)))
			} else {
				spread = append(spread, "–")
			}
		}
		fmt.Fprintf(w, "| %s | %s: %s | %s |\n", label(g), strings.Join(names, " / "), strings.Join(diffs, " / "), strings.Join(spread, " / "))
	}
	return nil
}

// meanSE formats the mean of xs and, for two or more values, its standard
// error: sample sd over √n.
func meanSE(xs []float64) string {
	if len(xs) < 2 {
		return fmt.Sprintf("%+.2f", xs[0])
	}
	m, sd := stat.MeanStdDev(xs, nil)
	return fmt.Sprintf("%+.2f ± %.2f", m, sd/math.Sqrt(float64(len(xs))))
}
