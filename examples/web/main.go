//go:build !js

// Command web serves a page that trains the MLP of examples/mlp on
// Fashion-MNIST in the browser, on the browser's WebGPU, and draws the
// training dashboard into the page's canvas through its WebGPU context:
//
//	go run ./examples/web    (make web)
//
// then open the URL it prints in a browser with WebGPU (Chromium, Chrome,
// Edge; Firefox and Safari where WebGPU is on). The page's program,
// examples/web/page, is built as WebAssembly when the server starts; the
// data is Debian's dataset-fashion-mnist files, served by the same server.
// The server prints what the page reports: the device, the loss as it
// falls and the test accuracy after each epoch.
package main

import (
	_ "embed"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sync"

	"github.com/extensor/extensor/dataset/fashionmnist"
	"github.com/extensor/extensor/examples/web/events"
	"github.com/extensor/extensor/internal/browser"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:8080", "address to serve the page on")
	data := flag.String("data", fashionmnist.DefaultDir, "directory of the Fashion-MNIST .gz files")
	flag.Parse()
	log.SetFlags(0)
	fmt.Println("building the page's program (GOOS=js GOARCH=wasm)…")
	s, err := newServer(*data)
	if err != nil {
		log.Fatalf("web: %v", err)
	}
	s.onEvent = func(e events.Event) { fmt.Println(e) }
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		log.Fatalf("web: %v", err)
	}
	fmt.Printf("serving http://%s/ (Ctrl-C stops)\n", ln.Addr())
	log.Fatal(http.Serve(ln, s))
}

//go:embed index.html
var indexHTML []byte

// server serves the page, its program, Go's wasm_exec.js and the data,
// and receives the page's reports and snapshot.
type server struct {
	http.ServeMux
	wasm, execJS []byte
	data         string
	onEvent      func(events.Event) // called with each event the page reports
	onSnapshot   func([]byte)       // called with the PNG the page sends (check=1)
	mu           sync.Mutex         // serialises the calls of onEvent and onSnapshot
}

// newServer builds the page's program and returns a server of it, with
// the data from dir.
func newServer(dir string) (*server, error) {
	for _, f := range fashionmnist.Files {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			return nil, fmt.Errorf("the page's data: %w (install Debian's dataset-fashion-mnist; make deps does)", err)
		}
	}
	wasm, err := buildPage()
	if err != nil {
		return nil, err
	}
	execJS, err := browser.WasmExec()
	if err != nil {
		return nil, err
	}
	s := &server{wasm: wasm, execJS: execJS, data: dir, onEvent: func(events.Event) {}, onSnapshot: func([]byte) {}}
	s.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) { s.serve(w, "text/html; charset=utf-8", indexHTML) })
	s.HandleFunc("GET /wasm_exec.js", func(w http.ResponseWriter, r *http.Request) { s.serve(w, "text/javascript", s.execJS) })
	s.HandleFunc("GET /page.wasm", func(w http.ResponseWriter, r *http.Request) { s.serve(w, "application/wasm", s.wasm) })
	for _, f := range fashionmnist.Files {
		s.HandleFunc("GET /data/"+f, func(w http.ResponseWriter, r *http.Request) { http.ServeFile(w, r, filepath.Join(s.data, f)) })
	}
	s.HandleFunc("POST /report", s.report)
	s.HandleFunc("POST /snapshot", func(w http.ResponseWriter, r *http.Request) {
		b, err := io.ReadAll(io.LimitReader(r.Body, 64<<20))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		s.onSnapshot(b)
	})
	return s, nil
}

// report takes one of the page's reports, from the page's own origin
// only, of at most maxReport bytes.
func (s *server) report(w http.ResponseWriter, r *http.Request) {
	if !sameOrigin(r) {
		http.Error(w, "reports are taken from the page's own origin only", http.StatusForbidden)
		return
	}
	var e events.Event
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxReport)).Decode(&e); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.onEvent(e)
}

// maxReport bounds a report's body.
const maxReport = 1 << 20

// sameOrigin reports whether r does not come from another origin's page:
// a browser names the origin of a cross-origin POST (Origin, and
// Sec-Fetch-Site); a request without them comes from no page.
func sameOrigin(r *http.Request) bool {
	if o := r.Header.Get("Origin"); o != "" && o != "http://"+r.Host {
		return false
	}
	site := r.Header.Get("Sec-Fetch-Site")
	return site == "" || site == "same-origin"
}

func (s *server) serve(w http.ResponseWriter, contentType string, b []byte) {
	w.Header().Set("Content-Type", contentType)
	w.Header().Set("Cache-Control", "no-store")
	w.Write(b)
}

// buildPage builds examples/web/page for GOOS=js GOARCH=wasm and returns
// the program.
func buildPage() ([]byte, error) {
	dir, err := os.MkdirTemp("", "extensor-web-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	out := filepath.Join(dir, "page.wasm")
	cmd := exec.Command("go", "build", "-o", out, "github.com/extensor/extensor/examples/web/page")
	cmd.Env = append(os.Environ(), "GOOS=js", "GOARCH=wasm")
	if msg, err := cmd.CombinedOutput(); err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return nil, fmt.Errorf("building the page's program: %v\n%s", err, msg)
		}
		return nil, fmt.Errorf("building the page's program (is go on PATH?): %v", err)
	}
	return os.ReadFile(out)
}
