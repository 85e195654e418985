package main

import (
	"crypto/rand"
	"encoding/base64"
	"log/slog"

	"github.com/mcp-elicit/elicit/connect"
	"github.com/mcp-elicit/elicit/examples/calendar"
	"github.com/mcp-elicit/elicit/internal/fakeoauth"
	"github.com/mcp-elicit/elicit/mcpserver"
)

// demoOAuthClientID is elicitd's client_id at the demo calendar provider.
const demoOAuthClientID = "elicitd"

func init() {
	addSettings(setting{name: "demo-oauth-addr", def: "127.0.0.1:0", usage: "loopback address of the demo calendar provider (a fake OAuth server), or off (no calendar)",
		apply: func(c *config, v string) error {
			// "off", not "": an empty environment variable counts as unset.
			if isOff(v) {
				v = ""
			}
			c.demoOAuthAddr = v
			return nil
		}})
}

// startCalendar starts the demo calendar provider (internal/fakeoauth) on
// its own loopback listener at cfg.demoOAuthAddr, registers elicitd as its
// client (a fresh random secret each start, redirect URI
// <public-url>/connect/callback), and mounts the calendar example on srv.
// An empty demoOAuthAddr (--demo-oauth-addr off) leaves the calendar out. The provider keeps its
// users and tokens in memory: a restart forgets them, so a stored
// connection then gets "no longer accepts" from list_events.
func startCalendar(cfg *config, srv *mcpserver.Server, flows *connect.Service, logger *slog.Logger) (*fakeoauth.Server, error) {
	if cfg.demoOAuthAddr == "" {
		return nil, nil
	}
	provider, err := fakeoauth.Start(cfg.demoOAuthAddr, &fakeoauth.Options{Now: cfg.now, Logger: logger})
	if err != nil {
		return nil, err
	}
	secret := make([]byte, 32)
	_, _ = rand.Read(secret) // never fails (crypto/rand)
	clientSecret := base64.RawURLEncoding.EncodeToString(secret)
	err = provider.RegisterClient(fakeoauth.Client{ID: demoOAuthClientID, Secret: clientSecret,
		RedirectURI: cfg.publicURL + "/connect/callback", Name: "elicitd (" + cfg.publicURL + ")"})
	if err == nil {
		err = flows.AddOAuthProvider(calendar.Provider(demoOAuthClientID, clientSecret, provider.AuthURL(), provider.TokenURL()))
	}
	if err != nil {
		provider.Close()
		return nil, err
	}
	calendar.New(flows, provider.EventsURL()).WithWait(stepWait(cfg)).Register(srv)
	logger.Info("demo calendar provider listening (fake OAuth 2.1 server, loopback only)", "url", provider.URL())
	return provider, nil
}
