package dist

import (
	"math/rand/v2"

	"gonum.org/v1/gonum/mat"

	"github.com/permlab/permlab/perm"
)

// The small interfaces below name what the distributions of this package
// have in common, in the manner of gonum's stat/distuv (LogProber, Rander),
// but generic over the type T of a sample and following this package's
// conventions: an explicit *rand.Rand, and an error for bad parameters or
// malformed input. See the package documentation for which type implements
// which.

// Validator is implemented by every float64 distribution of the package:
// Validate returns an error that says why the parameters do not define a
// distribution, or nil.
type Validator interface {
	Validate() error
}

// LogProber is a distribution with a tractable log density, or log mass
// for a discrete T, at values of type T.
//
// LogProb returns -Inf (and no error) for an x of the right form outside
// the support, and an error for invalid parameters or a malformed x (a
// wrong size, NaN entries).
type LogProber[T any] interface {
	LogProb(x T) (float64, error)
}

// Rander is a distribution that draws exact samples of type T, a value
// (int, perm.Perm, a struct of views) that each call allocates if it needs
// memory.
//
// Rand draws from rng (nil: the global source of math/rand/v2, not
// reproducible) and returns an error for invalid parameters.
type Rander[T any] interface {
	Rand(rng *rand.Rand) (T, error)
}

// Filler is a distribution over slices or matrices of a fixed size whose
// Rand writes the sample into a buffer of the caller's, so that a sampling
// loop can reuse one buffer (Normal and Concrete then allocate nothing;
// Rounding and StickBreaking still allocate their intermediate matrices).
//
// Rand draws from rng (nil: the global source) into dst and returns it; if
// dst is the zero value of T (a nil slice or *mat.Dense) it allocates and
// returns a new buffer. A dst of the wrong size, or invalid parameters,
// give an error.
type Filler[T any] interface {
	Rand(dst T, rng *rand.Rand) (T, error)
}

// RandFunc adapts a function to the Rander interface, as http.HandlerFunc
// does for handlers. It lets generic code take a distribution whose
// sampler has another signature, for example one size of RoundingPrior,
//
//	dist.RandFunc[*mat.Dense](func(rng *rand.Rand) (*mat.Dense, error) { return p.Rand(n, rng) })
//
// or the scalar Gumbel, whose methods return NaN instead of an error.
type RandFunc[T any] func(rng *rand.Rand) (T, error)

// Rand calls f(rng).
func (f RandFunc[T]) Rand(rng *rand.Rand) (T, error) { return f(rng) }

// LogProbFunc adapts a function to the LogProber interface.
type LogProbFunc[T any] func(x T) (float64, error)

// LogProb calls f(x).
func (f LogProbFunc[T]) LogProb(x T) (float64, error) { return f(x) }

// Allocating returns the Rander that draws from f into a new buffer on
// every call, f.Rand(zero T, rng), for generic code written against
// Rander.
func Allocating[T any](f Filler[T]) Rander[T] {
	return RandFunc[T](func(rng *rand.Rand) (T, error) {
		var dst T
		return f.Rand(dst, rng)
	})
}

// Compile-time checks of the interfaces each type implements; the package
// documentation lists them.
var (
	_ Validator = Categorical{}
	_ Validator = Concrete{}
	_ Validator = Gumbel{}
	_ Validator = GumbelMatching{}
	_ Validator = GumbelSinkhorn{}
	_ Validator = Normal{}
	_ Validator = Rounding{}
	_ Validator = RoundingPrior{}
	_ Validator = StickBreaking{}

	_ Rander[int]                  = Categorical{}
	_ Rander[perm.Perm]            = GumbelMatching{}
	_ Rander[GumbelSinkhornSample] = GumbelSinkhorn{}

	_ Filler[[]float64]  = Normal{}
	_ Filler[[]float64]  = Concrete{}
	_ Filler[*mat.Dense] = Rounding{}
	_ Filler[*mat.Dense] = StickBreaking{}

	_ LogProber[int]        = Categorical{}
	_ LogProber[[]float64]  = Normal{}
	_ LogProber[[]float64]  = Concrete{}
	_ LogProber[mat.Matrix] = Rounding{}
	_ LogProber[mat.Matrix] = StickBreaking{}
	_ LogProber[mat.Matrix] = RoundingPrior{}
)
