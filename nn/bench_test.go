package nn

import (
	"math/rand/v2"
	"testing"

	"github.com/permlab/permlab/ad"
	"github.com/permlab/permlab/internal/cputime"
)

// BenchmarkConv2D times one forward and backward pass of a convolution:
// the jigsaw network's first layer (288 single-channel 9×9 pieces, 32
// filters 5×5, padding 2), the MNIST classifier's first layer (100 images
// 1×28×28, 32 filters 5×5, padding 2), and its second layer (32→64
// channels on 14×14, which also needs the input's adjoint).
func BenchmarkConv2D(b *testing.B) {
	for _, c := range []struct {
		name               string
		n, c, h, f, k, pad int
		inputGrad          bool
	}{
		{"jigsaw/288x1x9x9/32x5x5", 288, 1, 9, 32, 5, 2, false},
		{"mnist/100x1x28x28/32x5x5", 100, 1, 28, 32, 5, 2, false},
		{"mnist2/100x32x14x14/64x5x5", 100, 32, 14, 64, 5, 2, true},
	} {
		b.Run(c.name, func(b *testing.B) {
			rng := rand.New(rand.NewPCG(1, 1))
			conv, err := NewConv2D(rng, "c", c.c, c.f, c.k, 1, c.pad, HeNormal)
			if err != nil {
				b.Fatal(err)
			}
			x := randTensor(rng, c.n, c.c, c.h, c.h)
			tp := ad.NewTape()
			b.ReportAllocs()
			cputime.Bench(b, func() {
				tp.Reset()
				xv := tp.Const(x)
				if c.inputGrad {
					xv = tp.Variable(x)
				}
				y := conv.Forward(tp, xv)
				if err := tp.Backward(ad.Sum(y)); err != nil {
					b.Fatal(err)
				}
			})
		})
	}
}

// BenchmarkDense times a dense layer on a batch, forward and backward.
func BenchmarkDense(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 1))
	d, err := NewDense(rng, "d", 784, 128, HeNormal)
	if err != nil {
		b.Fatal(err)
	}
	x := randTensor(rng, 100, 784)
	tp := ad.NewTape()
	b.ReportAllocs()
	cputime.Bench(b, func() {
		tp.Reset()
		if err := tp.Backward(ad.Sum(d.Forward(tp, tp.Const(x)))); err != nil {
			b.Fatal(err)
		}
	})
}

// BenchmarkConvReLUPool times one forward and backward pass of the trunk
// conv → ReLU → 2×2 max-pool → flatten, run as Sequential runs it (fused)
// and layer by layer (separate), on the jigsaw pieces and on the MNIST
// classifier's second layer (which also needs the input's adjoint).
func BenchmarkConvReLUPool(b *testing.B) {
	for _, c := range []struct {
		name               string
		n, c, h, f, k, pad int
		inputGrad          bool
	}{
		{"jigsaw/288x1x9x9/32x5x5", 288, 1, 9, 32, 5, 2, false},
		{"mnist2/100x32x14x14/64x5x5", 100, 32, 14, 64, 5, 2, true},
	} {
		for _, fused := range []bool{true, false} {
			name := c.name + "/separate"
			if fused {
				name = c.name + "/fused"
			}
			b.Run(name, func(b *testing.B) {
				rng := rand.New(rand.NewPCG(1, 1))
				conv, err := NewConv2D(rng, "c", c.c, c.f, c.k, 1, c.pad, HeNormal)
				if err != nil {
					b.Fatal(err)
				}
				layers := []Layer{conv, ReLU{}, MaxPool2D{Size: 2}, Flatten{}}
				x := randTensor(rng, c.n, c.c, c.h, c.h)
				tp := ad.NewTape()
				b.ReportAllocs()
				cputime.Bench(b, func() {
					tp.Reset()
					y := tp.Const(x)
					if c.inputGrad {
						y = tp.Variable(x)
					}
					if fused {
						y = Sequential(layers).Forward(tp, y)
					} else {
						for _, l := range layers {
							y = l.Forward(tp, y)
						}
					}
					if err := tp.Backward(ad.Sum(y)); err != nil {
						b.Fatal(err)
					}
				})
			})
		}
	}
}
