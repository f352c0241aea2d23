//go:build !cgo

package main

import (
	"fmt"
	"os"
)

func main() {
	fmt.Println("adapters: built without cgo (CGO_ENABLED=0); WebGPU needs cgo")
	os.Exit(1)
}
