package backend

import (
	"context"
	"errors"
	"net"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/openworker/openworker/core/apitype"

	"github.com/openworker/openworker/core/approvals"
	"github.com/openworker/openworker/core/hosts"
	"github.com/openworker/openworker/core/webfetch"
)

// FetchRequest is the coworker's web fetch for a session: it runs here, outside the
// sandbox, under the session's allow list.
type FetchRequest struct {
	Session string
	URL     string
	Reason  string // shown on a card if the site is not on the list
	// Wait bounds how long a card waits for an answer (default 60 s); NoWait does not wait.
	Wait   time.Duration
	NoWait bool
	// OnCard, if set, is told each card the fetch asks, as soon as it is up.
	OnCard func(CardInfo)
}

// FetchResult is apitype's, the local API's wire type.
type FetchResult = apitype.FetchResult

// fetchOptions lets tests point the fetch at loopback origins.
var fetchOptions = func(o *webfetch.Options) {}

// maxFetchAsks bounds the cards one fetch may ask, one per hop that is not allowed.
const maxFetchAsks = 3

// Fetch fetches a URL for the coworker. A site that is not on the session's list is asked
// for on a fetch card (Once, This session, Always allow, Deny); Once lets this one fetch
// through and no other; with full access the fetch is refused instead. Every redirect hop is
// decided again, and loopback, private and link-local addresses are refused as the proxy
// refuses them.
func (b *Backend) Fetch(ctx context.Context, r FetchRequest) (FetchResult, error) {
	st, err := b.sites(r.Session)
	if err != nil {
		return FetchResult{}, err
	}
	var mu sync.Mutex
	var once []hosts.Entry // granted for this fetch only
	o := webfetch.Options{
		Decide: func(host string, port int) hosts.Decision {
			settings := b.store.InForce().Settings
			st.mu.Lock()
			allow := st.allowList(settings)
			denied := slices.Clone(st.denied)
			st.mu.Unlock()
			mu.Lock()
			allow = append(allow, once...)
			mu.Unlock()
			return hosts.Decide(hosts.NewList(allow), hosts.NewList(denied), host, port)
		},
		HowToAllow: st.ways,
	}
	fetchOptions(&o)
	for asks := 0; ; asks++ {
		page, err := webfetch.Fetch(ctx, r.URL, o)
		var be *webfetch.BlockedError
		if !errors.As(err, &be) || asks == maxFetchAsks {
			if err != nil {
				return FetchResult{}, err
			}
			return FetchResult{Page: page}, nil
		}
		site := net.JoinHostPort(be.Decision.Host, strconv.Itoa(be.Decision.Port))
		entry, _ := hosts.Parse(site)
		// A card answered Once is taken by exactly one fetch: this one if it asked, or the
		// next one when the answer came after its asker stopped waiting (an MCP client
		// that asked its person in a form, then called again).
		takeOnce := func() bool {
			st.mu.Lock()
			defer st.mu.Unlock()
			i := slices.Index(st.once, entry)
			if i < 0 {
				return false
			}
			st.once = slices.Delete(st.once, i, i+1)
			mu.Lock()
			once = append(once, entry)
			mu.Unlock()
			return true
		}
		if takeOnce() {
			continue
		}
		ans, err := b.RequestSite(ctx, SiteRequest{Session: r.Session, Site: site, Reason: r.Reason, Kind: approvals.Fetch, Wait: r.Wait, NoWait: r.NoWait, OnCard: r.OnCard})
		if err != nil {
			return FetchResult{}, err
		}
		switch ans.Outcome {
		case approvals.AllowedOnce:
			takeOnce()
		case approvals.AllowedSession, approvals.AllowedAlways, approvals.Allowed:
		default:
			return FetchResult{Outcome: ans.Outcome, Site: ans.Site, Card: ans.Card, Message: ans.Message}, nil
		}
	}
}
