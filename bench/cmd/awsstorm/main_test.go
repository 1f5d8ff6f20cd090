package main

import (
	"bytes"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/retrykit/retry/bench/awsstorm"
	"github.com/retrykit/retry/internal/storm"
)

// TestREADMETable holds the table of bench/README.md to what the command
// prints with the default seed: each of its rows is the program's row
// with the README's columns (requests, failed, amplif, outage, throttled,
// goodput, recovery), and each of its scenarios one the program runs. It
// runs only the scenarios the README shows.
func TestREADMETable(t *testing.T) {
	if testing.Short() {
		t.Skip("the simulation takes a few seconds")
	}
	text, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, block, ok := strings.Cut(string(text), "\nmode                  requests   failed  amplif   outage throttled  goodput  recovery\n")
	if !ok {
		t.Fatal("no awsstorm table in bench/README.md")
	}
	block, _, _ = strings.Cut(block, "```")
	lines := strings.Split(strings.TrimSpace(block), "\n")
	// Only the scenarios the README shows are run.
	var scenarios []storm.Scenario
	for _, sc := range storm.Scenarios() {
		if slices.Contains(lines, sc.Title) {
			scenarios = append(scenarios, sc)
		}
	}
	results, err := awsstorm.RunAll(scenarios, awsstorm.Contenders(), 1)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := storm.WriteTable(&out, scenarios, results); err != nil {
		t.Fatal(err)
	}
	rows, titles := map[string]string{}, map[string]bool{} // the README's form of each row, by scenario and mode
	title := ""
	for _, line := range strings.Split(out.String(), "\n") {
		f := strings.Fields(line)
		switch {
		case strings.HasPrefix(line, "("):
			title, titles[line] = line, true
		case title != "" && len(f) == 14: // mode requests ok failed refused amplif outage throttled goodput p50 p99 failp50 recovery fair
			rows[title+"\n"+f[0]] = readmeRow(f[0], f[1], f[3], f[5], f[6], f[7], f[8], f[12])
		}
	}
	title, checked := "", 0
	for _, line := range lines {
		if strings.HasPrefix(line, "(") {
			if !titles[line] {
				t.Errorf("README scenario %q: the program runs no such scenario", line)
			}
			title = line
			continue
		}
		f := strings.Fields(line)
		if len(f) == 0 {
			t.Errorf("README, %s: an empty line in the table", title)
			continue
		}
		if want, ok := rows[title+"\n"+f[0]]; !ok || line != want {
			t.Errorf("README, %s, %s:\n  %q\nthe program prints\n  %q", title, f[0], line, want)
		}
		checked++
	}
	if checked == 0 {
		t.Error("the README's awsstorm table has no rows")
	}
}

// readmeRow formats a row as bench/README.md's table does.
func readmeRow(mode, requests, failed, amplif, outage, throttled, goodput, recovery string) string {
	return fmt.Sprintf("  %-20s%8s%9s%8s%9s%10s%9s%10s", mode, requests, failed, amplif, outage, throttled, goodput, recovery)
}
