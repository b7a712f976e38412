// Package decode turns the scores of jigsaw networks (package
// networks/jigsaw) into hard arrangements of the pieces, by a score of the
// whole arrangement rather than of each piece's position alone.
//
// # The quadratic score
//
// A network's assignment M(g) scores each piece's position on its own, while
// a jigsaw puzzle is quadratic: where a piece belongs depends on its
// neighbours. A network with edge matching (jigsaw.Config.Refine) can be
// decoded by the quadratic score of the hard arrangement (Decoder, Solve):
// the final logits plus λ times the learned compatibilities c(i, j) of the
// pieces that end up side by side, c being the terms a round of edge
// matching adds when its assignment is hard (jigsaw.Net.Edges and
// jigsaw.Strips give them). Any network, with edge matching or not, can add
// to that score the seam term −μ D(i, j), the squared pixel differences
// across the seam of two neighbours, which needs no training. This is a
// quadratic assignment problem; Solve searches it heuristically, by pair
// swaps and simulated annealing from M(g), optionally restarted.
//
// # Search or score
//
// SearchGap tells the two causes of a wrong decoded puzzle apart: the
// search stopped below the true arrangement's score, or the score ranks a
// wrong arrangement at least as high as the truth, which no search can
// mend. Against the latter, FitPairs fits the compatibility matrices to the
// hard score itself (a structured hinge loss over held-out puzzles, the
// network left as it is; optionally with the weight of the logits, and with
// a loss that counts misplaced pixels rather than pieces), and Decoder.Pair
// decodes with them.
//
// # Ensembles and the critic
//
// An Ensemble of networks trained for the same grid, say from different
// seeds, decodes by the mean of their scores, which averages out the errors
// the networks do not share. A Critic, a convolutional network trained to
// tell a rightly assembled image from one with two or three pieces moved,
// sees what none of those terms sees: the whole image. With Decoder.Critic
// the decoder, after its search, keeps the best by E + w·D of the
// arrangement found and every one a swap or 3-cycle away.
//
// Every result is reproducible from Decoder.Seed and does not depend on
// GOMAXPROCS.
package decode
