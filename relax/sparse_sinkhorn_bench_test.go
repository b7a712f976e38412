package relax

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/permlab/permlab/ad"
)

// The sparse benchmarks use position-like candidate masks: 30 candidates a
// row (the diagonal and 29 columns drawn within ±50 of it), one matrix,
// L = benchIters and τ = benchTau as the dense benchmarks.
const (
	benchSparseK      = 30
	benchSparseWindow = 50
)

func benchSparseInputs(b *testing.B, n int) (*SparsePattern, *ad.Tensor, *ad.Tensor) {
	rng := rand.New(rand.NewPCG(43, 43))
	p := mustPattern(b, spsBandRows(rng, n, benchSparseK, benchSparseWindow))
	shape := []int{1, p.NNZ()}
	x := &ad.Tensor{Shape: shape, Data: make([]float64, p.NNZ())}
	r := &ad.Tensor{Shape: shape, Data: make([]float64, p.NNZ())}
	for e := range x.Data {
		x.Data[e] = rng.NormFloat64()
		r.Data[e] = rng.NormFloat64()
	}
	return p, x, r
}

// BenchmarkSparseSinkhornForwardBackward times the forward and backward
// pass of sum(S ⊙ R) with S = SparseSinkhornVar(X) on one matrix, reusing
// one tape.
func BenchmarkSparseSinkhornForwardBackward(b *testing.B) {
	for _, n := range []int{1000, 5000, 20000} {
		b.Run(fmt.Sprintf("N=%d", n), func(b *testing.B) {
			p, x, r := benchSparseInputs(b, n)
			tp := ad.NewTape()
			b.ReportAllocs()
			for b.Loop() {
				tp.Reset()
				xv := tp.Variable(x)
				s := SparseSinkhornVar(xv, p, benchTau, benchIters)
				if err := tp.Backward(ad.Sum(ad.Mul(s, tp.Const(r)))); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkSparseSinkhornForward times the numeric forward pass alone.
func BenchmarkSparseSinkhornForward(b *testing.B) {
	for _, n := range []int{1000, 5000, 20000} {
		b.Run(fmt.Sprintf("N=%d", n), func(b *testing.B) {
			p, x, _ := benchSparseInputs(b, n)
			in := &SparseLogits{Pattern: p, Values: x.Data}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := SparseSinkhorn(in, benchTau, benchIters); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkSparseSinkhornDenseForwardBackward is the dense SinkhornVar on
// the same candidates (−Inf elsewhere) at N = 1000, for comparison.
func BenchmarkSparseSinkhornDenseForwardBackward(b *testing.B) {
	const n = 1000
	p, x, r := benchSparseInputs(b, n)
	dx, err := p.Dense(x.Data, math.Inf(-1))
	if err != nil {
		b.Fatal(err)
	}
	dr, err := p.Dense(r.Data, 0)
	if err != nil {
		b.Fatal(err)
	}
	xt := &ad.Tensor{Shape: []int{n, n}, Data: dx.RawMatrix().Data}
	rt := &ad.Tensor{Shape: []int{n, n}, Data: dr.RawMatrix().Data}
	tp := ad.NewTape()
	b.ReportAllocs()
	for b.Loop() {
		tp.Reset()
		xv := tp.Variable(xt)
		s := SinkhornVar(xv, benchTau, benchIters)
		if err := tp.Backward(ad.Sum(ad.Mul(s, tp.Const(rt)))); err != nil {
			b.Fatal(err)
		}
	}
}
