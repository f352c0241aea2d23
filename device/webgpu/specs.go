//go:build cgo || js

package webgpu

import (
	"fmt"
	"reflect"
	"strings"
)

// A spec is a kernel's specialisation: a comparable struct whose fields
// are the template data of one WGSL file of package shaders, the family
// its method names. With the kinds of its bindings it is the key of the
// device's pipeline cache, so a field that changes the kernel cannot be
// left out of the key; its fields also name the kernel (specName).
type spec interface {
	family() string
	// params returns the zero value of the kernel's parameter struct,
	// which its WGSL reads as p (shaders.ParamsDecl).
	params() any
}

// The specialisations of each kernel family, one struct per WGSL file
// (shaders/FAMILY.wgsl); a template reads only its struct's fields.

// unarySpec specialises unary.wgsl: op_Fn (or its gradient) over
// elements by vec4s, unrolled Unroll times.
type unarySpec struct {
	Fn              string
	Grad, Half, F16 bool
	Unroll          int
	Coalesce        bool
}

// binarySpec specialises binary.wgsl: op_Fn, or its gradient with
// respect to operand Grad (−1: the op), same-layout operands by vec4s
// (Same; with Scalar 1 or 2, operand a or b one element, splat, bound
// last), or broadcast ones of rank Rank (RowVec: by vec4s along the last
// axis).
type binarySpec struct {
	Fn                 string
	Grad               int
	Same, Half, F16    bool
	Scalar             int
	Unroll             int
	Coalesce           bool
	Rank               int
	RowVec, VecA, VecB bool
}

// updateSpec specialises update.wgsl: fill, arange, axpy, the
// optimiser steps and loss scaling's unscale and scale_update (Op) over
// elements of type T (W, V: axpy's float32 type and vector width; U:
// unscale's bits, u32s shaped as T). Scaled steps read a loss scaler's
// state.
type updateSpec struct {
	Op, T, W, V, U                                        string
	F16                                                   bool
	Momentum, First, Nesterov, Decoupled, AMSGrad, Scaled bool
	Counts                                                int // scale_update: the optimisers' counts of skips it keeps
	Group                                                 int // sgd, adam: the parameters a dispatch steps, where more than one
}

// castSpec specialises cast.wgsl: float32 to float16 (ToHalf) or back.
type castSpec struct{ ToHalf, Vec bool }

// drawSpec specialises draw.wgsl: the dashboard's drawing Op.
type drawSpec struct{ Op string }

// gatherSpec specialises gather.wgsl: rows of a table (Table), runs of
// rows (Rows) or elements, or their gradient (Grad).
type gatherSpec struct{ Grad, Table, Rows, F16 bool }

// scanSpec specialises scan.wgsl: cumulative sums, from the end with
// Reverse.
type scanSpec struct{ Reverse, F16 bool }

// whereSpec specialises where.wgsl.
type whereSpec struct{ F16 bool }

// stridedSpec specialises strided.wgsl: copies between strided layouts
// of rank Rank.
type stridedSpec struct {
	Half, F16   bool
	Rank        int
	Vec, VecDst bool
}

// reduceSpec specialises reduce.wgsl: Op over Red axes of Kept kept
// ones, one output an invocation or in chunks (Chunks) of Group
// reductions over L lanes; the argmax and argmin passes (Arg, Stage).
// Acc: x holds a previous pass's accumulators; Partial: out receives
// accumulators, for another pass (a sum's are pairs, set only for sums:
// those of max and min are their values).
type reduceSpec struct {
	Op                    string
	Arg, Chunks, Vec      bool
	Acc, Partial          bool
	Stage                 int
	Half, XF16, OF16, F16 bool
	Kept, Red             int
	Group, SubgroupOp     string
	L, Unroll             int
	Coalesce              bool
}

// softmaxSpec specialises softmax.wgsl: a row a workgroup (Stage "row")
// or the stats and apply passes.
type softmaxSpec struct {
	Log, Grad       bool
	Stage           string
	W, V, Quads     int
	Group           string
	F16, Vec        bool
	Block, Unroll   int
	Whole, Coalesce bool
}

// xentSpec specialises softmax_xent.wgsl, or softmax_xent_grad.wgsl
// (Grad).
type xentSpec struct{ Grad, F16 bool }

// normSpec specialises norm.wgsl: layer (Center) or RMS norm, or their
// gradients, a row a workgroup (Stage "row") or an invocation.
type normSpec struct {
	Grad, Center bool
	Stage        string
	W, V         int
	Sums         bool // the gradient's one-pass kernel sums its rows' g·x̂ and g
	Group        string
	F16          bool
}

// windowSpec specialises window.wgsl: Op over one geometry of windows,
// whose sizes are constants of the kernel.
type windowSpec struct {
	Pairs                                                   bool
	Op                                                      string
	C, H, W, KH, KW, CH, CW, SH, SW, PH, PW, DH, DW, OH, OW int
	Half, F16, Disjoint, Cells, Ones                        bool
	Pitch                                                   int
}

// attentionSpec specialises attention.wgsl: a Stage of the fused
// attention over R rows a workgroup and keys in blocks of C, causal or
// not (the dispatch's parameter).
type attentionSpec struct {
	Stage                   string
	DS                      bool
	R, C, D4, DV4, Mask     int
	Drop, F16, Split, Align bool
}

// registerSpec specialises matmul.wgsl, the register-blocked product, on
// float32: float16 products run on float32 stand-ins (MatMul), a variant
// of each layout fewer for llvmpipe to compile.
type registerSpec struct {
	TM, TN                                 int
	TransA, TransB, VecA, VecB, VecO, DotK bool
	Flat                                   bool
}

// tiledSpec specialises matmul_tiled.wgsl, the tiled product in shared
// memory.
type tiledSpec struct {
	BM, BN, BK, TM, TN                  int
	Spread, TransA, TransB, VecO        bool
	HalfA, HalfB, Half, F16, VecA, VecB bool
	Pre                                 bool
}

// sumSpec specialises matmul_sum.wgsl, which adds a split product's parts.
type sumSpec struct{}

// texSpec specialises matmul_tex.wgsl: the texture product (Stage "mul",
// op(a) as texels of 4 rows with ARows) and its operands' packing, on
// float32 or WGSL's f16 (F16).
type texSpec struct {
	Stage           string
	TM, TN          int
	F16, Vec, ARows bool
}

// convTexSpec specialises conv_tex.wgsl: the direct convolution's
// packing of images and of filters of Taps taps, from float32 or WGSL's
// f16 (F16), and its forward and filters' gradient, which write float32
// (Conv2d widens), for filters of any size, with or without a bias and
// for any count of filters (the dispatch's parameters).
type convTexSpec struct {
	Stage  string
	Taps   int
	Flip   bool
	Rows   bool // stage wpack: the filters of stage rows
	TM, TN int
	F16    bool
}

func (unarySpec) family() string     { return "unary" }
func (binarySpec) family() string    { return "binary" }
func (updateSpec) family() string    { return "update" }
func (castSpec) family() string      { return "cast" }
func (drawSpec) family() string      { return "draw" }
func (gatherSpec) family() string    { return "gather" }
func (scanSpec) family() string      { return "scan" }
func (whereSpec) family() string     { return "where" }
func (stridedSpec) family() string   { return "strided" }
func (reduceSpec) family() string    { return "reduce" }
func (softmaxSpec) family() string   { return "softmax" }
func (normSpec) family() string      { return "norm" }
func (windowSpec) family() string    { return "window" }
func (attentionSpec) family() string { return "attention" }
func (registerSpec) family() string  { return "matmul" }
func (tiledSpec) family() string     { return "matmul_tiled" }
func (sumSpec) family() string       { return "matmul_sum" }
func (texSpec) family() string       { return "matmul_tex" }
func (convTexSpec) family() string   { return "conv_tex" }

func (s xentSpec) family() string {
	if s.Grad {
		return "softmax_xent_grad"
	}
	return "softmax_xent"
}

// specName names a kernel after its specialisation, for errors, labels
// and profiles: the family, its string fields, then its other fields that
// are not zero (a true bool by its name), e.g.
// "unary/exp/unroll=2,coalesce".
func specName(s spec) string {
	if n, ok := s.(interface{ name() string }); ok {
		return n.name()
	}
	v := reflect.ValueOf(s)
	name := s.family()
	var rest []string
	for i := range v.NumField() {
		f, fv := v.Type().Field(i), v.Field(i)
		switch {
		case fv.Kind() == reflect.String:
			if fv.String() != "" {
				name += "/" + fv.String()
			}
		case fv.IsZero():
		case fv.Kind() == reflect.Bool:
			rest = append(rest, strings.ToLower(f.Name))
		default:
			rest = append(rest, fmt.Sprintf("%s=%v", strings.ToLower(f.Name), fv.Interface()))
		}
	}
	if len(rest) > 0 {
		name += "/" + strings.Join(rest, ",")
	}
	return name
}
