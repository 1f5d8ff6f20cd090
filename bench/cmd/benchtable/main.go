// Command benchtable reads the output of go test -bench -benchmem, run
// with -count repeats, and prints a markdown table of the medians: one row
// per sub-benchmark, with its ratio to the "direct" sub-benchmark of the
// same benchmark.
//
// Usage:
//
//	benchtable [file ...]
//
// With no file it reads standard input.
package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

func main() {
	if err := run(os.Args[1:], os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "benchtable:", err)
		os.Exit(1)
	}
}

func run(files []string, stdin io.Reader, stdout io.Writer) error {
	var rs []result
	if len(files) == 0 {
		var err error
		if rs, err = parse(stdin); err != nil {
			return err
		}
	}
	for _, name := range files {
		f, err := os.Open(name)
		if err != nil {
			return err
		}
		more, err := parse(f)
		f.Close()
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		rs = append(rs, more...)
	}
	if len(rs) == 0 {
		return errors.New("no benchmark results")
	}
	_, err := io.WriteString(stdout, table(summarize(rs)))
	return err
}

// A result is one line of benchmark output.
type result struct {
	bench, sub          string // BenchmarkSuccess/retrykit-2: "Success", "retrykit"
	ns, bytes, allocs   float64
	hasBytes, hasAllocs bool
}

// line matches a result line: the name, with its -GOMAXPROCS suffix if
// any, the iteration count, and the measurements.
var line = regexp.MustCompile(`^Benchmark(\S+?)(?:-\d+)?\s+\d+\s+(.*)$`)

// parse reads the result lines of r and skips every other line.
func parse(r io.Reader) ([]result, error) {
	var rs []result
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		m := line.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		res := result{bench: m[1]}
		if i := strings.IndexByte(m[1], '/'); i >= 0 {
			res.bench, res.sub = m[1][:i], m[1][i+1:]
		}
		fields := strings.Fields(m[2])
		for i := 0; i+1 < len(fields); i += 2 {
			v, err := strconv.ParseFloat(fields[i], 64)
			if err != nil {
				return nil, fmt.Errorf("%q: %w", sc.Text(), err)
			}
			switch fields[i+1] {
			case "ns/op":
				res.ns = v
			case "B/op":
				res.bytes, res.hasBytes = v, true
			case "allocs/op":
				res.allocs, res.hasAllocs = v, true
			}
		}
		rs = append(rs, res)
	}
	return rs, sc.Err()
}

// A row is the summary of the runs of one sub-benchmark.
type row struct {
	bench, sub        string
	runs              int
	ns, bytes, allocs float64 // medians; bytes and allocs are -1 if not reported
	spread            float64 // (max - min) / median of ns/op
}

// summarize returns a row per sub-benchmark, in the order they first
// appear.
func summarize(rs []result) []row {
	type key struct{ bench, sub string }
	var order []key
	group := make(map[key][]result)
	for _, r := range rs {
		k := key{r.bench, r.sub}
		if _, ok := group[k]; !ok {
			order = append(order, k)
		}
		group[k] = append(group[k], r)
	}
	rows := make([]row, 0, len(order))
	for _, k := range order {
		g := group[k]
		ns := collect(g, func(r result) (float64, bool) { return r.ns, true })
		med := median(ns)
		spread := 0.0
		if med > 0 {
			spread = (slices.Max(ns) - slices.Min(ns)) / med
		}
		rows = append(rows, row{
			bench:  k.bench,
			sub:    k.sub,
			runs:   len(g),
			ns:     med,
			bytes:  median(collect(g, func(r result) (float64, bool) { return r.bytes, r.hasBytes })),
			allocs: median(collect(g, func(r result) (float64, bool) { return r.allocs, r.hasAllocs })),
			spread: spread,
		})
	}
	return rows
}

// collect returns the values f reports for rs.
func collect(rs []result, f func(result) (float64, bool)) []float64 {
	var vs []float64
	for _, r := range rs {
		if v, ok := f(r); ok {
			vs = append(vs, v)
		}
	}
	return vs
}

// median returns the median of vs, or -1 if vs is empty.
func median(vs []float64) float64 {
	if len(vs) == 0 {
		return -1
	}
	s := slices.Sorted(slices.Values(vs))
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// table formats rows as a markdown table. The ratio column divides each
// row's median ns/op by that of the "direct" row of the same benchmark.
func table(rows []row) string {
	direct := make(map[string]float64)
	for _, r := range rows {
		if r.sub == "direct" {
			direct[r.bench] = r.ns
		}
	}
	var b strings.Builder
	b.WriteString("| case | library | ns/op | B/op | allocs/op | × direct | range | runs |\n")
	b.WriteString("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |\n")
	for _, r := range rows {
		ratio := "—"
		if d, ok := direct[r.bench]; ok && d > 0 {
			ratio = fmt.Sprintf("%.1f", r.ns/d)
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | ±%.0f%% | %d |\n",
			r.bench, r.sub, formatNs(r.ns), formatCount(r.bytes), formatCount(r.allocs),
			ratio, 100*r.spread/2, r.runs)
	}
	return b.String()
}

// formatNs gives a time three significant digits, or whole nanoseconds.
func formatNs(ns float64) string {
	switch {
	case ns < 10:
		return strconv.FormatFloat(ns, 'f', 2, 64)
	case ns < 100:
		return strconv.FormatFloat(ns, 'f', 1, 64)
	}
	return strconv.FormatFloat(ns, 'f', 0, 64)
}

// formatCount gives a count, which may be the half of a median of an even
// number of runs; -1 means not reported.
func formatCount(v float64) string {
	if v < 0 {
		return "—"
	}
	return strconv.FormatFloat(v, 'f', -1, 64)
}
