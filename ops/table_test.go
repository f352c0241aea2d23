package ops_test

import (
	"math"
	"strings"
	"testing"

	"github.com/extensor/extensor/ops"
)

// TestEveryOpHasSpecialValues checks that the parity suite feeds every op
// NaN and an infinity, in a case named "special values …".
func TestEveryOpHasSpecialValues(t *testing.T) {
	for _, op := range ops.Table() {
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
