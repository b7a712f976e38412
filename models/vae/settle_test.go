package vae

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// TestAISSubsetMatchesFullRun checks that AIS on a subset gives each
// image the estimate a run on all images gives it, bit for bit, which is
// what lets Settle pair a sample with Evaluate on the whole set.
func TestAISSubsetMatchesFullRun(t *testing.T) {
	m, im := peakedModel(t, 7)
	opt := AISOptions{Steps: 20, Chains: 2, Seed: 4}
	all, err := m.AIS(im, opt)
	if err != nil {
		t.Fatal(err)
	}
	if all.Subset != nil {
		t.Errorf("Subset %v recorded for a run on all images", all.Subset)
	}
	opt.Subset = []int{5, 1, 3}
	sub, err := m.AIS(im, opt)
	if err != nil {
		t.Fatal(err)
	}
	if sub.Images != 3 || !slices.Equal(sub.Subset, opt.Subset) {
		t.Fatalf("subset run: %d images, Subset %v", sub.Images, sub.Subset)
	}
	for j, i := range opt.Subset {
		if sub.PerImage[j] != all.PerImage[i] {
			t.Errorf("image %d: %v in the subset, %v in the full run", i, sub.PerImage[j], all.PerImage[i])
		}
	}
	opt.Subset[0] = 0 // the result must not alias the caller's slice
	if sub.Subset[0] != 5 {
		t.Error("AISEval.Subset aliases AISOptions.Subset")
	}
	for _, c := range []struct {
		subset []int
		want   string
	}{
		{[]int{}, "empty Subset"},
		{[]int{7}, "index 7 out of range"},
		{[]int{-1}, "index -1 out of range"},
		{[]int{2, 4, 2}, "index 2 listed twice"},
	} {
		opt.Subset = c.subset
		if _, err := m.AIS(im, opt); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Subset %v: error %v, want one naming %q", c.subset, err, c.want)
		}
	}
}

// TestSettleOnModel runs the pairing end to end: Evaluate on all images,
// AIS on all of them and on a sample. With the whole set, Settle returns
// AIS's own mean with no standard error; with a sample, the estimate is
// IW − mean gap on the sample's images of the full AIS run.
func TestSettleOnModel(t *testing.T) {
	m, im := peakedModel(t, 8)
	iw, err := m.Evaluate(im, 50, 3)
	if err != nil {
		t.Fatal(err)
	}
	if len(iw.PerImage) != 8 {
		t.Fatalf("Evaluate kept %d per-image values for 8 images", len(iw.PerImage))
	}
	if m, _ := meanSE(iw.PerImage); math.Abs(m-iw.NegLogPx) > 1e-12 {
		t.Errorf("mean of Evaluate's per-image values %v, NegLogPx %v", m, iw.NegLogPx)
	}
	all, err := m.AIS(im, AISOptions{Steps: 20, Chains: 2, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	s, err := Settle(iw, all)
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(s.NegLogPx-all.NegLogPx) > 1e-12 || s.NegLogPxSE != 0 || s.Sample != 8 {
		t.Errorf("Settle on the whole set: %v ± %v from %d images, want AIS's %v ± 0 from 8", s.NegLogPx, s.NegLogPxSE, s.Sample, all.NegLogPx)
	}
	idx, err := SampleIndices(8, 3, 11)
	if err != nil {
		t.Fatal(err)
	}
	sub, err := m.AIS(im, AISOptions{Steps: 20, Chains: 2, Seed: 3, Subset: idx})
	if err != nil {
		t.Fatal(err)
	}
	s, err = Settle(iw, sub)
	if err != nil {
		t.Fatal(err)
	}
	var gap float64
	for _, i := range idx {
		gap += iw.PerImage[i] - all.PerImage[i]
	}
	gap /= 3
	if math.Abs(s.Gap-gap) > 1e-12 || math.Abs(s.NegLogPx-(iw.NegLogPx-gap)) > 1e-12 || !(s.NegLogPxSE > 0) {
		t.Errorf("Settle on images %v: gap %v, estimate %v ± %v; want gap %v, estimate %v", idx, s.Gap, s.NegLogPx, s.NegLogPxSE, gap, iw.NegLogPx-gap)
	}
}

func TestSettleArithmetic(t *testing.T) {
	iw := &Eval{Images: 4, K: 10, NegLogPx: 25, PerImage: []float64{10, 20, 30, 40}}
	ais := &AISEval{Images: 2, Subset: []int{0, 2}, PerImage: []float64{9, 27}}
	s, err := Settle(iw, ais)
	if err != nil {
		t.Fatal(err)
	}
	// Gaps 1 and 3: mean 2, sd √2, SE √2/√2 · √(1 − 2/4).
	want := Settled{Images: 4, Sample: 2, K: 10, IW: 25, Gap: 2, GapSE: math.Sqrt(0.5),
		NegLogPx: 23, NegLogPxSE: math.Sqrt(0.5), Subset: []int{0, 2}, SampleIW: []float64{10, 30}, SampleAIS: []float64{9, 27}}
	if math.Abs(s.GapSE-want.GapSE) > 1e-15 {
		t.Errorf("GapSE %v, want %v", s.GapSE, want.GapSE)
	}
	s.GapSE, s.NegLogPxSE = want.GapSE, want.NegLogPxSE
	if !equalSettled(*s, want) {
		t.Errorf("Settle: %+v, want %+v", *s, want)
	}
}

func equalSettled(a, b Settled) bool {
	return a.Images == b.Images && a.Sample == b.Sample && a.K == b.K && a.IW == b.IW && a.Gap == b.Gap &&
		a.GapSE == b.GapSE && a.NegLogPx == b.NegLogPx && a.NegLogPxSE == b.NegLogPxSE && slices.Equal(a.Subset, b.Subset) &&
		slices.Equal(a.SampleIW, b.SampleIW) && slices.Equal(a.SampleAIS, b.SampleAIS)
}

// TestSettleCalibrated draws many samples from a synthetic population of
// 400 images whose IW and AIS values are correlated as in the VAE (the gap
// varies far less than the values) and checks that the estimates centre on
// the population's mean AIS value and that their spread is the standard
// error Settle states, finite-population correction included (the sample
// is a quarter of the population, so without the correction the stated
// error would be 15% too large).
func TestSettleCalibrated(t *testing.T) {
	const n, k, trials = 400, 100, 4000
	rng := rand.New(rand.NewPCG(1, 2))
	iw := &Eval{Images: n, K: 100, PerImage: make([]float64, n)}
	aisAll := make([]float64, n)
	var truth float64
	for i := range n {
		v := 90 + 20*rng.NormFloat64()
		g := 3 + rng.ExpFloat64()
		iw.PerImage[i], aisAll[i] = v+g, v
		truth += v / n
	}
	iw.NegLogPx, _ = meanSE(iw.PerImage)
	var est, ses []float64
	for trial := range trials {
		idx, err := SampleIndices(n, k, uint64(trial))
		if err != nil {
			t.Fatal(err)
		}
		a := &AISEval{Images: k, Subset: idx, PerImage: make([]float64, k)}
		for j, i := range idx {
			a.PerImage[j] = aisAll[i]
		}
		s, err := Settle(iw, a)
		if err != nil {
			t.Fatal(err)
		}
		est = append(est, s.NegLogPx)
		ses = append(ses, s.NegLogPxSE)
	}
	mean, sd := meanSD(est)
	statedSE, _ := meanSD(ses)
	if math.Abs(mean-truth) > 4*sd/math.Sqrt(trials) {
		t.Errorf("estimates centre on %.4f, the population mean is %.4f (sd of an estimate %.4f)", mean, truth, sd)
	}
	if r := statedSE / sd; r < 0.93 || r > 1.07 {
		t.Errorf("stated standard error %.4f, spread of the estimates %.4f (ratio %.3f)", statedSE, sd, r)
	}
	t.Logf("truth %.3f, estimates %.3f ± %.4f, stated SE %.4f", truth, mean, sd, statedSE)
}

func TestSettleErrors(t *testing.T) {
	iw := &Eval{Images: 3, K: 5, PerImage: []float64{1, 2, 3}}
	for _, c := range []struct {
		name string
		iw   *Eval
		ais  *AISEval
		want string
	}{
		{"nil", nil, &AISEval{}, "nil estimate"},
		{"no per-image IW", &Eval{Images: 3}, &AISEval{Images: 3, PerImage: []float64{1, 2, 3}}, "0 per-image values for 3 images"},
		{"other set", iw, &AISEval{Images: 2, PerImage: []float64{1, 2}}, "not the same set"},
		{"index outside", iw, &AISEval{Images: 1, Subset: []int{0, 3}, PerImage: []float64{1, 2}}, "image 3 is not among the 3"},
		{"counts differ", iw, &AISEval{Images: 2, Subset: []int{0, 1}, PerImage: []float64{1}}, "1 AIS estimates for 2 images"},
		{"one image", iw, &AISEval{Images: 1, Subset: []int{1}, PerImage: []float64{1}}, "at least 2"},
	} {
		if _, err := Settle(c.iw, c.ais); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one naming %q", c.name, err, c.want)
		}
	}
	for _, k := range []int{0, 4} {
		if _, err := SampleIndices(3, k, 1); err == nil || !strings.Contains(err.Error(), "want 1 to 3") {
			t.Errorf("SampleIndices(3, %d): error %v", k, err)
		}
	}
	idx, err := SampleIndices(10, 4, 5)
	if err != nil || len(idx) != 4 || !slices.IsSorted(idx) || len(slices.Compact(slices.Clone(idx))) != 4 {
		t.Errorf("SampleIndices(10, 4, 5) = %v, %v: want 4 distinct indices in order", idx, err)
	}
}

// TestAISResume stops AIS after a few images and goes on from the results
// it delivered: the images annealed again are only the others, and the
// estimates equal those of a run that never stopped, bit for bit.
func TestAISResume(t *testing.T) {
	m, im := peakedModel(t, 9)
	for _, subset := range [][]int{nil, {8, 0, 4, 6, 2}} {
		opt := AISOptions{Steps: 15, Chains: 2, Seed: 6, Subset: subset}
		whole, err := m.AIS(im, opt)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		var got []AISImage
		stopped := opt
		stopped.OnResult = func(r AISImage) {
			got = append(got, r)
			if len(got) == 2 {
				cancel()
			}
		}
		if _, err := m.AISContext(ctx, im, stopped); !errors.Is(err, context.Canceled) {
			t.Fatalf("subset %v: cancelled run: err %v", subset, err)
		}
		if n := len(got); n < 2 || n >= whole.Images {
			t.Fatalf("subset %v: the cancelled run finished %d of %d images", subset, n, whole.Images)
		}
		again := opt
		again.Done = got
		var rerun int
		var progress []int
		again.OnResult = func(AISImage) { rerun++ }
		again.OnImage = func(done, total int) { progress = append(progress, done) }
		res, err := m.AIS(im, again)
		if err != nil {
			t.Fatal(err)
		}
		if rerun != whole.Images-len(got) || progress[0] != len(got)+1 || progress[len(progress)-1] != whole.Images {
			t.Errorf("subset %v: resumed run annealed %d images (progress %v), want the %d not done", subset, rerun, progress, whole.Images-len(got))
		}
		if !slices.Equal(res.PerImage, whole.PerImage) || res.NegLogPx != whole.NegLogPx || res.LogWeightSD != whole.LogWeightSD {
			t.Errorf("subset %v: resumed %v (%v), whole %v (%v)", subset, res.PerImage, res.LogWeightSD, whole.PerImage, whole.LogWeightSD)
		}
	}
	opt := AISOptions{Steps: 2, Chains: 2, Seed: 1, Subset: []int{1, 2}}
	for _, c := range []struct {
		done []AISImage
		want string
	}{
		{[]AISImage{{Index: 3, NegLogPx: 1}}, "image 3, which this run does not estimate"},
		{[]AISImage{{Index: 2, NegLogPx: 1}, {Index: 2, NegLogPx: 1}}, "image 2 twice"},
		{[]AISImage{{Index: 1, NegLogPx: math.NaN()}}, "not a result"},
	} {
		opt.Done = c.done
		if _, err := m.AIS(im, opt); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Done %v: error %v, want one naming %q", c.done, err, c.want)
		}
	}
}

func TestSettledDiff(t *testing.T) {
	// Two models on the same 2 of 4 images: gaps 1, 3 (a) and 2, 3 (b),
	// per-image differences 1 and 0: mean 0.5, sd √0.5, SE 0.5 · √(1 − 2/4).
	a := &Settled{Images: 4, Sample: 2, IW: 25, Subset: []int{0, 2}, SampleIW: []float64{10, 30}, SampleAIS: []float64{9, 27}, NegLogPx: 23}
	b := &Settled{Images: 4, Sample: 2, IW: 26, Subset: []int{0, 2}, SampleIW: []float64{11, 31}, SampleAIS: []float64{9, 28}, NegLogPx: 23.5}
	d, se, err := SettledDiff(a, b)
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(d-(b.NegLogPx-a.NegLogPx)) > 1e-12 || math.Abs(se-0.5*math.Sqrt(0.5)) > 1e-12 {
		t.Errorf("SettledDiff = %v ± %v, want 0.5 ± %v", d, se, 0.5*math.Sqrt(0.5))
	}
	other := *b
	other.Subset = []int{1, 2}
	if _, _, err := SettledDiff(a, &other); err == nil || !strings.Contains(err.Error(), "same sample") {
		t.Errorf("different samples: error %v", err)
	}
	if _, _, err := SettledDiff(nil, b); err == nil {
		t.Error("nil estimate: no error")
	}
}
