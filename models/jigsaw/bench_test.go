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
