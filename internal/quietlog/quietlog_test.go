package quietlog

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
)

func TestDemote(t *testing.T) {
	var buf bytes.Buffer
	l := Demote(slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelInfo}))).With("k", "v")
	l.Info("session started")
	l.Warn("something odd")
	l.Debug("detail")
	out := buf.String()
	if strings.Contains(out, "session started") || strings.Contains(out, "detail") || !strings.Contains(out, "level=WARN msg=\"something odd\" k=v") {
		t.Errorf("log:\n%s", out)
	}
	buf.Reset()
	Demote(slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))).Info("shown")
	if !strings.Contains(buf.String(), "level=DEBUG msg=shown") {
		t.Errorf("at debug level: %s", buf.String())
	}
}
