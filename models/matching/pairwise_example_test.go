package matching_test

import (
	"fmt"
	"log"
	"math"

	"github.com/permlab/permlab/models"
	"github.com/permlab/permlab/models/matching"
	"github.com/permlab/permlab/perm"
)

// Seven observations known only through their pairwise distances, each
// restricted to the reference items within 0.5 of its own and one of them
// pinned to its item: exact enumeration visits the few permutations the
// mask and the fixed row admit. At distance noise 0.05 the data single out
// the item of five observations; for observations 1 and 6 they favour, with
// probability 0.81, the exchange of their true items (6 and 2), so the mode
// is not the truth.
func ExamplePairwise() {
	pr, err := matching.GeneratePairwise(matching.PairwiseConfig{N: 7, Sigma: 0.05, Radius: 0.5, Fixed: 1, Seed: 2})
	if err != nil {
		log.Fatal(err)
	}
	ex, err := models.Exact(pr)
	if err != nil {
		log.Fatal(err)
	}
	post := ex.Perms[matching.Site]
	fmt.Println("admitted permutations:", ex.States, "of 5040")
	fmt.Println("fixed:", pr.Fixed)
	fmt.Println("truth:", pr.Truth)
	fmt.Println("mode: ", post.Mode[0])
	for i, j := range pr.Truth {
		fmt.Printf("P(observation %d is item %d) = %.2f\n", i, j, post.Marginals[0].At(i, j))
	}
	ll, err := pr.LogLikState(&models.State{Perms: map[string][]perm.Perm{matching.Site: {pr.Truth}}})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("posterior probability of the truth: %.2f\n", math.Exp(ll-ex.LogEvidence))
	// Output:
	// admitted permutations: 72 of 5040
	// fixed: [-1 -1 -1 -1 -1 5 -1]
	// truth: [0 6 4 3 1 5 2]
	// mode:  [0 2 4 3 1 5 6]
	// P(observation 0 is item 0) = 1.00
	// P(observation 1 is item 6) = 0.19
	// P(observation 2 is item 4) = 1.00
	// P(observation 3 is item 3) = 1.00
	// P(observation 4 is item 1) = 1.00
	// P(observation 5 is item 5) = 1.00
	// P(observation 6 is item 2) = 0.19
	// posterior probability of the truth: 0.19
}
