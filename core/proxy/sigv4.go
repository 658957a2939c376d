package proxy

import (
	"bytes"
	"cmp"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
)

// An AWS login never sends its secret: each request carries a signature made with it
// (Signature Version 4: an HMAC over the request's method, path, query, the headers it names
// and its body's hash). So the sandbox holds a stand-in secret and signs with it, and the
// proxy, on a request to AWS with the login's access key, first checks that signature with
// the stand-in (which proves it reads the request as the program signed it), then signs the
// same request again with the real secret. A session token, sent in a header, is replaced
// with the real one before that. What cannot be checked is refused, and nothing is sent: a
// request signed otherwise (SigV4a, signed upload chunks, a presigned URL).

// SigV4 is an AWS login's keys: the access key's id, which the sandbox holds as it is, its
// secret and its session token ("" for none), each with the stand-in the sandbox holds.
type SigV4 struct {
	AccessKeyID           string
	StandInSecret, Secret string
	StandInToken, Token   string
	// EKSClusters, for a login bound to an EKS cluster's server, are the names of the
	// clusters whose bearer tokens (k8s-aws-v1: an STS request presigned with the stand-in,
	// for the cluster's name) are signed again on their way there.
	EKSClusters []string
}

const (
	sigV4Algorithm = "AWS4-HMAC-SHA256"
	// maxSignedBody bounds a body the proxy hashes itself (a request that names no hash of
	// its body, as services other than S3 send their JSON or form bodies).
	maxSignedBody = 16 << 20
	// emptyHash is the SHA-256 of nothing.
	emptyHash = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
)

// resign signs req, on its way to host, again with the real secret of the AWS login among
// logins whose access key signed it, after checking the signature it carries with that
// login's stand-in. It returns the login it re-signed for ("" for none: the request is not
// signed with one of these keys and goes as it is), or why the request must not go.
func resign(req *http.Request, logins []StandIn, host string) (string, string) {
	auth, query := req.Header.Values("Authorization"), req.URL.RawQuery
	login, why := resignFor(req, logins)
	if login != "" && !sameHost(req.Host, host) {
		req.Header["Authorization"], req.URL.RawQuery = auth, query
		// A signature is for the host the request names: made for another, it would reach
		// this one, which may be anyone's (an EC2 instance's name is under amazonaws.com).
		return "", "the request names the host " + strconv.Quote(req.Host) + " but goes to " + host + "; OpenWorker signs a request only for the host it goes to"
	}
	return login, why
}

// sameHost says whether the Host header h names host (any port).
func sameHost(h, host string) bool {
	if name, _, err := net.SplitHostPort(h); err == nil {
		h = name
	}
	return strings.EqualFold(strings.Trim(h, "[]"), host)
}

// resignFor is resign, whatever the host.
func resignFor(req *http.Request, logins []StandIn) (string, string) {
	var keys []*SigV4
	login := ""
	for _, l := range logins {
		if l.SigV4 != nil {
			keys = append(keys, l.SigV4)
			login = cmp.Or(login, l.Login)
		}
	}
	if len(keys) == 0 {
		return "", ""
	}
	if q := req.URL.Query().Get("X-Amz-Credential"); q != "" {
		akid, _, _ := strings.Cut(q, "/")
		if i := slices.IndexFunc(keys, func(k *SigV4) bool { return k.AccessKeyID == akid }); i >= 0 {
			return resignQuery(req, keys[i], login)
		}
	}
	auth := req.Header.Get("Authorization")
	scheme, params, _ := strings.Cut(auth, " ")
	if tok, ok := strings.CutPrefix(params, eksTokenPrefix); ok && strings.EqualFold(scheme, "Bearer") {
		return resignEKSToken(req, tok, logins, login)
	}
	cred, signedHeaders, signature := sigV4Params(params)
	akid, scope, _ := strings.Cut(cred, "/")
	i := slices.IndexFunc(keys, func(k *SigV4) bool { return k.AccessKeyID == akid })
	if i < 0 {
		return "", ""
	}
	k := keys[i]
	if scheme != sigV4Algorithm {
		return "", "the request is signed with " + strconv.Quote(scheme) + " with the " + login + " login's stand-in; OpenWorker signs again only " + sigV4Algorithm
	}
	date, region, service, ok := scopeOf(scope)
	if !ok || signedHeaders == "" || signature == "" {
		return "", "the " + login + " login's signature does not name its scope and headers as " + sigV4Algorithm + " does"
	}
	amzDate := req.Header.Get("X-Amz-Date")
	if amzDate == "" || !strings.HasPrefix(amzDate, date) {
		return "", "the request signed with the " + login + " login's stand-in has no X-Amz-Date of its scope's day"
	}
	payload := req.Header.Get("X-Amz-Content-Sha256")
	switch {
	case strings.HasPrefix(payload, "STREAMING-AWS4-HMAC-SHA256") || strings.HasPrefix(payload, "STREAMING-AWS4-ECDSA"):
		return "", "the request's body is sent in signed chunks (" + payload + "), which OpenWorker does not sign again; turn payload signing off (the AWS CLI and SDKs sign only the headers over https by default)"
	case payload == "":
		h, why := hashBody(req)
		if why != "" {
			return "", why
		}
		payload = h
	}
	names := strings.Split(signedHeaders, ";")
	query := canonicalQuery(req.URL.RawQuery)
	var uri string
	for _, u := range canonicalPaths(req, service) {
		creq := canonicalRequest(req, u, query, names, payload)
		if hmac.Equal([]byte(sigV4(k.StandInSecret, date, region, service, amzDate, creq)), []byte(signature)) {
			uri = u
			break
		}
	}
	if uri == "" {
		return "", "the request's signature with the " + login + " login's stand-in did not check out as OpenWorker reads the request, so it cannot tell what was signed and signs nothing with the real secret"
	}
	if k.StandInToken != "" && req.Header.Get("X-Amz-Security-Token") == k.StandInToken {
		req.Header.Set("X-Amz-Security-Token", k.Token)
	}
	creq := canonicalRequest(req, uri, query, names, payload)
	req.Header.Set("Authorization", sigV4Algorithm+" Credential="+cred+", SignedHeaders="+signedHeaders+", Signature="+sigV4(k.Secret, date, region, service, amzDate, creq))
	return login, ""
}

// VerifySigV4 checks req's SigV4 signature (its Authorization header) against secret, as
// AWS would; loopback servers that stand in for AWS use it. It reads and puts back the body
// of a request that names no hash of it.
func VerifySigV4(req *http.Request, secret string) error {
	if q := req.URL.Query(); q.Get("X-Amz-Signature") != "" {
		_, scope, _ := strings.Cut(q.Get("X-Amz-Credential"), "/")
		date, region, service, ok := scopeOf(scope)
		if q.Get("X-Amz-Algorithm") != sigV4Algorithm || !ok {
			return errors.New("not signed with " + sigV4Algorithm)
		}
		payload := emptyHash
		if service == "s3" {
			payload = "UNSIGNED-PAYLOAD"
		}
		creq := canonicalRequest(req, canonicalPaths(req, service)[0], canonicalQuery(withoutParam(req.URL.RawQuery, "X-Amz-Signature")), strings.Split(q.Get("X-Amz-SignedHeaders"), ";"), payload)
		if !hmac.Equal([]byte(sigV4(secret, date, region, service, q.Get("X-Amz-Date"), creq)), []byte(q.Get("X-Amz-Signature"))) {
			return errors.New("the signature does not match")
		}
		return nil
	}
	scheme, params, _ := strings.Cut(req.Header.Get("Authorization"), " ")
	cred, signedHeaders, signature := sigV4Params(params)
	_, scope, _ := strings.Cut(cred, "/")
	date, region, service, ok := scopeOf(scope)
	if scheme != sigV4Algorithm || !ok || signedHeaders == "" {
		return errors.New("not signed with " + sigV4Algorithm)
	}
	payload := req.Header.Get("X-Amz-Content-Sha256")
	if payload == "" {
		h, why := hashBody(req)
		if why != "" {
			return errors.New(why)
		}
		payload = h
	}
	creq := canonicalRequest(req, canonicalPaths(req, service)[0], canonicalQuery(req.URL.RawQuery), strings.Split(signedHeaders, ";"), payload)
	if !hmac.Equal([]byte(sigV4(secret, date, region, service, req.Header.Get("X-Amz-Date"), creq)), []byte(signature)) {
		return errors.New("the signature does not match")
	}
	return nil
}

// resignQuery is resign for a request signed in its URL (a presigned URL, as aws s3 presign
// makes): the signature is a query parameter, the rest of the query is signed, and the body
// is not (S3) or is empty.
func resignQuery(req *http.Request, k *SigV4, login string) (string, string) {
	q := req.URL.Query()
	if alg := q.Get("X-Amz-Algorithm"); alg != sigV4Algorithm {
		return "", "the request is signed in its URL with " + strconv.Quote(alg) + " with the " + login + " login's stand-in; OpenWorker signs again only " + sigV4Algorithm
	}
	_, scope, _ := strings.Cut(q.Get("X-Amz-Credential"), "/")
	date, region, service, ok := scopeOf(scope)
	signedHeaders, signature, amzDate := q.Get("X-Amz-SignedHeaders"), q.Get("X-Amz-Signature"), q.Get("X-Amz-Date")
	if !ok || signedHeaders == "" || signature == "" || !strings.HasPrefix(amzDate, date) {
		return "", "the " + login + " login's signature in the URL does not name its scope, headers and time as " + sigV4Algorithm + " does"
	}
	payloads := []string{"UNSIGNED-PAYLOAD", emptyHash}
	if h := q.Get("X-Amz-Content-Sha256"); h != "" {
		payloads = []string{h}
	}
	names := strings.Split(signedHeaders, ";")
	raw := withoutParam(req.URL.RawQuery, "X-Amz-Signature")
	query := canonicalQuery(raw)
	uri, payload := "", ""
found:
	for _, u := range canonicalPaths(req, service) {
		for _, pl := range payloads {
			creq := canonicalRequest(req, u, query, names, pl)
			if hmac.Equal([]byte(sigV4(k.StandInSecret, date, region, service, amzDate, creq)), []byte(signature)) {
				uri, payload = u, pl
				break found
			}
		}
	}
	if uri == "" {
		return "", "the signature in the URL with the " + login + " login's stand-in did not check out as OpenWorker reads the request, so it cannot tell what was signed and signs nothing with the real secret"
	}
	if k.StandInToken != "" && q.Get("X-Amz-Security-Token") == k.StandInToken {
		raw = withoutParam(raw, "X-Amz-Security-Token") + "&X-Amz-Security-Token=" + url.QueryEscape(k.Token)
	}
	creq := canonicalRequest(req, uri, canonicalQuery(raw), names, payload)
	req.URL.RawQuery = raw + "&X-Amz-Signature=" + sigV4(k.Secret, date, region, service, amzDate, creq)
	return login, ""
}

// eksTokenPrefix begins an EKS bearer token; base64url of a presigned STS URL follows.
const eksTokenPrefix = "k8s-aws-v1."

// resignEKSToken signs again the presigned STS request an EKS bearer token is (tok, after
// its prefix) when it was presigned with a stand-in of logins: for each cluster name the
// logins bound here know, it checks the signature as STS will (the name is a signed header),
// and on a match puts the token signed with the real secret in the Authorization header.
func resignEKSToken(req *http.Request, tok string, logins []StandIn, login string) (string, string) {
	raw, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(tok, "="))
	if err != nil {
		return "", ""
	}
	u, err := url.Parse(string(raw))
	if err != nil || u.Scheme != "https" || !strings.HasPrefix(u.Hostname(), "sts.") || !strings.HasSuffix(u.Hostname(), ".amazonaws.com") {
		return "", ""
	}
	akid, _, _ := strings.Cut(u.Query().Get("X-Amz-Credential"), "/")
	var names []string
	var key *SigV4
	for _, l := range logins {
		if l.SigV4 != nil && l.SigV4.AccessKeyID == akid {
			key = l.SigV4
			for _, n := range l.SigV4.EKSClusters {
				if !slices.Contains(names, n) {
					names = append(names, n)
				}
			}
		}
	}
	if key == nil {
		return "", ""
	}
	why := "the EKS token made with the " + login + " login's stand-in is for no cluster OpenWorker knows this server by, so it cannot be signed again"
	for _, n := range names {
		sts := &http.Request{Method: http.MethodGet, URL: u, Host: u.Host, RequestURI: u.RequestURI(), Header: http.Header{"X-K8s-Aws-Id": {n}}}
		signed, w := resignQuery(sts, key, login)
		if signed == "" {
			why = w
			continue
		}
		req.Header.Set("Authorization", "Bearer "+eksTokenPrefix+base64.RawURLEncoding.EncodeToString([]byte(sts.URL.String())))
		return signed, ""
	}
	return "", why
}

// withoutParam is the raw query without the parameter named key.
func withoutParam(raw, key string) string {
	var kept []string
	for _, kv := range strings.Split(raw, "&") {
		k, _, _ := strings.Cut(kv, "=")
		if dk, err := url.QueryUnescape(k); kv == "" || err == nil && dk == key {
			continue
		}
		kept = append(kept, kv)
	}
	return strings.Join(kept, "&")
}

// sigV4Params reads the Credential, SignedHeaders and Signature of a SigV4 Authorization.
func sigV4Params(s string) (cred, signed, sig string) {
	for _, p := range strings.Split(s, ",") {
		k, v, _ := strings.Cut(strings.TrimSpace(p), "=")
		switch k {
		case "Credential":
			cred = v
		case "SignedHeaders":
			signed = v
		case "Signature":
			sig = v
		}
	}
	return
}

// hashBody reads req's body (up to maxSignedBody), puts it back for sending, and returns its
// SHA-256 in hex, or why it cannot.
func hashBody(req *http.Request) (string, string) {
	if req.Body == nil || req.Body == http.NoBody {
		return emptyHash, ""
	}
	b, err := io.ReadAll(io.LimitReader(req.Body, maxSignedBody+1))
	if err != nil {
		return "", "the body of the request could not be read (" + err.Error() + ")"
	}
	if len(b) > maxSignedBody {
		return "", "the request names no hash of its body, and its body is larger than " + strconv.Itoa(maxSignedBody>>20) + " MiB, more than OpenWorker hashes to sign it again"
	}
	req.Body = io.NopCloser(bytes.NewReader(b))
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:]), ""
}

// scopeOf reads a signature's scope, DATE/REGION/SERVICE/aws4_request.
func scopeOf(scope string) (date, region, service string, ok bool) {
	parts := strings.Split(scope, "/")
	if len(parts) != 4 || parts[3] != "aws4_request" {
		return "", "", "", false
	}
	return parts[0], parts[1], parts[2], true
}

// canonicalPaths are the readings of req's path a signature for service may have made,
// the one its service uses first: every service but S3 signs its path encoded once more.
func canonicalPaths(req *http.Request, service string) []string {
	if service == "s3" {
		return []string{canonicalPath(req, false)}
	}
	return []string{canonicalPath(req, true), canonicalPath(req, false)}
}

// canonicalPath is the request's path as SigV4 signs it: as sent, or encoded once more.
func canonicalPath(req *http.Request, again bool) string {
	p, _, _ := strings.Cut(req.RequestURI, "?")
	if p == "" || !strings.HasPrefix(p, "/") {
		p = req.URL.EscapedPath()
	}
	if p == "" {
		p = "/"
	}
	if !again {
		return p
	}
	segs := strings.Split(p, "/")
	for i, s := range segs {
		segs[i] = awsEscape(s)
	}
	return strings.Join(segs, "/")
}

// canonicalQuery is the raw query as SigV4 signs it: each name and value decoded and
// encoded again as AWS does, sorted.
func canonicalQuery(raw string) string {
	if raw == "" {
		return ""
	}
	var pairs []string
	for _, kv := range strings.Split(raw, "&") {
		if kv == "" {
			continue
		}
		k, v, _ := strings.Cut(kv, "=")
		if dk, err := url.QueryUnescape(k); err == nil {
			k = dk
		}
		if dv, err := url.QueryUnescape(v); err == nil {
			v = dv
		}
		pairs = append(pairs, awsEscape(k)+"="+awsEscape(v))
	}
	slices.Sort(pairs)
	return strings.Join(pairs, "&")
}

// awsEscape percent-encodes every byte but letters, digits and -_.~.
func awsEscape(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if 'A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-' || c == '_' || c == '.' || c == '~' {
			b.WriteByte(c)
			continue
		}
		b.WriteString("%" + strings.ToUpper(hex.EncodeToString([]byte{c})))
	}
	return b.String()
}

// canonicalRequest is SigV4's reading of req, with uri, query and payload already made.
func canonicalRequest(req *http.Request, uri, query string, names []string, payload string) string {
	var b strings.Builder
	b.WriteString(req.Method + "\n" + uri + "\n" + query + "\n")
	for _, n := range names {
		b.WriteString(n + ":" + headerValue(req, n) + "\n")
	}
	b.WriteString("\n" + strings.Join(names, ";") + "\n" + payload)
	return b.String()
}

// headerValue is the value of the header name (lowercase) as SigV4 signs it: its values
// joined by commas, each trimmed, with runs of spaces made one.
func headerValue(req *http.Request, name string) string {
	var vs []string
	switch name {
	case "host":
		vs = []string{req.Host}
	case "content-length":
		vs = req.Header.Values(name)
		if len(vs) == 0 && req.ContentLength >= 0 && req.Body != nil && req.Body != http.NoBody {
			vs = []string{strconv.FormatInt(req.ContentLength, 10)}
		}
	case "transfer-encoding":
		vs = req.TransferEncoding
	default:
		vs = req.Header.Values(name)
	}
	vs = slices.Clone(vs)
	for i, v := range vs {
		vs[i] = strings.Join(strings.Fields(v), " ")
	}
	return strings.Join(vs, ",")
}

// sigV4 is the signature of the canonical request creq with secret, for the day date (as
// YYYYMMDD), region and service, at amzDate.
func sigV4(secret, date, region, service, amzDate, creq string) string {
	sum := sha256.Sum256([]byte(creq))
	toSign := sigV4Algorithm + "\n" + amzDate + "\n" + date + "/" + region + "/" + service + "/aws4_request\n" + hex.EncodeToString(sum[:])
	key := []byte("AWS4" + secret)
	for _, s := range []string{date, region, service, "aws4_request"} {
		key = hmacSHA256(key, s)
	}
	return hex.EncodeToString(hmacSHA256(key, toSign))
}

func hmacSHA256(key []byte, data string) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(data))
	return m.Sum(nil)
}

// errNoSigV4 is for a SigV4 login without what it needs.
var errNoSigV4 = errors.New("an AWS login needs its access key's id, and a stand-in secret distinct from its secret")

// checkSigV4 says whether k can be a stand-in login.
func checkSigV4(k *SigV4) error {
	if k.AccessKeyID == "" || k.Secret == "" || k.StandInSecret == "" || k.Secret == k.StandInSecret ||
		(k.Token == "") != (k.StandInToken == "") || k.Token != "" && k.Token == k.StandInToken {
		return errNoSigV4
	}
	return nil
}
