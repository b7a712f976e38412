package vae

import (
	"math/rand/v2"
	"testing"

	"github.com/permlab/permlab/ad"
	"github.com/permlab/permlab/dataset"
	"github.com/permlab/permlab/dist"
	"github.com/permlab/permlab/nn"
)

// benchSetup returns the MNIST-sized model with estimator e and products
// in precision p, and 100 random grey-level images.
func benchSetup(e Estimator, p nn.Precision) (*Model, *dataset.Images, *rand.Rand) {
	m, _ := New(Config{Input: 784, Latents: 20, Classes: 10, Hidden: []int{512, 256}, Estimator: e, Precision: p}, rand.New(rand.NewPCG(1, 1)))
	ims := &dataset.Images{N: 100, Channels: 1, Height: 28, Width: 28, Pixels: make([]float64, 100*784)}
	r := rand.New(rand.NewPCG(2, 2))
	for i := range ims.Pixels {
		ims.Pixels[i] = r.Float64()
	}
	return m, ims, r
}

// BenchmarkStep measures one training step's loss and gradient for the
// MNIST model at batch 100 (500 steps are one epoch of 50,000 images)
// through Task, which is vi.FitAmortized's path (vi.AmortizedTask),
// binarization and noise included, with the dense layers' products in
// float64 and in float32.
func BenchmarkStep(b *testing.B) {
	for _, e := range estimators {
		for _, p := range []nn.Precision{nn.Float64, nn.Float32} {
			b.Run(e.String()+"/"+p.String(), func(b *testing.B) { benchStep(b, e, p) })
		}
	}
}

func benchStep(b *testing.B, e Estimator, p nn.Precision) {
	m, ims, r := benchSetup(e, p)
	task, _ := NewTask(m, ims, DefaultAnneal())
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
}

// BenchmarkStepLossNoise is BenchmarkStep through LossNoise with the
// binary images and the noise given (the step benchmarks/vae times against
// PyTorch, less its Adam update), in float64 and float32, for comparing
// the overhead of the fit's path.
func BenchmarkStepLossNoise(b *testing.B) {
	for _, e := range estimators {
		for _, p := range []nn.Precision{nn.Float64, nn.Float32} {
			b.Run(e.String()+"/"+p.String(), func(b *testing.B) { benchStepLossNoise(b, e, p) })
		}
	}
}

func benchStepLossNoise(b *testing.B, e Estimator, p nn.Precision) {
	m, ims, r := benchSetup(e, p)
	xb, _ := Binarize(nil, ims.Pixels, r)
	x := &ad.Tensor{Shape: []int{100, 784}, Data: xb}
	g, _ := dist.GumbelNoise(r, 100, 20, 10)
	tp := ad.NewTape()
	for b.Loop() {
		tp.Reset()
		l, err := m.LossNoise(tp, tp.Const(x), 0.7, g)
		if err != nil {
			b.Fatal(err)
		}
		if err := tp.Backward(l); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkAIS measures annealed importance sampling on one image of the
// MNIST-sized model: 100 steps of 4 chains, that is 4,000 decoder rows
// (b.N images, one at a time on one goroutine).
func BenchmarkAIS(b *testing.B) {
	m, ims, _ := benchSetup(GumbelSoftmax, nn.Float64)
	one := ims.Subset([]int{0})
	b.ResetTimer()
	for range b.N {
		if _, err := m.AIS(one, AISOptions{Steps: 100, Chains: 4, Seed: 1}); err != nil {
			b.Fatal(err)
		}
	}
}
