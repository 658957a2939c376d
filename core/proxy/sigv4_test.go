package proxy

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
)

// The signer against AWS's own published examples: the test suite's get-vanilla, and the
// IAM ListUsers request of the signing process's walk-through.
func TestSigV4AgainstAWSExamples(t *testing.T) {
	const secret = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"
	cases := []struct {
		name, raw, service, signed, want string
	}{
		{"get_vanilla", "GET / HTTP/1.1\r\nHost: example.amazonaws.com\r\nX-Amz-Date: 20150830T123600Z\r\n\r\n",
			"service", "host;x-amz-date", "5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31"},
		{"iam_list_users", "GET /?Action=ListUsers&Version=2010-05-08 HTTP/1.1\r\nHost: iam.amazonaws.com\r\nContent-Type: application/x-www-form-urlencoded; charset=utf-8\r\nX-Amz-Date: 20150830T123600Z\r\n\r\n",
			"iam", "content-type;host;x-amz-date", "5d672d79c15b13162d9279b0855cfba6789a8edb4c82c400e06b5924a6f2b5d7"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			req, err := http.ReadRequest(bufio.NewReader(strings.NewReader(c.raw)))
			if err != nil {
				t.Fatal(err)
			}
			creq := canonicalRequest(req, canonicalPath(req, true), canonicalQuery(req.URL.RawQuery), strings.Split(c.signed, ";"), emptyHash)
			if got := sigV4(secret, "20150830", "us-east-1", c.service, "20150830T123600Z", creq); got != c.want {
				t.Fatalf("signature %s, want %s; canonical request:\n%s", got, c.want, creq)
			}
		})
	}
}

const (
	awsKeyID         = "AKIDEXAMPLE12345678X"
	awsStandInSecret = "standinSTANDINstandinSTANDINstandin12345"
	awsSecret        = "REALrealREALrealREALrealREALrealREAL1234"
	awsStandInToken  = "tokenSTANDINtokenSTANDIN+/token=="
	awsToken         = "tokenREALREALtokenREALREALt+/tok=="
)

// signAs signs req as an AWS client would, with secret, for service in us-east-1.
func signAs(req *http.Request, secret, service string, headers ...string) {
	req.Header.Set("X-Amz-Date", "20261206T101500Z")
	names := append([]string{"host", "x-amz-date"}, headers...)
	for i := 1; i < len(names); i++ {
		for j := i; j > 0 && names[j] < names[j-1]; j-- {
			names[j], names[j-1] = names[j-1], names[j]
		}
	}
	payload := req.Header.Get("X-Amz-Content-Sha256")
	if payload == "" {
		payload, _ = hashBody(req)
	}
	creq := canonicalRequest(req, canonicalPath(req, service != "s3"), canonicalQuery(req.URL.RawQuery), names, payload)
	scope := "20261206/us-east-1/" + service + "/aws4_request"
	req.Header.Set("Authorization", sigV4Algorithm+" Credential="+awsKeyID+"/"+scope+", SignedHeaders="+strings.Join(names, ";")+", Signature="+sigV4(secret, "20261206", "us-east-1", service, "20261206T101500Z", creq))
}

// presignAs signs req in its URL as aws s3 presign does, with secret, for S3 in us-east-1.
func presignAs(req *http.Request, secret string) {
	q := "X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=" + awsKeyID + "%2F20261206%2Fus-east-1%2Fs3%2Faws4_request&X-Amz-Date=20261206T101500Z&X-Amz-Expires=3600&X-Amz-SignedHeaders=host"
	if req.URL.RawQuery != "" {
		q = req.URL.RawQuery + "&" + q
	}
	req.URL.RawQuery = q
	req.RequestURI = req.URL.RequestURI()
	creq := canonicalRequest(req, canonicalPath(req, false), canonicalQuery(q), []string{"host"}, "UNSIGNED-PAYLOAD")
	req.URL.RawQuery += "&X-Amz-Signature=" + sigV4(secret, "20261206", "us-east-1", "s3", "20261206T101500Z", creq)
	req.RequestURI = req.URL.RequestURI()
}

// readSigned reads raw as the proxy would, signed with secret as an AWS client would.
func readSigned(t *testing.T, raw, secret, service string, headers ...string) *http.Request {
	t.Helper()
	req, err := http.ReadRequest(bufio.NewReader(strings.NewReader(raw)))
	if err != nil {
		t.Fatal(err)
	}
	signAs(req, secret, service, headers...)
	return req
}

// checkSignedWith fails unless req's signature is good for secret.
func checkSignedWith(t *testing.T, req *http.Request, secret, service string) {
	t.Helper()
	_, signed, sig := sigV4Params(strings.TrimPrefix(req.Header.Get("Authorization"), sigV4Algorithm+" "))
	payload := req.Header.Get("X-Amz-Content-Sha256")
	if payload == "" {
		payload, _ = hashBody(req)
	}
	creq := canonicalRequest(req, canonicalPath(req, service != "s3"), canonicalQuery(req.URL.RawQuery), strings.Split(signed, ";"), payload)
	if want := sigV4(secret, "20261206", "us-east-1", service, "20261206T101500Z", creq); sig != want {
		t.Fatalf("signature %s, want %s for the secret %s…", sig, want, secret[:8])
	}
}

func TestResignPutsTheRealSecretsSignatureOn(t *testing.T) {
	logins := []StandIn{{Login: "aws-credentials", Host: "amazonaws.com", Port: 443,
		SigV4: &SigV4{AccessKeyID: awsKeyID, StandInSecret: awsStandInSecret, Secret: awsSecret, StandInToken: awsStandInToken, Token: awsToken}}}

	// A JSON call that names no hash of its body, with a session token and an encoded path.
	body := `{"Bucket":"my bucket"}`
	req := readSigned(t, "POST /a%20b/c HTTP/1.1\r\nHost: sts.us-east-1.amazonaws.com\r\nContent-Type: application/x-amz-json-1.1\r\nContent-Length: "+
		strconv.Itoa(len(body))+"\r\nX-Amz-Security-Token: "+awsStandInToken+"\r\n\r\n"+body,
		awsStandInSecret, "sts", "content-type", "x-amz-security-token")
	login, why := resign(req, logins, hostname(req.Host))
	if login != "aws-credentials" || why != "" {
		t.Fatalf("resign: %q %q", login, why)
	}
	if req.Header.Get("X-Amz-Security-Token") != awsToken {
		t.Fatalf("token %q", req.Header.Get("X-Amz-Security-Token"))
	}
	checkSignedWith(t, req, awsSecret, "sts")
	if b, _ := io.ReadAll(req.Body); string(b) != body {
		t.Fatalf("the body sent on: %q", b)
	}

	// S3 with its payload hash in a header, a query to sort and encode, its path as sent.
	req = readSigned(t, "GET /my-bucket/some%20key?versionId=3&acl HTTP/1.1\r\nHost: s3.amazonaws.com\r\nX-Amz-Content-Sha256: UNSIGNED-PAYLOAD\r\n\r\n",
		awsStandInSecret, "s3", "x-amz-content-sha256")
	if login, why := resign(req, logins, hostname(req.Host)); login == "" || why != "" {
		t.Fatalf("resign: %q %q", login, why)
	}
	checkSignedWith(t, req, awsSecret, "s3")

	// A presigned URL: its signature, in the query, is replaced by the real secret's.
	req, _ = http.ReadRequest(bufio.NewReader(strings.NewReader("GET /my-bucket/report.csv?versionId=7 HTTP/1.1\r\nHost: my-bucket.s3.amazonaws.com\r\n\r\n")))
	presignAs(req, awsStandInSecret)
	if login, why := resign(req, logins, hostname(req.Host)); login == "" || why != "" {
		t.Fatalf("resign a presigned URL: %q %q", login, why)
	}
	req.RequestURI = req.URL.RequestURI()
	if err := VerifySigV4(req, awsSecret); err != nil || strings.Count(req.URL.RawQuery, "X-Amz-Signature=") != 1 || req.URL.Query().Get("versionId") != "7" {
		t.Fatalf("the presigned URL sent on: %v %s", err, req.URL.RawQuery)
	}

	// Signed for one host, sent to another (an EC2 instance's name is under amazonaws.com
	// too): refused, unsigned.
	req = readSigned(t, "GET /?Action=GetCallerIdentity HTTP/1.1\r\nHost: sts.amazonaws.com\r\n\r\n", awsStandInSecret, "sts")
	signedAs := req.Header.Get("Authorization")
	if login, why := resign(req, logins, "ec2-203-0-113-9.compute-1.amazonaws.com"); login != "" || !strings.Contains(why, `names the host "sts.amazonaws.com" but goes to ec2-203-0-113-9.compute-1.amazonaws.com`) ||
		req.Header.Get("Authorization") != signedAs {
		t.Fatalf("another host: %q %q", login, why)
	}

	// Not this login's key: it goes as it is.
	req = readSigned(t, "GET / HTTP/1.1\r\nHost: sts.amazonaws.com\r\n\r\n", awsStandInSecret, "sts")
	req.Header.Set("Authorization", strings.Replace(req.Header.Get("Authorization"), awsKeyID, "AKIDSOMEONEELSE00000", 1))
	before := req.Header.Get("Authorization")
	if login, why := resign(req, logins, hostname(req.Host)); login != "" || why != "" || req.Header.Get("Authorization") != before {
		t.Fatalf("another key's request: %q %q", login, why)
	}
}

func TestResignRefusesWhatItCannotCheck(t *testing.T) {
	logins := []StandIn{{Login: "aws-credentials", Host: "amazonaws.com", Port: 443,
		SigV4: &SigV4{AccessKeyID: awsKeyID, StandInSecret: awsStandInSecret, Secret: awsSecret}}}
	cases := []struct {
		name string
		req  func() *http.Request
		want string
	}{
		{"tampered", func() *http.Request {
			r := readSigned(t, "GET /?Action=GetCallerIdentity HTTP/1.1\r\nHost: sts.amazonaws.com\r\n\r\n", awsStandInSecret, "sts")
			r.URL.RawQuery = "Action=DeleteUser"
			return r
		}, "did not check out as OpenWorker reads the request"},
		{"signed_with_something_else", func() *http.Request {
			return readSigned(t, "GET / HTTP/1.1\r\nHost: sts.amazonaws.com\r\n\r\n", "some other secret entirely", "sts")
		}, "did not check out"},
		{"signed_chunks", func() *http.Request {
			return readSigned(t, "PUT /b/k HTTP/1.1\r\nHost: s3.amazonaws.com\r\nX-Amz-Content-Sha256: STREAMING-AWS4-HMAC-SHA256-PAYLOAD\r\nContent-Length: 3\r\n\r\nabc", awsStandInSecret, "s3", "x-amz-content-sha256")
		}, "signed chunks"},
		{"presigned_then_changed", func() *http.Request {
			r, _ := http.ReadRequest(bufio.NewReader(strings.NewReader("GET /b/report.csv HTTP/1.1\r\nHost: s3.amazonaws.com\r\n\r\n")))
			presignAs(r, awsStandInSecret)
			r.URL.Path, r.RequestURI = "/b/payroll.csv", strings.Replace(r.RequestURI, "report", "payroll", 1)
			return r
		}, "the signature in the URL with the aws-credentials login's stand-in did not check out"},
		{"presigned_incomplete", func() *http.Request {
			r, _ := http.ReadRequest(bufio.NewReader(strings.NewReader("GET /b/k?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=" + awsKeyID + "%2F20261206%2Fus-east-1%2Fs3%2Faws4_request&X-Amz-Signature=00 HTTP/1.1\r\nHost: s3.amazonaws.com\r\n\r\n")))
			return r
		}, "does not name its scope, headers and time"},
		{"sigv4a", func() *http.Request {
			r := readSigned(t, "GET / HTTP/1.1\r\nHost: s3.amazonaws.com\r\n\r\n", awsStandInSecret, "s3")
			r.Header.Set("Authorization", strings.Replace(r.Header.Get("Authorization"), sigV4Algorithm, "AWS4-ECDSA-P256-SHA256", 1))
			return r
		}, `signed with "AWS4-ECDSA-P256-SHA256"`},
		{"too_large_to_hash", func() *http.Request {
			r := readSigned(t, "POST / HTTP/1.1\r\nHost: sts.amazonaws.com\r\n\r\n", awsStandInSecret, "sts")
			r.Body = io.NopCloser(io.LimitReader(zeros{}, maxSignedBody+1))
			return r
		}, "larger than 16 MiB"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			req := c.req()
			before := req.Header.Get("Authorization")
			login, why := resign(req, logins, hostname(req.Host))
			if login != "" || !strings.Contains(why, c.want) {
				t.Fatalf("got %q %q, want a refusal saying %q", login, why, c.want)
			}
			if req.Header.Get("Authorization") != before {
				t.Fatal("a refused request was signed")
			}
		})
	}
}

// hostname is the host a Host header names: where a test's request goes.
func hostname(h string) string {
	if name, _, err := net.SplitHostPort(h); err == nil {
		return name
	}
	return h
}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

// Through the proxy: an AWS login bound to *.amazonaws.com reaches any AWS host with the
// real secret's signature; a request whose signature does not check out is refused with why,
// and its host sees nothing.
func TestAWSStandInThroughTheProxy(t *testing.T) {
	r := newStandInRigWith(t, []StandIn{{Login: "aws-credentials", Host: "*.amazonaws.com", Port: 443,
		SigV4: &SigV4{AccessKeyID: awsKeyID, StandInSecret: awsStandInSecret, Secret: awsSecret}}}, "*.amazonaws.com:443")
	for _, name := range []string{"sts.amazonaws.com", "my-bucket.s3.us-west-2.amazonaws.com"} {
		r.origin(name, nil, func(w http.ResponseWriter, req *http.Request) {
			service := "sts"
			if strings.Contains(req.Host, ".s3.") {
				service = "s3"
			}
			req.RequestURI = req.URL.RequestURI()
			checkSignedWith(t, req, awsSecret, service)
			io.WriteString(w, "signed by the real secret")
		})
	}
	c := r.client(true)
	for _, u := range []struct{ url, service string }{
		{"https://sts.amazonaws.com/?Action=GetCallerIdentity&Version=2011-06-15", "sts"},
		{"https://my-bucket.s3.us-west-2.amazonaws.com/photos/cat.jpg", "s3"},
	} {
		req, _ := http.NewRequest("GET", u.url, nil)
		req.RequestURI = req.URL.RequestURI()
		req.Host = req.URL.Host
		if u.service == "s3" {
			req.Header.Set("X-Amz-Content-Sha256", "UNSIGNED-PAYLOAD")
			signAs(req, awsStandInSecret, "s3", "x-amz-content-sha256")
		} else {
			signAs(req, awsStandInSecret, "sts")
		}
		req.RequestURI = ""
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || string(b) != "signed by the real secret" {
			t.Fatalf("%s: %d %s", u.url, resp.StatusCode, b)
		}
	}
	// Signed with the stand-in, then changed: refused, and sts never sees it.
	before := len(r.saw("sts.amazonaws.com"))
	req, _ := http.NewRequest("GET", "https://sts.amazonaws.com/?Action=GetCallerIdentity", nil)
	req.RequestURI, req.Host = req.URL.RequestURI(), req.URL.Host
	signAs(req, awsStandInSecret, "sts")
	req.RequestURI = ""
	req.URL.RawQuery = "Action=CreateAccessKey"
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden || resp.Header.Get("X-Proxy-Error") != StandInNotSigned || !strings.Contains(string(b), "did not check out") ||
		!strings.Contains(string(b), "or share aws-credentials by copying it") {
		t.Fatalf("a changed request: %d %q %s", resp.StatusCode, resp.Header.Get("X-Proxy-Error"), b)
	}
	if len(r.saw("sts.amazonaws.com")) != before {
		t.Fatal("sts.amazonaws.com got the changed request")
	}
	if refs := r.refused(); len(refs) != 1 || refs[0].Header != StandInNotSigned || !strings.Contains(refs[0].Reason, "sts.amazonaws.com:443: the request's signature") {
		t.Fatalf("refusals: %+v", refs)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if strings.Join(r.subs, " ") != "aws-credentials@sts.amazonaws.com aws-credentials@my-bucket.s3.us-west-2.amazonaws.com" {
		t.Errorf("substitutions %q", r.subs)
	}
}

// BenchmarkResign is what checking a request's stand-in signature and signing it again
// costs the proxy: an S3 GET that names its payload's hash, and a JSON call whose body the
// proxy hashes itself.
func BenchmarkResign(b *testing.B) {
	logins := []StandIn{{Login: "aws-credentials", Host: "amazonaws.com", Port: 443,
		SigV4: &SigV4{AccessKeyID: awsKeyID, StandInSecret: awsStandInSecret, Secret: awsSecret}}}
	body := `{"FunctionName":"my-function","Payload":"` + strings.Repeat("x", 1024) + `"}`
	for _, c := range []struct{ name, raw, service string }{
		{"s3_get", "GET /my-bucket/photos/cat.jpg?versionId=3 HTTP/1.1\r\nHost: s3.amazonaws.com\r\nX-Amz-Content-Sha256: UNSIGNED-PAYLOAD\r\n\r\n", "s3"},
		{"json_1KiB", "POST /2015-03-31/functions/my-function/invocations HTTP/1.1\r\nHost: lambda.us-east-1.amazonaws.com\r\nContent-Type: application/json\r\nContent-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n" + body, "lambda"},
	} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				b.StopTimer()
				req, err := http.ReadRequest(bufio.NewReader(strings.NewReader(c.raw)))
				if err != nil {
					b.Fatal(err)
				}
				headers := []string{"content-type"}
				if c.service == "s3" {
					headers = []string{"x-amz-content-sha256"}
				}
				signAs(req, awsStandInSecret, c.service, headers...)
				b.StartTimer()
				if login, why := resign(req, logins, hostname(req.Host)); login == "" {
					b.Fatal(why)
				}
			}
		})
	}
}

// eksToken is the bearer token aws eks get-token makes for cluster, presigned with secret.
func eksToken(t *testing.T, secret, cluster string) string {
	t.Helper()
	req, err := http.ReadRequest(bufio.NewReader(strings.NewReader("GET /?Action=GetCallerIdentity&Version=2011-06-15&X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=" + awsKeyID +
		"%2F20261206%2Fus-east-1%2Fsts%2Faws4_request&X-Amz-Date=20261206T101500Z&X-Amz-Expires=60&X-Amz-SignedHeaders=host%3Bx-k8s-aws-id HTTP/1.1\r\nHost: sts.us-east-1.amazonaws.com\r\nX-K8s-Aws-Id: " + cluster + "\r\n\r\n")))
	if err != nil {
		t.Fatal(err)
	}
	creq := canonicalRequest(req, canonicalPath(req, true), canonicalQuery(req.URL.RawQuery), []string{"host", "x-k8s-aws-id"}, emptyHash)
	u := "https://sts.us-east-1.amazonaws.com" + req.RequestURI + "&X-Amz-Signature=" + sigV4(secret, "20261206", "us-east-1", "sts", "20261206T101500Z", creq)
	return eksTokenPrefix + base64.RawURLEncoding.EncodeToString([]byte(u))
}

// checkEKSToken fails unless tok is a presigned STS request for cluster signed with secret,
// as STS checks it.
func checkEKSToken(t *testing.T, tok, secret, cluster string) {
	t.Helper()
	raw, err := base64.RawURLEncoding.DecodeString(strings.TrimPrefix(tok, eksTokenPrefix))
	if err != nil {
		t.Fatal(err)
	}
	u, err := url.Parse(string(raw))
	if err != nil {
		t.Fatal(err)
	}
	req := &http.Request{Method: "GET", URL: u, Host: u.Host, RequestURI: u.RequestURI(), Header: http.Header{"X-K8s-Aws-Id": {cluster}}}
	if err := VerifySigV4(req, secret); err != nil {
		t.Fatalf("the token for %s: %v", cluster, err)
	}
}

// An EKS token (an STS request presigned with the stand-in, for the cluster's name) on its
// way to the cluster's server is signed again with the real secret, for a cluster the login
// knows there; one for another cluster is refused with why.
func TestResignEKSToken(t *testing.T) {
	logins := []StandIn{{Login: "aws-credentials", Host: "abc.gr7.us-east-1.eks.amazonaws.com", Port: 443,
		SigV4: &SigV4{AccessKeyID: awsKeyID, StandInSecret: awsStandInSecret, Secret: awsSecret, EKSClusters: []string{"staging", "demo"}}}}
	req, _ := http.ReadRequest(bufio.NewReader(strings.NewReader("GET /api/v1/namespaces/default/pods HTTP/1.1\r\nHost: abc.gr7.us-east-1.eks.amazonaws.com\r\n\r\n")))
	req.Header.Set("Authorization", "Bearer "+eksToken(t, awsStandInSecret, "demo"))
	if login, why := resign(req, logins, hostname(req.Host)); login != "aws-credentials" || why != "" {
		t.Fatalf("resign: %q %q", login, why)
	}
	checkEKSToken(t, strings.TrimPrefix(req.Header.Get("Authorization"), "Bearer "), awsSecret, "demo")

	req.Header.Set("Authorization", "Bearer "+eksToken(t, awsStandInSecret, "prod"))
	before := req.Header.Get("Authorization")
	if login, why := resign(req, logins, hostname(req.Host)); login != "" || !strings.Contains(why, "did not check out") || req.Header.Get("Authorization") != before {
		t.Fatalf("a token for another cluster: %q %q", login, why)
	}
	// Someone else's key, or not a token of AWS's: as it is.
	for _, a := range []string{"Bearer " + strings.Replace(eksToken(t, awsStandInSecret, "demo"), "k8s-aws-v1.", "k8s-aws-v1.x", 1), "Bearer k8s-aws-v1.bm90IGEgdXJs", "Bearer some-token"} {
		req.Header.Set("Authorization", a)
		if login, why := resign(req, logins, hostname(req.Host)); login != "" || why != "" || req.Header.Get("Authorization") != a {
			t.Fatalf("%q: %q %q", a, login, why)
		}
	}
}

// FuzzResign feeds arbitrary requests, as a sandboxed program may send them, to the AWS
// re-signer: no panic, and whatever it signs again verifies with the real secret and never
// with the stand-in.
func FuzzResign(f *testing.F) {
	f.Add("GET /?Action=GetCallerIdentity HTTP/1.1\r\nHost: sts.amazonaws.com\r\n\r\n", "sts", true)
	f.Add("PUT /b/k%2Fx?acl&versionId=1 HTTP/1.1\r\nHost: s3.amazonaws.com\r\nX-Amz-Content-Sha256: UNSIGNED-PAYLOAD\r\nContent-Length: 3\r\n\r\nabc", "s3", true)
	f.Add("GET /b/k?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIDEXAMPLE12345678X%2F20261206%2Fus-east-1%2Fs3%2Faws4_request&X-Amz-Signature=0 HTTP/1.1\r\nHost: s3.amazonaws.com\r\n\r\n", "s3", false)
	f.Add("GET / HTTP/1.1\r\nHost: x.eks.amazonaws.com\r\nAuthorization: Bearer k8s-aws-v1.aHR0cHM6Ly9zdHMuYW1hem9uYXdzLmNvbS8_WC1BbXotQ3JlZGVudGlhbD1BS0lERVhBTVBMRTEyMzQ1Njc4WA\r\n\r\n", "sts", false)
	logins := []StandIn{{Login: "aws-credentials", Host: "amazonaws.com", Port: 443,
		SigV4: &SigV4{AccessKeyID: awsKeyID, StandInSecret: awsStandInSecret, Secret: awsSecret, StandInToken: awsStandInToken, Token: awsToken, EKSClusters: []string{"demo"}}}}
	f.Fuzz(func(t *testing.T, raw, service string, sign bool) {
		req, err := http.ReadRequest(bufio.NewReader(strings.NewReader(raw)))
		if err != nil {
			return
		}
		if sign && service != "" && !strings.ContainsAny(service, "/\n") {
			signAs(req, awsStandInSecret, service)
		}
		body, _ := io.ReadAll(io.LimitReader(req.Body, 1<<20))
		req.Body = io.NopCloser(bytes.NewReader(body))
		login, why := resign(req, logins, hostname(req.Host))
		if login == "" || why != "" || strings.HasPrefix(req.Header.Get("Authorization"), "Bearer") || req.URL.Query().Has("X-Amz-Signature") {
			return
		}
		req.Body = io.NopCloser(bytes.NewReader(body))
		if err := VerifySigV4(req, awsSecret); err != nil {
			t.Fatalf("signed again, but not for the real secret: %v\n%q", err, raw)
		}
		req.Body = io.NopCloser(bytes.NewReader(body))
		if VerifySigV4(req, awsStandInSecret) == nil {
			t.Fatalf("still signed with the stand-in:\n%q", raw)
		}
	})
}
