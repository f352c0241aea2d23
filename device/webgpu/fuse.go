//go:build cgo || js

package webgpu

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/extensor/extensor/device"
	"github.com/oliverbestmann/webgpu/wgpu"
)

// Elementwise fusion. The unary, binary and where families' calls (Unary,
// UnaryGrad, Binary, BinaryGrad, Where) on float32 tensors, on float16
// ones where the kernels read WGSL's f16, and the casts between the two
// there (Convert), are not dispatched when they are called: they join the
// device's open chain, whose nodes run together as one kernel when
// anything else is recorded (a kernel of another family that binds a
// buffer the chain binds, a copy, a readback, a host write, a
// submission); a kernel that binds none of them neither reads what the
// chain writes nor writes what it reads or writes, and is recorded ahead
// of the open chain, which stays open (a submission that makes room in
// the parameter buffer mid-dispatch records the chain first). The chain
// is cut, and a new one begun, where a call cannot join it:
//
//   - its output has another length than the chain's;
//   - it writes a buffer freed while the chain is open, which the chain
//     binds with another dtype;
//   - it reads a value the chain computes other than element for
//     element (broadcast), or writes a buffer the chain reads so;
//   - its broadcast is of another shape than the chain's broadcasts;
//   - it writes a cast's float16 buffer (see below) in a chain that a
//     broadcast keeps off vec4s (see vec), whose invocations, of one
//     element each, would share the buffer's words;
//   - the kernel would bind more storage buffers than the device allows,
//     or need more parameter words than a dispatch has, or the chain has
//     maxChainNodes nodes.
//
// A call on a buffer larger than a binding runs on its own. A chain of
// one node runs its family's kernel, unchanged; a longer one runs the
// fused kernel that fuse renders from shaders/fused.wgsl, which includes
// the families' op_ functions whole, so that no op's arithmetic is
// written twice. The kernel is cached under its rendered text, which
// says the chain's structure (its ops, dtypes, which inputs broadcast and
// how, which values are written) and none of its values: shapes,
// strides and scalars are parameters.
//
// Each node's value is computed in float32 and rounded to its storage
// type, as its unfused kernel stores it, so that a fused chain gives what
// the unfused calls give. A cast's float16 buffers (its input or its
// output) are bound as words and read and written by their bits, as the
// cast kernel does (common.wgsl's half4_to_f32 and f32_to_half4, through
// which other nodes' float16 values, rounded already, pass unchanged), so
// that the subnormals and NaN payloads a cast reads from memory or writes
// to it are the cast kernel's on every adapter; WGSL's f16 conversions
// leave them to the implementation, and naga bitcasts no f16 vector to
// words. A float16 value a node computes and a cast takes in the kernel
// passes through WGSL's conversions (docs/architecture.md). A value is
// written to its buffer unless the buffer is freed before the chain runs
// (a temporary read only by the chain's later nodes), and a node whose
// value nothing written needs is left out. A freed buffer returns to the pool at once, as
// unfused, whether the chain reads it or not (y := f(x); x.Release()
// keeps the chain open, and the peak memory that of the unfused calls): a
// call that takes it anew either joins the chain, as the same binding (a
// buffer is bound by its wgpu buffer), written element for element after
// the elements are read, or records the chain before it writes the buffer
// (another family's kernel, a copy, a host write); a chain that reads it
// broadcast is cut before writing it; and the pool records the chain
// before it releases buffers of its own. The pool hands out no small
// buffer (smallBuffer) that the open chain reads broadcast, which any
// write would cut it for.

// maxChainNodes bounds a chain's nodes, and so a fused kernel's size.
const maxChainNodes = 24

// inKind is how a chain's node reads an input buffer.
type inKind uint8

const (
	inSame  inKind = iota // element i of the chain is element i of the buffer
	inSplat               // element 0 of the buffer, for every i
	inBcast               // the strides of the chain's broadcast shape
)

// nodeKind is a chain node's family call.
type nodeKind uint8

const (
	nodeUnary nodeKind = iota
	nodeUnaryGrad
	nodeBinary
	nodeBinaryGrad
	nodeWhere
	nodeCast // Convert, between float32 and float16
)

// fuseIn is an operand of a call joining a chain.
type fuseIn struct {
	b       *buffer
	kind    inKind
	strides []int // inBcast's
}

// fuseInput is an input a chain reads from memory.
type fuseInput struct {
	bind    int // its binding in the chain's binds
	kind    inKind
	strides []int
}

// fuseNode is one call of a chain.
type fuseNode struct {
	kind nodeKind
	op   string
	dt   device.DType // its output's
	wrt  int          // BinaryGrad's operand
	args []int        // a node's index (≥ 0) or −1 − an input's index
	p    []float64    // Unary's scalars
	out  int          // the binding it writes
	// what the call was given, to run it on its own, and the operands'
	// wgpu buffers (an operand freed since is bound by its own)
	ins []*buffer
	wbs []*wgpu.Buffer
	l   device.Broadcast
}

// fuseBind is a buffer a chain reads or writes, by its wgpu buffer: a
// buffer freed and taken anew while the chain is open is the same
// binding.
type fuseBind struct {
	b                *buffer
	wb               *wgpu.Buffer
	n                int  // the most elements a buffer of the binding held
	same, other      bool // read element for element; read otherwise (splat, broadcast)
	writer           int  // the last node writing it, or −1
	freed            bool // freed while the chain was open
	bits             bool // float16 a cast reads or writes: words, by their bits
	binding, written int  // set by render: its binding (0: none), whether written
}

// chain is the device's open chain of elementwise calls.
type chain struct {
	n      int   // elements of each node's output
	shape  []int // the broadcast inputs' shape, nil before one
	nodes  []fuseNode
	inputs []fuseInput
	binds  []fuseBind
}

// fusedParams are the fused kernel's parameters: N items, Zero (0, which
// the compiler cannot know: see shaders/fused.wgsl's opaque), then the
// words the rendered kernel indexes.
type fusedParams struct {
	N, Zero uint32
	W       [paramWords - 2]uint32
}

// fusedSpec specialises fused.wgsl: Body is the rendered bindings, node
// functions and elem; Ops names the chain's calls.
type fusedSpec struct {
	Ops, Body        string
	F16, Bits, Bcast bool // Bits: a cast's float16 buffers bound
	Unroll           int
	Coalesce         bool
}

func (fusedSpec) family() string { return "fused" }
func (fusedSpec) params() any    { return fusedParams{} }

// name is the kernel's name: its ops.
func (s fusedSpec) name() string { return "fused/" + s.Ops }

// bindOf returns the index of b's binding in c, adding it; a binding
// whose buffer was freed is b's now. It reports false, adding nothing,
// where b's wgpu buffer is bound with another dtype (freed, and taken
// anew as b).
func (c *chain) bindOf(b *buffer) (int, bool) {
	for i := range c.binds {
		if bd := &c.binds[i]; bd.wb == b.b {
			if bd.b.dt != b.dt {
				return 0, false
			}
			if bd.freed {
				bd.b, bd.freed = b, false
			}
			bd.n = max(bd.n, b.n)
			return i, true
		}
	}
	c.binds = append(c.binds, fuseBind{b: b, wb: b.b, n: b.n, writer: -1})
	return len(c.binds) - 1, true
}

// fusedType reports whether a fused kernel stores dt: float32, and
// float16 where the device's kernels read WGSL's f16.
func (d *Device) fusedType(dt device.DType) bool {
	return dt == device.Float32 || dt == device.Float16 && d.storeOf(dt).native()
}

// fusable reports whether a call of kind writing out can join a chain at
// all: its operands are of out's dtype, but a cast's.
func (d *Device) fusable(kind nodeKind, out *buffer, ins []fuseIn) bool {
	if !d.fuse || out.n == 0 || !d.fusedType(out.dt) {
		return false
	}
	limit := d.limits.MaxStorageBufferBindingSize
	if out.bindSize() > limit {
		return false
	}
	for _, in := range ins {
		if in.b.dt != out.dt && kind != nodeCast || !d.fusedType(in.b.dt) || in.b.bindSize() > limit {
			return false
		}
		if in.kind == inSame && in.b.n < out.n {
			return false
		}
	}
	return true
}

// join adds a call to the open chain, cutting it where the call cannot
// join it, and reports whether it did: false if the call must run on its
// own. The device's mutex is held.
func (d *Device) join(kind nodeKind, op string, wrt int, out *buffer, p []float64, l device.Broadcast, ins []fuseIn, raw []*buffer) bool {
	if !d.fusable(kind, out, ins) {
		return false
	}
	if out.b == nil || slices.ContainsFunc(raw, func(b *buffer) bool { return b.b == nil }) {
		d.refuse(errFreed(op))
		return true
	}
	if d.failedIn(raw...) || d.failedIn(out) {
		return true
	}
	if d.chain != nil && d.chain.try(d, kind, op, wrt, out, p, l, ins, raw) {
		return true
	}
	d.flushChain()
	c := &chain{n: out.n}
	if !c.try(d, kind, op, wrt, out, p, l, ins, raw) {
		return false // the call alone breaks a rule (its output read broadcast)
	}
	d.chain = c
	return true
}

// try adds a call to c if it can join it, reporting whether it did; c is
// unchanged if not.
func (c *chain) try(d *Device, kind nodeKind, op string, wrt int, out *buffer, p []float64, l device.Broadcast, ins []fuseIn, raw []*buffer) bool {
	if out.n != c.n || len(c.nodes) == maxChainNodes {
		return false
	}
	saved := *c
	saved.binds = slices.Clone(c.binds)
	undo := func() bool { *c = saved; return false }
	node := fuseNode{kind: kind, op: op, dt: out.dt, wrt: wrt, p: slices.Clone(p), ins: raw, l: l}
	for _, b := range raw {
		node.wbs = append(node.wbs, b.b)
	}
	for _, in := range ins {
		bi, ok := c.bindOf(in.b)
		if !ok {
			return undo()
		}
		bd := &c.binds[bi]
		bd.bits = bd.bits || kind == nodeCast && in.b.dt == device.Float16
		if in.kind != inSame {
			if bd.writer >= 0 {
				return undo() // a value of the chain read broadcast
			}
			if in.kind == inBcast {
				if c.shape == nil {
					c.shape = slices.Clone(l.Shape)
				} else if !slices.Equal(c.shape, l.Shape) {
					return undo()
				}
			}
			bd.other = true
		} else if bd.writer >= 0 {
			node.args = append(node.args, bd.writer)
			continue
		} else {
			bd.same = true
		}
		c.inputs = append(c.inputs, fuseInput{bind: bi, kind: in.kind, strides: in.strides})
		node.args = append(node.args, -len(c.inputs))
	}
	bi, ok := c.bindOf(out)
	if !ok {
		return undo()
	}
	node.out = bi
	if c.binds[node.out].other {
		return undo() // a buffer read broadcast, written
	}
	c.nodes = append(c.nodes, node)
	bd := &c.binds[node.out]
	bd.writer = len(c.nodes) - 1
	bd.bits = bd.bits || kind == nodeCast && out.dt == device.Float16
	if c.bound() > d.maxFusedBinds() || c.words() > len(fusedParams{}.W) {
		return undo()
	}
	if !c.vec() && slices.ContainsFunc(c.binds, func(bd fuseBind) bool { return bd.bits && bd.writer >= 0 }) {
		return undo() // words written by invocations of one element each
	}
	return true
}

// maxFusedBinds is the most buffers a fused kernel binds: the device's
// storage buffers but the parameters', and no more than the bind group
// cache keys.
func (d *Device) maxFusedBinds() int {
	return min(int(d.limits.MaxStorageBuffersPerShaderStage)-1, maxBound)
}

// bound is the count of buffers the chain's kernel binds, as it stands:
// those its nodes read from memory, and those written and not freed
// (render binds no more: a buffer freed later, or read only by nodes
// left out, is not bound).
func (c *chain) bound() int {
	n := 0
	for _, bd := range c.binds {
		if bd.same || bd.other || bd.writer >= 0 && !bd.freed {
			n++
		}
	}
	return n
}

// words is the count of parameter words the chain's kernel reads.
func (c *chain) words() int {
	w := 0
	for _, in := range c.inputs {
		if in.kind == inBcast {
			w += len(c.shape)
		}
	}
	if c.shape != nil {
		w += 2 * len(c.shape)
	}
	for _, n := range c.nodes {
		if n.kind == nodeUnary || n.kind == nodeUnaryGrad {
			w += 2
		}
	}
	return w
}

// bindsAny reports whether the chain binds any of bound's buffers: a
// dispatch that binds none of them neither reads what the chain writes
// nor writes what it reads or writes, and is recorded before it.
func (c *chain) bindsAny(bound []wgpu.BindGroupEntry) bool {
	return slices.ContainsFunc(bound, func(e wgpu.BindGroupEntry) bool { return e.Buffer != nil && c.bindsBuffer(e.Buffer) })
}

// bindsAnyOf is bindsAny for a command's operands (nil ones, and freed
// ones, skipped).
func (c *chain) bindsAnyOf(bufs []*buffer) bool {
	return slices.ContainsFunc(bufs, func(b *buffer) bool { return b != nil && b.resource != nil && b.b != nil && c.bindsBuffer(b.b) })
}

// bindsBuffer reports whether the chain binds wb.
func (c *chain) bindsBuffer(wb *wgpu.Buffer) bool {
	return slices.ContainsFunc(c.binds, func(bd fuseBind) bool { return bd.wb == wb })
}

// readsOther reports whether the chain reads wb other than element for
// element (splat or broadcast).
func (c *chain) readsOther(wb *wgpu.Buffer) bool {
	return slices.ContainsFunc(c.binds, func(bd fuseBind) bool { return bd.wb == wb && bd.other })
}

// releaseFusing is told that r is being freed: the open chain no longer
// writes it (it may still read it).
func (d *Device) releaseFusing(r *resource) {
	if d.chain == nil {
		return
	}
	for i := range d.chain.binds {
		if bd := &d.chain.binds[i]; bd.wb == r.b {
			bd.freed = true
		}
	}
}

// flushChain records the open chain's kernel, if any.
func (d *Device) flushChain() {
	c := d.chain
	if c == nil {
		return
	}
	d.chain = nil
	outs := d.outs
	d.outs = nil
	for _, bd := range c.binds {
		if bd.writer >= 0 {
			d.outs = append(d.outs, bd.b.resource)
		}
	}
	d.runChain(c)
	d.outs = outs
}

// runNode runs a chain's node on its family's kernel.
func (d *Device) runNode(n fuseNode, out *buffer) {
	n.ins = slices.Clone(n.ins)
	for i, b := range n.ins {
		if b.b != n.wbs[i] { // freed since
			n.ins[i] = &buffer{resource: &resource{b: n.wbs[i]}, dt: b.dt, n: b.n}
		}
	}
	switch n.kind {
	case nodeUnary:
		d.unary(device.UnaryOp(n.op), false, out, n.p, n.ins...)
	case nodeUnaryGrad:
		d.unary(device.UnaryOp(n.op), true, out, n.p, n.ins...)
	case nodeBinary:
		d.binary(device.BinaryOp(n.op), -1, out, n.l, n.ins...)
	case nodeBinaryGrad:
		d.binary(device.BinaryOp(n.op), n.wrt, out, n.l, n.ins...)
	case nodeWhere:
		d.where(out, n.ins[0], n.ins[1], n.ins[2])
	case nodeCast:
		d.convert(out, n.ins[0])
	}
}

// runChain records the chain: nothing where every value it computes was
// freed unread, the family's kernel where one node is needed, else the
// kernel it renders.
func (d *Device) runChain(c *chain) {
	live := c.needed()
	switch len(live) {
	case 0:
		return
	case 1:
		n := c.nodes[live[0]]
		d.runNode(n, c.binds[n.out].b)
		return
	}
	s, vec, words, kinds, bufs := c.render(d, live)
	k := d.kernelOf(s, kinds...)
	if k == nil {
		return
	}
	items := c.n
	if vec {
		items = vecs(c.n)
	}
	d.fusedRuns++
	d.run(k, groupsOf(groupsOf(items, elemUnroll), 256), fusedParams{N: uint32(items), W: words}, bufs...)
}

// vec reports whether the chain's kernel takes 4 elements an item: where
// no input broadcasts, or the shape's last axis is a multiple of 4 long
// and each broadcast input either runs along it or is constant along it.
func (c *chain) vec() bool {
	if c.shape == nil {
		return true
	}
	r := len(c.shape)
	if r == 0 || c.shape[r-1]%4 != 0 {
		return false
	}
	for _, in := range c.inputs {
		if in.kind == inBcast && in.strides[r-1] > 1 {
			return false
		}
	}
	return true
}

// needed returns the nodes whose values a written buffer needs, in
// order.
func (c *chain) needed() []int {
	need := make([]bool, len(c.nodes))
	var mark func(k int)
	mark = func(k int) {
		if need[k] {
			return
		}
		need[k] = true
		for _, a := range c.nodes[k].args {
			if a >= 0 {
				mark(a)
			}
		}
	}
	for _, bd := range c.binds {
		if bd.writer >= 0 && !bd.freed {
			mark(bd.writer)
		}
	}
	var live []int
	for k, n := range need {
		if n {
			live = append(live, k)
		}
	}
	return live
}

// render returns the kernel of the chain's nodes live, its parameter
// words, and the kinds and buffers of its bindings.
func (c *chain) render(d *Device, live []int) (s fusedSpec, vec bool, words [paramWords - 2]uint32, kinds []bindKind, bufs []*buffer) {
	vec = c.vec()
	w := 0
	put := func(v uint32) int { words[w] = v; w++; return w - 1 }
	// Bindings: buffers the live nodes read, and buffers written but not
	// freed.
	read := make([]bool, len(c.binds))
	usedIn := make([]bool, len(c.inputs))
	for _, k := range live {
		for _, a := range c.nodes[k].args {
			if a < 0 {
				usedIn[-1-a] = true
				read[c.inputs[-1-a].bind] = true
			}
		}
	}
	for i := range c.binds {
		bd := &c.binds[i]
		bd.binding, bd.written = 0, 0
		write := bd.writer >= 0 && !bd.freed
		if !write && !read[i] {
			continue
		}
		b := bd.b
		if b.b != bd.wb || b.n < bd.n { // freed, or taken anew by a smaller buffer
			b = &buffer{resource: &resource{b: bd.wb}, dt: b.dt, n: bd.n}
		}
		bufs = append(bufs, b)
		bd.binding = len(bufs)
		kind := storageRO
		if write {
			kind, bd.written = storageRW, 1
		}
		kinds = append(kinds, kind)
	}
	var b strings.Builder
	f16, bits := false, false
	for i := range c.binds {
		bd := c.binds[i]
		if bd.binding == 0 {
			continue
		}
		access, elem := "read", "f32"
		if bd.written == 1 {
			access = "read_write"
		}
		switch {
		case bd.bits && vec && !bd.other:
			elem, bits = "vec2<u32>", true
		case bd.bits:
			elem, bits = "u32", true
		case bd.b.dt == device.Float16:
			elem, f16 = "f16", true
		}
		if vec && !bd.other && !bd.bits {
			elem = "vec4<" + elem + ">"
		}
		fmt.Fprintf(&b, "@group(0) @binding(%d) var<storage, %s> b%d: array<%s>;\n", bd.binding, access, bd.binding, elem)
	}
	// Node functions.
	var ops []string
	for _, k := range live {
		n := c.nodes[k]
		switch n.kind {
		case nodeUnary:
			fmt.Fprintf(&b, "\nfn n%d(x: f32, a: f32, b: f32) -> f32 {\n    return select(op_%s(x, a, b), x, is_nan(x));\n}\n", k, n.op)
			ops = append(ops, n.op)
		case nodeUnaryGrad:
			fmt.Fprintf(&b, "\nfn n%d(x: f32, g: f32, a: f32, b: f32) -> f32 {\n    return select(op_%s_grad(x, g, a, b), x, is_nan(x));\n}\n", k, n.op)
			ops = append(ops, n.op+"_grad")
		case nodeBinary:
			fmt.Fprintf(&b, "\nfn n%d(x: f32, y: f32) -> f32 {\n    return op_%s(x, y);\n}\n", k, n.op)
			ops = append(ops, n.op)
		case nodeBinaryGrad:
			fmt.Fprintf(&b, "\nfn n%d(x: f32, y: f32, g: f32) -> f32 {\n    return op_%s_grad%d(x, y, g);\n}\n", k, n.op, n.wrt)
			ops = append(ops, fmt.Sprintf("%s_grad%d", n.op, n.wrt))
		case nodeWhere:
			fmt.Fprintf(&b, "\nfn n%d(c: f32, x: f32, y: f32) -> f32 {\n    return op_where(c, x, y);\n}\n", k)
			ops = append(ops, n.op)
		case nodeCast:
			ops = append(ops, n.op)
		}
		f16 = f16 || n.dt == device.Float16
		bits = bits || n.kind == nodeCast
	}
	b.WriteString("\nfn elem(i: u32) {\n")
	// The broadcast inputs' offsets.
	offsets := map[int]string{}
	if c.shape != nil {
		r := len(c.shape)
		shape, mag := w, w+r
		for _, e := range c.shape {
			put(uint32(e))
		}
		for _, e := range c.shape {
			put(magic(e))
		}
		first := "i"
		if vec {
			first = "4u * i"
		}
		fmt.Fprintf(&b, "    var rem = %s;\n", first)
		for k := r - 1; k > 0; k-- {
			fmt.Fprintf(&b, "    let q%d = udiv(rem, p.W[%d], p.W[%d]);\n    let c%d = rem - q%d * p.W[%d];\n    rem = q%d;\n", k, shape+k, mag+k, k, k, shape+k, k)
		}
		b.WriteString("    let c0 = rem;\n")
		for j, in := range c.inputs {
			if in.kind != inBcast || !usedIn[j] {
				continue
			}
			terms := make([]string, r)
			for k := range r {
				terms[k] = fmt.Sprintf("c%d * p.W[%d]", k, put(uint32(in.strides[k])))
			}
			offsets[j] = fmt.Sprintf("o%d", j)
			fmt.Fprintf(&b, "    let o%d = %s;\n", j, strings.Join(terms, " + "))
		}
	}
	// The inputs, each read once.
	for j, in := range c.inputs {
		if !usedIn[j] {
			continue
		}
		bd := c.binds[in.bind]
		v := fmt.Sprintf("b%d", bd.binding)
		// Element at as f32 (one), four as vec4<f32> (four), the
		// binding's vec4 i (whole); by the bits of words.
		one := func(at string) string { return fmt.Sprintf("f32(%s[%s])", v, at) }
		four := func(at ...string) string {
			for k, a := range at {
				at[k] = one(a)
			}
			return "vec4<f32>(" + strings.Join(at, ", ") + ")"
		}
		whole := fmt.Sprintf("vec4<f32>(%s[i])", v)
		if bd.bits {
			word := func(at string) string { return fmt.Sprintf("(%s[(%s) / 2u] >> (16u * ((%s) %% 2u)))", v, at, at) }
			one = func(at string) string { return "half4_to_f32(vec4<u32>(" + word(at) + ")).x" }
			four = func(at ...string) string {
				for k, a := range at {
					at[k] = word(a)
				}
				return "half4_to_f32(vec4<u32>(" + strings.Join(at, ", ") + "))"
			}
			whole = fmt.Sprintf("half4_to_f32(halves(%s[i]))", v)
		}
		var e string
		switch {
		case in.kind == inSame && vec && !bd.other:
			e = whole
		case in.kind == inSame && vec:
			e = four("4u * i", "4u * i + 1u", "4u * i + 2u", "4u * i + 3u")
		case in.kind == inSame:
			e = one("i")
		case in.kind == inSplat && vec:
			e = "vec4<f32>(" + one("0") + ")"
		case in.kind == inSplat:
			e = one("0")
		case vec && in.strides[len(c.shape)-1] == 0:
			e = "vec4<f32>(" + one(offsets[j]) + ")"
		case vec:
			o := offsets[j]
			e = four(o, o+" + 1u", o+" + 2u", o+" + 3u")
		default:
			e = one(offsets[j])
		}
		fmt.Fprintf(&b, "    let x%d = %s;\n", j, e)
	}
	// The nodes, in order.
	opaque := 0
	for _, k := range live {
		n := c.nodes[k]
		// Each operand through opaque, each with a key of its own: no
		// two are the same value to the compiler, as no two operands of
		// the unfused kernels are (each is a load of its own binding).
		args := make([]string, len(n.args))
		for a, arg := range n.args {
			v := fmt.Sprintf("x%d", -1-arg)
			if arg >= 0 {
				v = fmt.Sprintf("v%d", arg)
			}
			opaque++
			args[a] = fmt.Sprintf("a%d_%d", k, a)
			fn := "opaque"
			if vec {
				fn = "opaque4"
			}
			fmt.Fprintf(&b, "    let %s = %s(%s, %du);\n", args[a], fn, v, opaque)
		}
		if n.kind == nodeUnary || n.kind == nodeUnaryGrad {
			sa, sb := put(math.Float32bits(scalarAt(n.p, 0))), put(math.Float32bits(scalarAt(n.p, 1)))
			args = append(args, fmt.Sprintf("bitcast<f32>(p.W[%d])", sa), fmt.Sprintf("bitcast<f32>(p.W[%d])", sb))
		}
		var e string
		switch {
		case n.kind == nodeCast && n.dt == device.Float16:
			// On the bits, kept for the store.
			if vec {
				fmt.Fprintf(&b, "    let h%d = f32_to_half4(%s);\n", k, args[0])
				e = fmt.Sprintf("half4_to_f32(h%d)", k)
			} else {
				fmt.Fprintf(&b, "    let h%d = f32_to_half4(vec4<f32>(%s));\n", k, args[0])
				e = fmt.Sprintf("half4_to_f32(h%d).x", k)
			}
		case n.kind == nodeCast:
			e = args[0] // a float16 value, exact in f32
		case vec:
			comps := make([]string, 4)
			for ci, comp := range []string{"x", "y", "z", "w"} {
				ca := slices.Clone(args)
				for a := range n.args {
					ca[a] += "." + comp
				}
				comps[ci] = fmt.Sprintf("n%d(%s)", k, strings.Join(ca, ", "))
			}
			e = "vec4<f32>(" + strings.Join(comps, ", ") + ")"
			if n.dt == device.Float16 {
				e = "vec4<f32>(to_e4(" + e + "))"
			}
		default:
			e = fmt.Sprintf("n%d(%s)", k, strings.Join(args, ", "))
			if n.dt == device.Float16 {
				e = "f32(to_e(" + e + "))"
			}
		}
		fmt.Fprintf(&b, "    let v%d = %s;\n", k, e)
	}
	// The values read after the chain.
	for _, bd := range c.binds {
		if bd.written != 1 {
			continue
		}
		n := c.nodes[bd.writer]
		switch {
		case n.kind == nodeCast && n.dt == device.Float16: // vec (try)
			fmt.Fprintf(&b, "    b%d[i] = words(h%d);\n", bd.binding, bd.writer)
		case bd.bits:
			fmt.Fprintf(&b, "    b%d[i] = words(f32_to_half4(v%d));\n", bd.binding, bd.writer)
		case bd.b.dt == device.Float32:
			fmt.Fprintf(&b, "    b%d[i] = v%d;\n", bd.binding, bd.writer)
		case vec:
			fmt.Fprintf(&b, "    b%d[i] = to_e4(v%d);\n", bd.binding, bd.writer)
		default:
			fmt.Fprintf(&b, "    b%d[i] = to_e(v%d);\n", bd.binding, bd.writer)
		}
	}
	b.WriteString("}\n")
	s = fusedSpec{Ops: strings.Join(ops, ","), Body: b.String(), F16: f16, Bits: bits, Bcast: c.shape != nil,
		Unroll: elemUnroll, Coalesce: !d.loopLimited}
	return s, vec, words, kinds, bufs
}

// scalarAt is p[i], or 0.
func scalarAt(p []float64, i int) float32 {
	if i < len(p) {
		return float32(p[i])
	}
	return 0
}

// broadcastIns returns the operands a and b of the broadcast l.
func broadcastIns(l device.Broadcast, a, b *buffer) []fuseIn {
	in := func(buf *buffer, strides []int) fuseIn {
		switch {
		case device.IsRowMajor(l.Shape, strides):
			return fuseIn{b: buf}
		case allZero(strides):
			return fuseIn{b: buf, kind: inSplat}
		}
		return fuseIn{b: buf, kind: inBcast, strides: strides}
	}
	return []fuseIn{in(a, l.AStrides), in(b, l.BStrides)}
}

// Fusion turns elementwise fusion on or off (EnvFuse sets it when the
// device opens), after recording the open chain, and reports whether it
// was on (device.Fuser).
func (d *Device) Fusion(on bool) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.flushChain()
	was := d.fuse
	d.fuse = on
	return was
}

// FusedKernels returns the number of fused kernels (chains of two calls
// or more) recorded since the device opened (device.Fuser).
func (d *Device) FusedKernels() int64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.flushChain()
	return d.fusedRuns
}

var _ device.Fuser = (*Device)(nil)
