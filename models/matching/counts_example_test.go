package matching_test

import (
	"fmt"
	"log"

	"github.com/permlab/permlab/models"
	"github.com/permlab/permlab/models/matching"
	"github.com/permlab/permlab/perm"
)

// Counts of five units whose covariate rows were shuffled. With w known, σ
// is independent of the log baseline a a posteriori and its posterior is
// exp(⟨P, X⟩) with X_ij = y_i x_jᵀ w (Logits): it favours pairing the
// largest counts with the largest offsets, and exchanging two units changes
// the log likelihood by (y_i − y_j)(o_{σ(j)} − o_{σ(i)}) whatever a.
func ExampleCounts() {
	c, err := matching.GenerateCounts(matching.CountsConfig{N: 5, Seed: 1})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("counts:", c.Y)
	fmt.Println("truth: ", c.Truth)
	fmt.Printf("true a = log 50 = %.3f, w = %v\n", c.TrueA, c.W)
	for _, a := range []float64{c.TrueA, 0} {
		s := &models.State{
			Perms: map[string][]perm.Perm{matching.Site: {c.Truth}},
			Reals: map[string][]float64{matching.ASite: {a}},
		}
		ll, err := c.LogLikState(s)
		if err != nil {
			log.Fatal(err)
		}
		d, err := c.SwapDelta(s, matching.Site, 0, 0, 1)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("a = %.3f: log p(y | truth, a) = %.2f, swapping units 0 and 1 changes it by %.2f\n", a, ll, d)
	}
	// Output:
	// counts: [111 6 16 128 6]
	// truth:  [1 2 0 3 4]
	// true a = log 50 = 3.912, w = [1]
	// a = 3.912: log p(y | truth, a) = -13.47, swapping units 0 and 1 changes it by -312.25
	// a = 0.000: log p(y | truth, a) = -785.00, swapping units 0 and 1 changes it by -312.25
}
