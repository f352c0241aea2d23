//go:build cgo

// Command adapters lists the WebGPU adapters extensor can use, marking the
// one device.Open("webgpu") chooses (set EXTENSOR_ADAPTER to an index or
// a part of a name to choose another), and shows which adapter each
// local rank of a distributed job opens (package dist: one process a
// GPU; -ranks sets how many ranks a machine runs).
package main

import (
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/extensor/extensor/device/webgpu"
)

func main() {
	ranks := flag.Int("ranks", 0, "show the adapters of this many local ranks (0: one for each adapter of the best kind, or each entry of EXTENSOR_ADAPTER's list)")
	flag.Parse()
	if *ranks < 0 || flag.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "adapters: -ranks %d %v: want a count ≥ 0 and no arguments\n", *ranks, flag.Args())
		os.Exit(2)
	}
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
	n := *ranks
	if n == 0 {
		n = defaultRanks(list)
	}
	for local := range n {
		i, err := webgpu.AdapterFor(local)
		if err != nil {
			fmt.Println(err)
			os.Exit(1)
		}
		fmt.Printf("local rank %d (%s=%d) opens %d: %s\n", local, webgpu.EnvLocalRank, local, i, list[i].Name)
	}
	d, err := webgpu.Open()
	if err != nil {
		fmt.Println(err)
		os.Exit(1)
	}
	defer d.Close()
	l := d.Limits()
	fmt.Printf("device opened: %v; largest buffer %s, largest storage binding %s\n", d, size(l.MaxBufferSize), size(l.MaxStorageBufferBindingSize))
}

// defaultRanks is the local ranks a machine runs by default: one for
// each entry of EXTENSOR_ADAPTER's list, or one for each adapter of the
// best kind (the chosen one's).
func defaultRanks(list []webgpu.Adapter) int {
	if want := os.Getenv(webgpu.EnvAdapter); strings.Contains(want, ",") {
		return len(strings.Split(want, ","))
	}
	i, err := webgpu.AdapterFor(0)
	if err != nil {
		return 1
	}
	n := 0
	for _, a := range list {
		if a.Type == list[i].Type {
			n++
		}
	}
	return n
}

// size writes a byte count in MiB.
func size(b uint64) string { return fmt.Sprintf("%d bytes (%.0f MiB)", b, float64(b)/(1<<20)) }
