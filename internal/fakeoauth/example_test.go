package fakeoauth_test

import (
	"fmt"
	"strings"

	"github.com/mcp-elicit/elicit/internal/fakeoauth"
)

// A test starts the provider on loopback, registers its OAuth client and
// gives a user some events; the client is then configured with AuthURL and
// TokenURL, and calls EventsURL with the access token it gets.
func ExampleStart() {
	p, err := fakeoauth.Start("127.0.0.1:0", nil)
	if err != nil {
		panic(err)
	}
	defer p.Close()
	err = p.RegisterClient(fakeoauth.Client{ID: "my-server", Secret: "s3cret", RedirectURI: "http://127.0.0.1:3000/connect/callback", Name: "My server"})
	if err != nil {
		panic(err)
	}
	p.SetEvents("alice", []fakeoauth.Event{{ID: "1", Title: "Dentist"}})
	for _, u := range []string{p.AuthURL(), p.TokenURL(), p.EventsURL()} {
		fmt.Println(strings.TrimPrefix(u, p.URL()))
	}
	fmt.Println(p.AuthorizeRequests())
	// Output:
	// /authorize
	// /token
	// /api/events
	// 0
}
