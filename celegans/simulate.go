package celegans

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sort"

	"gonum.org/v1/gonum/mat"

	"github.com/permlab/permlab/perm"
)

// Defaults of the simulation protocol (Linderman et al. 2018, supplement).
const (
	// DefaultT is the number of time steps recorded per worm.
	DefaultT = 1000
	// DefaultRadiusFactor: W is divided by this times its spectral radius,
	// so its spectral radius is 1/1.1.
	DefaultRadiusFactor = 1.1
)

// SimConfig sets up a simulation of the protocol. The zero value is one worm
// of DefaultT steps with unit noise and no known neurons.
type SimConfig struct {
	// Worms is the number of worms sharing W; 0 means 1.
	Worms int
	// T is the number of time steps (rows of each Y), at least 2; 0 means
	// DefaultT.
	T int
	// KnownCount is the number of neurons per worm whose identity is given.
	KnownCount int
	// KnownFraction, if KnownCount is 0, sets the number of known neurons
	// to round(KnownFraction * N). At most one of the two may be non-zero.
	KnownFraction float64
	// NoiseVar is the noise variance eta^2; 0 means 1.
	NoiseVar float64
	// RadiusFactor is the factor in the scaling of W by RadiusFactor times
	// its spectral radius (Simulate only); 0 means DefaultRadiusFactor.
	RadiusFactor float64
}

// Worm is one simulated animal.
//
// Observed neuron m is canonical neuron Perm[m]. With P the matrix of Perm
// (P[m][Perm[m]] = 1, see perm.Perm.Matrix) and x_t the activity in canonical
// order, the recording is y_t = P x_t, that is y_t[m] = x_t[Perm[m]], and
// y_t = P W Pᵀ y_{t-1} + P e_t, the model of the seed paper: P maps observed
// indices to canonical identities, and (P W Pᵀ)[m][m'] = W[Perm[m]][Perm[m']].
type Worm struct {
	// Y is T x N: Y.At(t, m) is observed neuron m at time t.
	Y *mat.Dense
	// Perm is the true identity of each observed neuron.
	Perm perm.Perm
	// Known lists, in increasing order, the observed neurons m whose
	// identity Perm[m] is given.
	Known []int
}

// Stats returns the sufficient statistics of w.Y.
func (w *Worm) Stats() (*Stats, error) { return NewStats(w.Y) }

// Simulation is the output of Simulate: several worms recorded from one
// linear dynamical system.
type Simulation struct {
	Connectome *Connectome
	// W is the shared N x N weight matrix in canonical order: a
	// *mat.Dense, or a *SparseWeights above DenseWeightsMaxN neurons.
	W mat.Matrix
	// NoiseVar is eta^2.
	NoiseVar float64
	Worms    []*Worm
}

// DenseWeightsMaxN is the largest connectome for which Simulate draws W
// densely (SampleWeights, an O(N³) SVD); above it, SampleSparseWeights.
const DenseWeightsMaxN = 1000

// Simulate draws W with SampleWeights(c, cfg.RadiusFactor, seed) (or, for
// more than DenseWeightsMaxN neurons, SampleSparseWeights, the same draws
// in the sparse form) and then simulates the worms with SimulateWith.
func Simulate(c *Connectome, cfg SimConfig, seed uint64) (*Simulation, error) {
	if c == nil {
		return nil, fmt.Errorf("celegans: Simulate: nil connectome")
	}
	factor := cfg.RadiusFactor
	if factor == 0 {
		factor = DefaultRadiusFactor
	}
	var w mat.Matrix
	var err error
	if c.N() > DenseWeightsMaxN {
		w, err = SampleSparseWeights(c, factor, seed)
	} else {
		w, err = SampleWeights(c, factor, seed)
	}
	if err != nil {
		return nil, fmt.Errorf("celegans: Simulate: %w", err)
	}
	s, err := SimulateWith(c, w, cfg, seed)
	if err != nil {
		return nil, fmt.Errorf("celegans: Simulate: %w", err)
	}
	return s, nil
}

// SampleWeights draws the weight matrix of the protocol: W is antisymmetric
// (W[j][i] = -W[i][j]) with the sparsity of A', its upper-triangle entries on
// the edges of c are independent standard normal, and the whole matrix is
// then divided by factor times its spectral radius, which leaves spectral
// radius 1/factor. Antisymmetric matrices are normal, with eigenvalues ±iσ_k
// for the singular values σ_k, so the spectral radius is the largest singular
// value. A connectome without edges gives the zero matrix.
func SampleWeights(c *Connectome, factor float64, seed uint64) (*mat.Dense, error) {
	if c == nil {
		return nil, fmt.Errorf("celegans: SampleWeights: nil connectome")
	}
	if !(factor > 0) || math.IsInf(factor, 1) {
		return nil, fmt.Errorf("celegans: SampleWeights: factor must be finite and > 0, got %v", factor)
	}
	n := c.N()
	if n == 0 {
		return &mat.Dense{}, nil
	}
	rng := rand.New(rand.NewPCG(seed, streamWeights))
	w := mat.NewDense(n, n, nil)
	for _, e := range c.EdgeList() {
		v := rng.NormFloat64()
		w.Set(e[0], e[1], v)
		w.Set(e[1], e[0], -v)
	}
	if c.Edges() == 0 {
		return w, nil
	}
	var svd mat.SVD
	if !svd.Factorize(w, mat.SVDNone) {
		return nil, fmt.Errorf("celegans: SampleWeights: SVD failed")
	}
	rho := svd.Values(nil)[0]
	w.Scale(1/(factor*rho), w)
	return w, nil
}

// SimulateWith simulates cfg.Worms worms sharing the weight matrix w (N x N,
// canonical order). Worm j draws, from its own random stream derived from
// seed and j, a uniformly random true permutation, its known neurons (a
// uniformly random subset of observed neurons of the configured size), and
// the trajectory x_0 = e_0, x_t = w x_{t-1} + e_t in canonical order, with
// e_t ~ N(0, NoiseVar I), recorded as y_t = P x_t (see Worm). cfg.RadiusFactor
// is not used. It is an error if the trajectory overflows (w unstable).
func SimulateWith(c *Connectome, w mat.Matrix, cfg SimConfig, seed uint64) (*Simulation, error) {
	if c == nil {
		return nil, fmt.Errorf("celegans: SimulateWith: nil connectome")
	}
	n := c.N()
	if w == nil {
		return nil, fmt.Errorf("celegans: SimulateWith: nil weight matrix")
	}
	if r, cc := w.Dims(); r != n || cc != n {
		return nil, fmt.Errorf("celegans: SimulateWith: W is %d x %d, connectome has %d neurons", r, cc, n)
	}
	if n == 0 {
		return nil, fmt.Errorf("celegans: SimulateWith: connectome has no neurons")
	}
	worms, t, known, eta2, err := cfg.resolve(n)
	if err != nil {
		return nil, fmt.Errorf("celegans: SimulateWith: %w", err)
	}
	// mulVec sets dst = W x.
	var mulVec func(dst, x *mat.VecDense)
	var keep mat.Matrix
	if sw, ok := w.(*SparseWeights); ok {
		for e, v := range sw.vals {
			if !finite(v) {
				return nil, fmt.Errorf("celegans: SimulateWith: W entry %d = %v is not finite", e, v)
			}
		}
		mulVec = func(dst, x *mat.VecDense) { sw.mulVec(dst.RawVector().Data, x.RawVector().Data) }
		keep = sw
	} else {
		wd := mat.DenseCopyOf(w)
		for i := 0; i < n; i++ {
			for j := 0; j < n; j++ {
				if v := wd.At(i, j); !finite(v) {
					return nil, fmt.Errorf("celegans: SimulateWith: W[%d][%d] = %v is not finite", i, j, v)
				}
			}
		}
		mulVec = func(dst, x *mat.VecDense) { dst.MulVec(wd, x) }
		keep = wd
	}
	sim := &Simulation{Connectome: c, W: keep, NoiseVar: eta2, Worms: make([]*Worm, worms)}
	sd := math.Sqrt(eta2)
	for j := range sim.Worms {
		rng := rand.New(rand.NewPCG(seed, streamWorm+uint64(j)))
		p := perm.Random(n, rng)
		kn := rng.Perm(n)[:known]
		sort.Ints(kn)
		y := mat.NewDense(t, n, nil)
		prev := mat.NewVecDense(n, nil)
		cur := mat.NewVecDense(n, nil)
		for step := 0; step < t; step++ {
			if step > 0 {
				mulVec(cur, prev)
			}
			x := cur.RawVector().Data
			for i := range x {
				x[i] += sd * rng.NormFloat64()
			}
			row := y.RawRowView(step)
			for m := range row {
				v := x[p[m]]
				if !finite(v) {
					return nil, fmt.Errorf("celegans: SimulateWith: worm %d diverged at step %d (is W stable?)", j, step)
				}
				row[m] = v
			}
			prev, cur = cur, prev
		}
		sim.Worms[j] = &Worm{Y: y, Perm: p, Known: kn}
	}
	return sim, nil
}

// resolve applies the defaults of cfg and checks it for n neurons.
func (cfg SimConfig) resolve(n int) (worms, t, known int, eta2 float64, err error) {
	worms, t, eta2 = cfg.Worms, cfg.T, cfg.NoiseVar
	if worms == 0 {
		worms = 1
	}
	if t == 0 {
		t = DefaultT
	}
	if eta2 == 0 {
		eta2 = 1
	}
	switch {
	case worms < 0:
		err = fmt.Errorf("worms must be >= 1, got %d", cfg.Worms)
	case t < 2:
		err = fmt.Errorf("T must be >= 2, got %d", cfg.T)
	case !(eta2 > 0) || math.IsInf(eta2, 1):
		err = fmt.Errorf("noise variance must be finite and > 0, got %v", cfg.NoiseVar)
	case cfg.KnownCount != 0 && cfg.KnownFraction != 0:
		err = fmt.Errorf("set KnownCount (%d) or KnownFraction (%v), not both", cfg.KnownCount, cfg.KnownFraction)
	case cfg.KnownCount < 0 || cfg.KnownCount > n:
		err = fmt.Errorf("KnownCount must be in [0, %d], got %d", n, cfg.KnownCount)
	case !(cfg.KnownFraction >= 0 && cfg.KnownFraction <= 1):
		err = fmt.Errorf("KnownFraction must be in [0, 1], got %v", cfg.KnownFraction)
	case cfg.RadiusFactor < 0 || math.IsNaN(cfg.RadiusFactor):
		err = fmt.Errorf("RadiusFactor must be > 0, got %v", cfg.RadiusFactor)
	}
	known = cfg.KnownCount
	if cfg.KnownFraction != 0 {
		known = int(math.Round(cfg.KnownFraction * float64(n)))
	}
	return worms, t, known, eta2, err
}
