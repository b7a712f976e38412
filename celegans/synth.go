package celegans

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
)

// Defaults of the synthetic worm, matching the WormAtlas connectome.
const (
	// DefaultNeurons is the number of neurons of the WormAtlas connectome
	// once joined with the positions table.
	DefaultNeurons = 279
	// DefaultDensity is the fraction of neuron pairs connected in the
	// symmetrised WormAtlas connectome (2287 of 38781 pairs gives 0.05897).
	DefaultDensity = 0.059
)

// Shape of the synthetic body and wiring, fitted by eye to the WormAtlas
// data: 159 of 279 somata in the head (positions 0.07 to 0.25, peak near
// 0.14), 88 spread along the ventral cord (0.19 to 0.80), 32 in the tail
// (0.79 to 0.83); the fraction of connected pairs falls from about 0.14 at
// distance 0 to about 0.07 at distance 0.08 and levels off near 0.03 for
// distant pairs.
const (
	synHeadFrac, synHeadMean, synHeadSD, synHeadLo, synHeadHi = 0.57, 0.14, 0.04, 0.07, 0.25
	synCordFrac, synCordLo, synCordHi                         = 0.315, 0.19, 0.80
	synTailMean, synTailSD, synTailLo, synTailHi              = 0.815, 0.013, 0.79, 0.83
	synLength                                                 = 0.08 // decay length of the wiring probability
	synFloor                                                  = 0.25 // long-range floor, relative to the peak
)

// SyntheticConfig describes a synthetic worm.
type SyntheticConfig struct {
	// N is the number of neurons; 0 means DefaultNeurons.
	N int
	// Density is the fraction of the N(N-1)/2 pairs to connect, in [0, 1];
	// 0 means DefaultDensity.
	Density float64
}

// Synthetic returns a synthetic worm of n neurons (n = 0 gives
// DefaultNeurons) with the density of the real connectome. See
// SyntheticConfig.Generate.
func Synthetic(n int, seed uint64) (*Connectome, error) {
	c, err := SyntheticConfig{N: n}.Generate(seed)
	if err != nil {
		return nil, fmt.Errorf("celegans: Synthetic: %w", err)
	}
	return c, nil
}

// Generate returns a synthetic connectome drawn with the given seed. It is
// the package's embedded default: it needs no data files, and by default has
// the size and density of the WormAtlas connectome.
//
// Soma positions are drawn from a three-part mixture that mimics the real
// ones: 57% in the head (normal around 0.14, sd 0.04, kept within
// [0.07, 0.25]), 31.5% uniform along the ventral cord [0.19, 0.80], the rest
// in the tail (normal around 0.815, sd 0.013, within [0.79, 0.83]). Like the
// WormAtlas table, positions are rounded to two decimals, so many neurons
// share a position. Neurons are sorted by position and named S001, S002, ...
// (more digits when N > 999), which is canonical order.
//
// Exactly round(Density N(N-1)/2) pairs are connected, drawn without
// replacement with weights 0.25 + exp(-|pos_i - pos_j| / 0.08), so the
// wiring is spatially local with some long-range connections, as in the
// worm (Efraimidis-Spirakis weighted sampling). The degree distribution is
// not fitted: the real worm has hubs (degrees up to 93) that this does not.
func (cfg SyntheticConfig) Generate(seed uint64) (*Connectome, error) {
	n := cfg.N
	if n == 0 {
		n = DefaultNeurons
	}
	if n < 0 {
		return nil, fmt.Errorf("celegans: SyntheticConfig.Generate: N must be >= 0, got %d", cfg.N)
	}
	density := cfg.Density
	if density == 0 {
		density = DefaultDensity
	}
	if !(density >= 0 && density <= 1) {
		return nil, fmt.Errorf("celegans: SyntheticConfig.Generate: density must be in [0, 1], got %v", cfg.Density)
	}
	rng := rand.New(rand.NewPCG(seed, streamSynthetic))

	pos := make([]float64, n)
	for i := range pos {
		var x float64
		switch u := rng.Float64(); {
		case u < synHeadFrac:
			x = truncNormal(rng, synHeadMean, synHeadSD, synHeadLo, synHeadHi)
		case u < synHeadFrac+synCordFrac:
			x = synCordLo + (synCordHi-synCordLo)*rng.Float64()
		default:
			x = truncNormal(rng, synTailMean, synTailSD, synTailLo, synTailHi)
		}
		pos[i] = math.Round(100*x) / 100
	}
	sort.Float64s(pos)
	width := 3
	if d := len(fmt.Sprint(n)); d > width {
		width = d
	}
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("S%0*d", width, i+1)
	}

	pairs := n * (n - 1) / 2
	k := int(math.Round(density * float64(pairs)))
	type keyed struct {
		key  float64
		i, j int
	}
	cand := make([]keyed, 0, pairs)
	for i := 0; i < n; i++ {
		for j := i + 1; j < n; j++ {
			w := synFloor + math.Exp(-math.Abs(pos[i]-pos[j])/synLength)
			u := 1 - rng.Float64() // in (0, 1]
			// The k largest keys log(u)/w are a weighted sample without
			// replacement.
			cand = append(cand, keyed{math.Log(u) / w, i, j})
		}
	}
	sort.Slice(cand, func(a, b int) bool {
		if cand[a].key != cand[b].key {
			return cand[a].key > cand[b].key
		}
		if cand[a].i != cand[b].i {
			return cand[a].i < cand[b].i
		}
		return cand[a].j < cand[b].j
	})
	edges := make([][2]int, k)
	for e := range edges {
		edges[e] = [2]int{cand[e].i, cand[e].j}
	}
	return NewConnectome(names, pos, edges)
}

// truncNormal draws from N(mean, sd^2), redrawing values outside [lo, hi]
// (a truncated normal; the bounds are within two sd of the mean, so few
// redraws are needed).
func truncNormal(rng *rand.Rand, mean, sd, lo, hi float64) float64 {
	for {
		x := mean + sd*rng.NormFloat64()
		if x >= lo && x <= hi {
			return x
		}
	}
}

// Random streams (the second PCG word) used with a caller's seed, so that
// the parts of a simulation draw from unrelated sequences.
const (
	streamSynthetic = 0x5e1e9a5
	streamWeights   = 0x3e16
	streamWorm      = 0x3011 << 32 // + worm index
)
