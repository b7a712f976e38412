// Package readme holds the tests that keep the root README.md true: its
// package table against the module's packages and layers (package
// internal/layers), and its results table against the READMEs it links,
// whose numbers their own tests regenerate from committed results files.
package readme
