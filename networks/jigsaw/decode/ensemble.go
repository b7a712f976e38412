package decode

import (
	"errors"
	"fmt"

	"gonum.org/v1/gonum/mat"

	"github.com/permlab/permlab/networks/jigsaw"
	"github.com/permlab/permlab/perm"
	"github.com/permlab/permlab/relax"
)

// Ensemble decodes puzzles with the mean score of several networks trained
// for the same grid, typically from different seeds.
//
// The score of an arrangement σ is the mean of the networks' scores E_k(σ)
// (see Decoder): the logits g_k and, with a pairwise weight, the
// compatibilities c_k are averaged; the seam term, the same for every
// network, keeps its weight (the mean of equal terms). Averaging the
// logits is sound although each network's are defined only up to a constant
// per row and per column: a hard assignment uses every row and every column
// once, so such constants shift E_k(σ) by the same amount for every σ. The
// linear assignment of the ensemble, M(ḡ), maximises the mean of the
// networks' linear scores.
//
// An ensemble of one network decodes exactly as that network's Solve.
type Ensemble struct {
	nets []*jigsaw.Net
	// edges holds each network's edge matrices (jigsaw.Net.Edges) for the
	// duration of one call (see snapshot); nil outside one.
	edges [][][]float64
}

// edgesOf returns the edge matrices of network k: the snapshot's, or read
// now outside one.
func (e *Ensemble) edgesOf(k int) [][]float64 {
	if e.edges != nil {
		return e.edges[k]
	}
	return e.nets[k].Edges()
}

// snapshot returns a copy of e that holds the networks' edge matrices as
// they are now, read once for a whole call rather than once a puzzle.
func (e *Ensemble) snapshot() *Ensemble {
	if e.edges != nil {
		return e
	}
	c := &Ensemble{nets: e.nets, edges: make([][][]float64, len(e.nets))}
	for k, n := range e.nets {
		c.edges[k] = n.Edges()
	}
	return c
}

// NewEnsemble returns the ensemble of nets. They must cut the same grid
// (pieces per side, crop, image size and channels). It is an error to pass
// no network.
func NewEnsemble(nets ...*jigsaw.Net) (*Ensemble, error) {
	if len(nets) == 0 {
		return nil, errors.New("decode: NewEnsemble: no networks")
	}
	for k, n := range nets {
		if n == nil {
			return nil, fmt.Errorf("decode: NewEnsemble: network %d is nil", k)
		}
		if n.Grid() != nets[0].Grid() {
			return nil, fmt.Errorf("decode: NewEnsemble: network %d cuts %+v, network 0 cuts %+v", k, n.Grid(), nets[0].Grid())
		}
	}
	return &Ensemble{nets: append([]*jigsaw.Net(nil), nets...)}, nil
}

// Len returns the number of networks.
func (e *Ensemble) Len() int { return len(e.nets) }

// Grid returns the grid the networks cut.
func (e *Ensemble) Grid() jigsaw.Grid { return e.nets[0].Grid() }

// check validates d for every network. Fitted pair weights belong to one
// network, so an ensemble of more than one refuses them.
func (e *Ensemble) check(d Decoder) error {
	if d.Critic != nil && d.Critic.grid != e.Grid() {
		return fmt.Errorf("the critic's grid %+v is not the networks' %+v", d.Critic.grid, e.Grid())
	}
	if d.Pair != nil && len(e.nets) > 1 {
		return errors.New("fitted pair weights belong to one network; an ensemble of several decodes with the networks' own compatibilities")
	}
	for k, n := range e.nets {
		if err := checkDecoder(n, d); err != nil {
			if len(e.nets) > 1 {
				return fmt.Errorf("network %d: %w", k, err)
			}
			return err
		}
	}
	return nil
}

// logits returns the mean logits ḡ of every puzzle of z.
func (e *Ensemble) logits(z *jigsaw.Puzzles) ([]*mat.Dense, error) {
	mean, err := e.nets[0].LogitMatrices(z)
	if err != nil || len(e.nets) == 1 {
		return mean, err
	}
	for _, n := range e.nets[1:] {
		g, err := n.LogitMatrices(z)
		if err != nil {
			return nil, err
		}
		for b := range mean {
			mean[b].Add(mean[b], g[b])
		}
	}
	for _, m := range mean {
		m.Scale(1/float64(len(e.nets)), m)
	}
	return mean, nil
}

// logitsAndMatching returns ḡ of every puzzle of z and its linear
// assignments M(ḡ).
func (e *Ensemble) logitsAndMatching(z *jigsaw.Puzzles) ([]*mat.Dense, []perm.Perm, error) {
	logits, err := e.logits(z)
	if err != nil {
		return nil, nil, err
	}
	ms := make([]mat.Matrix, len(logits))
	for i, g := range logits {
		ms[i] = g
	}
	preds, err := relax.MatchingBatch(ms)
	if err != nil {
		return nil, nil, err
	}
	return logits, preds, nil
}

// pairTables fills s.h and s.v with the mean of the networks' tables (see
// Net.pairTables) for the scrambled pieces of one puzzle. Each network's
// tables carry the seam term, so it is computed once a network; taking it
// out of the mean would save a few hundred strip differences a puzzle,
// next to the annealing's hundreds of thousands of proposals, and change
// the last bits of the tables.
func (e *Ensemble) pairTables(s *arranger, scrambled []float64, d Decoder) {
	pairTables(e.nets[0], e.edgesOf(0), s.h, s.v, scrambled, d)
	if len(e.nets) == 1 {
		return
	}
	if len(s.eh) != len(s.h) {
		s.eh, s.ev = make([]float64, len(s.h)), make([]float64, len(s.v))
	}
	for k, n := range e.nets[1:] {
		pairTables(n, e.edgesOf(k+1), s.eh, s.ev, scrambled, d)
		for k := range s.h {
			s.h[k] += s.eh[k]
			s.v[k] += s.ev[k]
		}
	}
	inv := 1 / float64(len(e.nets))
	for k := range s.h {
		s.h[k] *= inv
		s.v[k] *= inv
	}
}

// setScore makes s score puzzle b of z as d says, with g its mean logits:
// the networks' mean tables, the unary scores and their scale.
func (e *Ensemble) setScore(s *arranger, z *jigsaw.Puzzles, b int, g *mat.Dense, d Decoder) {
	n := e.nets[0]
	scr := scrambledOf(z, b)
	e.pairTables(s, scr, d)
	s.u, s.lam = s.unaryScores(g.RawMatrix().Data, d.Pair, n.Grid(), scr), d.scale()
}

// Solve returns a hard assignment of every puzzle of z under the mean
// score of the networks, decoded as d says (see Decoder and Solve):
// pred[b][i] is the predicted position of scrambled piece i of puzzle b.
// The result does not depend on GOMAXPROCS.
func (e *Ensemble) Solve(z *jigsaw.Puzzles, d Decoder) ([]perm.Perm, error) {
	preds, err := e.solve(z, d)
	if err != nil {
		return nil, fmt.Errorf("decode: Solve: %w", err)
	}
	return preds, nil
}

func (e *Ensemble) solve(z *jigsaw.Puzzles, d Decoder) ([]perm.Perm, error) {
	e = e.snapshot()
	if err := e.check(d); err != nil {
		return nil, err
	}
	if z.Len() >= maxPuzzles {
		return nil, fmt.Errorf("%d puzzles, at most %d in one call", z.Len(), maxPuzzles-1)
	}
	logits, preds, err := e.logitsAndMatching(z)
	if err != nil {
		return nil, err
	}
	if d.Pairwise != 0 || d.Seam != 0 {
		n := e.nets[0]
		eachPuzzle(n.Grid().P, len(preds), func(s *arranger, b int) {
			e.setScore(s, z, b, logits[b], d)
			s.decode(preds[b], s.u, d, uint64(b))
		})
	}
	if d.Critic != nil {
		if err := e.rerank(z, logits, preds, d); err != nil {
			return nil, err
		}
	}
	return preds, nil
}

// Evaluate decodes every puzzle of z with d and averages the Metrics.
func (e *Ensemble) Evaluate(z *jigsaw.Puzzles, d Decoder) (jigsaw.Metrics, error) {
	preds, err := e.Solve(z, d)
	if err != nil {
		return jigsaw.Metrics{}, err
	}
	return jigsaw.ScoreAll(z, preds)
}

// SearchGap is the function SearchGap for the mean score of the networks.
func (e *Ensemble) SearchGap(z *jigsaw.Puzzles, preds []perm.Perm, d Decoder) (Gap, error) {
	g, err := e.searchGap(z, preds, d)
	if err != nil {
		return Gap{}, fmt.Errorf("decode: SearchGap: %w", err)
	}
	return g, nil
}
