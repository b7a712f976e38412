package nn

import (
	"math"
	"slices"

	"github.com/permlab/permlab/ad"
	"github.com/permlab/permlab/internal/f64"
)

// CrossEntropy returns the mean softmax cross-entropy of logits (N, C)
// against integer labels in [0, C):
//
//	L = (1/N) Σ_n [ log Σ_c exp(z_nc) − z_n,y_n ],
//
// computed from the log-sum-exp shifted by the row maximum, so no term
// overflows. Its gradient is ∂L/∂z_nc = (softmax(z_n)_c − [c = y_n]) / N.
func CrossEntropy(logits *ad.Var, labels []int) *ad.Var {
	if logits == nil {
		return nil
	}
	t := logits.Tape()
	if !ready(t, logits) {
		return dead(t)
	}
	sh := logits.Shape()
	if len(sh) != 2 || sh[0] < 1 || sh[1] < 1 {
		return fail(t, "CrossEntropy: want logits of shape (N, C) with N, C >= 1, got %v", sh)
	}
	n, c := sh[0], sh[1]
	if len(labels) != n {
		return fail(t, "CrossEntropy: %d labels for %d rows of logits", len(labels), n)
	}
	for i, y := range labels {
		if y < 0 || y >= c {
			return fail(t, "CrossEntropy: label %d of row %d is outside [0, %d)", y, i, c)
		}
	}
	z := logits.Value()
	// p holds softmax(z) for the adjoint.
	p := t.Alloc(n * c)
	loss := 0.0
	for i := range n {
		row, pi := z[i*c:(i+1)*c], p[i*c:(i+1)*c]
		m := slices.Max(row)
		s := 0.0
		for j, v := range row {
			e := math.Exp(v - m)
			pi[j] = e
			s += e
		}
		for j := range pi {
			pi[j] /= s
		}
		loss += m + math.Log(s) - row[labels[i]]
	}
	out := t.Alloc(1)
	out[0] = loss / float64(n)
	lab := slices.Clone(labels)
	return t.Custom(nil, out, []*ad.Var{logits}, func(g []float64, gIn [][]float64) {
		gz := gIn[0]
		if gz == nil {
			return
		}
		s := g[0] / float64(n)
		for i := range n {
			for j := range c {
				gz[i*c+j] += s * p[i*c+j]
			}
			gz[i*c+lab[i]] -= s
		}
	})
}

// BinaryCrossEntropyWithLogits returns, for logits x and targets y in [0, 1]
// of the same shape (…, D), the Bernoulli negative log-likelihood summed
// over the last axis, one value per row (shape (…), e.g. (N) for (N, D)):
//
//	ℓ = Σ_d [ max(x_d, 0) − x_d·y_d + log(1 + exp(−|x_d|)) ],
//
// the stable form of −y log σ(x) − (1−y) log(1−σ(x)). Gradients flow to
// both: ∂ℓ/∂x_d = σ(x_d) − y_d and ∂ℓ/∂y_d = −x_d. The sum, not the mean,
// is what a VAE needs per example; average it with ad.Mean.
func BinaryCrossEntropyWithLogits(logits, targets *ad.Var) *ad.Var {
	if logits == nil || targets == nil {
		if logits != nil {
			return fail(logits.Tape(), "BinaryCrossEntropyWithLogits: nil targets")
		}
		if targets != nil {
			return fail(targets.Tape(), "BinaryCrossEntropyWithLogits: nil logits")
		}
		return nil
	}
	t := logits.Tape()
	if !ready(t, logits) || !ready(t, targets) {
		return dead(t)
	}
	sh := logits.Shape()
	if len(sh) == 0 || !slices.Equal(sh, targets.Shape()) {
		return fail(t, "BinaryCrossEntropyWithLogits: want logits and targets of the same shape (…, D), got %v and %v", sh, targets.Shape())
	}
	d := sh[len(sh)-1]
	x, y := logits.Value(), targets.Value()
	rows := 0
	if d > 0 {
		rows = len(x) / d
	} else {
		rows, _ = sizeOf(sh[:len(sh)-1])
	}
	out := t.Alloc(rows)
	// e[k] = exp(−|x[k]|) serves the loss and, in the backward pass, the
	// sigmoid (σ(v) = 1/(1+e) for v ≥ 0, e/(1+e) below): the same bits as
	// sigmoid, one exponential per entry instead of two. Rows are
	// independent and each is summed in order, so splitting them across
	// goroutines does not change a bit.
	// f64.Exp and f64.Log1p give math.Exp's and math.Log1p's bits, four
	// entries at a time where the CPU allows.
	e, lp := t.AllocRaw(len(x)), t.AllocRaw(len(x)) // lp: log1p(e)
	byRows(rows, d, func(r0, r1 int) {
		for r := r0; r < r1; r++ {
			xr, yr, er, lp := x[r*d:(r+1)*d], y[r*d:(r+1)*d], e[r*d:(r+1)*d], lp[r*d:(r+1)*d]
			for k, v := range xr {
				er[k] = -math.Abs(v)
			}
			f64.Exp(er, er)
			f64.Log1p(lp, er)
			s := 0.0
			for k, v := range xr {
				s += max(v, 0) - v*yr[k] + lp[k]
			}
			out[r] = s
		}
	})
	return t.Custom(sh[:len(sh)-1], out, []*ad.Var{logits, targets}, func(g []float64, gIn [][]float64) {
		gx, gy := gIn[0], gIn[1]
		byRows(rows, d, func(r0, r1 int) {
			for r := r0; r < r1; r++ {
				gr, lo, hi := g[r], r*d, (r+1)*d
				if gx != nil {
					// gx += gr·(σ(x) − y), σ from e as in the forward pass.
					f64.AddLogisticGrad(gx[lo:hi], gr, x[lo:hi], e[lo:hi], y[lo:hi])
				}
				if gy != nil {
					for k := lo; k < hi; k++ {
						gy[k] -= gr * x[k]
					}
				}
			}
		})
	})
}

// byRows calls f on contiguous ranges of rows [r0, r1) that cover 0 … rows−1,
// in parallel when the rows hold enough values (rows × d) to pay for it.
// f must write only to its own rows.
func byRows(rows, d int, f func(r0, r1 int)) {
	const minValues = 1 << 14
	if rows*d < minValues || rows < 2 {
		f(0, rows)
		return
	}
	size, count := chunks(rows, min(rows, rows*d/(minValues/4)))
	parallelFor(workers(count), count, func(_, i int) {
		f(i*size, min(rows, (i+1)*size))
	})
}

// sizeOf returns the product of dims.
func sizeOf(dims []int) (int, bool) {
	n := 1
	for _, d := range dims {
		if d < 0 {
			return 0, false
		}
		n *= d
	}
	return n, true
}

// MSE returns the mean squared error (1/n) Σ_i (p_i − y_i)² over all
// elements of pred and target, which must have the same shape.
func MSE(pred, target *ad.Var) *ad.Var {
	if pred == nil || target == nil {
		if pred != nil {
			return fail(pred.Tape(), "MSE: nil target")
		}
		if target != nil {
			return fail(target.Tape(), "MSE: nil prediction")
		}
		return nil
	}
	t := pred.Tape()
	if !ready(t, pred) || !ready(t, target) {
		return dead(t)
	}
	if !slices.Equal(pred.Shape(), target.Shape()) {
		return fail(t, "MSE: prediction shape %v differs from target shape %v", pred.Shape(), target.Shape())
	}
	if pred.Size() == 0 {
		return fail(t, "MSE: empty input of shape %v", pred.Shape())
	}
	return mse(t, pred, target)
}

// mse records MSE as one op. It does the arithmetic of
// ad.Mean(ad.Square(ad.Sub(pred, target))) in the same order, so it gives
// the same bits, without the two intermediate tensors and their adjoints:
// forward s = Σ_i d_i² in index order with d_i = p_i − y_i, then s·(1/n);
// backward, with c = ḡ·(1/n), the adjoint (2c)·d_i added to p̄_i and
// subtracted from ȳ_i.
func mse(t *ad.Tape, pred, target *ad.Var) *ad.Var {
	p, y := pred.Value(), target.Value()
	y = y[:len(p)]
	inv := 1 / float64(len(p))
	s := 0.0
	for i, v := range p {
		d := v - y[i]
		s += float64(d * d) // the conversion forbids fusing into an FMA
	}
	out := t.AllocRaw(1)
	out[0] = s * inv
	return t.Custom(nil, out, []*ad.Var{pred, target}, func(g []float64, gIn [][]float64) {
		c2 := 2 * (g[0] * inv)
		gp, gy := gIn[0], gIn[1]
		switch {
		case gy == nil:
			for i, v := range p {
				gp[i] += c2 * (v - y[i])
			}
		case gp == nil:
			for i, v := range p {
				gy[i] -= c2 * (v - y[i])
			}
		default:
			for i, v := range p {
				gd := c2 * (v - y[i])
				gp[i] += gd
				gy[i] -= gd
			}
		}
	})
}

// Accuracy returns the fraction of the n rows of the row-major (n, c)
// logits whose largest entry (the first, on ties) is at the label. It
// returns NaN when n is 0 or the sizes do not match.
func Accuracy(logits []float64, n, c int, labels []int) float64 {
	if n < 1 || c < 1 || len(logits) != n*c || len(labels) != n {
		return math.NaN()
	}
	hit := 0
	for i := range n {
		row := logits[i*c : (i+1)*c]
		best := 0
		for j, v := range row {
			if v > row[best] {
				best = j
			}
		}
		if best == labels[i] {
			hit++
		}
	}
	return float64(hit) / float64(n)
}
