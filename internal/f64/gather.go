package f64

// AxpyGather adds coef[t]·b[idx[t]·stride : idx[t]·stride+len(y)] to y for
// every t, in order: y += Σ_t coef[t]·(row idx[t] of b). It is a sparse row
// times a dense matrix with row stride stride. The assembly path reads y
// once per four rows of b. It panics if coef and idx differ in length or a
// row runs past the end of b.
func AxpyGather(y, coef, b []float64, stride int, idx []int) {
	n := len(y)
	if len(coef) != len(idx) {
		panic("f64: AxpyGather: len(coef) != len(idx)")
	}
	if n == 0 {
		return
	}
	t := 0
	if useAsm {
		for ; t+4 <= len(idx); t += 4 {
			r0 := b[idx[t]*stride : idx[t]*stride+n]
			r1 := b[idx[t+1]*stride : idx[t+1]*stride+n]
			r2 := b[idx[t+2]*stride : idx[t+2]*stride+n]
			r3 := b[idx[t+3]*stride : idx[t+3]*stride+n]
			a := [4]float64{coef[t], coef[t+1], coef[t+2], coef[t+3]}
			axpy4Asm(n, &a, &r0[0], &r1[0], &r2[0], &r3[0], &y[0])
		}
	}
	for ; t < len(idx); t++ {
		Axpy(coef[t], b[idx[t]*stride:idx[t]*stride+n], y)
	}
}

// DotGather sets dst[t] = x · b[idx[t]·stride : idx[t]·stride+len(x)] for
// every t < len(idx): a dense row times the transpose of a row selection
// of b. The assembly path reads x once per four rows of b. It panics if dst
// is shorter than idx or a row runs past the end of b.
func DotGather(dst, x, b []float64, stride int, idx []int) {
	n := len(x)
	dst = dst[:len(idx)]
	if n == 0 {
		clear(dst)
		return
	}
	t := 0
	if useAsm {
		var out [4]float64
		for ; t+4 <= len(idx); t += 4 {
			r0 := b[idx[t]*stride : idx[t]*stride+n]
			r1 := b[idx[t+1]*stride : idx[t+1]*stride+n]
			r2 := b[idx[t+2]*stride : idx[t+2]*stride+n]
			r3 := b[idx[t+3]*stride : idx[t+3]*stride+n]
			dot4Asm(n, &x[0], &r0[0], &r1[0], &r2[0], &r3[0], &out)
			dst[t], dst[t+1], dst[t+2], dst[t+3] = out[0], out[1], out[2], out[3]
		}
	}
	for ; t < len(idx); t++ {
		dst[t] = Dot(x, b[idx[t]*stride:idx[t]*stride+n])
	}
}
