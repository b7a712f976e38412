package vae

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/permlab/permlab/nn"

	"github.com/permlab/permlab/ad"
	"github.com/permlab/permlab/dataset"
	"github.com/permlab/permlab/dist"
	"github.com/permlab/permlab/models"
	"github.com/permlab/permlab/nn/train"
	"github.com/permlab/permlab/vi"
)

// tinyConfig is a VAE small enough to train in a test: 16 pixels, 2 latents of
// 4 classes.
func tinyConfig(e Estimator) Config {
	return Config{Input: 16, Latents: 2, Classes: 4, Hidden: []int{24}, Estimator: e}
}

// prototypes returns n 4×4 images, each a noisy copy of one of four
// patterns (the rows, the columns, the diagonal band, the border), with
// intensities 0.05 and 0.95 so that binarization keeps them apart.
func prototypes(n int, seed uint64) *dataset.Images {
	rng := rand.New(rand.NewPCG(seed, 9))
	ims := &dataset.Images{N: n, Channels: 1, Height: 4, Width: 4, Pixels: make([]float64, n*16)}
	for i := range n {
		k := rng.IntN(4)
		for y := range 4 {
			for x := range 4 {
				var on bool
				switch k {
				case 0:
					on = y < 2
				case 1:
					on = x < 2
				case 2:
					on = x-y <= 1 && y-x <= 1
				case 3:
					on = x == 0 || y == 0 || x == 3 || y == 3
				}
				v := 0.05
				if on {
					v = 0.95
				}
				ims.Pixels[i*16+y*4+x] = v
			}
		}
	}
	return ims
}

var estimators = []Estimator{GumbelSoftmax, Concrete, GumbelSpace}

func TestParseEstimator(t *testing.T) {
	for _, e := range estimators {
		got, err := ParseEstimator(e.String())
		if err != nil || got != e {
			t.Errorf("ParseEstimator(%q) = %v, %v", e.String(), got, err)
		}
	}
	if _, err := ParseEstimator("rebar"); err == nil || !strings.Contains(err.Error(), "rebar") {
		t.Errorf("ParseEstimator(rebar): err %v, want one naming it", err)
	}
}

// klTerm is the KL term of LossNoise, vi.CatDivergence, for logits l of
// shape (B, D, C) or (1, C) and the Gumbel-space sample u drawn from them.
func klTerm(t *ad.Tape, e Estimator, l, u *ad.Var, tau, tauPrior float64) *ad.Var {
	sh := l.Shape()
	c := sh[len(sh)-1]
	s := &models.CatSite{Name: SiteName, D: l.Size() / (sh[0] * c), C: c}
	kl, err := vi.CatDivergence(t, e.CatEstimator(), s, l, u, tau, tauPrior)
	if err != nil {
		t.Fail(err)
		return t.ConstScalar(math.NaN())
	}
	return kl
}

// mcKL estimates, by n draws, the expectation of the KL term klTerm of e
// for one distribution with logits l, recording each draw on a fresh tape.
func mcKL(e Estimator, l []float64, tau, tauPrior float64, n int, rng *rand.Rand) (mean, se float64) {
	vals := make([]float64, n)
	lt := &ad.Tensor{Shape: []int{1, len(l)}, Data: l}
	for i := range n {
		t := ad.NewTape()
		g, _ := dist.GumbelNoise(rng, 1, len(l))
		lv := t.Const(lt)
		_, u := dist.ConcreteVar{Logits: lv, Temp: tau}.RsampleNoise(g)
		vals[i] = klTerm(t, e, lv, u, tau, tauPrior).Item()
	}
	return meanSE(vals)
}

// TestKLAgainstMonteCarlo compares each estimator's KL term with an
// independent Monte Carlo estimate of the divergence it stands for:
// the categorical KL from draws of the categorical, the Concrete KL from
// dist.Concrete's float64 sampler and density, the Gumbel-space KL from
// dist.Gumbel densities at Gumbel draws.
func TestKLAgainstMonteCarlo(t *testing.T) {
	l := []float64{0.7, -1.2, 0.1, 2.0, -0.3}
	const tau, tauPrior, n = 0.7, 0.5, 40000
	rng := rand.New(rand.NewPCG(3, 4))
	k := float64(len(l))

	// Gumbel-Softmax: analytic KL(q ‖ uniform) against draws c ~ q of
	// log q(c) + log k. The term has no noise: every draw gives the same.
	gs, gsSE := mcKL(GumbelSoftmax, l, tau, tauPrior, 10, rng)
	if gsSE != 0 {
		t.Errorf("Gumbel-Softmax KL varies with the noise (standard error %v)", gsSE)
	}
	lq := logSoftmaxRows(l, len(l))
	ref := make([]float64, n)
	for i := range ref {
		ref[i] = lq[gumbelMax(lq, rng)] + math.Log(k)
	}
	checkClose(t, "Gumbel-Softmax", gs, ref)

	// Concrete: the single-sample estimator, averaged, against the KL
	// between dist.Concrete densities at dist.Concrete draws.
	c, cSE := mcKL(Concrete, l, tau, tauPrior, n, rng)
	q := dist.Concrete{Logits: l, Temp: tau}
	p := dist.Concrete{Logits: make([]float64, len(l)), Temp: tauPrior}
	for i := range ref {
		y, _ := q.Rand(nil, rng)
		a, _ := q.LogProb(y)
		b, _ := p.LogProb(y)
		ref[i] = a - b
	}
	rm, rse := meanSE(ref)
	if d := math.Abs(c - rm); d > 4*math.Hypot(cSE, rse) {
		t.Errorf("Concrete KL: estimator mean %.4f ± %.4f, reference %.4f ± %.4f", c, cSE, rm, rse)
	}

	// Gumbel space: the closed form against log Gumbel(l/τ, 1/τ)(u) −
	// log Gumbel(0, 1/τ_p)(u) at u ~ Gumbel(l/τ, 1/τ).
	gsp, gspSE := mcKL(GumbelSpace, l, tau, tauPrior, 10, rng)
	if gspSE != 0 {
		t.Errorf("Gumbel-space KL varies with the noise (standard error %v)", gspSE)
	}
	for i := range ref {
		var s float64
		for _, li := range l {
			qd := dist.Gumbel{Mu: li / tau, Beta: 1 / tau}
			u := qd.Rand(rng)
			s += qd.LogProb(u) - dist.Gumbel{Mu: 0, Beta: 1 / tauPrior}.LogProb(u)
		}
		ref[i] = s
	}
	checkClose(t, "Gumbel space", gsp, ref)
}

// checkClose fails unless exact lies within 4 standard errors of the mean
// of draws.
func checkClose(t *testing.T, name string, exact float64, draws []float64) {
	t.Helper()
	m, se := meanSE(draws)
	if math.Abs(exact-m) > 4*se {
		t.Errorf("%s KL: closed form %.4f, Monte Carlo %.4f ± %.4f", name, exact, m, se)
	}
}

// TestKLGradients checks the gradient of each KL term with respect to the
// logits, the noise held fixed, by finite differences.
func TestKLGradients(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	l := ad.Zeros(2, 3, 4)
	for i := range l.Data {
		l.Data[i] = rng.NormFloat64()
	}
	g, _ := dist.GumbelNoise(rng, 2, 3, 4)
	for _, e := range estimators {
		err := ad.CheckGradient(func(t *ad.Tape, xs []*ad.Var) *ad.Var {
			_, u := dist.ConcreteVar{Logits: xs[0], Temp: 0.6}.RsampleNoise(g)
			return klTerm(t, e, xs[0], u, 0.6, 0.8)
		}, l)
		if err != nil {
			t.Errorf("%v: %v", e, err)
		}
	}
}

// TestLossGradient checks the gradient of the whole loss (encoder, relaxed
// sample, decoder, Bernoulli likelihood and KL) with respect to every
// parameter, the noise held fixed, by central differences on a few
// coordinates of each.
func TestLossGradient(t *testing.T) {
	for _, e := range estimators {
		m, err := New(tinyConfig(e), rand.New(rand.NewPCG(1, 1)))
		if err != nil {
			t.Fatal(err)
		}
		x, _ := Binarize(nil, prototypes(3, 1).Pixels, rand.New(rand.NewPCG(2, 2)))
		g, _ := dist.GumbelNoise(rand.New(rand.NewPCG(3, 3)), 3, 2, 4)
		checkParamGradient(t, m, e, x, g)
	}
}

// checkParamGradient compares the gradient of LossNoise with central
// differences at the first, middle and last coordinate of every parameter.
func checkParamGradient(t *testing.T, m *Model, e Estimator, x []float64, g *ad.Tensor) {
	t.Helper()
	xt := &ad.Tensor{Shape: []int{len(x) / 16, 16}, Data: x}
	loss := func() float64 {
		tp := ad.NewTape()
		l, err := m.LossNoise(tp, tp.Const(xt), 0.7, g)
		if err != nil {
			t.Fatal(err)
		}
		return l.Item()
	}
	tp := ad.NewTape()
	for _, p := range m.Params() {
		p.ZeroGrad()
	}
	l, err := m.LossNoise(tp, tp.Const(xt), 0.7, g)
	if err != nil {
		t.Fatal(err)
	}
	if err := tp.Backward(l); err != nil {
		t.Fatal(err)
	}
	const h = 1e-5
	for _, p := range m.Params() {
		for _, i := range []int{0, len(p.Value.Data) / 2, len(p.Value.Data) - 1} {
			v := p.Value.Data[i]
			p.Value.Data[i] = v + h
			up := loss()
			p.Value.Data[i] = v - h
			down := loss()
			p.Value.Data[i] = v
			num := (up - down) / (2 * h)
			if got := p.Grad.Data[i]; math.Abs(got-num) > 1e-5*math.Max(1, math.Abs(num)) {
				t.Errorf("%v: ∂loss/∂%s[%d] = %.8g, finite difference %.8g", e, p.Name, i, got, num)
			}
		}
	}
}

// factorizedEntropy returns the negative log-likelihood per image of the
// best model that ignores the latents, independent Bernoulli pixels with
// the data's means, evaluated on binary images x of d pixels.
func factorizedEntropy(x []float64, d int) float64 {
	n := len(x) / d
	var nll float64
	for j := range d {
		var p float64
		for i := range n {
			p += x[i*d+j]
		}
		p /= float64(n)
		if p > 0 && p < 1 {
			nll -= p*math.Log(p) + (1-p)*math.Log(1-p)
		}
	}
	return nll
}

// fitTiny trains a tiny VAE with estimator e on 400 prototype images.
func fitTiny(t *testing.T, e Estimator, epochs int, o train.Options) (*Model, *train.Result) {
	t.Helper()
	m, err := New(tinyConfig(e), rand.New(rand.NewPCG(7, 7)))
	if err != nil {
		t.Fatal(err)
	}
	task, err := NewTask(m, prototypes(400, 1), Anneal{Start: 1, Min: 0.5, Rate: 2e-3, Every: 20})
	if err != nil {
		t.Fatal(err)
	}
	o.N, o.BatchSize, o.Epochs, o.Seed = 400, 20, epochs, 3
	res, err := train.Run(context.Background(), m.Params(), task, o)
	if err != nil {
		t.Fatal(err)
	}
	return m, res
}

// TestTrainingUsesLatents trains each estimator on images drawn from four
// prototypes and checks that the held-out −ELBO falls below the entropy of
// the best model without latents, which only a VAE that encodes the
// prototype in z can reach.
func TestTrainingUsesLatents(t *testing.T) {
	test := prototypes(300, 2)
	bin, _ := Binarize(nil, test.Pixels, rand.New(rand.NewPCG(0, 1))) // Evaluate's binarization
	floor := factorizedEntropy(bin, 16)
	for _, e := range estimators {
		m0, _ := New(tinyConfig(e), rand.New(rand.NewPCG(7, 7)))
		before, err := m0.Evaluate(test, 1, 0)
		if err != nil {
			t.Fatal(err)
		}
		m, res := fitTiny(t, e, 150, train.Options{LR: constLR(0.01)})
		after, err := m.Evaluate(test, 1, 0)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%v: −ELBO %.2f → %.2f (train %.2f → %.2f); factorized entropy %.2f",
			e, before.NegELBO, after.NegELBO, res.Epochs[0].Loss, res.Epochs[len(res.Epochs)-1].Loss, floor)
		if after.NegELBO > floor-1 {
			t.Errorf("%v: held-out −ELBO %.2f after training, want below the factorized entropy %.2f by a nat",
				e, after.NegELBO, floor)
		}
		if after.NegELBO >= before.NegELBO {
			t.Errorf("%v: −ELBO rose from %.2f to %.2f", e, before.NegELBO, after.NegELBO)
		}
	}
}

type constLR float64

func (c constLR) At(int) float64 { return float64(c) }

// canceller stops a run at a given step.
type canceller struct {
	*Task
	at     int
	cancel func()
}

func (c *canceller) SetStep(s int) {
	if s == c.at {
		c.cancel()
	}
	c.Task.SetStep(s)
}

// TestResume interrupts training in the middle of an epoch and between two
// temperature updates, resumes from the checkpoint with fresh parameters,
// and checks that the result equals an uninterrupted run bit for bit.
func TestResume(t *testing.T) {
	for _, e := range estimators {
		want, _ := fitTiny(t, e, 3, train.Options{LR: constLR(0.01)})
		ck := filepath.Join(t.TempDir(), "ck")
		m, _ := New(tinyConfig(e), rand.New(rand.NewPCG(7, 7)))
		task, _ := NewTask(m, prototypes(400, 1), Anneal{Start: 1, Min: 0.5, Rate: 2e-3, Every: 20})
		ctx, cancel := context.WithCancel(context.Background())
		o := train.Options{N: 400, BatchSize: 20, Epochs: 3, Seed: 3, LR: constLR(0.01), Checkpoint: ck}
		_, err := train.Run(ctx, m.Params(), &canceller{Task: task, at: 33, cancel: cancel}, o)
		cancel()
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("%v: interrupted run: %v", e, err)
		}
		m2, _ := New(tinyConfig(e), rand.New(rand.NewPCG(8, 8))) // other weights: all state comes from the file
		task2, _ := NewTask(m2, prototypes(400, 1), Anneal{Start: 1, Min: 0.5, Rate: 2e-3, Every: 20})
		res, err := train.Run(context.Background(), m2.Params(), task2, o)
		if err != nil {
			t.Fatal(err)
		}
		if res.Resumed == 0 {
			t.Fatalf("%v: the second run did not resume", e)
		}
		for i, p := range m2.Params() {
			for j, v := range p.Value.Data {
				if w := want.Params()[i].Value.Data[j]; math.Float64bits(v) != math.Float64bits(w) {
					t.Fatalf("%v: %s[%d] = %v after resuming, %v uninterrupted", e, p.Name, j, v, w)
				}
			}
		}
	}
}

func TestBadInput(t *testing.T) {
	if _, err := New(Config{Input: 16, Latents: 2, Classes: 1}, rand.New(rand.NewPCG(1, 1))); err == nil || !strings.Contains(err.Error(), "Classes") {
		t.Errorf("New with one class: err %v, want one naming Classes", err)
	}
	bad := tinyConfig(Concrete)
	bad.Precision = nn.Precision(3)
	if _, err := New(bad, rand.New(rand.NewPCG(1, 1))); err == nil || !strings.Contains(err.Error(), "Precision(3)") {
		t.Errorf("New with an unknown precision: err %v", err)
	}
	m, err := New(tinyConfig(Concrete), rand.New(rand.NewPCG(1, 1)))
	if err != nil {
		t.Fatal(err)
	}
	mnistSized := &dataset.Images{N: 2, Channels: 1, Height: 28, Width: 28, Pixels: make([]float64, 2*784)}
	if _, err := NewTask(m, mnistSized, DefaultAnneal()); err == nil || !strings.Contains(err.Error(), "784") {
		t.Errorf("NewTask with 28×28 images for a 16-pixel model: err %v, want one naming 784", err)
	}
	if _, err := NewTask(m, prototypes(4, 1), Anneal{Start: 1, Min: 2}); err == nil || !strings.Contains(err.Error(), "Min") {
		t.Errorf("NewTask with Min > Start: err %v", err)
	}
	ims := prototypes(4, 1)
	ims.Pixels[2*16+5] = math.NaN()
	task, err := NewTask(m, ims, DefaultAnneal())
	if err != nil {
		t.Fatal(err)
	}
	tp := ad.NewTape()
	_, err = task.Loss(tp, []int{0, 2}, rand.New(rand.NewPCG(1, 1)))
	if err == nil || !strings.Contains(err.Error(), "image 2, pixel 5 is NaN") {
		t.Errorf("Loss on a batch with a NaN: err %v, want one naming image 2, pixel 5", err)
	}
	x := tp.Const(ad.Zeros(3, 15))
	if _, err := m.Loss(tp, x, 1, rand.New(rand.NewPCG(1, 1))); err == nil || !strings.Contains(err.Error(), "shape") {
		t.Errorf("Loss on (3, 15) images: err %v, want one about the shape", err)
	}
	if _, err := m.Loss(tp, tp.Const(ad.Zeros(3, 16)), 0, rand.New(rand.NewPCG(1, 1))); err == nil || !strings.Contains(err.Error(), "temperature") {
		t.Errorf("Loss at temperature 0: err %v", err)
	}
	if _, err := m.Evaluate(prototypes(4, 1), 0, 1); err == nil {
		t.Error("Evaluate with k = 0: no error")
	}
	if _, err := m.Reconstruct(make([]float64, 15), 1); err == nil {
		t.Error("Reconstruct with 15 pixels: no error")
	}
}

// TestIWBound checks that the importance-weighted estimate of log p(x) is at
// least the ELBO on average, and that with one sample both estimate the same
// quantity.
func TestIWBound(t *testing.T) {
	m, _ := fitTiny(t, GumbelSoftmax, 5, train.Options{LR: constLR(0.01)})
	test := prototypes(300, 2)
	for _, k := range []int{1, 50} {
		ev, err := m.Evaluate(test, k, 4)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("K = %d: −ELBO %.3f ± %.3f, IW −log p(x) %.3f ± %.3f", k, ev.NegELBO, ev.NegELBOSE, ev.NegLogPx, ev.NegLogPxSE)
		switch {
		case k == 1 && math.Abs(ev.NegLogPx-ev.NegELBO) > 4*ev.NegLogPxSE:
			t.Errorf("K = 1: IW %.3f and ELBO %.3f differ by more than 4 standard errors (%.3f)", ev.NegLogPx, ev.NegELBO, ev.NegLogPxSE)
		case k > 1 && ev.NegLogPx > ev.NegELBO:
			t.Errorf("K = %d: IW −log p(x) %.3f above −ELBO %.3f", k, ev.NegLogPx, ev.NegELBO)
		}
	}
}

// TestDeterministicAcrossGOMAXPROCS checks that a full-size loss and its
// gradients do not depend on the number of threads.
func TestDeterministicAcrossGOMAXPROCS(t *testing.T) {
	grads := func(procs int) []float64 {
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
		m, _ := New(DefaultConfig(), rand.New(rand.NewPCG(1, 1)))
		ims := &dataset.Images{N: 8, Channels: 1, Height: 28, Width: 28, Pixels: make([]float64, 8*784)}
		r := rand.New(rand.NewPCG(2, 2))
		for i := range ims.Pixels {
			ims.Pixels[i] = r.Float64()
		}
		task, _ := NewTask(m, ims, DefaultAnneal())
		tp := ad.NewTape()
		l, err := task.Loss(tp, []int{0, 1, 2, 3, 4, 5, 6, 7}, rand.New(rand.NewPCG(3, 3)))
		if err != nil {
			t.Fatal(err)
		}
		if err := tp.Backward(l); err != nil {
			t.Fatal(err)
		}
		out := []float64{l.Item()}
		for _, p := range m.Params() {
			out = append(out, p.Grad.Data...)
		}
		return out
	}
	a, b := grads(1), grads(4)
	for i := range a {
		if math.Float64bits(a[i]) != math.Float64bits(b[i]) {
			t.Fatalf("value %d: %v with GOMAXPROCS=1, %v with 4", i, a[i], b[i])
		}
	}
}

// exactNegLogPx returns −log p(x) of each of the n binary images x,
// enumerating the Classes^Latents states of z of a tiny model.
func exactNegLogPx(t *testing.T, m *Model, x []float64, n int) []float64 {
	t.Helper()
	cfg := m.Config()
	d, nl, nc := cfg.Input, cfg.Latents, cfg.Classes
	states := 1
	for range nl {
		states *= nc
	}
	z := ad.Zeros(states, nl*nc)
	for s := range states {
		for l, r := 0, s; l < nl; l, r = l+1, r/nc {
			z.Data[s*nl*nc+l*nc+r%nc] = 1
		}
	}
	tp := ad.NewTape()
	logits := m.Decode(tp, tp.Const(z)).Value()
	out := make([]float64, n)
	lw := make([]float64, states)
	for i := range n {
		for s := range states {
			var ll float64
			for j := range d {
				f := logits[s*d+j]
				ll -= math.Max(f, 0) - f*x[i*d+j] + math.Log1p(math.Exp(-math.Abs(f)))
			}
			lw[s] = ll - float64(nl)*math.Log(float64(nc))
		}
		out[i] = -logSumExp(lw)
	}
	return out
}

// TestIWAgainstEnumeration checks Evaluate against the exact −log p(x) of a
// tiny model: the −ELBO lies above it and the importance-weighted estimate
// with many samples converges to it from above.
func TestIWAgainstEnumeration(t *testing.T) {
	m, _ := fitTiny(t, Concrete, 5, train.Options{LR: constLR(0.01)})
	test := prototypes(200, 2)
	x, err := Binarize(nil, test.Pixels, rand.New(rand.NewPCG(4, 1))) // as Evaluate binarizes with seed 4
	if err != nil {
		t.Fatal(err)
	}
	exact, _ := meanSE(exactNegLogPx(t, m, x, test.N))
	ev, err := m.Evaluate(test, 2000, 4)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("exact %.4f, IW (K = %d) %.4f ± %.4f, −ELBO %.4f", exact, ev.K, ev.NegLogPx, ev.NegLogPxSE, ev.NegELBO)
	if ev.NegELBO < exact {
		t.Errorf("−ELBO %.4f below the exact −log p(x) %.4f", ev.NegELBO, exact)
	}
	if d := ev.NegLogPx - exact; d < -0.01 || d > 0.05 {
		t.Errorf("IW −log p(x) %.4f with K = %d, exact %.4f: want within [−0.01, 0.05] of it", ev.NegLogPx, ev.K, exact)
	}
}
