package vi

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/permlab/permlab/ad"
	"github.com/permlab/permlab/models"
)

// This file holds FitModel's preflight check of a model's LogLik.
//
// The models contract has every site's value carry the K samples on its
// leading axis: a permutation site has shape (K, B, N, N) in a Sample, a
// real site (K, Shape...), and LogLik returns shape (K). A LogLik that uses
// a site along another axis can run without error and be wrong. The
// typical case is a scalar real site, of shape (K), multiplied into a
// (K, n) tensor: package ad aligns the shorter shape with the last axes,
// so sample k's value scales column k of every sample. That runs whenever
// n equals K, fits a posterior in which the samples contaminate each
// other, and fails only when the fresh ELBO estimate after the fit uses
// another K, with an error about sizes that names no site. FitModel
// therefore evaluates LogLik once before any optimisation step, at a
// number of samples that is no site's dimension, and checks that
//
//   - it runs: a tape error that appears with this K and not with K = 1 is
//     a use of the sample axis as another axis, reported with the shapes
//     the sites have in a Sample;
//   - it returns shape (K), one value per sample;
//   - the samples are independent: changing sample j of one site, and
//     nothing else, changes no entry of the result but entry j, and
//     sample j evaluated alone (K = 1) gives entry j again.
//
// The values are relaxed samples of the fit's own guides (of another seed
// stream than the fits', so that the fits do not change), which the
// likelihood must accept anyway. The check costs two LogLik evaluations
// plus one per site.

// checkTol is the tolerance of the preflight check's comparisons, relative
// to max(1, |value|). The samples that did not change are computed by the
// same operations in the same order and agree to the last bit unless the
// model couples the samples; the tolerance leaves room for kernels that sum
// in another order at K = 1 and for iterations that stop on a tolerance,
// and it is far below what a sample-axis mistake changes.
const checkTol = 1e-6

// checkSampleBudget caps the number of site values (K times the sum of the
// sites' sizes) of the check when its K exceeds the fit's: beyond it the
// check falls back to a smaller K (see checkSamples).
const checkSampleBudget = 1 << 20

// checkLogLik runs the preflight check of m's LogLik described above and
// returns an error naming what is wrong, or the model's own tape error.
func (p *modelPlan) checkLogLik(m models.Model) error {
	k := checkSamples(p.spec, p.o.K, p.sparse)
	guides, err := p.newGuides(deriveSeed(p.o.Seed, seedCheck, 0))
	if err != nil {
		return err
	}
	// Draw k + 1 samples of every site: samples 0…k−1 are the check's
	// values, sample k the replacement of sample j of one site at a time.
	t := ad.NewTape()
	rng := StepRand(deriveSeed(p.o.Seed, seedCheck, 1), 0)
	draws := make(map[string]*ad.Tensor, len(guides))
	for _, g := range guides {
		v, _, err := g.Rsample(t, Step{Index: 0, K: k + 1, Rng: rng})
		if err != nil {
			return fmt.Errorf("vi: FitModel: guide %q: %w", g.Name(), err)
		}
		draws[g.Name()] = v.Tensor()
	}
	c := &llCheck{m: m, spec: p.spec, t: t, draws: draws, sparse: p.sparse}
	j := k / 2

	base, err := c.eval(k, j, "")
	if err != nil {
		if _, err1 := c.eval(1, j, ""); err1 == nil {
			return fmt.Errorf("vi: FitModel: LogLik fails with K = %d samples but not with K = 1: %w; %s", k, err, c.sampleAxisHint(k))
		}
		return fmt.Errorf("vi: FitModel: %w", err)
	}
	if err := checkLogLikShape(base, k); err != nil {
		return fmt.Errorf("vi: FitModel: %w", err)
	}
	want := slices.Clone(base.Value())

	for _, site := range p.spec.Sites {
		name := site.SiteName()
		got, err := c.eval(k, j, name)
		if err == nil {
			err = checkLogLikShape(got, k)
		}
		if err != nil {
			return fmt.Errorf("vi: FitModel: %w", err)
		}
		var others []int
		for q, v := range got.Value() {
			if q != j && !agree(v, want[q], checkTol) {
				others = append(others, q)
			}
		}
		if len(others) > 0 {
			return fmt.Errorf("vi: FitModel: LogLik mixes samples: changing sample %d of site %q (shape %s = %s) changed the log-likelihood of other samples (%v of K = %d); %s",
				j, name, c.symbolicShape(site), formatShape(c.shape(site, k)), others, k, sampleAxisRule)
		}
	}

	one, err := c.eval(1, j, "")
	if err != nil {
		return fmt.Errorf("vi: FitModel: LogLik fails with K = 1 but not with K = %d: %w", k, err)
	}
	if err := checkLogLikShape(one, 1); err != nil {
		return fmt.Errorf("vi: FitModel: %w", err)
	}
	if v := one.Item(); !agree(v, want[j], checkTol) {
		return fmt.Errorf("vi: FitModel: LogLik depends on the number of samples: sample %d gives %.10g alone (K = 1) and %.10g among K = %d; %s",
			j, v, want[j], k, sampleAxisRule)
	}
	return nil
}

// sampleAxisRule is the rule that the check's errors recall.
const sampleAxisRule = "a site's leading axis is the sample axis K, and sample k's log-likelihood must depend on sample k of every site alone. " +
	"Package ad aligns the shorter of two shapes with the LAST axes of the longer, so a (K) value must be reshaped to (K, 1) before it meets a (K, n) tensor, " +
	"and sums and means must not run over axis 0"

// checkSamples returns the number of samples of the preflight check: the
// smallest prime above 2 and above every dimension of every site, so that
// the sample axis has a length no other axis of the sites has and that few
// data dimensions have. When that K exceeds the fit's K and would make the
// sites' values exceed checkSampleBudget, it is instead the smallest prime
// above 2 that is no site's dimension.
func checkSamples(spec *models.Spec, fitK int, sparse map[string]bool) int {
	dims := map[int]bool{}
	size := 0
	for _, ps := range spec.Perms {
		dims[ps.B()], dims[ps.N] = true, true
		if sparse[ps.Name] {
			dims[ps.NNZ()] = true
			size += ps.NNZ()
		} else {
			size += ps.B() * ps.N * ps.N
		}
	}
	for _, rs := range spec.Reals {
		for _, d := range rs.Shape {
			dims[d] = true
		}
		size += rs.Size()
	}
	top := 2
	for d := range dims {
		top = max(top, d)
	}
	k := nextPrime(top)
	if k > fitK && k*size > checkSampleBudget {
		k = nextPrime(2)
		for dims[k] {
			k = nextPrime(k)
		}
	}
	return k
}

// nextPrime returns the smallest prime > n.
func nextPrime(n int) int {
	for q := n + 1; ; q++ {
		prime := q >= 2
		for d := 2; d*d <= q && prime; d++ {
			prime = q%d != 0
		}
		if prime {
			return q
		}
	}
}

// agree reports whether a and b agree to tol relative to max(1, |a|, |b|);
// two NaNs agree.
func agree(a, b, tol float64) bool {
	if a == b || math.IsNaN(a) && math.IsNaN(b) {
		return true
	}
	return math.Abs(a-b) <= tol*math.Max(1, math.Max(math.Abs(a), math.Abs(b)))
}

// llCheck evaluates a model's LogLik on samples of fixed draws.
type llCheck struct {
	m      models.Model
	spec   *models.Spec
	t      *ad.Tape
	draws  map[string]*ad.Tensor // K+1 samples of every site, by name
	sparse map[string]bool       // permutation sites in the sparse layout
}

// eval records LogLik on c.t for k samples of the draws and returns its
// value (which may be nil, or of any shape), or the tape's error. With k = 1 the sample is draw j; otherwise
// the samples are draws 0…k−1, except that sample j of site swap (if not
// empty) is replaced by the spare draw k.
func (c *llCheck) eval(k, j int, swap string) (*ad.Var, error) {
	t := c.t
	t.Reset()
	z := models.NewSample(t, c.spec, k, false)
	for _, site := range c.spec.Sites {
		name := site.SiteName()
		d := c.draws[name]
		row := len(d.Data) / d.Shape[0]
		data := t.Alloc(k * row)
		if k == 1 {
			copy(data, d.Data[j*row:(j+1)*row])
		} else {
			copy(data, d.Data[:k*row])
			if name == swap {
				copy(data[j*row:(j+1)*row], d.Data[k*row:(k+1)*row])
			}
		}
		setSite(z, c.spec, name, t.Const(&ad.Tensor{Shape: c.shape(site, k), Data: data}))
	}
	if err := t.Err(); err != nil {
		return nil, fmt.Errorf("vi: internal error: check sample: %w", err)
	}
	ll := c.m.LogLik(t, z)
	if err := t.Err(); err != nil {
		return nil, err
	}
	return ll, nil
}

// shape returns the shape of site in a Sample of k samples.
func (c *llCheck) shape(site models.Site, k int) []int {
	switch s := site.(type) {
	case *models.PermSite:
		if c.sparse[s.Name] {
			return []int{k, c.spec.Perms[slices.IndexFunc(c.spec.Perms, func(ps *models.PermSpec) bool { return ps.Name == s.Name })].NNZ()}
		}
		return []int{k, s.B(), s.N, s.N}
	case *models.RealSite:
		return append([]int{k}, s.Shape...)
	}
	return nil
}

// symbolicShape returns the shape of site in a Sample with the sample axis
// written K, such as (K, 1, 4, 4), (K) or, in the sparse layout, (K, NNZ).
func (c *llCheck) symbolicShape(site models.Site) string {
	if c.sparse[site.SiteName()] {
		return "(K, NNZ) (sparse layout)"
	}
	return symbolicShape(site)
}

// symbolicShape returns the shape of site in a Sample with the sample axis
// written K, such as (K, 1, 4, 4) or (K).
func symbolicShape(site models.Site) string {
	var dims []int
	switch s := site.(type) {
	case *models.PermSite:
		dims = []int{s.B(), s.N, s.N}
	case *models.RealSite:
		dims = s.Shape
	}
	if len(dims) == 0 {
		return "(K)"
	}
	return "(K, " + strings.TrimPrefix(formatShape(dims), "(")
}

// sampleAxisHint lists the shapes the sites have in a Sample of k samples,
// for an error that appears at this k only.
func (c *llCheck) sampleAxisHint(k int) string {
	parts := make([]string, len(c.spec.Sites))
	for i, site := range c.spec.Sites {
		parts[i] = fmt.Sprintf("site %q has shape %s = %s", site.SiteName(), c.symbolicShape(site), formatShape(c.shape(site, k)))
	}
	return "in a Sample " + strings.Join(parts, ", ") + "; " + sampleAxisRule
}
