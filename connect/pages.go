package connect

import "html/template"

// page is the data every template gets. html/template escapes all of it.
type page struct {
	Title    string
	User     string // signed-in user, if any
	Error    string // shown in an alert
	CSRF     string // token for the page's POST forms
	Next     string // login: where to go after; logout: where to sign in again
	Username string // login: value to keep after a rejected name
	FlowID   string
	Heading  string
	Message  string
	MsgID    string // stable element id of Message, e.g. "done"
	Alert    bool   // Message reports a refusal or failure
	// Provider and ProviderHost name the third party on the OAuth page.
	Provider     string
	ProviderHost string
}

// pages are plain, small, accessible and mobile-friendly; the CSP allows
// inline styles only, and no script at all.
var pages = template.Must(template.New("pages").Parse(`
{{define "top"}}<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="same-origin">
<title>{{.Title}}</title>
<style>
body{font:16px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:0;padding:1rem;color:#1a1a1a;background:#f4f4f4}
main{max-width:32rem;margin:1.5rem auto;background:#fff;border:1px solid #ccc;border-radius:8px;padding:1.25rem 1.5rem}
h1{font-size:1.4rem;margin:0 0 1rem}
label{display:block;font-weight:600;margin:1rem 0 .25rem}
input[type=text],input[type=password]{box-sizing:border-box;width:100%;padding:.6rem;font-size:1rem;border:1px solid #767676;border-radius:4px}
button{margin-top:1rem;padding:.6rem 1.2rem;font-size:1rem;border:0;border-radius:4px;background:#0b57a4;color:#fff;cursor:pointer}
button.secondary{background:#505050}
.alert{color:#9b0000;font-weight:600}
.muted{color:#505050;font-size:.9rem}
:focus-visible{outline:3px solid #e68a00;outline-offset:2px}
</style>
</head>
<body>
<main>
{{end}}

{{define "bottom"}}</main>
</body>
</html>
{{end}}

{{define "alert"}}{{if .Error}}<p class="alert" role="alert" id="error">{{.Error}}</p>{{end}}{{end}}

{{define "whoami"}}{{if .User}}<p id="whoami">Signed in as <strong>{{.User}}</strong></p>{{end}}{{end}}

{{define "logout"}}{{if .User}}<form method="post" action="/ui/logout" id="logout-form">
<input type="hidden" name="csrf" value="{{.CSRF}}">
<input type="hidden" name="next" value="{{.Next}}">
<button type="submit" class="secondary" id="logout">Sign out</button>
</form>{{end}}{{end}}

{{define "login"}}{{template "top" .}}<h1>Sign in</h1>
{{template "alert" .}}{{if .User}}<p class="muted">You are signed in as <strong>{{.User}}</strong>. Signing in again replaces that session.</p>{{end}}
<p class="muted">Demo sign-in: enter your user name (letters, digits, dot, underscore, hyphen).</p>
<form method="post" action="/ui/login" id="login-form">
<label for="username">User name</label>
<input type="text" id="username" name="username" value="{{.Username}}" autocomplete="username" autocapitalize="off" spellcheck="false" required maxlength="64" pattern="[A-Za-z0-9._\-]{1,64}" autofocus>
<input type="hidden" name="csrf" value="{{.CSRF}}">
<input type="hidden" name="next" value="{{.Next}}">
<button type="submit" id="submit">Sign in</button>
</form>
{{template "bottom" .}}{{end}}

{{define "home"}}{{template "top" .}}<h1>Signed in</h1>
{{template "whoami" .}}
<p class="muted">Open the link your MCP client showed you to continue.</p>
{{template "logout" .}}
{{template "bottom" .}}{{end}}

{{define "keyform"}}{{template "top" .}}<h1>{{.Heading}}</h1>
{{template "whoami" .}}
{{template "alert" .}}
<p id="owner">Enter your API key. It is stored encrypted on this server for the account <strong>{{.User}}</strong>, and is never sent to your MCP client.</p>
<form method="post" action="/ui/set_api_key" id="key-form" autocomplete="off">
<label for="api_key">API key</label>
<input type="password" id="api_key" name="api_key" autocomplete="off" autocapitalize="off" spellcheck="false" required maxlength="4096">
<input type="hidden" name="csrf" value="{{.CSRF}}">
<input type="hidden" name="flow" value="{{.FlowID}}">
<button type="submit" id="submit">Save key</button>
</form>
<p class="muted">Not {{.User}}? Sign out and sign in with the account that asked.</p>
{{template "logout" .}}
{{template "bottom" .}}{{end}}

{{define "connect"}}{{template "top" .}}<h1>{{.Heading}}</h1>
{{template "whoami" .}}
<p id="connect-info">Continue to sign in at <strong>{{.Provider}}</strong> (<strong id="provider-host">{{.ProviderHost}}</strong>) and allow this server to read your data there. The access it grants is stored encrypted on this server, for the account <strong>{{.User}}</strong> only, and is never sent to your MCP client.</p>
<form method="post" action="/connect/{{.FlowID}}" id="connect-form">
<input type="hidden" name="csrf" value="{{.CSRF}}">
<button type="submit" id="continue">Continue to {{.Provider}}</button>
</form>
<p class="muted">Not {{.User}}? Sign out and sign in with the account that asked.</p>
{{template "logout" .}}
{{template "bottom" .}}{{end}}

{{define "message"}}{{template "top" .}}<h1>{{.Heading}}</h1>
{{template "whoami" .}}
<p id="{{.MsgID}}"{{if .Alert}} role="alert"{{end}}>{{.Message}}</p>
{{template "logout" .}}
{{template "bottom" .}}{{end}}
`))
