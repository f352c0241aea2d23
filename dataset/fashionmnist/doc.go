// Package fashionmnist loads the Fashion-MNIST image classification data set.
//
// Fashion-MNIST consists of 70,000 grayscale images of 28×28 pixels showing
// articles of clothing in ten classes (T-shirt/top, trouser, pullover, dress,
// coat, sandal, shirt, sneaker, bag and ankle boot), split into 60,000
// training and 10,000 test examples. It is a drop-in replacement for MNIST.
//
// The data is read from the files installed by Debian's dataset-fashion-mnist
// package, which by default lives in [DefaultDir]:
//
//	train-images-idx3-ubyte.gz
//	train-labels-idx1-ubyte.gz
//	t10k-images-idx3-ubyte.gz
//	t10k-labels-idx1-ubyte.gz
//
// Each file is a gzip-compressed IDX file. An IDX file starts with a four-byte
// magic number: two zero bytes, a byte giving the element type (0x08 for
// unsigned bytes, the only type used by Fashion-MNIST) and a byte giving the
// number of dimensions. Then follows one big-endian uint32 per dimension, and
// finally the elements themselves in row-major order. Image files have three
// dimensions (count, rows, columns); label files have one (count).
//
// [Load] returns the training and test sets as [Set] values whose pixels have
// been scaled from bytes to float32 values in [0, 1]. [ReadIDX] parses a
// single uncompressed IDX stream and may be used for other IDX data.
package fashionmnist
