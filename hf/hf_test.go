package hf_test

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/extensor/extensor/checkpoint"
	"github.com/extensor/extensor/cpu"
	"github.com/extensor/extensor/device"
	"github.com/extensor/extensor/hf"
	"github.com/extensor/extensor/models/gpt2"
	"github.com/extensor/extensor/tensor"
)

// write writes name under dir with the given contents.
func write(t *testing.T, dir, name string, b []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
		t.Fatal(err)
	}
}

const tinyConfig = `{"model_type": "gpt2", "architectures": ["GPT2LMHeadModel"], "torch_dtype": "float32", "n_embd": 4}`

// TestFind resolves a directory, and repository ids in the cache that
// HF_HUB_CACHE, HF_HOME or XDG_CACHE_HOME name, by branch and by commit;
// what it cannot find is an error saying where it looked.
func TestFind(t *testing.T) {
	local := t.TempDir()
	write(t, local, hf.ConfigFile, []byte(tinyConfig))
	if dir, err := hf.Find(local); err != nil || dir != local {
		t.Errorf("Find(%s) = %q, %v", local, dir, err)
	}
	home := t.TempDir()
	repo := filepath.Join(home, "hub", "models--org--tiny")
	write(t, repo, "refs/main", []byte("abc123\n"))
	write(t, repo, "snapshots/abc123/"+hf.ConfigFile, []byte(tinyConfig))
	write(t, repo, "snapshots/def456/"+hf.ConfigFile, []byte(tinyConfig))
	t.Setenv("HF_HUB_CACHE", "")
	t.Setenv("HF_HOME", home)
	for name, want := range map[string]string{"org/tiny": "abc123", "org/tiny@main": "abc123", "org/tiny@def456": "def456"} {
		if dir, err := hf.Find(name); err != nil || dir != filepath.Join(repo, "snapshots", want) {
			t.Errorf("Find(%s) = %q, %v; want snapshot %s", name, dir, err, want)
		}
	}
	t.Setenv("HF_HOME", "")
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	t.Setenv("HF_HUB_CACHE", filepath.Join(home, "hub"))
	if dir, err := hf.Find("org/tiny"); err != nil || dir != filepath.Join(repo, "snapshots", "abc123") {
		t.Errorf("Find with HF_HUB_CACHE = %q, %v", dir, err)
	}
	for _, name := range []string{"org/missing", "org/tiny@v9", "../tiny", "org/..", "org/tiny@../../x", "justaname", ""} {
		if _, err := hf.Find(name); err == nil || !strings.Contains(err.Error(), "hf: ") {
			t.Errorf("Find(%q): %v; want an error", name, err)
		}
	}
	if _, err := hf.Find("org/missing"); err == nil || !strings.Contains(err.Error(), "models--org--missing") {
		t.Errorf("Find(org/missing): %v; want the cache directory it looked in", err)
	}
}

// bf16File is a safetensors file of one BF16 tensor, written by hand (as
// PyTorch saves bfloat16 weights).
func bf16File(name string, bits []uint16) []byte {
	hdr, _ := json.Marshal(map[string]any{name: map[string]any{"dtype": "BF16", "shape": []int{len(bits)}, "data_offsets": []int{0, 2 * len(bits)}}})
	for len(hdr)%8 != 0 {
		hdr = append(hdr, ' ')
	}
	b := binary.LittleEndian.AppendUint64(nil, uint64(len(hdr)))
	b = append(b, hdr...)
	for _, v := range bits {
		b = binary.LittleEndian.AppendUint16(b, v)
	}
	return b
}

// shardedModel writes a model directory of three shards (F32, F16, BF16)
// and its index.
func shardedModel(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	dev := cpu.New()
	write(t, dir, hf.ConfigFile, []byte(tinyConfig))
	w := tensor.Must(tensor.FromFloat32(dev, []float32{1, 2, 3, 4, 5, 6}, 2, 3))
	h := tensor.Must(tensor.FromValues(dev, device.Float16, []float64{0.1, -2}, 2))
	if err := checkpoint.Save(filepath.Join(dir, "model-00001-of-00003.safetensors"), map[string]*tensor.Tensor{"h.0.w": w}, nil); err != nil {
		t.Fatal(err)
	}
	if err := checkpoint.Save(filepath.Join(dir, "model-00002-of-00003.safetensors"), map[string]*tensor.Tensor{"h.0.b": h}, nil); err != nil {
		t.Fatal(err)
	}
	write(t, dir, "model-00003-of-00003.safetensors", bf16File("wte", []uint16{0x3fc0, 0xc000, 0x4049})) // 1.5, −2, 3.140625
	index, _ := json.Marshal(map[string]any{"metadata": map[string]any{"total_size": 40}, "weight_map": map[string]string{
		"h.0.w": "model-00001-of-00003.safetensors", "h.0.b": "model-00002-of-00003.safetensors", "wte": "model-00003-of-00003.safetensors"}})
	write(t, dir, hf.IndexFile, index)
	return dir
}

// TestShards opens a sharded model and loads it into float32 tensors:
// F16 and BF16 weights converted, the configuration decoded.
func TestShards(t *testing.T) {
	m, err := hf.Open(shardedModel(t))
	if err != nil {
		t.Fatal(err)
	}
	if m.Config.ModelType != "gpt2" || !slices.Equal(m.Config.Architectures, []string{"GPT2LMHeadModel"}) || !slices.Equal(m.Names(), []string{"h.0.b", "h.0.w", "wte"}) {
		t.Errorf("config %+v, names %v", m.Config, m.Names())
	}
	var own struct {
		Embd int `json:"n_embd"`
	}
	if err := m.Config.Decode(&own); err != nil || own.Embd != 4 {
		t.Errorf("Decode: %+v, %v", own, err)
	}
	dev := cpu.New()
	into := map[string]*tensor.Tensor{
		"h.0.w": tensor.Must(tensor.Zeros(dev, device.Float32, 2, 3)),
		"h.0.b": tensor.Must(tensor.Zeros(dev, device.Float32, 2)),
		"wte":   tensor.Must(tensor.Zeros(dev, device.Float32, 3)),
	}
	if err := m.LoadInto(into); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string][]float32{"h.0.w": {1, 2, 3, 4, 5, 6}, "h.0.b": {0.099975586, -2}, "wte": {1.5, -2, 3.140625}} {
		if got, err := into[name].Float32s(); err != nil || !slices.Equal(got, want) {
			t.Errorf("%s: %v, %v; want %v", name, got, err, want)
		}
	}
}

// TestMismatches lists every mismatch across the shards (a shape, a
// tensor the model lacks, one the checkpoint lacks) and copies nothing.
func TestMismatches(t *testing.T) {
	m, err := hf.Open(shardedModel(t))
	if err != nil {
		t.Fatal(err)
	}
	dev := cpu.New()
	into := map[string]*tensor.Tensor{
		"h.0.w":   tensor.Must(tensor.Zeros(dev, device.Float32, 2, 3)),
		"h.0.b":   tensor.Must(tensor.Zeros(dev, device.Float32, 3)),
		"lm_head": tensor.Must(tensor.Zeros(dev, device.Float32, 3)),
	}
	err = m.LoadInto(into)
	var mm checkpoint.Mismatch
	if !errors.As(err, &mm) || len(mm) != 3 {
		t.Fatalf("LoadInto: %v; want 3 mismatches", err)
	}
	for _, want := range []string{`"h.0.b": the checkpoint has F16 [2], the model float32 [3]`, `"lm_head": in the model`, `"wte": in the checkpoint (BF16 [3]), not in the model`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("LoadInto: %v; want it to say %s", err, want)
		}
	}
	if v, _ := into["h.0.w"].Float32s(); slices.ContainsFunc(v, func(x float32) bool { return x != 0 }) {
		t.Errorf("h.0.w after a refused load: %v; want it untouched", v)
	}
}

// TestBadIndex refuses indexes that disagree with their shards or point
// outside the directory, and directories without weights.
func TestBadIndex(t *testing.T) {
	for _, tt := range []struct {
		name  string
		index map[string]string
		says  string
	}{
		{"a tensor its shard lacks", map[string]string{"h.0.w": "model-00001-of-00003.safetensors", "h.0.b": "model-00002-of-00003.safetensors", "wte": "model-00003-of-00003.safetensors", "x": "model-00001-of-00003.safetensors"}, `maps "x" to model-00001-of-00003.safetensors, which does not hold it`},
		{"a tensor of a shard it maps elsewhere", map[string]string{"h.0.w": "model-00001-of-00003.safetensors", "h.0.b": "model-00001-of-00003.safetensors", "wte": "model-00002-of-00003.safetensors"}, `model-00002-of-00003.safetensors holds "h.0.b", which`},
		{"a path outside", map[string]string{"h.0.w": "../model-00001-of-00003.safetensors"}, "want a file of the directory"},
		{"no tensors", map[string]string{}, "maps no tensor"},
		{"a shard the directory lacks", map[string]string{"h.0.w": "model-00001-of-00003.safetensors", "h.0.b": "model-00002-of-00003.safetensors", "wte": "model-00004-of-00004.safetensors"}, "model-00004-of-00004.safetensors"},
	} {
		dir := shardedModel(t)
		index, _ := json.Marshal(map[string]any{"weight_map": tt.index})
		write(t, dir, hf.IndexFile, index)
		if _, err := hf.Open(dir); err == nil || !strings.Contains(err.Error(), tt.says) {
			t.Errorf("%s: Open: %v; want an error saying %s", tt.name, err, tt.says)
		}
	}
	dir := t.TempDir()
	write(t, dir, hf.ConfigFile, []byte(tinyConfig))
	if _, err := hf.Open(dir); err == nil || !strings.Contains(err.Error(), hf.WeightsFile) {
		t.Errorf("Open without weights: %v; want an error naming %s", err, hf.WeightsFile)
	}
	write(t, dir, hf.ConfigFile, []byte("{"))
	if _, err := hf.Open(dir); err == nil || !strings.Contains(err.Error(), hf.ConfigFile) {
		t.Errorf("Open of a broken config: %v", err)
	}
	// A truncated weights file: its header promises more data than it has.
	b, err := os.ReadFile("../models/gpt2/testdata/tiny/model.safetensors")
	if err != nil {
		t.Fatal(err)
	}
	write(t, dir, hf.ConfigFile, []byte(tinyConfig))
	write(t, dir, hf.WeightsFile, b[:len(b)-100])
	if _, err := hf.Open(dir); err == nil || !strings.Contains(err.Error(), hf.WeightsFile) {
		t.Errorf("Open of a truncated %s: %v; want an error naming it", hf.WeightsFile, err)
	}
}

// TestProgress loads the two shards of models/gpt2's tiny copy, telling
// Progress the bytes loaded: growing, ending at the total.
func TestProgress(t *testing.T) {
	mdl, err := hf.Open("../models/gpt2/testdata/tiny-sharded")
	if err != nil {
		t.Fatal(err)
	}
	var calls [][2]int64
	mdl.Progress = func(done, total int64) { calls = append(calls, [2]int64{done, total}) }
	m, err := gpt2.Load(mdl, cpu.New(), device.Float32)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Release()
	var total int64
	for _, p := range m.StateDict() {
		total += int64(p.Len()) * 4
	}
	if len(calls) != len(m.StateDict()) || calls[len(calls)-1] != [2]int64{total, total} {
		t.Fatalf("%d calls, the last %v; want %d, the last at %d of %d", len(calls), calls[len(calls)-1], len(m.StateDict()), total, total)
	}
	for i := 1; i < len(calls); i++ {
		if calls[i][0] <= calls[i-1][0] {
			t.Fatalf("call %d: %v after %v", i, calls[i], calls[i-1])
		}
	}
}
