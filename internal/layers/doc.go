// Package layers states the module's package layering and, in its test,
// checks it: every import of a package of the module points to a lower
// layer or within the package's own unit.
//
// From the bottom up:
//
//	0  internal/...                      helpers with no place in the API
//	1  perm, compare, dataset, deploy    permutations, the run grid, data readers
//	2  ad, ad/optim                      autodiff and optimizers
//	3  relax, nn/..., internal/paramfile Sinkhorn and matching; neural layers and the training loop;
//	                                     the jigsaw networks' parameter files
//	4  dist                              distributions
//	5  models, networks/...              the model contract; supervised Sinkhorn networks
//	6  vi, mcmc                          the engines
//	7  models/..., celegans              models written on the contract and fitted by the engines
//	8  examples/..., benchmarks/...      commands
//
// A unit is one line's entry: a package (models) or a folder with
// everything under it (networks/...). A package named on its own wins over
// a folder that holds it: internal/paramfile, which works on ad's
// parameters, sits above ad although the rest of internal/ sits below. Packages in one unit may import each
// other; between units, imports only point down. Test files are not
// checked: a test may use a higher layer to exercise a lower one.
package layers
