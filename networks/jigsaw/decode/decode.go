package decode

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"sync"

	"github.com/permlab/permlab/networks/jigsaw"
	"github.com/permlab/permlab/perm"
)

// Decoder says how Solve turns the scores of a network into a hard
// assignment. The zero value gives the linear assignment M(g), the answer
// of jigsaw.Net.Solve.
//
// With Pairwise > 0 or Seam > 0, Solve maximises the quadratic score of
// an arrangement σ (piece → position)
//
//	E(σ) = Σ_i g[i, σ(i)] + Σ_{q left of q'} w_h(at(q), at(q')) + Σ_{q above q'} w_v(at(q), at(q')),
//	w_h(i, j) = λ c_h(i, j) − μ D_h(i, j),
//
// with g the network's final logits (weighted by Pair.Unary when fitted
// pair weights carry one), at(q) the piece placed at q, λ = Pairwise and
// μ = Seam. c is the learned compatibility of two pieces side by side
// (networks with jigsaw.Config.Refine only): for piece j right of piece i,
// c_h(i, j) = b_right(i)ᵀ M_right b_left(j) + b_left(j)ᵀ M_left b_right(i),
// the two terms that a round of edge matching adds when its assignment is
// hard (c_v likewise with bottom and top). The rounds of edge matching only
// ever see soft neighbours; E scores the hard arrangement itself. D is the
// seam dissimilarity, which needs no trained weights and so works with any
// network: D_h(i, j) = ‖r(i) − l(j)‖², the squared distance between the
// rightmost pixel column of piece i and the leftmost of piece j, all
// channels (D_v likewise with the bottom row of i and the top row of j).
// Unlike the bilinear c, D penalises ink that meets a blank edge.
//
// Maximising E is a quadratic assignment problem, NP-hard in general;
// Solve starts from M(g), climbs by swapping pairs of pieces, then, with
// Anneal > 0, runs simulated annealing (Anneal proposals; four in five swap
// two pieces, one in five shifts a random rectangle of pieces cyclically by
// one place, which moves a misplaced block at once; the temperature falls
// geometrically from StartTemp to EndTemp), keeps the best arrangement seen
// and climbs by swaps again. With Restarts > 1 it anneals that many times
// from the same start and keeps the best result. The result scores at
// least E(M(g)).
type Decoder struct {
	// Pairwise is the weight λ of the learned edge compatibilities c.
	Pairwise float64
	// Seam is the weight μ of the seam dissimilarities D (0 with Pairwise
	// 0: M(g)).
	Seam float64 `json:",omitempty"`
	// Anneal is the number of annealing proposals per puzzle (0: none,
	// swaps only).
	Anneal int
	// StartTemp and EndTemp bound the annealing temperature, in units of
	// E (0: 60 and 0.03). The defaults suit the network's own
	// compatibilities; fitted ones (Pair) can want other temperatures
	// (networks/jigsaw/README.md uses 6 to 3 at 6 × 6). The best
	// arrangement seen is kept and climbed, so an end temperature well
	// above 0 loses nothing.
	StartTemp, EndTemp float64
	// Restarts is the number of independent annealing runs per puzzle,
	// each from the climbed M(g) with a stream of its own; the arrangement
	// with the highest E wins (0 or 1: one run).
	Restarts int `json:",omitempty"`
	// Pair, if not nil, replaces the network's compatibilities c by fitted
	// ones (FitPairs); it needs Pairwise > 0, and then no edge
	// matching. It is not part of the JSON form.
	Pair *PairWeights `json:"-"`
	// Critic, if not nil, reranks the arrangement the search ends with
	// and every arrangement one swap or 3-cycle from it by E + CriticWeight·D,
	// D the critic's log-odds that the assembled image is right (see
	// Critic). It is not part of the JSON form.
	Critic       *Critic `json:"-"`
	CriticWeight float64 `json:",omitempty"`
	// Seed seeds the annealing; run r of puzzle b uses a PCG source of
	// (Seed, b + r·2⁴⁰), so the result does not depend on GOMAXPROCS.
	Seed uint64
}

// maxPuzzles bounds the puzzles of one Solve call, so that the annealing
// streams of different restarts never coincide.
const maxPuzzles = 1 << 40

// blockMoves is the share of annealing proposals that shift a block.
const blockMoves = 0.2

// Temps returns the annealing temperatures d uses: StartTemp and EndTemp,
// with the defaults for zeros.
func (d Decoder) Temps() (start, end float64) {
	start, end = d.StartTemp, d.EndTemp
	if start == 0 {
		start = 60
	}
	if end == 0 {
		end = 0.03
	}
	return start, end
}

// scale returns the factor of the tables of pairTables: λ, or 1 without λ.
func (d Decoder) scale() float64 {
	if d.Pairwise > 0 {
		return d.Pairwise
	}
	return 1
}

// checkDecoder validates d for n, fitted pair weights included.
func checkDecoder(n *jigsaw.Net, d Decoder) error {
	if err := d.validate(n.Config().Refine); err != nil {
		return err
	}
	if d.Pair != nil {
		return d.Pair.validate(n.Grid())
	}
	return nil
}

func (d Decoder) validate(refine int) error {
	start, end := d.Temps()
	switch {
	case !(d.Pairwise >= 0) || math.IsInf(d.Pairwise, 0):
		return fmt.Errorf("pairwise weight %v must be finite and >= 0", d.Pairwise)
	case d.Pair != nil && d.Pairwise == 0:
		return errors.New("fitted pair weights need a pairwise weight > 0")
	case d.Pairwise > 0 && refine == 0 && d.Pair == nil:
		return errors.New("a pairwise weight needs a network with edge matching (jigsaw.Config.Refine > 0)")
	case !(d.Seam >= 0) || math.IsInf(d.Seam, 0):
		return fmt.Errorf("seam weight %v must be finite and >= 0", d.Seam)
	case d.Anneal < 0:
		return fmt.Errorf("anneal %d must be >= 0", d.Anneal)
	case d.Restarts < 0:
		return fmt.Errorf("restarts %d must be >= 0", d.Restarts)
	case d.Restarts > 1 && d.Anneal == 0:
		return errors.New("restarts need annealing (Anneal > 0)")
	case d.Anneal > 0 && d.Pairwise == 0 && d.Seam == 0:
		return errors.New("annealing needs a pairwise or seam weight > 0")
	case d.Critic != nil && (!(d.CriticWeight > 0) || math.IsInf(d.CriticWeight, 0)):
		return fmt.Errorf("critic weight %v must be finite and > 0", d.CriticWeight)
	case d.Critic == nil && d.CriticWeight != 0:
		return errors.New("a critic weight needs a critic")
	case !(start > 0) || !(end > 0) || math.IsInf(start, 0) || end > start:
		return fmt.Errorf("temperatures %v to %v must be finite, > 0 and falling", d.StartTemp, d.EndTemp)
	}
	return nil
}

// Solve returns network n's hard assignment of every puzzle of z, decoded as d
// says: pred[b][i] is the predicted position of scrambled piece i of puzzle
// b. The result does not depend on GOMAXPROCS.
func Solve(n *jigsaw.Net, z *jigsaw.Puzzles, d Decoder) ([]perm.Perm, error) {
	return single(n).Solve(z, d)
}

// single returns the ensemble of n alone.
func single(n *jigsaw.Net) *Ensemble { return &Ensemble{nets: []*jigsaw.Net{n}} }

// eachPuzzle calls fn(s, k) for k = 0, …, count−1 on up to GOMAXPROCS
// goroutines, each with an arranger of its own. fn must write only what
// belongs to k, so the result does not depend on GOMAXPROCS.
func eachPuzzle(p, count int, fn func(s *arranger, k int)) {
	var wg sync.WaitGroup
	workers := min(runtime.GOMAXPROCS(0), count)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := newArranger(p)
			for k := w; k < count; k += workers {
				fn(s, k)
			}
		}()
	}
	wg.Wait()
}

// scrambledOf returns the scrambled pieces of puzzle b of z.
func scrambledOf(z *jigsaw.Puzzles, b int) []float64 {
	m := z.Grid.N() * z.Grid.PieceSize()
	return z.Scrambled[b*m : (b+1)*m]
}

// Evaluate decodes every puzzle of z with d and averages the Metrics.
func Evaluate(n *jigsaw.Net, z *jigsaw.Puzzles, d Decoder) (jigsaw.Metrics, error) {
	return single(n).Evaluate(z, d)
}

// edgeTables fills h[i*N+j], the compatibility c_h of piece j right of piece
// i, and v[i*N+j], c_v of piece j below piece i, for the N scrambled pieces
// of one puzzle (see Decoder).
func edgeTables(n *jigsaw.Net, edges [][]float64, h, v []float64, scrambled []float64) {
	nn2 := n.Grid().N()
	st := jigsaw.Strips(n.Grid(), scrambled, 1, n.Config().StripDepth())
	// em[d][i] = b_d(i)ᵀ M_d, the strip of piece i on side d through M_d.
	var em [4][]float64
	for d := range em {
		w := st[d].Shape[2]
		m := edges[d]
		em[d] = make([]float64, nn2*w)
		for i := range nn2 {
			out := em[d][i*w : (i+1)*w]
			for k, x := range st[d].Data[i*w : (i+1)*w] {
				for l, mkl := range m[k*w : (k+1)*w] {
					out[l] += x * mkl
				}
			}
		}
	}
	// facing returns b_d(i)ᵀ M_d b_opp(d)(j), the term of piece i for
	// piece j next to it on side d (top, bottom, left, right).
	facing := func(d, i, j int) float64 {
		w := st[d].Shape[2]
		a, b := em[d][i*w:(i+1)*w], st[d^1].Data[j*w:(j+1)*w]
		s := 0.0
		for k := range a {
			s += a[k] * b[k]
		}
		return s
	}
	for i := range nn2 {
		for j := range nn2 {
			h[i*nn2+j] = facing(3, i, j) + facing(2, j, i)
			v[i*nn2+j] = facing(1, i, j) + facing(0, j, i)
		}
	}
}

// pairTables fills h[i*N+j] with w_h(i, j) / scale, the weight of piece j
// right of piece i, and v[i*N+j] with w_v(i, j) / scale, piece j below piece
// i (see Decoder), and returns scale: λ when λ > 0, else 1. Without a seam
// term the tables are exactly c and the arranger multiplies by λ, the
// arithmetic of the decoder before Seam existed, so earlier results are
// reproduced bit for bit.
func pairTables(n *jigsaw.Net, edges [][]float64, h, v []float64, scrambled []float64, d Decoder) (scale float64) {
	clear(h)
	clear(v)
	scale = d.scale()
	mu := d.Seam / scale
	switch {
	case d.Pair != nil:
		d.Pair.weightTables(n.Grid(), h, v, scrambled)
	case d.Pairwise > 0:
		edgeTables(n, edges, h, v, scrambled)
	}
	if d.Seam > 0 {
		nn2 := n.Grid().N()
		st := jigsaw.Strips(n.Grid(), scrambled, 1, 1)
		// dist returns D between side a of piece i and side a^1 of piece j.
		dist := func(a, i, j int) float64 {
			w := st[a].Shape[2]
			x, y := st[a].Data[i*w:(i+1)*w], st[a^1].Data[j*w:(j+1)*w]
			s := 0.0
			for k := range x {
				s += (x[k] - y[k]) * (x[k] - y[k])
			}
			return s
		}
		for i := range nn2 {
			for j := range nn2 {
				h[i*nn2+j] -= mu * dist(3, i, j)
				v[i*nn2+j] -= mu * dist(1, i, j)
			}
		}
	}
	return scale
}

// arranger searches arrangements of one p × p puzzle for a high E.
type arranger struct {
	p         int
	h, v      []float64 // weights of neighbours over lam (pairTables)
	u         []float64 // unary scores, u[i*N+q]
	lam       float64   // scale of h and v
	at        []int     // at[q] is the piece at position q
	best, tmp []int
	start     []int     // the climbed M(g), where every restart begins
	won       []int     // the best arrangement over the restarts
	margin    []float64 // scratch unary scores of FitPairs
	eh, ev    []float64 // scratch tables of the other networks of an Ensemble
	weighted  []float64 // the weighted logits and border terms (unaryScores)
	pieces    []float64 // scratch pieces in position order (Ensemble.rerank)
}

// unaryScores returns the unary scores of E for the logits g of the puzzle
// whose scrambled pieces are scrambled: g itself, or, when w weighs the
// logits (PairWeights.Unary not 0 or 1) or scores the puzzle's border
// (PairWeights.Border), g times that weight plus the border terms, in a
// buffer of s.
func (s *arranger) unaryScores(g []float64, w *PairWeights, grid jigsaw.Grid, scrambled []float64) []float64 {
	a := w.unary()
	if a == 1 && (w == nil || w.Border == nil) {
		return g
	}
	if len(s.weighted) != len(g) {
		s.weighted = make([]float64, len(g))
	}
	for k, x := range g {
		s.weighted[k] = a * x
	}
	w.addBorder(grid, s.weighted, scrambled)
	return s.weighted
}

func newArranger(p int) *arranger {
	n := p * p
	return &arranger{p: p, lam: 1, h: make([]float64, n*n), v: make([]float64, n*n),
		at: make([]int, n), best: make([]int, n), tmp: make([]int, n),
		start: make([]int, n), won: make([]int, n), margin: make([]float64, n*n)}
}

// decode improves pred (piece → position, M(g) on entry) in place as d says.
func (s *arranger) decode(pred perm.Perm, u []float64, d Decoder, puzzle uint64) {
	if len(pred) < 2 {
		return // one piece: nothing to arrange
	}
	s.u, s.lam = u, d.scale()
	s.place(pred)
	s.climb()
	if d.Anneal > 0 {
		start, end := d.Temps()
		copy(s.start, s.at)
		won := math.Inf(-1)
		for r := range max(d.Restarts, 1) {
			copy(s.at, s.start)
			s.anneal(rand.New(rand.NewPCG(d.Seed, puzzle+uint64(r)*maxPuzzles)), d.Anneal, start, end)
			s.climb()
			if e := s.energy(); r == 0 || e > won {
				won = e
				copy(s.won, s.at)
			}
		}
		copy(s.at, s.won)
	}
	for q, i := range s.at {
		pred[i] = q
	}
}

// place sets the arrangement to pred (piece → position).
func (s *arranger) place(pred perm.Perm) {
	for i, q := range pred {
		s.at[q] = i
	}
}

// energy returns E of the current arrangement.
func (s *arranger) energy() float64 {
	p, n := s.p, s.p*s.p
	e := 0.0
	for q, i := range s.at {
		e += s.u[i*n+q]
		if q%p < p-1 {
			e += s.lam * s.h[i*n+s.at[q+1]]
		}
		if q/p < p-1 {
			e += s.lam * s.v[i*n+s.at[q+p]]
		}
	}
	return e
}

// edges returns the weights of position q with its neighbours, the edge to
// position skip left out.
func (s *arranger) edges(q, skip int) float64 {
	p, n := s.p, s.p*s.p
	r, c := q/p, q%p
	i := s.at[q]
	e := 0.0
	if c > 0 && q-1 != skip {
		e += s.h[s.at[q-1]*n+i]
	}
	if c < p-1 && q+1 != skip {
		e += s.h[i*n+s.at[q+1]]
	}
	if r > 0 && q-p != skip {
		e += s.v[s.at[q-p]*n+i]
	}
	if r < p-1 && q+p != skip {
		e += s.v[i*n+s.at[q+p]]
	}
	return s.lam * e
}

// local is the part of E that involves position q1 or q2.
func (s *arranger) local(q1, q2 int) float64 {
	n := s.p * s.p
	return s.u[s.at[q1]*n+q1] + s.u[s.at[q2]*n+q2] + s.edges(q1, -1) + s.edges(q2, q1)
}

// climb swaps pairs of positions while a swap raises E.
func (s *arranger) climb() {
	n := s.p * s.p
	for improved := true; improved; {
		improved = false
		for q1 := range n {
			for q2 := q1 + 1; q2 < n; q2++ {
				before := s.local(q1, q2)
				s.at[q1], s.at[q2] = s.at[q2], s.at[q1]
				if s.local(q1, q2) > before+1e-12 {
					improved = true
					continue
				}
				s.at[q1], s.at[q2] = s.at[q2], s.at[q1]
			}
		}
	}
}

// anneal runs steps proposals of simulated annealing from the current
// arrangement at temperatures falling geometrically from start to end, and
// leaves the best arrangement seen.
func (s *arranger) anneal(rng *rand.Rand, steps int, start, end float64) {
	n := s.p * s.p
	copy(s.best, s.at)
	e := s.energy()
	best := e
	cool := math.Pow(end/start, 1/float64(steps))
	temp := start
	for range steps {
		var delta float64
		var q1, q2 int
		block := rng.Float64() < blockMoves
		if block {
			copy(s.tmp, s.at)
			s.shiftBlock(rng)
			delta = s.energy() - e
		} else {
			q1 = rng.IntN(n)
			q2 = rng.IntN(n - 1)
			if q2 >= q1 {
				q2++
			}
			before := s.local(q1, q2)
			s.at[q1], s.at[q2] = s.at[q2], s.at[q1]
			delta = s.local(q1, q2) - before
		}
		if delta >= 0 || rng.Float64() < math.Exp(delta/temp) {
			if e += delta; e > best {
				best = e
				copy(s.best, s.at)
			}
		} else if block {
			copy(s.at, s.tmp)
		} else {
			s.at[q1], s.at[q2] = s.at[q2], s.at[q1]
		}
		temp *= cool
	}
	copy(s.at, s.best)
}

// shiftBlock shifts the pieces of a random rectangle of positions by one
// place along a random axis and direction, cyclically within the rectangle
// (a no-op for a one-position rectangle).
func (s *arranger) shiftBlock(rng *rand.Rand) {
	p := s.p
	r0, r1 := rng.IntN(p), rng.IntN(p)
	c0, c1 := rng.IntN(p), rng.IntN(p)
	r0, r1 = min(r0, r1), max(r0, r1)
	c0, c1 = min(c0, c1), max(c0, c1)
	vertical, back := rng.IntN(2) == 0, rng.IntN(2) == 0
	if vertical && r0 == r1 || !vertical && c0 == c1 {
		vertical = !vertical
	}
	// Walk each line of the rectangle along the axis, rotating its
	// positions by one.
	lines, length := r1-r0+1, c1-c0+1
	pos := func(line, k int) int { return (r0+line)*p + c0 + k }
	if vertical {
		lines, length = c1-c0+1, r1-r0+1
		pos = func(line, k int) int { return (r0+k)*p + c0 + line }
	}
	if length < 2 {
		return
	}
	for l := range lines {
		if back {
			first := s.at[pos(l, 0)]
			for k := 0; k < length-1; k++ {
				s.at[pos(l, k)] = s.at[pos(l, k+1)]
			}
			s.at[pos(l, length-1)] = first
		} else {
			last := s.at[pos(l, length-1)]
			for k := length - 1; k > 0; k-- {
				s.at[pos(l, k)] = s.at[pos(l, k-1)]
			}
			s.at[pos(l, 0)] = last
		}
	}
}

// Gap is what SearchGap reports: it splits the puzzles that a quadratic
// decoder gets wrong by whose fault it is, the search's or the score's.
type Gap struct {
	// Puzzles is the number of puzzles compared.
	Puzzles int `json:"puzzles"`
	// Solved counts the puzzles whose decoded image is the true one
	// (identical pieces may trade places).
	Solved int `json:"solved"`
	// SearchMisses counts unsolved puzzles where E scores the true
	// arrangement higher than the decoded one: a better search could still
	// solve them.
	SearchMisses int `json:"search_misses"`
	// ScoreMisses counts unsolved puzzles where E scores the decoded
	// arrangement at least as high as the true one: no search can solve
	// them under this E.
	ScoreMisses int `json:"score_misses"`
	// MeanShortfall is the mean of E(true) − E(decoded) over the search
	// misses (0 without any).
	MeanShortfall float64 `json:"mean_shortfall"`
	// MeanScore and MeanTrueScore are the means of E at the decoded and at
	// the true arrangements over all puzzles. For one score, a better
	// search has a higher MeanScore.
	MeanScore     float64 `json:"mean_score"`
	MeanTrueScore float64 `json:"mean_true_score"`
}

// SearchGap compares, for every puzzle of z, the quadratic score E of d (see
// Decoder; with a critic, E + CriticWeight·D) at the arrangement preds[b]
// (piece → position, as Solve returns) with that at the true one,
// z.Perms[b]. A decoded arrangement that
// scores below the truth is a failure of the search; one that scores at
// least as high, yet is wrong, is a failure of the score, which more search
// cannot mend. Scores within 1e-9 of each other (relative) count as equal.
func SearchGap(n *jigsaw.Net, z *jigsaw.Puzzles, preds []perm.Perm, d Decoder) (Gap, error) {
	return single(n).SearchGap(z, preds, d)
}

func (e *Ensemble) searchGap(z *jigsaw.Puzzles, preds []perm.Perm, d Decoder) (Gap, error) {
	e = e.snapshot()
	if err := e.check(d); err != nil {
		return Gap{}, err
	}
	if d.Pairwise == 0 && d.Seam == 0 && d.Critic == nil {
		return Gap{}, errors.New("the decoder has no quadratic score (Pairwise and Seam are 0) and no critic")
	}
	if len(preds) != z.Len() {
		return Gap{}, fmt.Errorf("%d predictions for %d puzzles", len(preds), z.Len())
	}
	n := e.nets[0]
	nn2, ps := n.Grid().N(), n.Grid().PieceSize()
	for b, p := range preds {
		if len(p) != nn2 {
			return Gap{}, fmt.Errorf("prediction %d has %d items, want %d", b, len(p), nn2)
		}
		if err := p.Validate(); err != nil {
			return Gap{}, fmt.Errorf("prediction %d: %w", b, err)
		}
	}
	logits, err := e.logits(z)
	if err != nil {
		return Gap{}, err
	}
	// decoded[b] and truth[b] are E at the two arrangements.
	decoded, truth := make([]float64, len(preds)), make([]float64, len(preds))
	eachPuzzle(n.Grid().P, len(preds), func(s *arranger, b int) {
		e.setScore(s, z, b, logits[b], d)
		s.place(preds[b])
		decoded[b] = s.energy()
		s.place(z.Perms[b])
		truth[b] = s.energy()
	})
	if d.Critic != nil {
		for _, at := range []struct {
			preds []perm.Perm
			score []float64
		}{{preds, decoded}, {z.Perms, truth}} {
			w, err := criticTerms(z, at.preds, d)
			if err != nil {
				return Gap{}, err
			}
			for b := range w {
				at.score[b] += w[b]
			}
		}
	}
	g := Gap{Puzzles: len(preds)}
	for b, p := range preds {
		g.MeanScore += decoded[b] / float64(len(preds))
		g.MeanTrueScore += truth[b] / float64(len(preds))
		m, err := jigsaw.Score(p, z.Perms[b], z.Pieces[b*nn2*ps:(b+1)*nn2*ps], ps)
		if err != nil {
			return Gap{}, fmt.Errorf("puzzle %d: %w", b, err)
		}
		tol := 1e-9 * max(1, math.Abs(truth[b]))
		switch {
		case m.PropAnyWrongIdentical == 0:
			g.Solved++
		case truth[b] > decoded[b]+tol:
			g.SearchMisses++
			g.MeanShortfall += truth[b] - decoded[b]
		default:
			g.ScoreMisses++
		}
	}
	if g.SearchMisses > 0 {
		g.MeanShortfall /= float64(g.SearchMisses)
	}
	return g, nil
}
