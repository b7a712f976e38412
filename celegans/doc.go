// Package celegans implements the C. elegans neural identification problem
// of Linderman et al. (2018) and Mena et al. (2018, Section 5): inferring,
// from recordings of several worms, which canonical neuron each recorded
// neuron is.
//
// # Model
//
// The worm's nervous system is stereotyped: every animal has the same named
// neurons, wired by the same connectome. Worm j is recorded for T time steps
// as a vector autoregression
//
//	Y_t = P_j W P_jᵀ Y_{t-1} + e_t,    e_t ~ N(0, η² I),
//
// where W (N × N, in canonical order) is shared by all worms and is non-zero
// only on the connectome's edges, and P_j is the latent permutation matrix
// that maps worm j's observed neuron indices to canonical identities. Some
// neurons of each worm are known (their row of P_j is given), and each
// observed neuron can only be one of the neurons whose soma lies near its
// own along the body: |pos_m − pos_n| < ν. Inference is over the P_j and W
// jointly; the likelihood depends on the data only through the sufficient
// statistics of each recording (Stats), so its cost does not grow with T.
//
// # Conventions
//
// Canonical identities are indices into Connectome.Names, in canonical order
// (by soma position, then name). A permutation p of package perm is read as
// "observed neuron m is canonical neuron p[m]": P[m][p[m]] = 1, the recording
// is y_t[m] = x_t[p[m]] for the canonical activity x_t, and
// (P W Pᵀ)[m][m'] = W[p[m]][p[m']]. Row m of a candidate mask (perm.Mask)
// lists the canonical neurons observed neuron m may be.
//
// # Data
//
// LoadConnectomeFiles reads the WormAtlas tables of Varshney et al. (2011),
// NeuronConnect.csv (the synapses) and NeuronType.csv (the soma positions):
// chemical and electrical synapses are merged, directions dropped and
// neuromuscular junctions removed, A' = (A + Aᵀ) > 0, which leaves 279
// neurons and 2287 edges. The files are not part of the module; Synthetic
// draws a worm of the same size and density, spatially wired, which is the
// default when no files are given.
//
// Simulate follows the protocol of Linderman et al.: W antisymmetric on the
// connectome's edges with standard normal entries, divided by 1.1 times its
// spectral radius; T = 1000 steps of unit noise; a random true permutation
// and random known neurons per worm. PositionMasks and CandidateWidth build
// the candidate constraints.
//
// # The model
//
// Model is a models.Model, written once: the permutation site "P" (one
// permutation per worm, restricted by its candidate mask, the known neurons
// fixed, a uniform prior) and the real site "W" (the entries of W on the
// connectome's support, independent N(0, σ_W²) priors), and LogLik, the
// fused sufficient-statistics op (see Model). Its fast paths are that same
// likelihood in other forms, found by the engines by type assertion and
// tested equal to LogLik (models.CheckFastPaths): the value at an exact
// state, the O(N) change of a swap, and the exact Gibbs draw of W given the
// permutations. Collapsed adds W integrated out analytically, so that
// models.Exact can enumerate small problems. So vi.FitModel and
// mcmc.RunModel run it as they run any model (see ExampleModel), and the
// methods below are nothing but calls of those two engines with option
// values: an experiment exercises the engines that users call.
//
// # Methods
//
// Solve runs one of Methods on a Problem: Gumbel-Sinkhorn variational
// inference (q(P_j) a Gumbel-Sinkhorn distribution, with the KL term in
// Gumbel space, or without it) and the rounding variational method of
// Linderman et al., both through vi.FitModel (viOptions lists the option
// values), and an MCMC baseline through mcmc.RunModel (Gibbs draws of W,
// Metropolis–Hastings swaps of two labels of each P_j). Each estimates P_j as
// the masked matching of the assignment frequencies of its posterior draws
// (for MCMC, Settings.Estimator chooses the draws, or the single most
// likely one).
//
// Unless Settings.NoPolish is set, every method's estimate is then checked
// against the model alike, within the same budget (the method gets 90% of
// it): models.Scorer's local search (swaps and 3-cycles within the masks,
// scored by the model's swap deltas with W at its exact conditional mean,
// Model.MaximizeConditional) improves it until a local maximum or the end
// of the budget, and the result is kept only if the collapsed likelihood
// log p(Y | P), W integrated out, rose (Outcome.PolishGain). The search's
// own score maximises over W, which can favour labellings W is fitted to,
// so the exact likelihood decides.
//
// # Scale
//
// The moments of a recording are N × N, and the likelihood computed from
// them costs O(N³) per step: right for the worm's 279 neurons, hopeless
// for recordings of thousands. For those, NewDataStats keeps the recording
// instead, and Model evaluates ‖Y − P W Pᵀ X‖² right to left by products
// with the sparse P (its candidates, read through
// models.Sample.PermSparse) and with the sparse W, in
// O((2·candidates + degree)·N·T) time per worm and step and 3·N·T values of
// memory per worm and sample; nothing N × N is formed. vi.FitModel stores
// the Gumbel-Sinkhorn guide of a sparse mask sparsely
// (vi.SparseGumbelSinkhorn), so that the whole step grows with N times the
// candidates. ScaledConfig draws connectomes of any size with the real
// one's degree distribution and spatial wiring, and Simulate draws W
// sparsely (SampleSparseWeights) above DenseWeightsMaxN neurons.
//
// The exact-state paths read the recording too. A state keeps each worm's
// residual Y − A X, and a swap of two rows' identities changes it in those
// rows and in the rows with an edge into the two identities, so MCMC's swap
// delta costs O(degree·T) whatever N (against O(N) from the moments). The
// Gibbs draw and the conditional maximum of W, and the collapsed likelihood
// (LogLikGap, the polishing of estimates), read each entry of the pooled
// moments they need, over the rows of W's support, from the recordings:
// O(Σ_r deg_r²·T) per draw, nothing N × N. The rounding guide of a sparse
// mask is stored sparsely too (vi.SparseRounding). The scaling table
// (benchmarks/scale) measures the step, the memory and the accuracy up to
// 20,000 neurons.
//
// # Experiments
//
// Experiment runs every method on a grid of cells and seeds: Table3Cells
// (4 worms; 40, 30, 20 or 10 % of the neurons known; ν = 0.05 or 0.1) and
// Table7Cells (25 known neurons; 10, 30, 45 or 60 candidates per neuron on
// average; 1 or 4 worms) are the grids of the seed paper, with its published
// accuracies. All methods of a cell and seed see the same simulated worms and
// masks and the same wall-clock budget. Results are appended to a JSON-lines
// file as each run finishes, so an interrupted experiment resumes where it
// stopped, and Run writes a markdown report in the layout of the paper's
// tables, a JSON summary and PNG figures.
//
// The command examples/celegans runs it. With no flags it is a quick
// comparison of all methods on one cell of Table 3 on the synthetic worm;
// -connect and -types read the WormAtlas files, -table and -seeds choose
// the grid, and go run ./examples/celegans -h lists the other flags.
// celegans/README.md gives the commands of the reported tables.
//
// # Hyperparameters
//
// DefaultSettings are the package's defaults. Some come from the published
// protocols: Adam, L = 20 Sinkhorn iterations (the seed paper), one sample
// per step, σ_W = 0.2 for the prior on each weight (the simulated weights
// have standard deviation near 0.1), and for rounding τ = 0.3, initial
// noise 0.3 (inside the range [0.1, 0.5] of Linderman et al.) and prior
// components of standard deviation 0.2; MCMC uses the same σ_W, and by
// default one chain and the second half of its draws. Gumbel-Sinkhorn's
// were chosen by hand on the tuning seeds and cells below: τ = 1,
// τ_prior = 1, learning rate 0.1, at most 5000 steps, and a restart of a
// fit whose ELBO gains less than two standard errors over 50 steps
// (Settings.PlateauWindow), the fit with the best final ELBO giving the
// estimate; the tuning grids have since ranked τ = 1.5 first. The rounding
// method runs without restarts, as in its paper.
//
// Every method is tuned by the same protocol: a fixed list of settings
// variants, run by the tuning runner (go run ./examples/celegans -tune) on
// the tuning seeds 101 and 102 (never on the evaluation seeds 1 to 5), on
// the real connectome, in the cells 30-easy and 20-hard of Table 3 and
// 10c-4w of Table 7, with the 30 s budget; the variant with the best mean
// accuracy is the one evaluated. celegans/tuning/README.md has the grids,
// the results and the choices. The tables' commands (celegans/README.md)
// pass the chosen settings as flags where they differ from DefaultSettings.
//
// Every method of a cell gets the same wall-clock budget (the -budget flag)
// and all of them use it to the end; each keeps what its final estimate was
// timed to need (see Solve).
//
// # Results
//
// celegans/README.md has the measured Tables 3 and 7 with the paper's
// numbers beside them, with every method's estimate polished and without,
// the commands that produced them, the figures, and the command that
// reprints the tables from the committed results files
// (go run ./examples/celegans -report celegans/results/tables-engines).
// celegans/results/NOTES.md keeps the history behind this documentation.
//
// # References
//
// G. Mena, D. Belanger, S. Linderman, J. Snoek. Learning latent permutations
// with Gumbel-Sinkhorn networks. ICLR 2018.
//
// S. Linderman, G. Mena, H. Cooper, L. Paninski, J. Cunningham.
// Reparameterizing the Birkhoff polytope for variational permutation
// inference. AISTATS 2018.
//
// L. Varshney, B. Chen, E. Paniagua, D. Hall, D. Chklovskii. Structural
// properties of the Caenorhabditis elegans neuronal network. PLoS Comput.
// Biol. 7(2), 2011.
package celegans
