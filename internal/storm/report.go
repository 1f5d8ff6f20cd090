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
	fmt.Fprintf(&b, "%-20s %8s %8s %8s %8s %6s %6s %9s %7s %6s %6s %7s %8s %5s\n",
		"mode", "requests", "ok", "failed", "refused", "amplif", "outage", "throttled", "goodput", "p50", "p99", "failp50", "recovery", "fair")
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
			fair := "-"
			if sc.clients() > 1 {
				fair = fmt.Sprintf("%.2f", r.Fairness)
			}
			fmt.Fprintf(&b, "  %-18s %8d %8d %8d %8d %6.3f %6s %8.1f%% %6.1f%% %6s %6s %7s %8s %5s\n",
				r.Mode, r.Requests, r.Succeeded, r.Failed, r.Refused, r.Amplification, outage,
				100*r.ThrottledShare, 100*r.Goodput, seconds(r.LatencyP50), seconds(r.LatencyP99), seconds(r.FailP50), recovery, fair)
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
failp50    median time from the start of a failed request to its failure
recovery   from the heal to the first 1-s window (on a 100-ms grid) whose
           successes reach 95% of the mean rate over the 60 s before the
           incident (for an incident at the start: over the last 60 s)
fair       with several clients of equal demand: the worst client's successes
           over the best client's (1: served alike)
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

// A lineStyle draws one mode in charts: modes differ in colour and in dash
// pattern, so that lines lying on each other stay apart.
type lineStyle struct {
	color string
	dash  string // SVG stroke-dasharray; "" for a solid line
	width float64
}

// modeStyles are the modes' styles; other names are drawn in black.
var modeStyles = map[string]lineStyle{
	None.String():              {"#7f7f7f", "1.5,3", 2.4},
	Naive.String():             {"#d62728", "7,3", 1.4},
	Standard.String():          {"#1f77b4", "", 1.5},
	Adaptive.String():          {"#2ca02c", "", 2.2},
	AdaptivePublished.String(): {"#ff7f0e", "9,3,2,3", 1.5},
}

func styleOf(mode string) lineStyle {
	if st, ok := modeStyles[mode]; ok {
		return st
	}
	return lineStyle{"#000000", "", 1.2}
}

func (st lineStyle) attrs() string {
	a := fmt.Sprintf(`stroke="%s" stroke-width="%g"`, st.color, st.width)
	if st.dash != "" {
		a += fmt.Sprintf(` stroke-dasharray="%s"`, st.dash)
	}
	return a
}

// Chart geometry, in pixels.
const (
	panelWidth  = 330
	panelHeight = 120
	panelLeft   = 62  // left margin of the first column
	panelGap    = 72  // between the columns
	rowHeight   = 212 // panel, its title and its axis labels
	chartTop    = 118 // title and legend
	panels      = 4
	chartWidth  = panelLeft + panels*panelWidth + (panels-1)*panelGap + 20
	// zoomBefore and zoomAfter bound the recovery panel around the heal.
	zoomBefore = 5 * time.Second
	zoomAfter  = 15 * time.Second
)

// WriteSVG writes a chart of the results: one row per scenario, with, for
// each mode, the successful requests, the attempts sent and the attempts
// throttled per second over the run, and, for a scenario with an incident,
// the successful requests per second (over a sliding second) around the
// heal. The server's capacity is the wide grey line. It uses only SVG 1.1
// elements, so browsers show it as it is.
func WriteSVG(w io.Writer, scenarios []Scenario, results []Result, seed uint64) error {
	var b strings.Builder
	height := chartTop + rowHeight*len(scenarios) + 10
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="Helvetica, Arial, sans-serif" font-size="12">`+"\n",
		chartWidth, height, chartWidth, height)
	fmt.Fprintf(&b, `<rect width="100%%" height="100%%" fill="#ffffff"/>`+"\n")
	fmt.Fprintf(&b, `<text x="%d" y="28" font-size="18" font-weight="bold">Retry storm: what each retry mode does to a struggling server (seed %d)</text>`+"\n", panelLeft, seed)
	// Legend.
	x := panelLeft
	for _, m := range Modes {
		fmt.Fprintf(&b, `<line x1="%d" y1="54" x2="%d" y2="54" %s/><text x="%d" y="58">%s</text>`+"\n",
			x, x+36, styleOf(m.String()).attrs(), x+42, m)
		x += 60 + 7*len(m.String())
	}
	fmt.Fprintf(&b, `<line x1="%d" y1="54" x2="%d" y2="54" stroke="#c8c8c8" stroke-width="5"/><text x="%d" y="58">server capacity</text>`+"\n", x, x+36, x+42)
	fmt.Fprintf(&b, `<text x="%d" y="82" fill="#555">Deterministic simulation on virtual time (go run ./examples/storm). Counts per 1-second bin; the right-hand panels: successes in the last second, every 100 ms, around the heal.</text>`+"\n", panelLeft)
	wait := "as long as the deadline allows"
	if len(scenarios) > 0 {
		if d := Adaptive.maxSendWait(&scenarios[0]); d > 0 {
			wait = "at most " + d.String()
		}
	}
	fmt.Fprintf(&b, `<text x="%d" y="100" fill="#555">Closed-loop workers think 0.5-1.5 s between requests; each request has a 10-s deadline; adaptive waits %s for a send slot.</text>`+"\n", panelLeft, wait)

	for row, sc := range scenarios {
		var rs []Result
		for _, r := range results {
			if r.Scenario == sc.Name {
				rs = append(rs, r)
			}
		}
		top := chartTop + row*rowHeight + 22
		fmt.Fprintf(&b, `<text x="%d" y="%d" font-size="14" font-weight="bold">%s</text>`+"\n", panelLeft, top-6, escape(sc.Title))
		top += 20 // the panels' labels
		for col, p := range []struct {
			label string
			value func(Sample) float64
		}{
			{"successful requests/s", func(s Sample) float64 { return float64(s.Successes) }},
			{"attempts sent/s", func(s Sample) float64 { return float64(s.Attempts) }},
			{"attempts throttled/s", func(s Sample) float64 { return float64(s.Throttled) }},
		} {
			left := panelLeft + col*(panelWidth+panelGap)
			pn := panel{b: &b, left: left, top: top + 6, label: p.label, from: 0, to: sc.Duration.Seconds()}
			ymax := 0.0
			if col < 2 {
				ymax = sc.Capacity
			}
			for _, r := range rs {
				for _, s := range r.Series {
					ymax = max(ymax, p.value(s))
				}
			}
			pn.frame(ymax, minuteTicks(sc.Duration))
			if col < 2 && len(rs) > 0 {
				var pts []string
				for i, s := range rs[0].Series {
					y := pn.ys(s.Capacity)
					pts = append(pts, fmt.Sprintf("%.1f,%.1f %.1f,%.1f", pn.xs(float64(i)), y, pn.xs(float64(i+1)), y))
				}
				pn.polyline(pts, `stroke="#c8c8c8" stroke-width="5"`, "server capacity")
			}
			for k := len(rs) - 1; k >= 0; k-- { // the first modes on top
				r := rs[k]
				pts := make([]string, len(r.Series))
				for i, s := range r.Series {
					pts[i] = fmt.Sprintf("%.1f,%.1f", pn.xs(float64(i)+0.5), pn.ys(p.value(s)))
				}
				pn.polyline(pts, styleOf(r.Mode).attrs(), r.Mode)
			}
		}
		if sc.hasIncident() {
			writeZoom(&b, sc, rs, panelLeft+3*(panelWidth+panelGap), top+6)
		}
	}
	b.WriteString("</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// writeZoom draws the recovery panel: successes in the last second, every
// FineBin, from zoomBefore before the heal to zoomAfter after it.
func writeZoom(b *strings.Builder, sc Scenario, rs []Result, left, top int) {
	heal := sc.Incident.End
	from := max(heal-zoomBefore, 0)
	to := min(heal+zoomAfter, sc.Duration)
	pn := panel{b: b, left: left, top: top, label: "successes in the last 1 s", from: (from - heal).Seconds(), to: (to - heal).Seconds()}
	span := int(time.Second / FineBin)
	rate := func(r Result, k int) float64 {
		sum := 0
		for _, c := range r.Fine[max(k-span+1, 0) : k+1] {
			sum += c
		}
		return float64(sum)
	}
	lo, hi := int(from/FineBin), int(to/FineBin)
	ymax := sc.Capacity
	for _, r := range rs {
		for k := lo; k < hi && k < len(r.Fine); k++ {
			ymax = max(ymax, rate(r, k))
		}
	}
	var ticks []tick
	for t := time.Duration(math.Ceil(pn.from/5)*5) * time.Second; t.Seconds() <= pn.to; t += 5 * time.Second {
		label := fmt.Sprintf("%+ds", int(t.Seconds()))
		if t == 0 {
			label = "heal"
		}
		ticks = append(ticks, tick{t.Seconds(), label})
	}
	pn.frame(ymax, ticks)
	x0 := pn.xs(0)
	fmt.Fprintf(b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#999" stroke-dasharray="2,2"/>`+"\n", x0, pn.top, x0, pn.top+panelHeight)
	var pts []string
	for k := lo; k < hi; k++ {
		t := time.Duration(k) * FineBin
		c, _ := sc.capacityAt(t)
		pts = append(pts, fmt.Sprintf("%.1f,%.1f", pn.xs((t-heal).Seconds()), pn.ys(c)))
	}
	pn.polyline(pts, `stroke="#c8c8c8" stroke-width="5"`, "server capacity")
	for k := len(rs) - 1; k >= 0; k-- {
		r := rs[k]
		var pts []string
		for i := lo; i < hi && i < len(r.Fine); i++ {
			t := time.Duration(i+1) * FineBin
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", pn.xs((t-heal).Seconds()), pn.ys(rate(r, i))))
		}
		title := r.Mode
		if r.Recovery >= 0 {
			title += fmt.Sprintf(": full rate %.1f s after the heal", r.Recovery.Seconds())
		}
		pn.polyline(pts, styleOf(r.Mode).attrs(), title)
	}
}

// A tick is a labelled position on a time axis, in seconds.
type tick struct {
	at    float64
	label string
}

// minuteTicks labels every minute of a run of d, or every 10 s of a run
// shorter than 2 minutes.
func minuteTicks(d time.Duration) []tick {
	step := time.Minute
	if d < 2*time.Minute {
		step = 10 * time.Second
	}
	var ts []tick
	for t := time.Duration(0); t <= d; t += step {
		ts = append(ts, tick{t.Seconds(), fmt.Sprintf("%d:%02d", int(t.Minutes()), int(t.Seconds())%60)})
	}
	return ts
}

// A panel is one plot: a frame with a y grid and a time axis from from
// to to (seconds).
type panel struct {
	b         *strings.Builder
	left, top int
	label     string
	from, to  float64
	ymax      float64
}

func (p *panel) xs(t float64) float64 {
	return float64(p.left) + (t-p.from)/(p.to-p.from)*panelWidth
}

func (p *panel) ys(v float64) float64 {
	return float64(p.top+panelHeight) - v/p.ymax*panelHeight
}

// frame draws the frame, the y grid up to about ymax, the time ticks and
// the labels.
func (p *panel) frame(ymax float64, ticks []tick) {
	p.ymax = niceCeil(max(ymax, 1) * 1.05)
	b := p.b
	fmt.Fprintf(b, `<rect x="%d" y="%d" width="%d" height="%d" fill="none" stroke="#999"/>`+"\n", p.left, p.top, panelWidth, panelHeight)
	step := niceStep(p.ymax)
	for v := 0.0; v <= p.ymax+1e-9; v += step {
		y := p.ys(v)
		fmt.Fprintf(b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#e5e5e5"/><text x="%d" y="%.1f" text-anchor="end" fill="#333">%g</text>`+"\n",
			p.left, y, p.left+panelWidth, y, p.left-5, y+4, v)
	}
	for _, t := range ticks {
		x := p.xs(t.at)
		fmt.Fprintf(b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#999"/><text x="%.1f" y="%d" text-anchor="middle" fill="#333">%s</text>`+"\n",
			x, p.top+panelHeight, x, p.top+panelHeight+4, x, p.top+panelHeight+17, t.label)
	}
	fmt.Fprintf(b, `<text x="%d" y="%d" fill="#333">%s</text>`+"\n", p.left, p.top-5, escape(p.label))
}

// polyline draws points with the given attributes and a tooltip.
func (p *panel) polyline(pts []string, attrs, title string) {
	fmt.Fprintf(p.b, `<polyline fill="none" %s stroke-linejoin="round" points="%s"><title>%s</title></polyline>`+"\n",
		attrs, strings.Join(pts, " "), escape(title))
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
