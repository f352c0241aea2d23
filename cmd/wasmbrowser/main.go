// Command wasmbrowser runs a Go program built for GOOS=js GOARCH=wasm in
// headless Chromium, with the browser's WebGPU, as go_js_wasm_exec runs it
// under Node.js: it is go test's -exec for tests that need the browser.
//
//	GOOS=js GOARCH=wasm go test -exec="go run ./cmd/wasmbrowser" ./device/webgpu/
//
// It serves the program, Go's wasm_exec.js and a page that runs them from
// 127.0.0.1, opens the page in Chromium (--headless=new
// --enable-unsafe-webgpu), copies what the program writes to its standard
// output and error to its own, and exits with the program's exit code.
// The program sees the arguments given after its path and the environment
// variables CI, HOME, PATH and those named EXTENSOR_* or GO*. It has no
// file system: os.Open and the like fail with ENOSYS.
//
// The browser is $CHROMIUM, else chromium or chromium-browser on PATH.
// A program that has not exited after $WASMBROWSER_TIMEOUT (a duration,
// default 20m) is an error, as is a page that fails to start it.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/extensor/extensor/internal/browser"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: wasmbrowser program.wasm [arguments]")
		os.Exit(2)
	}
	code, err := run(os.Args[1], os.Args[2:])
	if err != nil {
		fmt.Fprintln(os.Stderr, "wasmbrowser:", err)
		os.Exit(2)
	}
	os.Exit(code)
}

// page runs the program: wasm_exec.js's Go, its argv and env from the
// server, its writes sent back in order, its exit code posted.
const page = `<!doctype html>
<meta charset="utf-8">
<title>wasmbrowser</title>
<script src="/wasm_exec.js"></script>
<script>
"use strict";
function post(path, body) {
	const x = new XMLHttpRequest();
	x.open("POST", path, false); // synchronous: writes arrive in order
	x.send(body);
}
globalThis.fs.writeSync = function (fd, buf) {
	post("/write?fd=" + fd, buf);
	return buf.length;
};
(async () => {
	try {
		const setup = await (await fetch("/setup")).json();
		const go = new Go();
		go.argv = setup.argv;
		go.env = setup.env;
		go.exit = (code) => post("/exit?code=" + code, "");
		// The WebGPU binding reads the program's memory through globalThis.wasm.
		globalThis.wasm = await WebAssembly.instantiateStreaming(fetch("/program.wasm"), go.importObject);
		await go.run(globalThis.wasm.instance);
	} catch (e) {
		post("/fail", String(e && e.stack || e));
	}
})();
</script>
`

func run(wasm string, args []string) (int, error) {
	prog, err := os.ReadFile(wasm)
	if err != nil {
		return 0, err
	}
	execJS, err := browser.WasmExec()
	if err != nil {
		return 0, err
	}
	chromium, err := browser.Chromium()
	if err != nil {
		return 0, err
	}
	timeout := 20 * time.Minute
	if s := os.Getenv("WASMBROWSER_TIMEOUT"); s != "" {
		if timeout, err = time.ParseDuration(s); err != nil {
			return 0, fmt.Errorf("WASMBROWSER_TIMEOUT=%q: %v", s, err)
		}
	}

	setup, err := json.Marshal(map[string]any{"argv": append([]string{filepath.Base(wasm)}, args...), "env": environment()})
	if err != nil {
		return 0, err
	}
	type result struct {
		code int
		err  error
	}
	done := make(chan result, 1)
	var once sync.Once
	finish := func(r result) { once.Do(func() { done <- r }) }
	var outMu sync.Mutex

	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		io.WriteString(w, page)
	})
	mux.HandleFunc("/wasm_exec.js", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/javascript")
		w.Write(execJS)
	})
	mux.HandleFunc("/program.wasm", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/wasm")
		w.Write(prog)
	})
	mux.HandleFunc("/setup", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write(setup)
	})
	mux.HandleFunc("/write", func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		outMu.Lock()
		if r.URL.Query().Get("fd") == "2" {
			os.Stderr.Write(b)
		} else {
			os.Stdout.Write(b)
		}
		outMu.Unlock()
	})
	mux.HandleFunc("/exit", func(w http.ResponseWriter, r *http.Request) {
		code, err := strconv.Atoi(r.URL.Query().Get("code"))
		finish(result{code, err})
	})
	mux.HandleFunc("/fail", func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		finish(result{err: fmt.Errorf("the page could not run %s: %s", wasm, bytes.TrimSpace(b))})
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	srv := &http.Server{Handler: mux}
	go srv.Serve(ln)
	defer srv.Close()

	profile, err := os.MkdirTemp("", "wasmbrowser-")
	if err != nil {
		return 0, err
	}
	defer os.RemoveAll(profile)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var log bytes.Buffer
	logging := os.Getenv("WASMBROWSER_LOG") != ""
	cmd := browser.Headless(ctx, chromium, profile, "http://"+ln.Addr().String()+"/", logging)
	cmd.Stdout, cmd.Stderr = &log, &log
	if logging {
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	}
	if err := cmd.Start(); err != nil {
		return 0, fmt.Errorf("starting %s: %v", chromium, err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()

	select {
	case r := <-done:
		return r.code, r.err
	case err := <-exited:
		return 0, fmt.Errorf("%s exited before the program did (%v):\n%s", chromium, err, tail(log.String()))
	case <-time.After(timeout):
		return 0, fmt.Errorf("%s has not exited after %v", wasm, timeout)
	}
}

// environment returns the variables the program sees.
func environment() map[string]string {
	env := map[string]string{}
	for _, kv := range os.Environ() {
		k, v, _ := strings.Cut(kv, "=")
		if k == "CI" || k == "HOME" || k == "PATH" || strings.HasPrefix(k, "EXTENSOR_") || strings.HasPrefix(k, "GO") {
			env[k] = v
		}
	}
	return env
}

// tail returns the last lines of a browser's log.
func tail(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.Join(lines[max(0, len(lines)-20):], "\n")
}
