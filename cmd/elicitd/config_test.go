package main

import (
	"bytes"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

func writeConfig(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "elicitd.json")
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestConfigPrecedence: flag > environment > file > default, per setting.
func TestConfigPrecedence(t *testing.T) {
	file := writeConfig(t, `{"addr": "127.0.0.1:4001", "log-level": "warn", "idle-timeout": "5m", "data": "/from/file", "insecure-demo-auth": true}`)
	stateKeys := "k9:" + stateKeyB64()
	tests := []struct {
		name string
		args []string
		env  map[string]string
		got  func(*config) []any // the settings checked
		want []any               // their values
	}{
		{"defaults", nil, nil,
			func(c *config) []any {
				return []any{c.addr, c.idleTimeout, c.readHeaderTimeout, c.insecureDemoAuth, c.auditLog, c.metricsAddr, c.keysRefresh}
			},
			[]any{"127.0.0.1:3000", 2 * time.Minute, 10 * time.Second, false, "-", "", 30 * time.Second}},
		{"file over default", []string{"--config", file}, nil,
			func(c *config) []any {
				return []any{c.addr, c.dataDir, c.idleTimeout, c.insecureDemoAuth, c.publicURL}
			},
			[]any{"127.0.0.1:4001", "/from/file", 5 * time.Minute, true, "http://127.0.0.1:4001"}},
		{"config named by env", nil, map[string]string{"ELICIT_CONFIG": file},
			func(c *config) []any { return []any{c.addr} }, []any{"127.0.0.1:4001"}},
		{"env over file", []string{"--config", file}, map[string]string{"ELICIT_ADDR": "127.0.0.1:4002", "ELICIT_IDLE_TIMEOUT": "7s"},
			func(c *config) []any { return []any{c.addr, c.idleTimeout, c.dataDir} },
			[]any{"127.0.0.1:4002", 7 * time.Second, "/from/file"}},
		{"flag over env", []string{"--config", file, "--addr", "127.0.0.1:4003", "--insecure-demo-auth=false"}, map[string]string{"ELICIT_ADDR": "127.0.0.1:4002"},
			func(c *config) []any { return []any{c.addr, c.insecureDemoAuth} }, []any{"127.0.0.1:4003", false}},
		{"free port: origin from the listener", []string{"--addr", "127.0.0.1:0"}, nil,
			func(c *config) []any { return []any{c.publicURLFromListener} }, []any{true}},
		{"free port with a public URL", []string{"--addr", "127.0.0.1:0", "--public-url", "http://localhost:3000"}, nil,
			func(c *config) []any { return []any{c.publicURLFromListener, c.publicURL} }, []any{false, "http://localhost:3000"}},
		{"canonical public origin", []string{"--public-url", "HTTP://LocalHost:3000/"}, nil,
			func(c *config) []any { return []any{c.publicURL} }, []any{"http://localhost:3000"}},
		{"public origin with demo auth accepted", []string{"--public-url", "https://mcp.example.com", "--insecure-demo-auth"}, nil,
			func(c *config) []any { return []any{c.publicURL, c.insecureDemoAuth} }, []any{"https://mcp.example.com", true}},
		{"empty env is unset", nil, map[string]string{"ELICIT_ADDR": ""},
			func(c *config) []any { return []any{c.addr} }, []any{"127.0.0.1:3000"}},
		{"env-only secrets", nil, map[string]string{"ELICIT_MASTER_KEY": "abc", "ELICIT_STATE_KEYS": stateKeys},
			func(c *config) []any { return []any{c.masterKeyB64, c.stateKeys} }, []any{"abc", stateKeys}},
		{"timeouts", []string{"--read-header-timeout", "3s", "--shutdown-timeout", "1m", "--read-timeout", "4s"}, nil,
			func(c *config) []any { return []any{c.readHeaderTimeout, c.shutdownTimeout, c.readTimeout} },
			[]any{3 * time.Second, time.Minute, 4 * time.Second}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := loadConfig(tt.args, func(k string) string { return tt.env[k] }, &bytes.Buffer{})
			if err != nil {
				t.Fatal(err)
			}
			if got := tt.got(cfg); !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("settings = %v, want %v\nconfig = %+v", got, tt.want, cfg)
			}
		})
	}
}

func TestConfigErrors(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		env     map[string]string
		file    string
		wantErr string
	}{
		{"unknown file key", nil, nil, `{"adr": "127.0.0.1:1"}`, `unknown setting "adr"`},
		{"repeated file key", nil, nil, `{"addr": "127.0.0.1:1", "addr": "127.0.0.1:2"}`, `: setting "addr" given twice`},
		{"unknown log level", []string{"--log-level", "verbose"}, nil, "", `--log-level: want debug, info, warn or error, not "verbose"`},
		{"secret in file", nil, nil, `{"master-key": "x"}`, "ELICIT_MASTER_KEY"},
		{"number value", nil, nil, `{"addr": 3000}`, `"addr": want a string`},
		{"bool for string", nil, nil, `{"addr": true}`, `"addr": want a string`},
		{"string for bool", nil, nil, `{"insecure-demo-auth": "yes"}`, "insecure-demo-auth"},
		{"not an object", nil, nil, `[]`, "json"},
		{"null", nil, nil, `null`, "want a JSON object"},
		{"trailing garbage", nil, nil, `{} {}`, "json"},
		{"bad duration env", nil, map[string]string{"ELICIT_IDLE_TIMEOUT": "soon"}, "", "ELICIT_IDLE_TIMEOUT"},
		{"negative duration", []string{"--read-header-timeout", "-1s"}, nil, "", "--read-header-timeout"},
		{"bad duration in file", nil, nil, `{"idle-timeout": "x"}`, "--idle-timeout (from --config"},
		{"bad bool env", nil, map[string]string{"ELICIT_INSECURE_DEMO_AUTH": "maybe"}, "", "ELICIT_INSECURE_DEMO_AUTH"},
		{"missing file", []string{"--config", "/nonexistent/elicitd.json"}, nil, "", "--config"},
		{"non-loopback from env", nil, map[string]string{"ELICIT_ADDR": "0.0.0.0:3000"}, "", "--insecure-demo-auth"},
		{"free port under jwt", []string{"--addr", "127.0.0.1:0", "--auth", "jwt", "--jwt-issuer", "https://idp.example.com", "--oidc-client-id", "pages"}, nil, "", "needs --public-url"},
		{"demo auth behind a public origin", []string{"--public-url", "https://mcp.example.com"}, nil, "", "--insecure-demo-auth"},
		{"public origin from env", nil, map[string]string{"ELICIT_PUBLIC_URL": "http://192.0.2.7:3000"}, "", "--insecure-demo-auth"},
		{"IDN public origin", []string{"--public-url", "http://bücher.example", "--insecure-demo-auth"}, nil, "", "punycode"},
		// Plain http off loopback: every URL tool's link would be refused
		// (N5), so elicitd refuses to start instead of failing each call.
		{"plain http public origin", []string{"--public-url", "http://myhost.test:3919", "--insecure-demo-auth"}, nil, "", "--public-url http://myhost.test:3919: URL-mode links may be plain http only on a loopback host"},
		{"plain http LAN origin", []string{"--public-url", "http://192.0.2.7:3000", "--insecure-demo-auth"}, nil, "", "plain http only on a loopback host"},
		{"wildcard addr without public origin", []string{"--addr", "0.0.0.0:3000", "--insecure-demo-auth"}, nil, "", "set --public-url"},
		{"public origin port out of range", []string{"--public-url", "http://127.0.0.1:99999"}, nil, "", "valid port"},
		{"public origin with userinfo", []string{"--public-url", "http://a@127.0.0.1:3000"}, nil, "", "--public-url"},
		{"public origin with query", []string{"--public-url", "http://127.0.0.1:3000/?x=1"}, nil, "", "--public-url"},
		{"bad log level", []string{"--log-level", "loud"}, nil, "", "--log-level"},
		{"bad metrics addr", []string{"--metrics-addr", "nope"}, nil, "", "--metrics-addr"},
		{"empty audit log", []string{"--audit-log", ""}, nil, "", "--audit-log"},
		{"zero refresh", []string{"--state-keys-refresh", "0s"}, nil, "", "--state-keys-refresh"},
		{"extra argument", []string{"serve"}, nil, "", "unexpected arguments"},
		{"device as config", []string{"--config", "/dev/zero"}, nil, "", "/dev/zero is not a regular file"},
		{"directory as config", []string{"--config", "/"}, nil, "", "/ is not a regular file"},
		{"oversized config", nil, nil, "{}" + strings.Repeat(" ", 1<<20), "larger than 1024 KiB"},
		{"config at the limit is read", nil, nil, "{" + strings.Repeat(" ", 1<<20-3) + "}x", "json"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := tt.args
			if tt.file != "" {
				args = append([]string{"--config", writeConfig(t, tt.file)}, args...)
			}
			_, err := loadConfig(args, func(k string) string { return tt.env[k] }, &bytes.Buffer{})
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("err = %v, want one containing %q", err, tt.wantErr)
			}
		})
	}
}

// TestHelpMatchesDocs: elicitd --help names every setting with its
// environment variable, default and meaning, and the configuration table
// of docs/elicitd.md is the one generated from the same list, so neither
// can drift.
func TestHelpMatchesDocs(t *testing.T) {
	var help bytes.Buffer
	if _, err := loadConfig([]string{"--help"}, func(string) string { return "" }, &help); !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("--help: %v", err)
	}
	for _, s := range settings {
		for _, want := range []string{s.usage, "env " + s.envName()} {
			if !strings.Contains(help.String(), want) {
				t.Errorf("--help lacks %q", want)
			}
		}
		if !s.envOnly && !strings.Contains(help.String(), "--"+s.name) {
			t.Errorf("--help lacks --%s", s.name)
		}
		if d := s.defaultText(); d != "" && !strings.Contains(help.String(), "default "+d) {
			t.Errorf("--help lacks the default of %s (%s)", s.name, d)
		}
	}
	doc, err := os.ReadFile("../../docs/elicitd.md")
	if err != nil {
		t.Fatal(err)
	}
	if table := settingsTable(); !strings.Contains(string(doc), table) {
		t.Fatalf("docs/elicitd.md's configuration table differs from the settings; it should read:\n%s", table)
	}
}

func FuzzParseConfigFile(f *testing.F) {
	f.Add([]byte(`{"addr": "127.0.0.1:1", "insecure-demo-auth": true}`))
	f.Add([]byte(`{"addr": 1}`))
	f.Add([]byte(`{"x": null}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := parseConfigFile(data)
		if err != nil {
			return
		}
		for k := range m {
			if !strings.Contains(settingsTable(), "`--"+k+"`") {
				t.Fatalf("accepted key %q that is no flag", k)
			}
		}
	})
}

// --demo-oauth-addr off leaves the calendar out from every source; an
// empty environment variable is unset, so it cannot.
func TestDemoOAuthAddrOff(t *testing.T) {
	tests := []struct {
		name string
		args []string
		env  map[string]string
		want string
	}{
		{"default", nil, nil, "127.0.0.1:0"},
		{"flag", []string{"--demo-oauth-addr", "off"}, nil, ""},
		{"env", nil, map[string]string{"ELICIT_DEMO_OAUTH_ADDR": "off"}, ""},
		{"empty env is unset", nil, map[string]string{"ELICIT_DEMO_OAUTH_ADDR": ""}, "127.0.0.1:0"},
		{"file", []string{"--config", writeConfig(t, `{"demo-oauth-addr": "off"}`)}, nil, ""},
		{"address", []string{"--demo-oauth-addr", "127.0.0.1:4010"}, nil, "127.0.0.1:4010"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := loadConfig(tt.args, func(k string) string { return tt.env[k] }, &bytes.Buffer{})
			if err != nil {
				t.Fatal(err)
			}
			if cfg.demoOAuthAddr != tt.want {
				t.Fatalf("demoOAuthAddr = %q, want %q", cfg.demoOAuthAddr, tt.want)
			}
		})
	}
}
