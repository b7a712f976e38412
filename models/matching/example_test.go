package matching_test

import (
	"fmt"
	"log"
	"math"

	"github.com/permlab/permlab/models"
	"github.com/permlab/permlab/models/matching"
)

// The exact posterior of a small problem by enumeration. With noise 0.1 on
// points about 0.3 apart, two observations are ambiguous: 0 and 2 each came
// from reference point 3 or 5, and the data favour the wrong pairing
// slightly (0.54 against 0.46 for the truth).
func Example() {
	pr, err := matching.Generate(matching.Config{N: 6, Sigma: 0.1, Seed: 2})
	if err != nil {
		log.Fatal(err)
	}
	ex, err := models.Exact(pr)
	if err != nil {
		log.Fatal(err)
	}
	post := ex.Perms[matching.Site]
	fmt.Println("truth:", pr.Truth)
	fmt.Println("mode: ", post.Mode[0])
	for i, j := range post.Mode[0] {
		fmt.Printf("P(observation %d came from reference point %d) = %.2f\n", i, j, post.Marginals[0].At(i, j))
	}
	ll, err := pr.LogLikState(ex.MAP)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("posterior probability of the most probable matching: %.2f\n", math.Exp(ll-ex.LogEvidence))
	// Output:
	// truth: [3 0 5 2 4 1]
	// mode:  [5 0 3 2 4 1]
	// P(observation 0 came from reference point 5) = 0.54
	// P(observation 1 came from reference point 0) = 1.00
	// P(observation 2 came from reference point 3) = 0.54
	// P(observation 3 came from reference point 2) = 1.00
	// P(observation 4 came from reference point 4) = 1.00
	// P(observation 5 came from reference point 1) = 1.00
	// posterior probability of the most probable matching: 0.54
}

// Permutation regression solved exactly: β is integrated out in closed form
// (Regression implements models.Collapser), so models.Exact enumerates the
// 720 permutations under p(y | σ). The data pin down the covariates of
// four observations; for observations 0 and 3 they favour, with probability
// 0.86, the exchange of the covariates that generated them: with six noisy
// responses and β unknown, the posterior mode need not be the truth.
func ExampleRegression() {
	r, err := matching.GenerateRegression(matching.RegressionConfig{N: 6, D: 2, S: 0.1, Seed: 2})
	if err != nil {
		log.Fatal(err)
	}
	ex, err := models.Exact(r)
	if err != nil {
		log.Fatal(err)
	}
	post := ex.Perms[matching.Site]
	fmt.Println("states:", ex.States)
	fmt.Println("truth:", r.Truth)
	fmt.Println("mode: ", post.Mode[0])
	for i, j := range post.Mode[0] {
		fmt.Printf("P(row %d → %d) = %.2f\n", i, j, post.Marginals[0].At(i, j))
	}
	// Output:
	// states: 720
	// truth: [5 1 0 4 3 2]
	// mode:  [4 1 0 5 3 2]
	// P(row 0 → 4) = 0.86
	// P(row 1 → 1) = 1.00
	// P(row 2 → 0) = 1.00
	// P(row 3 → 5) = 0.86
	// P(row 4 → 3) = 0.99
	// P(row 5 → 2) = 1.00
}
