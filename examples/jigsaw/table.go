package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"gonum.org/v1/gonum/stat"

	"github.com/permlab/permlab/dataset"
	"github.com/permlab/permlab/internal/jsonl"
	"github.com/permlab/permlab/networks/jigsaw"
	"github.com/permlab/permlab/networks/jigsaw/decode"
)

// tableSizes are the puzzle sizes of the MNIST columns of Table 2.
var tableSizes = []int{2, 3, 4, 5, 6}

// paper holds the MNIST columns of the seed paper's Table 2, by row.
var paper = map[string][5]float64{
	"Kendall tau":     {1, .83, .43, .39, .27},
	"Prop. wrong":     {0, .09, .45, .45, .59},
	"Prop. any wrong": {0, .28, .97, 1, 1},
	"l1":              {0, 0, .04, .02, .03},
	"l2":              {0, 0, .26, .18, .19},
}

// evalRNG returns the source that scrambles the held-out puzzles: fixed by
// the seed and independent of training.
func evalRNG(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, 0x74657374)) }

// runTable2 runs every size not yet in o.results, appending each finished
// one, then prints the table.
func runTable2(ctx context.Context, o options) error {
	sizes, err := parseSizes(o.sizes)
	if err != nil {
		return err
	}
	done, err := readRecords(o.results)
	if err != nil {
		return err
	}
	var train, test *dataset.Images
	for _, p := range sizes {
		if r, ok := done[p]; ok {
			if err := sameCrop(r, o); err != nil {
				return err
			}
			fmt.Fprintf(os.Stderr, "p=%d: already in %s, skipped\n", p, o.results)
			continue
		}
		if train == nil {
			if train, test, _, err = load(o); err != nil {
				return err
			}
		}
		rec, err := experiment(ctx, o, p, train, test, "mnist-test")
		if err != nil {
			return err
		}
		if err := appendRecord(o.results, rec); err != nil {
			return err
		}
		done[p] = rec
	}
	fmt.Print(formatTable(done))
	return nil
}

// sameCrop returns an error when this run asks for a -crop and a finished
// size of the -results file was cut from another square, so that a run is
// not skipped in favour of a different experiment. Without -crop (printing
// a finished table, or -load, which takes the networks' crop) any record
// goes; the table prints the crop where one was set.
func sameCrop(r *record, o options) error {
	if o.cfg.Crop == 0 {
		return nil
	}
	g, err := recordGrid(r)
	if err != nil {
		return fmt.Errorf("%s: p=%d: %w", o.results, r.P, err)
	}
	if g.CropH() == o.cfg.Crop && g.CropW() == o.cfg.Crop {
		return nil
	}
	return fmt.Errorf("%s holds p=%d cut from a %dx%d px crop, this run asks for -crop %d: give another -results file", o.results, r.P, g.CropH(), g.CropW(), o.cfg.Crop)
}

// recordGrid returns the geometry r's pieces were cut with, from the same
// rule the network used (jigsaw.NewGridCrop).
func recordGrid(r *record) (jigsaw.Grid, error) {
	return jigsaw.NewGridCrop(max(1, r.Config.Channels), r.Config.Height, r.Config.Width, r.P, r.Config.Crop)
}

// parseSizes parses the comma-separated -sizes list; each size must be a
// column of Table 2 and appear once. The empty string means all of them.
func parseSizes(s string) ([]int, error) {
	if strings.TrimSpace(s) == "" {
		return tableSizes, nil
	}
	var out []int
	seen := make(map[int]bool)
	for _, f := range strings.Split(s, ",") {
		p, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || !slices.Contains(tableSizes, p) {
			return nil, fmt.Errorf("-sizes %q: %q is not a Table 2 size (2 to 6)", s, f)
		}
		if seen[p] {
			return nil, fmt.Errorf("-sizes %q: size %d given twice", s, p)
		}
		seen[p] = true
		out = append(out, p)
	}
	return out, nil
}

func readRecords(path string) (map[int]*record, error) {
	recs, err := jsonl.Read[*record](path)
	if err != nil {
		return nil, err
	}
	out := make(map[int]*record, len(recs))
	for _, r := range recs {
		out[r.P] = r
	}
	return out, nil
}

func appendRecord(path string, r *record) error { return jsonl.Append(path, r) }

func writeJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

// formatTable renders Table 2 as markdown, "ours (paper)" per cell, with our
// extra rows (l2 as MSE, errors up to identical pieces, time) below.
func formatTable(recs map[int]*record) string {
	var b strings.Builder
	b.WriteString("| MNIST, measured (paper) |")
	for _, p := range tableSizes {
		fmt.Fprintf(&b, " %dx%d |", p, p)
	}
	b.WriteString("\n|---|")
	for range tableSizes {
		b.WriteString("---|")
	}
	b.WriteString("\n")
	rows := []struct {
		name string
		get  func(m jigsaw.Metrics) float64
	}{
		{"Kendall tau", func(m jigsaw.Metrics) float64 { return m.KendallTau }},
		{"Prop. wrong", func(m jigsaw.Metrics) float64 { return m.PropWrong }},
		{"Prop. any wrong", func(m jigsaw.Metrics) float64 { return m.PropAnyWrong }},
		{"l1", func(m jigsaw.Metrics) float64 { return m.L1 }},
		{"l2", func(m jigsaw.Metrics) float64 { return m.RMSE }},
		{"l2 as MSE", func(m jigsaw.Metrics) float64 { return m.MSE }},
		{"Prop. wrong, identical pieces equal", func(m jigsaw.Metrics) float64 { return m.PropWrongIdentical }},
		{"Prop. any wrong, identical pieces equal", func(m jigsaw.Metrics) float64 { return m.PropAnyWrongIdentical }},
	}
	for _, row := range rows {
		fmt.Fprintf(&b, "| %s |", row.name)
		pv, hasPaper := paper[row.name]
		for i, p := range tableSizes {
			r, ok := recs[p]
			switch {
			case !ok:
				b.WriteString(" - |")
			case hasPaper:
				fmt.Fprintf(&b, " %.3f (%.2f) |", row.get(r.Metrics), pv[i])
			default:
				fmt.Fprintf(&b, " %.4f |", row.get(r.Metrics))
			}
		}
		b.WriteString("\n")
	}
	// Every row below but the training one appears only where a record has
	// what it shows, so that tables made before it existed print as they did.
	if anyRecord(recs, func(r *record) bool { return r.Oracle != nil }) {
		for _, row := range rows[:3] {
			writeRow(&b, recs, row.name+", best possible", func(r *record) string {
				if r.Oracle == nil {
					return ""
				}
				return fmt.Sprintf("%.3f", row.get(*r.Oracle))
			})
		}
	}
	// A crop other than the default (-crop).
	if anyRecord(recs, func(r *record) bool { return r.Config.Crop != 0 }) {
		writeRow(&b, recs, "centred crop, piece side", func(r *record) string {
			g, err := recordGrid(r)
			if err != nil {
				return "?"
			}
			return fmt.Sprintf("%d px, %d px", g.CropH(), g.PieceH)
		})
	}
	writeRow(&b, recs, "training steps x batch, minutes", func(r *record) string {
		return fmt.Sprintf("%d x %d, %.1f", r.Steps, r.Batch, r.TrainSec/60)
	})
	// An ensemble (-ensemble): its networks and their training minutes in all.
	if anyRecord(recs, func(r *record) bool { return len(r.Ensemble) > 0 }) {
		writeRow(&b, recs, "ensemble: networks, seeds, training minutes in all", func(r *record) string {
			seeds, sec := []string{strconv.FormatUint(r.Seed, 10)}, r.TrainSec
			for _, m := range r.Ensemble {
				seeds = append(seeds, strconv.FormatUint(m.Seed, 10))
				sec += m.TrainSec
			}
			return fmt.Sprintf("%d, %s, %.1f", len(seeds), strings.Join(seeds, " "), sec/60)
		})
	}
	if !anyRecord(recs, func(r *record) bool { return r.Decoder != nil }) {
		return b.String()
	}
	// The seam column appears only where a record uses it.
	hasSeam := anyRecord(recs, func(r *record) bool { return r.Decoder != nil && r.Decoder.Seam != 0 })
	seamCol := ""
	if hasSeam {
		seamCol = " seam weight,"
	}
	writeRow(&b, recs, fmt.Sprintf("decoder: pairwise weight,%s annealing proposals, minutes", seamCol), func(r *record) string {
		if r.Decoder == nil {
			return ""
		}
		seam := ""
		if hasSeam {
			seam = fmt.Sprintf(" %g,", r.Decoder.Seam)
		}
		return fmt.Sprintf("%g,%s %d, %.1f", r.Decoder.Pairwise, seam, r.Decoder.Anneal, r.DecodeSec/60)
	})
	// Annealing temperatures other than the defaults (-anneal-start,
	// -anneal-end).
	if anyRecord(recs, func(r *record) bool {
		return r.Decoder != nil && (r.Decoder.StartTemp != 0 || r.Decoder.EndTemp != 0)
	}) {
		writeRow(&b, recs, "decoder: annealing temperatures, start to end", func(r *record) string {
			if r.Decoder == nil || r.Decoder.Anneal == 0 {
				return ""
			}
			start, end := r.Decoder.Temps()
			return fmt.Sprintf("%g to %g", start, end)
		})
	}
	// Fitted compatibilities (-pairs).
	if anyRecord(recs, func(r *record) bool { return r.Pairs != "" }) {
		writeRow(&b, recs, "decoder: fitted compatibilities", func(r *record) string {
			if r.Pairs == "" {
				return ""
			}
			return filepath.Base(r.Pairs)
		})
	}
	// A critic (-critic, -train-critic): its weight and training minutes.
	if anyRecord(recs, func(r *record) bool { return r.Critic != nil }) {
		writeRow(&b, recs, "decoder: critic weight, critic training minutes", func(r *record) string {
			if r.Critic == nil || r.Decoder == nil {
				return ""
			}
			return fmt.Sprintf("%g, %.1f", r.Decoder.CriticWeight, r.Critic.TrainSec/60)
		})
	}
	return b.String()
}

// anyRecord reports whether some record of recs has what has looks for.
func anyRecord(recs map[int]*record, has func(*record) bool) bool {
	for _, r := range recs {
		if has(r) {
			return true
		}
	}
	return false
}

// writeRow writes the table row label: for each size of the table, the
// cell cell returns for its record, or "-" where there is no record or cell
// returns "".
func writeRow(b *strings.Builder, recs map[int]*record, label string, cell func(r *record) string) {
	fmt.Fprintf(b, "| %s |", label)
	for _, p := range tableSizes {
		c := ""
		if r, ok := recs[p]; ok {
			c = cell(r)
		}
		if c == "" {
			c = "-"
		}
		fmt.Fprintf(b, " %s |", c)
	}
	b.WriteString("\n")
}

// formatMetrics renders one run's metrics.
func formatMetrics(r *record) string {
	m := r.Metrics
	return fmt.Sprintf("%s, %dx%d, %d puzzles: Kendall tau %.4f, prop. wrong %.4f, prop. any wrong %.4f, l1 %.4f, l2 (RMSE) %.4f, l2 (MSE) %.5f, prop. wrong up to identical pieces %.4f, any wrong up to identical %.4f\n",
		r.Data, r.P, r.P, m.Puzzles, m.KendallTau, m.PropWrong, m.PropAnyWrong, m.L1, m.RMSE, m.MSE, m.PropWrongIdentical, m.PropAnyWrongIdentical) + formatSearch(r.Search)
}

// formatSearch renders a decoder's search gap ("" without one).
func formatSearch(g *decode.Gap) string {
	if g == nil || g.Puzzles == 0 {
		return ""
	}
	pc := func(k int) float64 { return 100 * float64(k) / float64(g.Puzzles) }
	return fmt.Sprintf("decoder: %.1f%% of puzzles solved; %.1f%% wrong where the score ranks the truth higher (search misses, mean shortfall %.3g), %.1f%% wrong where it ranks the decoded arrangement at least as high (score misses)\n",
		pc(g.Solved), pc(g.SearchMisses), g.MeanShortfall, pc(g.ScoreMisses))
}

// oracleDraw scores draw k of jigsaw.Oracle on z, with ties among identical
// pieces broken by a source fixed by the seed and k. Draw 0 is the oracle of
// the records and tables; the others place the identical pieces with other
// random numbers.
func oracleDraw(z *jigsaw.Puzzles, seed uint64, k int) (*jigsaw.Metrics, error) {
	pred, err := jigsaw.Oracle(z, rand.New(rand.NewPCG(seed, 0x6f7261636c65+uint64(k)))) // "oracle"
	if err != nil {
		return nil, err
	}
	m, err := jigsaw.ScoreAll(z, pred)
	if err != nil {
		return nil, err
	}
	return &m, nil
}

// runOracle prints, for each of -sizes, the oracle's index-based metrics on
// the held-out puzzles a run with the same -seed, -val and -eval scores,
// beside the paper's Table 2. It trains nothing.
func runOracle(o options) error {
	if o.mnist == "" {
		return errors.New("oracle needs -mnist DIR")
	}
	sizes, err := parseSizes(o.sizes)
	if err != nil {
		return err
	}
	_, held, name, err := load(o)
	if err != nil {
		return err
	}
	if o.evalN > 0 && o.evalN < held.N {
		held = held.Subset(seq(o.evalN))
	}
	cut := ""
	if o.cfg.Crop > 0 {
		cut = fmt.Sprintf(", pieces cut from the centred %d px square", o.cfg.Crop)
	}
	fmt.Printf("Best possible on %s (%d puzzles, scrambling seed %d%s): identical pieces placed at random among themselves, everything else right (paper in parentheses)\n\n", name, held.N, o.seed, cut)
	fmt.Print("| size | Kendall tau | Prop. wrong | Prop. any wrong | pieces | digits with ink cut off | ink cut off |\n|---|---|---|---|---|---|---|\n")
	spreads := make(map[int][3][2]float64)
	for _, p := range sizes {
		g, err := jigsaw.NewGridCrop(held.Channels, held.Height, held.Width, p, o.cfg.Crop)
		if err != nil {
			return err
		}
		z, err := jigsaw.MakePuzzles(g, held.Pixels, nil, evalRNG(o.seed))
		if err != nil {
			return err
		}
		m, err := oracleDraw(z, o.seed, 0)
		if err != nil {
			return err
		}
		digits, ink, err := cutOff(g, held)
		if err != nil {
			return err
		}
		i := slices.Index(tableSizes, p)
		fmt.Printf("| %dx%d | %.3f (%.2f) | %.3f (%.2f) | %.3f (%.2f) | %d px of a %d px crop | %.1f%% | %.2f%% |\n", p, p,
			m.KendallTau, paper["Kendall tau"][i], m.PropWrong, paper["Prop. wrong"][i], m.PropAnyWrong, paper["Prop. any wrong"][i],
			g.PieceH, g.CropH(), 100*digits, 100*ink)
		if o.oracleDraws > 1 {
			if spreads[p], err = oracleSpread(z, o.seed, o.oracleDraws, m); err != nil {
				return err
			}
		}
	}
	if o.oracleDraws > 1 {
		fmt.Printf("\nThe same puzzles, identical pieces placed by %d draws: mean ± standard deviation of the draws' metrics\n\n", o.oracleDraws)
		fmt.Print("| size | Kendall tau | Prop. wrong | Prop. any wrong |\n|---|---|---|---|\n")
		for _, p := range sizes {
			d := spreads[p]
			fmt.Printf("| %dx%d | %.4f ± %.4f | %.4f ± %.4f | %.4f ± %.4f |\n", p, p, d[0][0], d[0][1], d[1][0], d[1][1], d[2][0], d[2][1])
		}
	}
	return nil
}

// oracleSpread returns the mean and standard deviation over draws of the
// oracle's Kendall tau, prop. wrong and prop. any wrong on z: how much the
// placement of identical pieces alone moves a solver's index-based metrics.
// first is draw 0, when the caller has it already (nil: computed here).
func oracleSpread(z *jigsaw.Puzzles, seed uint64, draws int, first *jigsaw.Metrics) ([3][2]float64, error) {
	var vals [3][]float64
	for k := range draws {
		m := first
		if k > 0 || m == nil {
			var err error
			if m, err = oracleDraw(z, seed, k); err != nil {
				return [3][2]float64{}, err
			}
		}
		vals[0] = append(vals[0], m.KendallTau)
		vals[1] = append(vals[1], m.PropWrong)
		vals[2] = append(vals[2], m.PropAnyWrong)
	}
	var out [3][2]float64
	for i, v := range vals {
		out[i][0], out[i][1] = stat.MeanStdDev(v, nil)
	}
	return out, nil
}

// cutOff returns the share of the images of im with ink outside g's crop and
// the share of all their ink that lies there.
func cutOff(g jigsaw.Grid, im *dataset.Images) (images, ink float64, err error) {
	var out, total float64
	n := 0
	for k := range im.N {
		img := im.Pixels[k*im.Size() : (k+1)*im.Size()]
		o, err := g.Outside(img)
		if err != nil {
			return 0, 0, err
		}
		if o > 0 {
			n++
		}
		out += o
		for _, v := range img {
			total += math.Abs(v)
		}
	}
	if total > 0 {
		ink = out / total
	}
	return float64(n) / float64(im.N), ink, nil
}
