package autograd

// NoGrad returns v's value as a variable that is never recorded, and
// neither is any op that reads it, nor any op that reads what such an op
// returns: the explicit form of PyTorch's torch.no_grad, scoped by the
// data rather than by a block of code. Run a model on x.NoGrad() for
// evaluation: its results require no gradient, whatever its parameters
// require, and keep no graph. v itself is unchanged.
//
// Unlike a torch.no_grad block, the mark follows the data wherever it
// goes: a loss that reads a NoGrad result (a teacher's output as a
// target) is unrecorded too, and its Backward fails. Detach such a result
// first: Detach gives a plain leaf that requires no gradient.
//
// An op that reads no such variable (one on parameters alone) is recorded
// as usual; what it records is dropped with its result.
func (v *Var) NoGrad() *Var { v.notNil("autograd.Var.NoGrad"); return &Var{t: v.t, noGrad: true} }
