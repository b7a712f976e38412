// Scaled synthetic connectomes: the WormAtlas body plan and degree
// distribution at any number of neurons, in O(N log N + E).
//
// TestScaledLikeReal (synth_scale_test.go) checks ScaledConfig{N: 279},
// seeds 1 to 20, against the WormAtlas connectome (edge lengths from
// positions rounded to the table's two decimals; candidate widths halfway
// between multiples of 0.01, where rounded and continuous positions give
// the same expected count); TestScaledLarge gives the regional degrees at
// N = 5000:
//
//	                          real   synthetic   sd over seeds
//	mean degree             16.394      16.394   (exact)
//	degree sd               12.494      11.825   0.89
//	max degree                  93       77.75   11.6
//	edge length median       0.050       0.060   0.007
//	edge length q90          0.610       0.548   0.041
//	KS(edge lengths)             -       0.070   0.016
//	candidates, nu = 0.005  10.419       9.171   0.81
//	candidates, nu = 0.015  28.541      24.787   2.3
//	candidates, nu = 0.045  64.011      64.084   6.1
//	candidates, nu = 0.095 104.935     103.944   9.4
//	mean degree, head/cord 18.9/10.9  19.6/11.4 (N = 5000)
//
// The real worm is a typical draw for the degrees; its edge lengths are
// more spread (more very short and very long edges: the cord and tail wired
// to the head's hubs, which the kernel does not single out), and the
// smooth head of the body mixture has a tenth fewer close neighbours than
// the real ganglia. At N = 5000 and 20000 the degree sd is 13.2 to 13.7 and
// the largest degree 130 to 200. Generate takes about 0.1 s at N = 5000;
// at N = 20000 the draw takes about 0.1 s and NewConnectome's N × N
// adjacency 2.5 s (one core of a shared machine).

package celegans

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
)

// RealMeanDegree is the mean degree of the WormAtlas connectome as
// LoadConnectome reads it: 2 · 2287 edges / 279 neurons = 16.394.
const RealMeanDegree = 2.0 * WormAtlasEdges / WormAtlasNeurons

// scaledDegreeSigma is the log-scale sd of the neuron weights of
// ScaledConfig, a Poisson-lognormal fit to the degrees of the WormAtlas
// connectome by the method of moments.
//
// The real degrees (279 neurons) have mean m = 16.394, population variance
// v = 156.11 (sd 12.49), median 13, minimum 2 and maximum 93 (five neurons
// above 55). Modelling a neuron's degree as Poisson with a lognormal mean,
// d ~ Poisson(w), log w ~ N(μ, σ²), gives E d = exp(μ + σ²/2) and
// Var d = E d + (E d)² (exp(σ²) − 1); equating them with m and v gives
// σ² = ln(1 + (v − m)/m²) = 0.4186, σ = 0.6470 (and μ = ln m − σ²/2 =
// 2.588, which ScaledConfig replaces by the scale of its MeanDegree). The
// maximum-likelihood fit of the same model (μ = 2.625, σ = 0.560, a
// log-likelihood higher by 3.9, found on a grid of step 0.005) fits the
// bulk of the degrees slightly better but gives a degree sd of 10.6 and a
// largest of 279 degrees near 70: it loses the hubs, so the moments fit is
// used, whose largest of 279 weights, scaled to mean 16.394, is 87 on
// average.
//
// The fit leaves out two effects of the wiring, which move the degree sd
// by up to about a tenth either way (see the table above): the spatial factor
// Z_i of Generate (more partners in the crowded head) adds variance, and
// at small N merging repeated pairs trims the hubs.
const scaledDegreeSigma = 0.6470

// streamScaled is the random stream (the second PCG word) of
// ScaledConfig.Generate.
const streamScaled = 0x5ca1ed

// ScaledConfig describes a synthetic worm of any size with the body plan,
// wiring length and degree distribution of the WormAtlas connectome.
type ScaledConfig struct {
	// N is the number of neurons, at least 2.
	N int
	// MeanDegree is the mean number of neighbours per neuron, at most
	// (N-1)/2 (at most half of the neuron pairs connected); 0 means
	// RealMeanDegree, or (N-1)/2 when that is smaller (N < 34).
	MeanDegree float64
}

// Generate returns a synthetic connectome of cfg.N neurons drawn with the
// given seed, in O(N log N + E) time and memory for E edges (plus the N × N
// adjacency that NewConnectome allocates). Unlike SyntheticConfig.Generate,
// whose pair density is fixed (edges grow as N²) and whose degrees are
// nearly Poisson, the mean degree is fixed and the degrees follow the real
// worm's, hubs included, at every N.
//
// Positions: soma positions are drawn from the three-part body mixture of
// SyntheticConfig.Generate (head, ventral cord, tail, with the same
// constants) but are not rounded, so no two neurons share a position
// (except by a float64 coincidence). Neurons are sorted by position and
// named S001, S002, ... (zero-padded to the number of digits of N, at least
// three), which is canonical order.
//
// Degrees: each neuron gets a weight w_i = exp(σ z_i), z_i standard normal,
// σ = 0.647, a Poisson-lognormal fit to the real degrees (see
// scaledDegreeSigma).
//
// Wiring: a spatial Chung-Lu graph with the kernel of SyntheticConfig,
//
//	K(d) = 0.25 + exp(−|d| / 0.08).
//
// Each draw picks a neuron i with probability proportional to w_i Z_i,
// Z_i = Σ_j w_j K(x_i − x_j), and then its partner j with probability
// w_j K(x_i − x_j) / Z_i, so the unordered pair {i, j} is drawn with
// probability proportional to w_i w_j K(x_i − x_j), symmetric in i and j.
// Neuron i's expected degree is then proportional to w_i Z_i: its weight
// times the wiring mass around it, so that neurons of the crowded head get
// more connections than those of the sparse cord, as in the real worm
// (mean degree 18.9 among the somata before 0.26, 10.9 along the cord, 15.7
// in the tail; synthetic at N = 5000: 19.6, 11.4 and about 12.5).
//
// Pairs are drawn until E = round(N · MeanDegree / 2) distinct edges are
// placed: draws of a self loop are dropped and repeated pairs merged, so
// the mean degree is MeanDegree to within 1/N. Merging trims the hubs, most
// at small N (at N = 279 about a tenth of the draws are repeats or self
// loops, and the largest hubs lose up to a fifth of their draws, so that
// the largest degree averages 78 against the real 93); it fades as N
// grows.
//
// A draw takes O(log N) and samples the kernel exactly, without
// rejection: i from the cumulative weights w_i Z_i; then the floor part of
// the kernel (probability 0.25 Σw / Z_i, partner from the cumulative
// weights w), or its exponential part on the left of i or on its right. The
// exponential part factorises on either side of i,
// w_j exp(−|x_i − x_j|/L) = e^{∓x_i/L} · w_j e^{±x_j/L}, so a left partner
// is a draw from the prefix sums of w_j e^{x_j/L} up to i, a right partner
// one from the suffix sums of w_j e^{−x_j/L} after i, and the same sums give
// every Z_i in O(N).
//
// The draw is deterministic for a seed (one PCG stream, used sequentially,
// independent of GOMAXPROCS). Generate returns an error for N < 2 and for a
// MeanDegree that is negative, not finite or above (N-1)/2.
func (cfg ScaledConfig) Generate(seed uint64) (*Connectome, error) {
	n := cfg.N
	if n < 2 {
		return nil, fmt.Errorf("celegans: ScaledConfig.Generate: N must be >= 2, got %d", n)
	}
	maxMean := float64(n-1) / 2
	meanDeg := cfg.MeanDegree
	switch {
	case !(meanDeg >= 0) || math.IsInf(meanDeg, 0):
		return nil, fmt.Errorf("celegans: ScaledConfig.Generate: MeanDegree must be finite and >= 0, got %v", meanDeg)
	case meanDeg == 0:
		meanDeg = min(RealMeanDegree, maxMean)
	case meanDeg > maxMean:
		return nil, fmt.Errorf("celegans: ScaledConfig.Generate: MeanDegree %v is above (N-1)/2 = %v for N = %d", meanDeg, maxMean, n)
	}
	edges := int(math.Round(float64(n) * meanDeg / 2))
	rng := rand.New(rand.NewPCG(seed, streamScaled))

	pos := make([]float64, n)
	for i := range pos {
		pos[i] = bodyPosition(rng)
	}
	sort.Float64s(pos)
	width := max(3, len(fmt.Sprint(n)))
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("S%0*d", width, i+1)
	}
	w := make([]float64, n)
	for i := range w {
		w[i] = math.Exp(scaledDegreeSigma * rng.NormFloat64())
	}

	list, err := newSpatialSampler(pos, w).drawEdges(rng, edges)
	if err != nil {
		return nil, fmt.Errorf("celegans: ScaledConfig.Generate: %w", err)
	}
	return NewConnectome(names, pos, list)
}

// bodyPosition draws a soma position from the three-part body mixture of
// SyntheticConfig.Generate, unrounded.
func bodyPosition(rng *rand.Rand) float64 {
	switch u := rng.Float64(); {
	case u < synHeadFrac:
		return truncNormal(rng, synHeadMean, synHeadSD, synHeadLo, synHeadHi)
	case u < synHeadFrac+synCordFrac:
		return synCordLo + (synCordHi-synCordLo)*rng.Float64()
	default:
		return truncNormal(rng, synTailMean, synTailSD, synTailLo, synTailHi)
	}
}

// kernelCentre is subtracted from positions in the factorised exponentials
// e^{±(x − kernelCentre)/synLength}, so that for positions in [0, 1] they
// stay within e^{±6.25}, far from overflow.
const kernelCentre = 0.5

// spatialSampler draws pairs (i, j), self pairs included, with probability
// proportional to w_i w_j K(x_i − x_j) for sorted positions x in [0, 1],
// weights w > 0 and the kernel K(d) = synFloor + exp(−|d|/synLength).
type spatialSampler struct {
	up     []float64 // up[i] = exp((x_i − kernelCentre) / synLength)
	left   []float64 // left[i] = Σ_{j ≤ i} w_j up[j], increasing
	right  []float64 // right[i] = Σ_{j ≥ i} w_j / up[j], decreasing
	wCum   []float64 // wCum[i] = Σ_{j ≤ i} w_j
	rowCum []float64 // rowCum[i] = Σ_{j ≤ i} w_j Z_j
}

func newSpatialSampler(x, w []float64) *spatialSampler {
	n := len(x)
	s := &spatialSampler{
		up:     make([]float64, n),
		left:   make([]float64, n),
		right:  make([]float64, n),
		wCum:   make([]float64, n),
		rowCum: make([]float64, n),
	}
	var l, c float64
	for i, xi := range x {
		s.up[i] = math.Exp((xi - kernelCentre) / synLength)
		l += w[i] * s.up[i]
		c += w[i]
		s.left[i], s.wCum[i] = l, c
	}
	var r float64
	for i := n - 1; i >= 0; i-- {
		r += w[i] / s.up[i]
		s.right[i] = r
	}
	var acc float64
	for i := range x {
		acc += w[i] * (s.floor() + s.expLeft(i) + s.expRight(i))
		s.rowCum[i] = acc
	}
	return s
}

// floor returns the floor part of every Z_i, synFloor Σ_j w_j.
func (s *spatialSampler) floor() float64 { return synFloor * s.wCum[len(s.wCum)-1] }

// expLeft returns Σ_{j ≤ i} w_j exp(−(x_i − x_j)/synLength).
func (s *spatialSampler) expLeft(i int) float64 { return s.left[i] / s.up[i] }

// expRight returns Σ_{j > i} w_j exp(−(x_j − x_i)/synLength).
func (s *spatialSampler) expRight(i int) float64 {
	if i+1 >= len(s.up) {
		return 0
	}
	return s.right[i+1] * s.up[i]
}

// pair draws one pair (i, j), possibly with i == j.
func (s *spatialSampler) pair(rng *rand.Rand) (int, int) {
	n := len(s.up)
	i := searchAbove(s.rowCum, rng.Float64()*s.rowCum[n-1], 0, n-1)
	floor, el, er := s.floor(), s.expLeft(i), s.expRight(i)
	switch u := rng.Float64() * (floor + el + er); {
	case u < floor:
		return i, searchAbove(s.wCum, rng.Float64()*s.wCum[n-1], 0, n-1)
	case u < floor+el || i+1 >= n: // (i = n-1 only by rounding: er = 0)
		return i, searchAbove(s.left, rng.Float64()*s.left[i], 0, i)
	default:
		// right is decreasing: the partner is the last j > i with
		// right[j] > v, for v uniform below right[i+1].
		v := rng.Float64() * s.right[i+1]
		t := sort.Search(n-i-1, func(t int) bool { return s.right[i+1+t] <= v })
		return i, max(i+1, i+t)
	}
}

// searchAbove returns the first index j in [lo, hi] with cum[j] > v for an
// increasing cum, or hi if there is none (v rounded up to the total).
func searchAbove(cum []float64, v float64, lo, hi int) int {
	j := lo + sort.Search(hi-lo+1, func(t int) bool { return cum[lo+t] > v })
	return min(j, hi)
}

// drawEdges draws pairs until m distinct edges {i, j}, i < j, are placed,
// dropping self pairs and merging repeats, and returns them in the order
// placed.
func (s *spatialSampler) drawEdges(rng *rand.Rand, m int) ([][2]int, error) {
	n := uint64(len(s.up))
	out := make([][2]int, 0, m)
	seen := make(map[uint64]struct{}, m)
	// At most half of the pairs are wanted, so a few draws per edge do
	// (1.1 at N = 279); the cap only turns a bug into an error rather than
	// an endless loop.
	maxDraws := 100*m + 10000
	for draws := 0; len(out) < m; draws++ {
		if draws == maxDraws {
			return nil, fmt.Errorf("placed only %d of %d edges in %d draws", len(out), m, draws)
		}
		i, j := s.pair(rng)
		if i == j {
			continue
		}
		if i > j {
			i, j = j, i
		}
		key := uint64(i)*n + uint64(j)
		if _, dup := seen[key]; dup {
			continue
		}
		seen[key] = struct{}{}
		out = append(out, [2]int{i, j})
	}
	return out, nil
}
