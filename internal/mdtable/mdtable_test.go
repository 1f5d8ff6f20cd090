package mdtable

import (
	"reflect"
	"testing"
)

const doc = `# A document

| other | table |
|---|---|
| a | b |

- a list item:

  | scenario | mode | **figure** |
  |---|---|---|
  | first | x | **1.0** |
  | | y | 2.0 |
  | second | x | 3.0 |

After the table.
| scenario | mode | again |
`

func TestFind(t *testing.T) {
	got, err := Find(doc, "| scenario | mode |")
	if err != nil {
		t.Fatal(err)
	}
	want := Table{
		Columns: []string{"scenario", "mode", "figure"},
		Rows:    [][]string{{"first", "x", "1.0"}, {"first", "y", "2.0"}, {"second", "x", "3.0"}},
		Raw:     [][]string{{"first", "x", "**1.0**"}, {"", "y", "2.0"}, {"second", "x", "3.0"}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Find = %q, want %q", got, want)
	}
}

func TestFindBadInput(t *testing.T) {
	for name, header := range map[string]string{
		"no such table": "| nothing |",
		"no rule":       "| scenario | mode | again |",
	} {
		if got, err := Find(doc+"\n| scenario | mode | again |\nnot a rule\n", header); err == nil {
			t.Errorf("%s: Find = %q, no error", name, got)
		}
	}
}
