package vae

import (
	"context"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/permlab/permlab/ad"
	"github.com/permlab/permlab/ad/optim"
	"github.com/permlab/permlab/dataset"
	"github.com/permlab/permlab/models"
	"github.com/permlab/permlab/models/nn/train"
	"github.com/permlab/permlab/vi"
)

// amortizedTask returns the models-contract view of m on ims, trained with
// the options that make it the model of Task.
func amortizedTask(t *testing.T, m *Model, ims *dataset.Images, a Anneal, batch int) *vi.AmortizedTask {
	t.Helper()
	am, err := NewAmortized(m, ims)
	if err != nil {
		t.Fatal(err)
	}
	cfg := m.Config()
	task, err := vi.NewAmortizedTask(am, m.Encoder(), vi.AmortizedOptions{BatchSize: batch, Epochs: 1,
		Estimator: cfg.Estimator.CatEstimator(), Tau: a, TauPrior: cfg.PriorTemp})
	if err != nil {
		t.Fatal(err)
	}
	return task
}

// TestAmortizedLossEqualsTask checks that the loss of a step through the
// models contract (vi.AmortizedTask on Amortized) equals that of Task, which
// is LossNoise with the same binarization and Gumbel noise, in value and in
// every parameter's gradient, for each estimator: both paths are the same
// model.
func TestAmortizedLossEqualsTask(t *testing.T) {
	ims := prototypes(40, 3)
	a := Anneal{Start: 1, Min: 0.5, Rate: 0.05, Every: 2}
	for _, e := range estimators {
		for _, pt := range []float64{0, 0.7} {
			cfg := tinyConfig(e)
			cfg.PriorTemp = pt
			m, err := New(cfg, rand.New(rand.NewPCG(1, 1)))
			if err != nil {
				t.Fatal(err)
			}
			task, err := NewTask(m, ims, a)
			if err != nil {
				t.Fatal(err)
			}
			at := amortizedTask(t, m, ims, a, 10)
			if !slices.Equal(at.Params(), m.Params()) {
				t.Fatal("the amortized task's parameters are not Model.Params() in order")
			}
			batch := []int{3, 17, 0, 39, 8, 22, 5, 11, 30, 2}
			for _, step := range []int{0, 5} {
				task.SetStep(step)
				at.SetStep(step)
				t1, t2 := ad.NewTape(), ad.NewTape()
				want, err := task.Loss(t1, batch, train.StepRand(9, step))
				if err != nil {
					t.Fatal(err)
				}
				got, err := at.Loss(t2, batch, train.StepRand(9, step))
				if err != nil {
					t.Fatal(err)
				}
				if d := math.Abs(got.Item() - want.Item()); d > 1e-12*math.Abs(want.Item()) {
					t.Errorf("%v, τ_p %v, step %d: loss %.17g through the contract, %.17g through Task", e, pt, step, got.Item(), want.Item())
				}
				grads := backward(t, t1, want, m.Params())
				grads2 := backward(t, t2, got, m.Params())
				for i, p := range m.Params() {
					for j := range grads[i] {
						if d := math.Abs(grads[i][j] - grads2[i][j]); d > 1e-12*math.Max(1, math.Abs(grads[i][j])) {
							t.Fatalf("%v, τ_p %v, step %d: ∂/∂%s[%d] %.17g through the contract, %.17g through Task", e, pt, step, p.Name, j, grads2[i][j], grads[i][j])
						}
					}
				}
			}
		}
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
	for _, e := range estimators {
		m, err := New(tinyConfig(e), rand.New(rand.NewPCG(2, 2)))
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
		res, err := vi.FitAmortized(context.Background(), am, m.Encoder(), vi.AmortizedOptions{
			BatchSize: 20, Epochs: 100, Seed: 4, LR: optim.Constant(0.01), Estimator: e.CatEstimator(),
			Tau: Anneal{Start: 1, Min: 0.5, Rate: 0.01, Every: 10}, Validation: val, EvalK: 4})
		if err != nil {
			t.Fatal(err)
		}
		first, last := res.Epochs[0].HeldOut, res.Epochs[len(res.Epochs)-1].HeldOut
		t.Logf("%v: held-out −ELBO %.3f after the first epoch, %.3f after the last", e, first, last)
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

// BenchmarkStepAmortized is BenchmarkStep through the models contract
// (vi.AmortizedTask on Amortized): the same model, loss and gradient, for
// comparing the overhead of the contract's path with Task's.
func BenchmarkStepAmortized(b *testing.B) {
	for _, e := range estimators {
		b.Run(e.String(), func(b *testing.B) {
			m, _ := New(Config{Input: 784, Latents: 20, Classes: 10, Hidden: []int{512, 256}, Estimator: e}, rand.New(rand.NewPCG(1, 1)))
			ims := &dataset.Images{N: 100, Channels: 1, Height: 28, Width: 28, Pixels: make([]float64, 100*784)}
			r := rand.New(rand.NewPCG(2, 2))
			for i := range ims.Pixels {
				ims.Pixels[i] = r.Float64()
			}
			am, _ := NewAmortized(m, ims)
			task, err := vi.NewAmortizedTask(am, m.Encoder(), vi.AmortizedOptions{BatchSize: 100, Epochs: 1,
				Estimator: e.CatEstimator(), Tau: DefaultAnneal()})
			if err != nil {
				b.Fatal(err)
			}
			batch := make([]int, 100)
			for i := range batch {
				batch[i] = i
			}
			tp := ad.NewTape()
			for b.Loop() {
				tp.Reset()
				l, err := task.Loss(tp, batch, r)
				if err != nil {
					b.Fatal(err)
				}
				if err := tp.Backward(l); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
