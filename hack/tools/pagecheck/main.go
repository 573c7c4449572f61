// pagecheck checks what a headless browser made of the HTML report:
//   - the screenshot: the page was drawn (not blank: many distinct
//     colours) and each expected colour covers at least so many pixels (a
//     heat-map cell below its floor, a stall bar, ...). Colours are
//     compared exactly: Chromium paints an SVG rect's inside with its
//     fill unchanged;
//   - the browser's net log (--log-net-log): the page asked for nothing.
//     Requests the browser makes for itself have the initiator "not an
//     origin"; anything a file:// page loads has its opaque origin
//     ("null") as initiator.
//
// -crop Y0:Y1 -o OUT writes that band of the image (for a person to look at).
//
//	pagecheck -png shot.png -netlog net.json -distinct 20 -min '#d73027=400'
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"image"
	"image/color"
	"image/draw"
	"image/png"
	"os"
	"strconv"
	"strings"
)

type minFlag map[color.RGBA]int

func (m minFlag) String() string { return fmt.Sprint(map[color.RGBA]int(m)) }

func (m minFlag) Set(v string) error {
	hex, n, ok := strings.Cut(v, "=")
	c, err := parseHex(hex)
	if !ok || err != nil {
		return fmt.Errorf("want #rrggbb=PIXELS, got %q", v)
	}
	px, err := strconv.Atoi(n)
	if err != nil || px < 1 {
		return fmt.Errorf("want a pixel count >= 1 in %q", v)
	}
	m[c] = px
	return nil
}

func parseHex(s string) (color.RGBA, error) {
	s = strings.TrimPrefix(s, "#")
	v, err := strconv.ParseUint(s, 16, 32)
	if err != nil || len(s) != 6 {
		return color.RGBA{}, fmt.Errorf("bad colour %q", s)
	}
	return color.RGBA{uint8(v >> 16), uint8(v >> 8), uint8(v), 255}, nil
}

func main() {
	path := flag.String("png", "", "screenshot to check")
	netlog := flag.String("netlog", "", "Chromium net log (--log-net-log) of the same page: it must hold no request the page made")
	distinct := flag.Int("distinct", 10, "at least this many distinct colours (a blank or error page has few)")
	crop := flag.String("crop", "", "Y0:Y1: write this band to -o instead of checking")
	out := flag.String("o", "", "output of -crop")
	mins, more := minFlag{}, minFlag{}
	flag.Var(mins, "min", "#rrggbb=PIXELS: the colour must cover at least PIXELS pixels (repeatable)")
	control := flag.String("vs", "", "a control screenshot: each -more colour must cover that many pixels more here than there")
	flag.Var(more, "more", "#rrggbb=PIXELS: with -vs, at least PIXELS more pixels of the colour than the control has (repeatable)")
	flag.Parse()
	img, err := decode(*path)
	if err != nil {
		fail(err)
	}
	b := img.Bounds()
	if *crop != "" {
		y0s, y1s, _ := strings.Cut(*crop, ":")
		y0, _ := strconv.Atoi(y0s)
		y1, _ := strconv.Atoi(y1s)
		r := image.Rect(b.Min.X, max(y0, b.Min.Y), b.Max.X, min(y1, b.Max.Y))
		dst := image.NewRGBA(image.Rect(0, 0, r.Dx(), r.Dy()))
		draw.Draw(dst, dst.Bounds(), img, r.Min, draw.Src)
		o, err := os.Create(*out)
		if err != nil {
			fail(err)
		}
		defer o.Close()
		if err := png.Encode(o, dst); err != nil {
			fail(err)
		}
		return
	}
	count := colours(img)
	bad := 0
	if *control != "" {
		ctl, err := decode(*control)
		if err != nil {
			fail(err)
		}
		ccount := colours(ctl)
		for c, want := range more {
			got := count[c] - ccount[c]
			verdict := "ok"
			if got < want {
				verdict = "TOO FEW"
				bad++
			}
			fmt.Printf("pagecheck: #%02x%02x%02x %+7d px against %s (want >= +%d) %s\n", c.R, c.G, c.B, got, *control, want, verdict)
		}
	}
	if len(count) < *distinct {
		fmt.Printf("pagecheck: %s has %d distinct colours, want >= %d: the page was not drawn\n", *path, len(count), *distinct)
		bad++
	}
	for c, want := range mins {
		got := count[c]
		verdict := "ok"
		if got < want {
			verdict = "TOO FEW"
			bad++
		}
		fmt.Printf("pagecheck: #%02x%02x%02x %7d px (want >= %d) %s\n", c.R, c.G, c.B, got, want, verdict)
	}
	if *netlog != "" {
		urls, err := pageRequests(*netlog)
		if err != nil {
			fail(err)
		}
		for _, u := range urls {
			fmt.Printf("pagecheck: the page requested %s\n", u)
			bad++
		}
		if len(urls) == 0 {
			fmt.Printf("pagecheck: %s: the page made no request\n", *netlog)
		}
	}
	if bad > 0 {
		fail(fmt.Errorf("%s: %d check(s) failed", *path, bad))
	}
	fmt.Printf("pagecheck: %s %dx%d, %d distinct colours: ok\n", *path, b.Dx(), b.Dy(), len(count))
}

func decode(path string) (image.Image, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return img, nil
}

// colours counts the pixels of each colour.
func colours(img image.Image) map[color.RGBA]int {
	b := img.Bounds()
	count := map[color.RGBA]int{}
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			r, g, bl, _ := img.At(x, y).RGBA()
			count[color.RGBA{uint8(r >> 8), uint8(g >> 8), uint8(bl >> 8), 255}]++
		}
	}
	return count
}

// pageRequests are the URLs of the requests in a Chromium net log that
// a page (not the browser itself) started.
func pageRequests(path string) ([]string, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var log struct {
		Constants struct {
			LogEventTypes map[string]int `json:"logEventTypes"`
		} `json:"constants"`
		Events []struct {
			Type   int            `json:"type"`
			Params map[string]any `json:"params"`
		} `json:"events"`
	}
	if err := json.Unmarshal(raw, &log); err != nil {
		return nil, fmt.Errorf("%s: not a finished Chromium net log: %w", path, err)
	}
	start, ok := log.Constants.LogEventTypes["URL_REQUEST_START_JOB"]
	if !ok {
		return nil, fmt.Errorf("%s: no URL_REQUEST_START_JOB event type: not a Chromium net log", path)
	}
	var out []string
	for _, e := range log.Events {
		if e.Type != start {
			continue
		}
		url, _ := e.Params["url"].(string)
		init, _ := e.Params["initiator"].(string)
		if url != "" && init != "not an origin" {
			out = append(out, url+" (initiator "+init+")")
		}
	}
	return out, nil
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "pagecheck:", err)
	os.Exit(1)
}
