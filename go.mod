module github.com/extensor/extensor

go 1.24.0

require (
	github.com/rajveermalviya/go-webgpu/wgpu v0.17.1
	gonum.org/v1/gonum v0.17.0
)
