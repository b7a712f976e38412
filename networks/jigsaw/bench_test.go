package jigsaw

import (
	"math/rand/v2"
	"testing"

	"github.com/permlab/permlab/ad"
)

// benchStep measures one training step (forward and backward) on a batch
// of 32 random 28 × 28 images.
func benchStep(b *testing.B, cfg Config) {
	net, err := New(cfg, 1)
	if err != nil {
		b.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	labels := make([]int, 32)
	for i := range labels {
		labels[i] = i % cfg.Heads
	}
	z, err := MakePuzzles(net.Grid(), randomImages(rng, 32, 1, 28, 28), labels, rng)
	if err != nil {
		b.Fatal(err)
	}
	t := ad.NewTape()
	b.ResetTimer()
	for range b.N {
		t.Reset()
		if err := t.Backward(net.Loss(t, z, rng)); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkStepP3(b *testing.B) { benchStep(b, DefaultConfig(3)) }

func BenchmarkStepAssemblyP7(b *testing.B) {
	cfg := DefaultConfig(7)
	cfg.Kernel, cfg.Heads = 3, 10
	benchStep(b, cfg)
}

// best3 is the 3 × 3 network of the 24 px cut in networks/jigsaw/README.md
// (context, three rounds of edge matching, two-pixel strips).
func best3() Config {
	cfg := DefaultConfig(3)
	cfg.Crop, cfg.Filters, cfg.Hidden, cfg.Context, cfg.Refine, cfg.EdgeDepth = 24, 64, 256, true, 3, 2
	return cfg
}

func BenchmarkStepP3Crop24(b *testing.B) { benchStep(b, best3()) }

// BenchmarkStepP3Crop24LossPower is BenchmarkStepP3Crop24 with the loss on
// pixels raised to 0.5 (Config.LossPower): the cost of the lifting.
func BenchmarkStepP3Crop24LossPower(b *testing.B) {
	cfg := best3()
	cfg.LossPower = 0.5
	benchStep(b, cfg)
}
