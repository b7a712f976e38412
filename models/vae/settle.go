package vae

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
)

// Settled is the estimate of the mean −log p(x) over a set of images that
// Settle forms from the importance-weighted estimates of all of them and
// AIS on a random sample of them.
type Settled struct {
	Images int // images of the set, all estimated by Evaluate
	Sample int // of them, the images AIS estimated
	K      int // importance samples per image of Evaluate

	// IW is Evaluate's mean −log p(x) over the whole set.
	IW float64
	// Gap is the mean over the sample of IW_i − AIS_i, and GapSE its
	// standard error as the mean of a simple random sample drawn without
	// replacement from the set (the finite-population correction
	// included: GapSE is 0 when the sample is the whole set).
	Gap, GapSE float64
	// NegLogPx = IW − Gap estimates the set's mean AIS −log p(x), with
	// standard error NegLogPxSE = GapSE.
	NegLogPx, NegLogPxSE float64

	// Subset lists the sample's images (AISEval.Subset), nil when AIS ran
	// on the whole set; SampleIW and SampleAIS hold the sample's two
	// estimates, image by image, in that order.
	Subset              []int `json:",omitempty"`
	SampleIW, SampleAIS []float64
}

// Settle estimates the mean over a set of images of AIS's −log p(x) when
// AIS ran on a random sample of them only, as a difference estimator:
//
//	mean_set(AIS_i) = mean_set(IW_i) − mean_set(IW_i − AIS_i)
//	               ≈ mean_set(IW_i) − mean_sample(IW_i − AIS_i).
//
// iw is Evaluate on the whole set and ais is AIS on a uniform random
// sample of it (AISOptions.Subset, from SampleIndices), both with the same
// seed, so that image i is the same binary image in both. An image's IW
// and AIS estimates differ by the part of the posterior q(z | x) misses,
// which varies from image to image far less than −log p(x) itself, so
// the estimate's standard error over samples is a small fraction of that
// of AIS's mean on the sample alone; it covers the choice of the sample
// and the randomness of each sampled image's two estimates. Since AIS's
// estimates are upper bounds in expectation, so is NegLogPx.
//
// With ais on the whole set (no Subset) the result is AIS's own mean,
// with a standard error of 0.
func Settle(iw *Eval, ais *AISEval) (*Settled, error) {
	if iw == nil || ais == nil {
		return nil, errors.New("vae: Settle: nil estimate")
	}
	if len(iw.PerImage) != iw.Images || len(iw.PerImage) == 0 {
		return nil, fmt.Errorf("vae: Settle: the IW estimate has %d per-image values for %d images (want Evaluate's, which keeps them)", len(iw.PerImage), iw.Images)
	}
	idx := ais.Subset
	if idx == nil {
		if ais.Images != iw.Images {
			return nil, fmt.Errorf("vae: Settle: AIS on all of %d images, IW on %d: not the same set", ais.Images, iw.Images)
		}
		idx = seq(iw.Images)
	}
	if len(idx) != len(ais.PerImage) || len(idx) == 0 {
		return nil, fmt.Errorf("vae: Settle: %d AIS estimates for %d images", len(ais.PerImage), len(idx))
	}
	n, total := len(idx), iw.Images
	s := &Settled{Images: total, Sample: n, K: iw.K, IW: iw.NegLogPx, Subset: slices.Clone(ais.Subset),
		SampleIW: make([]float64, n), SampleAIS: slices.Clone(ais.PerImage)}
	gap := make([]float64, n)
	for j, i := range idx {
		if i < 0 || i >= total {
			return nil, fmt.Errorf("vae: Settle: AIS image %d is not among the %d IW images", i, total)
		}
		s.SampleIW[j] = iw.PerImage[i]
		gap[j] = iw.PerImage[i] - ais.PerImage[j]
	}
	s.Gap, s.GapSE = meanSE(gap)
	switch {
	case n == total:
		s.GapSE = 0
	case n == 1:
		return nil, errors.New("vae: Settle: AIS on one image of several: no standard error; sample at least 2")
	default:
		s.GapSE *= math.Sqrt(1 - float64(n)/float64(total))
	}
	s.NegLogPx, s.NegLogPxSE = s.IW-s.Gap, s.GapSE
	return s, nil
}

// SettledDiff estimates b.NegLogPx − a.NegLogPx, the difference of two
// models' settled −log p(x) on one set of images, from estimates made on
// the same sample of it, pairing the images: the difference of the IW
// means minus the sample mean of the per-image differences of the two
// gaps, with the standard error of that paired mean (finite-population
// correction included). Where the two models find the same images hard
// to settle, it is well below the two standard errors combined.
func SettledDiff(a, b *Settled) (diff, se float64, err error) {
	if a == nil || b == nil {
		return 0, 0, errors.New("vae: SettledDiff: nil estimate")
	}
	if a.Images != b.Images || !slices.Equal(a.Subset, b.Subset) || a.Sample != b.Sample ||
		len(a.SampleIW) != a.Sample || len(b.SampleIW) != b.Sample || len(a.SampleAIS) != a.Sample || len(b.SampleAIS) != b.Sample {
		return 0, 0, fmt.Errorf("vae: SettledDiff: the estimates are not on the same sample of the same images (%d of %d against %d of %d, or other images)",
			a.Sample, a.Images, b.Sample, b.Images)
	}
	d := make([]float64, a.Sample)
	for j := range d {
		d[j] = (b.SampleIW[j] - b.SampleAIS[j]) - (a.SampleIW[j] - a.SampleAIS[j])
	}
	m, se := meanSE(d)
	switch {
	case a.Sample == a.Images:
		se = 0
	case a.Sample == 1:
		return 0, 0, errors.New("vae: SettledDiff: one image of several: no standard error")
	default:
		se *= math.Sqrt(1 - float64(a.Sample)/float64(a.Images))
	}
	return (b.IW - a.IW) - m, se, nil
}

// SampleIndices returns k of the indices 0 … n−1 drawn uniformly at random
// without replacement from a source seeded by seed, in increasing order:
// a sample for AISOptions.Subset.
func SampleIndices(n, k int, seed uint64) ([]int, error) {
	if k < 1 || k > n {
		return nil, fmt.Errorf("vae: SampleIndices: %d of %d indices, want 1 to %d", k, n, n)
	}
	idx := rand.New(rand.NewPCG(seed, 0x73616d706c65)).Perm(n)[:k] // "sample"
	slices.Sort(idx)
	return idx, nil
}
