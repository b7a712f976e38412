package relax

import (
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/permlab/permlab/ad"
)

// The benchmark size is the seed paper's largest C. elegans setting: a batch
// of 4 matrices of 278×278 (neurons), L = 20, τ = 0.5.
const (
	benchBatch = 4
	benchN     = 278
	benchIters = 20
	benchTau   = 0.5
)

func benchInputs() (x, r *ad.Tensor) {
	rng := rand.New(rand.NewPCG(42, 42))
	x = &ad.Tensor{Shape: []int{benchBatch, benchN, benchN}, Data: make([]float64, benchBatch*benchN*benchN)}
	r = &ad.Tensor{Shape: x.Shape, Data: make([]float64, len(x.Data))}
	for i := range x.Data {
		x.Data[i] = rng.NormFloat64()
		r.Data[i] = rng.NormFloat64()
	}
	return x, r
}

// BenchmarkSinkhornForwardBackward times the forward and backward pass of
// sum(S ⊙ R) with S = SinkhornVar(X), reusing one tape.
func BenchmarkSinkhornForwardBackward(b *testing.B) {
	x, r := benchInputs()
	tp := ad.NewTape()
	for b.Loop() {
		tp.Reset()
		xv := tp.Variable(x)
		s := SinkhornVar(xv, benchTau, benchIters)
		if err := tp.Backward(ad.Sum(ad.Mul(s, tp.Const(r)))); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSinkhornVarForward times the differentiable forward pass alone.
func BenchmarkSinkhornVarForward(b *testing.B) {
	x, _ := benchInputs()
	tp := ad.NewTape()
	for b.Loop() {
		tp.Reset()
		SinkhornVar(tp.Variable(x), benchTau, benchIters)
		if err := tp.Err(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSinkhornBatch times the numeric operator on the same batch.
func BenchmarkSinkhornBatch(b *testing.B) {
	x, _ := benchInputs()
	xs := make([]mat.Matrix, benchBatch)
	nn := benchN * benchN
	for k := range xs {
		xs[k] = mat.NewDense(benchN, benchN, x.Data[k*nn:(k+1)*nn])
	}
	for b.Loop() {
		if _, err := SinkhornBatch(xs, benchTau, benchIters); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSinkhorn times the numeric operator on one 278×278 matrix.
func BenchmarkSinkhorn(b *testing.B) {
	x, _ := benchInputs()
	m := mat.NewDense(benchN, benchN, x.Data[:benchN*benchN])
	for b.Loop() {
		if _, err := Sinkhorn(m, benchTau, benchIters); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSinkhornSmallTau is the forward-backward benchmark at τ = 0.01,
// where the kernel must be rebuilt (and recomputed in the backward pass).
func BenchmarkSinkhornSmallTau(b *testing.B) {
	x, r := benchInputs()
	tp := ad.NewTape()
	for b.Loop() {
		tp.Reset()
		xv := tp.Variable(x)
		s := SinkhornVar(xv, 0.01, benchIters)
		if err := tp.Backward(ad.Sum(ad.Mul(s, tp.Const(r)))); err != nil {
			b.Fatal(err)
		}
	}
}
