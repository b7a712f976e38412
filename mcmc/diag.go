package mcmc

import (
	"fmt"
	"math"
	"sort"

	"gonum.org/v1/gonum/stat/distuv"
)

// AcceptanceRate returns accepted/steps, or NaN when steps is zero.
func AcceptanceRate(accepted, steps int) float64 {
	if steps == 0 {
		return math.NaN()
	}
	return float64(accepted) / float64(steps)
}

// SplitChains returns the first and second halves of every chain, in the
// order chain 0 first half, chain 0 second half, chain 1 first half, ...
// When the chain length is odd the middle draw is dropped. The halves share
// memory with chains.
func SplitChains(chains [][]float64) [][]float64 {
	out := make([][]float64, 0, 2*len(chains))
	for _, c := range chains {
		h := len(c) / 2
		out = append(out, c[:h:h], c[len(c)-h:])
	}
	return out
}

// minDraws is the shortest chain the diagnostics accept: split halves then
// have at least two draws, so their variances are defined.
const minDraws = 4

// SplitRHat returns the split potential scale reduction factor R̂ of
// draws[chain][draw] (Vehtari et al. 2021): every chain is split into halves
// and the classical Gelman-Rubin R̂ is computed over the halves. All chains
// must have the same length, at least 4, and finite values. It returns NaN
// when every draw is the same, and +Inf when each half is constant but the
// halves differ.
func SplitRHat(draws [][]float64) (float64, error) {
	if err := checkDraws("SplitRHat", draws); err != nil {
		return 0, err
	}
	return rhat(SplitChains(draws)), nil
}

// RankRHat returns the rank-normalized split R̂ recommended by Vehtari et
// al. (2021): the larger of the split R̂ of the rank-normalized draws (which
// detects differences in location) and of the rank-normalized folded draws
// |θ - median| (which detects differences in scale). The requirements are
// those of SplitRHat.
func RankRHat(draws [][]float64) (float64, error) {
	if err := checkDraws("RankRHat", draws); err != nil {
		return 0, err
	}
	split := SplitChains(draws)
	bulk := rhat(rankNormalize(split))
	med := median(split)
	folded := make([][]float64, len(split))
	for j, c := range split {
		folded[j] = make([]float64, len(c))
		for t, v := range c {
			folded[j][t] = math.Abs(v - med)
		}
	}
	tail := rhat(rankNormalize(folded))
	if math.IsNaN(bulk) || math.IsNaN(tail) {
		return math.NaN(), nil
	}
	return math.Max(bulk, tail), nil
}

// ESS returns the effective sample size of the mean of draws[chain][draw],
// combining the chains as given (Geyer's initial monotone sequence on the
// multi-chain autocorrelation; see the package documentation). Pass
// SplitChains(draws) to also account for trends within chains. All chains
// must have the same length, at least 4, and finite values. ESS returns NaN
// when every draw is the same.
func ESS(draws [][]float64) (float64, error) {
	if err := checkDraws("ESS", draws); err != nil {
		return 0, err
	}
	return ess(draws), nil
}

// BulkESS returns the bulk effective sample size of Vehtari et al. (2021):
// the ESS of the rank-normalized split chains. Unlike ESS it does not need
// the draws to have a finite variance, and it also sees trends within
// chains.
func BulkESS(draws [][]float64) (float64, error) {
	if err := checkDraws("BulkESS", draws); err != nil {
		return 0, err
	}
	return ess(rankNormalize(SplitChains(draws))), nil
}

func checkDraws(fn string, draws [][]float64) error {
	if len(draws) == 0 {
		return fmt.Errorf("mcmc: %s: no chains", fn)
	}
	n := len(draws[0])
	if n < minDraws {
		return fmt.Errorf("mcmc: %s: chains must have at least %d draws, got %d", fn, minDraws, n)
	}
	for j, c := range draws {
		if len(c) != n {
			return fmt.Errorf("mcmc: %s: chain %d has %d draws, chain 0 has %d", fn, j, len(c), n)
		}
		for t, v := range c {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return fmt.Errorf("mcmc: %s: chain %d draw %d is %v", fn, j, t, v)
			}
		}
	}
	return nil
}

// chainMoments returns the chain means, W (mean of the unbiased chain
// variances) and var⁺ = (n-1)/n W + B/n.
func chainMoments(chains [][]float64) (means []float64, w, varPlus float64) {
	m, n := len(chains), len(chains[0])
	means = make([]float64, m)
	for j, c := range chains {
		s := 0.0
		for _, v := range c {
			s += v
		}
		means[j] = s / float64(n)
		ss := 0.0
		for _, v := range c {
			d := v - means[j]
			ss += d * d
		}
		w += ss / float64(n-1)
	}
	w /= float64(m)
	bOverN := 0.0 // B/n: the variance of the chain means
	if m > 1 {
		grand := 0.0
		for _, mu := range means {
			grand += mu
		}
		grand /= float64(m)
		for _, mu := range means {
			bOverN += (mu - grand) * (mu - grand)
		}
		bOverN /= float64(m - 1)
	}
	varPlus = float64(n-1)/float64(n)*w + bOverN
	return means, w, varPlus
}

func rhat(chains [][]float64) float64 {
	_, w, varPlus := chainMoments(chains)
	if w == 0 {
		if varPlus == 0 {
			return math.NaN()
		}
		return math.Inf(1)
	}
	return math.Sqrt(varPlus / w)
}

func ess(chains [][]float64) float64 {
	m, n := len(chains), len(chains[0])
	means, w, varPlus := chainMoments(chains)
	if varPlus == 0 {
		return math.NaN()
	}
	// rho(t) = 1 - (W - mean_j γ_{j,t}) / var⁺ with the biased (1/n)
	// autocovariance γ_{j,t}; rho(0) is 1 by definition.
	rho := func(t int) float64 {
		if t == 0 {
			return 1
		}
		g := 0.0
		for j, c := range chains {
			mu := means[j]
			s := 0.0
			for k := 0; k+t < n; k++ {
				s += (c[k] - mu) * (c[k+t] - mu)
			}
			g += s / float64(n)
		}
		g /= float64(m)
		return 1 - (w-g)/varPlus
	}
	// Geyer's initial monotone sequence on Γ_k = rho(2k) + rho(2k+1).
	sum := 0.0
	prev := math.Inf(1)
	for k := 0; 2*k+1 < n; k++ {
		g := rho(2*k) + rho(2*k+1)
		if g <= 0 {
			break
		}
		g = math.Min(g, prev)
		sum += g
		prev = g
	}
	total := float64(m * n)
	tau := -1 + 2*sum
	tau = math.Max(tau, 1/math.Log10(total))
	return total / tau
}

// rankNormalize replaces every draw by Φ⁻¹((r - 3/8)/(S + 1/4)), where r is
// its rank among all S pooled draws (ties get their average rank).
func rankNormalize(chains [][]float64) [][]float64 {
	type item struct {
		v    float64
		j, t int
	}
	var all []item
	for j, c := range chains {
		for t, v := range c {
			all = append(all, item{v, j, t})
		}
	}
	sort.Slice(all, func(a, b int) bool { return all[a].v < all[b].v })
	out := make([][]float64, len(chains))
	for j, c := range chains {
		out[j] = make([]float64, len(c))
	}
	s := float64(len(all))
	for lo := 0; lo < len(all); {
		hi := lo + 1
		for hi < len(all) && all[hi].v == all[lo].v {
			hi++
		}
		r := float64(lo+hi+1) / 2 // average of the 1-based ranks lo+1..hi
		z := distuv.UnitNormal.Quantile((r - 3.0/8) / (s + 1.0/4))
		for _, it := range all[lo:hi] {
			out[it.j][it.t] = z
		}
		lo = hi
	}
	return out
}

func median(chains [][]float64) float64 {
	var all []float64
	for _, c := range chains {
		all = append(all, c...)
	}
	if len(all) == 0 {
		return math.NaN()
	}
	sort.Float64s(all)
	h := len(all) / 2
	if len(all)%2 == 1 {
		return all[h]
	}
	return (all[h-1] + all[h]) / 2
}
