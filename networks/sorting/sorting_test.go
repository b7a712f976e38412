package sorting

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/permlab/permlab/ad"
	"github.com/permlab/permlab/perm"
	"github.com/permlab/permlab/relax"
)

// tinyConfig is a network small and quick enough for unit tests.
func tinyConfig(n int, v Variant) Config {
	c := DefaultConfig(n)
	c.Steps = 300
	c.Variant = v
	return c
}

// trained returns a network of cfg after training.
func trained(t *testing.T, cfg Config) *Network {
	t.Helper()
	net, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := net.Train(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	return net
}

// TestEquivariance checks that permuting the input numbers permutes the
// rows of the logits in the same way, and that the predicted positions
// follow the numbers, for both variants.
func TestEquivariance(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	for _, v := range []Variant{Paper, Standardized} {
		t.Run(v.String(), func(t *testing.T) {
			cfg := tinyConfig(7, v)
			cfg.Steps = 20 // weights away from their symmetric initial values
			net := trained(t, cfg)
			list := make([]float64, cfg.N)
			for i := range list {
				list[i] = 3 + 2*rng.Float64()
			}
			q := perm.Random(cfg.N, rng)
			shuffled, err := q.Apply(list) // shuffled[i] = list[q[i]]
			if err != nil {
				t.Fatal(err)
			}
			g, err := net.Logits(list)
			if err != nil {
				t.Fatal(err)
			}
			gq, err := net.Logits(shuffled)
			if err != nil {
				t.Fatal(err)
			}
			for i := range cfg.N {
				for j := range cfg.N {
					// Exact: the same arithmetic on the same number, and the
					// variant's minimum and range do not depend on the order.
					if got, want := gq.At(i, j), g.At(q[i], j); got != want {
						t.Fatalf("g(Qx)[%d][%d] = %v, want g(x)[%d][%d] = %v", i, j, got, q[i], j, want)
					}
				}
			}
			ps, err := net.Sort([][]float64{list, shuffled})
			if err != nil {
				t.Fatal(err)
			}
			for i := range cfg.N {
				if ps[1][i] != ps[0][q[i]] {
					t.Fatalf("position of shuffled[%d] = %d, want that of list[%d] = %d", i, ps[1][i], q[i], ps[0][q[i]])
				}
			}
		})
	}
}

// TestStandardizedAffineInvariant checks that the standardized network gives
// the same logits for a list and its image under an increasing affine map.
func TestStandardizedAffineInvariant(t *testing.T) {
	net := trained(t, Config{N: 4, Hidden: 4, Steps: 5, Batch: 2, Samples: 1, Iters: 3, Tau: 1, LR: 0.1, LREnd: 0.1, Noise: 1, Seed: 3, Variant: Standardized})
	list := []float64{0.5, 0.25, 1, 0}         // already 0..1: the transform is exact
	moved := []float64{1002, 1001, 1004, 1000} // 1000 + 4·list, exact in float64
	g, err := net.Logits(list)
	if err != nil {
		t.Fatal(err)
	}
	gm, err := net.Logits(moved)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(g.RawMatrix().Data, gm.RawMatrix().Data) {
		t.Errorf("logits differ:\n%v\n%v", g.RawMatrix().Data, gm.RawMatrix().Data)
	}
}

// TestLearnsToSort trains a small network on n = 5 for a few seconds and
// requires every one of 1000 test lists to be sorted correctly.
func TestLearnsToSort(t *testing.T) {
	for _, v := range []Variant{Paper, Standardized} {
		t.Run(v.String(), func(t *testing.T) {
			net := trained(t, tinyConfig(5, v))
			m, err := Evaluate(net, 0, 1, 1000, 11)
			if err != nil {
				t.Fatal(err)
			}
			if m.Lists != 1000 || m.Low != 0 || m.High != 1 {
				t.Errorf("metrics describe %d lists of U(%v, %v), want 1000 of U(0, 1)", m.Lists, m.Low, m.High)
			}
			if m.PropAnyWrong != 0 || m.PropWrong != 0 || m.KendallTau != 1 {
				t.Errorf("after %d steps: %+v, want every list sorted", net.StepsDone(), m)
			}
		})
	}
}

// TestUntrainedIsWrong makes sure the metrics can fail: an untrained network
// does not sort.
func TestUntrainedIsWrong(t *testing.T) {
	cfg := tinyConfig(10, Paper)
	cfg.Steps = 0
	net := trained(t, cfg)
	m, err := Evaluate(net, 0, 1, 200, 11)
	if err != nil {
		t.Fatal(err)
	}
	if m.PropAnyWrong < 0.9 || m.PropWrong < 0.3 || m.KendallTau > 0.9 {
		t.Errorf("untrained network: %+v, want mostly wrong", m)
	}
}

// TestSoftSortOrientation checks the loss's orientation on a tiny example:
// with logits that put number i at position σ(i), Pᵀx̃ computed as in
// training is the sorted list, and the matching operator returns σ.
func TestSoftSortOrientation(t *testing.T) {
	list := []float64{0.7, 0.1, 0.4}
	sigma := Ranks(list) // {2, 0, 1}
	if want := (perm.Perm{2, 0, 1}); !sigma.Equal(want) {
		t.Fatalf("Ranks(%v) = %v, want %v", list, sigma, want)
	}
	n := len(list)
	g := make([]float64, n*n)
	for i := range n {
		g[i*n+sigma[i]] = 50 // a near-hard Sinkhorn matrix
	}
	tp := ad.NewTape()
	gt, _ := ad.NewTensor([]int{1, n, n}, g)
	xt, _ := ad.NewTensor([]int{1, 1, n}, list)
	p := relax.SinkhornVar(tp.Const(gt), 1, 10)
	soft := ad.MatMul(tp.Const(xt), p).Value()
	if err := tp.Err(); err != nil {
		t.Fatal(err)
	}
	sorted := slices.Sorted(slices.Values(list))
	for j := range n {
		if math.Abs(soft[j]-sorted[j]) > 1e-12 {
			t.Fatalf("soft sort = %v, want %v", soft, sorted)
		}
	}
	inv, _ := sigma.Inverse()
	if got, _ := inv.Apply(list); !slices.Equal(got, sorted) {
		t.Errorf("σ⁻¹ applied to the list = %v, want %v", got, sorted)
	}
}

// TestReproducible checks that the same seed gives the same weights, with
// one goroutine or several, and a different seed different ones.
func TestReproducible(t *testing.T) {
	cfg := tinyConfig(6, Paper)
	cfg.Steps = 30
	a := trained(t, cfg)
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	b := trained(t, cfg)
	cfg.Seed++
	c := trained(t, cfg)
	for k, p := range a.Params() {
		if !slices.Equal(p.Value.Data, b.Params()[k].Value.Data) {
			t.Fatalf("%s differs between two runs with the same seed", p.Name)
		}
	}
	if slices.Equal(a.Params()[0].Value.Data, c.Params()[0].Value.Data) {
		t.Error("different seeds gave the same weights")
	}
}

// TestTrainResumes checks that a run cancelled midway and resumed ends with
// the same weights as an uninterrupted one.
func TestTrainResumes(t *testing.T) {
	cfg := tinyConfig(5, Standardized)
	cfg.Steps = 40
	whole := trained(t, cfg)
	net, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	err = net.Train(ctx, func(step int, _ float64) {
		if step == 17 {
			cancel()
		}
	})
	if !errors.Is(err, context.Canceled) || net.StepsDone() != 17 {
		t.Fatalf("cancelled Train: err %v after %d steps, want context.Canceled after 17", err, net.StepsDone())
	}
	if err := net.Train(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	for k, p := range whole.Params() {
		if !slices.Equal(p.Value.Data, net.Params()[k].Value.Data) {
			t.Fatalf("%s differs after resuming", p.Name)
		}
	}
}

// TestSaveLoad checks that a loaded network predicts what the saved one did,
// and that a file of another variant or size is refused.
func TestSaveLoad(t *testing.T) {
	cfg := tinyConfig(6, Paper)
	cfg.Steps = 50
	net := trained(t, cfg)
	path := filepath.Join(t.TempDir(), "net.params")
	if err := net.Save(path); err != nil {
		t.Fatal(err)
	}
	lists, err := TestLists(cfg.N, 50, 0, 1, 5)
	if err != nil {
		t.Fatal(err)
	}
	want, err := net.Sort(lists)
	if err != nil {
		t.Fatal(err)
	}
	fresh := cfg
	fresh.Steps, fresh.Seed = 0, 99
	loaded, err := New(fresh)
	if err != nil {
		t.Fatal(err)
	}
	if err := loaded.Load(path); err != nil {
		t.Fatal(err)
	}
	got, err := loaded.Sort(lists)
	if err != nil {
		t.Fatal(err)
	}
	for k := range want {
		if !got[k].Equal(want[k]) {
			t.Fatalf("list %d: loaded network predicts %v, saved one %v", k, got[k], want[k])
		}
	}
	for _, other := range []Config{tinyConfig(6, Standardized), tinyConfig(7, Paper)} {
		o, err := New(other)
		if err != nil {
			t.Fatal(err)
		}
		if err := o.Load(path); err == nil {
			t.Errorf("Load into n=%d %v network: no error", other.N, other.Variant)
		}
	}
}

func TestBadInput(t *testing.T) {
	net := trained(t, Config{N: 3, Hidden: 2, Steps: 0, Batch: 1, Samples: 1, Iters: 1, Tau: 1, LR: 0.1, LREnd: 0.1, Seed: 1})
	for _, tc := range []struct {
		name string
		list []float64
		want string
	}{
		{"NaN", []float64{1, math.NaN(), 2}, "not finite"},
		{"Inf", []float64{1, math.Inf(-1), 2}, "not finite"},
		{"short", []float64{1, 2}, "has 2 numbers"},
		{"long", []float64{1, 2, 3, 4}, "has 4 numbers"},
	} {
		if _, err := net.Sort([][]float64{{1, 2, 3}, tc.list}); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Sort with a %s list: error %v, want one containing %q", tc.name, err, tc.want)
		}
		if _, err := net.Logits(tc.list); err == nil {
			t.Errorf("Logits with a %s list: no error", tc.name)
		}
	}
	if _, err := Evaluate(net, 1, 1, 10, 1); err == nil {
		t.Error("Evaluate on U(1, 1): no error")
	}
	if _, err := Evaluate(net, 0, 1, 0, 1); err == nil {
		t.Error("Evaluate on 0 lists: no error")
	}
	if _, err := Evaluate(nil, 0, 1, 10, 1); err == nil {
		t.Error("Evaluate with a nil network: no error")
	}
}

func TestConfigValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(*Config)
		want string
	}{
		{"n=1", func(c *Config) { c.N = 1 }, "N must be >= 2, got 1"},
		{"n=0", func(c *Config) { c.N = 0 }, "N must be >= 2"},
		{"hidden", func(c *Config) { c.Hidden = 0 }, "Hidden"},
		{"steps", func(c *Config) { c.Steps = -1 }, "Steps"},
		{"batch", func(c *Config) { c.Batch = 0 }, "Batch"},
		{"samples", func(c *Config) { c.Samples = 0 }, "Samples"},
		{"iters", func(c *Config) { c.Iters = 0 }, "Iters"},
		{"tau", func(c *Config) { c.Tau = 0 }, "Tau"},
		{"tau NaN", func(c *Config) { c.Tau = math.NaN() }, "Tau"},
		{"lr", func(c *Config) { c.LR = -1 }, "LR must"},
		{"lr end", func(c *Config) { c.LREnd = 1 }, "LREnd 1 must be <= LR"},
		{"tau end", func(c *Config) { c.TauEnd = 2 }, "TauEnd 2 must be <= Tau"},
		{"tau end negative", func(c *Config) { c.TauEnd = -0.1 }, "TauEnd must be finite and > 0"},
		{"noise", func(c *Config) { c.Noise = -1 }, "Noise"},
		{"variant", func(c *Config) { c.Variant = 7 }, "Variant(7)"},
	} {
		c := DefaultConfig(5)
		tc.edit(&c)
		if _, err := New(c); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: New error %v, want one containing %q", tc.name, err, tc.want)
		}
	}
	if err := DefaultConfig(5).Validate(); err != nil {
		t.Errorf("DefaultConfig(5): %v", err)
	}
}

// TestTauAt checks the temperature schedule: constant without TauEnd, and
// otherwise geometric from Tau at the first step to TauEnd at the last,
// with the geometric mean halfway.
func TestTauAt(t *testing.T) {
	c := Config{Steps: 101, Tau: 1}
	for _, k := range []int{0, 50, 100} {
		if got := c.TauAt(k); got != 1 {
			t.Errorf("TauEnd 0: TauAt(%d) = %v, want 1", k, got)
		}
	}
	c.Tau, c.TauEnd = 2, 0.02
	for _, tc := range []struct {
		k    int
		want float64
	}{{-1, 2}, {0, 2}, {50, 0.2}, {100, 0.02}, {200, 0.02}} {
		if got := c.TauAt(tc.k); math.Abs(got-tc.want) > 1e-12*tc.want {
			t.Errorf("TauAt(%d) = %v, want %v", tc.k, got, tc.want)
		}
	}
	for k := 1; k < c.Steps; k++ {
		if c.TauAt(k) >= c.TauAt(k-1) {
			t.Fatalf("TauAt(%d) = %v is not below TauAt(%d) = %v", k, c.TauAt(k), k-1, c.TauAt(k-1))
		}
	}
}

// TestTauEndTrains checks that the annealed temperature reaches the loss:
// a run with TauEnd differs from one without after the first step (which
// both take at Tau) and is reproducible.
func TestTauEndTrains(t *testing.T) {
	cfg := Config{N: 4, Hidden: 4, Steps: 3, Batch: 2, Samples: 1, Iters: 3, Tau: 1, LR: 0.1, LREnd: 0.1, Noise: 1, Seed: 3}
	weights := func(c Config, steps int) []float64 {
		c.Steps = steps
		net := trained(t, c)
		var w []float64
		for _, p := range net.Params() {
			w = append(w, p.Value.Data...)
		}
		return w
	}
	annealed := cfg
	annealed.TauEnd = 0.1
	// One step of a one-step run is taken at Tau whatever TauEnd is.
	if !slices.Equal(weights(cfg, 1), weights(annealed, 1)) {
		t.Error("one step: TauEnd changed the first step, taken at Tau")
	}
	a, b := weights(annealed, 3), weights(cfg, 3)
	if slices.Equal(a, b) {
		t.Error("TauEnd 0.1 trained the same weights as constant Tau")
	}
	if !slices.Equal(a, weights(annealed, 3)) {
		t.Error("annealed training is not reproducible")
	}
}

func TestParseVariant(t *testing.T) {
	for _, v := range []Variant{Paper, Standardized} {
		got, err := ParseVariant(v.String())
		if err != nil || got != v {
			t.Errorf("ParseVariant(%q) = %v, %v", v.String(), got, err)
		}
	}
	if _, err := ParseVariant("other"); err == nil {
		t.Error("ParseVariant(other): no error")
	}
}

// TestTestLists checks the paired draws: the same seed gives the same u for
// every interval.
func TestTestLists(t *testing.T) {
	a, err := TestLists(4, 3, 0, 1, 9)
	if err != nil {
		t.Fatal(err)
	}
	b, err := TestLists(4, 3, 10, 12, 9)
	if err != nil {
		t.Fatal(err)
	}
	for k := range a {
		for i := range a[k] {
			if a[k][i] < 0 || a[k][i] >= 1 {
				t.Fatalf("U(0,1) draw %v", a[k][i])
			}
			if want := 10 + 2*a[k][i]; math.Abs(b[k][i]-want) > 1e-14 {
				t.Fatalf("U(10,12) list %d[%d] = %v, want %v", k, i, b[k][i], want)
			}
		}
	}
	for _, bad := range [][2]float64{{1, 0}, {0, math.Inf(1)}, {math.NaN(), 1}} {
		if _, err := TestLists(4, 3, bad[0], bad[1], 1); err == nil {
			t.Errorf("TestLists U(%v, %v): no error", bad[0], bad[1])
		}
	}
}

func TestRanks(t *testing.T) {
	for _, tc := range []struct {
		list []float64
		want perm.Perm
	}{
		{[]float64{3, 1, 2}, perm.Perm{2, 0, 1}},
		{[]float64{-1, 5, 5, 0}, perm.Perm{0, 2, 3, 1}},
		{nil, perm.Perm{}},
	} {
		if got := Ranks(tc.list); !got.Equal(tc.want) {
			t.Errorf("Ranks(%v) = %v, want %v", tc.list, got, tc.want)
		}
	}
}

func TestTransformRangeOverflow(t *testing.T) {
	dst := make([]float64, 3)
	Standardized.transform(dst, []float64{-math.MaxFloat64, 0, math.MaxFloat64})
	if want := []float64{0, 0.5, 1}; !slices.Equal(dst, want) {
		t.Errorf("transform = %v, want %v", dst, want)
	}
	Standardized.transform(dst, []float64{2, 2, 2})
	if want := []float64{0, 0, 0}; !slices.Equal(dst, want) {
		t.Errorf("transform of a constant list = %v, want %v", dst, want)
	}
}

// TestLossGradient compares the gradient of the training loss with respect
// to every weight with central finite differences, on one fixed batch of
// lists and noise.
func TestLossGradient(t *testing.T) {
	for _, v := range []Variant{Paper, Standardized} {
		cfg := Config{N: 4, Hidden: 3, Steps: 1, Batch: 2, Samples: 2, Iters: 5, Tau: 0.7, LR: 0.1, LREnd: 0.1, Noise: 0.5, Seed: 4, Variant: v}
		net, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		net.draw()
		// Random biases move the hidden units off their ReLU kinks (with
		// zero biases the list minimum, 0 for Standardized, sits on one).
		rng := rand.New(rand.NewPCG(1, 2))
		for _, p := range net.params {
			for k := range p.Value.Data {
				p.Value.Data[k] += 0.3 * rng.NormFloat64()
			}
		}
		tp := ad.NewTape()
		value := func() float64 {
			tp.Reset()
			return net.loss(tp).Item()
		}
		for _, p := range net.params {
			p.ZeroGrad()
		}
		tp.Reset()
		if err := tp.Backward(net.loss(tp)); err != nil {
			t.Fatal(err)
		}
		// Central differences with h = 1e-6 have error O(h²·f''') plus
		// rounding O(ε·f/h) ≈ 1e-10 here; 1e-6 leaves room for both.
		const h, tol = 1e-6, 1e-6
		for _, p := range net.params {
			for k := range p.Value.Data {
				x := p.Value.Data[k]
				p.Value.Data[k] = x + h
				up := value()
				p.Value.Data[k] = x - h
				down := value()
				p.Value.Data[k] = x
				num := (up - down) / (2 * h)
				if got := p.Grad.Data[k]; math.Abs(got-num) > tol*math.Max(1, math.Abs(num)) {
					t.Errorf("%v: ∂loss/∂%s[%d] = %v, finite difference %v", v, p.Name, k, got, num)
				}
			}
		}
	}
}
