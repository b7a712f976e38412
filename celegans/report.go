package celegans

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/permlab/permlab/compare"
)

// maxReportRuns bounds the runs (cells × seeds × methods) of the grid a
// summary.json may describe: the grid is laid out in memory before the
// results are read, and a damaged number of seeds could otherwise ask for
// any amount. The paper's grids have a few hundred runs.
const maxReportRuns = 1 << 20

// Report recomputes the Summary of an experiment from the files Run wrote
// to dir: the grid (cells, methods, seeds, settings and the configuration
// fingerprint of every method's runs) from summary.json, and every number
// (means, standard deviations, unknown-neuron accuracies, wall times,
// iterations, MCMC diagnostics, times to first reach the paper's accuracy)
// from the results files, by the rules Run uses: records of another
// configuration are left out and of duplicates the first finished wins.
// It runs nothing and needs neither the connectome nor any data, so the
// published tables can be checked against the committed results alone.
func Report(dir string) (*Summary, error) {
	data, err := os.ReadFile(filepath.Join(dir, SummaryFile))
	if err != nil {
		return nil, fmt.Errorf("celegans: Report: %w", err)
	}
	var head Summary
	if err := json.Unmarshal(data, &head); err != nil {
		return nil, fmt.Errorf("celegans: Report: %s: %w", SummaryFile, err)
	}
	if len(head.Cells) == 0 || len(head.Methods) == 0 || head.Seeds < 1 {
		return nil, fmt.Errorf("celegans: Report: %s describes no grid", filepath.Join(dir, SummaryFile))
	}
	if head.Seeds > maxReportRuns/(len(head.Cells)*len(head.Methods)) {
		return nil, fmt.Errorf("celegans: Report: %s describes a grid of %d cells × %d seeds × %d methods, more than the %d runs a report reads (is it damaged?)",
			filepath.Join(dir, SummaryFile), len(head.Cells), head.Seeds, len(head.Methods), maxReportRuns)
	}
	defs := make(map[string]Cell)
	for _, c := range append(Table3Cells(), Table7Cells()...) {
		defs[c.Key()] = c
	}
	var cells []plannedCell
	byKey := make(map[string]plannedCell)
	grid := &compare.Grid{}
	for _, ci := range head.Cells {
		if len(ci.Configs) == 0 {
			return nil, errors.New("celegans: Report: " + SummaryFile + " has no run configurations (it was written by an older version): run the experiment's command once more to rewrite it")
		}
		c, ok := defs[ci.Key]
		if !ok {
			c = Cell{Table: ci.Table, Label: ci.Label, Header: ci.Header, Worms: ci.Worms, Known: ci.Known, Nu: ci.Nu, Candidates: ci.Target}
		}
		pc := plannedCell{Cell: c, nu: ci.Nu, mean: ci.MeanCandidates, config: ci.Configs}
		cells = append(cells, pc)
		byKey[ci.Key] = pc
		grid.Problems = append(grid.Problems, ci.Key)
	}
	for i := range head.Seeds {
		grid.Seeds = append(grid.Seeds, head.SeedStart+i)
	}
	for _, m := range head.Methods {
		grid.Methods = append(grid.Methods, string(m))
	}
	grid.Config = func(cell, method string) string { return byKey[cell].config[Method(method)] }
	res, err := compare.Collect(grid, dir)
	if err != nil {
		return nil, fmt.Errorf("celegans: Report: %w", err)
	}
	done := make(map[compare.Task]*Record, len(res.Records))
	for _, cr := range res.Records {
		r := fromCompare(cr, byKey)
		done[r.task()] = r
	}
	var failures []*Record
	for _, cr := range res.Failures {
		failures = append(failures, fromCompare(cr, byKey))
	}
	sum := summarize(&Summary{
		Connectome: head.Connectome, Neurons: head.Neurons, Edges: head.Edges, T: head.T,
		Seeds: head.Seeds, SeedStart: head.SeedStart, Budget: head.Budget, Settings: head.Settings,
		Methods: head.Methods, Figures: head.Figures,
	}, cells, done, failures)
	sum.Duplicates = res.Duplicates
	return sum, nil
}
