package elicit

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestLooksSecret(t *testing.T) {
	tests := []struct {
		text string
		word string // "" = not secret
	}{
		// English, and the separators of names.
		{"password", "password"},
		{"Password", "password"},
		{"new_password", "password"},
		{"userPassword", "password"},
		{"passwd", "passwd"},
		{"passphrase", "passphrase"},
		{"api_key", "api key"},
		{"apiKey", "api key"},
		{"APIKey", "api key"},
		{"API-KEY", "api key"},
		{"apikey", "apikey"},
		{"apiKey2", "api key"},
		{"Your API key", "api key"},
		{"access_token", "token"},
		{"refreshToken", "token"},
		{"Bearer", "bearer"},
		{"client_secret", "secret"},
		{"clientSecretValue", "secret"},
		{"private key", "private key"},
		{"card_number", "card number"},
		{"cardNumber", "card number"},
		{"Credit card", "credit card"},
		{"cvv", "cvv"},
		{"CVC2", "cvc 2"},
		{"security code", "security code"},
		{"Enter the card details", "card details"},
		{"credentials", "credentials"},
		{"PIN", "pin"},
		{"iban", "iban"},
		{"seed phrase", "seed phrase"},
		{"Your 12-word recovery phrase", "recovery phrase"},
		{"mnemonic", "mnemonic"},
		{"One-time password", "one time password"},
		{"otp", "otp"},
		{"2FA code", "2 fa code"},
		{"verification.code", "verification code"},
		{"password_hint", "password"}, // errs towards refusing
		{"Pin to top", "pin"},
		// Leetspeak, spelt-out letters, Unicode tricks.
		{"t0ken", "token"},
		{"p@$$w0rd", "password"},
		{"P4SSW0RD", "password"},
		{"s3cr3t", "secret"},
		{"1ban", "iban"},
		{"credentia1s", "credentials"},
		{"p a s s w o r d", "password"},
		{"ｐａｓｓｗｏｒｄ", "password"},                     // full width
		{"pass\u200bword", "password"},               // zero-width space
		{"to\u00adken", "token"},                     // soft hyphen
		{"p\u0430ssw\u043erd", "password"},           // Cyrillic а and о
		{"pa\u0073\u0073word", "password"},           // plain, escaped
		{"Pa\u0301ssword", "password"},               // combining accent
		{"ＡＰＩ＿ＫＥＹ", "api key"},                       // full-width snake case
		{"\u24df\u24d0\u24e2\u24e2word", "password"}, // circled letters
		// German, French, Spanish, Italian, Portuguese, Dutch.
		{"Passwort", "passwort"},
		{"Benutzerpasswort", "passwort"},
		{"neuesPasswort", "passwort"},
		{"Kennwort", "kennwort"},
		{"Kreditkartennummer", "kreditkart"},
		{"Geheimzahl", "geheimzahl"},
		{"API-Schlüssel", "api schlussel"},
		{"Privater Schlüssel", "privater schlussel"},
		{"Zugangsdaten", "zugangsdaten"},
		{"Mot de passe", "mot de passe"},
		{"Numéro de carte", "numero de carte"},
		{"Clé API", "cle api"},
		{"clé privée", "cle privee"},
		{"Cryptogramme visuel", "cryptogramme visuel"},
		{"Contraseña", "contrasena"},
		{"Número de tarjeta", "numero de tarjeta"},
		{"Código de seguridad", "codigo de seguridad"},
		{"Frase semilla", "frase semilla"},
		{"Parola d'ordine", "parola d ordine"},
		{"Chiave privata", "chiave privata"},
		{"Numero della carta", "numero della carta"},
		{"Senha", "senha"},
		{"Número do cartão", "numero do cartao"},
		{"Código de segurança", "codigo de seguranca"},
		{"Wachtwoord", "wachtwoord"},
		{"Kaartnummer", "kaartnummer"},
		{"Geheime sleutel", "geheime sleutel"},
		// Russian, Chinese, Japanese, Korean.
		{"Пароль", "парол"},
		{"Введите пароль", "парол"},
		{"Номер карты", "номер карты"},
		{"Номер банковской карты", "номер банковскои карты"},
		{"Приватный ключ", "приватныи ключ"},
		{"Сид-фраза", "сид фраза"},
		{"API токен", "токен"},
		{"密码", "密码"},
		{"請輸入密碼", "密碼"},
		{"信用卡号", "信用卡"},
		{"助记词", "助记词"},
		{"パスワード", "パスワード"},
		{"暗証番号を入力", "暗証番号"},
		{"カード番号", "カード番号"},
		{"APIキー", "apiキー"},
		{"비밀번호", "비밀번호"},
		{"카드 번호", "카드 번호"},
		// Not secrets.
		{"label", ""},
		{"passenger", ""},
		{"compass", ""},
		{"bypass", ""},
		{"passport", ""},
		{"Passport number", ""},
		{"secretary", ""},
		{"detail", ""},
		{"Choose the detail level for a report that will be prepared as a draft", ""},
		{"keyboard", ""},
		{"monkey", ""},
		{"hockey", ""},
		{"keyword", ""},
		{"sort_key", ""},
		{"Primary key", ""},
		{"public key", ""},
		{"pinned", ""},
		{"spinner", ""},
		{"recipient", ""},
		{"token count", ""},
		{"max_tokens", ""},
		{"maxTokens", ""},
		{"tokenBudget", ""},
		{"token_budget", ""},
		{"Number of tokens", ""},
		{"tokenizer", ""},
		{"random seed", ""},
		{"country code", ""},
		{"Promo code", ""},
		{"Resenha", ""},
		{"Kaart", ""},
		{"carte", ""},
		{"Schlüssel", ""},
		{"s3 bucket", ""},
		{"2026-Q2", ""},
		{"", ""},
	}
	for _, tt := range tests {
		w, ok := LooksSecret(tt.text)
		if ok != (tt.word != "") || w != tt.word {
			t.Errorf("LooksSecret(%q) = %q, %v; want %q", tt.text, w, ok, tt.word)
		}
	}
}

func TestLooksSecretProperty(t *testing.T) {
	tests := []struct {
		name, prop string
		where      string // "" = not secret
		match      string
	}{
		{"password", `{"type":"string"}`, "name", "password"},
		{"k", `{"type":"string","title":"Kennwort"}`, "title", "kennwort"},
		{"k", `{"type":"string","description":"Le numéro de carte"}`, "description", "numero de carte"},
		{"value", `{"type":"string","writeOnly":true}`, "writeOnly", "true"},
		{"value", `{"type":"string","format":"password"}`, "format", "password"},
		{"value", `{"type":"string","format":"Password"}`, "format", "Password"},
		{"n", `{"type":"string","default":"4111 1111 1111 1111"}`, "default", "a card number"},
		{"n", `{"type":"string","default":"4111-1111-1111-1111"}`, "default", "a card number"},
		{"n", `{"type":"integer","default":4111111111111111}`, "default", "a card number"},
		{"n", `{"type":"string","examples":["x","5555555555554444"]}`, "examples", "a card number"},
		{"n", `{"type":"string","default":"DE89 3704 0044 0532 0130 00"}`, "default", "an IBAN"},
		{"n", `{"type":"string","examples":["GB82WEST12345698765432"]}`, "examples", "an IBAN"},
		{"n", `{"type":"string","default":"-----BEGIN OPENSSH PRIVATE KEY-----\nb3Blbn==\n-----END OPENSSH PRIVATE KEY-----"}`, "default", "a private key"},
		{"n", `{"type":"string","default":"eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJhbGljZSJ9.sig"}`, "default", "a token (JWT)"},
		{"n", `{"type":"string","default":"ghp_abcdefghijklmnopqrstuvwxyz0123456789"}`, "default", "an API key"},
		{"n", `{"type":"string","default":"AKIAIOSFODNN7EXAMPLE"}`, "default", "an API key"},
		{"n", `{"type":"string","pattern":"^\\d{16}$"}`, "pattern", "a card number"},
		{"n", `{"type":"string","pattern":"^(\\d{4}[ -]?){3}\\d{4}$"}`, "pattern", "a card number"},
		{"n", `{"type":"string","pattern":"^[0-9]{13,19}$"}`, "pattern", "a card number"},
		{"n", `{"type":"string","pattern":"4111111111111111"}`, "pattern", "a card number"},
		// Not secrets.
		{"label", `{"type":"string","title":"Label","default":"Q2 revenue"}`, "", ""},
		{"n", `{"type":"integer","default":4111111111111112}`, "", ""},  // fails Luhn
		{"n", `{"type":"string","default":"1111111111111117"}`, "", ""}, // Luhn, but no card starts with 1
		{"n", `{"type":"string","default":"DE89 3704 0044 0532 0130 01"}`, "", ""},
		{"phone", `{"type":"string","pattern":"^\\+?[0-9]{7,15}$"}`, "", ""},
		{"zip", `{"type":"string","pattern":"^\\d{5}(-\\d{4})?$"}`, "", ""},
		{"when", `{"type":"string","format":"date","writeOnly":false}`, "", ""},
		{"n", `not JSON`, "", ""},
		{"n", `{"title":12,"writeOnly":"yes","default":{"a":1},"pattern":[]}`, "", ""},
	}
	for _, tt := range tests {
		h, ok := LooksSecretProperty(tt.name, json.RawMessage(tt.prop))
		if ok != (tt.where != "") || h.Where != tt.where || h.Match != tt.match {
			t.Errorf("LooksSecretProperty(%q, %s) = %+v, %v; want %q %q", tt.name, tt.prop, h, ok, tt.where, tt.match)
		}
	}
}

// The guard's findings refuse a schema in ParseSchema, with the reason
// and never the value.
func TestParseSchemaRefusesSecretHints(t *testing.T) {
	for _, tc := range []struct{ prop, want string }{
		{`{"type":"string","format":"password"}`, `property "v": its format is "password"`},
		{`{"type":"string","writeOnly":true}`, `property "v": it is marked writeOnly`},
		{`{"type":"string","default":"4111111111111111"}`, `property "v": its default looks like a card number`},
		{`{"type":"string","title":"Passwort"}`, `property "v": its title mentions "passwort"`},
	} {
		_, err := ParseSchema(json.RawMessage(`{"type":"object","properties":{"v":` + tc.prop + `}}`))
		if !errors.Is(err, ErrSecretField) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ParseSchema(%s) = %v; want ErrSecretField with %q", tc.prop, err, tc.want)
		}
		if strings.Contains(fmtErr(err), "4111") {
			t.Errorf("the error shows the value: %v", err)
		}
	}
	// Read back for answers, the same schema is not refused for being secret.
	if _, err := ParseSchemaForAnswers(json.RawMessage(`{"type":"object","properties":{"v":{"type":"string","writeOnly":true}}}`)); err != nil {
		t.Errorf("ParseSchemaForAnswers: %v", err)
	}
}

func fmtErr(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func TestMinDigits(t *testing.T) {
	for pattern, want := range map[string]int{
		`^\d{16}$`:                   16,
		`^(\d{4}[ -]?){3}\d{4}$`:     16,
		`^[0-9]{13,19}$`:             13,
		`^\d+$`:                      1,
		`^\d*$`:                      0,
		`^4\d{12}(\d{3})?$`:          13,
		`^[\d]{16}$`:                 0, // a class other than [0-9] counts nothing
		`^\d{99999999999999999999}$`: 1, // an unreadable count is 1
		`(((\d{10}){10}){10}){10}`:   1000,
		`\d{3`:                       2, // \d, then the digit 3
		`[0-9`:                       0,
		`)))`:                        0,
	} {
		if got := minDigits(pattern); got != want {
			t.Errorf("minDigits(%q) = %d, want %d", pattern, got, want)
		}
	}
}

// FuzzLooksSecret: the matcher never panics, is deterministic, and a
// match is a non-empty valid UTF-8 word.
func FuzzLooksSecret(f *testing.F) {
	for _, s := range []string{"password", "p@$$w0rd", "Numéro de carte", "パスワード", "p a s s", "\u200b", "max tokens", "APIKey2", "ÿ\xff1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		w, ok := LooksSecret(s)
		if ok != (w != "") || !utf8.ValidString(w) {
			t.Fatalf("LooksSecret(%q) = %q, %v", s, w, ok)
		}
		if w2, ok2 := LooksSecret(s); w2 != w || ok2 != ok {
			t.Fatalf("LooksSecret(%q) not deterministic: %q/%q", s, w, w2)
		}
	})
}

// FuzzLooksSecretProperty: any property JSON and pattern is read without
// a panic, and a finding names where it was found.
func FuzzLooksSecretProperty(f *testing.F) {
	f.Add("n", []byte(`{"type":"string","pattern":"^(\\d{4}[ -]?){3}\\d{4}$","default":"4111111111111111"}`))
	f.Add("n", []byte(`{"writeOnly":true}`))
	f.Add("n", []byte(`{"pattern":"((((\\d{9999999}"}`))
	f.Add("p", []byte(`{"examples":[1e400,"DE89370400440532013000",null]}`))
	f.Fuzz(func(t *testing.T, name string, prop []byte) {
		h, ok := LooksSecretProperty(name, prop)
		if ok != (h.Where != "") || (ok && h.String() == "") {
			t.Fatalf("LooksSecretProperty(%q, %q) = %+v, %v", name, prop, h, ok)
		}
	})
}

func TestSecretsInURL(t *testing.T) {
	for raw, want := range map[string]string{
		"https://mcp.example.com/ui/set_api_key?flow=0123":                     "",
		"https://evil.example/cb?code=xyz&access_token=abc":                    "access_token:token code:code",
		"https://x.example/?sig=1&name=q":                                      "sig:sig",
		"https://x.example/?Passwort=1":                                        "Passwort:passwort",
		"https://x.example/?codec=h264&design=1":                               "",
		"https://x.example/a/eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJhIn0.sig":         ":JWT",
		"https://x.example/?apikey=1&t=eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJhIn0.s": "apikey:apikey :JWT",
		"https://x.example/?%61ccess_token=1":                                  "access_token:token",
		"%zz":                                                                  "",
	} {
		var got []string
		for _, s := range SecretsInURL(raw) {
			got = append(got, s.Param+":"+s.Word)
		}
		if strings.Join(got, " ") != want {
			t.Errorf("SecretsInURL(%q) = %q, want %q", raw, strings.Join(got, " "), want)
		}
	}
}
