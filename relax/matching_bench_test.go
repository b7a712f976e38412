package relax

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/permlab/permlab/perm"
)

// uniformMatrix returns an n×n matrix of uniform [0, 1) entries from a
// seeded source (the same construction as benchmarks/lap).
func uniformMatrix(n int, seed uint64) *mat.Dense {
	rng := rand.New(rand.NewPCG(seed, uint64(n)))
	data := make([]float64, n*n)
	for i := range data {
		data[i] = rng.Float64()
	}
	return mat.NewDense(n, n, data)
}

var benchSizes = []int{100, 278, 1000}

func BenchmarkMatching(b *testing.B) {
	for _, n := range benchSizes {
		x := uniformMatrix(n, 1)
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
			for b.Loop() {
				if _, err := Matching(x); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkMatcher measures repeated solves with a reused workspace, as in
// the C. elegans sampler (n = 279 with candidate masks).
func BenchmarkMatcher(b *testing.B) {
	for _, n := range benchSizes {
		x := uniformMatrix(n, 1)
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
			var m Matcher
			dst := make(perm.Perm, n)
			for b.Loop() {
				if _, err := m.Solve(dst, x, nil); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	n := 279
	x := uniformMatrix(n, 2)
	rng := rand.New(rand.NewPCG(3, 3))
	mask, _ := perm.NewMask(n)
	hidden := perm.Random(n, rng)
	for i := range n {
		_ = mask.Set(i, hidden[i], true)
		for range 20 {
			_ = mask.Set(i, rng.IntN(n), true)
		}
	}
	b.Run("n=279/mask20", func(b *testing.B) {
		var m Matcher
		dst := make(perm.Perm, n)
		for b.Loop() {
			if _, err := m.Solve(dst, x, mask); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkMatcherInit compares the dense solver's two initialisations on
// the benchmark matrices (the default is sparse from sparseInitMinN on).
func BenchmarkMatcherInit(b *testing.B) {
	for _, n := range benchSizes {
		x := uniformMatrix(n, 1)
		for _, mode := range []struct {
			name string
			init initMode
		}{{"classic", initClassic}, {"sparse", initSparse}} {
			b.Run(fmt.Sprintf("n=%d/%s", n, mode.name), func(b *testing.B) {
				m := Matcher{init: mode.init}
				dst := make(perm.Perm, n)
				for b.Loop() {
					if _, err := m.Solve(dst, x, nil); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// BenchmarkMatcherInitHard runs the classic initialisation and the
// default (sparse, declining problems it does not suit) at n = 1000 on
// matrices where the sparse phase's candidates are a poor guess, to bound
// what it costs when it does not help (kinds of hardMatchingInstance: 1
// few distinct integers, 2 all equal, 3 rank one, 4 rows decreasing).
func BenchmarkMatcherInitHard(b *testing.B) {
	const n = 1000
	for _, kind := range []int{1, 2, 3, 4} {
		x, _, _ := hardMatchingInstance(rand.New(rand.NewPCG(5, uint64(kind))), n, kind)
		for _, mode := range []struct {
			name string
			init initMode
		}{{"classic", initClassic}, {"default", initAuto}} {
			b.Run(fmt.Sprintf("kind=%d/%s", kind, mode.name), func(b *testing.B) {
				m := Matcher{init: mode.init}
				dst := make(perm.Perm, n)
				for b.Loop() {
					if _, err := m.Solve(dst, x, nil); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
