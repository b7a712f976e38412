package celegans_test

import (
	"context"
	"fmt"
	"log"

	"github.com/permlab/permlab/celegans"
	"github.com/permlab/permlab/mcmc"
	"github.com/permlab/permlab/models"
	"github.com/permlab/permlab/vi"
)

// The model is a models.Model, so the generic engines run it as they run
// any other: here Gumbel-Sinkhorn VI and MCMC on two small worms, against
// exact enumeration of the model with W integrated out. (At full size the
// methods of Solve add what the paper's tables need: a wall-clock budget,
// restarts and accuracy traces.)
func ExampleModel() {
	c, err := celegans.SyntheticConfig{N: 5, Density: 0.3}.Generate(4)
	if err != nil {
		log.Fatal(err)
	}
	sim, err := celegans.Simulate(c, celegans.SimConfig{Worms: 2, T: 200, KnownCount: 1}, 4)
	if err != nil {
		log.Fatal(err)
	}
	masks, err := sim.PositionMasks(1)
	if err != nil {
		log.Fatal(err)
	}
	p, err := celegans.FromSimulation(sim, masks)
	if err != nil {
		log.Fatal(err)
	}
	m := celegans.NewModel(p)

	ex, err := models.Exact(celegans.Collapsed{Model: m})
	if err != nil {
		log.Fatal(err)
	}
	q, err := vi.FitModel(context.Background(), m, vi.ModelOptions{Seed: 1, Starts: 4})
	if err != nil {
		log.Fatal(err)
	}
	// MCMC with W integrated out: Gibbs draws of W alternating with swaps
	// (the model as it is) mix far more slowly on this posterior.
	mc, err := mcmc.RunModel(context.Background(), celegans.Collapsed{Model: m}, mcmc.ModelOptions{Seed: 1})
	if err != nil {
		log.Fatal(err)
	}
	exact := ex.Perms[celegans.SiteP]
	accuracy := func(post *models.PermPosterior) float64 {
		a, _, err := p.Accuracy(post.Mode)
		if err != nil {
			log.Fatal(err)
		}
		return a
	}
	fmt.Printf("exact: %d joint states, accuracy of the mode %.2f\n", ex.States, accuracy(exact))
	fmt.Printf("vi:   accuracy %.2f, same mode as exact: %v\n", accuracy(q.Posterior.Perms[celegans.SiteP]), fmt.Sprint(q.Posterior.Perms[celegans.SiteP].Mode) == fmt.Sprint(exact.Mode))
	tv, err := mc.Posterior.Perms[celegans.SiteP].MaxRowTV(exact)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("mcmc: accuracy %.2f, max row TV to exact below 0.05: %v, warnings: %d\n", accuracy(mc.Posterior.Perms[celegans.SiteP]), tv < 0.05, len(mc.Posterior.Warnings))
	// Output:
	// exact: 576 joint states, accuracy of the mode 1.00
	// vi:   accuracy 1.00, same mode as exact: true
	// mcmc: accuracy 1.00, max row TV to exact below 0.05: true, warnings: 0
}
