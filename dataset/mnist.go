package dataset

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// MNISTFiles are the standard names of the four files of the MNIST
// distribution: training images and labels, test images and labels.
// LoadMNIST reads them gzip-compressed (these names) or uncompressed (the
// names without ".gz").
var MNISTFiles = [4]string{
	"train-images-idx3-ubyte.gz",
	"train-labels-idx1-ubyte.gz",
	"t10k-images-idx3-ubyte.gz",
	"t10k-labels-idx1-ubyte.gz",
}

// MNISTHelp says how to get the MNIST files; LoadMNIST's error for a missing
// folder or file ends with it.
const MNISTHelp = "get the four IDX files of the MNIST distribution " +
	"(train-images-idx3-ubyte.gz, train-labels-idx1-ubyte.gz, " +
	"t10k-images-idx3-ubyte.gz, t10k-labels-idx1-ubyte.gz; from " +
	"http://yann.lecun.com/exdb/mnist/ or one of its mirrors), put them in " +
	"one folder, gzipped or not, and pass that folder with -mnist DIR"

// mnistClasses is the number of digit classes; labels are 0..9.
const mnistClasses = 10

// LoadMNIST reads the MNIST training set (60,000 images) and test set
// (10,000 images) from dir: 28×28 one-channel images with labels 0..9.
//
// A missing folder or file gives an error that wraps fs.ErrNotExist and says
// how to get the files; an image and label file of different lengths, a
// label outside 0..9, or a short or corrupt file is an error naming the file.
func LoadMNIST(dir string) (train, test *Images, err error) {
	if dir == "" {
		return nil, nil, fmt.Errorf("dataset: LoadMNIST: no folder given (%w); %s", fs.ErrNotExist, MNISTHelp)
	}
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return nil, nil, fmt.Errorf("dataset: LoadMNIST: %s is not a folder (%w); %s", dir, fs.ErrNotExist, MNISTHelp)
	}
	var paths [4]string
	for i, name := range MNISTFiles {
		if paths[i], err = findMNISTFile(dir, name); err != nil {
			return nil, nil, err
		}
	}
	if train, err = loadLabelled(paths[0], paths[1]); err != nil {
		return nil, nil, err
	}
	if test, err = loadLabelled(paths[2], paths[3]); err != nil {
		return nil, nil, err
	}
	return train, test, nil
}

// findMNISTFile returns the path of name in dir, or of its uncompressed
// variant.
func findMNISTFile(dir, name string) (string, error) {
	for _, n := range []string{name, name[:len(name)-len(".gz")]} {
		p := filepath.Join(dir, n)
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("dataset: LoadMNIST: %s: no %s (%w); %s", dir, name, fs.ErrNotExist, MNISTHelp)
}

// loadLabelled reads an image file and its label file and checks that they
// agree.
func loadLabelled(imagePath, labelPath string) (*Images, error) {
	im, err := ReadIDXImages(imagePath)
	if err != nil {
		return nil, err
	}
	labels, err := ReadIDXLabels(labelPath)
	if err != nil {
		return nil, err
	}
	if len(labels) != im.N {
		return nil, fmt.Errorf("dataset: %s has %d labels but %s has %d images",
			filepath.Base(labelPath), len(labels), filepath.Base(imagePath), im.N)
	}
	for i, l := range labels {
		if l < 0 || l >= mnistClasses {
			const headerBytes = 8
			return nil, fmt.Errorf("dataset: %s: label %d at offset %d is %d, want 0..9",
				filepath.Base(labelPath), i, headerBytes+i, l)
		}
	}
	im.Labels = labels
	return im, nil
}
