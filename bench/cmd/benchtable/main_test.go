package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const sample = `machine: go1.26.8 linux/amd64, 2 CPUs
goos: linux
goarch: amd64
pkg: github.com/retrykit/retry/bench
BenchmarkSuccess/direct-2    	129945770	         9.0 ns/op	       0 B/op	       0 allocs/op
BenchmarkSuccess/retrykit-2  	32982733	        36.0 ns/op	       0 B/op	       0 allocs/op
BenchmarkSuccess/direct-2    	129945770	        10.0 ns/op	       0 B/op	       0 allocs/op
BenchmarkSuccess/retrykit-2  	32982733	        30.0 ns/op	       0 B/op	       0 allocs/op
BenchmarkSuccess/direct-2    	129945770	        11.0 ns/op	       0 B/op	       0 allocs/op
BenchmarkSuccess/retrykit-2  	32982733	        40.0 ns/op	       0 B/op	       0 allocs/op
BenchmarkThreeAttempts/avast 	  552146	      1877 ns/op	     768 B/op	      12 allocs/op
BenchmarkThreeAttempts/avast 	  552146	      1879 ns/op	     770 B/op	      13 allocs/op
BenchmarkPlain-8             	     100	       123 ns/op
PASS
ok  	github.com/retrykit/retry/bench	1.0s
# instructions per call
BenchmarkSuccess/direct	100000	24.5 instr/op
BenchmarkSuccess/retrykit	100000	100.4 instr/op
command: cd bench && ./run.sh
`

const want = `| case | library | instructions | + instr. | × direct | ns/op | + ns | × direct | B/op | allocs/op | runs |
| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |
| Success | direct | 24 | 0 | 1.0 | 10.0 | 0.00 | 1.0 | 0 | 0 | 3 |
| Success | retrykit | 100 | 76 | 4.1 | 36.0 | 26.0 | 3.6 | 0 | 0 | 3 |
| ThreeAttempts | avast | — | — | — | 1878 | — | — | 769 | 12.5 | 2 |
| Plain |  | — | — | — | 123 | — | — | — | — | 1 |

go1.26.8 linux/amd64, 2 CPUs
cd bench && ./run.sh
`

func TestTable(t *testing.T) {
	var in input
	if err := in.parse(strings.NewReader(sample)); err != nil {
		t.Fatal(err)
	}
	if got := in.table(); got != want {
		t.Errorf("table:\n%s\nwant:\n%s", got, want)
	}
}

func TestReadme(t *testing.T) {
	dir := t.TempDir()
	input := filepath.Join(dir, "bench.txt")
	readme := filepath.Join(dir, "README.md")
	if err := os.WriteFile(input, []byte(sample), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(readme, []byte("# x\n<!-- benchtable -->\nold\n<!-- /benchtable -->\nafter\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	if err := run([]string{input}, []string{readme}, nil, &out); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(readme)
	if err != nil {
		t.Fatal(err)
	}
	if w := "# x\n<!-- benchtable -->\n" + want + "<!-- /benchtable -->\nafter\n"; string(got) != w {
		t.Errorf("README:\n%s\nwant:\n%s", got, w)
	}
	if out.String() != want {
		t.Errorf("output:\n%s", out.String())
	}
	if err := run([]string{input}, []string{input}, nil, &out); err == nil {
		t.Error("a file without markers: no error")
	}
}

func TestMedian(t *testing.T) {
	for _, tt := range []struct {
		vs   []float64
		want float64
	}{
		{nil, -1},
		{[]float64{3}, 3},
		{[]float64{3, 1, 2}, 2},
		{[]float64{4, 1, 3, 2}, 2.5},
	} {
		if got := median(tt.vs); got != tt.want {
			t.Errorf("median(%v) = %v, want %v", tt.vs, got, tt.want)
		}
	}
}
