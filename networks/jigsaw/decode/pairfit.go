package decode

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"

	"github.com/permlab/permlab/ad"
	"github.com/permlab/permlab/ad/optim"
	"github.com/permlab/permlab/networks/jigsaw"
	"github.com/permlab/permlab/perm"
	"github.com/permlab/permlab/relax"
)

// PairWeights are compatibility matrices for the decoder fitted to its hard
// score (FitPairs), in place of the network's own: with b_d(i) the
// border strip of piece i on side d, of depth Depth,
//
//	c_h(i, j) = b_right(i)ᵀ H b_left(j),   c_v(i, j) = b_bottom(i)ᵀ V b_top(j),
//
// for piece j right of (below) piece i. The network's compatibilities are
// of this form with H = M_right + M_leftᵀ and V = M_bottom + M_topᵀ
// (NetPairWeights).
//
// Unary, when neither 0 nor 1, weighs the network's logits too: the decoder
// scores E(σ) = Unary·Σ_i g[i, σ(i)] + the pairwise terms (see Decoder).
// FitPairs fits it with FitConfig.FitUnary; 0 stands for 1, the weight
// of NetPairWeights and of files of version 1.
//
// Border, when not nil, scores the sides of the puzzle too: a piece i at a
// position on the puzzle's side d (0 top, 1 bottom, 2 left, 3 right; a
// corner is on two) adds Border[d]ᵀ b_d(i) to E, its strip on that side
// through a fitted vector (FitPairs with FitConfig.FitBorder). The
// bilinear c cannot say that a piece whose edge is blank belongs on the
// puzzle's border, since a blank strip scores 0 against any neighbour;
// these terms can.
type PairWeights struct {
	// Depth is the number of pixel rows in a strip.
	Depth int
	// LenH and LenV are the lengths of the strips H and V act on (left and
	// right strips for H, top and bottom for V); H is LenH × LenH and V
	// LenV × LenV, row-major.
	LenH, LenV int
	H, V       []float64
	Unary      float64
	// Border is nil or holds four vectors, for the top, bottom, left and
	// right sides, of lengths LenV, LenV, LenH and LenH.
	Border [][]float64
}

// borderLen returns the length of the border vector of side d.
func (w *PairWeights) borderLen(d int) int {
	if d < 2 {
		return w.LenV
	}
	return w.LenH
}

// onSide reports whether position q of a p × p puzzle lies on the puzzle's
// side d (0 top, 1 bottom, 2 left, 3 right).
func onSide(p, q, d int) bool {
	switch d {
	case 0:
		return q < p
	case 1:
		return q >= p*(p-1)
	case 2:
		return q%p == 0
	default:
		return q%p == p-1
	}
}

// addBorder adds the border terms of w to the unary scores u (u[i*N+q] for
// scrambled piece i at position q) of the puzzle whose scrambled pieces are
// scrambled (nothing without w.Border).
func (w *PairWeights) addBorder(g jigsaw.Grid, u, scrambled []float64) {
	if w == nil || w.Border == nil {
		return
	}
	nn2 := g.N()
	st := jigsaw.Strips(g, scrambled, 1, w.Depth)
	for d, beta := range w.Border {
		l := len(beta)
		for i := range nn2 {
			f := 0.0
			for k, x := range st[d].Data[i*l : (i+1)*l] {
				f += beta[k] * x
			}
			for q := range nn2 {
				if onSide(g.P, q, d) {
					u[i*nn2+q] += f
				}
			}
		}
	}
}

// borderFeatures adds sign times the border features of arrangement pred
// (piece → position) to gb: Σ b_d(i) over the pieces i on the puzzle's side
// d, the gradient of the border terms of E with respect to Border[d].
func borderFeatures(gb [][]float64, p int, pred perm.Perm, st [4]*ad.Tensor, sign float64) {
	for d, dst := range gb {
		l := len(dst)
		for i, q := range pred {
			if !onSide(p, q, d) {
				continue
			}
			for k, x := range st[d].Data[i*l : (i+1)*l] {
				dst[k] += sign * x
			}
		}
	}
}

// unary returns the weight of the logits: Unary, or 1 when it is 0.
func (w *PairWeights) unary() float64 {
	if w == nil || w.Unary == 0 {
		return 1
	}
	return w.Unary
}

// validate checks w against the pieces of grid g.
func (w *PairWeights) validate(g jigsaw.Grid) error {
	switch {
	case w.Depth < 1 || w.Depth > min(g.PieceH, g.PieceW):
		return fmt.Errorf("pair weights: strip depth %d for %d × %d pieces", w.Depth, g.PieceH, g.PieceW)
	case w.LenH != jigsaw.StripLen(g, w.Depth, 2) || w.LenV != jigsaw.StripLen(g, w.Depth, 0):
		return fmt.Errorf("pair weights: strips of %d and %d values, the pieces give %d and %d", w.LenH, w.LenV, jigsaw.StripLen(g, w.Depth, 2), jigsaw.StripLen(g, w.Depth, 0))
	case len(w.H) != w.LenH*w.LenH || len(w.V) != w.LenV*w.LenV:
		return fmt.Errorf("pair weights: %d and %d matrix entries, want %d and %d", len(w.H), len(w.V), w.LenH*w.LenH, w.LenV*w.LenV)
	case !(w.Unary >= 0) || math.IsInf(w.Unary, 0):
		return fmt.Errorf("pair weights: unary weight %v must be finite and >= 0", w.Unary)
	case w.Border != nil && len(w.Border) != 4:
		return fmt.Errorf("pair weights: %d border vectors, want 4 (top, bottom, left, right)", len(w.Border))
	}
	for d, beta := range w.Border {
		if len(beta) != w.borderLen(d) {
			return fmt.Errorf("pair weights: border vector %d has %d entries, want %d", d, len(beta), w.borderLen(d))
		}
		for _, x := range beta {
			if math.IsNaN(x) || math.IsInf(x, 0) {
				return fmt.Errorf("pair weights: border vector %d holds a value that is not finite", d)
			}
		}
	}
	for _, x := range w.H {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return errors.New("pair weights: H holds a value that is not finite")
		}
	}
	for _, x := range w.V {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return errors.New("pair weights: V holds a value that is not finite")
		}
	}
	return nil
}

// NetPairWeights returns the network's own compatibilities as PairWeights
// (H = M_right + M_leftᵀ, V = M_bottom + M_topᵀ): decoding with them
// scores every arrangement as decoding without them does, up to rounding.
// It needs a network with edge matching (jigsaw.Config.Refine > 0).
func NetPairWeights(n *jigsaw.Net) (*PairWeights, error) {
	if n.Config().Refine == 0 {
		return nil, errors.New("decode: NetPairWeights: the network has no edge matching (jigsaw.Config.Refine = 0)")
	}
	depth := n.Config().StripDepth()
	w := &PairWeights{Depth: depth, LenH: jigsaw.StripLen(n.Grid(), depth, 2), LenV: jigsaw.StripLen(n.Grid(), depth, 0)}
	edges := n.Edges()
	sum := func(a, b []float64, l int) []float64 {
		out := make([]float64, l*l)
		for r := range l {
			for c := range l {
				out[r*l+c] = a[r*l+c] + b[c*l+r]
			}
		}
		return out
	}
	w.H = sum(edges[3], edges[2], w.LenH)
	w.V = sum(edges[1], edges[0], w.LenV)
	return w, nil
}

// weightTables fills h and v with c_h and c_v of w for the pieces of one
// scrambled puzzle.
func (w *PairWeights) weightTables(g jigsaw.Grid, h, v, scrambled []float64) {
	nn2 := g.N()
	st := jigsaw.Strips(g, scrambled, 1, w.Depth)
	fill := func(dst []float64, m []float64, from, to *ad.Tensor, l int) {
		// a[i] = b_from(i)ᵀ m.
		a := make([]float64, nn2*l)
		for i := range nn2 {
			out := a[i*l : (i+1)*l]
			for k, x := range from.Data[i*l : (i+1)*l] {
				for c, mkc := range m[k*l : (k+1)*l] {
					out[c] += x * mkc
				}
			}
		}
		for i := range nn2 {
			ai := a[i*l : (i+1)*l]
			for j := range nn2 {
				s := 0.0
				for k, y := range to.Data[j*l : (j+1)*l] {
					s += ai[k] * y
				}
				dst[i*nn2+j] = s
			}
		}
	}
	fill(h, w.H, st[3], st[2], w.LenH)
	fill(v, w.V, st[1], st[0], w.LenV)
}

// FitConfig says how FitPairs fits PairWeights.
type FitConfig struct {
	// Epochs is the number of passes over the puzzles.
	Epochs int
	// Batch is the number of puzzles per Adam step.
	Batch int
	// LR is Adam's learning rate.
	LR float64
	// Anneal is the number of annealing proposals of each loss-augmented
	// decoding (0: pair swaps only).
	Anneal int
	// Seed seeds the shuffling and the annealing.
	Seed uint64
	// Margin is the loss Δ of the structured hinge (see FitPairs):
	// MarginPieces (the zero value) or MarginPixels.
	Margin Margin `json:",omitempty"`
	// FitUnary fits the weight of the network's logits (PairWeights.Unary)
	// with the matrices; otherwise it stays at its start value.
	FitUnary bool `json:",omitempty"`
	// FitBorder fits the border vectors (PairWeights.Border) with the
	// matrices, from the start's or, if it has none, from zeros (which
	// score every arrangement as the start does); otherwise the start's
	// border, if any, stays.
	FitBorder bool `json:",omitempty"`
	// Depth is the strip depth of the fitted matrices (0: the start's). A
	// depth above the start's lets the score see pixels further from the
	// seam, up to the whole piece; the fit then starts from the start's
	// matrices on the outer rows of the strips and zeros elsewhere, which
	// scores every arrangement as the start does.
	Depth int `json:",omitempty"`
}

// Margin names the loss Δ(σ, σ*) that FitPairs adds to the score of a
// wrong arrangement σ.
type Margin string

const (
	// MarginPieces counts the positions whose piece differs in its pixels
	// from the true one: the index-based error up to identical pieces.
	MarginPieces Margin = "pieces"
	// MarginPixels sums, over the positions, the l1 distance between the
	// piece put there and the true one, divided by the mean of that
	// distance over the differing (piece, position) pairs of all the
	// fitting puzzles: Δ is then proportional to the l1 error of the
	// reconstruction, and a differing piece costs 1 on average, as with
	// MarginPieces. It weighs the loss toward misplaced ink.
	MarginPixels Margin = "pixels"
)

func (c FitConfig) validate() error {
	switch {
	case c.Epochs < 1:
		return fmt.Errorf("epochs %d must be >= 1", c.Epochs)
	case c.Batch < 1:
		return fmt.Errorf("batch %d must be >= 1", c.Batch)
	case !(c.LR > 0) || math.IsInf(c.LR, 0):
		return fmt.Errorf("learning rate %v must be finite and > 0", c.LR)
	case c.Anneal < 0:
		return fmt.Errorf("anneal %d must be >= 0", c.Anneal)
	case c.Depth < 0:
		return fmt.Errorf("strip depth %d must be >= 0", c.Depth)
	case c.Margin != "" && c.Margin != MarginPieces && c.Margin != MarginPixels:
		return fmt.Errorf("margin %q: want %q or %q", c.Margin, MarginPieces, MarginPixels)
	}
	return nil
}

// FitProgress reports one epoch of FitPairs: the mean structured hinge
// loss over its puzzles (see FitPairs) and the share of puzzles whose
// loss-augmented decoding returned the truth (hinge 0).
type FitProgress struct {
	Epoch     int
	Hinge     float64
	AtTruth   float64
	Puzzles   int
	StepsDone int
	// Unary is the weight of the logits after the epoch (with
	// FitConfig.FitUnary; 0 otherwise).
	Unary float64 `json:",omitempty"`
	// BorderNorm is the Euclidean norm of the four border vectors after
	// the epoch (with FitConfig.FitBorder; 0 otherwise).
	BorderNorm float64 `json:",omitempty"`
}

// FitPairs fits the compatibility matrices of the decoder d to its hard
// score on the puzzles z, starting from start (nil: the network's own,
// NetPairWeights), and returns them; the network itself is not changed.
// It minimises the structured hinge loss (margin rescaling)
//
//	ℓ(H, V) = mean over puzzles of max_σ [E(σ) + Δ(σ, σ*)] − E(σ*),
//
// with E the score of d with c from H and V (see Decoder), σ* the true
// arrangement and Δ the loss of fc.Margin: by default the number of
// positions whose piece differs, in its pixels, from the true one
// (identical pieces may trade places). The max is searched as Solve
// searches E, with Δ added to the logits and fc.Anneal proposals; where the
// search ends below E(σ*) the puzzle counts as at the truth. Its
// subgradient is λ times the difference of the strip outer products
// Σ b_right(i) b_left(j)ᵀ (and bottom, top) over the neighbours of the two
// arrangements, with fc.FitUnary, for the weight of the logits, the
// difference of Σ_i g[i, σ(i)] between them, and, with fc.FitBorder, for
// Border[d], the difference of Σ b_d(i) over the pieces on the puzzle's side
// d; Adam takes the steps. Puzzles are
// visited in an order shuffled by fc.Seed; each decoding has its own
// random stream, so the result does not depend on GOMAXPROCS. progress,
// if not nil, is called after every epoch.
func FitPairs(n *jigsaw.Net, z *jigsaw.Puzzles, d Decoder, start *PairWeights, fc FitConfig, progress func(FitProgress)) (*PairWeights, error) {
	if err := fc.validate(); err != nil {
		return nil, fmt.Errorf("decode: FitPairs: %w", err)
	}
	if d.Pairwise <= 0 {
		return nil, errors.New("decode: FitPairs: the decoder needs a pairwise weight > 0")
	}
	if start == nil {
		var err error
		if start, err = NetPairWeights(n); err != nil {
			return nil, fmt.Errorf("decode: FitPairs: %w", err)
		}
	}
	d.Pair, d.Anneal, d.Restarts = start, fc.Anneal, 0
	if err := checkDecoder(n, d); err != nil {
		return nil, fmt.Errorf("decode: FitPairs: %w", err)
	}
	if fc.Depth != 0 && fc.Depth != start.Depth {
		if fc.Depth < start.Depth {
			return nil, fmt.Errorf("decode: FitPairs: strip depth %d below the start's %d", fc.Depth, start.Depth)
		}
		start = start.deepen(n.Grid(), fc.Depth)
		d.Pair = start
		if err := checkDecoder(n, d); err != nil {
			return nil, fmt.Errorf("decode: FitPairs: %w", err)
		}
	}
	if z.Len() == 0 || z.Len() >= maxPuzzles {
		return nil, fmt.Errorf("decode: FitPairs: %d puzzles, want 1 to %d", z.Len(), maxPuzzles-1)
	}
	logits, inits, err := single(n).logitsAndMatching(z)
	if err != nil {
		return nil, fmt.Errorf("decode: FitPairs: %w", err)
	}
	w := &PairWeights{Depth: start.Depth, LenH: start.LenH, LenV: start.LenV,
		H: append([]float64(nil), start.H...), V: append([]float64(nil), start.V...), Unary: start.Unary}
	if start.Border != nil || fc.FitBorder {
		w.Border = make([][]float64, 4)
		for d := range w.Border {
			w.Border[d] = make([]float64, w.borderLen(d))
			if start.Border != nil {
				copy(w.Border[d], start.Border[d])
			}
		}
	}
	ph := ad.NewParam("pair.h", &ad.Tensor{Shape: []int{w.LenH, w.LenH}, Data: w.H})
	pv := ad.NewParam("pair.v", &ad.Tensor{Shape: []int{w.LenV, w.LenV}, Data: w.V})
	params := []*ad.Param{ph, pv}
	var pu *ad.Param
	if fc.FitUnary {
		pu = ad.NewParam("pair.unary", &ad.Tensor{Shape: []int{1}, Data: []float64{start.unary()}})
		params = append(params, pu)
	}
	var pb []*ad.Param
	if fc.FitBorder {
		for d, beta := range w.Border {
			pb = append(pb, ad.NewParam("pair.border."+sideNames[d], &ad.Tensor{Shape: []int{len(beta)}, Data: beta}))
		}
		params = append(params, pb...)
	}
	opt, err := optim.NewAdam(params)
	if err != nil {
		return nil, err
	}
	var pixScale float64 // 1 / the mean l1 distance of a differing pair (MarginPixels)
	if fc.Margin == MarginPixels {
		if pixScale, err = pixelMarginScale(z); err != nil {
			return nil, fmt.Errorf("decode: FitPairs: %w", err)
		}
	}
	d.Pair = w
	rng := rand.New(rand.NewPCG(fc.Seed, 0x70616972)) // "pair"
	order := make([]int, z.Len())
	for i := range order {
		order[i] = i
	}
	// Per puzzle of a batch: its gradient of H and V, hinge, and whether
	// the search ended at the truth.
	type result struct {
		gh, gv []float64
		gb     [][]float64
		gu     float64
		hinge  float64
		truth  bool
	}
	edges := n.Edges() // the network is left as it is: read once
	steps := 0
	for epoch := range fc.Epochs {
		rng.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
		d.Seed = rng.Uint64() // the annealing streams of this epoch
		var sumHinge float64
		atTruth := 0
		for b0 := 0; b0 < len(order); b0 += fc.Batch {
			batch := order[b0:min(b0+fc.Batch, len(order))]
			res := make([]result, len(batch))
			eachPuzzle(n.Grid().P, len(batch), func(s *arranger, t int) {
				b := batch[t]
				scr := scrambledOf(z, b)
				pairTables(n, edges, s.h, s.v, scr, d)
				g := s.unaryScores(logits[b].RawMatrix().Data, w, n.Grid(), scr)
				// Loss augmentation: Δ's share of every (piece, position)
				// pair added to its unary score.
				u := s.margin
				copy(u, g)
				if fc.Margin == MarginPixels {
					addPixelMargin(u, z, b, pixScale)
				} else {
					addMargin(u, z, b)
				}
				pred := append(perm.Perm(nil), inits[b]...)
				s.decode(pred, u, d, uint64(b))
				s.u = u
				s.place(pred)
				aug := s.energy()
				s.u = g
				s.place(z.Perms[b])
				truthE := s.energy()
				r := result{gh: make([]float64, len(w.H)), gv: make([]float64, len(w.V))}
				if aug <= truthE {
					r.truth = true
				} else {
					r.hinge = aug - truthE
					st := jigsaw.Strips(n.Grid(), scr, 1, w.Depth)
					outer(r.gh, r.gv, n.Grid().P, pred, st, d.Pairwise)
					outer(r.gh, r.gv, n.Grid().P, z.Perms[b], st, -d.Pairwise)
					if pb != nil {
						r.gb = make([][]float64, len(pb))
						for k, p := range pb {
							r.gb[k] = make([]float64, len(p.Value.Data))
						}
						borderFeatures(r.gb, n.Grid().P, pred, st, 1)
						borderFeatures(r.gb, n.Grid().P, z.Perms[b], st, -1)
					}
					if pu != nil {
						// Both are permutations of N, so Objective cannot fail.
						at, _ := relax.Objective(logits[b], pred)
						truth, _ := relax.Objective(logits[b], z.Perms[b])
						r.gu = at - truth
					}
				}
				res[t] = r
			})
			for _, p := range params {
				p.ZeroGrad()
			}
			scale := 1 / float64(len(batch))
			for _, r := range res {
				if pu != nil {
					pu.Grad.Data[0] += scale * r.gu
				}
				for i, x := range r.gh {
					ph.Grad.Data[i] += scale * x
				}
				for i, x := range r.gv {
					pv.Grad.Data[i] += scale * x
				}
				for k, gb := range r.gb {
					for i, x := range gb {
						pb[k].Grad.Data[i] += scale * x
					}
				}
				sumHinge += r.hinge
				if r.truth {
					atTruth++
				}
			}
			if err := opt.Step(fc.LR); err != nil {
				return nil, fmt.Errorf("decode: FitPairs: %w", err)
			}
			if pu != nil {
				if w.Unary = pu.Value.Data[0]; !(w.Unary > 0) {
					return nil, fmt.Errorf("decode: FitPairs: the weight of the logits fell to %v; a smaller learning rate may help", w.Unary)
				}
			}
			steps++
		}
		if progress != nil {
			fp := FitProgress{Epoch: epoch + 1, Hinge: sumHinge / float64(len(order)),
				AtTruth: float64(atTruth) / float64(len(order)), Puzzles: len(order), StepsDone: steps}
			if pu != nil {
				fp.Unary = w.Unary
			}
			if pb != nil {
				for _, beta := range w.Border {
					for _, x := range beta {
						fp.BorderNorm += x * x
					}
				}
				fp.BorderNorm = math.Sqrt(fp.BorderNorm)
			}
			progress(fp)
		}
	}
	if err := w.validate(n.Grid()); err != nil {
		return nil, fmt.Errorf("decode: FitPairs: the fit diverged: %w", err)
	}
	return w, nil
}

// addMargin adds to the unary scores u (u[i*N+q] for scrambled piece i at
// position q) of puzzle b of z one for every position q whose true piece
// differs in its pixels from piece i.
func addMargin(u []float64, z *jigsaw.Puzzles, b int) {
	eachPiecePair(z, b, func(k int, piece, truth []float64) {
		for m, x := range piece {
			if x != truth[m] {
				u[k]++
				return
			}
		}
	})
}

// eachPiecePair calls fn for every scrambled piece i and position q of
// puzzle b of z with k = i·N + q, the pixels of piece i and those of the
// true piece of q.
func eachPiecePair(z *jigsaw.Puzzles, b int, fn func(k int, piece, truth []float64)) {
	nn2, ps := z.Grid.N(), z.Grid.PieceSize()
	scr := z.Scrambled[b*nn2*ps : (b+1)*nn2*ps]
	tru := z.Pieces[b*nn2*ps : (b+1)*nn2*ps]
	for i := range nn2 {
		for q := range nn2 {
			fn(i*nn2+q, scr[i*ps:(i+1)*ps], tru[q*ps:(q+1)*ps])
		}
	}
}

// deepen returns w for strips of depth depth ≥ w.Depth on the pieces of
// grid g: its matrices act on the outer w.Depth rows of the deeper strips,
// the new entries are 0, so both score every arrangement alike.
func (w *PairWeights) deepen(g jigsaw.Grid, depth int) *PairWeights {
	// index maps entry k of a strip of depth w.Depth on side d (0 top, 2
	// left) to its entry in a strip of depth depth: strips run channel by
	// channel, then row by row inwards, then along the side (see strips).
	index := func(d int) []int {
		along := g.PieceW
		if d >= 2 {
			along = g.PieceH
		}
		var idx []int
		for ch := range g.Channels {
			for l := range w.Depth {
				for u := range along {
					idx = append(idx, (ch*depth+l)*along+u)
				}
			}
		}
		return idx
	}
	embed := func(m []float64, oldLen, newLen int, idx []int) []float64 {
		out := make([]float64, newLen*newLen)
		for r := range oldLen {
			for c := range oldLen {
				out[idx[r]*newLen+idx[c]] = m[r*oldLen+c]
			}
		}
		return out
	}
	deep := &PairWeights{Depth: depth, LenH: jigsaw.StripLen(g, depth, 2), LenV: jigsaw.StripLen(g, depth, 0), Unary: w.Unary}
	deep.H = embed(w.H, w.LenH, deep.LenH, index(2))
	deep.V = embed(w.V, w.LenV, deep.LenV, index(0))
	if w.Border != nil {
		deep.Border = make([][]float64, len(w.Border))
		for d, beta := range w.Border {
			deep.Border[d] = make([]float64, deep.borderLen(d))
			for k, j := range index(d) {
				deep.Border[d][j] = beta[k]
			}
		}
	}
	return deep
}

// pixelMarginScale returns 1 over the mean l1 distance between a scrambled
// piece and a true position's piece, over the pairs of every puzzle of z
// that differ (MarginPixels).
func pixelMarginScale(z *jigsaw.Puzzles) (float64, error) {
	var sum float64
	count := 0
	for b := range z.Len() {
		eachPiecePair(z, b, func(_ int, piece, truth []float64) {
			if d := l1Dist(piece, truth); d > 0 {
				sum += d
				count++
			}
		})
	}
	if count == 0 {
		return 0, errors.New("pixel margin: every piece of every puzzle is identical to every other")
	}
	return float64(count) / sum, nil
}

// addPixelMargin adds to the unary scores u of puzzle b of z, for scrambled
// piece i at position q, scale times the l1 distance between piece i and
// the true piece of q.
func addPixelMargin(u []float64, z *jigsaw.Puzzles, b int, scale float64) {
	eachPiecePair(z, b, func(k int, piece, truth []float64) {
		u[k] += scale * l1Dist(piece, truth)
	})
}

// l1Dist returns Σ_k |a[k] − b[k]|.
func l1Dist(a, b []float64) float64 {
	s := 0.0
	for k, x := range a {
		s += math.Abs(x - b[k])
	}
	return s
}

// outer adds sign times the features of arrangement pred (piece →
// position) to gh and gv: Σ b_right(i) b_left(j)ᵀ over the pieces i, j side
// by side, and Σ b_bottom(i) b_top(j)ᵀ over those one above the other.
func outer(gh, gv []float64, p int, pred perm.Perm, st [4]*ad.Tensor, sign float64) {
	n := p * p
	at := make([]int, n)
	for i, q := range pred {
		at[q] = i
	}
	add := func(dst []float64, from, to *ad.Tensor, i, j int) {
		l := from.Shape[2]
		a, c := from.Data[i*l:(i+1)*l], to.Data[j*l:(j+1)*l]
		for r, x := range a {
			if x == 0 {
				continue
			}
			row := dst[r*l : (r+1)*l]
			for k, y := range c {
				row[k] += sign * x * y
			}
		}
	}
	for q := range n {
		if q%p < p-1 {
			add(gh, st[3], st[2], at[q], at[q+1])
		}
		if q/p < p-1 {
			add(gv, st[1], st[0], at[q], at[q+p])
		}
	}
}

// pairsFile is the JSON form of PairWeights on disk.
type pairsFile struct {
	Format  string    `json:"format"`
	Version int       `json:"version"`
	Depth   int       `json:"depth"`
	LenH    int       `json:"len_h"`
	LenV    int       `json:"len_v"`
	H       []float64 `json:"h"`
	V       []float64 `json:"v"`
	Unary   float64   `json:"unary,omitempty"`
	// Border (version 3) holds the top, bottom, left and right vectors.
	Border [][]float64 `json:"border,omitempty"`
}

const (
	pairsFormat = "permlab-jigsaw-pair-weights"
	// pairsVersion is the newest version this build reads; version 1 has
	// no unary weight, version 2 no border vectors.
	pairsVersion = 3
)

// SavePairsFile writes w to path as JSON (format
// "permlab-jigsaw-pair-weights": depth, len_h, len_v, the row-major
// matrices h and v, in version 2 the weight of the logits unary, and in
// version 3 the border vectors, top, bottom, left, right, and unary if it
// is not 1). Weights whose Unary is 0 or 1 and that have no border are
// written as version 1, which has neither field, and those with a weight
// but no border as version 2, so files of earlier fits read the same.
func SavePairsFile(path string, w *PairWeights) error {
	f := pairsFile{Format: pairsFormat, Version: 1, Depth: w.Depth, LenH: w.LenH, LenV: w.LenV, H: w.H, V: w.V}
	if w.unary() != 1 {
		f.Version, f.Unary = 2, w.Unary
	}
	if w.Border != nil {
		f.Version, f.Border = 3, w.Border
	}
	b, err := json.MarshalIndent(f, "", " ")
	if err != nil {
		return fmt.Errorf("decode: SavePairsFile: %w", err)
	}
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("decode: SavePairsFile: %w", err)
	}
	return nil
}

// isSquare reports whether n = side², without overflowing for any side >= 1.
func isSquare(n, side int) bool { return n%side == 0 && n/side == side }

// LoadPairsFile reads pair weights written by SavePairsFile. A file of
// another format or version, or with matrices of the wrong size, is an
// error; whether they fit a network is checked when they decode.
func LoadPairsFile(path string) (*PairWeights, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("decode: LoadPairsFile: %w", err)
	}
	var f pairsFile
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		return nil, fmt.Errorf("decode: LoadPairsFile: %s: %w", path, err)
	}
	switch {
	case f.Format != pairsFormat:
		return nil, fmt.Errorf("decode: LoadPairsFile: %s: format %q, want %q", path, f.Format, pairsFormat)
	case f.Version < 1 || f.Version > pairsVersion:
		return nil, fmt.Errorf("decode: LoadPairsFile: %s: version %d, this build reads 1 to %d", path, f.Version, pairsVersion)
	case f.Version == 1 && f.Unary != 0:
		return nil, fmt.Errorf("decode: LoadPairsFile: %s: version 1 has no unary weight, found %v", path, f.Unary)
	case f.Version == 2 && (!(f.Unary > 0) || math.IsInf(f.Unary, 0)):
		return nil, fmt.Errorf("decode: LoadPairsFile: %s: unary weight %v must be finite and > 0", path, f.Unary)
	case f.Version == 3 && (!(f.Unary >= 0) || math.IsInf(f.Unary, 0)):
		return nil, fmt.Errorf("decode: LoadPairsFile: %s: unary weight %v must be finite and >= 0", path, f.Unary)
	case f.Version < 3 && f.Border != nil:
		return nil, fmt.Errorf("decode: LoadPairsFile: %s: version %d has no border vectors", path, f.Version)
	case f.Version == 3 && len(f.Border) != 4:
		return nil, fmt.Errorf("decode: LoadPairsFile: %s: %d border vectors, version 3 has 4", path, len(f.Border))
	case f.Depth < 1 || f.LenH < 1 || f.LenV < 1 || !isSquare(len(f.H), f.LenH) || !isSquare(len(f.V), f.LenV):
		return nil, fmt.Errorf("decode: LoadPairsFile: %s: depth %d, matrices of %d and %d entries for strips of %d and %d", path, f.Depth, len(f.H), len(f.V), f.LenH, f.LenV)
	}
	w := &PairWeights{Depth: f.Depth, LenH: f.LenH, LenV: f.LenV, H: f.H, V: f.V, Unary: f.Unary, Border: f.Border}
	for d, beta := range w.Border {
		if len(beta) != w.borderLen(d) {
			return nil, fmt.Errorf("decode: LoadPairsFile: %s: border vector %d has %d entries for strips of %d", path, d, len(beta), w.borderLen(d))
		}
	}
	return w, nil
}

// sideNames are the sides of a piece, in the order of jigsaw.Net.Edges.
var sideNames = [4]string{"top", "bottom", "left", "right"}
