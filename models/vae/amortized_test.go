package vae

import (
	"context"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/permlab/permlab/nn"

	"github.com/permlab/permlab/ad"
	"github.com/permlab/permlab/ad/optim"
	"github.com/permlab/permlab/dataset"
	"github.com/permlab/permlab/dist"
	"github.com/permlab/permlab/models"
	"github.com/permlab/permlab/nn/train"
	"github.com/permlab/permlab/vi"
)

// mlp applies a stack of dense layers, given as the parameters W (in, out)
// and b of each in order, with a ReLU after all but the last, to the rows
// of x (n × in values), with plain loops.
func mlp(ps []*ad.Param, x []float64, n int) []float64 {
	for li := 0; li < len(ps); li += 2 {
		w, b := ps[li].Value, ps[li+1].Value
		in, out := w.Shape[0], w.Shape[1]
		y := make([]float64, n*out)
		for r := range n {
			for j := range out {
				v := b.Data[j]
				for k := range in {
					v += x[r*in+k] * w.Data[k*out+j]
				}
				if li+2 < len(ps) {
					v = math.Max(v, 0)
				}
				y[r*out+j] = v
			}
		}
		x = y
	}
	return x
}

// lse returns log Σ exp(v_i) with plain loops.
func lse(v []float64) float64 {
	mx := math.Inf(-1)
	for _, x := range v {
		mx = math.Max(mx, x)
	}
	var s float64
	for _, x := range v {
		s += math.Exp(x - mx)
	}
	return mx + math.Log(s)
}

// logExpConcrete returns the ExpConcrete log density at x ∈ R^C with
// location logits a and temperature λ (Maddison et al. 2016, appendix):
//
//	log (C−1)! + (C−1) log λ + Σ_c (a_c − λ x_c) − C log Σ_c exp(a_c − λ x_c).
func logExpConcrete(x, a []float64, lambda float64) float64 {
	c := len(x)
	v := make([]float64, c)
	lg, _ := math.Lgamma(float64(c))
	out := lg + float64(c-1)*math.Log(lambda)
	for i := range c {
		v[i] = a[i] - lambda*x[i]
		out += v[i]
	}
	return out - float64(c)*lse(v)
}

// plainLoss is the loss of a step of the VAE m, computed with plain float64
// loops from the formulas of the package documentation and none of the code
// under test (no tape, no package vi, dist or nn code): for binary images x
// (b × Input) and standard Gumbel noise g (b × Latents × Classes), the mean
// over images of BCE(f(softmax(u)), x) + D, u = (l(x) + g)/τ, where D is
//
//	gumbel-softmax  Σ_lc q_lc log(C q_lc)
//	concrete        Σ_l log q_τ(log y_l) − log p_τp(log y_l)   (ExpConcrete densities)
//	gumbel-space    Σ_lc KL(Gumbel(l_lc/τ, 1/τ) ‖ Gumbel(0, 1/τ_p)),
//
// with the closed form, for Gumbels of locations μ₁, μ₂ and scales β₁, β₂,
// KL = log(β₂/β₁) − γ − 1 + (β₁γ + μ₁ − μ₂)/β₂ + exp((μ₂ − μ₁)/β₂) Γ(1 + β₁/β₂).
func plainLoss(m *Model, x, g []float64, b int, tau, tauP float64) float64 {
	cfg := m.Config()
	nl, nc := cfg.Latents, cfg.Classes
	logits := mlp(m.enc.Params(), x, b)
	y := make([]float64, b*nl*nc)
	var div float64
	for r := range b * nl {
		l := logits[r*nc : (r+1)*nc]
		u := make([]float64, nc)
		for c := range nc {
			u[c] = (l[c] + g[r*nc+c]) / tau
		}
		lu, ll := lse(u), lse(l)
		logy := make([]float64, nc)
		for c := range nc {
			logy[c] = u[c] - lu
			y[r*nc+c] = math.Exp(logy[c])
		}
		switch cfg.Estimator {
		case GumbelSoftmax:
			for c := range nc {
				lq := l[c] - ll
				div += math.Exp(lq) * (lq + math.Log(float64(nc)))
			}
		case Concrete:
			div += logExpConcrete(logy, l, tau) - logExpConcrete(logy, make([]float64, nc), tauP)
		case GumbelSpace:
			const euler = 0.57721566490153286
			b1, b2 := 1/tau, 1/tauP
			for c := range nc {
				mu1 := l[c] / tau
				div += math.Log(b2/b1) - euler - 1 + (b1*euler+mu1)/b2 + math.Exp(-mu1/b2)*math.Gamma(1+b1/b2)
			}
		}
	}
	f := mlp(m.dec.Params(), y, b)
	var rec float64
	for i, v := range f {
		rec += math.Max(v, 0) - v*x[i] + math.Log1p(math.Exp(-math.Abs(v)))
	}
	return (rec + div) / float64(b)
}

// TestLossAgainstPlainLoops checks the loss of a training step, through
// Task (vi.AmortizedTask on Amortized, the path of vi.FitAmortized) and
// through LossNoise, against plainLoss on the same binarization and Gumbel
// noise, for each estimator and prior temperature, to 10⁻¹² relative; and
// that the two paths, which share the KL code (vi.CatDivergence) but not the
// likelihood or the reductions, have the same gradient.
func TestLossAgainstPlainLoops(t *testing.T) {
	ims := prototypes(40, 3)
	a := Anneal{Start: 1, Min: 0.5, Rate: 0.05, Every: 2}
	batch := []int{3, 17, 0, 39, 8, 22, 5, 11, 30, 2}
	for _, e := range estimators {
		for _, pt := range []float64{0, 0.7} {
			cfg := tinyConfig(e)
			cfg.PriorTemp = pt
			m, err := New(cfg, rand.New(rand.NewPCG(1, 1)))
			if err != nil {
				t.Fatal(err)
			}
			// Move the biases off zero so that they matter.
			r := rand.New(rand.NewPCG(6, 6))
			for _, p := range m.Params() {
				if strings.HasSuffix(p.Name, ".b") {
					for i := range p.Value.Data {
						p.Value.Data[i] = 0.3 * r.NormFloat64()
					}
				}
			}
			task, err := NewTask(m, ims, a)
			if err != nil {
				t.Fatal(err)
			}
			for _, step := range []int{0, 5} {
				tau := a.At(step)
				tauP := tau
				if pt > 0 {
					tauP = pt
				}
				// The step's random source binarizes the batch, pixel by
				// pixel, then draws the noise.
				rs := train.StepRand(9, step)
				x := make([]float64, len(batch)*16)
				for i, n := range batch {
					for j := range 16 {
						if rs.Float64() < ims.Pixels[n*16+j] {
							x[i*16+j] = 1
						}
					}
				}
				g, err := dist.GumbelNoise(rs, len(batch), cfg.Latents, cfg.Classes)
				if err != nil {
					t.Fatal(err)
				}
				want := plainLoss(m, x, g.Data, len(batch), tau, tauP)

				task.SetStep(step)
				t1 := ad.NewTape()
				got, err := task.Loss(t1, batch, train.StepRand(9, step))
				if err != nil {
					t.Fatal(err)
				}
				t2 := ad.NewTape()
				got2, err := m.LossNoise(t2, t2.Const(&ad.Tensor{Shape: []int{len(batch), 16}, Data: x}), tau, g)
				if err != nil {
					t.Fatal(err)
				}
				for _, c := range []struct {
					path string
					v    float64
				}{{"Task", got.Item()}, {"LossNoise", got2.Item()}} {
					if d := math.Abs(c.v - want); !(d <= 1e-12*math.Abs(want)) {
						t.Errorf("%v, τ_p %v, step %d: loss %.17g through %s, %.17g by plain loops", e, pt, step, c.v, c.path, want)
					}
				}
				grads := backward(t, t1, got, m.Params())
				grads2 := backward(t, t2, got2, m.Params())
				for i, p := range m.Params() {
					for j := range grads[i] {
						if d := math.Abs(grads[i][j] - grads2[i][j]); !(d <= 1e-12*math.Max(1, math.Abs(grads[i][j]))) {
							t.Fatalf("%v, τ_p %v, step %d: ∂/∂%s[%d] %.17g through Task, %.17g through LossNoise", e, pt, step, p.Name, j, grads[i][j], grads2[i][j])
						}
					}
				}
			}
		}
	}
}

// TestTaskIsTheAmortizedPath checks that Task trains the parameters
// vi.FitAmortized trains, Model.Params() in order, and that its loss is
// that of vi.NewAmortizedTask with Model.AmortizedOptions bit for bit.
func TestTaskIsTheAmortizedPath(t *testing.T) {
	ims := prototypes(20, 3)
	a := Anneal{Start: 1, Min: 0.5, Rate: 0.05, Every: 2}
	m, err := New(tinyConfig(Concrete), rand.New(rand.NewPCG(1, 1)))
	if err != nil {
		t.Fatal(err)
	}
	am, err := NewAmortized(m, ims)
	if err != nil {
		t.Fatal(err)
	}
	o, err := m.AmortizedOptions(a)
	if err != nil {
		t.Fatal(err)
	}
	o.BatchSize, o.Epochs = 5, 2
	at, err := vi.NewAmortizedTask(am, m.Encoder(), o)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(at.Params(), m.Params()) {
		t.Fatal("the amortized task's parameters are not Model.Params() in order")
	}
	task, err := NewTask(m, ims, a)
	if err != nil {
		t.Fatal(err)
	}
	task.SetStep(3)
	at.SetStep(3)
	l1, err := task.Loss(ad.NewTape(), []int{4, 1, 19}, train.StepRand(2, 3))
	if err != nil {
		t.Fatal(err)
	}
	l2, err := at.Loss(ad.NewTape(), []int{4, 1, 19}, train.StepRand(2, 3))
	if err != nil {
		t.Fatal(err)
	}
	if math.Float64bits(l1.Item()) != math.Float64bits(l2.Item()) || task.Temp() != a.At(3) {
		t.Errorf("Task loss %.17g at τ %v, vi.AmortizedTask %.17g at τ %v", l1.Item(), task.Temp(), l2.Item(), a.At(3))
	}
	if _, err := m.AmortizedOptions(Anneal{Start: 1, Min: 2}); err == nil || !strings.Contains(err.Error(), "Min") {
		t.Errorf("AmortizedOptions with Min > Start: err %v", err)
	}
}

// backward returns the gradients of loss with respect to params, zeroing
// them after.
func backward(t *testing.T, tp *ad.Tape, loss *ad.Var, params []*ad.Param) [][]float64 {
	t.Helper()
	for _, p := range params {
		p.ZeroGrad()
	}
	if err := tp.Backward(loss); err != nil {
		t.Fatal(err)
	}
	out := make([][]float64, len(params))
	for i, p := range params {
		out[i] = slices.Clone(p.Grad.Data)
		p.ZeroGrad()
	}
	return out
}

// TestFitAmortizedVAE trains the tiny VAE with vi.FitAmortized and checks
// that its held-out −ELBO falls, for each estimator.
func TestFitAmortizedVAE(t *testing.T) {
	ims := prototypes(240, 1)
	tr, held, err := ims.Split(200)
	if err != nil {
		t.Fatal(err)
	}
	type run struct {
		e Estimator
		p nn.Precision
	}
	var runs []run
	for _, e := range estimators {
		runs = append(runs, run{e, nn.Float64})
	}
	// The float32 products learn as well (one estimator, to keep it short).
	runs = append(runs, run{GumbelSpace, nn.Float32})
	for _, r := range runs {
		e := r.e
		cfg := tinyConfig(e)
		cfg.Precision = r.p
		m, err := New(cfg, rand.New(rand.NewPCG(2, 2)))
		if err != nil {
			t.Fatal(err)
		}
		am, err := NewAmortized(m, tr)
		if err != nil {
			t.Fatal(err)
		}
		val, err := NewAmortized(m, held)
		if err != nil {
			t.Fatal(err)
		}
		o, err := m.AmortizedOptions(Anneal{Start: 1, Min: 0.5, Rate: 0.01, Every: 10})
		if err != nil {
			t.Fatal(err)
		}
		o.BatchSize, o.Epochs, o.Seed, o.LR, o.Validation, o.EvalK = 20, 100, 4, optim.Constant(0.01), val, 4
		res, err := vi.FitAmortized(context.Background(), am, m.Encoder(), o)
		if err != nil {
			t.Fatal(err)
		}
		first, last := res.Epochs[0].HeldOut, res.Epochs[len(res.Epochs)-1].HeldOut
		t.Logf("%v, %v: held-out −ELBO %.3f after the first epoch, %.3f after the last", e, r.p, first, last)
		// 16 pixels: 11.1 nats at chance; log 4 + 16·H(0.05) ≈ 4.6 at best.
		if !(last < first-2) || !(last < 7) {
			t.Errorf("%v: held-out −ELBO went from %.3f to %.3f", e, first, last)
		}
		// The evaluation agrees with Evaluate's on the same model: both
		// estimate the discrete −ELBO (different binarizations and noise).
		ev, err := m.Evaluate(held, 4, 0)
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(ev.NegELBO-last) > 4*math.Hypot(ev.NegELBOSE, res.Epochs[len(res.Epochs)-1].HeldOutStdErr)+0.2 {
			t.Errorf("%v: EvalAmortized %.3f, Evaluate %.3f ± %.3f", e, last, ev.NegELBO, ev.NegELBOSE)
		}
	}
}

// TestAmortizedBadInput checks that images of the wrong size and pixels
// that are NaN or outside [0, 1] are errors naming the problem.
func TestAmortizedBadInput(t *testing.T) {
	m, err := New(tinyConfig(GumbelSoftmax), rand.New(rand.NewPCG(1, 1)))
	if err != nil {
		t.Fatal(err)
	}
	wrong := &dataset.Images{N: 2, Channels: 1, Height: 5, Width: 5, Pixels: make([]float64, 50)}
	if _, err := NewAmortized(m, wrong); err == nil || !strings.Contains(err.Error(), "1×5×5 = 25 pixels, the model takes 16") {
		t.Errorf("wrong image size: error %v", err)
	}
	ims := prototypes(30, 1)
	ims.Pixels[7*16+3] = math.NaN()
	am, err := NewAmortized(m, ims)
	if err != nil {
		t.Fatal(err)
	}
	_, err = vi.FitAmortized(context.Background(), am, m.Encoder(), vi.AmortizedOptions{BatchSize: 30, Epochs: 1})
	if err == nil || !strings.Contains(err.Error(), "image 7, pixel 3 is NaN") {
		t.Errorf("NaN pixel: error %v", err)
	}
	ims.Pixels[7*16+3] = 1.5
	if _, err := am.Observe([]int{7}, rand.New(rand.NewPCG(1, 1))); err == nil || !strings.Contains(err.Error(), "image 7, pixel 3 is 1.5") {
		t.Errorf("pixel 1.5: error %v", err)
	}
	if _, err := am.Observe([]int{30}, rand.New(rand.NewPCG(1, 1))); err == nil || !strings.Contains(err.Error(), "image 30 outside") {
		t.Errorf("image 30 of 30: error %v", err)
	}
}

// TestAmortizedContract checks the VAE's sites against the contract.
func TestAmortizedContract(t *testing.T) {
	m, err := New(tinyConfig(Concrete), rand.New(rand.NewPCG(1, 1)))
	if err != nil {
		t.Fatal(err)
	}
	am, err := NewAmortized(m, prototypes(5, 1))
	if err != nil {
		t.Fatal(err)
	}
	spec, err := models.CheckAmortized(am)
	if err != nil {
		t.Fatal(err)
	}
	if spec.Global != nil || len(spec.Cats) != 1 || spec.Cats[0].D != 2 || spec.Cats[0].C != 4 || spec.N != 5 {
		t.Errorf("spec %+v", spec)
	}
	for _, e := range estimators {
		if e.String() != e.CatEstimator().String() {
			t.Errorf("%v is %v in package vi", e, e.CatEstimator())
		}
	}
}
