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
//
// Up to candidateWidthExactMax neurons the differences are listed (O(N²)
// memory). Above it CandidateWidth works on the sorted positions in
// O(N log N) time and O(N) memory (see candidateWidthSorted): the level
// just below the target and the one just above are found by bisection on
// nu, with the same meaning; it differs from the listing only where
// differences form chains of steps under 1e-9 longer than 1e-9, which it
// groups as one (the listing groups greedily from the smallest).
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
	if n > candidateWidthExactMax {
		x := append([]float64(nil), c.Positions...)
		sort.Float64s(x)
		nu, mean = candidateWidthSorted(x, target)
		return nu, mean, nil
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

// candidateWidthExactMax is the largest number of neurons for which
// CandidateWidth lists every pair difference (N(N-1)/2 float64s, 16 MB at
// N = 2000).
const candidateWidthExactMax = 2000

// widthWalkMax bounds the steps candidateWidthSorted takes through a chain
// of differences closer than widthTol; past it, the level is cut inside the
// chain, still halfway between two distinct differences.
const widthWalkMax = 1000

// candidateWidthSorted is CandidateWidth on the sorted positions x (n ≥ 1,
// target in [1, n]) in O(n log n) time and O(n) memory.
//
// With d_1 ≤ d_2 ≤ ... the pair differences x_k − x_i (i < k), the mean
// number of candidates at width nu is 1 + 2 #{d < nu} / n, so a target mean
// asks for p* = (target − 1) n / 2 pairs. The k-th smallest difference,
// k = ⌊p*⌋ + 1, is found by bisection over nu (on the bits of the float64,
// at most 64 steps) with #{d ≤ nu} counted by two pointers in O(n); every
// nu up to it gives at most p* pairs, every nu above it more. The closest
// levels are then the cuts just below and just above the group of
// differences around it, the group being extended while consecutive
// distinct differences (found by two pointers as well) are within
// widthTol, with 0, a neuron's difference to itself, at the bottom. Each
// cut is halfway between the distinct differences on either side (the
// largest difference plus 0.5 above the top), and the mean returned is
// counted at the returned nu, so it equals MeanCandidates there.
func candidateWidthSorted(x []float64, target float64) (nu, mean float64) {
	n := len(x)
	level := func(nu float64) float64 {
		return float64(n+2*countDiffs(x, nu, false)) / float64(n)
	}
	if n < 2 {
		return 0.5, 1
	}
	pairs := n * (n - 1) / 2
	k := int((target-1)*float64(n)/2) + 1
	if k > pairs {
		top := x[n-1] - x[0] + 0.5
		return top, level(top)
	}
	dk := kthDiff(x, k)

	// The cut below the group of dk, if there is one.
	lowNu, hasLow := 0.0, true
	for lo, steps := dk, 0; ; steps++ {
		p := diffBelow(x, lo) // p < lo, or p = lo = 0
		if lo-p > widthTol || (steps == widthWalkMax && p > 0) {
			lowNu = (p + lo) / 2
			break
		}
		if p == 0 {
			hasLow = false // the group reaches down to 0
			break
		}
		lo = p
	}
	// The cut above it.
	var highNu float64
	for hi, steps := dk, 0; ; steps++ {
		q, ok := diffAbove(x, hi)
		if !ok {
			highNu = hi + 0.5
			break
		}
		if q-hi > widthTol || steps == widthWalkMax {
			highNu = (hi + q) / 2
			break
		}
		hi = q
	}

	nu, mean = highNu, level(highNu)
	if hasLow {
		// Ties go to the smaller nu, as in the listing.
		if m := level(lowNu); math.Abs(m-target) <= math.Abs(mean-target) {
			nu, mean = lowNu, m
		}
	}
	return nu, mean
}

// countDiffs returns the number of pairs i < k of the sorted x with
// x[k] − x[i] < t, or ≤ t if orEqual, by two pointers: in float64 as in
// exact arithmetic the difference grows with k and shrinks as i grows
// (rounding is monotone), so the first k past t never moves back.
func countDiffs(x []float64, t float64, orEqual bool) int {
	n := len(x)
	count, k := 0, 0
	for i := 0; i < n; i++ {
		k = max(k, i+1)
		for k < n && (x[k]-x[i] < t || orEqual && x[k]-x[i] == t) {
			k++
		}
		count += k - i - 1
	}
	return count
}

// kthDiff returns the k-th smallest pair difference of the sorted x
// (1 ≤ k ≤ n(n-1)/2), the smallest t with countDiffs(x, t, true) ≥ k, by
// bisection over the bit patterns of non-negative float64s, which are
// ordered as the values.
func kthDiff(x []float64, k int) float64 {
	if countDiffs(x, 0, true) >= k {
		return 0
	}
	lo, hi := uint64(0), math.Float64bits(x[len(x)-1]-x[0])
	for hi-lo > 1 {
		mid := lo + (hi-lo)/2
		if countDiffs(x, math.Float64frombits(mid), true) >= k {
			hi = mid
		} else {
			lo = mid
		}
	}
	return math.Float64frombits(hi)
}

// diffBelow returns the largest pair difference of the sorted x below v,
// or 0 (a neuron's difference to itself) if there is none.
func diffBelow(x []float64, v float64) float64 {
	n := len(x)
	best, k := 0.0, 0
	for i := 0; i < n; i++ {
		k = max(k, i+1)
		for k < n && x[k]-x[i] < v {
			k++
		}
		if k-1 > i {
			best = max(best, x[k-1]-x[i])
		}
	}
	return best
}

// diffAbove returns the smallest pair difference of the sorted x above v,
// and false if there is none.
func diffAbove(x []float64, v float64) (float64, bool) {
	n := len(x)
	best, k := math.Inf(1), 0
	for i := 0; i < n; i++ {
		k = max(k, i+1)
		for k < n && x[k]-x[i] <= v {
			k++
		}
		if k < n {
			best = min(best, x[k]-x[i])
		}
	}
	return best, !math.IsInf(best, 1)
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
