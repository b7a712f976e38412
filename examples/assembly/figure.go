package main

import (
	"encoding/json"
	"os"

	"github.com/permlab/permlab/networks/jigsaw"
)

// figureTau is the temperature of the soft assemblies, as in Figure 3b.
const figureTau = 1

// writeFigure draws one row per class: the first test digit of that class,
// its hard assemblies into 0, ..., 9, then its soft assemblies
// S(g/τ)^T X̃ at τ = 1 into 0, ..., 9.
func writeFigure(path string, net *jigsaw.Net, z *jigsaw.Puzzles) error {
	g := net.Grid()
	heads := net.Config().Heads
	var pick []int
	for c := range heads {
		for i, l := range z.Labels {
			if l == c {
				pick = append(pick, i)
				break
			}
		}
	}
	np := g.N() * g.PieceSize()
	sub := &jigsaw.Puzzles{Grid: g}
	for _, i := range pick {
		sub.Pieces = append(sub.Pieces, z.Pieces[i*np:(i+1)*np]...)
		sub.Scrambled = append(sub.Scrambled, z.Scrambled[i*np:(i+1)*np]...)
		sub.Perms = append(sub.Perms, z.Perms[i])
		sub.Labels = append(sub.Labels, z.Labels[i])
	}
	truth, err := jigsaw.Reconstruct(sub, sub.Perms)
	if err != nil {
		return err
	}
	full := func(pix []float64) jigsaw.Tile {
		return jigsaw.Tile{Pix: pix, Channels: g.Channels, H: g.Height, W: g.Width}
	}
	rows := make([][]jigsaw.Tile, len(pick))
	for r := range rows {
		rows[r] = append(rows[r], full(g.Uncrop(truth[r])))
	}
	soft := make([][][]float64, heads)
	for k := range heads {
		_, hard, err := net.Assemble(sub, k)
		if err != nil {
			return err
		}
		for r := range rows {
			rows[r] = append(rows[r], full(hard[r]))
		}
		w := *sub
		w.Labels = make([]int, sub.Len())
		for i := range w.Labels {
			w.Labels[i] = k
		}
		if soft[k], err = net.SoftReconstruct(&w, figureTau, 100); err != nil {
			return err
		}
	}
	for k := range heads {
		for r := range rows {
			rows[r] = append(rows[r], full(g.Uncrop(soft[k][r])))
		}
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := jigsaw.WritePNG(f, rows, 2, 2); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func writeJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}
