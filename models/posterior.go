package models

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"gonum.org/v1/gonum/mat"

	"github.com/permlab/permlab/perm"
	"github.com/permlab/permlab/relax"
)

// Posterior is the one view of a fitted model that every engine returns, so
// that variational inference, MCMC and exact enumeration can be compared
// site by site.
type Posterior struct {
	Method string
	Perms  map[string]*PermPosterior
	Reals  map[string]*RealPosterior
	// Notes say what the engine did that a reader must know to interpret
	// the numbers, for example that a uniform prior was replaced by its
	// Gumbel-space surrogate.
	Notes []string
	// Warnings say where the result is not to be trusted, for example
	// chains that disagree (R̂ above 1.1).
	Warnings []string
}

// PermPosterior summarises the posterior of one permutation site.
//
// Marginals[b][i][j] estimates P(row i goes to column j) for permutation b.
// Engines estimate it from exact permutations: MCMC from its draws, VI from
// hard Gumbel-Matching draws M(X + ε) of the fitted guide (not from the mean
// of relaxed samples, which is biased towards uniform at τ > 0), Exact by
// enumeration. Mode[b] is the matching of the marginals, M(Marginals[b]),
// the permutation that maximises the expected number of correct rows.
type PermPosterior struct {
	Marginals []*mat.Dense
	Mode      []perm.Perm
	// Draws[d][b] is permutation b of draw d, nil when the engine keeps none.
	Draws [][]perm.Perm
	// RHat and ESS are the worst (largest R̂, smallest ESS) over the site's
	// summary statistics; NaN when the engine does not compute them.
	RHat, ESS float64
}

// RealPosterior summarises the posterior of one real site, coordinates in
// row-major order.
type RealPosterior struct {
	Shape     []int
	Mean, Std []float64
	Draws     [][]float64 // Draws[d] are the coordinates of draw d; nil when none
	RHat, ESS []float64   // per coordinate; nil when not computed
}

// PermPosteriorFromDraws builds a PermPosterior from draws[d][b] (every draw
// with the same number B of permutations of size n): the marginals are the
// frequencies, the mode their matching restricted to masks (nil, one shared
// or one per permutation). RHat and ESS are set to NaN.
func PermPosteriorFromDraws(draws [][]perm.Perm, masks []*perm.Mask) (*PermPosterior, error) {
	if len(draws) == 0 || len(draws[0]) == 0 {
		return nil, fmt.Errorf("models: PermPosteriorFromDraws: no draws")
	}
	b, n := len(draws[0]), len(draws[0][0])
	w := 1 / float64(len(draws))
	marg := make([]*mat.Dense, b)
	for k := range marg {
		marg[k] = mat.NewDense(n, n, nil)
	}
	for d, dr := range draws {
		if len(dr) != b {
			return nil, fmt.Errorf("models: PermPosteriorFromDraws: draw %d has %d permutations, want %d", d, len(dr), b)
		}
		for k, p := range dr {
			if len(p) != n {
				return nil, fmt.Errorf("models: PermPosteriorFromDraws: draw %d permutation %d has size %d, want %d", d, k, len(p), n)
			}
			raw := marg[k].RawMatrix()
			for i, j := range p {
				raw.Data[i*raw.Stride+j] += w
			}
		}
	}
	pp := &PermPosterior{Marginals: marg, Draws: draws, RHat: math.NaN(), ESS: math.NaN()}
	if err := pp.SetMode(masks); err != nil {
		return nil, err
	}
	return pp, nil
}

// SetMode recomputes Mode as the matching of the marginals, restricted to
// masks (nil, one shared mask or one per permutation). A mask of N >= 64
// that allows at most a quarter of the entries is solved on its candidates
// alone (relax.MatchingSparse), in time that grows with them rather than
// with N²; optimal matchings that tie may then differ from the dense
// solver's.
func (pp *PermPosterior) SetMode(masks []*perm.Mask) error {
	pp.Mode = make([]perm.Perm, len(pp.Marginals))
	for k, m := range pp.Marginals {
		var err error
		switch {
		case len(masks) == 0:
			pp.Mode[k], err = relax.Matching(m)
		case sparseMask(masks[min(k, len(masks)-1)]):
			var sc relax.SparseScores
			if sc, err = relax.NewSparseScores(m, masks[min(k, len(masks)-1)]); err == nil {
				pp.Mode[k], err = relax.MatchingSparse(sc)
			}
		default:
			pp.Mode[k], err = relax.MatchingMasked(m, masks[min(k, len(masks)-1)])
		}
		if err != nil {
			return fmt.Errorf("models: mode of permutation %d: %w", k, err)
		}
	}
	return nil
}

// sparseMask reports whether m is large and sparse enough for the sparse
// assignment solver: N >= 64 and at most a quarter of the entries allowed.
func sparseMask(m *perm.Mask) bool {
	n := m.Size()
	return n >= 64 && m.Count() <= n*n/4
}

// MaxRowTV returns the largest total-variation distance between the row
// marginals of pp and q, max over permutations b and rows i of
// ½ Σ_j |pp[b][i][j] − q[b][i][j]|: 0 when the marginals agree, 1 when some
// row puts its mass on disjoint columns.
func (pp *PermPosterior) MaxRowTV(q *PermPosterior) (float64, error) {
	if len(pp.Marginals) != len(q.Marginals) {
		return 0, fmt.Errorf("models: MaxRowTV: %d against %d permutations", len(pp.Marginals), len(q.Marginals))
	}
	worst := 0.0
	for k := range pp.Marginals {
		a, b := pp.Marginals[k], q.Marginals[k]
		ra, ca := a.Dims()
		rb, cb := b.Dims()
		if ra != rb || ca != cb {
			return 0, fmt.Errorf("models: MaxRowTV: permutation %d is %dx%d against %dx%d", k, ra, ca, rb, cb)
		}
		for i := range ra {
			tv := 0.0
			for j := range ca {
				tv += math.Abs(a.At(i, j) - b.At(i, j))
			}
			worst = math.Max(worst, tv/2)
		}
	}
	return worst, nil
}

// Summary returns a plain-text table of the posterior: per permutation site
// the mode, the mean probability the posterior puts on it and the
// diagnostics; per real site the mean and standard deviation of each
// coordinate (the first few for large sites); then notes and warnings.
func (p *Posterior) Summary() string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "posterior by %s\n", p.Method)
	for _, name := range sortedKeys(p.Perms) {
		pp := p.Perms[name]
		for k, mode := range pp.Mode {
			conf := 0.0
			for i, j := range mode {
				conf += pp.Marginals[k].At(i, j)
			}
			conf /= float64(max(len(mode), 1))
			fmt.Fprintf(&sb, "  %s[%d]: mode %v, mean marginal on the mode %.3f", name, k, []int(mode), conf)
			if !math.IsNaN(pp.RHat) {
				fmt.Fprintf(&sb, ", R̂ %.3f, ESS %.0f", pp.RHat, pp.ESS)
			}
			sb.WriteString("\n")
		}
	}
	for _, name := range sortedKeys(p.Reals) {
		rp := p.Reals[name]
		fmt.Fprintf(&sb, "  %s:", name)
		for i := range min(len(rp.Mean), 8) {
			fmt.Fprintf(&sb, " %.3g±%.2g", rp.Mean[i], rp.Std[i])
		}
		if len(rp.Mean) > 8 {
			fmt.Fprintf(&sb, " … (%d coordinates)", len(rp.Mean))
		}
		if len(rp.RHat) > 0 {
			worst, ess := 0.0, math.Inf(1)
			for i := range rp.RHat {
				worst = math.Max(worst, rp.RHat[i])
				ess = math.Min(ess, rp.ESS[i])
			}
			fmt.Fprintf(&sb, "  (worst R̂ %.3f, smallest ESS %.0f)", worst, ess)
		}
		sb.WriteString("\n")
	}
	for _, n := range p.Notes {
		fmt.Fprintf(&sb, "  note: %s\n", n)
	}
	for _, w := range p.Warnings {
		fmt.Fprintf(&sb, "  WARNING: %s\n", w)
	}
	return sb.String()
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
