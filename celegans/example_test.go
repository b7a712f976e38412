package celegans_test

import (
	"fmt"
	"log"
	"strings"

	"github.com/permlab/permlab/celegans"
)

// The data side of the protocol on the embedded synthetic worm: simulate
// four worms sharing W, build their candidate masks and the sufficient
// statistics of their recordings.
func Example() {
	c, err := celegans.Synthetic(0, 1) // 279 neurons, density 0.059
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%d neurons, %d edges, density %.3f, mean degree %.1f\n",
		c.N(), c.Edges(), c.Density(), c.MeanDegree())

	sim, err := celegans.Simulate(c, celegans.SimConfig{Worms: 4, T: 200, KnownCount: 25}, 1)
	if err != nil {
		log.Fatal(err)
	}
	masks, err := sim.PositionMasks(0.05)
	if err != nil {
		log.Fatal(err)
	}
	w, m := sim.Worms[0], masks[0]
	fmt.Printf("worm 0: %d known neurons, %.1f candidates per neuron, truth allowed: %v, feasible: %v\n",
		len(w.Known), float64(m.Count())/float64(c.N()), m.Admits(w.Perm), celegans.ValidateMask(m) == nil)

	st, err := w.Stats()
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("statistics of %d transitions of %d neurons\n", st.Count, st.N)
	// Output:
	// 279 neurons, 2288 edges, density 0.059, mean degree 16.4
	// worm 0: 25 known neurons, 72.5 candidates per neuron, truth allowed: true, feasible: true
	// statistics of 199 transitions of 279 neurons
}

func ExampleLoadConnectome() {
	connect := "Neuron 1,Neuron 2,Type,Nbr,\n" +
		"AVAL,AVAR,EJ,5,\n" +
		"AVAR,AVAL,EJ,5,\n" +
		"AVAL,PVCL,R,2,\n" +
		"PVCL,AVAL,S,2,\n" +
		"PVCL,NMJ,NMJ,1,\n"
	types := "Neuron,Soma Position,Soma Region\n" +
		"PVCL,0.85,T\n" +
		"AVAL,0.15,H\n" +
		"AVAR,0.15,H\n"
	c, err := celegans.LoadConnectome(strings.NewReader(connect), strings.NewReader(types))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(c.Names, c.Positions)
	fmt.Println(c.EdgeList())
	i, _ := c.NameIndex("PVCL")
	fmt.Println("PVCL is neuron", i, "with neighbours", c.Neighbors(i))
	// Output:
	// [AVAL AVAR PVCL] [0.15 0.15 0.85]
	// [[0 1] [0 2]]
	// PVCL is neuron 2 with neighbours [0]
}
