package dist_test

import (
	"fmt"
	"math"

	"github.com/permlab/permlab/ad"
	"github.com/permlab/permlab/dist"
)

// Three observations shared by K = 2 samples of their means: the result has
// one log-likelihood per sample, and its gradient reaches the means.
func ExampleNormalLogLik() {
	tp := ad.NewTape()
	y := tp.Const(&ad.Tensor{Shape: []int{3}, Data: []float64{0.1, 1.9, -1.2}})
	mean := tp.Variable(&ad.Tensor{Shape: []int{2, 3}, Data: []float64{
		0, 2, -1, // sample 0: close to the data
		1, 1, 1, // sample 1: far from it
	}})
	ll := dist.NormalLogLik(y, mean, 0.5)
	if err := tp.Backward(ad.Sum(ll)); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("shape:", ll.Shape())
	fmt.Printf("log p(y | mean_k) = %.4f\n", ll.Value())
	fmt.Printf("gradient (y − μ)/σ²: %.2f\n", mean.Grad())
	// Output:
	// shape: [2]
	// log p(y | mean_k) = [-0.7974 -13.5974]
	// gradient (y − μ)/σ²: [0.40 -0.40 -0.80 -3.60 3.60 -8.80]
}

// One σ per sample, as a scalar real site gives it: logSigma of shape (K).
func ExampleNormalLogLikLogSigma() {
	tp := ad.NewTape()
	y := tp.Const(&ad.Tensor{Shape: []int{3}, Data: []float64{0.1, 1.9, -1.2}})
	mean := tp.Const(&ad.Tensor{Shape: []int{2, 3}, Data: []float64{0, 2, -1, 0, 2, -1}})
	logSigma := tp.Const(&ad.Tensor{Shape: []int{2}, Data: []float64{math.Log(0.5), math.Log(0.1)}})
	ll := dist.NormalLogLikLogSigma(y, mean, logSigma)
	if err := tp.Err(); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("σ = 0.5: %.4f, σ = 0.1: %.4f\n", ll.Value()[0], ll.Value()[1])
	// Output: σ = 0.5: -0.7974, σ = 0.1: 1.1509
}

// Binary outcomes scored by logits, stable for confident predictions: the
// second sample is almost certainly right (−2e−9), the third certainly
// wrong (−600).
func ExampleBernoulliLogitLogLik() {
	tp := ad.NewTape()
	y := tp.Const(&ad.Tensor{Shape: []int{2}, Data: []float64{1, 0}})
	logits := tp.Const(&ad.Tensor{Shape: []int{3, 2}, Data: []float64{
		0, 0,
		20, -20,
		-300, 300,
	}})
	ll := dist.BernoulliLogitLogLik(y, logits)
	if err := tp.Err(); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%.4g\n", ll.Value())
	// Output: [-1.386 -4.122e-09 -600]
}

// Counts scored by log-rates, with the −log y! constant included: the
// value is the log probability mass.
func ExamplePoissonLogLik() {
	tp := ad.NewTape()
	y := tp.Const(&ad.Tensor{Shape: []int{3}, Data: []float64{0, 4, 12}})
	logRate := tp.Variable(&ad.Tensor{Shape: []int{1, 3}, Data: []float64{math.Log(0.5), math.Log(4), math.Log(10)}})
	ll := dist.PoissonLogLik(y, logRate)
	if err := tp.Backward(ad.Sum(ll)); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("log p(y) = %.4f\n", ll.Item())
	fmt.Printf("gradient y − λ: %.2f\n", logRate.Grad())
	// Output:
	// log p(y) = -4.4891
	// gradient y − λ: [-0.50 0.00 2.00]
}

// Class labels of two items under K = 2 samples of their logits, normalized
// over the last axis; the one-hot form gives the same values.
func ExampleCategoricalLogitLogLik() {
	tp := ad.NewTape()
	logits := tp.Const(&ad.Tensor{Shape: []int{2, 2, 3}, Data: []float64{
		2, 0, 0, 0, 0, 2, // sample 0 favours the labels
		0, 0, 0, 0, 0, 0, // sample 1 is uniform
	}})
	labels := []int{0, 2}
	ll := dist.CategoricalLogitLogLik(labels, logits)
	oneHot := tp.Const(&ad.Tensor{Shape: []int{2, 3}, Data: []float64{1, 0, 0, 0, 0, 1}})
	ll2 := dist.CategoricalLogitLogLikOneHot(oneHot, logits)
	if err := tp.Err(); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("labels: %.4f\none-hot: %.4f\n2 log(1/3) = %.4f\n", ll.Value(), ll2.Value(), 2*math.Log(1.0/3))
	// Output:
	// labels: [-0.4791 -2.1972]
	// one-hot: [-0.4791 -2.1972]
	// 2 log(1/3) = -2.1972
}
