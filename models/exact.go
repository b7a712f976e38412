package models

import (
	"fmt"
	"math"
	"slices"

	"gonum.org/v1/gonum/mat"

	"github.com/permlab/permlab/ad"
	"github.com/permlab/permlab/perm"
)

// MaxExactStates bounds the number of joint permutation states Exact
// enumerates (the product over permutation sites and batches of the
// admitted permutations): 2·10⁶ is seconds for a cheap likelihood.
const MaxExactStates = 2_000_000

// ExactResult is the exact posterior of a small model.
type ExactResult struct {
	*Posterior
	// LogEvidence is log Σ_s p(y | s) p(s) over the enumerated states, with
	// the uniform priors' constants dropped (so it is exact up to the log
	// of the number of admitted permutations of each uniform site).
	LogEvidence float64
	// States is the number of joint states enumerated.
	States int
	// MAP is the most probable joint state.
	MAP *State
	// QuadError is the worst, over the enumerated states, of the
	// a-posteriori error estimates of the numerical integration of the real
	// sites (see Exact), in nats of each state's log weight. The error of
	// LogEvidence is within it as well, and the relative error of every
	// state's probability (and so of every marginal) within about
	// 2·QuadError. It is 0 when no real site was integrated numerically.
	QuadError float64

	// For Prob: the admitted permutations of each (site, b) in
	// lexicographic order, and the joint states' log weights in the order
	// of the odometer over them (last slot fastest).
	slots []exactSlot
	logw  []float64
}

// exactSlot is one permutation of one permutation site and the
// permutations its mask admits, in lexicographic order.
type exactSlot struct {
	site  *PermSpec
	b     int
	perms []perm.Perm
}

// Exact computes the posterior of a model whose permutation sites are small
// by enumerating every admitted joint state: the ground truth against which
// tests and users check the engines. Permutation priors must be tractable.
// The likelihood is evaluated with the model's fast paths when it has them,
// otherwise on one-hot values through LogLik.
//
// Real sites are integrated out of every state's weight
//
//	w(s) = p(s) ∫ p(y | s, θ) p(θ) dθ
//
// in one of two ways. The sites that the model's CollapsedLikelihood
// (part of Collapser) names are integrated analytically by it, and are not
// reported. The other real sites, θ ∈ ℝ^d with d ≤ MaxExactRealDims
// coordinates in all, are integrated numerically, state by state, by
// adaptive Gauss-Hermite quadrature in Laplace coordinates. With
// f(θ) = log p(y | s, θ) + log p(θ) (the collapsed likelihood in place of
// the first term when the model also collapses sites), damped Newton steps
// from the previous state's mode find the mode θ*; the gradient comes from
// the ad tape (LogLik plus the priors' LogProbVar) and the Hessian from
// central differences of it (of f itself for a collapsed likelihood). With
// A = −∇²f(θ*) = (LLᵀ)⁻¹ and θ = θ* + Lz,
//
//	∫ e^{f(θ)} dθ = e^{f(θ*)} |L| ∫ g(z) e^{−|z|²/2} dz,   g(z) = e^{f(θ* + Lz) − f(θ*) + |z|²/2},
//
// and the n^d-point tensor Gauss-Hermite rule (nodes z_k, weights W_k for
// the weight e^{−|z|²/2}) gives
//
//	log ∫ e^{f(θ)} dθ ≈ f(θ*) + log|L| + log Σ_k W_k g(z_k),
//
// exact when f is quadratic (g = 1, the Laplace approximation) and with an
// error that falls geometrically with n when g is smooth. The orders
// n = 8, 12, 16, 24, 32, 48, 64 are tried in turn while n^d ≤ 2¹⁵ (so up to
// 32 for d = 3), and the first estimate that agrees with the previous
// order's within ExactQuadTol nats, and whose real-site means and standard
// deviations agree within 10⁻⁴ standard deviations, is accepted. The
// difference of the last two orders is the state's error estimate; as the
// error falls geometrically it bounds the error of the accepted, finer
// estimate with a wide margin (it is an a-posteriori estimate, not a proof:
// it cannot see a second mode in θ far from θ* that no node reaches).
// ExactResult.QuadError is the worst over states, and the Posterior's notes
// state it. The posterior means and standard deviations of the numerically
// integrated sites, mixed over the states, are reported in Posterior.Reals.
// A state whose orders still disagree at the largest order is an error
// that names it: Exact is ground truth, and it does not return an answer
// it knows to be inaccurate. The integrand is evaluated through the
// model's StateLogLiker when it has one, otherwise through LogLik with the
// quadrature points as its K samples, 512 at a time. A model whose
// numerically integrated coordinates exceed MaxExactRealDims is an error.
func Exact(m Model) (*ExactResult, error) {
	spec, err := Check(m)
	if err != nil {
		return nil, err
	}
	col, isCol := m.(CollapsedLikelihood)
	var collapsed []string
	if isCol && len(spec.Reals) > 0 {
		collapsed = col.CollapsedSites()
		if err := spec.CheckNames("CollapsedLikelihood.CollapsedSites", collapsed); err != nil {
			return nil, err
		}
		for _, name := range collapsed {
			if site, _ := spec.Lookup(name); !isRealSite(site) {
				return nil, fmt.Errorf("models: Exact: CollapsedLikelihood.CollapsedSites names %q, which is not a real site", name)
			}
		}
	}
	var free []*RealSite // integrated numerically
	dims := 0
	for _, rs := range spec.Reals {
		if !slices.Contains(collapsed, rs.Name) {
			free = append(free, rs)
			dims += rs.Size()
		}
	}
	if dims > MaxExactRealDims {
		return nil, fmt.Errorf("models: Exact: real site %q and others have %d coordinates that no Collapser (CollapsedLikelihood) integrates out; Exact integrates at most MaxExactRealDims = %d numerically", free[0].Name, dims, MaxExactRealDims)
	}
	var slots []exactSlot
	total := 1
	for _, ps := range spec.Perms {
		prior := ps.Prior
		if prior == nil {
			prior = UniformPerm{}
		}
		if !prior.Tractable() {
			return nil, fmt.Errorf("models: Exact: site %q: prior %v has no tractable mass", ps.Name, prior)
		}
		for b := range ps.B() {
			var list []perm.Perm
			err := perm.Enumerate(ps.N, ps.Masks[b], func(p perm.Perm) error {
				list = append(list, p.Clone())
				if len(list) > MaxExactStates {
					return fmt.Errorf("more than %d admitted permutations", MaxExactStates)
				}
				return nil
			})
			if err != nil {
				return nil, fmt.Errorf("models: Exact: site %q permutation %d: %w", ps.Name, b, err)
			}
			total *= len(list)
			if total > MaxExactStates {
				return nil, fmt.Errorf("models: Exact: more than %d joint states to enumerate", MaxExactStates)
			}
			if !slices.IsSortedFunc(list, comparePerms) { // Enumerate's order is lexicographic
				slices.SortFunc(list, comparePerms)
			}
			slots = append(slots, exactSlot{ps, b, list})
		}
	}
	s := &State{Perms: map[string][]perm.Perm{}, Reals: map[string][]float64{}}
	for _, ps := range spec.Perms {
		s.Perms[ps.Name] = make([]perm.Perm, ps.B())
	}
	for _, rs := range spec.Reals {
		s.Reals[rs.Name] = make([]float64, rs.Size()) // unused by a Collapser; set by the quadrature
	}
	t := ad.NewTape()
	var (
		rq      *realQuad
		moments momentAcc
		qerr    float64
		qorder  int
	)
	if dims > 0 {
		var c CollapsedLikelihood
		if len(collapsed) > 0 {
			c = col
		}
		rq = newRealQuad(m, spec, free, c, t, s)
	}
	logw := make([]float64, 0, total)
	idx := make([]int, len(slots))
	best, bestIdx := math.Inf(-1), slices.Clone(idx)
	for {
		for k, sl := range slots {
			s.Perms[sl.site.Name][sl.b] = sl.perms[idx[k]]
		}
		var ll, e float64
		switch {
		case rq != nil:
			ll, e, err = rq.integrate()
			if err != nil {
				return nil, fmt.Errorf("models: Exact: state %v: %w", s.Perms, err)
			}
			qerr = math.Max(qerr, e)
			qorder = max(qorder, rq.order)
		case isCol:
			ll, err = col.CollapsedLogLik(s)
		default:
			ll, err = LogLikState(m, spec, t, s)
		}
		if err != nil {
			return nil, fmt.Errorf("models: Exact: %w", err)
		}
		// Only the permutations' prior: a collapsed likelihood or the
		// quadrature already includes the priors of the real sites it
		// integrates out.
		lp, err := logPermPrior(spec, s)
		if err != nil {
			return nil, fmt.Errorf("models: Exact: %w", err)
		}
		w := ll + lp
		if math.IsNaN(w) {
			return nil, fmt.Errorf("models: Exact: log weight is NaN at %v", s.Perms)
		}
		logw = append(logw, w)
		if rq != nil {
			moments.add(w, rq.mean, rq.sd)
		}
		if w > best {
			best = w
			copy(bestIdx, idx)
		}
		// Advance the odometer, last slot fastest.
		k := len(idx) - 1
		for ; k >= 0; k-- {
			idx[k]++
			if idx[k] < len(slots[k].perms) {
				break
			}
			idx[k] = 0
		}
		if k < 0 {
			break
		}
	}
	if math.IsInf(best, -1) {
		return nil, fmt.Errorf("models: Exact: every state has zero probability")
	}
	z := 0.0
	for _, w := range logw {
		z += math.Exp(w - best)
	}
	logZ := best + math.Log(z)
	post := &Posterior{Method: "exact enumeration", Perms: map[string]*PermPosterior{}}
	marg := map[string][]*mat.Dense{}
	for _, ps := range spec.Perms {
		ms := make([]*mat.Dense, ps.B())
		for b := range ms {
			ms[b] = mat.NewDense(ps.N, ps.N, nil)
		}
		marg[ps.Name] = ms
	}
	clear(idx)
	for _, w := range logw {
		pr := math.Exp(w - logZ)
		for k, sl := range slots {
			raw := marg[sl.site.Name][sl.b].RawMatrix()
			for i, j := range sl.perms[idx[k]] {
				raw.Data[i*raw.Stride+j] += pr
			}
		}
		for k := len(idx) - 1; k >= 0; k-- {
			idx[k]++
			if idx[k] < len(slots[k].perms) {
				break
			}
			idx[k] = 0
		}
	}
	mapState := &State{Perms: map[string][]perm.Perm{}}
	for _, ps := range spec.Perms {
		pp := &PermPosterior{Marginals: marg[ps.Name], RHat: math.NaN(), ESS: math.NaN()}
		if err := pp.SetMode(ps.Masks); err != nil {
			return nil, fmt.Errorf("models: Exact: site %q: %w", ps.Name, err)
		}
		post.Perms[ps.Name] = pp
		mapState.Perms[ps.Name] = make([]perm.Perm, ps.B())
	}
	for k, sl := range slots {
		mapState.Perms[sl.site.Name][sl.b] = sl.perms[bestIdx[k]].Clone()
	}
	if len(collapsed) > 0 {
		post.Notes = append(post.Notes, fmt.Sprintf("real sites %v were integrated out analytically (CollapsedLikelihood) and are not reported", collapsed))
	}
	if rq != nil {
		mean, sd := moments.result()
		post.Reals = map[string]*RealPosterior{}
		off := 0
		for _, rs := range free {
			n := rs.Size()
			post.Reals[rs.Name] = &RealPosterior{Shape: slices.Clone(rs.Shape), Mean: mean[off : off+n], Std: sd[off : off+n]}
			off += n
		}
		post.Notes = append(post.Notes, fmt.Sprintf("real sites %v (%s) were integrated out numerically by adaptive Gauss-Hermite quadrature in Laplace coordinates (orders up to %d per coordinate); error estimate of the log weights and log evidence %.2g nats", rq.names, plural(dims, "coordinate"), qorder, qerr))
	}
	return &ExactResult{Posterior: post, LogEvidence: logZ, States: len(logw), MAP: mapState, QuadError: qerr, slots: slots, logw: logw}, nil
}

func isRealSite(s Site) bool {
	_, ok := s.(*RealSite)
	return ok
}

func comparePerms(a, b perm.Perm) int { return slices.Compare(a, b) }

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}
