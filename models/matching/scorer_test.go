package matching

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/permlab/permlab/ad"
	"github.com/permlab/permlab/models"
	"github.com/permlab/permlab/perm"
)

// hiddenRegression is a Regression without its Collapser, so that a Scorer
// must integrate β itself.
type hiddenRegression struct{ r *Regression }

func (h hiddenRegression) Sites() []models.Site                        { return h.r.Sites() }
func (h hiddenRegression) LogLik(t *ad.Tape, z *models.Sample) *ad.Var { return h.r.LogLik(t, z) }
func (h hiddenRegression) LogLikState(s *models.State) (float64, error) {
	return h.r.LogLikState(s)
}

// TestScorerIntegratesLikeTheCollapser: β enters linearly with Gaussian
// noise, so Laplace's approximation (d = 5) and quadrature (d = 2) are both
// exact, and the Scorer's J must equal the collapsed likelihood log p(y | σ)
// for any σ.
func TestScorerIntegratesLikeTheCollapser(t *testing.T) {
	for _, tc := range []struct {
		d    int
		kind string
	}{{2, "quadrature"}, {5, "Laplace"}} {
		r, err := GenerateRegression(RegressionConfig{N: 8, D: tc.d, S: 0.3, Seed: 3})
		require.NoError(t, err)
		sc, err := models.NewScorer(hiddenRegression{r})
		require.NoError(t, err)
		require.Equal(t, tc.kind, sc.Integration())
		rng := rand.New(rand.NewPCG(1, 2))
		for range 5 {
			s := &models.State{Perms: map[string][]perm.Perm{Site: {perm.Random(8, rng)}}, Reals: map[string][]float64{BetaSite: make([]float64, tc.d)}}
			want, err := r.CollapsedLogLik(s)
			require.NoError(t, err)
			got, err := sc.LogJoint(s)
			require.NoError(t, err)
			require.InDelta(t, want, got, 1e-6, "d = %d", tc.d)
		}
	}
}
