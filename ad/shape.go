package ad

import "github.com/permlab/permlab/internal/par"

// Reshape returns x with a new shape of the same size. One dimension may be
// -1, meaning "whatever is left".
func Reshape(x *Var, shape ...int) *Var {
	t := tapeOf(x)
	if t == nil || !t.check("Reshape", x) {
		return deadOf(t)
	}
	shape = append([]int(nil), shape...)
	free, n := -1, 1
	for i, d := range shape {
		switch {
		case d == -1 && free < 0:
			free = i
		case d < 0:
			return t.failf("Reshape: bad shape %v", shape)
		default:
			n *= d
		}
	}
	if free >= 0 {
		if n == 0 || len(x.val)%n != 0 {
			return t.failf("Reshape: cannot reshape %v into %v", x.shape, shape)
		}
		shape[free] = len(x.val) / n
		n *= shape[free]
	}
	if n != len(x.val) {
		return t.failf("Reshape: cannot reshape %v (%d values) into %v", x.shape, len(x.val), shape)
	}
	y := t.newOp(shape, backIdentity, x)
	y.a = x
	if xv, yv := x.val, y.val; len(xv) <= par.Grain {
		copy(yv, xv)
	} else {
		par.Range(len(xv), par.Grain, func(lo, hi int) { copy(yv[lo:hi], xv[lo:hi]) })
	}
	return y
}

// Take gathers sub-tensors along the leading axis: y[k] = x[idx[k]].
// Indices may repeat; their adjoints add up. idx must not change while the
// tape is in use.
func Take(x *Var, idx []int) *Var {
	t := tapeOf(x)
	if t == nil || !t.check("Take", x) {
		return deadOf(t)
	}
	if len(x.shape) == 0 {
		return t.failf("Take: scalar input")
	}
	rows := x.shape[0]
	for _, i := range idx {
		if i < 0 || i >= rows {
			return t.failf("Take: index %d out of range [0, %d)", i, rows)
		}
	}
	shape := append([]int{len(idx)}, x.shape[1:]...)
	y := t.newOp(shape, backTake, x)
	y.a = x
	y.ints = idx
	bs := 1
	for _, d := range x.shape[1:] {
		bs *= d
	}
	for k, i := range idx {
		copy(y.val[k*bs:(k+1)*bs], x.val[i*bs:(i+1)*bs])
	}
	return y
}

func backTake(y *Var) {
	x := y.a
	if !x.needGrad {
		return
	}
	g := x.gradBuf()
	bs := 1
	for _, d := range x.shape[1:] {
		bs *= d
	}
	for k, i := range y.ints {
		dst := g[i*bs : (i+1)*bs]
		for j, v := range y.grad[k*bs : (k+1)*bs] {
			dst[j] += v
		}
	}
}

// Index returns x[i] along the leading axis, dropping that axis.
func Index(x *Var, i int) *Var {
	y := Take(x, []int{i})
	if y == nil || y.tape.err != nil {
		return y
	}
	return Reshape(y, x.shape[1:]...)
}

// Slice returns x[from:to] along the leading axis.
func Slice(x *Var, from, to int) *Var {
	t := tapeOf(x)
	if t == nil || !t.check("Slice", x) {
		return deadOf(t)
	}
	if len(x.shape) == 0 || from < 0 || to < from || to > x.shape[0] {
		return t.failf("Slice: [%d:%d] out of range for shape %v", from, to, x.shape)
	}
	idx := make([]int, to-from)
	for k := range idx {
		idx[k] = from + k
	}
	return Take(x, idx)
}

// Gather picks one element per row along the last axis: for x of shape
// (…, n) seen as R rows of n, y[r] = x[r, idx[r]], with len(idx) = R. The
// result has x's shape without its last axis.
func Gather(x *Var, idx []int) *Var {
	t := tapeOf(x)
	if t == nil || !t.check("Gather", x) {
		return deadOf(t)
	}
	r := len(x.shape)
	if r == 0 {
		return t.failf("Gather: scalar input")
	}
	n := x.shape[r-1]
	rows := 0
	if n > 0 {
		rows = len(x.val) / n
	}
	if len(idx) != rows {
		return t.failf("Gather: %d indices for %d rows", len(idx), rows)
	}
	for _, i := range idx {
		if i < 0 || i >= n {
			return t.failf("Gather: index %d out of range [0, %d)", i, n)
		}
	}
	y := t.newOp(x.shape[:r-1], backGather, x)
	y.a = x
	y.ints = idx
	for k, i := range idx {
		y.val[k] = x.val[k*n+i]
	}
	return y
}

func backGather(y *Var) {
	x := y.a
	if !x.needGrad {
		return
	}
	g := x.gradBuf()
	n := x.shape[len(x.shape)-1]
	for k, i := range y.ints {
		g[k*n+i] += y.grad[k]
	}
}

// Concat joins tensors along the leading axis; all other axes must agree.
func Concat(xs ...*Var) *Var {
	t := tapeOf(xs...)
	if t == nil || !t.check("Concat", xs...) {
		return deadOf(t)
	}
	if len(xs) == 0 {
		return t.failf("Concat: no inputs")
	}
	rest := xs[0].shape
	if len(rest) == 0 {
		return t.failf("Concat: scalar input")
	}
	rows := 0
	for _, x := range xs {
		if len(x.shape) == 0 || !sameShape(x.shape[1:], rest[1:]) {
			return t.failf("Concat: shapes %v and %v differ beyond the leading axis", rest, x.shape)
		}
		rows += x.shape[0]
	}
	shape := append([]int{rows}, rest[1:]...)
	y := t.newOp(shape, backConcat, xs...)
	y.ins = append([]*Var(nil), xs...)
	off := 0
	for _, x := range xs {
		copy(y.val[off:], x.val)
		off += len(x.val)
	}
	return y
}

func backConcat(y *Var) {
	off := 0
	for _, x := range y.ins {
		if x.needGrad {
			g := x.gradBuf()
			for i, v := range y.grad[off : off+len(x.val)] {
				g[i] += v
			}
		}
		off += len(x.val)
	}
}

// Mask keeps the elements of x where keep is true and sets the others to
// fill (which may be ±Inf); no gradient flows through the filled elements.
// keep has one entry per element of x and must not change while the tape is
// in use.
func Mask(x *Var, keep []bool, fill float64) *Var {
	t := tapeOf(x)
	if t == nil || !t.check("Mask", x) {
		return deadOf(t)
	}
	if len(keep) != len(x.val) {
		return t.failf("Mask: %d mask entries for %d values", len(keep), len(x.val))
	}
	y := t.newOp(x.shape, backMask, x)
	y.a = x
	y.mask = keep
	for i, v := range x.val {
		if keep[i] {
			y.val[i] = v
		} else {
			y.val[i] = fill
		}
	}
	return y
}

func backMask(y *Var) {
	x := y.a
	if !x.needGrad {
		return
	}
	g := x.gradBuf()
	for i, k := range y.mask {
		if k {
			g[i] += y.grad[i]
		}
	}
}
