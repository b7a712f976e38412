package models

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/permlab/permlab/ad"
)

// amortized is a configurable Amortized for checking the contract.
type amortized struct {
	globals, locals []Site
	n               int
}

func (m *amortized) Sites() []Site      { return m.globals }
func (m *amortized) LocalSites() []Site { return m.locals }
func (m *amortized) N() int             { return m.n }
func (m *amortized) Observe(batch []int, _ *rand.Rand) (*ad.Tensor, error) {
	return ad.Zeros(len(batch), 1), nil
}
func (m *amortized) LogLik(t *ad.Tape, z *BatchSample) *ad.Var {
	return t.Const(ad.Zeros(z.K(), z.B()))
}

func TestCheckAmortizedErrors(t *testing.T) {
	cat := &CatSite{Name: "z", D: 2, C: 3}
	normal := Normal{Sigma: 1}
	cases := []struct {
		m    *amortized
		want string
	}{
		{&amortized{locals: []Site{cat}, n: 0}, "N = 0 data points"},
		{&amortized{locals: []Site{cat}, n: -3}, "N = -3 data points"},
		{&amortized{n: 5}, "no local sites"},
		{&amortized{locals: []Site{cat, &CatSite{Name: "z", D: 1, C: 2}}, n: 5}, `site "z" declared twice`},
		{&amortized{globals: []Site{&RealSite{Name: "z", Prior: normal}}, locals: []Site{cat}, n: 5}, `site "z" declared twice`},
		{&amortized{globals: []Site{&CatSite{Name: "g", D: 1, C: 2}}, locals: []Site{cat}, n: 5}, `site "g" has kind *models.CatSite, which cannot be global`},
		{&amortized{globals: []Site{&PermSite{Name: "P", N: 0}}, locals: []Site{cat}, n: 5}, `global sites: models: site "P": N must be >= 1`},
		{&amortized{locals: []Site{&PermSite{Name: "P", N: 3}}, n: 5}, `local site "P" is a permutation site`},
		{&amortized{locals: []Site{nil}, n: 5}, "local site 0 is nil"},
		{&amortized{locals: []Site{&CatSite{D: 1, C: 2}}, n: 5}, "local site 0 has no name"},
		{&amortized{locals: []Site{&CatSite{Name: "z", D: 0, C: 2}}, n: 5}, `site "z": D must be >= 1, got 0`},
		{&amortized{locals: []Site{&CatSite{Name: "z", D: 1, C: 1}}, n: 5}, `site "z": C must be >= 2, got 1`},
		{&amortized{locals: []Site{&CatSite{Name: "z", D: 2, C: 3, PriorLogits: []float64{1, 2, 3, 4}}}, n: 5}, `site "z": 4 prior logits`},
		{&amortized{locals: []Site{&CatSite{Name: "z", D: 1, C: 2, PriorLogits: []float64{0, math.Inf(1)}}}, n: 5}, `site "z": prior logit 1 is +Inf`},
		{&amortized{locals: []Site{&RealSite{Name: "h", Shape: []int{2, 0}, Prior: normal}}, n: 5}, `site "h": shape [2 0]`},
		{&amortized{locals: []Site{&RealSite{Name: "h"}}, n: 5}, `site "h": no prior`},
	}
	for _, c := range cases {
		_, err := CheckAmortized(c.m)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("sites %v / %v, N %d: error %v, want one containing %q", c.m.globals, c.m.locals, c.m.n, err, c.want)
		}
	}
	if _, err := CheckAmortized(nil); err == nil {
		t.Error("nil model accepted")
	}
	spec, err := CheckAmortized(&amortized{globals: []Site{&RealSite{Name: "g", Prior: normal}},
		locals: []Site{cat, &RealSite{Name: "h", Shape: []int{4}, Prior: normal}}, n: 7})
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(spec.Names(), ","); got != "g,z,h" || spec.N != 7 || len(spec.Cats) != 1 || len(spec.Reals) != 1 || !spec.IsLocal("h") || spec.IsLocal("g") {
		t.Errorf("spec: names %s, N %d, %d categorical and %d real local sites", got, spec.N, len(spec.Cats), len(spec.Reals))
	}
}

func TestCatSiteLogPrior(t *testing.T) {
	for _, s := range []*CatSite{
		{Name: "u", D: 2, C: 4},
		{Name: "shared", D: 2, C: 3, PriorLogits: []float64{1, 2, 800}},
		{Name: "each", D: 2, C: 2, PriorLogits: []float64{0, 1, -5, 5}},
	} {
		lp := s.LogPrior()
		for d := range s.D {
			var sum float64
			for c := range s.C {
				sum += math.Exp(lp[d*s.C+c])
				var want float64
				switch len(s.PriorLogits) {
				case 0:
					want = 0
				case s.C:
					want = s.PriorLogits[c] - s.PriorLogits[0]
				default:
					want = s.PriorLogits[d*s.C+c] - s.PriorLogits[d*s.C]
				}
				if got := lp[d*s.C+c] - lp[d*s.C]; math.Abs(got-want) > 1e-12*math.Max(1, math.Abs(want)) {
					t.Errorf("%s: log-ratio of class %d to class 0 is %v, want %v", s.Name, c, got, want)
				}
			}
			if math.Abs(sum-1) > 1e-12 {
				t.Errorf("%s: variable %d has total prior mass %v", s.Name, d, sum)
			}
		}
	}
}

func TestBatchSampleErrors(t *testing.T) {
	spec, err := CheckAmortized(&amortized{
		globals: []Site{&RealSite{Name: "g", Shape: []int{2}, Prior: Normal{Sigma: 1}}, &PermSite{Name: "P", N: 3}},
		locals:  []Site{&CatSite{Name: "z", D: 2, C: 3}, &RealSite{Name: "h", Shape: []int{4}, Prior: Normal{Sigma: 1}}}, n: 10})
	if err != nil {
		t.Fatal(err)
	}
	fresh := func() (*ad.Tape, *BatchSample) {
		tp := ad.NewTape()
		return tp, NewBatchSample(tp, spec, 2, false, []int{4, 1, 7}, tp.Const(ad.Zeros(3, 1)))
	}
	tp, z := fresh()
	z.Set("z", tp.Const(ad.Zeros(2, 3, 2, 3)))
	z.Set("h", tp.Const(ad.Zeros(2, 3, 4)))
	z.Set("g", tp.Const(ad.Zeros(2, 2)))
	z.Set("P", tp.Const(ad.Zeros(2, 1, 3, 3)))
	if tp.Err() != nil {
		t.Fatal(tp.Err())
	}
	if z.K() != 2 || z.B() != 3 || z.Index()[2] != 7 || z.Global() == nil ||
		len(z.Cat("z").Shape()) != 4 || len(z.Real("h").Shape()) != 3 || len(z.Real("g").Shape()) != 2 || len(z.Perm("P").Shape()) != 4 {
		t.Fatal("values read back wrongly")
	}
	if tp.Err() != nil {
		t.Fatal(tp.Err())
	}
	for _, c := range []struct {
		do   func(tp *ad.Tape, z *BatchSample)
		want string
	}{
		{func(tp *ad.Tape, z *BatchSample) { z.Set("zz", tp.Const(ad.Zeros(1))) }, `unknown site "zz"`},
		{func(tp *ad.Tape, z *BatchSample) { z.Set("z", tp.Const(ad.Zeros(2, 3, 6))) }, `local site "z" has shape [2 3 6], want [2 3 2 3]`},
		{func(tp *ad.Tape, z *BatchSample) { z.Set("h", nil) }, `nil value for site "h"`},
		{func(tp *ad.Tape, z *BatchSample) { z.Set("g", tp.Const(ad.Zeros(2, 3))) }, `site "g" has shape [2 3], want [2 2]`},
		{func(_ *ad.Tape, z *BatchSample) { z.Cat("w") }, `unknown site "w"`},
		{func(_ *ad.Tape, z *BatchSample) { z.Cat("h") }, `site "h" is not a categorical site`},
		{func(_ *ad.Tape, z *BatchSample) { z.Real("z") }, `site "z" is not a real site`},
		{func(_ *ad.Tape, z *BatchSample) { z.Perm("z") }, `site "z" is local, not a permutation site`},
		{func(_ *ad.Tape, z *BatchSample) { z.Cat("z") }, `site "z" has no value in this sample`},
		{func(_ *ad.Tape, z *BatchSample) { z.Real("g") }, `site "g" has no value in this sample`},
	} {
		tp, z := fresh()
		c.do(tp, z)
		if err := tp.Err(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("error %v, want one containing %q", err, c.want)
		}
	}
}
