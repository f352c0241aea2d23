//go:build cgo

package webgpu

import (
	"slices"
	"testing"
)

func TestGrid(t *testing.T) {
	for _, c := range []struct {
		groups int
		x, y   uint32
	}{
		{1, 1, 1}, {65535, 65535, 1}, {65536, 65535, 2}, {65535*3 + 1, 65535, 4},
	} {
		x, y, err := grid(c.groups)
		if err != nil || x != c.x || y != c.y {
			t.Errorf("grid(%d) = %d, %d, %v; want %d, %d", c.groups, x, y, err, c.x, c.y)
		}
		if int(x)*int(y) < c.groups {
			t.Errorf("grid(%d) covers only %d workgroups", c.groups, x*y)
		}
	}
	if _, _, err := grid(65535*65535 + 1); err == nil {
		t.Errorf("grid beyond 65535² workgroups: no error")
	}
}

func TestBucket(t *testing.T) {
	for _, c := range []struct{ in, want uint64 }{
		{1, 256}, {256, 256}, {257, 320}, {512, 512}, {513, 640}, {1 << 20, 1 << 20}, {(1 << 20) + 1, 1<<20 + 1<<18},
	} {
		if got := bucket(c.in); got != c.want {
			t.Errorf("bucket(%d) = %d; want %d", c.in, got, c.want)
		}
		if bucket(c.in) < c.in {
			t.Errorf("bucket(%d) smaller than the request", c.in)
		}
	}
}

func TestCoalesce(t *testing.T) {
	for _, c := range []struct {
		shape, axes []int
		kept, red   []axis
	}{
		{[]int{3, 4, 5}, []int{0, 1, 2}, nil, []axis{{60, 1}}},
		{[]int{3, 4, 5}, []int{1}, []axis{{3, 20}, {5, 1}}, []axis{{4, 5}}},
		{[]int{3, 1, 4, 5}, []int{2, 3}, []axis{{3, 20}}, []axis{{20, 1}}},
		{[]int{7, 257}, []int{0}, []axis{{257, 1}}, []axis{{7, 257}}},
		{[]int{}, []int{}, nil, nil},
	} {
		kept, red := coalesce(c.shape, c.axes)
		if !slices.Equal(kept, c.kept) || !slices.Equal(red, c.red) {
			t.Errorf("coalesce(%v, %v) = %v, %v; want %v, %v", c.shape, c.axes, kept, red, c.kept, c.red)
		}
	}
}
