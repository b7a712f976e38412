// Command jigsaw trains a Sinkhorn network to solve p × p jigsaw puzzles
// (Mena et al., ICLR 2018, Section 4.2 and Table 2), evaluates it on held-out
// images, and writes the metrics as JSON and a figure like the paper's
// Figure 3a: for a few test images, the original, the scrambled pieces, soft
// reconstructions S(g/τ)^T X̃ at several temperatures, and the hard
// reconstruction M(g)^T X̃.
//
// On MNIST (the four IDX files in one folder):
//
//	go run ./examples/jigsaw -mnist DIR -p 3 -seed 1 -out /tmp/jigsaw
//
// trains on the first 50,000 training digits and reports the 10,000 test
// digits (-val reports the held-out last 10,000 training digits instead, for
// tuning). On one's own pictures (PNG or JPEG, grey or RGB):
//
//	go run ./examples/jigsaw -images DIR -size 64 -p 3 -out /tmp/jigsaw
//
// uses the first 90% of the pictures (by name) for training and the rest for
// testing. With -table2 it runs p = 2, ..., 6 on MNIST (or the sizes listed
// by -sizes, in that order) and prints the markdown Table 2 beside the
// paper's numbers; every finished size is appended to a JSON-lines file
// (-results) and skipped when the command is run again, so an interrupted
// table resumes.
//
// Training itself resumes too: every 1,000 steps, and on Ctrl-C, the state of
// the run (weights, Adam's moments, the random stream, the losses) goes to
// jigsaw_<data>_pN.ckpt under -out, and the same command run again goes on
// from it and ends with the weights an uninterrupted run would have, bit for
// bit. A larger -steps trains a finished network further; other changed
// settings are refused (delete the .ckpt to start afresh).
//
// -load evaluates a network saved by an earlier run instead of training one
// (with -table2, a folder holding one jigsaw_*_pN.gob per size). For a
// network with edge matching (-refine), -pairwise and -anneal decode by the
// quadratic score of the hard arrangement instead of M(g):
//
//	go run ./examples/jigsaw -mnist DIR -p 5 -load /tmp/t2d2/jigsaw_mnist-test_p5.gob -pairwise 5 -anneal 1600000
//
// -seam adds to that score the squared pixel differences across the seams of
// neighbouring pieces, with any network (edge matching or not). -restarts R
// anneals R times per puzzle and keeps the best, and -decode-seed draws
// other proposals for the same puzzles (to measure the annealing's noise).
// Each such run also reports how many wrong puzzles the score itself ranks
// above the truth, which no search can mend (jigsaw.Net.SearchGap).
// Against those, -fit-pairs FILE fits the decoder's compatibility matrices
// to its hard score on the validation images after the first -eval, saves
// them and evaluates the first -eval with them (-fit-unary fits the weight
// of the network's logits too, -fit-border vectors that score the pieces on
// the puzzle's sides, -fit-margin pixels makes the hinge count misplaced
// pixels rather than pieces); -pairs FILE decodes with saved ones
// (our best at 6 × 6 fits with -fit-unary and decodes with -anneal 6400000):
//
//	go run ./examples/jigsaw -mnist DIR -p 6 -load NET.gob -val -eval 2000 -pairwise 3 -anneal 1600000 -fit-pairs /tmp/pairs.json -fit-unary
//
// -ensemble A.gob,B.gob decodes with the -load network and these together,
// by the mean of their scores (networks for the same pieces, say trained
// from other -seed values; with -table2, folders as -load):
//
//	go run ./examples/jigsaw -mnist DIR -p 3 -load S1.gob -ensemble S2.gob,S3.gob -val -eval 2000 -pairwise 3 -anneal 400000
//
// -train-critic FILE trains a jigsaw.Critic on the training images, a
// network that looks at the whole assembled image, saves it (resumable from
// FILE.ckpt, its record in FILE.json), and reranks the decoded arrangements
// with it: each against every arrangement a swap or 3-cycle away, by the
// decoder's score plus -critic-weight times the critic's log-odds; -critic
// FILE reranks with a saved one:
//
//	go run ./examples/jigsaw -mnist DIR -p 3 -load S1.gob -ensemble S2.gob -val -eval 2000 -pairwise 3 -anneal 400000 -train-critic /tmp/critic.gob
//
// (see jigsaw.Decoder, jigsaw.Ensemble, jigsaw.Net.FitPairs, jigsaw.Critic
// and models/jigsaw/README.md).
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/permlab/permlab/dataset"
	"github.com/permlab/permlab/models/jigsaw"
)

// options are the command-line settings.
type options struct {
	mnist, images, out, results string
	size                        int
	gray, val, table2, quiet    bool
	oracle                      bool
	oracleDraws                 int
	p                           int
	seed                        uint64
	steps, batch, evalN         int
	lr                          float64
	cfg                         jigsaw.Config
	figTaus                     string
	sizes                       string // -table2 sizes, in run order
	load                        string // trained network (file; -table2: folder)
	ensemble                    string // more trained networks, comma-separated, as -load
	dec                         jigsaw.Decoder
	decodeSeed                  uint64
	pairs, fitPairs             string
	fit                         jigsaw.FitConfig
	fitN                        int
	critic, trainCritic         string // a saved critic; a critic to train and save
	criticCfg                   jigsaw.CriticConfig
}

func main() {
	var o options
	flag.StringVar(&o.mnist, "mnist", "", "folder with the four MNIST IDX files")
	flag.StringVar(&o.images, "images", "", "folder of PNG/JPEG pictures to use instead of MNIST")
	flag.IntVar(&o.size, "size", 64, "side in pixels the -images pictures are resized to")
	flag.BoolVar(&o.gray, "gray", false, "read -images pictures as grey (one channel)")
	flag.StringVar(&o.out, "out", ".", "output folder for the JSON, PNG and checkpoint")
	flag.StringVar(&o.results, "results", filepath.Join("models", "jigsaw", "results", "table2.jsonl"), "JSON-lines file of -table2")
	flag.IntVar(&o.p, "p", 3, "pieces per side")
	flag.Uint64Var(&o.seed, "seed", 1, "seed of the weights, minibatches, scrambling and noise")
	flag.IntVar(&o.steps, "steps", 0, "Adam steps (0: the default for p, see stepsFor)")
	flag.IntVar(&o.batch, "batch", 32, "images per step")
	flag.Float64Var(&o.lr, "lr", 1e-3, "Adam learning rate")
	flag.IntVar(&o.evalN, "eval", 0, "evaluate on the first n held-out images only (0: all)")
	flag.BoolVar(&o.val, "val", false, "report the MNIST validation split (last 10,000 training digits), not the test set")
	flag.BoolVar(&o.table2, "table2", false, "run p = 2..6 on MNIST and print Table 2")
	flag.StringVar(&o.sizes, "sizes", "2,3,4,5,6", "puzzle sizes -table2 runs, in this order")
	flag.BoolVar(&o.quiet, "quiet", false, "no progress lines")
	flag.IntVar(&o.oracleDraws, "oracle-draws", 1, "with -oracle: also print the mean and standard deviation of the metrics over this many random placements of the identical pieces (1: one placement only)")
	flag.BoolVar(&o.oracle, "oracle", false, "train nothing: print, for each of -sizes, the best index-based metrics any method can expect on the held-out puzzles (identical pieces placed at random among themselves)")
	def := jigsaw.DefaultConfig(3)
	flag.IntVar(&o.cfg.Crop, "crop", 0, "side in px of the centred square the pieces tile, a multiple of every size run (0: the largest multiple of p that fits; 28 px MNIST digits: 27 for 3 x 3, 24 for 6 x 6); a network loaded with -load keeps its own")
	flag.IntVar(&o.cfg.Filters, "filters", def.Filters, "convolution filters n_f")
	flag.IntVar(&o.cfg.Kernel, "kernel", def.Kernel, "convolution kernel side K_s (odd)")
	flag.IntVar(&o.cfg.Pool, "pool", def.Pool, "max-pool side and stride s")
	flag.Float64Var(&o.cfg.Tau, "tau", def.Tau, "Sinkhorn temperature in training")
	flag.IntVar(&o.cfg.Iters, "iters", def.Iters, "Sinkhorn iterations L")
	flag.IntVar(&o.cfg.Samples, "samples", def.Samples, "Gumbel samples per image")
	flag.Float64Var(&o.cfg.Noise, "noise", def.Noise, "scale of the Gumbel noise")
	flag.Float64Var(&o.cfg.LossPower, "loss-power", 0, "exponent γ the training loss raises pixel values to before comparing pieces (0 or 1: the pixels, the paper's loss; < 1 weighs faint pieces more; see jigsaw.Config.LossPower)")
	flag.IntVar(&o.cfg.Hidden, "hidden", 0, "ReLU units of a hidden layer after the pooled features (0: the paper's network)")
	flag.BoolVar(&o.cfg.Context, "context", false, "feed the hidden layer the puzzle's mean piece feature too (needs -hidden)")
	flag.IntVar(&o.cfg.Refine, "refine", 0, "edge-matching rounds after the first logits (0: none; see jigsaw.Config.Refine)")
	flag.IntVar(&o.cfg.EdgeDepth, "edge-depth", 1, "pixel rows in a border strip of -refine")
	flag.StringVar(&o.figTaus, "figtaus", "1,0.3,0.1", "temperatures of the soft reconstructions in the figure")
	flag.StringVar(&o.load, "load", "", "evaluate this saved network (.gob written by an earlier run) instead of training one; with -table2, a folder holding one jigsaw_*_pN.gob per size")
	flag.StringVar(&o.ensemble, "ensemble", "", "comma-separated saved networks (files, or with -table2 folders, as -load) decoded together with the -load network: the decoder maximises the mean of their scores (see jigsaw.Ensemble)")
	flag.Float64Var(&o.dec.Pairwise, "pairwise", 0, "decode by the quadratic score with this weight of the learned edge compatibilities (0: the linear assignment M(g); needs -refine; see jigsaw.Decoder)")
	flag.Float64Var(&o.dec.Seam, "seam", 0, "decode by the quadratic score with this weight of the squared pixel differences across the seams of neighbouring pieces (any network; see jigsaw.Decoder)")
	flag.IntVar(&o.dec.Anneal, "anneal", 0, "simulated-annealing proposals per puzzle of the -pairwise or -seam decoder (0: pair swaps only)")
	flag.IntVar(&o.dec.Restarts, "restarts", 0, "independent annealing runs per puzzle, the best by the decoder's score kept (0 or 1: one)")
	flag.Float64Var(&o.dec.StartTemp, "anneal-start", 0, "temperature the annealing starts at, in units of the decoder's score (0: 60)")
	flag.Float64Var(&o.dec.EndTemp, "anneal-end", 0, "temperature the annealing ends at (0: 0.03)")
	flag.Uint64Var(&o.decodeSeed, "decode-seed", 0, "seed of the annealing (0: -seed); another value decodes the same puzzles with other random proposals")
	flag.StringVar(&o.pairs, "pairs", "", "decode with compatibility matrices fitted by an earlier -fit-pairs run (a JSON file) in place of the network's own")
	flag.StringVar(&o.fitPairs, "fit-pairs", "", "fit the decoder's compatibility matrices to its hard score on the validation images after the first -eval (needs -load, -val, -eval and -pairwise), write them to this JSON file, then evaluate the first -eval with them")
	flag.IntVar(&o.fit.Epochs, "fit-epochs", 3, "passes of -fit-pairs over its puzzles")
	flag.IntVar(&o.fit.Batch, "fit-batch", 50, "puzzles per Adam step of -fit-pairs")
	flag.Float64Var(&o.fit.LR, "fit-lr", 0.01, "Adam learning rate of -fit-pairs")
	flag.IntVar(&o.fit.Anneal, "fit-anneal", 100000, "annealing proposals of each loss-augmented decoding of -fit-pairs")
	flag.IntVar(&o.fitN, "fit-n", 0, "puzzles -fit-pairs fits on (0: every validation image after the first -eval)")
	flag.StringVar((*string)(&o.fit.Margin), "fit-margin", "pieces", "loss of -fit-pairs' hinge: pieces (positions whose piece is wrong) or pixels (the l1 error of the reconstruction, scaled so that a wrong piece costs 1 on average)")
	flag.IntVar(&o.fit.Depth, "fit-depth", 0, "strip depth in pixels of the matrices -fit-pairs fits (0: the network's; up to the piece size, where the score sees whole pieces)")
	flag.BoolVar(&o.fit.FitUnary, "fit-unary", false, "let -fit-pairs fit the weight of the network's logits too (kept in the -fit-pairs file)")
	flag.BoolVar(&o.fit.FitBorder, "fit-border", false, "let -fit-pairs fit border vectors too, which score the strips of the pieces on the puzzle's four sides (kept in the -fit-pairs file)")
	flag.StringVar(&o.critic, "critic", "", "rerank the decoded arrangements with the critic saved in this file (by -train-critic): the arrangement and every one a swap or 3-cycle away, by the decoder's score plus -critic-weight times the critic's log-odds (see jigsaw.Critic)")
	flag.StringVar(&o.trainCritic, "train-critic", "", "train a critic on the training images, save it to this file (resumable from FILE.ckpt) and rerank with it as -critic does; its hard wrong arrangements are the moves the -load network's decoder score (and -ensemble's) likes best")
	flag.Float64Var(&o.dec.CriticWeight, "critic-weight", 0, "weight w of the critic's log-odds in the reranking score (0 with -critic or -train-critic: 10)")
	flag.IntVar(&o.criticCfg.Epochs, "critic-epochs", 20, "passes of -train-critic over the training images")
	flag.Float64Var(&o.criticCfg.HardShare, "critic-hard", 0.7, "share of -train-critic's wrong arrangements drawn from the moves the decoder's score likes best (the rest are random moves)")
	flag.IntVar(&o.criticCfg.HardTop, "critic-top", 8, "moves per training image -critic-hard draws from: those the decoder's score ranks highest")
	flag.Parse()
	o.criticCfg.Seed = o.seed
	o.fit.Seed = o.seed
	o.dec.Seed = o.seed
	if o.decodeSeed != 0 {
		o.dec.Seed = o.decodeSeed
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, o); err != nil {
		fmt.Fprintln(os.Stderr, "jigsaw:", err)
		os.Exit(1)
	}
}

// errNoData is returned when neither -mnist nor -images is given.
var errNoData = errors.New("no data: pass -mnist DIR (" + dataset.MNISTHelp + ") or -images DIR (a folder of PNG or JPEG pictures)")

func run(ctx context.Context, o options) error {
	if o.mnist == "" && o.images == "" {
		return errNoData
	}
	if o.oracle {
		return runOracle(o)
	}
	if err := checkCriticFlags(o); err != nil {
		return err
	}
	if o.table2 {
		if o.mnist == "" {
			return errors.New("-table2 needs -mnist DIR")
		}
		return runTable2(ctx, o)
	}
	train, test, name, err := load(o)
	if err != nil {
		return err
	}
	rec, err := experiment(ctx, o, o.p, train, test, name)
	if err != nil {
		return err
	}
	fmt.Print(formatMetrics(rec))
	return nil
}

// load returns the training and held-out images and the data set's name.
func load(o options) (train, test *dataset.Images, name string, err error) {
	if o.images != "" {
		all, err := dataset.LoadImageFolder(o.images, o.size, o.gray)
		if err != nil {
			return nil, nil, "", err
		}
		if all.N < 2 {
			return nil, nil, "", fmt.Errorf("%s: need at least 2 pictures, have %d", o.images, all.N)
		}
		nTrain := max(1, all.N*9/10)
		train, test, err := all.Split(nTrain)
		return train, test, "images:" + filepath.Base(o.images), err
	}
	full, testSet, err := dataset.LoadMNIST(o.mnist)
	if err != nil {
		return nil, nil, "", err
	}
	train, val, err := full.Split(50000)
	if err != nil {
		return nil, nil, "", err
	}
	if o.val {
		return train, val, "mnist-val", nil
	}
	return train, testSet, "mnist-test", nil
}

// stepsFor returns the default number of training steps for p pieces per
// side, sized so that Table 2 fits in about an hour on two shared cores: 2 × 2
// puzzles are solved exactly long before 1,500 steps.
func stepsFor(p int) int {
	if p <= 2 {
		return 1500
	}
	return 5000
}

// record is one line of results.
type record struct {
	P         int           `json:"p"`
	Data      string        `json:"data"`
	Config    jigsaw.Config `json:"config"`
	Steps     int           `json:"steps"`
	Batch     int           `json:"batch"`
	LR        float64       `json:"lr"`
	Seed      uint64        `json:"seed"`
	Params    int           `json:"params"`
	TrainSec  float64       `json:"train_seconds"`
	FinalLoss float64       `json:"final_loss"`
	// ResumedFrom is the step this run's training went on from, read from
	// the checkpoint an earlier run left (0: trained in one go). TrainSec
	// counts the earlier runs' seconds too.
	ResumedFrom int            `json:"resumed_from,omitempty"`
	Metrics     jigsaw.Metrics `json:"metrics"`
	// Oracle scores jigsaw.Oracle on the same puzzles: the best any method
	// can expect on the index-based metrics (absent in older records).
	Oracle     *jigsaw.Metrics `json:"oracle,omitempty"`
	GoMaxProcs int             `json:"gomaxprocs"`
	Command    string          `json:"command"`
	// Model is the checkpoint of -load, and TrainCommand the command that
	// trained it (from the JSON beside it), when the network was loaded.
	Model        string `json:"model,omitempty"`
	TrainCommand string `json:"train_command,omitempty"`
	// Ensemble lists the networks of -ensemble, decoded together with
	// Model's (absent for one network).
	Ensemble []member `json:"ensemble,omitempty"`
	// Decoder is the decoder of -pairwise, -seam and -anneal (absent for M(g)),
	// and DecodeSec the seconds it took on the held-out puzzles.
	Decoder   *jigsaw.Decoder `json:"decoder,omitempty"`
	DecodeSec float64         `json:"decode_seconds,omitempty"`
	// Search splits the puzzles the quadratic decoder gets wrong into
	// failures of its search and of its score (jigsaw.Net.SearchGap).
	Search *jigsaw.SearchGap `json:"search,omitempty"`
	// Pairs is the file of fitted compatibility matrices the decoder used
	// (-pairs or -fit-pairs), and Fit how -fit-pairs fitted them.
	Pairs string     `json:"pairs,omitempty"`
	Fit   *fitRecord `json:"fit,omitempty"`
	// Critic describes the critic that reranked the decoded arrangements
	// (-critic, -train-critic).
	Critic *criticRecord `json:"critic,omitempty"`
}

// criticRecord describes the critic of a run: its file and how it was
// trained (-train-critic writes this record beside the critic, as FILE.json,
// and -critic reads it back).
type criticRecord struct {
	File        string               `json:"file"`
	Params      int                  `json:"params"`
	Config      *jigsaw.CriticConfig `json:"config,omitempty"`
	Steps       int                  `json:"steps,omitempty"`
	FinalLoss   float64              `json:"final_loss,omitempty"`
	ResumedFrom int                  `json:"resumed_from,omitempty"`
	HardSec     float64              `json:"hard_seconds,omitempty"`
	TrainSec    float64              `json:"train_seconds,omitempty"`
	Command     string               `json:"command,omitempty"`
}

// member is one network of -ensemble besides the -load one.
type member struct {
	Model        string  `json:"model"`
	Seed         uint64  `json:"seed"`
	Steps        int     `json:"steps"`
	TrainSec     float64 `json:"train_seconds"`
	TrainCommand string  `json:"train_command,omitempty"`
}

// fitRecord describes a -fit-pairs run.
type fitRecord struct {
	Config  jigsaw.FitConfig     `json:"config"`
	Puzzles int                  `json:"puzzles"`
	First   int                  `json:"first_image"`
	Epochs  []jigsaw.FitProgress `json:"epochs"`
	Seconds float64              `json:"seconds"`
}

// experiment trains and evaluates one puzzle size and writes its JSON,
// figure and checkpoint under o.out.
func experiment(ctx context.Context, o options, p int, train, test *dataset.Images, name string) (*record, error) {
	var (
		net *jigsaw.Net
		rec *record
		err error
	)
	if err := os.MkdirAll(o.out, 0o755); err != nil {
		return nil, err
	}
	base := filepath.Join(o.out, fmt.Sprintf("jigsaw_%s_p%d", safe(name), p))
	if o.load != "" {
		if net, rec, err = loadTrained(o, "-load", o.load, p, train); err != nil {
			return nil, err
		}
	} else if net, rec, err = trainNet(ctx, o, p, train, base+".ckpt"); err != nil {
		return nil, err
	}
	ens, err := ensembleOf(o, net, p, train, rec)
	if err != nil {
		return nil, err
	}
	if o.dec.Pairwise != 0 || o.dec.Seam != 0 || o.dec.Anneal != 0 {
		rec.Decoder = &o.dec
	}
	rec.Data, rec.GoMaxProcs, rec.Command = name, runtime.GOMAXPROCS(0), strings.Join(os.Args, " ")
	held := test
	if o.evalN > 0 && o.evalN < test.N {
		held = test.Subset(seq(o.evalN))
	}
	z, err := jigsaw.MakePuzzles(net.Grid(), held.Pixels, nil, evalRNG(o.seed))
	if err != nil {
		return nil, err
	}
	dec := o.dec
	if dec.Pair, err = pairWeights(o, net, test, rec); err != nil {
		return nil, err
	}
	if dec.Critic, err = criticOf(ctx, o, ens, train, rec); err != nil {
		return nil, err
	}
	if dec.Critic != nil {
		rec.Decoder = &o.dec
		if o.dec.CriticWeight == 0 {
			o.dec.CriticWeight = defaultCriticWeight
		}
		dec.CriticWeight = o.dec.CriticWeight
	}
	start := time.Now()
	preds, err := ens.SolveWith(z, dec)
	if err != nil {
		return nil, err
	}
	if rec.Decoder != nil {
		rec.DecodeSec = time.Since(start).Seconds()
	}
	if rec.Metrics, err = jigsaw.ScoreAll(z, preds); err != nil {
		return nil, err
	}
	if o.dec.Pairwise != 0 || o.dec.Seam != 0 || dec.Critic != nil {
		g, err := ens.SearchGap(z, preds, dec)
		if err != nil {
			return nil, err
		}
		rec.Search = &g
	}
	if rec.Oracle, err = oracleDraw(z, o.seed, 0); err != nil {
		return nil, err
	}
	if err := writeJSON(base+".json", rec); err != nil {
		return nil, err
	}
	wrote := "json,png"
	if o.load == "" {
		if err := net.SaveFile(base + ".gob"); err != nil {
			return nil, err
		}
		wrote = "json,gob,png"
	}
	taus, err := parseFloats(o.figTaus)
	if err != nil {
		return nil, err
	}
	if err := writeFigure(base+".png", net, ens, z, taus, dec); err != nil {
		return nil, err
	}
	fmt.Fprintf(os.Stderr, "wrote %s.{%s}\n", base, wrote)
	return rec, nil
}

// pairWeights returns the fitted compatibility matrices the decoder is to
// use: read from -pairs, or fitted by -fit-pairs on the validation images
// after the first -eval (and saved); nil for the network's own. It notes
// them in rec.
func pairWeights(o options, net *jigsaw.Net, val *dataset.Images, rec *record) (*jigsaw.PairWeights, error) {
	switch {
	case o.pairs != "" && o.fitPairs != "":
		return nil, errors.New("-pairs and -fit-pairs exclude each other")
	case o.pairs != "":
		w, err := jigsaw.LoadPairsFile(o.pairs)
		if err != nil {
			return nil, err
		}
		rec.Pairs = o.pairs
		return w, nil
	case o.fitPairs == "":
		return nil, nil
	case o.load == "" || !o.val || o.table2:
		return nil, errors.New("-fit-pairs fits a loaded network's decoder on validation images: it needs -load and -val, and not -table2")
	case o.evalN <= 0 || o.evalN >= val.N:
		return nil, fmt.Errorf("-fit-pairs needs -eval n with 0 < n < %d: the images after the first n are fitted on", val.N)
	}
	idx := make([]int, 0, val.N-o.evalN)
	for i := o.evalN; i < val.N && (o.fitN <= 0 || len(idx) < o.fitN); i++ {
		idx = append(idx, i)
	}
	z, err := jigsaw.MakePuzzles(net.Grid(), val.Subset(idx).Pixels, nil, rand.New(rand.NewPCG(o.seed, 0x666974))) // "fit"
	if err != nil {
		return nil, err
	}
	fr := &fitRecord{Config: o.fit, Puzzles: z.Len(), First: o.evalN}
	start := time.Now()
	w, err := net.FitPairs(z, o.dec, nil, o.fit, func(p jigsaw.FitProgress) {
		fr.Epochs = append(fr.Epochs, p)
		if !o.quiet {
			unary := ""
			if o.fit.FitUnary {
				unary = fmt.Sprintf(", weight of the logits %.4f", p.Unary)
			}
			if o.fit.FitBorder {
				unary += fmt.Sprintf(", border norm %.4f", p.BorderNorm)
			}
			fmt.Fprintf(os.Stderr, "fit-pairs epoch %d/%d: mean hinge %.4f, %.1f%% of puzzles at the truth%s, %.0fs\n",
				p.Epoch, o.fit.Epochs, p.Hinge, 100*p.AtTruth, unary, time.Since(start).Seconds())
		}
	})
	if err != nil {
		return nil, err
	}
	fr.Seconds = time.Since(start).Seconds()
	if err := jigsaw.SavePairsFile(o.fitPairs, w); err != nil {
		return nil, err
	}
	rec.Pairs, rec.Fit = o.fitPairs, fr
	return w, nil
}

// defaultCriticWeight is the weight of the critic's log-odds when
// -critic-weight is not given; chosen on validation puzzles
// (models/jigsaw/README.md).
const defaultCriticWeight = 10

// checkCriticFlags refuses combinations of the critic's flags that cannot
// work, before any data is read.
func checkCriticFlags(o options) error {
	switch {
	case o.critic == "" && o.trainCritic == "" && o.dec.CriticWeight != 0:
		return errors.New("-critic-weight needs -critic or -train-critic")
	case o.critic != "" && o.trainCritic != "":
		return errors.New("-critic and -train-critic exclude each other")
	case (o.critic != "" || o.trainCritic != "") && o.table2 && strings.Contains(o.sizes, ","):
		return errors.New("-critic and -train-critic are for one puzzle size: with -table2, give one size in -sizes")
	}
	return nil
}

// criticOf returns the critic of -critic (read) or -train-critic (trained
// on train, with hard moves ranked by ens under the decoder's weights, and
// saved), or nil; it notes the critic in rec.
func criticOf(ctx context.Context, o options, ens *jigsaw.Ensemble, train *dataset.Images, rec *record) (*jigsaw.Critic, error) {
	switch {
	case o.critic == "" && o.trainCritic == "":
		return nil, nil
	case o.critic != "":
		c, err := jigsaw.LoadCriticFile(o.critic)
		if err != nil {
			return nil, fmt.Errorf("-critic: %w", err)
		}
		if c.Grid() != ens.Grid() {
			return nil, fmt.Errorf("-critic %s: a critic for %+v, the network is for %+v", o.critic, c.Grid(), ens.Grid())
		}
		rec.Critic = &criticRecord{File: o.critic, Params: c.NumParams()}
		// the record of the run that trained it, when it is there
		b, err := os.ReadFile(o.critic + ".json")
		if errors.Is(err, fs.ErrNotExist) {
			return c, nil
		}
		if err != nil {
			return nil, err
		}
		if err := json.Unmarshal(b, rec.Critic); err != nil {
			return nil, fmt.Errorf("%s.json: %w", o.critic, err)
		}
		rec.Critic.File = o.critic
		return c, nil
	}
	c, err := jigsaw.NewCritic(ens.Grid(), o.seed)
	if err != nil {
		return nil, fmt.Errorf("-train-critic: %w", err)
	}
	cfg := o.criticCfg
	if cfg.HardShare > 0 {
		cfg.Hard, cfg.HardDecoder = ens, o.dec
		cfg.HardDecoder.Critic, cfg.HardDecoder.CriticWeight = nil, 0
	}
	cfg.Checkpoint = o.trainCritic + ".ckpt"
	if !o.quiet {
		cfg.Progress = os.Stderr
	}
	fmt.Fprintf(os.Stderr, "critic: %d parameters, %d training images, %d epochs\n", c.NumParams(), train.N, cfg.Epochs)
	res, err := c.Train(ctx, jigsaw.Data{Pixels: train.Pixels}, cfg)
	if err != nil {
		if ctx.Err() != nil {
			fmt.Fprintf(os.Stderr, "critic: stopped; the same command goes on from %s\n", cfg.Checkpoint)
		}
		return nil, err
	}
	if err := c.SaveFile(o.trainCritic); err != nil {
		return nil, err
	}
	kept := res.Config
	kept.Hard, kept.Progress = nil, nil
	rec.Critic = &criticRecord{File: o.trainCritic, Params: c.NumParams(), Config: &kept, Steps: len(res.Losses),
		FinalLoss: tailMean(res.Losses, 100), ResumedFrom: res.ResumedFrom, HardSec: res.HardSeconds, TrainSec: res.Seconds,
		Command: strings.Join(os.Args, " ")}
	if err := writeJSON(o.trainCritic+".json", rec.Critic); err != nil {
		return nil, err
	}
	return c, nil
}

// trainNet trains a network for p pieces per side on train, resumably: the
// state after every 1,000 steps, and on interruption, goes to ckpt, and a run
// that finds ckpt goes on from it.
func trainNet(ctx context.Context, o options, p int, train *dataset.Images, ckpt string) (*jigsaw.Net, *record, error) {
	cfg := o.cfg
	cfg.P, cfg.Channels, cfg.Height, cfg.Width, cfg.Heads = p, train.Channels, train.Height, train.Width, 1
	net, err := jigsaw.New(cfg, o.seed)
	if err != nil {
		return nil, nil, err
	}
	steps := o.steps
	if steps == 0 {
		steps = stepsFor(p)
	}
	tc := jigsaw.TrainConfig{Steps: steps, Batch: o.batch, LR: o.lr, Seed: o.seed, ReportEvery: 100, Checkpoint: ckpt}
	if !o.quiet {
		tc.Progress = func(step int, loss, ips float64) {
			fmt.Fprintf(os.Stderr, "p=%d step %d/%d loss %.5f %.0f images/s\n", p, step, steps, loss, ips)
		}
	}
	tc.Resumed = func(step int, _ float64) {
		fmt.Fprintf(os.Stderr, "p=%d: resuming from step %d of %s\n", p, step, ckpt)
	}
	fmt.Fprintf(os.Stderr, "p=%d: %d parameters, %d training images, %d steps of %d\n", p, net.NumParams(), train.N, steps, o.batch)
	res, err := net.Train(ctx, jigsaw.Data{Pixels: train.Pixels}, tc)
	if err != nil {
		if res != nil && ctx.Err() != nil {
			fmt.Fprintf(os.Stderr, "p=%d: stopped after step %d; the same command goes on from %s\n", p, len(res.Losses), ckpt)
		}
		return nil, nil, err
	}
	rec := &record{P: p, Config: cfg, Steps: steps, Batch: o.batch, LR: o.lr, Seed: o.seed, Params: net.NumParams(),
		ResumedFrom: res.ResumedFrom, TrainSec: res.Seconds, FinalLoss: tailMean(res.Losses, 100)}
	return net, rec, nil
}

// ensembleOf returns the ensemble of net and the networks of -ensemble
// for p pieces per side, and notes the latter in rec.
func ensembleOf(o options, net *jigsaw.Net, p int, train *dataset.Images, rec *record) (*jigsaw.Ensemble, error) {
	nets := []*jigsaw.Net{net}
	if o.ensemble != "" {
		switch {
		case o.load == "":
			return nil, errors.New("-ensemble decodes saved networks together with the -load one: it needs -load")
		case o.fitPairs != "" || o.pairs != "":
			return nil, errors.New("-ensemble decodes with the networks' own compatibilities: it excludes -pairs and -fit-pairs")
		}
		for _, load := range strings.Split(o.ensemble, ",") {
			m, r, err := loadTrained(o, "-ensemble", strings.TrimSpace(load), p, train)
			if err != nil {
				return nil, err
			}
			nets = append(nets, m)
			rec.Ensemble = append(rec.Ensemble, member{Model: r.Model, Seed: r.Seed, Steps: r.Steps, TrainSec: r.TrainSec, TrainCommand: r.TrainCommand})
		}
	}
	ens, err := jigsaw.NewEnsemble(nets...)
	if err != nil {
		return nil, fmt.Errorf("-ensemble: %w", err)
	}
	return ens, nil
}

// loadTrained reads the network saved at load (-load or one of -ensemble,
// the flag its errors name)
// for p pieces per side (with -table2, load is a folder and the network the
// one checkpoint jigsaw_*_pN.gob in it). The training fields of the record
// come from the JSON written beside the checkpoint by the run that trained
// it, when it is there.
func loadTrained(o options, flagName, load string, p int, train *dataset.Images) (*jigsaw.Net, *record, error) {
	path := load
	if o.table2 {
		m, err := filepath.Glob(filepath.Join(load, fmt.Sprintf("jigsaw_*_p%d.gob", p)))
		if err != nil {
			return nil, nil, err
		}
		if len(m) != 1 {
			return nil, nil, fmt.Errorf("%s %s: want one jigsaw_*_p%d.gob, found %d", flagName, load, p, len(m))
		}
		path = m[0]
	}
	net, err := jigsaw.LoadFile(path)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", flagName, err)
	}
	if g := net.Grid(); g.P != p || g.Channels != train.Channels || g.Height != train.Height || g.Width != train.Width {
		return nil, nil, fmt.Errorf("%s %s: network for %d x %d pieces of %dx%dx%d images, want %d x %d of %dx%dx%d", flagName, path, g.P, g.P, g.Channels, g.Height, g.Width, p, p, train.Channels, train.Height, train.Width)
	}
	if g := net.Grid(); o.cfg.Crop != 0 && (g.CropH() != o.cfg.Crop || g.CropW() != o.cfg.Crop) {
		return nil, nil, fmt.Errorf("%s %s: network for pieces cut from a %dx%d px crop, -crop asks for %d", flagName, path, g.CropH(), g.CropW(), o.cfg.Crop)
	}
	rec := &record{P: p, Config: net.Config(), Params: net.NumParams(), Model: path}
	trained := strings.TrimSuffix(path, ".gob") + ".json"
	b, err := os.ReadFile(trained)
	if errors.Is(err, fs.ErrNotExist) {
		return net, rec, nil // a checkpoint without its run's JSON
	}
	if err != nil {
		return nil, nil, err
	}
	var t record
	if err := json.Unmarshal(b, &t); err != nil {
		return nil, nil, fmt.Errorf("%s: %w", trained, err)
	}
	rec.Steps, rec.Batch, rec.LR, rec.Seed = t.Steps, t.Batch, t.LR, t.Seed
	rec.TrainSec, rec.FinalLoss, rec.TrainCommand = t.TrainSec, t.FinalLoss, t.Command
	return net, rec, nil
}

func tailMean(x []float64, k int) float64 {
	k = min(k, len(x))
	s := 0.0
	for _, v := range x[len(x)-k:] {
		s += v
	}
	return s / float64(max(k, 1))
}

func seq(n int) []int {
	idx := make([]int, n)
	for i := range idx {
		idx[i] = i
	}
	return idx
}

func safe(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '/' || r == ':' || r == ' ' {
			return '-'
		}
		return r
	}, s)
}

func parseFloats(s string) ([]float64, error) {
	var out []float64
	for _, f := range strings.Split(s, ",") {
		v, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
		if err != nil || !(v > 0) {
			return nil, fmt.Errorf("bad temperature %q in %q", f, s)
		}
		out = append(out, v)
	}
	return out, nil
}
