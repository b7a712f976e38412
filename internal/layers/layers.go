package layers

import (
	"fmt"
	"go/build"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Module is the module path of permlab.
const Module = "github.com/permlab/permlab"

// Layers lists the units of each layer, from the bottom up. A pattern ending
// in "/..." is the folder and everything under it; any other pattern is the
// one package at that path (relative to the module root).
var Layers = [][]string{
	{"internal/..."},
	{"perm", "compare", "dataset", "deploy"},
	{"ad/..."},
	{"relax", "nn/...", "internal/paramfile"},
	{"dist"},
	{"models", "networks/..."},
	{"vi", "mcmc"},
	{"models/...", "celegans"},
	{"examples/...", "benchmarks/..."},
}

// Of returns the layer and the unit of pkg, a package path relative to the
// module root. A unit named exactly wins over a folder unit that holds pkg,
// so "models" is the contract and "models/vae" a model on it. ok is false
// for a package in no layer.
func Of(pkg string) (layer int, unit string, ok bool) {
	for l, units := range Layers {
		for _, u := range units {
			if u == pkg {
				return l, u, true
			}
		}
	}
	for l, units := range Layers {
		for _, u := range units {
			if dir, found := strings.CutSuffix(u, "/..."); found && (pkg == dir || strings.HasPrefix(pkg, dir+"/")) {
				return l, u, true
			}
		}
	}
	return 0, "", false
}

// Packages returns the module's packages under root, the module's root
// folder, as paths relative to it, each with its non-test imports of the
// module (relative likewise). Folders named testdata or out, and those
// starting with "." or "_", are skipped, as the go command skips them.
func Packages(root string) (map[string][]string, error) {
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		return nil, fmt.Errorf("layers: no module at %s: %w", root, err)
	}
	pkgs := map[string][]string{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			return nil
		}
		name := d.Name()
		if p != root && (strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") || name == "testdata" || name == "out") {
			return filepath.SkipDir
		}
		bp, err := build.ImportDir(p, 0)
		if err != nil {
			if _, none := err.(*build.NoGoError); none {
				return nil
			}
			return err
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		var deps []string
		for _, imp := range bp.Imports {
			if dep, ok := strings.CutPrefix(imp, Module+"/"); ok {
				deps = append(deps, dep)
			}
		}
		pkgs[rel] = deps
		return nil
	})
	if err != nil {
		return nil, err
	}
	return pkgs, nil
}
