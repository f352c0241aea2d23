package parity

import (
	"fmt"
	"strings"
)

// Table collects results into the op coverage table.
type Table struct {
	order []string
	rows  map[string]*tableRow
}

type tableRow struct {
	family               string
	cases, fdPass, fdRun int
	torchPass, torchRun  int
	cells                [4]Status // cpu fwd, cpu bwd, webgpu fwd, webgpu bwd
	fd, rule, half       Status
	torch                Status
}

// merge combines the outcomes of two cases for one cell: a failure wins,
// then a pass, then not run, then not applicable.
func merge(a, b Status) Status {
	rank := map[Status]int{NotApplicable: 0, NotRun: 1, Refused: 2, Pass: 2, Fail: 3}
	if rank[b] > rank[a] {
		return b
	}
	return a
}

// Add records the result of one case.
func (t *Table) Add(r Result) {
	if t.rows == nil {
		t.rows = map[string]*tableRow{}
	}
	row, ok := t.rows[r.Op]
	if !ok {
		row = &tableRow{family: r.Family, cells: [4]Status{NotApplicable, NotApplicable, NotApplicable, NotApplicable}, fd: NotApplicable, rule: NotApplicable, half: NotApplicable, torch: NotApplicable}
		t.rows[r.Op] = row
		t.order = append(t.order, r.Op)
	}
	row.cases++
	for i, s := range [4]Status{r.CPUFwd, r.CPUBwd, r.GPUFwd, r.GPUBwd} {
		row.cells[i] = merge(row.cells[i], s)
	}
	row.fd = merge(row.fd, r.FD)
	row.rule = merge(row.rule, r.Rule)
	row.half = merge(row.half, r.Half)
	row.torch = merge(row.torch, r.Torch)
	if r.Torch == Pass || r.Torch == Fail {
		row.torchRun++
	}
	if r.Torch == Pass {
		row.torchPass++
	}
	if r.FD == Pass || r.FD == Fail {
		row.fdRun++
	}
	if r.FD == Pass {
		row.fdPass++
	}
}

// Complete reports whether every applicable check ran and passed.
func (t *Table) Complete() bool {
	for _, row := range t.rows {
		for _, s := range append(row.cells[:], row.fd, row.rule, row.torch) {
			if s == Fail || s == NotRun {
				return false
			}
		}
	}
	return len(t.rows) > 0
}

func (s Status) String() string {
	switch s {
	case Pass:
		return "✓"
	case Fail:
		return "✗ FAIL"
	case NotRun:
		return "not run"
	case Refused:
		return "refused"
	}
	return "—"
}

// Markdown renders the table. A finite-differences cell counts the cases
// checked: the large-tensor cases are too big for them. The second-order
// column says whether the op's gradient can itself be differentiated (its
// Grad rule, checked against its backward on both backends).
func (t *Table) Markdown() string {
	var b strings.Builder
	cases := 0
	for _, op := range t.order {
		cases += t.rows[op].cases
	}
	fmt.Fprintf(&b, "%d ops, %d cases.\n\n", len(t.order), cases)
	b.WriteString("| op | kernel family | cases | cpu fwd | cpu bwd | webgpu fwd | webgpu bwd | finite differences | 2nd order | float16 | pytorch |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, op := range t.order {
		row := t.rows[op]
		fd := row.fd.String()
		if row.fd == Pass || row.fd == Fail {
			fd = fmt.Sprintf("%s %d/%d", fd, row.fdPass, row.cases)
		}
		torch := row.torch.String()
		if row.torch == Pass || row.torch == Fail {
			torch = fmt.Sprintf("%s %d/%d", torch, row.torchPass, row.cases)
		}
		fmt.Fprintf(&b, "| %s | %s | %d | %s | %s | %s | %s | %s | %s | %s | %s |\n", op, row.family, row.cases,
			row.cells[0], row.cells[1], row.cells[2], row.cells[3], fd, row.rule, row.half, torch)
	}
	return b.String()
}
