/**
 * Redaction of the credential-bearing parts of URLs the CLI prints: a userinfo password, and the values of query
 * parameters that carry a secret (`api_key`, `key`, `token`, `access_token`, `password`, `sig`, `secret`, …). It
 * works on text that does not parse as a URL too, so an error that echoes a malformed URL shows no secret either.
 */

/** What a redacted part is replaced with. */
const marker = "<redacted>"

/** Query keys whose values are secrets: exact names, then words that make any key a secret. */
const secretKeys = new Set([
  "key",
  "apikey",
  "api_key",
  "api-key",
  "token",
  "access_token",
  "refresh_token",
  "id_token",
  "auth",
  "authorization",
  "password",
  "passwd",
  "pass",
  "pwd",
  "secret",
  "client_secret",
  "sig",
  "signature",
  "x-amz-signature",
  "x-amz-credential",
  "x-amz-security-token",
  "sas",
  "code",
  "session",
  "sessionid",
  "credential",
  "credentials"
])
const secretWords = /(key|token|secret|passw|pwd|sig|auth|credential|session)/i

/** Whether a query parameter's value is a secret, by its key. */
const isSecretKey = (key: string): boolean => {
  const plain = safeDecode(key).toLowerCase()
  return secretKeys.has(plain) || secretWords.test(plain)
}

const safeDecode = (text: string): string => {
  try {
    return decodeURIComponent(text)
  } catch {
    return text
  }
}

const queryPair = /([?&;])([^=&#;\s]+)=([^&#;\s]*)/g

/**
 * One URL (or URL-like text) with its password and secret query values replaced by `<redacted>`; the rest as given.
 * Contract: the result never contains the password of the userinfo or the value of a query parameter
 * `isSecretKey` names, whether or not the text parses as a URL.
 */
export const redactUrl = (text: string): string => {
  let out = text
  const scheme = /^[a-z][a-z0-9+.-]*:\/\//i.exec(text)?.[0]
  if (scheme !== undefined) {
    const rest = text.slice(scheme.length)
    const end = [rest.indexOf("/"), rest.indexOf("?"), rest.indexOf("#")].filter((i) => i >= 0)
    const authority = rest.slice(0, end.length === 0 ? rest.length : Math.min(...end))
    const colon = authority.indexOf(":")
    // `user:password@host`; a password with an unencoded `/`, `?` or `#` ends the authority early (`u:pa/ss@host`):
    // then what follows the colon is no port, and the password runs to the last `@`.
    const at = authority.includes("@")
      ? authority.lastIndexOf("@")
      : colon >= 0 && !/^\d*$/.test(authority.slice(colon + 1))
      ? rest.lastIndexOf("@")
      : -1
    if (at >= 0 && colon >= 0 && colon < at) out = `${scheme}${rest.slice(0, colon)}:${marker}${rest.slice(at)}`
  }
  return out.replace(queryPair, (all, sep: string, key: string) => isSecretKey(key) ? `${sep}${key}=${marker}` : all)
}

const urlInText = /\b[a-z][a-z0-9+.-]*:\/\/[^\s"'<>`]+/gi
const keywordPassword = /\b(password|passwd|pwd)\s*=\s*('[^']*'|"[^"]*"|[^\s&;]+)/gi

/**
 * Free text (an error message, a command line) with every URL in it redacted (`redactUrl`), and `password=…`
 * keyword settings (a PostgreSQL connection string's) too.
 */
export const redactText = (text: string): string =>
  text.replace(urlInText, (url) => redactUrl(url)).replace(keywordPassword, (_all, key: string) => `${key}=${marker}`)
