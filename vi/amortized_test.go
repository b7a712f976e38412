package vi

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/permlab/permlab/ad"
	"github.com/permlab/permlab/ad/optim"
	"github.com/permlab/permlab/internal/longtest"
	"github.com/permlab/permlab/models"
	"github.com/permlab/permlab/nn"
	"github.com/permlab/permlab/nn/train"
)

// protoMix is a mixture of binary prototypes: data point n has one
// categorical latent z_n of C classes (uniform prior) and P Bernoulli
// pixels with logits W[z_n] + b (+ a global per-pixel shift when global is
// set, a real site with a N(0, 1) prior). W and b are the model's own
// parameters.
type protoMix struct {
	x       []float64 // n×p
	n, p, c int
	w, b    *ad.Param
	global  bool
	onObs   func() // called by every Observe, if set
	delay   time.Duration
}

// newProtoMix draws n points from c random prototypes of p pixels, each
// pixel flipped with probability 0.05; data are fixed by dataSeed, the
// model's initial weights by 1.
func newProtoMix(n, p, c int, dataSeed uint64) *protoMix {
	rng := rand.New(rand.NewPCG(dataSeed, 3))
	protos := make([][]bool, c)
	for k := range protos {
		protos[k] = make([]bool, p)
		for j := range p {
			protos[k][j] = rng.IntN(2) == 1
		}
	}
	m := &protoMix{x: make([]float64, n*p), n: n, p: p, c: c}
	for i := range n {
		k := rng.IntN(c)
		for j := range p {
			on := protos[k][j] != (rng.Float64() < 0.05)
			if on {
				m.x[i*p+j] = 1
			}
		}
	}
	init := rand.New(rand.NewPCG(1, 1))
	w := ad.Zeros(c, p)
	for i := range w.Data {
		w.Data[i] = 0.1 * init.NormFloat64()
	}
	m.w, m.b = ad.NewParam("W", w), ad.NewParam("b", ad.Zeros(p))
	return m
}

func (m *protoMix) Sites() []models.Site {
	if !m.global {
		return nil
	}
	return []models.Site{&models.RealSite{Name: "shift", Shape: []int{m.p}, Prior: models.Normal{Sigma: 1}}}
}

func (m *protoMix) LocalSites() []models.Site {
	return []models.Site{&models.CatSite{Name: "z", D: 1, C: m.c}}
}

func (m *protoMix) N() int { return m.n }

func (m *protoMix) Params() []*ad.Param { return []*ad.Param{m.w, m.b} }

func (m *protoMix) Observe(batch []int, _ *rand.Rand) (*ad.Tensor, error) {
	if m.onObs != nil {
		m.onObs()
	}
	if m.delay > 0 {
		time.Sleep(m.delay)
	}
	x := ad.Zeros(len(batch), m.p)
	for r, i := range batch {
		copy(x.Data[r*m.p:(r+1)*m.p], m.x[i*m.p:(i+1)*m.p])
	}
	return x, nil
}

func (m *protoMix) LogLik(t *ad.Tape, z *models.BatchSample) *ad.Var {
	k, b := z.K(), z.B()
	y := ad.Reshape(z.Cat("z"), k*b, m.c)
	logits := ad.Add(ad.MatMul(y, t.Param(m.w)), t.Param(m.b)) // (K·B, P)
	logits = ad.Reshape(logits, k, b, m.p)
	if m.global {
		ones := t.Const(onesTensor(k, b, 1))
		shift := ad.Reshape(z.Real("shift"), k, 1, m.p)
		logits = ad.Add(logits, ad.MatMul(ones, shift))
	}
	x := ad.Zeros(k, b, m.p)
	for s := range k {
		copy(x.Data[s*b*m.p:], z.X().Value())
	}
	return ad.Neg(nn.BinaryCrossEntropyWithLogits(logits, t.Const(x)))
}

func onesTensor(shape ...int) *ad.Tensor {
	x := ad.Zeros(shape...)
	for i := range x.Data {
		x.Data[i] = 1
	}
	return x
}

// denseEncoder is a one-layer encoder from P pixels to the C logits of z.
type denseEncoder struct{ d *nn.Dense }

func newDenseEncoder(p, c int) *denseEncoder {
	d, err := nn.NewDense(rand.New(rand.NewPCG(2, 2)), "enc", p, c, nn.GlorotUniform)
	if err != nil {
		panic(err)
	}
	return &denseEncoder{d}
}

func (e *denseEncoder) Params() []*ad.Param { return e.d.Params() }

func (e *denseEncoder) Encode(t *ad.Tape, x *ad.Var) (map[string]LocalParams, error) {
	return map[string]LocalParams{"z": {Logits: e.d.Forward(t, x)}}, nil
}

func protoOptions(e CatEstimator) AmortizedOptions {
	return AmortizedOptions{BatchSize: 20, Epochs: 20, Seed: 7, LR: optim.Geometric{Start: 0.1, End: 0.01, Steps: 20 * 8}, Estimator: e,
		Tau: optim.Geometric{Start: 1, End: 0.5, Steps: 20 * 8}}
}

// TestFitAmortizedHeldOutELBORises fits the prototype mixture with each
// estimator and checks that the held-out negative ELBO falls clearly.
func TestFitAmortizedHeldOutELBORises(t *testing.T) {
	for _, e := range []CatEstimator{GumbelSoftmax, Concrete, GumbelSpace} {
		t.Run(e.String(), func(t *testing.T) {
			m := newProtoMix(200, 12, 3, 1) // 160 to train, 40 held out
			train, held := m.split(160)
			o := protoOptions(e)
			o.Validation = held
			res, err := FitAmortized(context.Background(), train, newDenseEncoder(12, 3), o)
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Epochs) != o.Epochs || res.Steps != o.Epochs*8 {
				t.Fatalf("%d epochs, %d steps; want %d and %d", len(res.Epochs), res.Steps, o.Epochs, o.Epochs*8)
			}
			first, last := res.Epochs[0], res.Epochs[len(res.Epochs)-1]
			t.Logf("held-out −ELBO per point: %.3f ± %.3f after epoch 0, %.3f ± %.3f after epoch %d",
				first.HeldOut, first.HeldOutStdErr, last.HeldOut, last.HeldOutStdErr, last.Epoch)
			// 12 pixels: about 8.3 nats at chance, about 3.3 + log 3 with the
			// prototypes known and 5% flips.
			if !(last.HeldOut < first.HeldOut-2) || !(last.HeldOut < 5) {
				t.Errorf("held-out −ELBO went from %.3f to %.3f; want a fall of over 2 nats, below 5", first.HeldOut, last.HeldOut)
			}
			if math.Abs(last.Tau-0.5) > 0.02 {
				t.Errorf("final temperature %v, want about 0.5", last.Tau)
			}
		})
	}
}

// split returns the first k points and the rest as two models sharing the
// parameters.
func (m *protoMix) split(k int) (*protoMix, *protoMix) {
	a, b := *m, *m
	a.x, a.n = m.x[:k*m.p], k
	b.x, b.n = m.x[k*m.p:], m.n-k
	return &a, &b
}

// peakEncoder gives logits ±60 from a hash of each observation, so that
// relaxed samples are one-hot to machine precision whatever the noise: the
// ELBO of a data point then does not depend on its position in a batch.
type peakEncoder struct{ c int }

func (peakEncoder) Params() []*ad.Param { return nil }

func (e peakEncoder) Encode(t *ad.Tape, x *ad.Var) (map[string]LocalParams, error) {
	b, p := x.Shape()[0], x.Shape()[1]
	l := ad.Zeros(b, e.c)
	for i := range b {
		h := 0
		for j, v := range x.Value()[i*p : (i+1)*p] {
			if v == 1 {
				h += j
			}
		}
		for c := range e.c {
			l.Data[i*e.c+c] = -60
		}
		l.Data[i*e.c+h%e.c] = 60
	}
	// A differentiable function of a constant, so that the closed-form
	// KLs see logits of the usual kind.
	return map[string]LocalParams{"z": {Logits: ad.Scale(t.Const(l), 1)}}, nil
}

// TestMinibatchELBOScaling checks that averaging the scaled minibatch ELBO
// (N/|B|) Σ_{n∈B} ELBO_n − KL_global over the batches of an epoch gives
// the full-data ELBO, with the global site's KL counted once.
func TestMinibatchELBOScaling(t *testing.T) {
	for _, e := range []CatEstimator{GumbelSoftmax, GumbelSpace} {
		m := newProtoMix(48, 12, 3, 4)
		m.global = true
		task, err := NewAmortizedTask(m, peakEncoder{3}, AmortizedOptions{BatchSize: 12, Epochs: 1, Seed: 3, Estimator: e, K: 2})
		if err != nil {
			t.Fatal(err)
		}
		elbo := func(batch []int) float64 {
			tp := ad.NewTape()
			// The same stream for every batch: the global site's sample,
			// drawn first, is the same.
			loss, err := task.Loss(tp, batch, train.StepRand(9, 0))
			if err != nil {
				t.Fatal(err)
			}
			return -float64(m.n) * loss.Item()
		}
		all := make([]int, m.n)
		for i := range all {
			all[i] = i
		}
		full := elbo(all)
		order := train.EpochRand(3, 0).Perm(m.n)
		var mean float64
		for k := 0; k < m.n; k += 12 {
			mean += elbo(order[k:k+12]) / 4
		}
		if math.Abs(mean-full) > 1e-9*math.Abs(full) {
			t.Errorf("%v: mean scaled minibatch ELBO %.12g, full-data ELBO %.12g", e, mean, full)
		}
		// A single batch is not the full ELBO (the test can fail).
		if b := elbo(order[:12]); math.Abs(b-full) < 1e-3 {
			t.Errorf("%v: one batch gives the full ELBO %.6g: the data do not differ", e, b)
		}
	}
}

// fitProto runs the prototype fit with options o on fresh parameters.
func fitProto(ctx context.Context, o AmortizedOptions, hook func(*protoMix)) (*AmortizedResult, []*ad.Param, error) {
	m := newProtoMix(100, 12, 3, 1)
	m.global = true
	if hook != nil {
		hook(m)
	}
	enc := newDenseEncoder(12, 3)
	res, err := FitAmortized(ctx, m, enc, o)
	var params []*ad.Param
	params = append(append(params, enc.Params()...), m.Params()...)
	if res != nil {
		for _, g := range res.Globals {
			params = append(params, g.Params()...)
		}
	}
	return res, params, err
}

func sameParams(t *testing.T, got, want []*ad.Param) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%d parameters, want %d", len(got), len(want))
	}
	for i := range got {
		if !slices.Equal(got[i].Value.Data, want[i].Value.Data) {
			t.Fatalf("parameter %q differs from the uninterrupted run's", got[i].Name)
		}
	}
}

// TestAmortizedResumeAfterCancel stops a fit mid-epoch, resumes it from its
// checkpoint with fresh parameters, and compares with an uninterrupted fit.
func TestAmortizedResumeAfterCancel(t *testing.T) {
	o := protoOptions(Concrete)
	o.Epochs = 3
	wantRes, want, err := fitProto(context.Background(), o, nil)
	if err != nil {
		t.Fatal(err)
	}
	o.Checkpoint = filepath.Join(t.TempDir(), "ck")
	o.CheckpointEvery = 4
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	const stopAt = 7 // epoch 1, step 2 of 5
	part, _, err := fitProto(ctx, o, func(m *protoMix) {
		calls := 0
		m.onObs = func() {
			if calls++; calls == stopAt {
				cancel() // seen before step stopAt
			}
		}
	})
	if !errors.Is(err, context.Canceled) || part.Steps != stopAt {
		t.Fatalf("err %v after %d steps, want context.Canceled after %d", err, part.Steps, stopAt)
	}
	got, params, err := fitProto(context.Background(), o, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got.Resumed != stopAt {
		t.Fatalf("resumed from step %d, want %d", got.Resumed, stopAt)
	}
	sameParams(t, params, want)
	if !slices.Equal(got.Loss, wantRes.Loss) {
		t.Error("the loss history differs from the uninterrupted run's")
	}
	if len(got.Epochs) != o.Epochs || !math.IsNaN(got.Epochs[0].HeldOut) {
		t.Errorf("epochs %+v: want %d, the first without evaluation", got.Epochs, o.Epochs)
	}
}

// TestAmortizedResumeAfterKill kills a fitting process with SIGKILL at an
// arbitrary moment and checks that resuming from whatever checkpoint it
// left ends with the parameters of an uninterrupted fit.
func TestAmortizedResumeAfterKill(t *testing.T) {
	longtest.Skip(t, "starts a subprocess")
	ck := filepath.Join(t.TempDir(), "ck")
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperAmortizedFit$")
	cmd.Env = append(os.Environ(), "VI_AMORTIZED_HELPER_CHECKPOINT="+ck)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	var first time.Time
	for {
		st, err := os.Stat(ck)
		if err == nil && first.IsZero() {
			first = st.ModTime()
		}
		if err == nil && st.ModTime() != first {
			break // the second checkpoint
		}
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			t.Fatal("the helper wrote no second checkpoint in 30 s")
		}
		time.Sleep(time.Millisecond)
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()

	o := helperAmortizedOptions(ck)
	got, params, err := fitProto(context.Background(), o, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got.Resumed == 0 || got.Resumed == got.Steps {
		t.Fatalf("resumed from step %d of %d: the kill did not interrupt the fit", got.Resumed, got.Steps)
	}
	o.Checkpoint = ""
	_, want, err := fitProto(context.Background(), o, nil)
	if err != nil {
		t.Fatal(err)
	}
	sameParams(t, params, want)
}

func helperAmortizedOptions(ck string) AmortizedOptions {
	o := protoOptions(GumbelSpace)
	o.Epochs = 60
	o.Checkpoint = ck
	o.CheckpointEvery = 3
	return o
}

// TestHelperAmortizedFit is the process TestAmortizedResumeAfterKill kills;
// it does nothing unless run by that test.
func TestHelperAmortizedFit(t *testing.T) {
	ck := os.Getenv("VI_AMORTIZED_HELPER_CHECKPOINT")
	if ck == "" {
		t.Skip("helper process for TestAmortizedResumeAfterKill")
	}
	_, _, _ = fitProto(context.Background(), helperAmortizedOptions(ck), func(m *protoMix) { m.delay = time.Millisecond })
}

// TestFitAmortizedGOMAXPROCS checks that the fitted parameters do not depend
// on GOMAXPROCS.
func TestFitAmortizedGOMAXPROCS(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	o := protoOptions(GumbelSoftmax)
	o.Epochs = 2
	var runs [][]*ad.Param
	for _, procs := range []int{1, 2} {
		runtime.GOMAXPROCS(procs)
		_, p, err := fitProto(context.Background(), o, nil)
		if err != nil {
			t.Fatal(err)
		}
		runs = append(runs, p)
	}
	sameParams(t, runs[1], runs[0])
}

// badModel wraps protoMix with overridable sites, size and observations.
type badModel struct {
	*protoMix
	globals, locals []models.Site
	n               int
	obs             func(batch []int) (*ad.Tensor, error)
	siteName        string
}

func (m *badModel) Sites() []models.Site      { return m.globals }
func (m *badModel) LocalSites() []models.Site { return m.locals }
func (m *badModel) N() int                    { return m.n }
func (m *badModel) Observe(batch []int, rng *rand.Rand) (*ad.Tensor, error) {
	if m.obs != nil {
		return m.obs(batch)
	}
	return m.protoMix.Observe(batch, rng)
}
func (m *badModel) LogLik(t *ad.Tape, z *models.BatchSample) *ad.Var {
	if m.siteName != "" {
		z.Cat(m.siteName)
	}
	return m.protoMix.LogLik(t, z)
}

// TestAmortizedErrors checks that bad models, encoders and data are errors
// that name the problem.
func TestAmortizedErrors(t *testing.T) {
	base := newProtoMix(30, 12, 3, 1)
	z := &models.CatSite{Name: "z", D: 1, C: 3}
	cases := []struct {
		name string
		m    *badModel
		enc  Encoder
		want string
	}{
		{"N = 0", &badModel{protoMix: base, locals: []models.Site{z}, n: 0}, nil, "N = 0"},
		{"no local sites", &badModel{protoMix: base, n: 30}, nil, "no local sites"},
		{"duplicate", &badModel{protoMix: base, n: 30, locals: []models.Site{z},
			globals: []models.Site{&models.RealSite{Name: "z", Prior: models.Normal{Sigma: 1}}}}, nil, `"z" declared twice`},
		{"C < 2", &badModel{protoMix: base, n: 30, locals: []models.Site{&models.CatSite{Name: "z", D: 1, C: 1}}}, nil, `site "z": C must be >= 2`},
		{"D < 1", &badModel{protoMix: base, n: 30, locals: []models.Site{&models.CatSite{Name: "z", C: 3}}}, nil, `site "z": D must be >= 1`},
		{"prior logits", &badModel{protoMix: base, n: 30, locals: []models.Site{&models.CatSite{Name: "z", D: 1, C: 3, PriorLogits: []float64{1, 2}}}}, nil, `site "z": 2 prior logits`},
		{"NaN prior", &badModel{protoMix: base, n: 30, locals: []models.Site{&models.CatSite{Name: "z", D: 1, C: 3, PriorLogits: []float64{1, math.NaN(), 0}}}}, nil, `prior logit 1 is NaN`},
		{"real shape", &badModel{protoMix: base, n: 30, locals: []models.Site{z, &models.RealSite{Name: "h", Shape: []int{0}, Prior: models.Normal{Sigma: 1}}}}, nil, `site "h": shape [0]`},
		{"local perm", &badModel{protoMix: base, n: 30, locals: []models.Site{&models.PermSite{Name: "P", N: 3}}}, nil, `local site "P" is a permutation site`},
		{"missing encoder site", &badModel{protoMix: base, n: 30, locals: []models.Site{z, &models.CatSite{Name: "w", D: 2, C: 2}}}, nil, `no parameters for local site "w"`},
		{"unknown site in LogLik", &badModel{protoMix: base, n: 30, locals: []models.Site{z}, siteName: "zz"}, nil, `unknown site "zz"`},
		{"wrong encoder shape", &badModel{protoMix: base, n: 30, locals: []models.Site{&models.CatSite{Name: "z", D: 2, C: 3}}}, nil, `Logits for local site "z" have shape [20 3]`},
		{"NaN in a batch", &badModel{protoMix: base, n: 30, locals: []models.Site{z}, obs: func(b []int) (*ad.Tensor, error) {
			x, _ := base.Observe(b, nil)
			x.Data[2*12+5] = math.NaN()
			return x, nil
		}}, nil, "entry 5, is NaN"},
		{"wrong input size", &badModel{protoMix: base, n: 30, locals: []models.Site{z}, obs: func(b []int) (*ad.Tensor, error) {
			return ad.Zeros(len(b)-1, 12), nil
		}}, nil, "Observe returned shape [19 12] for a batch of 20"},
	}
	for _, c := range cases {
		enc := c.enc
		if enc == nil {
			enc = newDenseEncoder(12, 3)
		}
		_, err := FitAmortized(context.Background(), c.m, enc, AmortizedOptions{BatchSize: 20, Epochs: 1, Seed: 1})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one containing %q", c.name, err, c.want)
		}
	}
	// The NaN error names the data point: the third of the first batch.
	nan := cases[len(cases)-2].m
	_, err := FitAmortized(context.Background(), nan, newDenseEncoder(12, 3), AmortizedOptions{BatchSize: 20, Epochs: 1, Seed: 1})
	if want := train.EpochRand(1, 0).Perm(30)[2]; err == nil || !strings.Contains(err.Error(), "data point "+itoa(want)+",") {
		t.Errorf("NaN error %v does not name data point %d", err, want)
	}
	for _, o := range []AmortizedOptions{{Epochs: 1}, {BatchSize: 1}, {BatchSize: 1, Epochs: 1, K: -1}, {BatchSize: 1, Epochs: 1, Estimator: 3}} {
		if _, err := FitAmortized(context.Background(), base, newDenseEncoder(12, 3), o); err == nil {
			t.Errorf("options %+v accepted", o)
		}
	}
	other := newProtoMix(10, 12, 3, 2) // its own W and b
	if _, err := FitAmortized(context.Background(), base, newDenseEncoder(12, 3), AmortizedOptions{BatchSize: 5, Epochs: 1, Validation: other}); err == nil || !strings.Contains(err.Error(), "share the model's own parameters") {
		t.Errorf("a validation model with other parameters: error %v", err)
	}
}

func itoa(i int) string {
	if i < 10 {
		return string(rune('0' + i))
	}
	return itoa(i/10) + string(rune('0'+i%10))
}

// TestCatDivergenceGradients checks the gradients of the divergence terms
// of the three estimators, with and without prior logits, by finite
// differences, and that of the local real site's KL.
func TestCatDivergenceGradients(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 5))
	l := ad.Zeros(2, 3, 4)
	g := ad.Zeros(2, 2, 3, 4) // K = 2 samples
	for i := range l.Data {
		l.Data[i] = rng.NormFloat64()
	}
	for i := range g.Data {
		g.Data[i] = -math.Log(-math.Log(rng.Float64()))
	}
	for _, prior := range [][]float64{nil, {0.5, -1, 0, 2}} {
		s := &models.CatSite{Name: "z", D: 3, C: 4, PriorLogits: prior}
		for _, e := range []CatEstimator{GumbelSoftmax, Concrete, GumbelSpace} {
			err := ad.CheckGradient(func(tp *ad.Tape, xs []*ad.Var) *ad.Var {
				u := ad.Scale(ad.Add(xs[0], tp.Const(g)), 1/0.7)
				return catDivergence(tp, e, s, xs[0], u, 2, 0.7, 0.4)
			}, l)
			if err != nil {
				t.Errorf("%v, prior %v: %v", e, prior, err)
			}
		}
	}
	for _, prior := range []models.RealPrior{models.Normal{Mu: 0.3, Sigma: 2}, logisticPrior{}} {
		s := &models.RealSite{Name: "h", Shape: []int{3}, Prior: prior}
		loc, ls := ad.Zeros(2, 3), ad.Zeros(2, 3)
		for i := range loc.Data {
			loc.Data[i], ls.Data[i] = rng.NormFloat64(), 0.3*rng.NormFloat64()
		}
		err := ad.CheckGradient(func(tp *ad.Tape, xs []*ad.Var) *ad.Var {
			z, kl := realLocal(tp, s, LocalParams{Loc: xs[0], LogScale: xs[1]}, 2, rand.New(rand.NewPCG(1, 2)))
			return ad.Add(ad.Sum(kl), ad.Sum(ad.Square(z)))
		}, loc, ls)
		if err != nil {
			t.Errorf("real site, prior %v: %v", prior, err)
		}
	}
}

// TestCatDivergenceExported checks that CatDivergence takes logits of
// shape (B, D, C) or (B, D·C) and samples of any shape of K·B·D·C values,
// inferring K, and gives the divergence of the fit's code path, and that it
// rejects bad arguments with errors naming them.
func TestCatDivergenceExported(t *testing.T) {
	rng := rand.New(rand.NewPCG(6, 6))
	l := ad.Zeros(2, 3, 4)
	g := ad.Zeros(2, 2, 3, 4)
	for i := range l.Data {
		l.Data[i] = rng.NormFloat64()
	}
	for i := range g.Data {
		g.Data[i] = -math.Log(-math.Log(rng.Float64()))
	}
	s := &models.CatSite{Name: "z", D: 3, C: 4, PriorLogits: []float64{0.5, -1, 0, 2}}
	for _, e := range []CatEstimator{GumbelSoftmax, Concrete, GumbelSpace} {
		tp := ad.NewTape()
		lv := tp.Const(l)
		u := ad.Scale(ad.Add(lv, tp.Const(g)), 1/0.7)
		want := catDivergence(tp, e, s, lv, u, 2, 0.7, 0.4).Item()
		got, err := CatDivergence(tp, e, s, ad.Reshape(lv, 2, 12), ad.Reshape(u, 4, 12), 0.7, 0.4)
		if err != nil {
			t.Fatal(err)
		}
		if math.Float64bits(got.Item()) != math.Float64bits(want) {
			t.Errorf("%v: CatDivergence %.17g, the fit's %.17g", e, got.Item(), want)
		}
		// K = 1: samples of the logits' shape.
		err = ad.CheckGradient(func(tp *ad.Tape, xs []*ad.Var) *ad.Var {
			u := ad.Scale(ad.Add(xs[0], tp.Const(&ad.Tensor{Shape: []int{2, 3, 4}, Data: g.Data[:24]})), 1/0.7)
			d, err := CatDivergence(tp, e, s, xs[0], u, 0.7, 0.4)
			if err != nil {
				tp.Fail(err)
				return tp.ConstScalar(math.NaN())
			}
			return d
		}, l)
		if err != nil {
			t.Errorf("%v: %v", e, err)
		}
	}
	tp := ad.NewTape()
	lv, uv := tp.Const(l), tp.Const(g)
	for _, c := range []struct {
		name      string
		e         CatEstimator
		s         *models.CatSite
		l, u      *ad.Var
		tau, taup float64
		want      string
	}{
		{"estimator", CatEstimator(7), s, lv, uv, 1, 1, "unknown CatEstimator(7)"},
		{"one class", GumbelSoftmax, &models.CatSite{Name: "z", D: 12, C: 1}, lv, uv, 1, 1, "C >= 2"},
		{"prior logits", GumbelSoftmax, &models.CatSite{Name: "z", D: 3, C: 4, PriorLogits: []float64{1, 2}}, lv, uv, 1, 1, "2 prior logits"},
		{"NaN prior logit", GumbelSoftmax, &models.CatSite{Name: "z", D: 3, C: 4, PriorLogits: []float64{1, 2, math.NaN(), 0}}, lv, uv, 1, 1, "prior logit 2 is NaN"},
		{"logits", Concrete, &models.CatSite{Name: "z", D: 2, C: 4}, lv, uv, 1, 1, "want (B, 2, 4)"},
		{"samples", Concrete, s, lv, tp.Const(ad.Zeros(5, 4)), 1, 1, "samples of shape [5 4]"},
		{"τ", GumbelSpace, s, lv, uv, 0, 1, "positive and finite"},
		{"τ_prior", GumbelSpace, s, lv, uv, 1, math.Inf(1), "positive and finite"},
		{"nil", GumbelSpace, nil, lv, uv, 1, 1, "nil"},
	} {
		if _, err := CatDivergence(tp, c.e, c.s, c.l, c.u, c.tau, c.taup); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one containing %q", c.name, err, c.want)
		}
	}
}

// TestGumbelSpaceKLWithPriorLogits checks the shifted closed-form KL of
// the Gumbel-space estimator with prior logits against a Monte Carlo
// estimate of E_q[log q(u) − log p(u)].
func TestGumbelSpaceKLWithPriorLogits(t *testing.T) {
	const tau, tauP = 0.6, 1.3
	l := []float64{0.4, -1.2, 2}
	l0 := []float64{1, 0, -0.5}
	s := &models.CatSite{Name: "z", D: 1, C: 3, PriorLogits: l0}
	tp := ad.NewTape()
	lv := tp.Const(&ad.Tensor{Shape: []int{1, 1, 3}, Data: l})
	kl := catDivergence(tp, GumbelSpace, s, lv, lv, 1, tau, tauP).Item()
	// log density of Gumbel(μ, β) at u: −log β − w − e^{−w}, w = (u − μ)/β.
	logGumbel := func(u, mu, beta float64) float64 {
		w := (u - mu) / beta
		return -math.Log(beta) - w - math.Exp(-w)
	}
	rng := rand.New(rand.NewPCG(8, 8))
	const n = 400000
	var sum, sq float64
	for range n {
		var r float64
		for c := range 3 {
			u := (l[c] - math.Log(-math.Log(rng.Float64()))) / tau
			r += logGumbel(u, l[c]/tau, 1/tau) - logGumbel(u, l0[c]/tauP, 1/tauP)
		}
		sum += r
		sq += r * r
	}
	mean := sum / n
	se := math.Sqrt((sq/n - mean*mean) / n)
	if math.Abs(mean-kl) > 4*se {
		t.Errorf("closed-form KL %.5f, Monte Carlo %.5f ± %.5f", kl, mean, se)
	}
}

// TestEvalAmortized checks the evaluation's determinism and its checks of
// global guides.
func TestEvalAmortized(t *testing.T) {
	m := newProtoMix(50, 12, 3, 1)
	enc := newDenseEncoder(12, 3)
	a, err := EvalAmortized(m, enc, EvalOptions{BatchSize: 16, Seed: 4})
	if err != nil {
		t.Fatal(err)
	}
	b, err := EvalAmortized(m, enc, EvalOptions{BatchSize: 7, Seed: 4})
	if err != nil {
		t.Fatal(err)
	}
	if a.N != 50 || !(a.NegELBO > 0) || !(a.StdErr > 0) {
		t.Errorf("eval %+v", a)
	}
	if math.Abs(a.NegELBO-b.NegELBO) > 1e-12*a.NegELBO {
		// With K = 1 the noise is drawn in data-point order whatever the
		// batch size.
		t.Errorf("batch sizes 16 and 7 give %v and %v", a.NegELBO, b.NegELBO)
	}
	c, err := EvalAmortized(m, enc, EvalOptions{BatchSize: 16, K: 50, Seed: 4})
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(c.NegELBO-a.NegELBO) > 4*a.StdErr {
		t.Errorf("K = 50 gives %v, K = 1 %v ± %v", c.NegELBO, a.NegELBO, a.StdErr)
	}
	m.global = true
	if _, err := EvalAmortized(m, enc, EvalOptions{}); err == nil || !strings.Contains(err.Error(), "0 global guides given") {
		t.Errorf("missing global guides: error %v", err)
	}
}

// logisticPrior has independent standard logistic coordinates, log p(x) =
// −x − 2 log(1 + e^{−x}): a real prior without the closed-form KL.
type logisticPrior struct{}

func (logisticPrior) Validate() error { return nil }

func (logisticPrior) LogProb(x []float64) float64 {
	var s float64
	for _, v := range x {
		s += -v - 2*math.Log1p(math.Exp(-v))
	}
	return s
}

func (logisticPrior) LogProbVar(x *ad.Var) *ad.Var {
	k := x.Shape()[0]
	lp := ad.Sub(ad.Neg(x), ad.Scale(ad.Softplus(ad.Neg(x)), 2))
	return ad.SumAxis(ad.Reshape(lp, k, -1), 1)
}

func (logisticPrior) Rand(x []float64, rng *rand.Rand) {
	for i := range x {
		u := rng.Float64()
		x[i] = math.Log(u / (1 - u))
	}
}

func (logisticPrior) String() string { return "Logistic(0, 1)" }

// permMix adds a global permutation site to protoMix: every data point's
// log-likelihood gains Σ_ij P_ij R_ij, which favours the permutation
// (2, 0, 1).
type permMix struct{ *protoMix }

var permReward = &ad.Tensor{Shape: []int{3, 3}, Data: []float64{0, 0, 1, 1, 0, 0, 0, 1, 0}}

func (m permMix) Sites() []models.Site { return []models.Site{&models.PermSite{Name: "P", N: 3}} }

func (m permMix) LogLik(t *ad.Tape, z *models.BatchSample) *ad.Var {
	k := z.K()
	bonus := ad.SumAxis(ad.Reshape(ad.Mul(ad.Reshape(z.Perm("P"), k, 3, 3), t.Const(permReward)), k, 9), 1)
	return ad.Add(m.protoMix.LogLik(t, z), ad.Reshape(bonus, k, 1))
}

// TestFitAmortizedGlobalPerm fits a model with a global permutation site:
// it gets a Gumbel-Sinkhorn guide, trained with the encoder, which finds
// the favoured permutation, and the evaluation takes the fitted guide.
func TestFitAmortizedGlobalPerm(t *testing.T) {
	m := permMix{newProtoMix(60, 12, 3, 1)}
	enc := newDenseEncoder(12, 3)
	o := protoOptions(GumbelSoftmax)
	o.Epochs, o.LR = 20, optim.Constant(0.1)
	res, err := FitAmortized(context.Background(), m, enc, o)
	if err != nil {
		t.Fatal(err)
	}
	gs, ok := res.Globals[0].(*GumbelSinkhorn)
	if len(res.Globals) != 1 || !ok {
		t.Fatalf("global guides %v, want one *GumbelSinkhorn", res.Globals)
	}
	// The mode M(X) maximises Σ_i X[i][σ(i)] (logits matter up to row and
	// column shifts only): it must be (2, 0, 1), by a clear margin.
	x := gs.Logits(0)
	score := func(p []int) float64 { return x.At(0, p[0]) + x.At(1, p[1]) + x.At(2, p[2]) }
	best := score([]int{2, 0, 1})
	for _, p := range [][]int{{0, 1, 2}, {0, 2, 1}, {1, 0, 2}, {1, 2, 0}, {2, 1, 0}} {
		if !(score(p) < best-1) {
			t.Errorf("permutation %v scores %.3f, (2, 0, 1) %.3f", p, score(p), best)
		}
	}
	if _, err := EvalAmortized(m, enc, EvalOptions{Globals: res.Globals, Step: res.Steps - 1}); err != nil {
		t.Error(err)
	}
}
