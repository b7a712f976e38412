package f64

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/permlab/permlab/internal/cputime"
)

// BenchmarkPack times PackTo and PackTransTo at the dense-layer shapes of
// the categorical VAE (784-512-256-200 and back).
func BenchmarkPack(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 5))
	for _, s := range [][2]int{{784, 512}, {512, 256}, {256, 200}, {200, 256}, {512, 784}} {
		k, n := s[0], s[1]
		x := randVec(rng, k*n)
		p := PackTo(nil, x, k, n)
		b.Run(fmt.Sprintf("PackTo/%dx%d", k, n), func(b *testing.B) {
			b.SetBytes(int64(8 * k * n))
			cputime.Bench(b, func() { PackTo(p, x, k, n) })
		})
		b.Run(fmt.Sprintf("PackTransTo/%dx%d", k, n), func(b *testing.B) {
			b.SetBytes(int64(8 * k * n))
			cputime.Bench(b, func() { PackTransTo(p, x, k, n) })
		})
	}
}

// BenchmarkGemmDense times c = a·B, B packed beforehand, at the products
// of the categorical VAE's dense layers: a batch of 100 against each
// weight (forward) and against each transposed weight (input adjoint).
func BenchmarkGemmDense(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 7))
	const m = 100
	for _, s := range [][2]int{{784, 512}, {512, 256}, {256, 200}, {512, 784}, {256, 512}} {
		k, n := s[0], s[1]
		a, c := randVec(rng, m*k), make([]float64, m*n)
		p := Pack(randVec(rng, k*n), k, n)
		b.Run(fmt.Sprintf("%dx%dx%d", m, k, n), func(b *testing.B) {
			b.SetBytes(int64(2 * m * k * n)) // "MB/s" reads as MFLOP/s
			cputime.Bench(b, func() { Gemm(m, a, p, c) })
		})
	}
}
