package vi

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/permlab/permlab/models"
	"github.com/permlab/permlab/perm"
)

// DefaultPolishWarnNats is the default of Polish.WarnNats: FitModel warns
// when its answer is more than this many nats more probable than the chosen
// fit's own mode, that is when the fit's mode has less than e⁻² ≈ 0.14
// times the answer's posterior probability.
const DefaultPolishWarnNats = 2

// Polish configures the check of FitModel's answer by the model's exact log
// joint (see the package documentation, "Checking the answer"). The zero
// value turns it on with the defaults.
type Polish struct {
	// Off turns the check off: fits are ranked by their fresh ELBO
	// estimates and the mode is the matching of the chosen fit's
	// marginals, as in the paper's plain method.
	Off bool
	// Draws is the number of hard draws of each fit's guide that are
	// polished besides the fit's mode; 0 means 4, a negative value none.
	Draws int
	// Restarts is the number of local searches started from random
	// admitted permutations (with the real sites at the first fit's means),
	// so that a fit that settled in the wrong mode is caught; 0 means 4, a
	// negative value none.
	Restarts int
	// WarnNats is the threshold of the warning that polishing moved the
	// fit's mode; 0 means DefaultPolishWarnNats.
	WarnNats float64
	// MaxBlock and Blocks configure the block moves of the local search
	// (models.PolishOptions); 0 gives its defaults.
	MaxBlock, Blocks int
	// Share is the share of ModelOptions.Budget that the check takes from
	// the fits, in (0, 1); 0 means 0.1. The local searches then stop at the
	// budget's end with the states they reached (PolishReport.Truncated).
	// Without a budget the searches run to their local maxima.
	Share float64
}

func (o *Polish) setDefaults() error {
	if o.Draws == 0 {
		o.Draws = 4
	}
	if o.Restarts == 0 {
		o.Restarts = 4
	}
	if o.WarnNats == 0 {
		o.WarnNats = DefaultPolishWarnNats
	}
	switch {
	case !(o.WarnNats > 0) || math.IsInf(o.WarnNats, 1):
		return fmt.Errorf("vi: FitModel: Polish.WarnNats must be finite and > 0, got %v", o.WarnNats)
	case o.MaxBlock < 0 || o.MaxBlock == 1:
		return fmt.Errorf("vi: FitModel: Polish.MaxBlock must be 0 (default) or >= 2, got %d", o.MaxBlock)
	case !(o.Share >= 0 && o.Share < 1):
		return fmt.Errorf("vi: FitModel: Polish.Share must be in [0, 1), got %v", o.Share)
	}
	if o.Share == 0 {
		o.Share = 0.1
	}
	o.Draws = max(o.Draws, 0)
	o.Restarts = max(o.Restarts, 0)
	return nil
}

// PolishReport is what the check of the answer found.
type PolishReport struct {
	// State is the answer: the most probable state that the local searches
	// reached, with the real sites that are not collapsed at their optimum
	// given its permutations.
	State *models.State
	// LogJoint is the model's exact log joint J at State (collapsed or
	// profiled over the real sites, up to the constants of uniform priors;
	// see models.Scorer), and ModeLogJoint J at the chosen fit's own mode,
	// the matching of its marginals, before polishing. Gain is their
	// difference: how many nats polishing gained.
	LogJoint, ModeLogJoint, Gain float64
	// Fit is the fit whose mode or draw polished into the answer, or -1
	// when a random restart found it; From says the same in words ("fit 0
	// mode", "fit 2 draw 3", "random restart 1").
	Fit  int
	From string
	// FitLogJoint[i] is the best J that polishing reached from fit i's mode
	// and draws; fits are ranked by it.
	FitLogJoint []float64
	// Candidates are every polished start, most probable first.
	Candidates []PolishCandidate
	// Failed lists the searches that could not evaluate the model (for
	// example a quadrature that did not converge far from the posterior),
	// with their errors; the check stands on the others.
	Failed []string
	// Collapsed reports whether the model integrates real sites out
	// analytically (models.Collapser), and Integration how J treats the
	// others (models.Scorer.Integration: "none", "quadrature", "Laplace"
	// or "profile").
	Collapsed   bool
	Integration string
	// Evals is the number of likelihood evaluations and Elapsed the wall
	// time of the check.
	Evals   int
	Elapsed time.Duration
	// Truncated is the number of searches that the Budget ended before
	// they reached a local maximum.
	Truncated int
}

// PolishCandidate is one local search of the check.
type PolishCandidate struct {
	From string
	// Fit is the fit it started from, -1 for a random restart; Draw the
	// index of the fit's draw it started from, -1 for the fit's mode (and
	// for a restart).
	Fit, Draw int
	// Start and LogJoint are J before and after polishing.
	Start, LogJoint float64
	State           *models.State
}

// States returns up to k distinct polished states (all of them for k <= 0),
// most probable first: starting points for MCMC chains that calibrate the
// marginals (see mcmc.ModelOptions.Inits). A nil report (the check was off
// or failed) has none, so that chains given them start as they would
// without.
//
// When it returns a single state every chain starts there; the hot
// replicas of replica exchange still leave it, but R̂ cannot tell whether
// the chains would have found other modes, so a single state calls for
// the default burn-in rather than a short one.
func (r *PolishReport) States(k int) []*models.State {
	if r == nil {
		return nil
	}
	var out []*models.State
	for _, c := range r.Candidates {
		if k > 0 && len(out) == k {
			break
		}
		if !slices.ContainsFunc(out, func(s *models.State) bool { return samePerms(s, c.State) }) {
			out = append(out, c.State.Clone())
		}
	}
	return out
}

// samePerms reports whether two states have the same permutations.
func samePerms(a, b *models.State) bool {
	if len(a.Perms) != len(b.Perms) {
		return false
	}
	for name, pa := range a.Perms {
		pb := b.Perms[name]
		if len(pa) != len(pb) {
			return false
		}
		for k := range pa {
			if !pa[k].Equal(pb[k]) {
				return false
			}
		}
	}
	return true
}

// polishable reports why the check cannot run on this model, or "" when it
// can: it needs permutation sites whose priors have a tractable mass.
func (p *modelPlan) polishable() string {
	if len(p.spec.Perms) == 0 {
		return "the model has no permutation site"
	}
	for _, ps := range p.spec.Perms {
		if ps.Prior != nil && !ps.Prior.Tractable() {
			return fmt.Sprintf("site %q has a prior (%v) without a tractable mass, so the exact log joint is unknown", ps.Name, ps.Prior)
		}
	}
	return ""
}

// polishJob is one local search to run.
type polishJob struct {
	from      string
	fit, draw int
	state     *models.State
	seed      uint64
}

// polish checks the fits against the model: it polishes every fit's mode
// and Draws of its hard draws, then Restarts random admitted states, and
// ranks the fits by the best J they reached.
func (p *modelPlan) polish(ctx context.Context, m models.Model, posts []*models.Posterior) (*PolishReport, error) {
	began := time.Now()
	o := p.o.Polish
	var jobs []polishJob
	for i, post := range posts {
		s := p.stateOf(post, func(pp *models.PermPosterior) []perm.Perm { return pp.Mode })
		jobs = append(jobs, polishJob{from: fmt.Sprintf("fit %d mode", i), fit: i, draw: -1, state: s})
		for d := range o.Draws {
			s := p.stateOf(post, func(pp *models.PermPosterior) []perm.Perm {
				if d >= len(pp.Draws) {
					return pp.Mode
				}
				return pp.Draws[d]
			})
			jobs = append(jobs, polishJob{from: fmt.Sprintf("fit %d draw %d", i, d), fit: i, draw: d, state: s})
		}
	}
	// Real sites of the restarts start where the first fit put them, not
	// at a prior draw, so that their optimisation starts somewhere
	// sensible.
	reals := p.stateOf(posts[0], nil).Reals
	for r := range o.Restarts {
		rng := rand.New(rand.NewPCG(deriveSeed(p.o.Seed, seedPolish, uint64(r)), 0x72657374))
		s, err := models.NewState(p.spec, rng)
		if err != nil {
			return nil, fmt.Errorf("vi: FitModel: polish: %w", err)
		}
		for name, x := range reals {
			s.Reals[name] = slices.Clone(x)
		}
		jobs = append(jobs, polishJob{from: fmt.Sprintf("random restart %d", r), fit: -1, draw: -1, state: s})
	}
	for k := range jobs {
		jobs[k].seed = deriveSeed(p.o.Seed, seedPolish, uint64(1000+k))
	}
	cands, failed, evals, sc, err := p.runPolish(ctx, m, jobs)
	if err != nil {
		return nil, err
	}
	rep := &PolishReport{FitLogJoint: make([]float64, len(posts)), Evals: evals, Collapsed: sc.Collapsed(), Integration: sc.Integration(), Failed: failed}
	for i := range rep.FitLogJoint {
		rep.FitLogJoint[i] = math.Inf(-1)
	}
	for _, c := range cands {
		if c.Fit >= 0 {
			rep.FitLogJoint[c.Fit] = math.Max(rep.FitLogJoint[c.Fit], c.LogJoint)
		}
	}
	// Most probable first; ties keep the order of the jobs, so that a fit's
	// own mode wins over its draws and fits over random restarts.
	sort.SliceStable(cands, func(a, b int) bool { return cands[a].LogJoint > cands[b].LogJoint })
	rep.Candidates = cands
	best := cands[0]
	rep.State, rep.LogJoint, rep.Fit, rep.From = best.State, best.LogJoint, best.Fit, best.From
	rep.Elapsed = time.Since(began)
	rep.Truncated = p.polishTruncated
	if rep.Truncated > 0 {
		p.notes = append(p.notes, fmt.Sprintf("the budget ended %d of %d local searches of the check before they reached a local maximum; their states are as far as they came", rep.Truncated, len(jobs)))
	}
	return rep, nil
}

// chooseFit returns the fit that reached the highest J; among fits that
// reached it (to rounding), the one whose own mode was most probable, whose
// marginals are then the most faithful; then the first. It sets
// ModeLogJoint and Gain relative to that fit's own mode.
func (rep *PolishReport) chooseFit() int {
	own := make([]float64, len(rep.FitLogJoint))
	for i := range own {
		own[i] = math.Inf(-1)
	}
	for _, c := range rep.Candidates {
		if c.Fit >= 0 && c.Draw < 0 {
			own[c.Fit] = c.Start
		}
	}
	best := 0
	for i, j := range rep.FitLogJoint {
		top := rep.FitLogJoint[best]
		switch tol := 1e-9 * math.Max(1, math.Abs(top)); {
		case j > top+tol:
			best = i
		case j >= top-tol && own[i] > own[best]:
			best = i
		}
	}
	// When the chosen fit reached the answer's J too, its own candidate is
	// the answer (the same state, or an equally probable one).
	for _, c := range rep.Candidates {
		if c.Fit == best {
			if c.LogJoint >= rep.LogJoint-1e-9*math.Max(1, math.Abs(rep.LogJoint)) {
				rep.State, rep.LogJoint, rep.Fit, rep.From = c.State, c.LogJoint, c.Fit, c.From
			}
			break
		}
	}
	rep.ModeLogJoint = own[best]
	rep.Gain = rep.LogJoint - rep.ModeLogJoint
	return best
}

// stateOf builds a state from a fit's posterior: the permutations chosen by
// pick (nil leaves the permutation sites out) and the real sites at the
// posterior means.
func (p *modelPlan) stateOf(post *models.Posterior, pick func(*models.PermPosterior) []perm.Perm) *models.State {
	s := &models.State{Perms: map[string][]perm.Perm{}, Reals: map[string][]float64{}}
	if pick != nil {
		for _, ps := range p.spec.Perms {
			src := pick(post.Perms[ps.Name])
			cp := make([]perm.Perm, len(src))
			for b, q := range src {
				cp[b] = q.Clone()
			}
			s.Perms[ps.Name] = cp
		}
	}
	for _, rs := range p.spec.Reals {
		if rp, ok := post.Reals[rs.Name]; ok {
			s.Reals[rs.Name] = slices.Clone(rp.Mean)
		} else {
			s.Reals[rs.Name] = make([]float64, rs.Size())
		}
	}
	return s
}

// runPolish runs the local searches on up to Workers goroutines, each with
// a Scorer of its own, and returns the candidates in job order. A search
// that fails is left out and reported in failed; the check fails only when
// the search from every fit's own mode failed, or when ctx is done.
func (p *modelPlan) runPolish(ctx context.Context, m models.Model, jobs []polishJob) (cands []PolishCandidate, failed []string, evals int, sc0 *models.Scorer, err error) {
	workers := p.o.Workers
	if workers == 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	workers = max(1, min(workers, len(jobs)))
	scorers := make([]*models.Scorer, workers)
	for w := range scorers {
		if scorers[w], err = models.NewScorer(m); err != nil {
			return nil, nil, 0, nil, fmt.Errorf("vi: FitModel: polish: %w", err)
		}
	}
	out := make([]PolishCandidate, len(jobs))
	errs := make([]error, len(jobs))
	truncated := make([]bool, len(jobs))
	var wg sync.WaitGroup
	next := make(chan int)
	for _, sc := range scorers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := range next {
				j := jobs[k]
				res, err := sc.Polish(ctx, j.state, models.PolishOptions{MaxBlock: p.o.Polish.MaxBlock, Blocks: p.o.Polish.Blocks, Seed: j.seed, Deadline: p.polishDeadline})
				if err != nil {
					errs[k] = err
					continue
				}
				truncated[k] = res.Truncated
				out[k] = PolishCandidate{From: j.from, Fit: j.fit, Draw: j.draw, Start: res.Start, LogJoint: res.LogJoint, State: res.State}
			}
		}()
	}
	for k := range jobs {
		next <- k
	}
	close(next)
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, nil, 0, nil, err
	}
	modes := 0
	for k, j := range jobs {
		switch {
		case errs[k] == nil:
			cands = append(cands, out[k])
			if j.fit >= 0 && j.draw < 0 {
				modes++
			}
		case j.fit >= 0 && j.draw < 0:
			err = fmt.Errorf("polishing %s: %w", j.from, errs[k])
			failed = append(failed, err.Error())
		default:
			failed = append(failed, fmt.Sprintf("polishing %s: %v", j.from, errs[k]))
		}
	}
	if modes == 0 {
		return nil, nil, 0, nil, err
	}
	for _, sc := range scorers {
		evals += sc.Evals()
	}
	for _, t := range truncated {
		if t {
			p.polishTruncated++
		}
	}
	return cands, failed, evals, scorers[0], nil
}

// applyPolish makes the check's answer the posterior's mode and adds its
// notes and warnings.
func (p *modelPlan) applyPolish(res *ModelResult) {
	rep, post := res.Polish, res.Posterior
	for _, ps := range p.spec.Perms {
		pp := post.Perms[ps.Name]
		pp.Mode = make([]perm.Perm, ps.B())
		for b, q := range rep.State.Perms[ps.Name] {
			pp.Mode[b] = q.Clone()
		}
	}
	var how []string
	if rep.Collapsed {
		how = append(how, "collapsed sites integrated analytically")
	}
	sites := "the real sites"
	if rep.Collapsed {
		sites = "the other real sites"
	}
	switch rep.Integration {
	case "quadrature":
		how = append(how, sites+" by quadrature")
	case "Laplace":
		how = append(how, sites+" by Laplace's approximation")
	case "profile":
		how = append(how, sites+" at their maximum (too many to integrate)")
	}
	kind := "the model's exact log posterior of the permutations, J"
	if len(how) > 0 {
		kind += " (" + strings.Join(how, ", ") + ")"
	}
	post.Notes = append(post.Notes, fmt.Sprintf(
		"checked by %s: the mode is the most probable of %d local searches (swaps, 3-cycles, blocks) from each fit's mode, %d of its draws and %d random restarts; it came from %s, J = %.4g, %.3g nats above fit %d's own mode (%d evaluations, %v)",
		kind, len(rep.Candidates), p.o.Polish.Draws, p.o.Polish.Restarts, rep.From, rep.LogJoint, rep.Gain, res.Best, rep.Evals, rep.Elapsed.Round(time.Millisecond)))
	w := p.o.Polish.WarnNats
	if rep.Integration == "profile" && rep.Gain > 0 {
		// Maximising over real sites flatters permutations they can be
		// fitted to (see models.Scorer): the move is not evidence.
		post.Warnings = append(post.Warnings, fmt.Sprintf(
			"the check moved the fit's mode by %.3g nats of a profile: the real sites have more than %d coordinates, too many to integrate, so J is their maximum, which favours permutations they can be fitted to; the answer may be less probable than the fit's own mode",
			rep.Gain, models.MaxLaplaceDims))
	}
	if rep.Gain > w {
		who := "polishing moved the fit's mode"
		if rep.Fit < 0 {
			who = "no fit found the answer (" + rep.From + " did)"
		} else if rep.Fit != res.Best {
			who = "the answer came from fit " + fmt.Sprint(rep.Fit)
		}
		post.Warnings = append(post.Warnings, fmt.Sprintf(
			"%s: the answer is %.3g nats (more than %g) more probable than fit %d's own mode, so its marginals are centred on the wrong permutation; trust the mode, not the marginals, or calibrate them with MCMC started from the polished states (mcmc.ModelOptions.Inits = Polish.States)",
			who, rep.Gain, w, res.Best))
	}
	// Fits that end in different states: the objective has several local
	// optima, and the fits below the answer found worse ones.
	if res.Starts > 1 {
		var ends []string
		for i := range res.Starts {
			s := p.bestOfFit(rep, i)
			if s != nil && !samePerms(s.State, rep.State) {
				ends = append(ends, fmt.Sprintf("fit %d ended %.3g nats below", i, rep.LogJoint-s.LogJoint))
			}
		}
		if len(ends) > 0 {
			post.Warnings = append(post.Warnings, fmt.Sprintf(
				"the fits ended in different states after polishing (%s): the variational objective has several local optima, and more starts may find a better one",
				strings.Join(ends, "; ")))
		}
	}
	// A search that ends in another local maximum nearly as probable as the
	// answer: a local maximum differs from the answer by more than one
	// move, so the posterior has a second mode, and one fit's marginals
	// cover at most one of them.
	for _, c := range rep.Candidates {
		if c.LogJoint > rep.LogJoint-w && !samePerms(c.State, rep.State) {
			post.Warnings = append(post.Warnings, fmt.Sprintf(
				"the posterior has several modes: %s ended in another local maximum only %.3g nats (less than %g) below the answer, and the marginals of one fit cover at most one of them; calibrate them with MCMC started from the polished states (mcmc.ModelOptions.Inits = Polish.States)",
				c.From, rep.LogJoint-c.LogJoint, w))
			break // candidates are sorted: this is the closest
		}
	}
	if len(rep.Failed) > 0 {
		post.Notes = append(post.Notes, fmt.Sprintf("%d of the check's searches could not evaluate the model and were left out: %s", len(rep.Failed), strings.Join(rep.Failed, "; ")))
	}
}

// bestOfFit returns fit i's best polished candidate.
func (p *modelPlan) bestOfFit(rep *PolishReport, i int) *PolishCandidate {
	for k := range rep.Candidates {
		if rep.Candidates[k].Fit == i {
			return &rep.Candidates[k]
		}
	}
	return nil
}
