package jigsaw

import (
	"fmt"

	"github.com/permlab/permlab/internal/paramfile"
)

// The sizes a saved network or critic declares (its geometry and layers)
// are checked against the weights the file holds before anything is
// allocated: a few bytes of a damaged or hostile file could otherwise ask
// for any amount of memory.

// maxLoadPieceValues bounds the values of the forward pass of one piece,
// (Channels + 3·Filters)·PieceH·PieceW, in a network Load reads (New runs
// that pass to size its layers). 2²⁶ values, 512 MiB, is thousands of times
// what the networks of this package need (7,857 for MNIST at 3 × 3).
const maxLoadPieceValues = 1 << 26

// checkLoadSize returns an error if the network that c describes needs a
// forward pass of more than maxLoadPieceValues per piece or has other than
// values weights, and nil otherwise, also when c is invalid (New says why).
func (c Config) checkLoadSize(values int) error {
	g, err := NewGridCrop(c.Channels, c.Height, c.Width, c.P, c.Crop)
	if err != nil || c.validate() != nil || c.Pool > g.PieceH || c.Pool > g.PieceW {
		return nil
	}
	if c.Refine > 0 && (c.edgeDepth() > g.PieceH || c.edgeDepth() > g.PieceW) {
		return nil
	}
	pass := paramfile.Mul(paramfile.Add(c.Channels, paramfile.Mul(3, c.Filters)), paramfile.Mul(g.PieceH, g.PieceW))
	if pass > maxLoadPieceValues {
		return fmt.Errorf("configuration %+v: the forward pass of a piece has %d values, more than the %d a saved network may ask for", c, pass, maxLoadPieceValues)
	}
	if w := c.weights(g); w != values {
		return fmt.Errorf("the file holds %d weights, the network of its configuration has %d", values, w)
	}
	return nil
}

// weights returns the number of weights New(c) makes on grid g (see New),
// math.MaxInt if that overflows.
func (c Config) weights(g Grid) int {
	k2 := paramfile.Mul(c.Kernel, c.Kernel)
	w := paramfile.DenseWeights(paramfile.Mul(c.Channels, k2), c.Filters, true) // conv: Filters × Channels·K², bias
	// Conv keeps the piece's size ("same" padding), the pool of side and
	// stride Pool takes it to (side − Pool)/Pool + 1.
	feat := paramfile.Mul(c.Filters, paramfile.Mul((g.PieceH-c.Pool)/c.Pool+1, (g.PieceW-c.Pool)/c.Pool+1))
	in := feat
	if c.Hidden > 0 {
		w = paramfile.Add(w, paramfile.DenseWeights(feat, c.Hidden, true))
		if c.Context {
			w = paramfile.Add(w, paramfile.DenseWeights(feat, c.Hidden, false))
		}
		in = c.Hidden
	}
	w = paramfile.Add(w, paramfile.Mul(c.Heads, paramfile.DenseWeights(in, paramfile.Mul(g.P, g.P), true)))
	if c.Refine > 0 {
		for d := range edgeNames {
			s := stripLen(g, c.edgeDepth(), d)
			w = paramfile.Add(w, paramfile.Mul(s, s))
		}
	}
	return w
}
