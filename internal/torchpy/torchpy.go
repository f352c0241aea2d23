package torchpy

import (
	"fmt"
	"os"
	"os/exec"
)

// Find returns the first Python that imports torch: $EXTENSOR_PYTHON, the
// one on the PATH, or Debian's (python3-torch) behind another on the PATH.
func Find() (string, error) {
	for _, p := range []string{os.Getenv("EXTENSOR_PYTHON"), "python3", "/usr/bin/python3"} {
		if p != "" && exec.Command(p, "-c", "import torch").Run() == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("PyTorch is not importable by python3 or /usr/bin/python3 (set EXTENSOR_PYTHON); on Debian, apt-get install python3-torch")
}
