// Command benchtable reads the output of go test -bench -benchmem, run
// with repeats, and of callgrind.sh, and prints one markdown table: a row
// per sub-benchmark with the medians of its runs, and what it costs over
// the "direct" sub-benchmark of the same benchmark, the work called with
// no retry library, in instructions (from callgrind.sh) and in
// nanoseconds, with both ratios.
//
// Usage:
//
//	benchtable [-readme file]... [file ...]
//
// With no file it reads standard input. Each -readme file gets the table
// written between its <!-- benchtable --> and <!-- /benchtable --> lines,
// which must be there.
package main

import (
	"bufio"
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

type files []string

func (f *files) String() string     { return strings.Join(*f, ",") }
func (f *files) Set(v string) error { *f = append(*f, v); return nil }

func main() {
	var readmes files
	flag.Var(&readmes, "readme", "write the table into `file`, between its benchtable markers (repeatable)")
	flag.Parse()
	if err := run(flag.Args(), readmes, os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "benchtable:", err)
		os.Exit(1)
	}
}

func run(inputs, readmes []string, stdin io.Reader, stdout io.Writer) error {
	var in input
	if len(inputs) == 0 {
		if err := in.parse(stdin); err != nil {
			return err
		}
	}
	for _, name := range inputs {
		f, err := os.Open(name)
		if err != nil {
			return err
		}
		err = in.parse(f)
		f.Close()
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
	}
	if len(in.results) == 0 {
		return errors.New("no benchmark results")
	}
	t := in.table()
	for _, name := range readmes {
		if err := writeInto(name, t); err != nil {
			return err
		}
	}
	_, err := io.WriteString(stdout, t)
	return err
}

// A result is one line of benchmark output.
type result struct {
	bench, sub                 string // BenchmarkSuccess/retrykit-2: "Success", "retrykit"
	ns, bytes, allocs, instr   float64
	hasNs, hasBytes, hasAllocs bool
	hasInstr                   bool
}

// input is what the files hold: results, and the lines that describe the
// run.
type input struct {
	results []result
	notes   []string // "machine: ..." and "command: ..." lines, without the key
}

// line matches a result line: the name, with its -GOMAXPROCS suffix if
// any, the iteration count, and the measurements.
var line = regexp.MustCompile(`^Benchmark(\S+?)(?:-\d+)?\s+\d+\s+(.*)$`)

// parse reads the result lines and notes of r and skips every other line.
func (in *input) parse(r io.Reader) error {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		text := sc.Text()
		for _, key := range []string{"machine: ", "command: "} {
			if note, ok := strings.CutPrefix(text, key); ok && !slices.Contains(in.notes, note) {
				in.notes = append(in.notes, note)
			}
		}
		m := line.FindStringSubmatch(text)
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
				return fmt.Errorf("%q: %w", text, err)
			}
			switch fields[i+1] {
			case "ns/op":
				res.ns, res.hasNs = v, true
			case "B/op":
				res.bytes, res.hasBytes = v, true
			case "allocs/op":
				res.allocs, res.hasAllocs = v, true
			case "instr/op":
				res.instr, res.hasInstr = v, true
			}
		}
		in.results = append(in.results, res)
	}
	return sc.Err()
}

// A row is the summary of the runs of one sub-benchmark. Every value is a
// median, or -1 if no run reported it.
type row struct {
	bench, sub               string
	runs                     int // timed runs
	ns, bytes, allocs, instr float64
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
		ns := collect(g, func(r result) (float64, bool) { return r.ns, r.hasNs })
		rows = append(rows, row{
			bench:  k.bench,
			sub:    k.sub,
			runs:   len(ns),
			ns:     median(ns),
			bytes:  median(collect(g, func(r result) (float64, bool) { return r.bytes, r.hasBytes })),
			allocs: median(collect(g, func(r result) (float64, bool) { return r.allocs, r.hasAllocs })),
			instr:  median(collect(g, func(r result) (float64, bool) { return r.instr, r.hasInstr })),
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

// table formats the input as a markdown table, with the notes below it.
// The "+" columns are a row's median over that of the "direct" row of the
// same benchmark, as a difference and as a ratio.
func (in *input) table() string {
	rows := summarize(in.results)
	direct := make(map[string]row)
	for _, r := range rows {
		if r.sub == "direct" {
			direct[r.bench] = r
		}
	}
	var b strings.Builder
	b.WriteString("| case | library | instructions | + instr. | × direct | ns/op | + ns | × direct | B/op | allocs/op | runs |\n")
	b.WriteString("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n")
	for _, r := range rows {
		d := direct[r.bench] // the zero row when missing: dashes
		plusInstr, ratioInstr := compare(r.instr, d.instr, formatInstr)
		plusNs, ratioNs := compare(r.ns, d.ns, formatNs)
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %d |\n",
			r.bench, r.sub, formatInstr(r.instr), plusInstr, ratioInstr,
			formatNs(r.ns), plusNs, ratioNs, formatCount(r.bytes), formatCount(r.allocs), r.runs)
	}
	if len(in.notes) > 0 {
		b.WriteString("\n")
		for _, n := range in.notes {
			fmt.Fprintf(&b, "%s\n", n)
		}
	}
	return b.String()
}

// compare returns v - base, formatted by f, and v / base, or dashes when
// either is missing.
func compare(v, base float64, f func(float64) string) (plus, ratio string) {
	if v < 0 || base <= 0 {
		return "—", "—"
	}
	return f(v - base), strconv.FormatFloat(v/base, 'f', 1, 64)
}

// formatInstr gives an instruction count in whole instructions; -1 means
// not counted.
func formatInstr(v float64) string {
	if v == -1 {
		return "—"
	}
	return strconv.FormatFloat(v, 'f', 0, 64)
}

// formatNs gives a time three significant digits, or whole nanoseconds;
// -1 means not measured.
func formatNs(ns float64) string {
	switch a := max(ns, -ns); {
	case ns == -1:
		return "—"
	case a < 10:
		return strconv.FormatFloat(ns, 'f', 2, 64)
	case a < 100:
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

// The lines between which -readme writes the table.
const (
	beginMarker = "<!-- benchtable -->"
	endMarker   = "<!-- /benchtable -->"
)

// writeInto replaces what is between the markers of file with t.
func writeInto(file, t string) error {
	data, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	begin := bytes.Index(data, []byte(beginMarker+"\n"))
	end := bytes.Index(data, []byte(endMarker))
	if begin < 0 || end < begin {
		return fmt.Errorf("%s: no %s ... %s lines", file, beginMarker, endMarker)
	}
	begin += len(beginMarker) + 1
	out := slices.Concat(data[:begin], []byte(t), data[end:])
	return os.WriteFile(file, out, 0o644)
}
