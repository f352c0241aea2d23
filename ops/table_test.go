package ops_test

import (
	"math"
	"os"
	"regexp"
	"strconv"
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

// TestReadmeCountsTheTable checks that the README's count of ops ("**N
// ops**") is the table's: the count is written by hand, the table grows.
func TestReadmeCountsTheTable(t *testing.T) {
	raw, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`\*\*(\d+) ops\*\*`).FindSubmatch(raw)
	if m == nil {
		t.Fatalf("README.md has no \"**N ops**\" count")
	}
	if n, _ := strconv.Atoi(string(m[1])); n != len(ops.Table()) {
		t.Errorf("README.md counts %d ops; the table has %d", n, len(ops.Table()))
	}
}
