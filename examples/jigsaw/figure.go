package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/permlab/permlab/networks/jigsaw"
	"github.com/permlab/permlab/networks/jigsaw/decode"
	"github.com/permlab/permlab/perm"
)

// figureRows is the number of puzzles the figure shows.
const figureRows = 6

// figureIters is the number of Sinkhorn iterations of the soft
// reconstructions: more than in training, so that the small temperatures
// are close to their limit.
const figureIters = 100

// writeFigure draws, for the first puzzles of z, one row each: the original
// (cropped) image, the scrambled pieces, the soft reconstructions at taus and
// the hard reconstruction, like Figure 3a of the paper. The soft
// reconstructions are net's, the hard one is ens's.
func writeFigure(path string, net *jigsaw.Net, ens *decode.Ensemble, z *jigsaw.Puzzles, taus []float64, dec decode.Decoder) error {
	g := net.Grid()
	k := min(figureRows, z.Len())
	head := &jigsaw.Puzzles{Grid: g, Pieces: z.Pieces[:k*g.N()*g.PieceSize()], Scrambled: z.Scrambled[:k*g.N()*g.PieceSize()], Perms: z.Perms[:k]}
	ident := make([]perm.Perm, k)
	for i := range ident {
		ident[i] = perm.Identity(g.N())
	}
	scrambled, err := jigsaw.Reconstruct(head, ident)
	if err != nil {
		return err
	}
	truth, err := jigsaw.Reconstruct(head, head.Perms)
	if err != nil {
		return err
	}
	soft := make([][][]float64, len(taus))
	for i, tau := range taus {
		if soft[i], err = net.SoftReconstruct(head, tau, figureIters); err != nil {
			return err
		}
	}
	preds, err := ens.Solve(head, dec)
	if err != nil {
		return err
	}
	hard, err := jigsaw.Reconstruct(head, preds)
	if err != nil {
		return err
	}
	tile := func(pix []float64) jigsaw.Tile {
		return jigsaw.Tile{Pix: pix, Channels: g.Channels, H: g.CropH(), W: g.CropW()}
	}
	rows := make([][]jigsaw.Tile, k)
	for b := range k {
		rows[b] = append(rows[b], tile(truth[b]), tile(scrambled[b]))
		for i := range taus {
			rows[b] = append(rows[b], tile(soft[i][b]))
		}
		rows[b] = append(rows[b], tile(hard[b]))
	}
	scale := max(1, 112/max(g.CropH(), g.CropW()))
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := jigsaw.WritePNG(f, rows, scale, 4); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// runFigure draws the figure of a saved network (the figure subcommand):
// the figure an eval run with the same flags writes beside its record, for
// the first figureRows held-out puzzles, and nothing else.
func runFigure(o options) error {
	train, test, name, err := load(o)
	if err != nil {
		return err
	}
	net, rec, err := loadTrained(o, "-load", o.load, o.p, train)
	if err != nil {
		return err
	}
	ens, err := ensembleOf(o, net, o.p, train, rec)
	if err != nil {
		return err
	}
	dec := o.dec
	if dec.Pair, err = pairWeights(o, net, test, rec); err != nil {
		return err
	}
	z, err := jigsaw.MakePuzzles(net.Grid(), test.Subset(seq(min(figureRows, test.N))).Pixels, nil, evalRNG(o.seed))
	if err != nil {
		return err
	}
	taus, err := parseFloats(o.figTaus)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(o.out, 0o755); err != nil {
		return err
	}
	path := filepath.Join(o.out, fmt.Sprintf("jigsaw_%s_p%d_figure.png", safe(name), o.p))
	if err := writeFigure(path, net, ens, z, taus, dec); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "wrote %s\n", path)
	return nil
}
