package vi

import (
	"math"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/permlab/permlab/dist"
)

// budgetSafety scales the measured cost of the work after the fits into
// the time kept for it, against that work taking longer under load than
// when it was timed.
const budgetSafety = 1.25

// stepClock times the steps of one fit, for the Budget.
type stepClock struct {
	recent [4]time.Duration // durations of the latest steps, newest at (n-1)%4
	n      int              // steps timed
	total  time.Duration    // their sum
	last   time.Time        // end of the latest step, or the start of the first
}

func (c *stepClock) start() { c.last = time.Now() }

// tick times the step that just ended.
func (c *stepClock) tick() {
	now := time.Now()
	d := now.Sub(c.last)
	c.recent[c.n%len(c.recent)] = d
	c.n++
	c.total += d
	c.last = now
}

// longest returns the longest of the latest few steps, which allows for
// the jitter of step times on a busy machine.
func (c *stepClock) longest() time.Duration { return slices.Max(c.recent[:]) }

// mean returns the mean step time so far (0 before the first).
func (c *stepClock) mean() time.Duration {
	if c.n == 0 {
		return 0
	}
	return c.total / time.Duration(c.n)
}

// reserve returns the time the Budget keeps after the fits: for the
// posterior, PosteriorDraws + 1 times the measured cost of one draw of
// every site plus the measured fixed cost of their summary (the marginals
// and their matching), and for a fit's fresh ELBO estimate
// ⌈ELBOSamples/K⌉ steps of the given length (a step evaluates and
// differentiates K samples; the estimate only evaluates), each times
// budgetSafety.
func (p *modelPlan) reserve(step time.Duration) time.Duration {
	r := time.Duration(p.o.PosteriorDraws+1)*time.Duration(p.drawCost.Load()) + time.Duration(p.drawFixed.Load())
	if p.o.ELBOSamples > 0 {
		r += time.Duration(math.Ceil(float64(p.o.ELBOSamples)/float64(p.o.K))) * step
	}
	return time.Duration(budgetSafety * float64(r))
}

// timeUp reports whether a step (or the start of a fit) taking longest
// would end less than the reserve before the deadline, and records that the
// Budget stopped the fits. Without a Budget it is always false.
func (p *modelPlan) timeUp(longest, step time.Duration) bool {
	if p.deadline.IsZero() || time.Until(p.deadline) >= longest+p.reserve(step) {
		return false
	}
	p.budgetHit.Store(true)
	return true
}

// timeDraws measures the cost of one posterior draw of the guides, once
// per FitModel call, for the reserve: the time of up to 16 draws and their
// summary, split into a cost per draw and the summary's fixed cost when
// every permutation guide can draw alone (hardDraws); otherwise all of it
// per draw. Its random numbers are its own, so it changes no result.
func (p *modelPlan) timeDraws(guides []Guide) {
	p.drawOnce.Do(func() {
		k := min(p.o.PosteriorDraws, 16)
		t0 := time.Now()
		if _, err := p.posteriorN(guides, k); err != nil {
			return
		}
		full := time.Since(t0)
		if hard, ok := p.hardDraws(guides, k); ok {
			p.drawCost.Store(int64(hard / time.Duration(k)))
			p.drawFixed.Store(int64(max(full-hard, 0)))
			return
		}
		p.drawCost.Store(int64(full / time.Duration(k)))
	})
}

// retimeEvery is the number of steps of a fit under a Budget after which
// the cost of a posterior draw is timed again, on the fit's current guides:
// a draw's cost changes as the guides move away from their start (a
// matching of peaked logits is not one of noise), and the reserve follows
// it. Two draws every 100 steps cost well under a step each.
const retimeEvery = 100

// retimeDraws times k posterior draws of guides and makes their cost per
// draw the reserve's: the draws alone when the guides allow it (the
// summary's fixed cost stays as first timed, and no N × N marginals are
// built every 100 steps), the draws and their summary otherwise.
func (p *modelPlan) retimeDraws(guides []Guide, k int) {
	k = min(p.o.PosteriorDraws, k)
	if hard, ok := p.hardDraws(guides, k); ok {
		p.drawCost.Store(int64(hard / time.Duration(k)))
		return
	}
	t0 := time.Now()
	if _, err := p.posteriorN(guides, k); err == nil {
		p.drawCost.Store(int64(time.Since(t0) / time.Duration(k)))
	}
}

// hardDraws times k hard draws of every permutation guide, without the
// summary, with random numbers of its own; ok is false if a permutation
// guide has no such draw (the rounding guide) or a draw fails.
func (p *modelPlan) hardDraws(guides []Guide, k int) (time.Duration, bool) {
	rng := rand.New(rand.NewPCG(deriveSeed(p.o.Seed, seedDraws, 1), 0x74696d65))
	t0 := time.Now()
	for _, g := range guides {
		switch g := g.(type) {
		case *GumbelSinkhorn:
			for b := range g.b {
				if _, err := (dist.GumbelMatching{X: g.Logits(b)}).RandBatch(k, rng); err != nil {
					return 0, false
				}
			}
		case *SparseGumbelSinkhorn:
			if _, err := g.draws(k, rng); err != nil {
				return 0, false
			}
		case *Rounding, *SparseRounding:
			return 0, false
		case PermGuide:
			for range k {
				if _, err := g.Draw(rng); err != nil {
					return 0, false
				}
			}
		}
	}
	return time.Since(t0), true
}
