package layers

import (
	"fmt"
	"go/build"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/permlab/permlab"

// unitOf returns the layer and the unit pattern of pkg (a path relative to
// the module root). An exact pattern wins over a folder pattern, so
// "models" is the contract and "models/..." the models on it.
func unitOf(pkg string) (layer int, unit string, ok bool) {
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

// modulePackages returns the import paths (relative to the module root) of
// the module's packages with their non-test imports of the module.
func modulePackages(t *testing.T) map[string][]string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("module root not found at %s: %v", root, err)
	}
	pkgs := map[string][]string{}
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
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
			if dep, ok := strings.CutPrefix(imp, module+"/"); ok {
				deps = append(deps, dep)
			}
		}
		pkgs[rel] = deps
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return pkgs
}

// violations returns one message for each package in no layer and for each
// import that points up or sideways.
func violations(pkgs map[string][]string) []string {
	var out []string
	for pkg, deps := range pkgs {
		layer, unit, ok := unitOf(pkg)
		if !ok {
			out = append(out, fmt.Sprintf("package %s is in no layer: add it to layers.Layers (and to the package table of README.md)", pkg))
			continue
		}
		for _, dep := range deps {
			dl, du, ok := unitOf(dep)
			if ok && du != unit && dl >= layer {
				out = append(out, fmt.Sprintf("%s (layer %d, %s) imports %s (layer %d, %s): imports must point down", pkg, layer, unit, dep, dl, du))
			}
		}
	}
	slices.Sort(out)
	return out
}

func TestImportsPointDown(t *testing.T) {
	pkgs := modulePackages(t)
	for _, must := range []string{"ad", "vi", "mcmc", "models", "celegans", "nn/train", "networks/jigsaw", "internal/layers"} {
		if _, ok := pkgs[must]; !ok {
			t.Fatalf("package %s not found: the walk of the module is broken", must)
		}
	}
	for _, v := range violations(pkgs) {
		t.Error(v)
	}
}

// TestViolations checks that the check can fail: an import sideways, one
// up and a package in no layer are each reported, and imports within a unit
// or down are not.
func TestViolations(t *testing.T) {
	got := violations(map[string][]string{
		"vi":              {"mcmc", "models", "nn/train"},
		"models":          {"vi", "dist"},
		"networks/jigsaw": {"networks/digits", "relax"},
		"stray":           {"ad"},
	})
	want := []string{
		"models (layer 5, models) imports vi (layer 6, vi): imports must point down",
		"package stray is in no layer: add it to layers.Layers (and to the package table of README.md)",
		"vi (layer 6, vi) imports mcmc (layer 6, mcmc): imports must point down",
	}
	if !slices.Equal(got, want) {
		t.Errorf("violations:\n got %q\nwant %q", got, want)
	}
}

// TestUnitOf pins the rules that the layering depends on: an exact pattern
// wins, and a folder pattern holds everything under it.
func TestUnitOf(t *testing.T) {
	for _, c := range []struct {
		pkg   string
		layer int
		unit  string
	}{
		{"models", 5, "models"},
		{"models/vae", 7, "models/..."},
		{"nn/train", 3, "nn/..."},
		{"nn", 3, "nn/..."},
		{"internal/f64", 0, "internal/..."},
		{"internal/paramfile", 3, "internal/paramfile"},
		{"networks/jigsaw", 5, "networks/..."},
		{"examples/celegans", 8, "examples/..."},
	} {
		l, u, ok := unitOf(c.pkg)
		if !ok || l != c.layer || u != c.unit {
			t.Errorf("unitOf(%q) = %d, %q, %v; want %d, %q", c.pkg, l, u, ok, c.layer, c.unit)
		}
	}
	if _, _, ok := unitOf("modelsx"); ok {
		t.Error("unitOf(modelsx) matched: a folder pattern must not match a prefix of a name")
	}
}
