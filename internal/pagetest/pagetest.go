// Package pagetest plays the user at the connect pages in tests: a
// browser without scripts (an HTTP client with a cookie jar that follows
// redirects) that signs in with the demo form and types a key. It is for
// tests only.
package pagetest

import (
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
)

// Browser is one browser profile: its cookies last as long as it does.
type Browser struct {
	c *http.Client
}

// New returns a browser with an empty cookie jar.
func New() *Browser {
	jar, _ := cookiejar.New(nil) // cannot fail without options
	return &Browser{c: &http.Client{Jar: jar}}
}

var hiddenRE = regexp.MustCompile(`name="(csrf|next|flow)" value="([^"]*)"`)

// submit sends a request and returns the final page's status and its
// hidden form fields.
func (b *Browser) submit(resp *http.Response, err error) (int, url.Values, error) {
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	page, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, nil, err
	}
	v := url.Values{}
	for _, m := range hiddenRE.FindAllStringSubmatch(string(page), -1) {
		v.Set(m[1], m[2])
	}
	return resp.StatusCode, v, nil
}

// FinishKey is the user at a connect_billing-style link: open it (the
// pages send a signed-out browser to the sign-in form), sign in as user
// with the demo form, and type apiKey on the key form. It returns nil
// when the key page accepted the key, and an error naming the step and
// its HTTP status otherwise (403 when user is not the flow's user).
func (b *Browser) FinishKey(link, user, apiKey string) error {
	u, err := url.Parse(link)
	if err != nil {
		return err
	}
	origin := u.Scheme + "://" + u.Host
	status, form, err := b.submit(b.c.Get(link))
	if err != nil || status != http.StatusOK {
		return fmt.Errorf("open %s: HTTP %d %v", u.Path, status, err)
	}
	if form.Get("next") != "" { // the sign-in form: the browser is signed out
		form.Set("username", user)
		status, form, err = b.submit(b.c.PostForm(origin+"/ui/login", form))
		if err != nil || status != http.StatusOK {
			return fmt.Errorf("sign in: HTTP %d %v", status, err)
		}
	}
	form.Set("api_key", apiKey)
	status, _, err = b.submit(b.c.PostForm(origin+"/ui/set_api_key", form))
	if err != nil || status != http.StatusOK {
		return fmt.Errorf("key page: HTTP %d %v", status, err)
	}
	return nil
}
