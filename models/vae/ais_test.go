package vae

import (
	"math"
	"math/rand/v2"
	"runtime"
	"strings"
	"testing"

	"github.com/permlab/permlab/dataset"
	"github.com/permlab/permlab/internal/longtest"
	"github.com/permlab/permlab/nn"
)

// peakedModel returns a small model (3 latents of 4 classes, 16 pixels)
// whose decoder weights are scaled up so that the posterior is far from
// the untrained encoder's q, and n binary images drawn from it.
func peakedModel(t *testing.T, n int) (*Model, *dataset.Images) {
	t.Helper()
	cfg := Config{Input: 16, Latents: 3, Classes: 4, Hidden: []int{12}, Estimator: GumbelSoftmax}
	m, err := New(cfg, rand.New(rand.NewPCG(7, 7)))
	if err != nil {
		t.Fatal(err)
	}
	scaleDecoder(m, 1.5)
	rng := rand.New(rand.NewPCG(8, 8))
	px := make([]float64, n*cfg.Input)
	for i := range px {
		if rng.Float64() < 0.4 {
			px[i] = 1
		}
	}
	return m, &dataset.Images{N: n, Channels: 1, Height: 4, Width: 4, Pixels: px}
}

// scaleDecoder multiplies the decoder's weights and biases by f, which
// sharpens p(x | z) and moves the posterior away from q.
func scaleDecoder(m *Model, f float64) {
	for _, p := range m.dec.Params() {
		for i := range p.Value.Data {
			p.Value.Data[i] *= f
		}
	}
}

// TestAISMatchesEnumeration checks AIS against −log p(x) summed over all
// 64 latent states. With one step AIS is plain importance sampling from q
// (no Gibbs update runs), so the first case also checks the weights; with
// a long schedule the chains reach the posterior, their log weights agree
// (small sd) and 64 chains give −log p(x) to within 0.02 nats, which
// importance sampling with as many samples does not.
func TestAISMatchesEnumeration(t *testing.T) {
	m, im := peakedModel(t, 6)
	want := exactNegLogPx(t, m, im.Pixels, im.N)
	// Unbiasedness: each chain's weight w has mean p(x), so the mean of
	// w/p(x) over many chains is 1 within its standard error. With one
	// step AIS is importance sampling from q.
	x, err := Binarize(nil, im.Pixels, rand.New(rand.NewPCG(1, 1)))
	if err != nil {
		t.Fatal(err)
	}
	logq, err := m.logQ(x, im.N)
	if err != nil {
		t.Fatal(err)
	}
	const chains = 2000
	an, err := m.annealer(chains)
	if err != nil {
		t.Fatal(err)
	}
	w := newAISWork(an)
	d, nlq := m.cfg.Input, m.cfg.Latents*m.cfg.Classes
	for _, steps := range []int{1, 4, 40} {
		for i, nlp := range want {
			rng := rand.New(rand.NewPCG(1, uint64(i)))
			lw := w.run(an, x[i*d:(i+1)*d], logq[i*nlq:(i+1)*nlq], sigmoidSchedule(steps), nil, rng)
			r := make([]float64, chains)
			for c, v := range lw {
				r[c] = math.Exp(v + nlp)
			}
			mean, se := meanSE(r)
			if z := (mean - 1) / se; math.Abs(z) > 4 {
				t.Errorf("%d steps, image %d: mean of w/p(x) over %d chains %.4f ± %.4f, want 1 (z = %.1f)", steps, i, chains, mean, se, z)
			}
		}
	}
	long, err := m.AIS(im, AISOptions{Steps: 3000, Chains: 64, Seed: 2})
	if err != nil {
		t.Fatal(err)
	}
	is, err := m.AIS(im, AISOptions{Steps: 1, Chains: 64, Seed: 2})
	if err != nil {
		t.Fatal(err)
	}
	var errLong, errIS float64
	for i, w := range want {
		errLong = math.Max(errLong, math.Abs(long.PerImage[i]-w))
		errIS = math.Max(errIS, math.Abs(is.PerImage[i]-w))
	}
	if errLong > 0.02 || long.LogWeightSD > 0.1 {
		t.Errorf("3000 steps, 64 chains: largest error %.4f nats (want <= 0.02), log-weight sd %.4f (want <= 0.1)", errLong, long.LogWeightSD)
	}
	if errIS < 5*errLong || is.LogWeightSD < 10*long.LogWeightSD {
		t.Errorf("importance sampling with 64 samples: error %.4f, sd %.4f; AIS: %.4f, %.4f; the test model's posterior is too close to q to tell them apart",
			errIS, is.LogWeightSD, errLong, long.LogWeightSD)
	}
	var mean float64
	for _, w := range want {
		mean += w / float64(len(want))
	}
	if math.Abs(long.NegLogPx-mean) > 0.02 {
		t.Errorf("mean −log p(x): AIS %.4f, exact %.4f", long.NegLogPx, mean)
	}
}

// TestBDMC checks bidirectional Monte Carlo against the exact mean
// −log p(x) of its simulated images, found by enumeration: a short
// schedule leaves the forward chains above it and the reverse chains below
// it with a clear gap, and a long one closes the gap around it.
func TestBDMC(t *testing.T) {
	m, _ := peakedModel(t, 1)
	const n = 200
	_, x, err := m.simulate(n, 6) // the images BDMC(n, {Seed: 6}) sees
	if err != nil {
		t.Fatal(err)
	}
	exact, _ := meanSE(exactNegLogPx(t, m, x, n))
	short, err := m.BDMC(n, AISOptions{Steps: 10, Chains: 8, Seed: 6})
	if err != nil {
		t.Fatal(err)
	}
	long, err := m.BDMC(n, AISOptions{Steps: 500, Chains: 8, Seed: 6})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("exact %.4f; 10 steps: reverse %.4f, forward %.4f; 500 steps: reverse %.4f, forward %.4f",
		exact, short.Reverse, short.Forward, long.Reverse, long.Forward)
	if short.Forward < exact || short.Reverse > exact || short.Gap < 0.05 {
		t.Errorf("10 steps: exact %.4f not between reverse %.4f and forward %.4f with a gap of at least 0.05", exact, short.Reverse, short.Forward)
	}
	if math.Abs(long.Gap) > 0.02 || long.Forward < exact-0.01 || long.Reverse > exact+0.01 {
		t.Errorf("500 steps: gap %.4f ± %.4f (want within ±0.02), exact %.4f not within [reverse %.4f, forward %.4f] ± 0.01",
			long.Gap, long.GapSE, exact, long.Reverse, long.Forward)
	}
}

// TestAISAgainstIW checks, on the full-size architecture, that AIS with a
// modest schedule is no worse than the importance-weighted estimate with
// as many decoder evaluations per image (both are upper bounds on −log p(x)
// in expectation), and that both are below the −ELBO.
func TestAISAgainstIW(t *testing.T) {
	longtest.Skip(t, "full-size decoder")
	m, err := New(DefaultConfig(), rand.New(rand.NewPCG(1, 1)))
	if err != nil {
		t.Fatal(err)
	}
	scaleDecoder(m, 1.5)
	rng := rand.New(rand.NewPCG(2, 2))
	im := &dataset.Images{N: 4, Channels: 1, Height: 28, Width: 28, Pixels: make([]float64, 4*784)}
	for i := range im.Pixels {
		im.Pixels[i] = rng.Float64()
	}
	// 100 steps × 2 chains × 10 classes = 2,000 decoder rows per image.
	a, err := m.AIS(im, AISOptions{Steps: 100, Chains: 2, Seed: 5})
	if err != nil {
		t.Fatal(err)
	}
	e, err := m.Evaluate(im, 2000, 5)
	if err != nil {
		t.Fatal(err)
	}
	if a.NegLogPx > e.NegLogPx+0.01 {
		t.Errorf("AIS %.3f above IW %.3f with as many decoder rows", a.NegLogPx, e.NegLogPx)
	}
	if e.NegLogPx > e.NegELBO {
		t.Errorf("IW %.3f above −ELBO %.3f", e.NegLogPx, e.NegELBO)
	}
	t.Logf("−ELBO %.2f, IW (K = 2000) %.2f, AIS (100 steps, 2 chains) %.2f", e.NegELBO, e.NegLogPx, a.NegLogPx)
}

func TestAISDeterministicAcrossGOMAXPROCS(t *testing.T) {
	m, im := peakedModel(t, 5)
	run := func(procs int) (*AISEval, *BDMCEval) {
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
		a, err := m.AIS(im, AISOptions{Steps: 30, Chains: 3, Seed: 9})
		if err != nil {
			t.Fatal(err)
		}
		b, err := m.BDMC(5, AISOptions{Steps: 30, Chains: 3, Seed: 9})
		if err != nil {
			t.Fatal(err)
		}
		return a, b
	}
	a1, b1 := run(1)
	a4, b4 := run(4)
	for i := range a1.PerImage {
		if a1.PerImage[i] != a4.PerImage[i] {
			t.Errorf("image %d: %v with GOMAXPROCS=1, %v with 4", i, a1.PerImage[i], a4.PerImage[i])
		}
	}
	if *b1 != *b4 {
		t.Errorf("BDMC: %+v with GOMAXPROCS=1, %+v with 4", *b1, *b4)
	}
}

func TestAISErrors(t *testing.T) {
	m, im := peakedModel(t, 2)
	wrong := &dataset.Images{N: 1, Channels: 1, Height: 3, Width: 3, Pixels: make([]float64, 9)}
	nan := &dataset.Images{N: 1, Channels: 1, Height: 4, Width: 4, Pixels: make([]float64, 16)}
	nan.Pixels[3] = math.NaN()
	good := AISOptions{Steps: 2, Chains: 2, Seed: 1}
	for _, c := range []struct {
		name string
		im   *dataset.Images
		opt  AISOptions
		want string
	}{
		{"no steps", im, AISOptions{Chains: 2}, "steps"},
		{"no chains", im, AISOptions{Steps: 2}, "chains"},
		{"nil images", nil, good, "no images"},
		{"wrong size", wrong, good, "9 pixels"},
		{"NaN pixel", nan, good, "NaN"},
		{"too few pixels", &dataset.Images{N: 2, Channels: 1, Height: 4, Width: 4, Pixels: make([]float64, 16)}, good, "16 pixels for 2 images"},
	} {
		if _, err := m.AIS(c.im, c.opt); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one naming %q", c.name, err, c.want)
		}
	}
	if _, err := m.BDMC(0, good); err == nil || !strings.Contains(err.Error(), "n = 0") {
		t.Errorf("BDMC with no images: error %v", err)
	}
	if _, err := m.BDMC(1, AISOptions{Steps: 2}); err == nil || !strings.Contains(err.Error(), "chains") {
		t.Errorf("BDMC with no chains: error %v", err)
	}
	bad := &Model{cfg: m.cfg, dec: nn.Sequential{nn.ReLU{}}}
	if _, err := bad.AIS(im, good); err == nil || !strings.Contains(err.Error(), "decoder") {
		t.Errorf("decoder that is not dense layers: error %v", err)
	}
}
