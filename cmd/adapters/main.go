//go:build cgo

// Command adapters lists the WebGPU adapters extensor can use, marking the
// one device.Open("webgpu") chooses (set EXTENSOR_ADAPTER to an index or
// a part of a name to choose another).
package main

import (
	"fmt"
	"os"
	"strings"

	"github.com/extensor/extensor/device/webgpu"
)

func main() {
	list := webgpu.Adapters()
	if len(list) == 0 {
		fmt.Println("no WebGPU adapter (on Debian without a GPU: apt-get install mesa-vulkan-drivers libvulkan1)")
		os.Exit(1)
	}
	for _, a := range list {
		mark := " "
		if a.Chosen {
			mark = "*"
		}
		fmt.Printf("%s %d: %s (%s, %s; %s)\n", mark, a.Index, a.Name, a.Type, a.Backend, a.Driver)
		fmt.Printf("    largest buffer %s, largest storage binding %s\n", size(a.MaxBufferSize), size(a.MaxBindingSize))
		fmt.Printf("    features: %s\n", strings.Join(a.Features, " "))
	}
	fmt.Printf("* chosen by default; %s=<index or name> picks another\n", webgpu.EnvAdapter)
	d, err := webgpu.Open()
	if err != nil {
		fmt.Println(err)
		os.Exit(1)
	}
	defer d.Close()
	l := d.Limits()
	fmt.Printf("device opened: %v; largest buffer %s, largest storage binding %s\n", d, size(l.MaxBufferSize), size(l.MaxStorageBufferBindingSize))
}

// size writes a byte count in MiB.
func size(b uint64) string { return fmt.Sprintf("%d bytes (%.0f MiB)", b, float64(b)/(1<<20)) }
