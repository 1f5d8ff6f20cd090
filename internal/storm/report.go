package storm

import (
	"fmt"
	"io"
	"math"
	"strings"
	"sync"
	"time"
)

// RunAll runs every mode in every scenario with seed, concurrently (each
// run is independent and single-threaded, so the results do not depend on
// scheduling). The results come scenario by scenario, modes in order.
func RunAll(scenarios []Scenario, modes []Mode, seed uint64) ([]Result, error) {
	results := make([]Result, len(scenarios)*len(modes))
	errs := make([]error, len(results))
	var wg sync.WaitGroup
	for i, sc := range scenarios {
		for j, m := range modes {
			k := i*len(modes) + j
			wg.Go(func() { results[k], errs[k] = Run(sc, m, seed) })
		}
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return results, nil
}

// WriteTable writes the results as a fixed-width table, one block per
// scenario, followed by the definitions of its columns.
func WriteTable(w io.Writer, scenarios []Scenario, results []Result) error {
	var b strings.Builder
	fmt.Fprintf(&b, "%-20s %8s %8s %8s %8s %6s %6s %9s %7s %6s %6s %8s\n",
		"mode", "requests", "ok", "failed", "refused", "amplif", "outage", "throttled", "goodput", "p50", "p99", "recovery")
	for _, sc := range scenarios {
		fmt.Fprintf(&b, "%s\n", sc.Title)
		for _, r := range results {
			if r.Scenario != sc.Name {
				continue
			}
			outage := "-"
			if sc.Incident.Outage {
				outage = fmt.Sprintf("%.3f", r.OutageAmplification)
			}
			recovery := "-"
			switch {
			case !sc.hasIncident():
			case r.Recovery < 0:
				recovery = "never"
			default:
				recovery = fmt.Sprintf("%.1fs", r.Recovery.Seconds())
			}
			fmt.Fprintf(&b, "  %-18s %8d %8d %8d %8d %6.3f %6s %8.1f%% %6.1f%% %6s %6s %8s\n",
				r.Mode, r.Requests, r.Succeeded, r.Failed, r.Refused, r.Amplification, outage,
				100*r.ThrottledShare, 100*r.Goodput, seconds(r.LatencyP50), seconds(r.LatencyP99), recovery)
		}
	}
	b.WriteString(`
requests   requests that ended within the run; ok: succeeded; failed: gave up
           (retries refused or spent, deadline, no send slot in time)
refused    failed requests whose attempt the client did not send: no send
           slot within the bound on the wait (fail fast); a request that never
           got to send counts as failed, so amplif can fall below 1
amplif     attempts sent per request
outage     attempts per request for requests started in the outage, 10 s or
           more after it began (once a retry quota has drained)
throttled  share of attempts answered 429
goodput    successful requests / what the server could serve over the run
p50, p99   latency of the successful requests on the client, from the
           request's start to its success (backoff and send-slot waits included)
recovery   from the heal to the first 1-s window (on a 100-ms grid) whose
           successes reach 95% of the mean rate over the 60 s before the
           incident (for an incident at the start: over the last 60 s)
`)
	_, err := io.WriteString(w, b.String())
	return err
}

// seconds formats d in seconds, to two significant decimals below 1 s.
func seconds(d time.Duration) string {
	if d < time.Second {
		return fmt.Sprintf("%.2fs", d.Seconds())
	}
	return fmt.Sprintf("%.1fs", d.Seconds())
}

// Colors of the modes in charts.
var modeColors = map[string]string{
	None.String():              "#7f7f7f",
	Naive.String():             "#d62728",
	Standard.String():          "#1f77b4",
	Adaptive.String():          "#2ca02c",
	AdaptivePublished.String(): "#ff7f0e",
}

// Chart geometry, in pixels.
const (
	chartWidth  = 1150
	panelWidth  = 470
	panelHeight = 160
	panelLeft   = 70  // left margin of the first column
	panelGap    = 90  // between the columns
	rowHeight   = 250 // panel, its title and its axis labels
	chartTop    = 95  // title and legend
)

// WriteSVG writes a chart of the results: one row per scenario, with the
// successful requests per second of each mode on the left and the attempts
// sent per second on the right, and the server's capacity dashed. It uses
// only SVG 1.1 elements, so browsers show it as it is.
func WriteSVG(w io.Writer, scenarios []Scenario, results []Result, seed uint64) error {
	var b strings.Builder
	height := chartTop + rowHeight*len(scenarios) + 10
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="Helvetica, Arial, sans-serif" font-size="12">`+"\n",
		chartWidth, height, chartWidth, height)
	fmt.Fprintf(&b, `<rect width="100%%" height="100%%" fill="#ffffff"/>`+"\n")
	fmt.Fprintf(&b, `<text x="%d" y="28" font-size="18" font-weight="bold">Retry storm: requests per second over time, by retry mode (seed %d)</text>`+"\n", panelLeft, seed)
	// Legend.
	x := panelLeft
	for _, m := range Modes {
		fmt.Fprintf(&b, `<line x1="%d" y1="52" x2="%d" y2="52" stroke="%s" stroke-width="3"/><text x="%d" y="56">%s</text>`+"\n",
			x, x+24, modeColors[m.String()], x+30, m)
		x += 40 + 8*len(m.String())
	}
	fmt.Fprintf(&b, `<line x1="%d" y1="52" x2="%d" y2="52" stroke="#000" stroke-width="1.5" stroke-dasharray="5,4"/><text x="%d" y="56">server capacity</text>`+"\n", x, x+24, x+30)
	fmt.Fprintf(&b, `<text x="%d" y="78" fill="#555">Deterministic simulation on virtual time (go run ./examples/storm). Counts per 1-second bin.</text>`+"\n", panelLeft)

	for row, sc := range scenarios {
		var rs []Result
		for _, r := range results {
			if r.Scenario == sc.Name {
				rs = append(rs, r)
			}
		}
		top := chartTop + row*rowHeight + 25
		fmt.Fprintf(&b, `<text x="%d" y="%d" font-size="14" font-weight="bold">%s</text>`+"\n", panelLeft, top-10, escape(sc.Title))
		for col, p := range []struct {
			label string
			value func(Sample) int
		}{
			{"successful requests/s", func(s Sample) int { return s.Successes }},
			{"attempts sent/s", func(s Sample) int { return s.Attempts }},
		} {
			left := panelLeft + col*(panelWidth+panelGap)
			top := top + 8
			ymax := sc.Capacity
			for _, r := range rs {
				for _, s := range r.Series {
					ymax = max(ymax, float64(p.value(s)))
				}
			}
			ymax = niceCeil(ymax * 1.05)
			xs := func(t float64) float64 { return float64(left) + t/sc.Duration.Seconds()*panelWidth }
			ys := func(v float64) float64 { return float64(top+panelHeight) - v/ymax*panelHeight }
			// Frame, grid and ticks.
			fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%d" height="%d" fill="none" stroke="#999"/>`+"\n", left, top, panelWidth, panelHeight)
			step := niceStep(ymax)
			for v := 0.0; v <= ymax+1e-9; v += step {
				y := ys(v)
				fmt.Fprintf(&b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#e5e5e5"/><text x="%d" y="%.1f" text-anchor="end" fill="#333">%g</text>`+"\n",
					left, y, left+panelWidth, y, left-5, y+4, v)
			}
			for t := time.Duration(0); t <= sc.Duration; t += time.Minute {
				x := xs(t.Seconds())
				fmt.Fprintf(&b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#999"/><text x="%.1f" y="%d" text-anchor="middle" fill="#333">%d:00</text>`+"\n",
					x, top+panelHeight, x, top+panelHeight+4, x, top+panelHeight+17, int(t.Minutes()))
			}
			fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="end" fill="#333">time (min:s)</text>`+"\n", left+panelWidth, top+panelHeight+32)
			fmt.Fprintf(&b, `<text transform="translate(%d,%d) rotate(-90)" text-anchor="middle" fill="#333">%s</text>`+"\n",
				left-42, top+panelHeight/2, p.label)
			// Capacity, then the modes, in order, each as one polyline.
			if len(rs) > 0 {
				var pts []string
				for i, s := range rs[0].Series {
					y := ys(s.Capacity)
					pts = append(pts, fmt.Sprintf("%.1f,%.1f %.1f,%.1f", xs(float64(i)), y, xs(float64(i+1)), y))
				}
				fmt.Fprintf(&b, `<polyline fill="none" stroke="#000" stroke-width="1.5" stroke-dasharray="5,4" points="%s"/>`+"\n", strings.Join(pts, " "))
			}
			for k := len(rs) - 1; k >= 0; k-- { // the first modes on top
				r := rs[k]
				pts := make([]string, len(r.Series))
				for i, s := range r.Series {
					pts[i] = fmt.Sprintf("%.1f,%.1f", xs(float64(i)+0.5), ys(float64(p.value(s))))
				}
				fmt.Fprintf(&b, `<polyline fill="none" stroke="%s" stroke-width="1.4" stroke-opacity="0.85" stroke-linejoin="round" points="%s"><title>%s</title></polyline>`+"\n",
					modeColors[r.Mode], strings.Join(pts, " "), escape(r.Mode))
			}
		}
	}
	b.WriteString("</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// niceStep returns a round grid step that divides [0, ymax] into 4 to 8
// parts.
func niceStep(ymax float64) float64 {
	raw := ymax / 5
	p := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= raw {
			return m * p
		}
	}
	return 10 * p
}

// niceCeil rounds v up to a multiple of its grid step.
func niceCeil(v float64) float64 {
	s := niceStep(v)
	return math.Ceil(v/s) * s
}

func escape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(s)
}
