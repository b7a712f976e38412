package celegans

import (
	"fmt"
	"math"
	"sort"

	"github.com/permlab/permlab/perm"
)

// PositionMask returns the candidate mask of one worm: observed neuron m
// (row m) may be canonical neuron n (column n) only if
//
//	|Positions[truth[m]] - Positions[n]| < nu,
//
// where the observed neuron's position is that of its true identity (the
// protocol has no noise on positions). The comparison is strict and in
// float64, as in the protocol; because positions are given to two decimals,
// differences that are multiples of 0.01 fall on either side of nu = 0.01k
// by rounding error, and that is what the published candidate counts show.
// Rows of the observed neurons listed in known allow only their true
// identity. Every row allows its true identity (nu > 0), so truth is always a
// perfect matching of the mask.
func PositionMask(c *Connectome, truth perm.Perm, known []int, nu float64) (*perm.Mask, error) {
	if c == nil {
		return nil, fmt.Errorf("celegans: PositionMask: nil connectome")
	}
	n := c.N()
	if len(truth) != n {
		return nil, fmt.Errorf("celegans: PositionMask: permutation has length %d, connectome has %d neurons", len(truth), n)
	}
	if err := truth.Validate(); err != nil {
		return nil, fmt.Errorf("celegans: PositionMask: %w", err)
	}
	if !(nu > 0) {
		return nil, fmt.Errorf("celegans: PositionMask: nu must be > 0, got %v", nu)
	}
	isKnown := make([]bool, n)
	for _, m := range known {
		if m < 0 || m >= n {
			return nil, fmt.Errorf("celegans: PositionMask: known neuron %d out of range [0, %d)", m, n)
		}
		isKnown[m] = true
	}
	mask, err := perm.NewMask(n)
	if err != nil {
		return nil, fmt.Errorf("celegans: PositionMask: %w", err)
	}
	for m := 0; m < n; m++ {
		if isKnown[m] {
			_ = mask.Set(m, truth[m], true)
			continue
		}
		pm := c.Positions[truth[m]]
		for k, pk := range c.Positions {
			if math.Abs(pm-pk) < nu {
				_ = mask.Set(m, k, true)
			}
		}
	}
	return mask, nil
}

// PositionMasks returns the PositionMask of every worm of s.
func (s *Simulation) PositionMasks(nu float64) ([]*perm.Mask, error) {
	out := make([]*perm.Mask, len(s.Worms))
	for j, w := range s.Worms {
		m, err := PositionMask(s.Connectome, w.Perm, w.Known, nu)
		if err != nil {
			return nil, fmt.Errorf("celegans: Simulation.PositionMasks: worm %d: %w", j, err)
		}
		out[j] = m
	}
	return out, nil
}

// MeanCandidates returns the mean number of candidates per row of the
// position constraint with width nu and no known neurons: the mean over
// neurons i of #{n : |Positions[i] - Positions[n]| < nu}. It does not depend
// on the true permutation.
func MeanCandidates(c *Connectome, nu float64) (float64, error) {
	if c == nil {
		return 0, fmt.Errorf("celegans: MeanCandidates: nil connectome")
	}
	if !(nu > 0) {
		return 0, fmt.Errorf("celegans: MeanCandidates: nu must be > 0, got %v", nu)
	}
	n := c.N()
	if n == 0 {
		return 0, nil
	}
	count := 0
	for _, pi := range c.Positions {
		for _, pk := range c.Positions {
			if math.Abs(pi-pk) < nu {
				count++
			}
		}
	}
	return float64(count) / float64(n), nil
}

// widthTol groups position differences closer than this as equal in
// CandidateWidth (positions are given to two decimals; their float64
// differences scatter by about 1e-17).
const widthTol = 1e-9

// CandidateWidth returns a width nu whose position constraint has a mean
// number of candidates (MeanCandidates, no known neurons) as close as
// possible to target, with that mean.
//
// The mean is a step function of nu, so most targets cannot be hit exactly;
// CandidateWidth lists the achievable means exactly instead of bisecting.
// Differences between positions that agree to within 1e-9 are treated as
// equal, so a level never splits pairs at the same nominal distance (unlike
// nu = 0.01 on the two-decimal WormAtlas positions, see PositionMask). The
// returned nu lies halfway between consecutive distinct differences, away
// from rounding trouble. Ties between levels go to the smaller nu.
func CandidateWidth(c *Connectome, target float64) (nu, mean float64, err error) {
	if c == nil {
		return 0, 0, fmt.Errorf("celegans: CandidateWidth: nil connectome")
	}
	n := c.N()
	if n == 0 {
		return 0, 0, fmt.Errorf("celegans: CandidateWidth: connectome has no neurons")
	}
	if !(target >= 1 && target <= float64(n)) {
		return 0, 0, fmt.Errorf("celegans: CandidateWidth: target must be in [1, %d], got %v", n, target)
	}
	d := make([]float64, 0, n*(n-1)/2)
	for i := 0; i < n; i++ {
		for k := i + 1; k < n; k++ {
			d = append(d, math.Abs(c.Positions[i]-c.Positions[k]))
		}
	}
	sort.Float64s(d)
	// One level per group of equal differences d[g:h]: the pairs d[0:h] are
	// inside when nu is above d[h-1] and at most d[h]. Before them, the level
	// of the diagonal alone, unless some positions coincide.
	bestNu, bestMean := math.NaN(), math.NaN()
	consider := func(nu, mean float64) {
		if math.IsNaN(bestNu) || math.Abs(mean-target) < math.Abs(bestMean-target) {
			bestNu, bestMean = nu, mean
		}
	}
	switch {
	case len(d) == 0:
		consider(0.5, 1)
	case d[0] > widthTol:
		consider(d[0]/2, 1)
	}
	for g := 0; g < len(d); {
		h := g
		for h < len(d) && d[h]-d[g] <= widthTol {
			h++
		}
		nuHere := d[h-1] + 0.5
		if h < len(d) {
			nuHere = (d[h-1] + d[h]) / 2
		}
		consider(nuHere, float64(n+2*h)/float64(n))
		g = h
	}
	return bestNu, bestMean, nil
}

// ValidateMask returns an error if the mask cannot be the support of a
// permutation: if some row or column has no allowed entry, or if no perfect
// matching uses only allowed pairs (Hall's condition fails).
func ValidateMask(m *perm.Mask) error {
	if m == nil {
		return fmt.Errorf("celegans: ValidateMask: nil mask")
	}
	n := m.Size()
	rows := make([][]int, n)
	colSeen := make([]bool, n)
	for i := 0; i < n; i++ {
		rows[i] = m.Row(i)
		if len(rows[i]) == 0 {
			return fmt.Errorf("celegans: ValidateMask: row %d has no candidate", i)
		}
		for _, j := range rows[i] {
			colSeen[j] = true
		}
	}
	for j, ok := range colSeen {
		if !ok {
			return fmt.Errorf("celegans: ValidateMask: column %d is no row's candidate", j)
		}
	}
	if size := maxMatching(rows, n); size < n {
		return fmt.Errorf("celegans: ValidateMask: no perfect matching: at most %d of %d rows can be matched", size, n)
	}
	return nil
}

// maxMatching returns the size of a maximum matching of the bipartite graph
// with rows adj (row i may go to the columns adj[i]) and n columns, by
// Hopcroft-Karp: alternate a breadth-first layering from the free rows with
// depth-first searches for vertex-disjoint shortest augmenting paths.
func maxMatching(adj [][]int, n int) int {
	const free = -1
	rowTo := make([]int, len(adj))
	colTo := make([]int, n)
	for i := range rowTo {
		rowTo[i] = free
	}
	for j := range colTo {
		colTo[j] = free
	}
	dist := make([]int, len(adj))
	queue := make([]int, 0, len(adj))
	const inf = math.MaxInt

	bfs := func() bool {
		queue = queue[:0]
		for i := range adj {
			if rowTo[i] == free {
				dist[i] = 0
				queue = append(queue, i)
			} else {
				dist[i] = inf
			}
		}
		found := false
		for q := 0; q < len(queue); q++ {
			i := queue[q]
			for _, j := range adj[i] {
				k := colTo[j]
				if k == free {
					found = true
				} else if dist[k] == inf {
					dist[k] = dist[i] + 1
					queue = append(queue, k)
				}
			}
		}
		return found
	}
	var dfs func(i int) bool
	dfs = func(i int) bool {
		for _, j := range adj[i] {
			k := colTo[j]
			if k == free || (dist[k] == dist[i]+1 && dfs(k)) {
				rowTo[i], colTo[j] = j, i
				return true
			}
		}
		dist[i] = inf
		return false
	}
	size := 0
	for bfs() {
		for i := range adj {
			if rowTo[i] == free && dfs(i) {
				size++
			}
		}
	}
	return size
}
