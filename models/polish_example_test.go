package models_test

import (
	"context"
	"fmt"
	"math/rand/v2"

	"github.com/permlab/permlab/models"
	"github.com/permlab/permlab/models/matching"
	"github.com/permlab/permlab/perm"
)

// A Scorer compares candidate answers by the model's log posterior J and
// improves them by a local search, which ends at a local maximum, not
// necessarily the global one. Permutation regression has two modes, one
// for each sign of β: here four searches from random permutations all end
// in the less probable one (J 1.5 against the exact mode's 2.2, odds of
// about 1 to 2), which no swap, 3-cycle or block of four rows leaves. A
// search is evidence, not proof: vi.FitModel therefore polishes the fits'
// own modes too, and warns when its starts end in different modes.
func ExampleScorer_Polish() {
	m, err := matching.GenerateRegression(matching.RegressionConfig{N: 7, D: 1, S: 0.2, Seed: 2})
	if err != nil {
		fmt.Println(err)
		return
	}
	sc, err := models.NewScorer(m)
	if err != nil {
		fmt.Println(err)
		return
	}
	ex, err := models.Exact(m)
	if err != nil {
		fmt.Println(err)
		return
	}
	jMAP, err := sc.LogJoint(ex.MAP)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("exact mode %v, J %.1f\n", ex.MAP.Perms["P"][0], jMAP)
	rng := rand.New(rand.NewPCG(1, 1))
	for k := range 4 {
		start := &models.State{Perms: map[string][]perm.Perm{"P": {perm.Random(7, rng)}}}
		res, err := sc.Polish(context.Background(), start, models.PolishOptions{Seed: uint64(k)})
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Printf("search %d: J %5.1f -> %.1f at %v\n", k, res.Start, res.LogJoint, res.State.Perms["P"][0])
	}
	// Output:
	// exact mode [4 3 0 2 5 1 6], J 2.2
	// search 0: J  -3.4 -> 1.5 at [3 4 5 6 0 1 2]
	// search 1: J  -0.3 -> 1.5 at [3 4 5 6 0 1 2]
	// search 2: J  -3.7 -> 1.5 at [3 4 5 6 0 1 2]
	// search 3: J  -0.6 -> 1.5 at [3 4 5 6 0 1 2]
}
