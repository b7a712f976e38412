package main

import (
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
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
	type pairGroup struct {
		key   string
		pairs []pair
	}
	var groups []*pairGroup
	for _, r := range runs {
		if r.AIS != nil || r.Settled != nil {
			continue
		}
		var partner *summary
		for i, a := range others {
			if a.AIS == nil && a.Settled == nil && a.Estimator == r.Estimator && a.Config.PriorTemp == r.Config.PriorTemp &&
				a.Seed == r.Seed && a.Epochs == r.Epochs && a.EvalSplit == r.EvalSplit &&
				a.eval().Images == r.eval().Images && a.eval().K == r.eval().K {
				partner = &others[i]
				break
			}
		}
		if partner == nil {
			return fmt.Errorf("%s, λ_p %s, seed %d, %d epochs, %d %s images, K = %d: no such run under %s",
				estimatorLabel(r), priorTemp(r), r.Seed, r.Epochs, r.eval().Images, r.EvalSplit, r.eval().K, against)
		}
		key := estimatorLabel(r) + "|" + estimatorLabel(*partner) + "|" + priorTemp(r)
		if len(groups) == 0 || groups[len(groups)-1].key != key {
			groups = append(groups, &pairGroup{key: key})
		}
		g := groups[len(groups)-1]
		g.pairs = append(g.pairs, pair{r, *partner})
	}
	if len(groups) == 0 {
		return fmt.Errorf("no runs without AIS under %s", dir)
	}

	fmt.Fprintln(w, "| run | against | λ_p | seeds | IW −log p(x), difference by seed | mean ± se | −ELBO, difference by seed | mean ± se |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|")
	var allIW, allELBO []float64
	for _, g := range groups {
		var seeds, byIW, byELBO []string
		var iw, elbo []float64
		for _, p := range g.pairs {
			di, de := p.r.eval().NegLogPx-p.a.eval().NegLogPx, p.r.eval().NegELBO-p.a.eval().NegELBO
			seeds = append(seeds, strconv.FormatUint(p.r.Seed, 10))
			byIW, byELBO = append(byIW, fmt.Sprintf("%+.2f", di)), append(byELBO, fmt.Sprintf("%+.2f", de))
			iw, elbo = append(iw, di), append(elbo, de)
		}
		allIW, allELBO = append(allIW, iw...), append(allELBO, elbo...)
		p := g.pairs[0]
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s | %s | %s |\n", estimatorLabel(p.r), estimatorLabel(p.a), priorTemp(p.r),
			strings.Join(seeds, ", "), strings.Join(byIW, " / "), meanSE(iw), strings.Join(byELBO, " / "), meanSE(elbo))
	}
	if len(groups) > 1 {
		fmt.Fprintf(w, "| **all pairs** | | | %d pairs | | **%s** | | **%s** |\n", len(allIW), meanSE(allIW), meanSE(allELBO))
	}

	fmt.Fprintln(w)
	fmt.Fprintln(w, "| run | against | λ_p | seeds | training −ELBO, mean \\|difference\\| at epochs | the same epochs, sd over seeds of the runs against |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|")
	for _, g := range groups {
		last := len(g.pairs[0].r.TrainLoss)
		for _, p := range g.pairs {
			last = min(last, len(p.r.TrainLoss), len(p.a.TrainLoss))
		}
		if last == 0 {
			continue
		}
		var epochs []int
		for _, e := range []int{1, 5, last} {
			if e <= last && (len(epochs) == 0 || epochs[len(epochs)-1] < e) {
				epochs = append(epochs, e)
			}
		}
		var seeds, names, diffs, spread []string
		for _, p := range g.pairs {
			seeds = append(seeds, strconv.FormatUint(p.r.Seed, 10))
		}
		for _, e := range epochs {
			var d, a []float64
			for _, p := range g.pairs {
				d = append(d, math.Abs(p.r.TrainLoss[e-1]-p.a.TrainLoss[e-1]))
				a = append(a, p.a.TrainLoss[e-1])
			}
			names = append(names, strconv.Itoa(e))
			diffs = append(diffs, fmt.Sprintf("%.3f", mean(d)))
			if len(a) > 1 {
				spread = append(spread, fmt.Sprintf("%.3f", sampleSD(a)))
			} else {
				spread = append(spread, "–")
			}
		}
		p := g.pairs[0]
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s: %s | %s |\n", estimatorLabel(p.r), estimatorLabel(p.a), priorTemp(p.r),
			strings.Join(seeds, ", "), strings.Join(names, " / "), strings.Join(diffs, " / "), strings.Join(spread, " / "))
	}
	return nil
}

func mean(xs []float64) float64 {
	var m float64
	for _, x := range xs {
		m += x
	}
	return m / float64(len(xs))
}

// sampleSD is the sample standard deviation of xs (at least two values).
func sampleSD(xs []float64) float64 {
	m := mean(xs)
	var v float64
	for _, x := range xs {
		v += (x - m) * (x - m)
	}
	return math.Sqrt(v / float64(len(xs)-1))
}

// meanSE formats the mean of xs and, for two or more values, its standard
// error: sample sd over √n.
func meanSE(xs []float64) string {
	if len(xs) < 2 {
		return fmt.Sprintf("%+.2f", mean(xs))
	}
	return fmt.Sprintf("%+.2f ± %.2f", mean(xs), sampleSD(xs)/math.Sqrt(float64(len(xs))))
}
