package celegans_test

import (
	"context"
	"fmt"
	"log"
	"os"

	"github.com/permlab/permlab/celegans"
)

// The grid of the seed paper's Table 3 and its published accuracies.
func ExampleTable3Cells() {
	for _, c := range celegans.Table3Cells() {
		fmt.Printf("%-8s %d worms, %3d known, nu %.2f: Gumbel-Sinkhorn %.2f, MCMC %.2f\n",
			c.Label, c.Worms, c.Known, c.Nu, c.Paper[celegans.GumbelSinkhorn], c.Paper[celegans.MCMC])
	}
	// Output:
	// 40-easy  4 worms, 110 known, nu 0.05: Gumbel-Sinkhorn 0.97, MCMC 0.85
	// 40-hard  4 worms, 110 known, nu 0.10: Gumbel-Sinkhorn 0.96, MCMC 0.82
	// 30-easy  4 worms,  83 known, nu 0.05: Gumbel-Sinkhorn 0.92, MCMC 0.51
	// 30-hard  4 worms,  83 known, nu 0.10: Gumbel-Sinkhorn 0.84, MCMC 0.44
	// 20-easy  4 worms,  55 known, nu 0.05: Gumbel-Sinkhorn 0.76, MCMC 0.29
	// 20-hard  4 worms,  55 known, nu 0.10: Gumbel-Sinkhorn 0.59, MCMC 0.27
	// 10-easy  4 worms,  25 known, nu 0.05: Gumbel-Sinkhorn 0.44, MCMC 0.16
	// 10-hard  4 worms,  25 known, nu 0.10: Gumbel-Sinkhorn 0.26, MCMC 0.12
}

// An experiment of one's own on a small synthetic worm: two methods, two
// seeds, runs limited by step counts rather than time. Run appends each run
// to a results file in the output directory and writes the report, the
// summary and the figures; running it again would find every run done.
func ExampleExperiment() {
	c, err := celegans.Synthetic(30, 2)
	if err != nil {
		log.Fatal(err)
	}
	dir, err := os.MkdirTemp("", "celegans-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	s := celegans.DefaultSettings()
	s.Steps, s.Sweeps, s.Draws = 20, 20, 5
	e := &celegans.Experiment{
		Cells:      []celegans.Cell{{Label: "small", Worms: 2, Known: 10, Nu: 0.1}},
		Methods:    []celegans.Method{celegans.MCMC, celegans.GumbelSinkhorn},
		Seeds:      2,
		Connectome: c,
		T:          100,
		Settings:   s,
		OutDir:     dir,
	}
	sum, err := e.Run(context.Background())
	if err != nil {
		log.Fatal(err)
	}
	for _, en := range sum.Entries {
		fmt.Printf("%s on %s: %d runs, %.0f iterations each, accuracy in [1/3, 1]: %v\n",
			en.Method, en.Cell, en.Runs, en.Iterations, en.Accuracy >= 1.0/3 && en.Accuracy <= 1)
	}
	fmt.Println(sum.Figures)
	// Output:
	// mcmc on small: 2 runs, 20 iterations each, accuracy in [1/3, 1]: true
	// gumbel-sinkhorn on small: 2 runs, 20 iterations each, accuracy in [1/3, 1]: true
	// [accuracy.png trace_small.png]
}
