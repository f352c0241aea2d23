package ops

// SetClipGroup sets the elements of ClipGradNorm's groups of gradients,
// returning the old count, so that small tests make several groups.
func SetClipGroup(n int) int {
	old := clipGroup
	clipGroup = n
	return old
}
