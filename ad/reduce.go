package ad

import (
	"math"
	"runtime"

	"github.com/permlab/permlab/internal/f64"
)

// Sum returns the sum of all elements of x as a scalar.
func Sum(x *Var) *Var {
	t := tapeOf(x)
	if t == nil || !t.check("Sum", x) {
		return deadOf(t)
	}
	y := t.newOp(nil, backSum, x)
	y.a = x
	s := 0.0
	for _, v := range x.val {
		s += v
	}
	y.val[0] = s
	y.s = 1
	return y
}

// Mean returns the mean of all elements of x as a scalar.
func Mean(x *Var) *Var {
	y := Sum(x)
	if y != nil && y.a == x && len(x.val) > 0 {
		y.s = 1 / float64(len(x.val))
		y.val[0] *= y.s
	}
	return y
}

func backSum(y *Var) {
	if !y.a.needGrad {
		return
	}
	g := y.a.gradBuf()
	d := y.grad[0] * y.s
	for i := range g {
		g[i] += d
	}
}

// axisSplit normalises axis (negative counts from the end) and returns the
// sizes before, along and after it.
func axisSplit(t *Tape, op string, shape []int, axis int) (ax, outer, n, inner int, ok bool) {
	r := len(shape)
	if axis < 0 {
		axis += r
	}
	if axis < 0 || axis >= r {
		t.failf("%s: axis out of range for shape %v", op, shape)
		return 0, 0, 0, 0, false
	}
	outer, inner = 1, 1
	for i := 0; i < axis; i++ {
		outer *= shape[i]
	}
	for i := axis + 1; i < r; i++ {
		inner *= shape[i]
	}
	return axis, outer, shape[axis], inner, true
}

func dropAxis(shape []int, axis int) []int {
	out := make([]int, 0, len(shape)-1)
	out = append(out, shape[:axis]...)
	return append(out, shape[axis+1:]...)
}

type reduceKind uint8

// lseRow is the longest contiguous row LogSumExp computes in a buffer on
// the stack.
const lseRow = 32

const (
	redSum reduceKind = iota
	redMean
	redLSE
)

func reduceAxis(op string, kind reduceKind, x *Var, axis int) *Var {
	t := tapeOf(x)
	if t == nil || !t.check(op, x) {
		return deadOf(t)
	}
	ax, outer, n, inner, ok := axisSplit(t, op, x.shape, axis)
	if !ok {
		return t.deadVar()
	}
	back := backSumAxis
	if kind == redLSE {
		back = backLSE
	}
	y := t.newOp(dropAxis(x.shape, ax), back, x)
	y.a = x
	y.axis = ax
	y.s = 1
	if kind == redMean && n > 0 {
		y.s = 1 / float64(n)
	}
	forRows(outer, n, inner, func(r, base int) {
		if kind == redLSE {
			m := math.Inf(-1)
			for k := 0; k < n; k++ {
				m = max(m, x.val[base+k*inner])
			}
			if math.IsInf(m, 0) {
				y.val[r] = m
				return
			}
			s := 0.0
			if inner == 1 && n <= lseRow {
				// A short contiguous row (the classes of a categorical)
				// has its terms computed four at a time by f64.Exp, which
				// gives math.Exp's bits.
				var buf [lseRow]float64
				row := buf[:n]
				for k, v := range x.val[base : base+n] {
					row[k] = v - m
				}
				f64.Exp(row, row)
				for _, e := range row {
					s += e
				}
			} else {
				for k := 0; k < n; k++ {
					s += math.Exp(x.val[base+k*inner] - m)
				}
			}
			y.val[r] = m + math.Log(s)
			return
		}
		s := 0.0
		for k := 0; k < n; k++ {
			s += x.val[base+k*inner]
		}
		y.val[r] = s * y.s
	})
	return y
}

// SumAxis sums x along axis (negative counts from the end), removing it.
func SumAxis(x *Var, axis int) *Var { return reduceAxis("SumAxis", redSum, x, axis) }

// MeanAxis averages x along axis, removing it.
func MeanAxis(x *Var, axis int) *Var { return reduceAxis("MeanAxis", redMean, x, axis) }

// LogSumExp returns log Σ_k exp(x_k) along axis, removing it; computed by
// shifting by the maximum so that no term overflows.
func LogSumExp(x *Var, axis int) *Var { return reduceAxis("LogSumExp", redLSE, x, axis) }

func axisDims(shape []int, axis int) (outer, n, inner int) {
	outer, inner = 1, 1
	for i := 0; i < axis; i++ {
		outer *= shape[i]
	}
	for i := axis + 1; i < len(shape); i++ {
		inner *= shape[i]
	}
	return outer, shape[axis], inner
}

func backSumAxis(y *Var) {
	x := y.a
	if !x.needGrad {
		return
	}
	outer, n, inner := axisDims(x.shape, y.axis)
	g := x.gradBuf()
	for o := 0; o < outer; o++ {
		for i := 0; i < inner; i++ {
			d := y.grad[o*inner+i] * y.s
			base := o*n*inner + i
			for k := 0; k < n; k++ {
				g[base+k*inner] += d
			}
		}
	}
}

func backLSE(y *Var) {
	x := y.a
	if !x.needGrad {
		return
	}
	outer, n, inner := axisDims(x.shape, y.axis)
	g := x.gradBuf()
	forRows(outer, n, inner, func(r, base int) {
		lse, d := y.val[r], y.grad[r]
		if math.IsInf(lse, -1) {
			return
		}
		for k := 0; k < n; k++ {
			g[base+k*inner] += d * math.Exp(x.val[base+k*inner]-lse)
		}
	})
}

// LogSoftmax returns x - LogSumExp(x, axis) broadcast back along axis.
func LogSoftmax(x *Var, axis int) *Var { return softmaxOp("LogSoftmax", x, axis, true) }

// Softmax returns exp(x_k) / Σ_j exp(x_j) along axis.
func Softmax(x *Var, axis int) *Var { return softmaxOp("Softmax", x, axis, false) }

func softmaxOp(op string, x *Var, axis int, logOut bool) *Var {
	t := tapeOf(x)
	if t == nil || !t.check(op, x) {
		return deadOf(t)
	}
	ax, outer, n, inner, ok := axisSplit(t, op, x.shape, axis)
	if !ok {
		return t.deadVar()
	}
	back := backSoftmax
	if logOut {
		back = backLogSoftmax
	}
	y := t.newOp(x.shape, back, x)
	y.a = x
	y.axis = ax
	forRows(outer, n, inner, func(_, base int) {
		m := math.Inf(-1)
		for k := 0; k < n; k++ {
			m = max(m, x.val[base+k*inner])
		}
		// The terms e^(x−m) are kept in y's entries, where the output
		// goes, so each is computed once; a contiguous row has them
		// computed four at a time by f64.Exp, which gives math.Exp's bits.
		if inner == 1 {
			row := y.val[base : base+n]
			for k, v := range x.val[base : base+n] {
				row[k] = v - m
			}
			f64.Exp(row, row)
		} else {
			for k := 0; k < n; k++ {
				j := base + k*inner
				y.val[j] = math.Exp(x.val[j] - m)
			}
		}
		s := 0.0
		for k := 0; k < n; k++ {
			s += y.val[base+k*inner]
		}
		// Subtract the maximum first: x − m is exact for nearby values,
		// whereas x − (m + log s) loses the low bits of log s when |m| is
		// large.
		ls, inv := math.Log(s), 1/s
		for k := 0; k < n; k++ {
			j := base + k*inner
			if logOut {
				y.val[j] = (x.val[j] - m) - ls
			} else {
				y.val[j] *= inv
			}
		}
	})
	return y
}

func backSoftmax(y *Var) {
	x := y.a
	if !x.needGrad {
		return
	}
	outer, n, inner := axisDims(x.shape, y.axis)
	g := x.gradBuf()
	forRows(outer, n, inner, func(_, base int) {
		dot := 0.0
		for k := 0; k < n; k++ {
			j := base + k*inner
			dot += y.grad[j] * y.val[j]
		}
		for k := 0; k < n; k++ {
			j := base + k*inner
			g[j] += y.val[j] * (y.grad[j] - dot)
		}
	})
}

func backLogSoftmax(y *Var) {
	x := y.a
	if !x.needGrad {
		return
	}
	outer, n, inner := axisDims(x.shape, y.axis)
	g := x.gradBuf()
	forRows(outer, n, inner, func(_, base int) {
		sum := 0.0
		for k := 0; k < n; k++ {
			sum += y.grad[base+k*inner]
		}
		for k := 0; k < n; k++ {
			j := base + k*inner
			g[j] += y.grad[j] - math.Exp(y.val[j])*sum
		}
	})
}

// parRowEntries is the size, in entries, from which the row-wise ops
// (LogSumExp, Softmax, LogSoftmax and the axis sums, and their adjoints)
// split their rows over goroutines; below it the start-up costs more than
// the work saved.
const parRowEntries = 1 << 14

// forRows calls f(r, base) for every row of a row-wise op along an axis of
// length n with outer slices before it and inner entries after it: row
// r = o·inner + i (the index of its reduced value) holds the entries
// base + k·inner, k = 0 … n−1, with base = o·n·inner + i. Large ops split
// their outer slices over up to GOMAXPROCS goroutines; each row is still
// computed by one call, so the bits do not depend on GOMAXPROCS.
func forRows(outer, n, inner int, f func(r, base int)) {
	workers := runtime.GOMAXPROCS(0)
	if workers <= 1 || outer < 2 || outer*n*inner < parRowEntries {
		// No closure on this path: small ops run every step of a
		// training loop, and its allocation would show.
		walkRows(0, outer, n, inner, f)
		return
	}
	blocks := min(outer, 4*workers)
	size := (outer + blocks - 1) / blocks
	parallelFor((outer+size-1)/size, func(b int) {
		walkRows(b*size, min((b+1)*size, outer), n, inner, f)
	})
}

// walkRows calls f on the rows of outer slices o0 … o1−1 (see forRows).
func walkRows(o0, o1, n, inner int, f func(r, base int)) {
	for o := o0; o < o1; o++ {
		for i := range inner {
			f(o*inner+i, o*n*inner+i)
		}
	}
}
