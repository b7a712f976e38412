// Command tutorial is the model of the README's tutorial, written only
// against permlab's public API: two point clouds in the plane related by an
// unknown linear map and an unknown correspondence,
//
//	y_i = A r_{σ(i)} + ε_i,   ε_i ~ N(0, s² I₂),   A_de ~ N(0, 1),
//
// with σ uniform over the permutations of n points. The program simulates
// data, fits the model with Gumbel-Sinkhorn variational inference
// (vi.FitModel, whose answer is checked by the model's exact log joint) and
// with MCMC (mcmc.RunModel), calibrates VI's marginals by short MCMC chains
// started from its polished states, prints the three posteriors and
// compares them: whether the modes agree, the largest total-variation
// distance between row marginals, the recovered A and the wall times.
//
//	go run ./examples/tutorial
//	go run ./examples/tutorial -n 8 -s 0.05 -seed 3
//	go run ./examples/tutorial -temperatures 1   # MCMC without replica exchange: see the R̂ warning
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"time"

	"gonum.org/v1/gonum/mat"

	"github.com/permlab/permlab/ad"
	"github.com/permlab/permlab/internal/cli"
	"github.com/permlab/permlab/mcmc"
	"github.com/permlab/permlab/models"
	"github.com/permlab/permlab/vi"
)

// Alignment is the model: Ref holds the reference points r_j and Obs the
// observed points y_i, one per row of an n×2 tensor, and S is the noise
// standard deviation s.
type Alignment struct {
	Ref, Obs *ad.Tensor
	S        float64
}

// Sites declares the latent variables: the correspondence σ as a permutation
// site "P" (uniform prior by default) and the map A as a 2×2 real site "A".
func (m *Alignment) Sites() []models.Site {
	return []models.Site{
		&models.PermSite{Name: "P", N: m.Ref.Shape[0]},
		&models.RealSite{Name: "A", Shape: []int{2, 2}, Prior: models.Normal{Mu: 0, Sigma: 1}},
	}
}

// LogLik returns log p(Y | P, A) for each of the K samples. Row i of P·R is
// Σ_j P_ij r_j, which is r_{σ(i)} when P is the permutation matrix of σ, so
// the prediction P·R·Aᵀ has rows A r_{σ(i)}.
func (m *Alignment) LogLik(t *ad.Tape, z *models.Sample) *ad.Var {
	k, n := z.K(), m.Ref.Shape[0]
	p := ad.Reshape(z.Perm("P"), k, n, n)                                      // (K, n, n)
	pred := ad.MatMul(ad.MatMul(p, t.Const(m.Ref)), ad.Transpose(z.Real("A"))) // (K, n, 2)
	sq := ad.SumAxis(ad.Reshape(ad.Square(ad.Sub(pred, t.Const(m.Obs))), k, 2*n), 1)
	return ad.AddConst(ad.Scale(sq, -0.5/(m.S*m.S)), -float64(n)*math.Log(2*math.Pi*m.S*m.S))
}

// Simulate draws a problem: n reference points uniform on the square [−1, 1]²,
// a uniform random σ, and y_i = A r_{σ(i)} + ε_i for the given A (row-major).
// It returns the model and the true σ.
func Simulate(n int, a [4]float64, s float64, seed uint64) (*Alignment, []int) {
	rng := rand.New(rand.NewPCG(seed, 1))
	ref, obs := ad.Zeros(n, 2), ad.Zeros(n, 2)
	for i := range ref.Data {
		ref.Data[i] = 2*rng.Float64() - 1
	}
	sigma := rng.Perm(n)
	for i, j := range sigma {
		r := ref.Data[2*j : 2*j+2]
		obs.Data[2*i] = a[0]*r[0] + a[1]*r[1] + s*rng.NormFloat64()
		obs.Data[2*i+1] = a[2]*r[0] + a[3]*r[1] + s*rng.NormFloat64()
	}
	return &Alignment{Ref: ref, Obs: obs, S: s}, sigma
}

// trueA is a rotation by 30 degrees scaled by 1.2.
var trueA = [4]float64{
	1.2 * math.Cos(math.Pi/6), -1.2 * math.Sin(math.Pi/6),
	1.2 * math.Sin(math.Pi/6), 1.2 * math.Cos(math.Pi/6),
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run is the command; it returns the exit status: 2 for a bad command line
// (nothing done), 1 for a failure.
func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("tutorial", flag.ContinueOnError)
	fs.SetOutput(stderr)
	n := fs.Int("n", 6, "number of points, at least 2")
	s := fs.Float64("s", 0.1, "observation noise standard deviation, > 0")
	seed := fs.Uint64("seed", 1, "seed of the data and of both engines")
	temps := fs.Int("temperatures", 0, "MCMC tempered replicas per chain; 0 for the default, 1 to turn replica exchange off")
	err := cli.Parse(fs, args)
	if err == nil {
		var c cli.Check
		c.AtLeast("-n", *n, 2)
		c.Positive("-s", *s)
		c.AtLeast("-temperatures", *temps, 0)
		err = c.Err()
	}
	if err == nil {
		err = fit(stdout, *n, *s, *seed, *temps)
	}
	return cli.Exit(stderr, "tutorial", err)
}

// fit simulates the data, fits it by both engines and calibrates VI's
// marginals, printing the posteriors and their comparison to w.
func fit(w io.Writer, n int, s float64, seed uint64, temps int) error {
	if n < 2 || !(s > 0) || temps < 0 {
		return fmt.Errorf("need n >= 2, s > 0 and temperatures >= 0, got n = %d, s = %v, temperatures = %d", n, s, temps)
	}
	m, truth := Simulate(n, trueA, s, seed)
	fmt.Fprintf(w, "%d points, noise s = %g, true σ = %v, true A = %.3f\n\n", n, s, truth, trueA)

	ctx := context.Background()
	t0 := time.Now()
	q, err := vi.FitModel(ctx, m, vi.ModelOptions{Seed: seed})
	if err != nil {
		return err
	}
	tVI := time.Since(t0)
	t0 = time.Now()
	mc, err := mcmc.RunModel(ctx, m, mcmc.ModelOptions{Seed: seed, Temperatures: temps})
	if err != nil {
		return err
	}
	tMC := time.Since(t0)
	// Calibrated marginals: MCMC chains started from VI's polished states,
	// with a short burn-in and 4 temperatures (1 with -temperatures 1).
	t0 = time.Now()
	co := mcmc.CalibrationOptions(q.Polish.States(4), seed)
	if temps == 1 {
		co.Temperatures = 1
	}
	cal, err := mcmc.RunModel(ctx, m, co)
	if err != nil {
		return err
	}
	tCal := time.Since(t0)
	cal.Posterior.Method = "MCMC from VI's polished states"
	for _, post := range []*models.Posterior{mc.Posterior, q.Posterior, cal.Posterior} {
		fmt.Fprint(w, post.Summary())
		fmt.Fprintln(w, "  marginals P(observation i came from reference point j), rows i, columns j:")
		marg := post.Perms["P"].Marginal(0)
		for i := range n {
			fmt.Fprintf(w, "   %.2f\n", mat.Row(nil, i, marg))
		}
		fmt.Fprintln(w)
	}

	pv, pm, pc := q.Posterior.Perms["P"], mc.Posterior.Perms["P"], cal.Posterior.Perms["P"]
	tv, err := pv.MaxRowTV(pm)
	if err != nil {
		return err
	}
	tvCal, err := pc.MaxRowTV(pm)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "modes agree: %v (truth %v)\n", pv.Mode[0].Equal(pm.Mode[0]), truth)
	fmt.Fprintf(w, "VI's check: the answer came from %s, log posterior J = %.2f, %.2f nats above the fit's own mode\n", q.Polish.From, q.Polish.LogJoint, q.Polish.Gain)
	fmt.Fprintf(w, "max row TV to MCMC: VI %.3f, calibrated %.3f\n", tv, tvCal)
	fmt.Fprintf(w, "A: VI %.3f, MCMC %.3f, truth %.3f\n", q.Posterior.Reals["A"].Mean, mc.Posterior.Reals["A"].Mean, trueA)
	fmt.Fprintf(w, "wall time: VI %v, MCMC %v, calibration %v\n", tVI.Round(10*time.Millisecond), tMC.Round(10*time.Millisecond), tCal.Round(10*time.Millisecond))
	return nil
}
