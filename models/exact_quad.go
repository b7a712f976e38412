package models

import (
	"fmt"
	"math"
	"slices"

	"gonum.org/v1/gonum/integrate/quad"
	"gonum.org/v1/gonum/mat"

	"github.com/permlab/permlab/ad"
)

// MaxExactRealDims is the largest number of real coordinates, summed over
// the real sites that no CollapsedLikelihood integrates out, that Exact
// integrates numerically (by adaptive Gauss-Hermite quadrature, see Exact).
// A model with more such coordinates is an error: it needs a Collapser.
const MaxExactRealDims = 3

// ExactQuadTol is the accuracy Exact asks of its numerical integration of
// real sites, in nats: for every permutation state s the log weight
// log ∫ p(y | s, θ) p(θ) dθ is accepted when two successive Gauss-Hermite
// orders agree within ExactQuadTol (and the real sites' posterior means and
// standard deviations within 10⁻⁴ standard deviations). The difference is
// the error estimate Exact reports; as the error of Gauss-Hermite rules
// falls geometrically with the order for smooth integrands, the accepted
// estimate is typically far more accurate (10⁻⁸ nats or better).
const ExactQuadTol = 1e-6

// quadOrders are the Gauss-Hermite orders per dimension that Exact tries in
// turn; an order is used only while the tensor grid has at most
// quadMaxPoints points, so that d = 3 stops at 32.
var quadOrders = []int{8, 12, 16, 24, 32, 48, 64}

const (
	quadMaxPoints = 1 << 15
	// quadMomentTol is the agreement, in posterior standard deviations,
	// that Exact asks of two successive orders' means and standard
	// deviations of the real sites.
	quadMomentTol = 1e-4
	// quadMaxNewton bounds the Newton iterations of the mode search.
	quadMaxNewton = 100
)

// ghRule is a Gauss-Hermite rule for ∫ h(z) e^{−z²/2} dz ≈ Σ_i e^{lw_i} h(z_i).
type ghRule struct {
	z, lw []float64
}

// newGHRule returns the n-point rule, from gonum's physicists' rule
// ∫ g(t) e^{−t²} dt ≈ Σ W_i g(t_i) with z = √2 t.
func newGHRule(n int) ghRule {
	t, w := make([]float64, n), make([]float64, n)
	quad.Hermite{}.FixedLocations(t, w, math.Inf(-1), math.Inf(1))
	r := ghRule{z: t, lw: w}
	for i := range t {
		r.z[i] = math.Sqrt2 * t[i]
		r.lw[i] = math.Log(math.Sqrt2 * w[i])
	}
	return r
}

// realQuad integrates the real sites that no CollapsedLikelihood handles
// out of the joint density, one permutation state at a time.
type realQuad struct {
	m     Model
	spec  *Spec
	free  []*RealSite
	names []string
	d     int
	fast  StateLogLiker       // value fast path, or nil
	col   CollapsedLikelihood // collapsed likelihood of the other real sites, or nil
	t     *ad.Tape
	s     *State // the state being integrated; its free sites are overwritten

	start []float64 // the previous state's mode: the next warm start
	scale []float64 // the previous state's Laplace standard deviations
	rules map[int]ghRule

	// Scratch and results of the last integrate call.
	theta, g      []float64
	mean, sd      []float64
	terms, deltas []float64
	thetas, vals  []float64
	pts, fs, gs   []float64
	order         int
	calls         int // integrand evaluations so far (each grid point counts)
}

func newRealQuad(m Model, spec *Spec, free []*RealSite, col CollapsedLikelihood, t *ad.Tape, s *State) *realQuad {
	q := &realQuad{m: m, spec: spec, free: free, col: col, t: t, s: s, rules: map[int]ghRule{}}
	for _, rs := range free {
		q.names = append(q.names, rs.Name)
		q.d += rs.Size()
	}
	if col == nil {
		q.fast, _ = m.(StateLogLiker)
	}
	d := q.d
	q.start, q.scale = make([]float64, d), make([]float64, d)
	for j := range q.scale {
		q.scale[j] = 1
	}
	q.theta, q.g = make([]float64, d), make([]float64, d)
	q.mean, q.sd = make([]float64, d), make([]float64, d)
	return q
}

// set writes θ into the free real sites of the state.
func (q *realQuad) set(theta []float64) {
	off := 0
	for _, rs := range q.free {
		n := rs.Size()
		copy(q.s.Reals[rs.Name], theta[off:off+n])
		off += n
	}
}

// value returns log p(y | s, θ) + log p(θ), the integrand's log, without a
// tape when the model offers a fast path.
func (q *realQuad) value(theta []float64) (float64, error) {
	q.calls++
	q.set(theta)
	var ll float64
	var err error
	switch {
	case q.col != nil:
		ll, err = q.col.CollapsedLogLik(q.s)
	case q.fast != nil:
		ll, err = q.fast.LogLikState(q.s)
	default:
		ll, err = logLikTape(q.m, q.spec, q.t, q.s)
	}
	if err != nil {
		return 0, err
	}
	for _, rs := range q.free {
		ll += rs.Prior.LogProb(q.s.Reals[rs.Name])
	}
	if math.IsNaN(ll) || math.IsInf(ll, 1) {
		return 0, fmt.Errorf("log density is %v at real sites %v = %v", ll, q.names, theta)
	}
	return ll, nil
}

// quadBatch is the number of points whose log-likelihood values one
// evaluation of LogLik computes, as its K samples.
const quadBatch = 512

// values sets out[k] to value(θ_k) for the points θ_k = thetas[k·d:(k+1)·d]:
// through the fast path or the collapsed likelihood point by point, or
// through LogLik with up to quadBatch points as its K samples.
func (q *realQuad) values(thetas, out []float64) error {
	d := q.d
	if q.col != nil || q.fast != nil {
		for k := range out {
			v, err := q.value(thetas[k*d : (k+1)*d])
			if err != nil {
				return err
			}
			out[k] = v
		}
		return nil
	}
	for lo := 0; lo < len(out); lo += quadBatch {
		hi := min(lo+quadBatch, len(out))
		if err := q.tapeEval(thetas[lo*d:hi*d], out[lo:hi], nil); err != nil {
			return err
		}
	}
	return nil
}

// tapeEval evaluates log p(y | s, θ_r) + log p(θ_r) for the k = len(f)
// points θ_r = pts[r·d:(r+1)·d] on the tape, as the K = k samples of one
// call of LogLik, into f[r]; if g is not nil, it writes the gradient at θ_r
// into g[r·d:(r+1)·d] (the samples are independent, so the gradient of
// their sum has the per-sample gradients as its rows).
func (q *realQuad) tapeEval(pts, f, g []float64) error {
	d, k := q.d, len(f)
	q.calls += k
	t := q.t
	t.Reset()
	z := NewSample(t, q.spec, k, true)
	for _, ps := range q.spec.Perms {
		n, nb := ps.N, ps.B()*ps.N*ps.N
		perms := q.s.Perms[ps.Name]
		if len(perms) != ps.B() {
			return fmt.Errorf("the state has %d permutations for site %q, want %d", len(perms), ps.Name, ps.B())
		}
		data := t.Alloc(k * nb)
		for b, p := range perms {
			if len(p) != n {
				return fmt.Errorf("site %q permutation %d has size %d, want %d", ps.Name, b, len(p), n)
			}
			for i, j := range p {
				data[b*n*n+i*n+j] = 1
			}
		}
		for r := 1; r < k; r++ {
			copy(data[r*nb:(r+1)*nb], data[:nb])
		}
		z.Set(ps.Name, t.Const(&ad.Tensor{Shape: []int{k, ps.B(), n, n}, Data: data}))
	}
	leaves := make([]*ad.Var, len(q.free))
	off := 0
	for i, rs := range q.free {
		sz := rs.Size()
		data := t.Alloc(k * sz)
		for r := range k {
			copy(data[r*sz:(r+1)*sz], pts[r*d+off:r*d+off+sz])
		}
		ten := &ad.Tensor{Shape: append([]int{k}, rs.Shape...), Data: data}
		if g != nil {
			leaves[i] = t.Variable(ten)
		} else {
			leaves[i] = t.Const(ten)
		}
		z.Set(rs.Name, leaves[i])
		off += sz
	}
	if err := t.Err(); err != nil {
		return err
	}
	ll := q.m.LogLik(t, z)
	if err := t.Err(); err != nil {
		return err
	}
	if ll == nil || ll.Size() != k {
		return fmt.Errorf("LogLik returned %v values for K = %d", sizeOf(ll), k)
	}
	tot := ad.Reshape(ll, k)
	for i, rs := range q.free {
		tot = ad.Add(tot, ad.Reshape(rs.Prior.LogProbVar(leaves[i]), k))
	}
	if g != nil {
		if err := t.Backward(ad.Sum(tot)); err != nil {
			return err
		}
		off := 0
		for i, rs := range q.free {
			sz := rs.Size()
			gr := leaves[i].Grad()
			for r := range k {
				dst := g[r*d+off : r*d+off+sz]
				if gr == nil {
					clear(dst)
				} else {
					copy(dst, gr[r*sz:(r+1)*sz])
				}
			}
			off += sz
		}
	}
	if err := t.Err(); err != nil {
		return err
	}
	copy(f, tot.Value())
	for r, v := range f {
		if math.IsNaN(v) || math.IsInf(v, 1) {
			return fmt.Errorf("log density is %v at real sites %v = %v", v, q.names, pts[r*d:(r+1)*d])
		}
	}
	return nil
}

// local returns the integrand's log f at θ, and writes its gradient into g
// and its negative Hessian −∇²f, symmetrised, into a. On the tape (no
// collapsed likelihood) the gradient is exact and the Hessian the central
// differences of the gradient, from one call of LogLik at the 2d + 1 points
// θ, θ ± h_j e_j; with a collapsed likelihood both are central differences
// of its values. The steps h_j scale with the previous state's posterior
// standard deviations.
func (q *realQuad) local(theta, g []float64, a *mat.SymDense) (float64, error) {
	d := q.d
	if q.col == nil {
		np := 2*d + 1
		q.pts = slices.Grow(q.pts[:0], np*d)[:np*d]
		q.fs = slices.Grow(q.fs[:0], np)[:np]
		q.gs = slices.Grow(q.gs[:0], np*d)[:np*d]
		h := make([]float64, d)
		for r := range np {
			copy(q.pts[r*d:(r+1)*d], theta)
		}
		for j := range d {
			h[j] = 1e-4 * q.scale[j]
			q.pts[(1+2*j)*d+j] += h[j]
			q.pts[(2+2*j)*d+j] -= h[j]
		}
		if err := q.tapeEval(q.pts, q.fs, q.gs); err != nil {
			return 0, err
		}
		copy(g, q.gs[:d])
		for i := range d {
			for j := i; j < d; j++ {
				hij := (q.gs[(1+2*j)*d+i] - q.gs[(2+2*j)*d+i]) / (2 * h[j])
				hji := (q.gs[(1+2*i)*d+j] - q.gs[(2+2*i)*d+j]) / (2 * h[i])
				a.SetSym(i, j, -(hij+hji)/2)
			}
		}
		return q.fs[0], nil
	}
	x := slices.Clone(theta)
	f0, err := q.value(theta)
	if err != nil {
		return 0, err
	}
	at := func(i, j int, si, sj float64) (float64, error) {
		x[i] += si
		x[j] += sj
		v, err := q.value(x)
		x[i], x[j] = theta[i], theta[j]
		return v, err
	}
	for i := range d {
		hi := 1e-3 * q.scale[i]
		fp, err := at(i, i, hi, 0)
		if err != nil {
			return 0, err
		}
		fm, err := at(i, i, -hi, 0)
		if err != nil {
			return 0, err
		}
		a.SetSym(i, i, -(fp-2*f0+fm)/(hi*hi))
		// The gradient from the same points would have an error of order
		// h²; a smaller step gives it to near rounding.
		gi := 1e-5 * q.scale[i]
		if fp, err = at(i, i, gi, 0); err != nil {
			return 0, err
		}
		if fm, err = at(i, i, -gi, 0); err != nil {
			return 0, err
		}
		g[i] = (fp - fm) / (2 * gi)
		for j := i + 1; j < d; j++ {
			hj := 1e-3 * q.scale[j]
			var v [4]float64
			for k, sg := range [4][2]float64{{1, 1}, {1, -1}, {-1, 1}, {-1, -1}} {
				if v[k], err = at(i, j, sg[0]*hi, sg[1]*hj); err != nil {
					return 0, err
				}
			}
			a.SetSym(i, j, -(v[0]-v[1]-v[2]+v[3])/(4*hi*hj))
		}
	}
	return f0, nil
}

// factor factorises a = UᵀU, adding λI (Levenberg-Marquardt) with the
// smallest λ among 0, 10⁻⁸(1 + max|a_ii|)·10^k that makes it positive
// definite.
func factor(a *mat.SymDense, chol *mat.Cholesky) error {
	if chol.Factorize(a) {
		return nil
	}
	d := a.SymmetricDim()
	big := 0.0
	for i := range d {
		big = math.Max(big, math.Abs(a.At(i, i)))
	}
	reg := mat.NewSymDense(d, nil)
	for lam := 1e-8 * (1 + big); lam < 1e12*(1+big); lam *= 10 {
		reg.CopySym(a)
		for i := range d {
			reg.SetSym(i, i, a.At(i, i)+lam)
		}
		if chol.Factorize(reg) {
			return nil
		}
	}
	return fmt.Errorf("the Hessian of the log density is not finite")
}

// mode finds the maximum θ* of the integrand's log f by damped Newton steps
// (backtracking to the Armijo condition) from the previous state's mode,
// leaves it in q.theta, and returns the Cholesky factor of the negative
// Hessian there (regularised if need be). It stops when the Newton
// decrement gᵀA⁻¹g, twice the predicted gain f(θ*) − f(θ), is below 10⁻¹⁰:
// the centre and scale of the rule need not be exact, as the quadrature
// checks its own convergence.
func (q *realQuad) mode(chol *mat.Cholesky) error {
	d := q.d
	theta := q.theta
	copy(theta, q.start)
	a, at := mat.NewSymDense(d, nil), mat.NewSymDense(d, nil)
	f, err := q.local(theta, q.g, a)
	if err != nil || !finite(f) {
		clear(theta)
		if f, err = q.local(theta, q.g, a); err != nil {
			return err
		}
		if !finite(f) {
			return fmt.Errorf("log density of the real sites %v is %v at the previous mode and at 0", q.names, f)
		}
	}
	delta := mat.NewVecDense(d, nil)
	trial, gt := make([]float64, d), make([]float64, d)
	for range quadMaxNewton {
		if err := factor(a, chol); err != nil {
			return err
		}
		if err := chol.SolveVecTo(delta, mat.NewVecDense(d, q.g)); err != nil {
			return err
		}
		dec := mat.Dot(delta, mat.NewVecDense(d, q.g))
		if !(dec > 1e-10) {
			return nil
		}
		accepted := false
		for alpha := 1.0; alpha > 1e-12; alpha /= 2 {
			for j := range d {
				trial[j] = theta[j] + alpha*delta.AtVec(j)
			}
			ft, err := q.local(trial, gt, at)
			if err == nil && finite(ft) && ft >= f+1e-4*alpha*dec {
				copy(theta, trial)
				copy(q.g, gt)
				a.CopySym(at)
				f, accepted = ft, true
				break
			}
		}
		if !accepted {
			break // at the precision of f
		}
	}
	return factor(a, chol)
}

// integrate returns log ∫ p(y | s, θ) p(θ) dθ over the free real sites for
// the permutations in q.s, and the a-posteriori error estimate of that log
// (nats); it leaves the posterior mean and standard deviation of θ given s
// in q.mean and q.sd. See Exact for the method.
func (q *realQuad) integrate() (logI, errEst float64, err error) {
	d := q.d
	var chol mat.Cholesky
	if err := q.mode(&chol); err != nil {
		return 0, 0, err
	}
	center := slices.Clone(q.theta)
	fc, err := q.value(center)
	if err != nil {
		return 0, 0, err
	}
	// Σ = A⁻¹ = U⁻¹U⁻ᵀ for A = UᵀU: θ = θ* + L z with L = U⁻¹.
	var u, l mat.TriDense
	chol.UTo(&u)
	if err := l.InverseTri(&u); err != nil {
		return 0, 0, fmt.Errorf("Laplace scale: %w", err)
	}
	logDetL := -chol.LogDet() / 2
	copy(q.start, center)
	for j := range d {
		s := 0.0
		for k := range d {
			s += l.At(j, k) * l.At(j, k)
		}
		q.scale[j] = math.Sqrt(s)
	}
	prevMean, prevSD := make([]float64, d), make([]float64, d)
	prev := math.NaN()
	lastDiff, lastMom := math.Inf(1), math.Inf(1)
	for k, n := range quadOrders {
		if math.Pow(float64(n), float64(d)) > quadMaxPoints {
			break
		}
		cur, err := q.estimate(n, center, fc, &l)
		if err != nil {
			return 0, 0, err
		}
		cur += fc + logDetL
		q.order = n
		if k > 0 {
			diff := math.Abs(cur - prev)
			mom := 0.0
			for j := range d {
				mom = math.Max(mom, math.Max(math.Abs(q.mean[j]-prevMean[j]), math.Abs(q.sd[j]-prevSD[j]))/q.sd[j])
			}
			lastDiff, lastMom = diff, mom
			if diff <= ExactQuadTol && mom <= quadMomentTol {
				return cur, diff, nil
			}
		}
		prev = cur
		copy(prevMean, q.mean)
		copy(prevSD, q.sd)
	}
	return 0, 0, fmt.Errorf("Gauss-Hermite quadrature of the real sites %v did not converge: the last two orders (up to %d) differ by %.3g nats in the log weight (tolerance %g) and by %.3g standard deviations in the means and standard deviations (tolerance %g)",
		q.names, q.order, lastDiff, ExactQuadTol, lastMom, quadMomentTol)
}

// estimate returns log Σ_k e^{lw_k + f(θ* + L z_k) − f(θ*) + |z_k|²/2} over
// the n^d tensor grid, and sets q.mean and q.sd. The grid is not pruned:
// where the posterior's tails are heavier than the Laplace approximation's,
// the corners of the grid, whose product weights are tiny, carry mass.
func (q *realQuad) estimate(n int, center []float64, fc float64, l *mat.TriDense) (float64, error) {
	d := q.d
	r, ok := q.rules[n]
	if !ok {
		r = newGHRule(n)
		q.rules[n] = r
	}
	idx := make([]int, d)
	z := make([]float64, d)
	q.terms = q.terms[:0]
	q.deltas = q.deltas[:0]
	q.thetas = q.thetas[:0]
	for {
		lw, zz := 0.0, 0.0
		for j, i := range idx {
			lw += r.lw[i]
			z[j] = r.z[i]
			zz += z[j] * z[j]
		}
		for j := range d {
			s := 0.0
			for k := j; k < d; k++ { // L is upper triangular
				s += l.At(j, k) * z[k]
			}
			q.thetas = append(q.thetas, center[j]+s)
			q.deltas = append(q.deltas, s)
		}
		q.terms = append(q.terms, lw+zz/2-fc)
		k := d - 1
		for ; k >= 0; k-- {
			idx[k]++
			if idx[k] < n {
				break
			}
			idx[k] = 0
		}
		if k < 0 {
			break
		}
	}
	q.vals = slices.Grow(q.vals[:0], len(q.terms))[:len(q.terms)]
	if err := q.values(q.thetas, q.vals); err != nil {
		return 0, err
	}
	best := math.Inf(-1)
	for k, f := range q.vals {
		q.terms[k] += f
		best = math.Max(best, q.terms[k])
	}
	if math.IsInf(best, -1) {
		return best, fmt.Errorf("the likelihood is zero at every quadrature point")
	}
	sum := 0.0
	m1, m2 := q.mean, q.sd
	clear(m1)
	clear(m2)
	for k, term := range q.terms {
		w := math.Exp(term - best)
		sum += w
		for j := range d {
			x := q.deltas[k*d+j]
			m1[j] += w * x
			m2[j] += w * x * x
		}
	}
	for j := range d {
		mu := m1[j] / sum
		m1[j] = center[j] + mu
		m2[j] = math.Sqrt(math.Max(m2[j]/sum-mu*mu, 0))
	}
	return best + math.Log(sum), nil
}

// momentAcc mixes the per-state posterior means and variances of the real
// sites with the states' weights e^w, stably (a running maximum of w).
type momentAcc struct {
	top      float64
	s0       float64
	s1, s2   []float64
	ref      []float64
	nonempty bool
}

func (a *momentAcc) add(w float64, mean, sd []float64) {
	if math.IsInf(w, -1) {
		return
	}
	if !a.nonempty {
		a.top, a.nonempty = w, true
		a.ref = slices.Clone(mean)
		a.s1, a.s2 = make([]float64, len(mean)), make([]float64, len(mean))
	}
	if w > a.top {
		c := math.Exp(a.top - w)
		a.s0 *= c
		for j := range a.s1 {
			a.s1[j] *= c
			a.s2[j] *= c
		}
		a.top = w
	}
	e := math.Exp(w - a.top)
	a.s0 += e
	for j, m := range mean {
		x := m - a.ref[j]
		a.s1[j] += e * x
		a.s2[j] += e * (sd[j]*sd[j] + x*x)
	}
}

// result returns the mixture's means and standard deviations.
func (a *momentAcc) result() (mean, sd []float64) {
	mean, sd = make([]float64, len(a.s1)), make([]float64, len(a.s1))
	for j := range mean {
		mu := a.s1[j] / a.s0
		mean[j] = a.ref[j] + mu
		sd[j] = math.Sqrt(math.Max(a.s2[j]/a.s0-mu*mu, 0))
	}
	return mean, sd
}
