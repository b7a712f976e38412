package ad

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/permlab/permlab/internal/cputime"
)

// BenchmarkMatMul times one forward and backward pass of a·b for the
// shapes of the models' hot products: a dense layer on a batch
// ((1000,32)·(32,100)), the im2col product of a jigsaw convolution
// ((288,400)·(400,64)) and a square product at the C. elegans size (279).
func BenchmarkMatMul(b *testing.B) {
	for _, s := range []struct{ m, k, n int }{
		{1000, 32, 100},
		{288, 400, 64},
		{279, 279, 279},
		{16, 16, 16},
		{8, 8, 8},
		{4, 9, 9},
		{9, 512, 9},
		{12, 64, 64},
	} {
		b.Run(fmt.Sprintf("%dx%dx%d", s.m, s.k, s.n), func(b *testing.B) {
			rng := rand.New(rand.NewPCG(1, 2))
			x := randTensor(rng, -1, 1, s.m, s.k)
			w := NewParam("w", randTensor(rng, -1, 1, s.k, s.n))
			t := NewTape()
			b.ReportAllocs()
			cputime.Bench(b, func() {
				t.Reset()
				y := MatMul(t.Variable(x), t.Param(w))
				if err := t.Backward(Sum(y)); err != nil {
					b.Fatal(err)
				}
			})
		})
	}
}

// BenchmarkMatMulBatched times (B,m,k)·(B,k,n) forward and backward for a
// batch of 32 matrices of size 9×9, the shape of the jigsaw Sinkhorn
// networks' per-example products.
func BenchmarkMatMulBatched(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	x := randTensor(rng, -1, 1, 32, 9, 64)
	w := randTensor(rng, -1, 1, 32, 64, 9)
	t := NewTape()
	b.ReportAllocs()
	cputime.Bench(b, func() {
		t.Reset()
		y := MatMul(t.Variable(x), t.Variable(w))
		if err := t.Backward(Sum(y)); err != nil {
			b.Fatal(err)
		}
	})
}

// BenchmarkMatMulReconstruction times the jigsaw loss's soft
// reconstruction, Pᵀ·X̃ for 160 relaxed permutations 9×9 and 9 pieces of
// 81 pixels each, forward and the adjoint of P (X̃ is a constant).
func BenchmarkMatMulReconstruction(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 3))
	p := randTensor(rng, 0, 1, 160, 9, 9)
	x := randTensor(rng, 0, 1, 160, 9, 81)
	t := NewTape()
	b.ReportAllocs()
	cputime.Bench(b, func() {
		t.Reset()
		y := MatMul(t.Variable(p), t.Const(x))
		if err := t.Backward(Sum(y)); err != nil {
			b.Fatal(err)
		}
	})
}
