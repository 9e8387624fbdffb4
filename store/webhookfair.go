package store

import (
	"net"
	"net/url"
	"slices"
	"strings"
	"time"
)

// WebhookClaim says which due deliveries ClaimWebhookDeliveries takes. Deliveries are shared
// fairly: round robin across the accounts with due deliveries (one each per round, starting
// after the account served last), at most PerAccount attempts of one account and PerDestination
// attempts to one destination in flight at once (counting every node's claims), and none to a
// destination that is paused (WebhookAttempt.PauseDestinationUntil): those are rescheduled to
// the pause's end instead of holding a slot.
type WebhookClaim struct {
	// Limit is the most deliveries one claim takes.
	Limit int
	// Hold is how long a claimed attempt is held; another claim skips it until then.
	Hold time.Duration
	// PerDestination caps the attempts in flight to one destination (WebhookDestination);
	// 0 is no cap.
	PerDestination int
	// PerAccount caps the attempts of one account in flight; 0 is no cap.
	PerAccount int
	// GiveUpAfter, when set, fails instead of rescheduling a delivery of a paused destination
	// that was created this long ago or longer (its retry period is over): a destination
	// down for days does not keep a backlog that only its probes would drain.
	GiveUpAfter time.Duration
}

// WebhookGaveUpPaused is the last_error of a delivery given up while its destination was
// paused (WebhookClaim.GiveUpAfter).
const WebhookGaveUpPaused = "given up: the destination was down until the retry period ended"

// webhookScanPerAccount is how many of an account's due deliveries one claim looks at: past a
// destination at its cap it looks further, but never further than this.
const webhookScanPerAccount = 64

// WebhookDestination is what the per-destination cap and pauses count by: the URL's host,
// lowercased, and its port (the scheme's default when the URL names none), "host:port". A URL
// that does not parse is its own destination.
func WebhookDestination(rawURL string) string {
	u, err := url.Parse(rawURL)
	if err != nil || u.Host == "" {
		return rawURL
	}
	port := u.Port()
	if port == "" {
		port = "80"
		if strings.EqualFold(u.Scheme, "https") {
			port = "443"
		}
	}
	return net.JoinHostPort(strings.ToLower(u.Hostname()), port)
}

// WebhookCandidate is a due delivery a claim may take.
type WebhookCandidate struct {
	ID, AccountID, Destination string
	// Due is when the delivery is due (its key in a time-ordered index).
	Due time.Time
	// PausedUntil is its destination's pause end, zero when the destination is not paused.
	PausedUntil time.Time
}

// WebhookInflight counts the attempts in flight (claimed and not lapsed).
type WebhookInflight struct {
	Accounts, Destinations map[string]int
}

// PickWebhookDeliveries chooses what a claim takes from cands (each account's due deliveries,
// oldest first) given the attempts in flight: round robin across accounts, starting with the
// first account after `after` in id order, one delivery per account per round, skipping a
// destination or an account at its cap. It returns the picks in that order, the candidates
// whose destination is paused (to be rescheduled), and the account served last.
func PickWebhookDeliveries(cands []WebhookCandidate, inflight WebhookInflight, c WebhookClaim, after string) (pick, paused []WebhookCandidate, last string) {
	byAccount := map[string][]WebhookCandidate{}
	var accounts []string
	for _, cand := range cands {
		if _, ok := byAccount[cand.AccountID]; !ok {
			accounts = append(accounts, cand.AccountID)
		}
		byAccount[cand.AccountID] = append(byAccount[cand.AccountID], cand)
	}
	slices.Sort(accounts)
	start, _ := slices.BinarySearch(accounts, after)
	if start < len(accounts) && accounts[start] == after {
		start++
	}
	accounts = append(accounts[start:], accounts[:start]...)
	dest := map[string]int{}
	for k, v := range inflight.Destinations {
		dest[k] = v
	}
	acct := map[string]int{}
	for k, v := range inflight.Accounts {
		acct[k] = v
	}
	next := map[string]int{}
	for len(pick) < c.Limit {
		progressed := false
		for _, a := range accounts {
			if len(pick) == c.Limit {
				break
			}
			if c.PerAccount > 0 && acct[a] >= c.PerAccount {
				continue
			}
			list := byAccount[a]
			for next[a] < len(list) {
				cand := list[next[a]]
				next[a]++
				if !cand.PausedUntil.IsZero() {
					paused = append(paused, cand)
					continue
				}
				if c.PerDestination > 0 && dest[cand.Destination] >= c.PerDestination {
					continue // stays due; taken once an attempt to it ends
				}
				pick = append(pick, cand)
				dest[cand.Destination]++
				acct[a]++
				last, progressed = a, true
				break
			}
		}
		if !progressed {
			break
		}
	}
	return pick, paused, last
}

// webhookDestinationState is a destination's record while it is failing (bbolt's
// webhook_destinations bucket; PostgreSQL's webhook_destinations table).
type webhookDestinationState struct {
	// Failures counts the attempts in a row that found it down.
	Failures int `json:"failures"`
	// PausedUntil is when it takes attempts again.
	PausedUntil time.Time `json:"paused_until"`
}
