// Package browser finds and starts the headless Chromium that runs
// extensor's WebAssembly in a browser (cmd/wasmbrowser, the web example's
// test), and reads Go's wasm_exec.js, which runs Go programs in a page.
package browser

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// Chromium returns the browser to run: $CHROMIUM, else chromium or
// chromium-browser on PATH.
func Chromium() (string, error) {
	if b := os.Getenv("CHROMIUM"); b != "" {
		return b, nil
	}
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p, nil
		}
	}
	return "", errors.New("no Chromium: set CHROMIUM, or install it (Debian: apt-get install chromium; make deps does)")
}

// Headless returns the command that opens url in headless Chromium with
// WebGPU enabled, on SwiftShader (a CPU adapter), its profile in the directory profile, stopped when ctx
// is done. With logging set, Chromium logs to its standard error.
func Headless(ctx context.Context, chromium, profile, url string, logging bool) *exec.Cmd {
	// --no-sandbox: CI runs as root; --disable-dev-shm-usage: containers'
	// /dev/shm is often too small for Chromium. The compositor on ANGLE's
	// SwiftShader and Vulkan on SwiftShader: without them, headless
	// Chromium's GPU process cannot make a WebGPU canvas's swap chain
	// ("Could not find SharedImageBackingFactory") and dies, taking every
	// WebGPU device of the page with it.
	flags := []string{"--headless=new", "--enable-unsafe-webgpu", "--no-sandbox", "--disable-dev-shm-usage",
		"--use-angle=swiftshader", "--enable-features=Vulkan", "--use-vulkan=swiftshader",
		"--no-first-run", "--no-default-browser-check", "--disable-extensions", "--user-data-dir=" + profile}
	if logging {
		flags = append(flags, "--enable-logging=stderr", "--v=0")
	}
	return exec.CommandContext(ctx, chromium, append(flags, url)...)
}

// WasmExec returns Go's wasm_exec.js, from $GOROOT or go env's GOROOT.
func WasmExec() ([]byte, error) {
	root := os.Getenv("GOROOT")
	if root == "" {
		out, err := exec.Command("go", "env", "GOROOT").Output()
		if err != nil {
			return nil, errors.New("browser: no GOROOT, and go env GOROOT failed: " + err.Error())
		}
		root = strings.TrimSpace(string(out))
	}
	return os.ReadFile(filepath.Join(root, "lib", "wasm", "wasm_exec.js"))
}
