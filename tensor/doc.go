// Package tensor provides n-dimensional arrays that live on a device.
//
// A Tensor has a shape, a dtype (float32, float64 or int32) and a buffer on
// one device.Device. Tensors are created from Go slices (FromFloat32,
// FromFloat64, FromInt32) or filled on a device (Zeros, Ones, Full, Uniform,
// Normal), read back with Float32s, Float64s or Int32s, moved with To, and
// freed with Release, or by the garbage collector once unreachable. A
// Scope (Tidy) releases a group of tensors at once: those it tracks and
// those computed from them.
//
// # Errors
//
// extensor follows gonum's precedent and has one policy for each kind of
// failure:
//
//   - Programmer errors — incompatible shapes, mismatched dtypes or devices,
//     a bad axis, a released tensor — panic with a *Error that names the op
//     and what it expected. Its Kind is one of ErrShape, ErrDType, ErrDevice,
//     ErrArgument or ErrReleased, so errors.Is works. Maybe turns such a
//     panic back into an error.
//   - Runtime failures — no adapter, out of device memory, a tensor larger
//     than the device can bind, a GPU validation error — are returned as
//     errors: at once by the functions that return an error (creation,
//     readback, To), and for ops, which a GPU runs asynchronously, by the
//     next readback or Device.Sync, which names the failing kernel.
//
// Importing this package registers the "cpu" device.
package tensor
