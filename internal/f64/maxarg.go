package f64

// MaxArg folds rows of b into a running elementwise maximum: for every t
// in order and every i < len(best), where b[idx[t]·stride + i] > best[i]
// it sets best[i] to that value and at[i] to float64(idx[t]). A later row
// replaces the maximum only when strictly greater, so ties keep the first
// row, and a NaN never replaces anything (nor is it replaced once in
// best). It is the inner step of max-pooling over rows of a pixel-major
// activation; the assembly path takes four rows per pass with compares and
// blends instead of branches. It panics if at is shorter than best or a
// row runs past the end of b.
func MaxArg(best, at, b []float64, stride int, idx []int) {
	n := len(best)
	at = at[:n]
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
			p := [4]float64{float64(idx[t]), float64(idx[t+1]), float64(idx[t+2]), float64(idx[t+3])}
			maxArg4Asm(n, &p, &r0[0], &r1[0], &r2[0], &r3[0], &best[0], &at[0])
		}
	}
	for ; t < len(idx); t++ {
		row := b[idx[t]*stride : idx[t]*stride+n]
		p := float64(idx[t])
		for i, v := range row {
			if v > best[i] {
				best[i], at[i] = v, p
			}
		}
	}
}
