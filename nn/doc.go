// Package nn provides neural-network layers, losses and parameter files on
// top of package ad, for the networks of permlab's models: the
// permutation-valued networks of Mena et al. (2018), which map a set of
// items to an N×N matrix of log-scores before a Sinkhorn operator, and the
// convolutional encoders of the jigsaw and MNIST experiments.
//
// # Layers
//
// A Layer maps a Var to a Var on a tape and lists its trainable
// parameters. Dense is the affine map y = x·W + b on the last axis, so one
// layer applied to a (B, N, d) batch of sets acts on every item alike, as
// the permutation networks need. Conv2D is the cross-correlation of an
// NCHW batch with F filters of size C×K×K,
//
//	y[n,f,i,j] = b[f] + Σ_{c,u,v} W[f,c,u,v] · x[n, c, S·i+u−P, S·j+v−P],
//
// computed as one matrix product per sample (im2col, read in place from
// the padded sample rather than copied); MaxPool2D takes window maxima.
// The activations ReLU, LeakyReLU, ELU, Sigmoid, Tanh and Softplus have no
// parameters; Flatten turns (N, …) into (N, d).
// Sequential chains layers and Collect gathers their parameters for an
// optimizer (package ad/optim) or for Save.
//
// Sequential runs Conv2D → ReLU → MaxPool2D (or Conv2D → MaxPool2D →
// ReLU), and a Flatten after them, as one fused op. ReLU and max-pooling
// commute, so the op takes each window's maximum of the convolution and
// rectifies it, max(max_window v, 0); the adjoint of the convolution
// output is then non-zero only at the argmax of each window with a
// positive output, and the weight and input adjoints are computed from
// those entries alone. Values are those of the separate layers bit for
// bit; the weight and bias adjoints add the same terms in another order.
// MSE is likewise one op, with the bits of Mean(Square(Sub(·, ·))).
//
// A layer never panics on bad input. A wrong shape is recorded as the
// tape's error (ad.Tape.Fail) and Forward returns a placeholder; every
// later op is a no-op and ad.Tape.Backward returns the error, so a model
// checks once, after its loss.
//
// # Initialisation
//
// Weights are drawn by an Init scheme from an explicit *rand.Rand, so one
// seed gives one network. For a unit with n_in inputs and n_out outputs
// (for a convolution, n_in = C·K² and n_out = F·K²), Glorot schemes give
// the weights variance 2/(n_in + n_out), which keeps the variance of
// activations and of gradients roughly constant through layers of
// symmetric activations; He schemes give 2/n_in, making up for the half
// of its input that a ReLU zeroes. Biases start at zero.
//
// # Losses
//
// CrossEntropy is the mean over a batch of −log softmax(z)_y, computed as
// log Σ exp(z − max z) + max z − z_y so that no exponential overflows;
// its gradient is (softmax(z) − onehot(y))/N. BinaryCrossEntropyWithLogits
// is the Bernoulli negative log-likelihood of targets y ∈ [0, 1] under
// probabilities σ(x), in the stable form max(x, 0) − x·y + log(1 + e^−|x|),
// summed over the last axis to give one value per example, as the ELBO of
// a variational autoencoder needs. MSE is the mean squared error.
//
// # Determinism
//
// Conv2D and ad.MatMul split work over goroutines, but every sum has a
// fixed order (sums over the batch are taken over fixed chunks of samples
// and then across chunks in order), so outputs and gradients are the same,
// bit for bit, whatever GOMAXPROCS is.
//
// # Precision
//
// A Dense layer multiplies in float64 by default. With Precision Float32
// (the WithPrecision option, or the field) its product x·W and the
// product's adjoints run in float32 (ad.MatMul32): inputs rounded to
// float32, float32 sums of fused multiply-adds, results back in float64.
// Everything else (activations, losses, gradients outside the products,
// the parameters Adam updates) stays float64, so the saved parameters and
// their file format do not depend on it. On CPUs with AVX2 and FMA a
// float32 product runs at about twice the float64 rate (benchmarks/README.md
// measures what that gives the categorical VAE's training step). The bits
// are still independent of GOMAXPROCS.
//
// # Parameter files
//
// Save writes a list of parameters in a small binary format, version 1,
// all integers little-endian:
//
//	magic    4 bytes  "PLNN"
//	version  uint32   1
//	count    uint32   number of parameters
//	count times:
//	  nameLen  uint32             length of the name in bytes (≤ 65536)
//	  name     nameLen bytes      UTF-8, unique within the file
//	  rank     uint32             number of dimensions (≤ 16)
//	  dims     rank × uint64      the shape
//	  data     Π dims × float64   IEEE 754 bits, row-major
//	checksum uint32   CRC-32 (IEEE) of every preceding byte
//
// Load matches parameters by name and requires identical shapes; it checks
// the checksum before reading anything, and it changes no value unless the
// whole file matches. SaveFile replaces a file atomically (temporary file,
// sync, rename).
package nn
