package main

import (
	"strings"
	"testing"
)

const sample = `goos: linux
goarch: amd64
pkg: github.com/retrykit/retry/bench
cpu: AMD EPYC
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
`

func TestTable(t *testing.T) {
	rows, err := parse(strings.NewReader(sample))
	if err != nil {
		t.Fatal(err)
	}
	got := table(summarize(rows))
	want := `| case | library | ns/op | B/op | allocs/op | × direct | range | runs |
| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |
| Success | direct | 10.0 | 0 | 0 | 1.0 | ±10% | 3 |
| Success | retrykit | 36.0 | 0 | 0 | 3.6 | ±14% | 3 |
| ThreeAttempts | avast | 1878 | 769 | 12.5 | — | ±0% | 2 |
| Plain |  | 123 | — | — | — | ±0% | 1 |
`
	if got != want {
		t.Errorf("table:\n%s\nwant:\n%s", got, want)
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
