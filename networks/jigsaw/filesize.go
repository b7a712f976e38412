package jigsaw

import (
	"fmt"
	"math"
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

// satMul returns a·b for a, b >= 0, or math.MaxInt when it overflows.
func satMul(a, b int) int {
	if a < 0 || b < 0 || (a != 0 && b > math.MaxInt/a) {
		return math.MaxInt
	}
	return a * b
}

// satAdd returns a+b for a, b >= 0, or math.MaxInt when it overflows.
func satAdd(a, b int) int {
	if a < 0 || b < 0 || b > math.MaxInt-a {
		return math.MaxInt
	}
	return a + b
}

// denseWeights is the number of weights of a dense layer from in to out
// units, with its bias or without.
func denseWeights(in, out int, bias bool) int {
	w := satMul(in, out)
	if bias {
		w = satAdd(w, out)
	}
	return w
}

// countValues returns the number of values of a saved file's parameters.
func countValues(values [][]float64) int {
	n := 0
	for _, v := range values {
		n += len(v)
	}
	return n
}

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
	pass := satMul(satAdd(c.Channels, satMul(3, c.Filters)), satMul(g.PieceH, g.PieceW))
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
	k2 := satMul(c.Kernel, c.Kernel)
	w := denseWeights(satMul(c.Channels, k2), c.Filters, true) // conv: Filters × Channels·K², bias
	// Conv keeps the piece's size ("same" padding), the pool of side and
	// stride Pool takes it to (side − Pool)/Pool + 1.
	feat := satMul(c.Filters, satMul((g.PieceH-c.Pool)/c.Pool+1, (g.PieceW-c.Pool)/c.Pool+1))
	in := feat
	if c.Hidden > 0 {
		w = satAdd(w, denseWeights(feat, c.Hidden, true))
		if c.Context {
			w = satAdd(w, denseWeights(feat, c.Hidden, false))
		}
		in = c.Hidden
	}
	w = satAdd(w, satMul(c.Heads, denseWeights(in, satMul(g.P, g.P), true)))
	if c.Refine > 0 {
		for d := range edgeNames {
			s := stripLen(g, c.edgeDepth(), d)
			w = satAdd(w, satMul(s, s))
		}
	}
	return w
}

// criticWeights returns the number of weights newCritic makes on grid g,
// which checkCriticGrid accepts (see newCritic).
func criticWeights(g Grid) int {
	h2, w2 := ((g.CropH()-4)/2-4)/2, ((g.CropW()-4)/2-4)/2
	w := denseWeights(satMul(g.Channels, 25), 32, true) // conv1
	w = satAdd(w, denseWeights(32*25, 64, true))        // conv2
	w = satAdd(w, denseWeights(satMul(64, satMul(h2, w2)), 128, true))
	return satAdd(w, denseWeights(128, 2, true))
}
