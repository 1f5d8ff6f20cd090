// Package mdtable reads the tables of a Markdown document, for the tests
// that hold a document's figures to what the code prints.
package mdtable

import (
	"fmt"
	"strings"
)

// A Table is a Markdown table: the cells of its header row and of each
// row after the rule under it, trimmed, without bold marks ("**"); and
// the rows' cells as written, bold marks kept, for a check that reads
// which figures the document sets in bold.
type Table struct {
	Columns []string
	Rows    [][]string
	Raw     [][]string
}

// Find returns the first table of text whose header row begins with
// header, leading spaces aside (a table in a list item is indented). A
// row's empty first cell takes the first cell of the row above, as a
// table that groups its rows leaves it empty. It fails if no table
// begins with header, or if the line after the header is not a rule.
func Find(text, header string) (Table, error) {
	lines := strings.Split(text, "\n")
	for i, line := range lines {
		if !strings.HasPrefix(strings.TrimSpace(line), header) {
			continue
		}
		if i+1 == len(lines) || !strings.HasPrefix(strings.TrimSpace(lines[i+1]), "|-") {
			return Table{}, fmt.Errorf("mdtable: the line after %q is not a table's rule", header)
		}
		t := Table{Columns: cells(line, true)}
		for _, row := range lines[i+2:] {
			if !strings.HasPrefix(strings.TrimSpace(row), "|") {
				break
			}
			c := cells(row, true)
			if c[0] == "" && len(t.Rows) > 0 {
				c[0] = t.Rows[len(t.Rows)-1][0]
			}
			t.Rows = append(t.Rows, c)
			t.Raw = append(t.Raw, cells(row, false))
		}
		return t, nil
	}
	return Table{}, fmt.Errorf("mdtable: no table begins %q", header)
}

// cells splits a table's line into its cells, trimmed, and without bold
// marks if plain.
func cells(line string, plain bool) []string {
	c := strings.Split(strings.Trim(strings.TrimSpace(line), "|"), "|")
	for i := range c {
		if plain {
			c[i] = strings.ReplaceAll(c[i], "**", "")
		}
		c[i] = strings.TrimSpace(c[i])
	}
	return c
}
