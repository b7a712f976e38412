package main

import (
	"context"
	"fmt"
	"math/rand/v2"

	"gonum.org/v1/gonum/mat"

	"github.com/permlab/permlab/ad"
	"github.com/permlab/permlab/ad/optim"
	"github.com/permlab/permlab/dist"
	"github.com/permlab/permlab/perm"
	"github.com/permlab/permlab/relax"
	"github.com/permlab/permlab/vi"
)

// VIConfig sets up RunVI.
type VIConfig struct {
	Steps    int     // optimisation steps
	K        int     // samples per step
	LR       float64 // Adam learning rate
	Tau      float64 // Gumbel-Sinkhorn temperature
	TauPrior float64 // prior temperature of the Gumbel-space KL
	Iters    int     // Sinkhorn iterations
	Samples  int     // hard samples drawn to estimate the marginals of q
	Seed     uint64
}

// DefaultVIConfig returns the configuration used by the example and its
// tests.
func DefaultVIConfig() VIConfig {
	return VIConfig{Steps: 1000, K: 8, LR: 0.05, Tau: 0.5, TauPrior: 0.5, Iters: 30, Samples: 5000, Seed: 1}
}

// VIPosterior is the output of RunVI.
type VIPosterior struct {
	Logits    *mat.Dense // fitted X of q = GS(X, τ)
	Mode      perm.Perm  // M(X), the most probable permutation under GM(X)
	Marginals *mat.Dense // frequencies of p(i) = j under GM(X)
	ELBO      []float64
}

// linearModel is log p(Y | P) = ⟨P, X⟩ + const, exact on permutation
// matrices and linear on their relaxations.
type linearModel struct{ x *ad.Tensor }

func (m linearModel) LogLik(t *ad.Tape, z vi.Sample) *ad.Var {
	p := z["P"] // (K, 1, n, n)
	k := p.Shape()[0]
	n := m.x.Shape[0]
	return ad.SumAxis(ad.Reshape(ad.Mul(p, t.Const(m.x)), k, n*n), 1)
}

// RunVI fits q(P) = GS(X, τ) to the posterior with the Gumbel-space KL to
// the prior GS(0, τ_prior) and returns the fitted distribution's mode and
// marginals, the latter from hard samples M(X + ε) of GM(X).
func (pr *Problem) RunVI(ctx context.Context, cfg VIConfig) (*VIPosterior, error) {
	n := pr.N()
	var masks []*perm.Mask
	if pr.Mask != nil {
		masks = []*perm.Mask{pr.Mask}
	}
	g, err := vi.NewGumbelSinkhorn("P", 1, n, masks, optim.Constant(cfg.Tau), cfg.TauPrior, cfg.Iters)
	if err != nil {
		return nil, err
	}
	x := &ad.Tensor{Shape: []int{n, n}, Data: pr.Logits().RawMatrix().Data}
	if pr.Mask != nil {
		for i := range x.Data {
			if !pr.Mask.Allowed(i/n, i%n) {
				x.Data[i] = 0 // P is zero there in every sample
			}
		}
	}
	res, err := vi.Fit(ctx, linearModel{x}, []vi.Guide{g}, vi.Options{
		Steps: cfg.Steps, K: cfg.K, Seed: cfg.Seed,
		LR: optim.Cosine{Start: cfg.LR, End: cfg.LR / 20, Steps: cfg.Steps},
	})
	if err != nil {
		return nil, err
	}
	logits := g.Logits(0)
	mode, err := relax.Matching(logits)
	if err != nil {
		return nil, err
	}
	rng := rand.New(rand.NewPCG(cfg.Seed, 77))
	marg := mat.NewDense(n, n, nil)
	noisy := mat.NewDense(n, n, nil)
	var m relax.Matcher
	for s := 0; s < cfg.Samples; s++ {
		raw := noisy.RawMatrix().Data
		dist.FillGumbel(raw, rng)
		for i, v := range logits.RawMatrix().Data {
			raw[i] += v
		}
		p, err := m.Solve(nil, noisy, pr.Mask)
		if err != nil {
			return nil, fmt.Errorf("matching: RunVI: %w", err)
		}
		for i, j := range p {
			marg.Set(i, j, marg.At(i, j)+1)
		}
	}
	marg.Scale(1/float64(cfg.Samples), marg)
	return &VIPosterior{Logits: logits, Mode: mode, Marginals: marg, ELBO: res.ELBO}, nil
}
