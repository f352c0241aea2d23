package ops_test

import (
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/extensor/extensor/ops"
	"github.com/extensor/extensor/tensor"
)

// TestEveryOpHasSpecialValues checks that the parity suite feeds every op
// NaN and an infinity, in a case named "special values …".
func TestEveryOpHasSpecialValues(t *testing.T) {
	for _, op := range ops.Table() {
		if onlyInts(op) {
			continue // one_hot: no value can be special
		}
		found := false
		for _, c := range op.Cases {
			if !strings.HasPrefix(c.Name, "special values") {
				continue
			}
			var nan, inf bool
			for _, in := range c.Inputs {
				for _, v := range in.Domain.Values {
					nan = nan || math.IsNaN(v)
					inf = inf || math.IsInf(v, 0)
				}
			}
			found = found || nan && inf
		}
		if !found {
			t.Errorf("%s: no \"special values\" case with NaN and an infinity", op.Name)
		}
	}
}

// onlyInts reports whether every input of every case of op is int32.
func onlyInts(op *ops.Op) bool {
	for _, c := range op.Cases {
		for _, in := range c.Inputs {
			if !in.Int {
				return false
			}
		}
	}
	return true
}

// TestUnaryKernelsBelongToOps checks the elementwise ops against
// shaders/unary.wgsl: each op of the unary family names a kernel whose
// WGSL function (and gradient, where the op has a backward) exists, and
// every WGSL function belongs to an op. (package cpu's tests hold its
// twins to the same functions.)
func TestUnaryKernelsBelongToOps(t *testing.T) {
	src, err := os.ReadFile("../shaders/unary.wgsl")
	if err != nil {
		t.Fatal(err)
	}
	fns := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^fn op_(\w+)\(`).FindAllSubmatch(src, -1) {
		fns[string(m[1])] = true
	}
	used := map[string]bool{}
	for _, op := range ops.Table() {
		if (op.Family == "unary") != (op.Kernel != "") {
			t.Errorf("%s: family %q with kernel %q; an op of the unary family names its kernel, no other does", op.Name, op.Family, op.Kernel)
			continue
		}
		if op.Kernel == "" {
			continue
		}
		used[op.Kernel] = true
		if !fns[op.Kernel] {
			t.Errorf("%s: no op_%s in shaders/unary.wgsl", op.Name, op.Kernel)
		}
		if op.Backward != nil && !fns[op.Kernel+"_grad"] {
			t.Errorf("%s: no op_%s_grad in shaders/unary.wgsl", op.Name, op.Kernel)
		}
	}
	for fn := range fns {
		if base, ok := strings.CutSuffix(fn, "_grad"); ok && fns[base] {
			continue
		}
		if !used[fn] {
			t.Errorf("op_%s in shaders/unary.wgsl belongs to no op of the table", fn)
		}
	}
}

// TestFamiliesAreKernelFiles checks that every kernel family an op names
// is a WGSL file of package shaders ("view": the ops that run no kernel).
func TestFamiliesAreKernelFiles(t *testing.T) {
	for _, op := range ops.Table() {
		for f := range strings.SplitSeq(op.Family, ",") {
			f = strings.TrimSpace(f)
			if f == "view" {
				continue
			}
			if _, err := os.Stat("../shaders/" + f + ".wgsl"); err != nil {
				t.Errorf("%s: family %q is no WGSL file of shaders (%v)", op.Name, f, err)
			}
		}
	}
}

// TestEveryGradientHasARule checks that every op with a backward has a
// second-order rule, so that a create-graph pass goes through any op.
func TestEveryGradientHasARule(t *testing.T) {
	for _, op := range ops.Table() {
		if op.Backward != nil && op.Grad == nil {
			t.Errorf("%s has a backward but no second-order rule (Grad)", op.Name)
		}
	}
}

// TestEveryOpHasAHandle checks that each op of the table is one exported
// var of package ops, named after it (softplus's SoftplusOp, bce_with_logits's
// BCEWithLogitsOp), through which autograd.Apply and the rules reach it;
// and that every such var is listed in the table.
func TestEveryOpHasAHandle(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	handles := map[string]string{} // op name → var
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			gd, ok := d.(*ast.GenDecl)
			if !ok || gd.Tok != token.VAR {
				continue
			}
			for _, s := range gd.Specs {
				vs := s.(*ast.ValueSpec)
				for i, id := range vs.Names {
					if !id.IsExported() || !strings.HasSuffix(id.Name, "Op") || i >= len(vs.Values) {
						continue
					}
					name := opName(vs.Values[i])
					if name == "" {
						t.Errorf("%s: no op name in its definition", id.Name)
						continue
					}
					if prev, ok := handles[name]; ok {
						t.Errorf("op %q has two handles, %s and %s", name, prev, id.Name)
					}
					handles[name] = id.Name
				}
			}
		}
	}
	initialisms := map[string]string{"mse": "MSE", "bce": "BCE", "nll": "NLL", "kl": "KL", "sgd": "SGD", "rms": "RMS", "l1": "L1"}
	for _, op := range ops.Table() {
		want := ""
		for _, w := range strings.Split(op.Name, "_") {
			if s, ok := initialisms[w]; ok {
				want += s
			} else {
				want += strings.ToUpper(w[:1]) + w[1:]
			}
		}
		want += "Op"
		switch got, ok := handles[op.Name]; {
		case !ok:
			t.Errorf("op %q has no handle; want var %s", op.Name, want)
		case got != want:
			t.Errorf("op %q's handle is %s; want %s", op.Name, got, want)
		}
		delete(handles, op.Name)
	}
	for name, h := range handles {
		t.Errorf("%s (op %q) is missing from the table: list it in its group", h, name)
	}
}

// opName returns the op name that a handle's definition gives: its Name
// field, or the first string argument of the constructor it calls.
func opName(e ast.Expr) string {
	if u, ok := e.(*ast.UnaryExpr); ok {
		e = u.X
	}
	var lit ast.Expr
	switch v := e.(type) {
	case *ast.CompositeLit:
		for _, el := range v.Elts {
			if kv, ok := el.(*ast.KeyValueExpr); ok && fmt.Sprint(kv.Key) == "Name" {
				lit = kv.Value
			}
		}
	case *ast.CallExpr:
		for _, a := range v.Args {
			if bl, ok := a.(*ast.BasicLit); ok && bl.Kind == token.STRING {
				lit = bl
				break
			}
		}
	}
	bl, ok := lit.(*ast.BasicLit)
	if !ok {
		return ""
	}
	s, _ := strconv.Unquote(bl.Value)
	return s
}

// TestCasesShareTheirOpsAttrsType checks that all of an op's parity
// cases give it attributes of one type (or none): an op reads one type.
func TestCasesShareTheirOpsAttrsType(t *testing.T) {
	for _, op := range ops.Table() {
		var want string
		for _, c := range op.Cases {
			if c.Attrs == nil {
				continue
			}
			got := fmt.Sprintf("%T", c.Attrs)
			if want == "" {
				want = got
			}
			if got != want {
				t.Errorf("%s: case %q has attributes of type %s; other cases %s", op.Name, c.Name, got, want)
			}
		}
	}
}

// TestCaseNamesAreUnique checks that no op has two cases of one name:
// a case's name seeds its values and keys its results and its PyTorch
// values.
func TestCaseNamesAreUnique(t *testing.T) {
	for _, op := range ops.Table() {
		seen := map[string]bool{}
		for _, c := range op.Cases {
			if seen[c.Name] {
				t.Errorf("%s: two cases named %q", op.Name, c.Name)
			}
			seen[c.Name] = true
		}
	}
}

// TestAttrsOfAnotherType checks that an op given attributes of a type it
// does not take panics with ErrArgument naming both types, and that nil
// stands for the zero value of its type.
func TestAttrsOfAnotherType(t *testing.T) {
	e := newEnv(t)
	x := e.f32([]float64{-2, 0.5, 3}, 3)
	for _, tt := range []struct {
		op   *ops.Op
		a    ops.Attrs
		want string
	}{
		{ops.ClipOp, ops.FillAttrs{Value: 1}, "ops.FillAttrs; want ops.ClipAttrs"},
		{ops.SoftmaxOp, ops.ReduceAttrs{Axes: []int{0}}, "ops.ReduceAttrs; want ops.AxisAttrs"},
		{ops.SumOp, ops.Window{}, "ops.Window; want ops.ReduceAttrs"},
		{ops.ReluOp, ops.LeakyReluAttrs{Slope: 0.2}, "ops.LeakyReluAttrs; the op takes none"},
	} {
		err := tensor.Maybe(func() { tt.op.Forward([]*tensor.Tensor{x}, tt.a) })
		if !errors.Is(err, tensor.ErrArgument) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s with %T: %v; want ErrArgument naming %q", tt.op.Name, tt.a, err, tt.want)
		}
	}
	// nil: the zero ClipAttrs, [0, 0].
	y := ops.ClipOp.Forward([]*tensor.Tensor{x}, nil)
	e.keep(y)
	if got := values(t, y); got[0] != 0 || got[1] != 0 || got[2] != 0 {
		t.Errorf("clip with nil attributes: %v; want the zero ClipAttrs' [0 0 0]", got)
	}
}
