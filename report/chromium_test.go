//go:build unix

package report

import (
	"bytes"
	"context"
	"html"
	"image"
	"image/color"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestChromiumRendersReport opens the fixture's report in headless
// Chromium: the screenshot must be a real picture holding the status
// colours, and the rendered DOM must list every phase. The screenshot is
// kept in $CAIRN_SCREENSHOT_DIR when set, so a person can look at it.
func TestChromiumRendersReport(t *testing.T) {
	bin := chromium(t)
	dir := t.TempDir()
	in := fixtureInput(t)
	page := filepath.Join(dir, "report.html")
	if err := os.WriteFile(page, []byte(render(t, in)), 0o644); err != nil {
		t.Fatal(err)
	}
	shotDir := os.Getenv("CAIRN_SCREENSHOT_DIR")
	if shotDir == "" {
		shotDir = dir
	} else if err := os.MkdirAll(shotDir, 0o755); err != nil {
		t.Fatal(err)
	}
	shot := filepath.Join(shotDir, "report.png")
	os.Remove(shot)
	url := "file://" + page

	runChromium(t, bin, "--screenshot="+shot, "--window-size=1400,2000", url)
	t.Logf("screenshot: %s", shot)
	f, err := os.Open(shot)
	if err != nil {
		t.Fatalf("chromium wrote no screenshot: %v", err)
	}
	img, err := png.Decode(f)
	f.Close()
	if err != nil {
		t.Fatalf("screenshot %s is not a PNG: %v", shot, err)
	}
	if b := img.Bounds(); b.Dx() != 1400 || b.Dy() != 2000 {
		t.Errorf("screenshot is %dx%d, want 1400x2000", b.Dx(), b.Dy())
	}
	colours := countColours(img)
	if len(colours) < 16 {
		t.Errorf("screenshot has %d distinct colours: the page did not render", len(colours))
	}
	// The boxes are filled flat, so their exact colours are on screen.
	for _, s := range []string{"failed", "cached", "succeeded", "blocked"} {
		if c := hexColour(styleOf(s).Fill); colours[c] < 200 {
			t.Errorf("the %s colour %s covers %d pixels of the screenshot, want a box's worth", s, styleOf(s).Fill, colours[c])
		}
	}

	dom := html.UnescapeString(string(runChromium(t, bin, "--dump-dom", url)))
	if !strings.Contains(dom, "<svg") {
		t.Error("rendered page has no svg")
	}
	phases := in.Graph.Vertices()
	for a := range in.Run.Phases {
		phases = append(phases, a)
	}
	for _, a := range phases {
		if !strings.Contains(dom, `data-phase="`+a+`"`) {
			t.Errorf("rendered graph lacks phase %s", a)
		}
	}
	for a := range in.Run.Phases {
		if !strings.Contains(dom, `<td class="phase mono">`+a) && !strings.Contains(dom, `">`+a+`</a></td>`) {
			t.Errorf("rendered phase table lacks phase %s", a)
		}
	}
}

// chromium finds the browser, or skips: unless CAIRN_REQUIRE_SERVICES=1
// (as in CI), where a missing browser is a failure.
func chromium(t *testing.T) string {
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	msg := "chromium not installed (apt-get install chromium)"
	if os.Getenv("CAIRN_REQUIRE_SERVICES") == "1" {
		t.Fatal(msg + " (CAIRN_REQUIRE_SERVICES=1)")
	}
	t.Skip(msg)
	return ""
}

// runChromium runs headless Chromium with a fresh profile and home, in its
// own process group, which is killed when the run takes over a minute and
// in any case when it ends (Chromium leaves helper processes behind).
func runChromium(t *testing.T, bin string, args ...string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	home := t.TempDir()
	args = append([]string{"--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-crash-reporter", "--disable-breakpad",
		"--hide-scrollbars", "--user-data-dir=" + filepath.Join(home, "profile")}, args...)
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = append(os.Environ(), "HOME="+home, "XDG_CONFIG_HOME="+filepath.Join(home, ".config"), "XDG_CACHE_HOME="+filepath.Join(home, ".cache"))
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if cmd.Process != nil {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
	if ctx.Err() != nil {
		t.Fatalf("%s %s: no answer in 60s, killed; stderr:\n%s", bin, strings.Join(args, " "), lastLines(stderr.String(), 20))
	}
	if err != nil {
		t.Fatalf("%s %s: %v; stderr:\n%s", bin, strings.Join(args, " "), err, lastLines(stderr.String(), 20))
	}
	return stdout.Bytes()
}

func lastLines(s string, n int) string {
	text, _ := tailOf([]byte(s), n)
	return text
}

func countColours(img image.Image) map[color.RGBA]int {
	out := map[color.RGBA]int{}
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			r, g, bl, a := img.At(x, y).RGBA()
			out[color.RGBA{uint8(r >> 8), uint8(g >> 8), uint8(bl >> 8), uint8(a >> 8)}]++
		}
	}
	return out
}

// hexColour parses "#rrggbb".
func hexColour(s string) color.RGBA {
	var c color.RGBA
	c.A = 0xff
	for i, p := range []*uint8{&c.R, &c.G, &c.B} {
		var v uint8
		for _, ch := range s[1+2*i : 3+2*i] {
			v <<= 4
			switch {
			case ch >= '0' && ch <= '9':
				v |= uint8(ch - '0')
			case ch >= 'a' && ch <= 'f':
				v |= uint8(ch-'a') + 10
			}
		}
		*p = v
	}
	return c
}
