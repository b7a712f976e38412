package f64

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/permlab/permlab/internal/cputime"
)

// BenchmarkTN times c = aᵀ·b for a k×m and b k×n at the weight-gradient
// shapes of the categorical VAE's dense layers (k = 100, the batch), with
// aᵀ read in place (GemmGather) and copied out first (Transpose, Gemm).
func BenchmarkTN(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 6))
	const k = 100
	for _, s := range [][2]int{{784, 512}, {512, 256}, {256, 200}, {200, 256}, {512, 784}} {
		m, n := s[0], s[1]
		a, bb := randVec(rng, k*m), randVec(rng, k*n)
		c := make([]float64, m*n)
		p := Pack(bb, k, n)
		rows, offs := make([]int, m), make([]int, k)
		for i := range rows {
			rows[i] = i
		}
		for i := range offs {
			offs[i] = i * m
		}
		at := make([]float64, m*k)
		b.Run(fmt.Sprintf("gather/%dx%dx%d", m, k, n), func(b *testing.B) {
			cputime.Bench(b, func() { GemmGather(a, rows, offs, p, c) })
		})
		b.Run(fmt.Sprintf("transpose/%dx%dx%d", m, k, n), func(b *testing.B) {
			cputime.Bench(b, func() {
				Transpose(at, a, k, m)
				Gemm(m, at, p, c)
			})
		})
	}
}
