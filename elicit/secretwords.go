package elicit

// The words of the secret guard (LooksSecret), written as they are
// spelled; they are normalised like the text they are matched against
// (lower case, diacritics of Latin, Greek and Cyrillic letters removed,
// ß as ss), and " ?" lets two words also be written as one. The lists
// cover English, German, French, Spanish, Italian, Portuguese, Dutch,
// Russian, Chinese, Japanese and Korean, for passwords, secrets, tokens,
// API and private keys, PINs, card numbers and their security codes,
// IBANs, one-time codes, seed and recovery phrases and credentials.

// secretWordTerms match whole words only: "token" but not "tokenizer",
// "secret" but not "secretary".
var secretWordTerms = []string{
	// English
	"pass ?words?", "passwd", "pwds?", "pass ?phrases?", "pass ?codes?",
	"secrets?",
	"(api|access|secret|private|signing|encryption|master|recovery|wallet) ?keys?", "privkey",
	"tokens?", "bearer", "credentials?",
	"otps?", "totp", "hotp", "one ?time ?(password|passcode|code|pin)s?",
	"(verification|auth|authentication|authorization|2 ?fa|mfa|sms|otp|access|backup|recovery|security) ?codes?",
	"(credit|debit|payment|bank) ?cards?", "card ?(numbers?|no|num|data|details|info)",
	"cvv ?2?", "cvc ?2?", "card verification( (code|value))?",
	"iban", "pins?", "pin ?(codes?|numbers?)", "ssns?", "social security( numbers?)?",
	"seed ?(phrases?|words?)", "(recovery|backup|secret|wallet|mnemonic) ?(phrases?|seeds?|words)", "mnemonics?",
	// German
	"(api|privater?|geheimer?|privat) ?schlussel", "pin ?nummer", "zugangs ?(daten|codes?)", "anmelde ?daten",
	"tan ?nummer",
	// French
	"mots? de passe", "mdp", "codes? secrets?", "cles? (api|d api|privees?|secretes?)", "jetons?",
	"identifiants de connexion", "numeros? de (la )?carte", "cartes? (bancaires?|de credit|de debit)",
	"cryptogramme( visuel)?", "codes? de (securite|verification|confirmation)", "codes? pin",
	"phrases? (de recuperation|secretes?|mnemoniques?)", "codes? a usage unique",
	// Spanish
	"claves? (de acceso|secretas?|privadas?|api|de api)", "secretos?", "numeros? de (la )?tarjeta",
	"tarjetas? de (credito|debito)", "codigos? de (seguridad|verificacion)", "frases? (semilla|de recuperacion)",
	"credenciales",
	// Italian
	"parola d ordine", "chiav[ei] (api|privata|private|segreta|segrete)", "segret[oi]",
	"codic[ei] (segret[oi]|di sicurezza|di verifica|otp|pin)", "numer[oi] (di|della) carta", "cart[ae] di credito",
	"credenziali", "frasi? di recupero",
	// Portuguese
	"senhas?", "palavras? passe", "chaves? (api|de api|privadas?|secretas?)", "segredos?", "numeros? do cartao",
	"(cartao|cartoes) de credito", "codigos? de (seguranca|verificacao)", "credenciais", "frases? (de recuperacao|semente)",
	// Dutch and German
	"geheime sleutels?", "geheime?", "(api|prive) ?sleutels?", "toegangs ?codes?", "inloggegevens", "herstel ?zin",
	// Russian
	"(приватн|закрыт)[^ ]* ключ[^ ]*", "ключ[^ ]* api", "api ключ[^ ]*", "номер[^ ]* ([^ ]+ )?карт[^ ]*", "пин( код[^ ]*)?",
	"код[^ ]* (безопасности|подтверждения)", "одноразов[^ ]* код[^ ]*", "сид ?фраз[^ ]*", "учетн[^ ]* данн[^ ]*", "cvv код[^ ]*",
}

// secretPartTerms match anywhere, inside longer words too: German and
// Dutch compounds ("Benutzerpasswort", "creditcardnummer") and languages
// written without spaces.
var secretPartTerms = []string{
	"password", "passwort", "kennwort", "wachtwoord", "contraseña", "contrasenya",
	"geheimzahl", "kreditkart", "kartennummer", "prufnummer", "sicherheitscode", "geheimschlussel", "privatschlussel",
	"wiederherstellungs(schlussel|phrase|code)", "bestatigungscode",
	"kaartnummer", "creditcard", "beveiligingscode", "verificatiecode",
	"mnemoni",
	"парол", "токен", "секрет", "мнемоническ",
	"密码", "密碼", "口令", "密钥", "密鑰", "私钥", "私鑰", "令牌", "卡号", "卡號", "信用卡", "银行卡", "銀行卡",
	"安全码", "安全碼", "验证码", "驗證碼", "助记词", "助記詞", "种子短语", "種子短語", "恢复短语", "秘密", "pin码",
	"パスワード", "暗証番号", "秘密鍵", "シークレット", "トークン", "カード番号", "クレジットカード", "セキュリティコード",
	"認証コード", "確認コード", "ワンタイム", "シードフレーズ", "リカバリーフレーズ", "ニーモニック", "apiキー",
	"비밀번호", "패스워드", "비밀", "토큰", "카드 ?번호", "신용카드", "보안 ?코드", "개인 ?키", "인증 ?번호", "인증 ?코드",
	"시드 ?구문", "복구 ?구문", "니모닉", "api ?키",
}

// neutralPhrases are read as not secret before the terms are looked
// for: model tokens (a budget, a count) are not credentials.
var neutralPhrases = []string{
	"(max|maximum|min|minimum|num|total|input|output|prompt|completion|context|remaining|used|design) tokens?",
	"tokens? (count|counts|budget|budgets|limit|limits|usage|used|cost|costs|price|pricing|estimate|window|length|per [^ ]+)",
	"(number|count) of tokens", "how many tokens",
}
