package jigsaw

import (
	"fmt"

	"github.com/permlab/permlab/perm"
)

// Assembly of arbitrary digits (Section 4.3 of the seed paper).
//
// A network with one head per class (Config.Heads = 10 for MNIST) is trained
// on scrambled digits whose labels select the head: head k only ever learns
// to reassemble digits of class k. Fed the pieces of a digit of another class
// a, head k still returns a permutation, and the hard reconstruction
// assembles those pieces into something shaped like a k. A classifier trained
// on plain MNIST judges whether it does.

// Assemble returns the hard assignments and reconstructions of the puzzles
// in z when every one of them is solved by head target, whatever its label.
// The reconstructions are full Channels × Height × Width images: the cropped
// region is placed back in a zero frame (see Uncrop).
func (n *Net) Assemble(z *Puzzles, target int) ([]perm.Perm, [][]float64, error) {
	if target < 0 || target >= len(n.heads) {
		return nil, nil, fmt.Errorf("jigsaw: Assemble: target %d selects no head of %d", target, len(n.heads))
	}
	if z == nil || z.Len() == 0 {
		return nil, nil, fmt.Errorf("jigsaw: Assemble: no puzzles")
	}
	w := *z
	w.Labels = make([]int, z.Len())
	for i := range w.Labels {
		w.Labels[i] = target
	}
	preds, err := n.Solve(&w)
	if err != nil {
		return nil, nil, fmt.Errorf("jigsaw: Assemble: %w", err)
	}
	recs, err := Reconstruct(&w, preds)
	if err != nil {
		return nil, nil, fmt.Errorf("jigsaw: Assemble: %w", err)
	}
	for i, r := range recs {
		recs[i] = n.grid.Uncrop(r)
	}
	return preds, recs, nil
}

// Uncrop returns the full Channels × Height × Width image with the cropped
// image crop (Channels × CropH × CropW) at its place and zeros around it.
func (g Grid) Uncrop(crop []float64) []float64 {
	out := make([]float64, g.ImageSize())
	ch, cw := g.CropH(), g.CropW()
	for c := range g.Channels {
		for y := range ch {
			copy(out[(c*g.Height+g.Top+y)*g.Width+g.Left:][:cw], crop[(c*ch+y)*cw:][:cw])
		}
	}
	return out
}

// AssemblyResult is the outcome of AssemblyRates.
type AssemblyResult struct {
	// Rates[a][k] is the fraction of digits of class a, assembled by head
	// k, that the classifier labels k; Counts[a] is the number of digits of
	// class a.
	Rates  [][]float64 `json:"rates"`
	Counts []int       `json:"counts"`
	// Overall is the fraction over all (digit, target) pairs.
	Overall float64 `json:"overall"`
}

// AssemblyRates assembles every puzzle of z (whose Labels are the true
// classes) into every target class and judges each reconstruction with
// classify, which labels count full-size images stored one after another.
func (n *Net) AssemblyRates(z *Puzzles, classify func(imgs []float64, count int) ([]int, error)) (*AssemblyResult, error) {
	k := len(n.heads)
	if z == nil || len(z.Labels) != z.Len() || z.Len() == 0 {
		return nil, fmt.Errorf("jigsaw: AssemblyRates: need labelled puzzles")
	}
	res := &AssemblyResult{Rates: make([][]float64, k), Counts: make([]int, k)}
	for a := range res.Rates {
		res.Rates[a] = make([]float64, k)
	}
	for _, l := range z.Labels {
		if l < 0 || l >= k {
			return nil, fmt.Errorf("jigsaw: AssemblyRates: class %d outside [0, %d)", l, k)
		}
		res.Counts[l]++
	}
	is := n.grid.ImageSize()
	hits := 0
	for target := range k {
		_, recs, err := n.Assemble(z, target)
		if err != nil {
			return nil, fmt.Errorf("jigsaw: AssemblyRates: %w", err)
		}
		flat := make([]float64, 0, len(recs)*is)
		for _, r := range recs {
			flat = append(flat, r...)
		}
		got, err := classify(flat, len(recs))
		if err != nil {
			return nil, fmt.Errorf("jigsaw: AssemblyRates: %w", err)
		}
		if len(got) != len(recs) {
			return nil, fmt.Errorf("jigsaw: AssemblyRates: classifier returned %d labels for %d images", len(got), len(recs))
		}
		for i, c := range got {
			if c == target {
				res.Rates[z.Labels[i]][target]++
				hits++
			}
		}
	}
	for a := range k {
		for t := range k {
			if res.Counts[a] > 0 {
				res.Rates[a][t] /= float64(res.Counts[a])
			}
		}
	}
	res.Overall = float64(hits) / float64(k*z.Len())
	return res, nil
}
