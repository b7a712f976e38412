package relax

// squareBatch reads a shape (N, N) as one matrix and (B, N, N) as a batch of
// B; ok is false for any other shape or N < 1.
func squareBatch(shape []int) (batch, n int, ok bool) {
	switch {
	case len(shape) == 2 && shape[0] == shape[1]:
		batch, n = 1, shape[0]
	case len(shape) == 3 && shape[1] == shape[2]:
		batch, n = shape[0], shape[1]
	default:
		return 0, 0, false
	}
	return batch, n, n >= 1
}
