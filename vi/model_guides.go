package vi

import (
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/permlab/permlab/ad"
	"github.com/permlab/permlab/ad/optim"
	"github.com/permlab/permlab/dist"
	"github.com/permlab/permlab/models"
	"github.com/permlab/permlab/perm"
	"github.com/permlab/permlab/relax"
)

// modelPlan is what FitModel resolved from a model's sites and the
// options: the guide of every site, its temperatures, and the notes that
// say what the fit targets.
type modelPlan struct {
	spec     *models.Spec
	o        ModelOptions
	kinds    map[string]GuideKind
	sparse   map[string]bool           // GS sites stored in the sparse layout
	tau      map[string]optim.Schedule // GS guides' temperatures
	notes    []string
	warnings []string

	provider  GuideProvider // the model's own guides, or nil
	began     time.Time     // when FitModel began
	deadline  time.Time     // end of the Budget; zero without one
	budgetHit atomic.Bool   // a fit stopped at the deadline
	drawOnce  sync.Once     // times drawCost
	drawCost  atomic.Int64  // cost of one posterior draw in ns, timed under a Budget
	drawFixed atomic.Int64  // the posterior summary's cost beyond its draws, in ns

	polishDeadline  time.Time // end of the check's share of the Budget; zero without one
	polishTruncated int       // searches the Budget ended
}

func newModelPlan(spec *models.Spec, o ModelOptions) (*modelPlan, error) {
	if err := spec.CheckNames("vi: FitModel: Guides", sortedNames(o.Guides)); err != nil {
		return nil, err
	}
	p := &modelPlan{spec: spec, o: o, kinds: map[string]GuideKind{}, sparse: map[string]bool{}, tau: map[string]optim.Schedule{}}
	if err := p.checkInit(); err != nil {
		return nil, err
	}
	for _, ps := range spec.Perms {
		kind := o.Guides[ps.Name]
		switch kind {
		case GuideAuto, GuideGumbelSinkhorn:
			kind = GuideGumbelSinkhorn
			if err := p.planGS(ps); err != nil {
				return nil, err
			}
			if err := p.planLayout(ps); err != nil {
				return nil, err
			}
		case GuideRounding:
			if _, gs := ps.Prior.(models.GumbelSinkhornPrior); gs {
				return nil, fmt.Errorf("vi: FitModel: site %q: a rounding guide cannot target a GumbelSinkhornPrior; use the Gumbel-Sinkhorn guide", ps.Name)
			}
			if err := p.planLayout(ps); err != nil {
				return nil, err
			}
			p.notes = append(p.notes, fmt.Sprintf(
				"site %q: rounding guide (Linderman et al. 2018) with its own prior, a two-Gaussian mixture per entry (std %g), in place of the declared uniform prior; marginals are frequencies of %d hard draws round(Ψ)",
				ps.Name, o.Rounding.PriorStd, o.PosteriorDraws))
		default:
			return nil, fmt.Errorf("vi: FitModel: site %q is a permutation site; guide %v does not fit it", ps.Name, kind)
		}
		p.kinds[ps.Name] = kind
	}
	for _, rs := range spec.Reals {
		switch kind := o.Guides[rs.Name]; kind {
		case GuideAuto, GuideNormal:
			p.kinds[rs.Name] = GuideNormal
		default:
			return nil, fmt.Errorf("vi: FitModel: site %q is a real site; guide %v does not fit it", rs.Name, kind)
		}
		if _, ok := rs.Prior.(models.Normal); !ok {
			p.notes = append(p.notes, fmt.Sprintf("site %q: the KL to the prior %v is estimated by Monte Carlo", rs.Name, rs.Prior))
		}
	}
	if in := o.Init; in != nil {
		names := append(slices.Sorted(maps.Keys(in.Perms)), slices.Sorted(maps.Keys(in.Reals))...)
		p.notes = append(p.notes, fmt.Sprintf("every fit started from Init for sites %v: logits that put most mass on the given permutations, Normal means at the given values", names))
	}
	if o.NoKL {
		p.notes = append(p.notes, "NoKL: the permutation sites' KL terms were dropped (no regularization); the objective is not an ELBO and their priors play no part")
	}
	return p, nil
}

// checkInit validates Init as mcmc.RunModel does: every name a site of the
// model, B permutations of size N that the site's masks and fixed rows
// admit for a permutation site, Size() finite values for a real site.
func (p *modelPlan) checkInit() error {
	if p.o.Init == nil {
		return nil
	}
	return p.spec.CheckState("vi: FitModel: Init", p.o.Init, false)
}

// initMargin is the lead c = 3 + log n of the given entry of each row of
// the initial logits of a permutation site named in Init (see
// ModelOptions.Init).
func initMargin(n int) float64 { return 3 + math.Log(float64(n)) }

// initLogits starts the logits x (B·N·N values, row-major) of permutation
// site ps at the permutations Init gives it, if any: in each row the given
// column's entry is set to the row's largest allowed entry plus
// initMargin(N).
func (p *modelPlan) initLogits(x []float64, ps *models.PermSpec) {
	if p.o.Init == nil {
		return
	}
	n, c := ps.N, initMargin(ps.N)
	for b, q := range p.o.Init.Perms[ps.Name] {
		for i, j := range q {
			row := x[(b*n+i)*n : (b*n+i+1)*n]
			top := math.Inf(-1)
			for col, v := range row {
				if ps.Masks[b].Allowed(i, col) {
					top = math.Max(top, v)
				}
			}
			row[j] = top + c
		}
	}
}

// planGS chooses the temperatures of a Gumbel-Sinkhorn guide and says in a
// note what prior it targets.
func (p *modelPlan) planGS(ps *models.PermSpec) error {
	o := p.o
	switch prior := ps.Prior.(type) {
	case nil, models.UniformPerm:
		p.tau[ps.Name] = o.Tau
		if o.Tau == nil {
			p.tau[ps.Name] = optim.Geometric{Start: 1, End: 0.1, Steps: o.Steps}
		}
		tp := "equal to τ at every step"
		if o.TauPrior > 0 {
			tp = fmt.Sprintf("%g", o.TauPrior)
		}
		exact := "uniform over the permutations"
		if !ps.Full {
			exact = "close to, not exactly, uniform over the permutations that this site's masks and fixed rows admit"
		}
		p.notes = append(p.notes, fmt.Sprintf(
			"site %q: the uniform prior has no Gumbel-space density; VI used the surrogate GS(0, τ_prior), τ_prior %s, whose hard draws M(ε) are %s",
			ps.Name, tp, exact))
	case models.GumbelSinkhornPrior:
		p.tau[ps.Name] = o.Tau
		if o.Tau == nil {
			p.tau[ps.Name] = optim.Constant(prior.Tau)
		}
		p.notes = append(p.notes, fmt.Sprintf("site %q: prior %v, targeted exactly by the Gumbel-space KL", ps.Name, prior))
	default:
		return fmt.Errorf("vi: FitModel: site %q: prior %v is not supported by variational inference", ps.Name, prior)
	}
	p.notes = append(p.notes, fmt.Sprintf(
		"site %q: marginals are frequencies of %d hard draws M(X + ε) of the fitted GS(X, τ), its τ → 0 limit, not means of relaxed samples",
		ps.Name, o.PosteriorDraws))
	return nil
}

// planLayout decides whether the Gumbel-Sinkhorn guide of ps stores its
// permutations sparsely (see ModelOptions.PermLayout).
func (p *modelPlan) planLayout(ps *models.PermSpec) error {
	switch p.o.PermLayout {
	case LayoutAuto:
		if ps.Full || ps.N < SparseMinN || ps.Density() > SparseDensity {
			return nil
		}
	case LayoutDense:
		return nil
	case LayoutSparse:
	default:
		return fmt.Errorf("vi: FitModel: unknown PermLayout %v", p.o.PermLayout)
	}
	if _, err := ps.Patterns(); err != nil {
		return fmt.Errorf("vi: FitModel: %w", err)
	}
	p.sparse[ps.Name] = true
	p.notes = append(p.notes, fmt.Sprintf(
		"site %q: sparse layout, %d allowed entries of %d (%.1f%%): the guide's logits, noise and Sinkhorn iterations run over them only",
		ps.Name, ps.NNZ(), ps.B()*ps.N*ps.N, 100*ps.Density()))
	return nil
}

// newGuides builds the guides of one fit, in site order, with parameters
// drawn from seed and then moved to Init's values for the sites it names
// (the draws are made either way, so that the other sites start where they
// would without Init).
func (p *modelPlan) newGuides(seed uint64) ([]Guide, error) {
	o := p.o
	rng := rand.New(rand.NewPCG(seed, 0x696e6974))
	scale := max(o.InitScale, 0)
	var guides []Guide
	for k, site := range p.spec.Sites {
		if p.provider != nil {
			// The model's own guide, from a stream of its own so that the
			// automatic guides of other sites start as they would without.
			g, err := p.provider.Guide(site, rand.New(rand.NewPCG(seed, 0x70726f76^uint64(k))))
			if err != nil {
				return nil, fmt.Errorf("vi: FitModel: GuideProvider: site %q: %w", site.SiteName(), err)
			}
			if g != nil {
				if err := checkProvided(site, g); err != nil {
					return nil, err
				}
				guides = append(guides, g)
				continue
			}
		}
		switch s := site.(type) {
		case *models.PermSite:
			ps := p.permSpec(s.Name)
			switch p.kinds[s.Name] {
			case GuideGumbelSinkhorn:
				if p.sparse[s.Name] {
					g, err := p.newSparseGS(ps)
					if err != nil {
						return nil, err
					}
					fillNormal(g.X.Value.Data, scale, rng)
					p.initSparseLogits(g, ps)
					guides = append(guides, g)
					continue
				}
				g, err := p.newGS(ps)
				if err != nil {
					return nil, err
				}
				fillNormal(g.X.Value.Data, scale, rng)
				p.initLogits(g.X.Value.Data, ps)
				guides = append(guides, g)
			case GuideRounding:
				if p.sparse[s.Name] {
					pats, err := ps.Patterns()
					if err != nil {
						return nil, fmt.Errorf("vi: FitModel: %w", err)
					}
					g, err := NewSparseRounding(ps.Name, pats, o.Rounding.Std0, o.Rounding.Tau, o.Rounding.PriorStd, o.Iters)
					if err != nil {
						return nil, fmt.Errorf("vi: FitModel: site %q: %w", ps.Name, err)
					}
					fillNormal(g.Theta.Value.Data, scale, rng)
					p.initSparseValues(g.Theta.Value.Data, pats, ps)
					guides = append(guides, g)
					continue
				}
				g, err := NewRounding(ps.Name, ps.B(), ps.N, ps.Masks, o.Rounding.Std0, o.Rounding.Tau, o.Rounding.PriorStd, o.Iters)
				if err != nil {
					return nil, fmt.Errorf("vi: FitModel: site %q: %w", ps.Name, err)
				}
				fillNormal(g.Theta.Value.Data, scale, rng)
				p.initLogits(g.Theta.Value.Data, ps)
				guides = append(guides, g)
			}
		case *models.RealSite:
			g := newRealNormal(s, scale, rng)
			if o.Init != nil {
				if x, ok := o.Init.Reals[s.Name]; ok {
					copy(g.Mu.Value.Data, x)
				}
			}
			guides = append(guides, g)
		}
	}
	return guides, nil
}

func (p *modelPlan) permSpec(name string) *models.PermSpec {
	for _, ps := range p.spec.Perms {
		if ps.Name == name {
			return ps
		}
	}
	return nil
}

func (p *modelPlan) newGS(ps *models.PermSpec) (*GumbelSinkhorn, error) {
	o := p.o
	tp := 0.0 // follow τ
	var x0 []float64
	switch prior := ps.Prior.(type) {
	case nil, models.UniformPerm:
		tp = o.TauPrior
	case models.GumbelSinkhornPrior:
		tp = prior.Tau
		if prior.Logits != nil {
			n := ps.N
			x0 = make([]float64, ps.B()*n*n)
			for b := range ps.B() {
				for i := range n {
					for j := range n {
						x0[(b*n+i)*n+j] = prior.Logits.At(i, j)
					}
				}
			}
		}
	}
	masks := ps.Masks
	if ps.Full {
		masks = nil
	}
	g, err := NewGumbelSinkhorn(ps.Name, ps.B(), ps.N, masks, p.tau[ps.Name], tp, o.Iters)
	if err != nil {
		return nil, fmt.Errorf("vi: FitModel: site %q: %w", ps.Name, err)
	}
	g.PriorLogits = x0
	g.NoKL = o.NoKL
	return g, nil
}

// newSparseGS is newGS in the sparse layout.
func (p *modelPlan) newSparseGS(ps *models.PermSpec) (*SparseGumbelSinkhorn, error) {
	o := p.o
	pats, err := ps.Patterns()
	if err != nil {
		return nil, fmt.Errorf("vi: FitModel: %w", err)
	}
	tp := 0.0 // follow τ
	var x0 []float64
	switch prior := ps.Prior.(type) {
	case nil, models.UniformPerm:
		tp = o.TauPrior
	case models.GumbelSinkhornPrior:
		tp = prior.Tau
		if prior.Logits != nil {
			for _, pat := range pats {
				v, err := pat.Values(prior.Logits)
				if err != nil {
					return nil, fmt.Errorf("vi: FitModel: site %q: prior logits: %w", ps.Name, err)
				}
				x0 = append(x0, v...)
			}
		}
	}
	g, err := NewSparseGumbelSinkhorn(ps.Name, pats, p.tau[ps.Name], tp, o.Iters)
	if err != nil {
		return nil, fmt.Errorf("vi: FitModel: site %q: %w", ps.Name, err)
	}
	g.PriorLogits = x0
	g.NoKL = o.NoKL
	return g, nil
}

// initSparseLogits is initLogits for a sparse guide: the given column of
// each row leads the row's largest allowed logit by initMargin(N).
func (p *modelPlan) initSparseLogits(g *SparseGumbelSinkhorn, ps *models.PermSpec) {
	p.initSparseValues(g.X.Value.Data, g.pats, ps)
}

// initSparseValues is initLogits for logits x stored on the patterns pats
// (permutation b's at the running offset).
func (p *modelPlan) initSparseValues(x []float64, pats []*relax.SparsePattern, ps *models.PermSpec) {
	if p.o.Init == nil {
		return
	}
	c := initMargin(ps.N)
	off := 0
	for b, q := range p.o.Init.Perms[ps.Name] {
		pat := pats[b]
		xb := x[off : off+pat.NNZ()]
		rowPtr := pat.RowPtr()
		for i, j := range q {
			top := math.Inf(-1)
			for e := rowPtr[i]; e < rowPtr[i+1]; e++ {
				top = math.Max(top, xb[e])
			}
			xb[pat.Index(i, j)] = top + c
		}
		off += pat.NNZ()
	}
}

func fillNormal(x []float64, scale float64, rng *rand.Rand) {
	for i := range x {
		x[i] = scale * rng.NormFloat64()
	}
}

// realNormal is the mean-field Gaussian guide of a real site,
// q(z) = Π_d N(z_d; μ_d, σ_d²), σ = exp(ω), with samples of shape
// (K, Shape...). Its divergence is the closed-form KL (dist.KLNormalVar)
// when the site's prior is a models.Normal, and the Monte Carlo
// log q(z) − log p(z) otherwise.
type realNormal struct {
	site         *models.RealSite
	Mu, LogSigma *ad.Param
	eps          *ad.Tensor
}

// newRealNormal returns the guide of s with means around the prior's,
// spread by scale prior standard deviations, and standard deviations a
// tenth of the prior's.
func newRealNormal(s *models.RealSite, scale float64, rng *rand.Rand) *realNormal {
	d := s.Size()
	center, spread := priorMoments(s.Prior, d)
	mu, ls := ad.Zeros(d), ad.Zeros(d)
	for i := range d {
		mu.Data[i] = center[i] + scale*spread[i]*rng.NormFloat64()
		ls.Data[i] = math.Log(spread[i] / 10)
	}
	return &realNormal{site: s, Mu: ad.NewParam(s.Name+".mu", mu), LogSigma: ad.NewParam(s.Name+".logsigma", ls)}
}

// priorMoments returns the mean and standard deviation of each of the d
// coordinates of prior: exact for models.Normal, otherwise from 256 draws
// of a fixed stream (so it does not depend on the caller's seed).
func priorMoments(prior models.RealPrior, d int) (mean, std []float64) {
	mean, std = make([]float64, d), make([]float64, d)
	if n, ok := prior.(models.Normal); ok {
		for i := range d {
			mean[i], std[i] = n.Mu, n.Sigma
		}
		return mean, std
	}
	const draws = 256
	rng := rand.New(rand.NewPCG(0x70726f72, 0x6d6f6d))
	x := make([]float64, d)
	sq := make([]float64, d)
	for range draws {
		prior.Rand(x, rng)
		for i, v := range x {
			mean[i] += v / draws
			sq[i] += v * v / draws
		}
	}
	for i := range d {
		std[i] = math.Sqrt(math.Max(sq[i]-mean[i]*mean[i], 0))
		if !(std[i] > 0) || math.IsInf(std[i], 0) {
			std[i] = 1
		}
	}
	return mean, std
}

// Name implements Guide.
func (g *realNormal) Name() string { return g.site.Name }

// Params implements Guide.
func (g *realNormal) Params() []*ad.Param { return []*ad.Param{g.Mu, g.LogSigma} }

// Rsample implements Guide.
func (g *realNormal) Rsample(t *ad.Tape, s Step) (*ad.Var, Divergence, error) {
	d := len(g.Mu.Value.Data)
	if g.eps == nil || len(g.eps.Data) != s.K*d {
		g.eps = ad.Zeros(s.K, d)
	}
	dist.FillNormal(g.eps.Data, s.Rng)
	q := dist.NormalVar{Mu: t.Param(g.Mu), LogSigma: t.Param(g.LogSigma)}
	flat := q.RsampleNoise(g.eps) // (K, D)
	z := ad.Reshape(flat, append([]int{s.K}, g.site.Shape...)...)
	var div Divergence
	if n, ok := g.site.Prior.(models.Normal); ok {
		p := dist.NormalVar{Mu: t.ConstScalar(n.Mu), LogSigma: t.ConstScalar(math.Log(n.Sigma))}
		div.KL = dist.KLNormalVar(q, p)
	} else {
		logq := ad.SumAxis(q.LogProb(flat), 1)
		div.LogRatio = ad.Sub(logq, g.site.Prior.LogProbVar(z))
	}
	return z, div, t.Err()
}

// mean and std return the guide's current moments.
func (g *realNormal) moments() (mean, std []float64) {
	mean = append([]float64(nil), g.Mu.Value.Data...)
	std = make([]float64, len(mean))
	for i, l := range g.LogSigma.Value.Data {
		std[i] = math.Exp(l)
	}
	return mean, std
}

// GuideProvider is implemented by a model that builds the guides of some of
// its sites itself, for example a guide with structure that the automatic
// ones lack, or one initialised from the data. FitModel asks it for every
// site of every fit, before building an automatic guide.
type GuideProvider interface {
	// Guide returns the guide of site for a fit whose initial values are
	// to derive from rng (a stream of that fit and site alone), or nil and
	// no error to let FitModel build its automatic guide. A permutation
	// site's guide must be a PermGuide, a real site's a RealGuide, and its
	// Name the site's; Rsample must return the site's value in a Sample,
	// shape (K, B, N, N) or (K, Shape...). The guide's divergence term is
	// the model's to get right: FitModel adds it to the ELBO as it comes.
	Guide(site models.Site, rng *rand.Rand) (Guide, error)
}

// PermGuide is a guide of a permutation site that FitModel can read a
// posterior from.
type PermGuide interface {
	Guide
	// Draw returns one hard draw of the site's B permutations.
	Draw(rng *rand.Rand) ([]perm.Perm, error)
	// Mode returns the guide's most probable B permutations (or a good
	// point estimate of them).
	Mode() ([]perm.Perm, error)
}

// RealGuide is a guide of a real site that FitModel can read a posterior
// from.
type RealGuide interface {
	Guide
	// Moments returns the mean and standard deviation of every coordinate,
	// row-major.
	Moments() (mean, std []float64)
}

// checkProvided checks that a guide from a GuideProvider fits its site.
func checkProvided(site models.Site, g Guide) error {
	name := site.SiteName()
	if g.Name() != name {
		return fmt.Errorf("vi: FitModel: GuideProvider: the guide of site %q is named %q", name, g.Name())
	}
	switch site.(type) {
	case *models.PermSite:
		if _, ok := g.(PermGuide); !ok {
			return fmt.Errorf("vi: FitModel: GuideProvider: the guide of permutation site %q (%T) is not a PermGuide (Draw and Mode)", name, g)
		}
	case *models.RealSite:
		if _, ok := g.(RealGuide); !ok {
			return fmt.Errorf("vi: FitModel: GuideProvider: the guide of real site %q (%T) is not a RealGuide (Moments)", name, g)
		}
	}
	return nil
}
