// Package calendar is the third-party OAuth flow of elicitd: the server is
// an OAuth client of a calendar provider, and connect_calendar asks the
// user, in URL mode, to authorize it there (client/elicitation.mdx §URL
// Mode Elicitation for OAuth Flows; docs/flows.md §connect_calendar).
//
// The elicitation URL is the server's own /connect/<flow id> route
// (package connect), which checks that the browser user is the user the
// elicitation was made for before redirecting to the provider; the
// provider's tokens are stored encrypted for that user and never appear in
// an MCP message (SEC-U-S-06, SEC-U-S-08, SEC-U-S-10). list_events then
// uses the caller's own stored token against the provider's API; the
// client's MCP token is never sent there (SEC-U-S-09).
package calendar

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"golang.org/x/oauth2"

	"github.com/mcp-elicit/elicit/connect"
	"github.com/mcp-elicit/elicit/mcp"
	"github.com/mcp-elicit/elicit/mcpserver"
	"github.com/mcp-elicit/elicit/store"
)

// Names used on the wire.
const (
	ToolName       = "connect_calendar" // the tool that asks for authorization
	EventsToolName = "list_events"      // read-only: the user's events
	InputKey       = "calendar"         // the inputRequests key of the URL elicitation
	Purpose        = "calendar"         // the connect flow purpose and vault secret name
	// Scope is what the server asks the provider for.
	Scope = "events.read"
)

// Result texts. Decline and cancel differ on purpose (ELI-S-08).
const (
	TextConnected = "Your calendar is connected. The provider's authorization is stored on the server and is never shown here."
	// TextConnectedAs is TextConnected naming the account the provider
	// says the authorization is for (%s: quoted, as it is third-party
	// text): a user signed in there as someone else learns it here.
	TextConnectedAs      = "Your calendar is connected: you authorized the calendar provider's account %s. The provider's authorization is stored on the server and is never shown here."
	TextAlreadyConnected = "Your calendar is already connected."
	TextDeclined         = "The calendar was not connected: you declined to open the provider's sign-in. Nothing was stored."
	TextCancelled        = "The calendar connection step was dismissed before it finished. Nothing was stored; call connect_calendar again to restart it."
	TextDeclinedKept     = "You declined in your client, but you had already authorized the calendar provider on the server's page: the calendar is connected."
	TextCancelledKept    = "The step was dismissed in your client, but you had already authorized the calendar provider on the server's page: the calendar is connected."
	TextDenied           = "The calendar provider denied access, so the calendar was not connected. Nothing was stored; call connect_calendar again to try again."
	TextNotConnected     = "Your calendar is not connected. Run connect_calendar first, then list_events again."
	TextRejected         = "The calendar provider no longer accepts the stored authorization (it was revoked, or the demo provider restarted). Nothing was read. Run connect_calendar to connect it again."
	TextNoEvents         = "Your calendar has no events."
	textSignIn           = "Sign-in is required to connect a calendar."
	messageAsk           = "Connect your calendar: open this page on the server, sign in as yourself, then approve access at the calendar provider. The provider's tokens never pass through this client."
	messagePending       = "The calendar has not been authorized yet. Open the page, approve access at the provider, then accept again."
)

// maxEventsBody bounds the provider's answer, in bytes.
const maxEventsBody = 1 << 20

// Provider returns the connect.OAuthProvider registration for a calendar
// provider with the given client credentials and endpoints; pass it to
// connect.Service.AddOAuthProvider. The client authenticates with HTTP
// Basic (RFC 6749 §2.3.1).
func Provider(clientID, clientSecret, authURL, tokenURL string) connect.OAuthProvider {
	return connect.OAuthProvider{
		Purpose: Purpose,
		Name:    "Calendar provider",
		Heading: "Connect your calendar",
		Config: oauth2.Config{
			ClientID: clientID, ClientSecret: clientSecret, Scopes: []string{Scope},
			Endpoint: oauth2.Endpoint{AuthURL: authURL, TokenURL: tokenURL, AuthStyle: oauth2.AuthStyleInHeader},
		},
	}
}

// App serves connect_calendar and list_events.
type App struct {
	flows     *connect.Service
	step      *connect.Step
	eventsURL string
}

// New returns the app. flows must have the calendar provider registered
// (Provider); eventsURL is the provider's GET events endpoint, which
// answers {"user","events":[{"id","title","start"}]} for the token's user.
func New(flows *connect.Service, eventsURL string) *App {
	a := &App{flows: flows, eventsURL: eventsURL}
	a.step = &connect.Step{Flows: flows, InputKey: InputKey, Purpose: Purpose, Connected: a.connected, ConnectedText: a.connectedText,
		Texts: connect.StepTexts{
			SignIn: textSignIn, Connected: TextConnected, AlreadyConnected: TextAlreadyConnected,
			Declined: TextDeclined, Cancelled: TextCancelled, DeclinedKept: TextDeclinedKept, CancelledKept: TextCancelledKept,
			Ask: messageAsk, Pending: messagePending, Denied: TextDenied,
		}}
	return a
}

// WithWait sets how long an accept that came before the provider's
// approval is held open (connect.Step.Wait), and returns a. Call it
// before Register.
func (a *App) WithWait(d time.Duration) *App {
	a.step.Wait = d
	return a
}

// Register adds connect_calendar and list_events to s.
func (a *App) Register(s *mcpserver.Server) {
	a.step.Register(s, &mcp.Tool{
		Name:        ToolName,
		Title:       "Connect calendar",
		Description: "Connect the user's calendar. The user signs in on the server's own page and approves access at the calendar provider (URL-mode elicitation); the provider's tokens never pass through the client.",
	})
	readOnly := true
	s.AddTool(&mcp.Tool{
		Name:        EventsToolName,
		Title:       "List calendar events",
		Description: "List the user's upcoming calendar events, read from the calendar provider with the authorization stored by connect_calendar.",
		InputSchema: connect.NoArgumentsSchema,
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: &readOnly},
	}, a.listEvents)
}

// event is one entry of the provider's answer.
type event struct {
	ID    string    `json:"id"`
	Title string    `json:"title"`
	Start time.Time `json:"start"`
}

func (a *App) listEvents(ctx context.Context, req *mcpserver.Request) (mcpserver.Reply, error) {
	if err := connect.NoArguments(req); err != nil {
		return nil, err
	}
	if req.Principal == "" {
		return mcpserver.ToolError("Sign-in is required."), nil
	}
	_, events, err := a.fetch(ctx, req.Principal)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return mcpserver.ToolError(TextNotConnected), nil
	case errors.Is(err, errRejected):
		return mcpserver.ToolError(TextRejected), nil
	case err != nil:
		return nil, err
	}
	return mcpserver.Text(formatEvents(events)), nil
}

// errRejected: the provider refused the stored authorization (revoked,
// or the refresh token no longer works).
var errRejected = errors.New("calendar: the provider rejected the stored authorization")

// connected reports whether principal has an authorization the provider
// still accepts, so connect_calendar offers to connect again after a
// revocation instead of saying "already connected".
func (a *App) connected(ctx context.Context, principal string) (bool, error) {
	_, _, err := a.fetch(ctx, principal)
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, store.ErrNotFound), errors.Is(err, errRejected):
		return false, nil
	}
	return false, err
}

// maxAccountLen bounds, in bytes, the provider's account name shown.
const maxAccountLen = 64

// connectedText names the provider account the new authorization is for,
// as the provider's API reports it; TextConnected when it names none or
// cannot be asked now (the connection itself is done either way).
func (a *App) connectedText(ctx context.Context, principal string) (string, error) {
	user, _, err := a.fetch(ctx, principal)
	if err != nil || user == "" {
		return TextConnected, nil
	}
	if len(user) > maxAccountLen {
		user = strings.ToValidUTF8(user[:maxAccountLen], "") + "…"
	}
	return fmt.Sprintf(TextConnectedAs, strconv.Quote(user)), nil
}

// fetch reads principal's events with the stored token, and the
// provider's name for the account: store.ErrNotFound if not connected,
// errRejected if the provider refuses it. Errors never hold the token.
func (a *App) fetch(ctx context.Context, principal string) (string, []event, error) {
	client, err := a.flows.OAuthClient(ctx, principal, Purpose)
	if err != nil {
		return "", nil, err
	}
	hreq, err := http.NewRequestWithContext(ctx, http.MethodGet, a.eventsURL, nil)
	if err != nil {
		return "", nil, err
	}
	hreq.Header.Set("Accept", "application/json")
	resp, err := client.Do(hreq)
	if err != nil {
		var re *oauth2.RetrieveError
		if errors.As(err, &re) {
			return "", nil, errRejected // the refresh was refused
		}
		return "", nil, fmt.Errorf("calendar: provider: %w", err) // network trouble
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusUnauthorized {
		return "", nil, errRejected
	}
	if resp.StatusCode != http.StatusOK {
		return "", nil, fmt.Errorf("calendar: provider answered HTTP %d", resp.StatusCode)
	}
	var body struct {
		User   string  `json:"user"`
		Events []event `json:"events"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, maxEventsBody)).Decode(&body); err != nil {
		return "", nil, fmt.Errorf("calendar: provider answer: %w", err)
	}
	return body.User, body.Events, nil
}

// formatEvents lists events one a line. Titles come from a third party:
// they are quoted, with control and format characters escaped.
func formatEvents(events []event) string {
	if len(events) == 0 {
		return TextNoEvents
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Your calendar has %d event(s):", len(events))
	for _, e := range events {
		fmt.Fprintf(&b, "\n- %s %s", e.Start.UTC().Format("2006-01-02 15:04 UTC"), strconv.Quote(e.Title))
	}
	return b.String()
}
