// Command adapters lists the WebGPU adapters extensor can use, marking the
// one device.Open("webgpu") chooses (set EXTENSOR_ADAPTER to an index or
// a part of a name to choose another).
package main

import (
	"fmt"
	"os"

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
	}
	fmt.Printf("* chosen by default; %s=<index or name> picks another\n", webgpu.EnvAdapter)
}
