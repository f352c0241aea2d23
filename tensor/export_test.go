package tensor

// ForcedGCs returns how many collections the package has asked for.
func ForcedGCs() int64 { return forcedGCs.Load() }
