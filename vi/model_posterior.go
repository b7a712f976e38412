package vi

import (
	"fmt"
	"math/rand/v2"
	"strings"

	"gonum.org/v1/gonum/mat"

	"github.com/permlab/permlab/dist"
	"github.com/permlab/permlab/models"
	"github.com/permlab/permlab/perm"
	"github.com/permlab/permlab/relax"
)

// posterior summarises fitted guides as a models.Posterior: for every
// permutation site PosteriorDraws hard draws and their frequencies, for
// every real site the moments of q and as many draws.
func (p *modelPlan) posterior(guides []Guide) (*models.Posterior, error) {
	return p.posteriorN(guides, p.o.PosteriorDraws)
}

// posteriorN is posterior with d draws per site.
func (p *modelPlan) posteriorN(guides []Guide, d int) (*models.Posterior, error) {
	post := &models.Posterior{Perms: map[string]*models.PermPosterior{}, Reals: map[string]*models.RealPosterior{}}
	var families []string
	rng := rand.New(rand.NewPCG(deriveSeed(p.o.Seed, seedDraws, 0), 0x64726177))
	for _, g := range guides {
		var err error
		switch g := g.(type) {
		case *GumbelSinkhorn:
			families = appendOnce(families, "Gumbel-Sinkhorn")
			post.Perms[g.Site], err = p.gsPosterior(g, d, rng)
		case *SparseGumbelSinkhorn:
			families = appendOnce(families, "Gumbel-Sinkhorn")
			var draws [][]perm.Perm
			if draws, err = g.draws(d, rng); err == nil {
				post.Perms[g.Site], err = models.PermPosteriorFromDrawsSparse(draws, g.pats, p.permSpec(g.Site).Masks)
			}
		case *Rounding:
			families = appendOnce(families, "rounding")
			post.Perms[g.Site], err = p.roundingPosterior(g, d, rng)
		case *SparseRounding:
			families = appendOnce(families, "rounding")
			var draws [][]perm.Perm
			if draws, err = g.draws(d, rng); err == nil {
				post.Perms[g.Site], err = models.PermPosteriorFromDrawsSparse(draws, g.pats, p.permSpec(g.Site).Masks)
			}
		case *realNormal:
			post.Reals[g.site.Name] = p.realPosterior(g, d, rng)
		case PermGuide:
			families = appendOnce(families, fmt.Sprintf("%T", g))
			post.Perms[g.Name()], err = p.providedPosterior(g, d, rng)
		case RealGuide:
			mean, std := g.Moments()
			site, _ := p.spec.Lookup(g.Name())
			post.Reals[g.Name()] = momentPosterior(site.(*models.RealSite), mean, std, d, rng)
		}
		if err != nil {
			return nil, fmt.Errorf("vi: FitModel: site %q: %w", g.Name(), err)
		}
	}
	if len(families) == 0 {
		families = []string{"mean-field Normal"}
	}
	post.Method = "vi (" + strings.Join(families, ", ") + ")"
	return post, nil
}

func appendOnce(s []string, v string) []string {
	for _, x := range s {
		if x == v {
			return s
		}
	}
	return append(s, v)
}

// gsPosterior draws M(X_b + ε) from the fitted Gumbel-Sinkhorn guide.
func (p *modelPlan) gsPosterior(g *GumbelSinkhorn, d int, rng *rand.Rand) (*models.PermPosterior, error) {
	ps := p.permSpec(g.Site)
	draws := make([][]perm.Perm, d)
	for k := range draws {
		draws[k] = make([]perm.Perm, ps.B())
	}
	for b := range ps.B() {
		ds, err := dist.GumbelMatching{X: g.Logits(b)}.RandBatch(d, rng)
		if err != nil {
			return nil, err
		}
		for k, q := range ds {
			draws[k][b] = q
		}
	}
	return models.PermPosteriorFromDraws(draws, ps.Masks)
}

// roundingPosterior draws round(Ψ_b), Ψ_b = S(Θ_b) + σ_b ⊙ Z, from the
// fitted rounding guide: the permutation its relaxed samples are pulled to.
func (p *modelPlan) roundingPosterior(g *Rounding, d int, rng *rand.Rand) (*models.PermPosterior, error) {
	ps := p.permSpec(g.Site)
	n := ps.N
	means, err := g.Mean()
	if err != nil {
		return nil, err
	}
	draws := make([][]perm.Perm, d)
	for k := range draws {
		draws[k] = make([]perm.Perm, ps.B())
	}
	psi := mat.NewDense(n, n, nil)
	for b := range ps.B() {
		m := means[b].RawMatrix()
		for k := range draws {
			raw := psi.RawMatrix()
			for i := range n {
				for j := range n {
					e := (b*n+i)*n + j
					v := m.Data[i*m.Stride+j]
					if g.allowed[e] {
						v += softplus(g.Rho.Value.Data[e]) * rng.NormFloat64()
					}
					raw.Data[i*raw.Stride+j] = v
				}
			}
			q, err := relax.RoundMasked(psi, ps.Masks[b])
			if err != nil {
				return nil, err
			}
			draws[k][b] = q
		}
	}
	return models.PermPosteriorFromDraws(draws, ps.Masks)
}

// providedPosterior draws PosteriorDraws hard permutations from a guide
// the model supplied.
func (p *modelPlan) providedPosterior(g PermGuide, d int, rng *rand.Rand) (*models.PermPosterior, error) {
	ps := p.permSpec(g.Name())
	draws := make([][]perm.Perm, d)
	for k := range draws {
		d, err := g.Draw(rng)
		if err != nil {
			return nil, err
		}
		if len(d) != ps.B() {
			return nil, fmt.Errorf("the guide drew %d permutations, want %d", len(d), ps.B())
		}
		for b, q := range d {
			if len(q) != ps.N || q.Validate() != nil || !ps.Masks[b].Admits(q) {
				return nil, fmt.Errorf("the guide drew %v for permutation %d, which is not a permutation of size %d that its mask and fixed rows admit", q, b, ps.N)
			}
		}
		draws[k] = d
	}
	return models.PermPosteriorFromDraws(draws, ps.Masks)
}

// realPosterior reports the moments of q and PosteriorDraws draws from it.
func (p *modelPlan) realPosterior(g *realNormal, d int, rng *rand.Rand) *models.RealPosterior {
	mean, std := g.moments()
	site, _ := p.spec.Lookup(g.site.Name)
	return momentPosterior(site.(*models.RealSite), mean, std, d, rng)
}

// momentPosterior reports the given moments of a real site and d draws
// from the Normal with those moments.
func momentPosterior(site *models.RealSite, mean, std []float64, d int, rng *rand.Rand) *models.RealPosterior {
	draws := make([][]float64, d)
	for k := range draws {
		x := make([]float64, len(mean))
		for i := range x {
			x[i] = mean[i] + std[i]*rng.NormFloat64()
		}
		draws[k] = x
	}
	shape := append([]int(nil), site.Shape...)
	return &models.RealPosterior{Shape: shape, Mean: mean, Std: std, Draws: draws}
}

// current returns the guides' point estimate as a state: for every
// permutation the exact matching of its guide's location, for every real
// site the guide's mean (see TracePoint).
func (p *modelPlan) current(guides []Guide) (*models.State, error) {
	st := &models.State{Perms: map[string][]perm.Perm{}, Reals: map[string][]float64{}}
	for _, g := range guides {
		switch g := g.(type) {
		case *GumbelSinkhorn:
			ps := p.permSpec(g.Site)
			perms := make([]perm.Perm, ps.B())
			for b := range perms {
				q, err := relax.MatchingMasked(g.Logits(b), ps.Masks[b])
				if err != nil {
					return nil, err
				}
				perms[b] = q
			}
			st.Perms[g.Site] = perms
		case *SparseGumbelSinkhorn:
			mode, err := g.Mode()
			if err != nil {
				return nil, err
			}
			st.Perms[g.Site] = mode
		case *Rounding:
			ps := p.permSpec(g.Site)
			means, err := g.Mean()
			if err != nil {
				return nil, err
			}
			perms := make([]perm.Perm, ps.B())
			for b := range perms {
				if perms[b], err = relax.RoundMasked(means[b], ps.Masks[b]); err != nil {
					return nil, err
				}
			}
			st.Perms[g.Site] = perms
		case *SparseRounding:
			mode, err := g.Mode()
			if err != nil {
				return nil, err
			}
			st.Perms[g.Site] = mode
		case *realNormal:
			mean, _ := g.moments()
			st.Reals[g.site.Name] = mean
		case PermGuide:
			mode, err := g.Mode()
			if err != nil {
				return nil, err
			}
			st.Perms[g.Name()] = mode
		case RealGuide:
			mean, _ := g.Moments()
			st.Reals[g.Name()] = mean
		}
	}
	return st, nil
}
