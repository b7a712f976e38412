package models

import (
	"fmt"

	"github.com/permlab/permlab/ad"
	"github.com/permlab/permlab/relax"
)

// This file holds the sparse layout of a permutation site's value.
//
// A site whose masks leave each row a few candidates out of N carries most
// of its dense (K, B, N, N) value as structural zeros. In the sparse layout
// a Sample holds only the allowed entries: permutation b's entries in the
// order of its pattern (PermSpec.Patterns, compressed sparse rows: row by
// row, columns increasing), the B permutations one after another, and the
// K samples on the leading axis, shape (K, NNZ) with NNZ = Σ_b NNZ_b.
// Variational inference fills large sparse sites this way (vi.PermLayout);
// a model then reads either form: Sample.Perm builds the dense value on
// first use, O(K·B·N²) memory, and Sample.PermSparse gives one
// permutation's entries, shape (K, NNZ_b), without it. A model that reads
// only PermSparse scales with the candidates instead of with N². On a dense
// value, as MCMC and Exact set, PermSparse gathers the allowed entries, so
// the same LogLik serves every engine.

// Patterns returns the sparse structure of every effective mask (fixed rows
// included), built on first use and shared afterwards. The masks were
// checked to admit a permutation, so building them fails only for a site
// whose masks were changed after Check.
func (ps *PermSpec) Patterns() ([]*relax.SparsePattern, error) {
	ps.patOnce.Do(func() {
		pats := make([]*relax.SparsePattern, len(ps.Masks))
		off := make([]int, len(ps.Masks)+1)
		for b, m := range ps.Masks {
			p, err := relax.SparsePatternFromMask(m)
			if err != nil {
				ps.patErr = fmt.Errorf("models: site %q, permutation %d: %w", ps.Name, b, err)
				return
			}
			pats[b] = p
			off[b+1] = off[b] + p.NNZ()
		}
		ps.pats, ps.patOff = pats, off
	})
	return ps.pats, ps.patErr
}

// NNZ returns the number of allowed entries over the site's B masks, the
// width of its sparse layout (0 if Patterns fails).
func (ps *PermSpec) NNZ() int {
	if _, err := ps.Patterns(); err != nil {
		return 0
	}
	return ps.patOff[len(ps.patOff)-1]
}

// Density returns NNZ / (B·N²), the share of the dense layout's entries
// that the masks allow.
func (ps *PermSpec) Density() float64 {
	return float64(ps.NNZ()) / (float64(ps.B()) * float64(ps.N) * float64(ps.N))
}

// sparseOffset returns where permutation b's entries start in a row of the
// sparse layout; Patterns must have succeeded.
func (ps *PermSpec) sparseOffset(b int) int { return ps.patOff[b] }

// SetSparse stores the value of permutation site name in the sparse layout:
// shape (K, NNZ), sample k's row holding the allowed entries of every
// permutation b in turn, each in its pattern's order. It records an error
// on the tape if the site is unknown, not a permutation site, or the shape
// is wrong.
func (z *Sample) SetSparse(name string, v *ad.Var) {
	ps := z.spec.permSpec(name)
	if ps == nil {
		z.t.Fail(fmt.Errorf("models: Sample.SetSparse: %q is not a permutation site (sites: %v)", name, z.spec.Names()))
		return
	}
	if v == nil {
		z.t.Fail(fmt.Errorf("models: Sample.SetSparse: nil value for site %q", name))
		return
	}
	if _, err := ps.Patterns(); err != nil {
		z.t.Fail(fmt.Errorf("models: Sample.SetSparse: %w", err))
		return
	}
	if sh := v.Shape(); len(sh) != 2 || sh[0] != z.k || sh[1] != ps.NNZ() {
		z.t.Fail(fmt.Errorf("models: Sample.SetSparse: site %q has sparse shape %v, want (K, NNZ) = [%d %d]", name, sh, z.k, ps.NNZ()))
		return
	}
	if z.sparse == nil {
		z.sparse = map[string]*ad.Var{}
	}
	z.sparse[name] = v
	delete(z.vals, name)
	delete(z.parts, name)
}

// PermSparse returns the entries of permutation b of site name on its
// pattern (PermPattern), shape (K, NNZ_b): entry e of row k is sample k's
// value of P[i][j] for the e-th allowed pair (i, j) in row-major order.
// Errors are recorded on the tape, as for Perm.
func (z *Sample) PermSparse(name string, b int) *ad.Var {
	ps := z.spec.permSpec(name)
	if ps == nil {
		return z.get(name, true) // records the error
	}
	if b < 0 || b >= ps.B() {
		return z.fail(fmt.Errorf("models: site %q has %d permutations, asked for %d", name, ps.B(), b))
	}
	pats, err := ps.Patterns()
	if err != nil {
		return z.fail(err)
	}
	if parts := z.parts[name]; parts != nil && parts[b] != nil {
		return parts[b]
	}
	var out *ad.Var
	if sv, ok := z.sparse[name]; ok {
		out = sparseColumns(z.t, sv, ps.sparseOffset(b), pats[b].NNZ())
	} else {
		dense := z.get(name, true)
		if z.t.Err() != nil {
			return dense
		}
		out = gatherPattern(z.t, dense, b, ps.B(), pats[b])
	}
	if z.parts == nil {
		z.parts = map[string][]*ad.Var{}
	}
	if z.parts[name] == nil {
		z.parts[name] = make([]*ad.Var, ps.B())
	}
	z.parts[name][b] = out
	return out
}

// PermPattern returns the pattern of permutation b of site name: the
// meaning of the entries PermSparse returns. Errors are recorded on the
// tape and give nil.
func (z *Sample) PermPattern(name string, b int) *relax.SparsePattern {
	ps := z.spec.permSpec(name)
	if ps == nil {
		z.get(name, true)
		return nil
	}
	if b < 0 || b >= ps.B() {
		z.t.Fail(fmt.Errorf("models: site %q has %d permutations, asked for %d", name, ps.B(), b))
		return nil
	}
	pats, err := ps.Patterns()
	if err != nil {
		z.t.Fail(err)
		return nil
	}
	return pats[b]
}

// IsSparse reports whether site name holds a sparse-layout value (set with
// SetSparse), so that PermSparse is cheap and Perm builds a dense copy.
func (z *Sample) IsSparse(name string) bool {
	_, ok := z.sparse[name]
	return ok
}

// densePerm builds the dense (K, B, N, N) value of a sparse-layout site.
func (z *Sample) densePerm(ps *PermSpec, sv *ad.Var) *ad.Var {
	pats, _ := ps.Patterns() // SetSparse checked them
	k, b, n := z.k, ps.B(), ps.N
	nn, width := n*n, ps.NNZ()
	out := z.t.Alloc(k * b * nn)
	src := sv.Value()
	for q := range k {
		row := src[q*width : (q+1)*width]
		for p, pat := range pats {
			dst := out[(q*b+p)*nn : (q*b+p+1)*nn]
			vals := row[ps.sparseOffset(p):]
			rowPtr, cols := pat.RowPtr(), pat.Cols()
			for i := range n {
				for e := rowPtr[i]; e < rowPtr[i+1]; e++ {
					dst[i*n+cols[e]] = vals[e]
				}
			}
		}
	}
	shape := []int{k, b, n, n}
	if !sv.RequiresGrad() {
		return z.t.Custom(shape, out, []*ad.Var{sv}, nil)
	}
	return z.t.Custom(shape, out, []*ad.Var{sv}, func(g []float64, gIn [][]float64) {
		gs := gIn[0]
		for q := range k {
			row := gs[q*width : (q+1)*width]
			for p, pat := range pats {
				src := g[(q*b+p)*nn : (q*b+p+1)*nn]
				vals := row[ps.sparseOffset(p):]
				rowPtr, cols := pat.RowPtr(), pat.Cols()
				for i := range n {
					for e := rowPtr[i]; e < rowPtr[i+1]; e++ {
						vals[e] += src[i*n+cols[e]]
					}
				}
			}
		}
	})
}

// sparseColumns returns columns [off, off+w) of the (K, width) value v,
// shape (K, w).
func sparseColumns(t *ad.Tape, v *ad.Var, off, w int) *ad.Var {
	sh := v.Shape()
	k, width := sh[0], sh[1]
	if off == 0 && w == width {
		return v
	}
	out := t.AllocRaw(k * w)
	src := v.Value()
	for q := range k {
		copy(out[q*w:(q+1)*w], src[q*width+off:q*width+off+w])
	}
	if !v.RequiresGrad() {
		return t.Custom([]int{k, w}, out, []*ad.Var{v}, nil)
	}
	return t.Custom([]int{k, w}, out, []*ad.Var{v}, func(g []float64, gIn [][]float64) {
		gv := gIn[0]
		for q := range k {
			dst := gv[q*width+off : q*width+off+w]
			for e, x := range g[q*w : (q+1)*w] {
				dst[e] += x
			}
		}
	})
}

// gatherPattern returns the entries of permutation p of the dense
// (K, B, N, N) value v on pat, shape (K, NNZ_p).
func gatherPattern(t *ad.Tape, v *ad.Var, p, b int, pat *relax.SparsePattern) *ad.Var {
	n := pat.N()
	k, nn, w := v.Shape()[0], n*n, pat.NNZ()
	rowPtr, cols := pat.RowPtr(), pat.Cols()
	out := t.AllocRaw(k * w)
	src := v.Value()
	for q := range k {
		m := src[(q*b+p)*nn : (q*b+p+1)*nn]
		dst := out[q*w : (q+1)*w]
		for i := range n {
			for e := rowPtr[i]; e < rowPtr[i+1]; e++ {
				dst[e] = m[i*n+cols[e]]
			}
		}
	}
	if !v.RequiresGrad() {
		return t.Custom([]int{k, w}, out, []*ad.Var{v}, nil)
	}
	return t.Custom([]int{k, w}, out, []*ad.Var{v}, func(g []float64, gIn [][]float64) {
		gv := gIn[0]
		for q := range k {
			m := gv[(q*b+p)*nn : (q*b+p+1)*nn]
			src := g[q*w : (q+1)*w]
			for i := range n {
				for e := rowPtr[i]; e < rowPtr[i+1]; e++ {
					m[i*n+cols[e]] += src[e]
				}
			}
		}
	})
}
