package nn

import (
	"fmt"
	"math"
	"math/rand/v2"
)

// Init names a scheme for the initial weights of a layer. With fan-in
// n_in (inputs feeding one output unit) and fan-out n_out:
//
//	GlorotUniform  U(−a, a),  a = √(6 / (n_in + n_out))   (Glorot & Bengio, 2010)
//	GlorotNormal   N(0, σ²),  σ = √(2 / (n_in + n_out))
//	HeUniform      U(−a, a),  a = √(6 / n_in)             (He et al., 2015)
//	HeNormal       N(0, σ²),  σ = √(2 / n_in)
//	Zero           0
//
// Glorot keeps the variance of activations and gradients roughly equal
// across layers for symmetric activations (tanh); He doubles it to make up
// for the half that a ReLU zeroes. Biases always start at zero.
type Init int

const (
	GlorotUniform Init = iota
	GlorotNormal
	HeUniform
	HeNormal
	Zero
)

var initNames = [...]string{"GlorotUniform", "GlorotNormal", "HeUniform", "HeNormal", "Zero"}

// String returns the name of the scheme.
func (in Init) String() string {
	if in < 0 || int(in) >= len(initNames) {
		return fmt.Sprintf("Init(%d)", int(in))
	}
	return initNames[in]
}

// Fill sets dst to independent draws from the scheme for a layer with the
// given fan-in and fan-out, reading rng in order, so the same seed gives the
// same weights.
func (in Init) Fill(rng *rand.Rand, dst []float64, fanIn, fanOut int) error {
	if in < 0 || int(in) >= len(initNames) {
		return fmt.Errorf("nn: Init.Fill: unknown scheme %d", int(in))
	}
	if in == Zero {
		clear(dst)
		return nil
	}
	if fanIn < 1 || fanOut < 1 {
		return fmt.Errorf("nn: Init.Fill: fan-in %d and fan-out %d must be >= 1", fanIn, fanOut)
	}
	if rng == nil {
		return fmt.Errorf("nn: Init.Fill: %v needs a random source, got nil", in)
	}
	switch in {
	case GlorotUniform:
		uniform(rng, dst, math.Sqrt(6/float64(fanIn+fanOut)))
	case GlorotNormal:
		normal(rng, dst, math.Sqrt(2/float64(fanIn+fanOut)))
	case HeUniform:
		uniform(rng, dst, math.Sqrt(6/float64(fanIn)))
	case HeNormal:
		normal(rng, dst, math.Sqrt(2/float64(fanIn)))
	}
	return nil
}

func uniform(rng *rand.Rand, dst []float64, a float64) {
	for i := range dst {
		dst[i] = a * (2*rng.Float64() - 1)
	}
}

func normal(rng *rand.Rand, dst []float64, sigma float64) {
	for i := range dst {
		dst[i] = sigma * rng.NormFloat64()
	}
}
