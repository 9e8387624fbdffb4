package pgstore_test

import (
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/convsvc/convsvc/pgstore"
	"github.com/convsvc/convsvc/store"
)

// TestAuthenticateWrite_ExactAndRevocable: AuthenticateWrite (the key and its write window in
// one statement) allows exactly the limit across three nodes, says when the window frees a
// slot, refuses an unknown key, and refuses a key revoked on another node at once without
// counting its write.
func TestAuthenticateWrite_ExactAndRevocable(t *testing.T) {
	ns := nodes(t, 3, pgstore.Options{})
	acct := account(t, ns[0], 1000)
	key, secret, err := ns[0].CreateKey(acct.ID)
	if err != nil {
		t.Fatal(err)
	}
	var allowed atomic.Int64
	var wg sync.WaitGroup
	for i := 0; i < 150; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got, ok, _, _, err := ns[i%3].AuthenticateWrite(secret, 120, time.Minute)
			if err != nil {
				t.Errorf("AuthenticateWrite: %v", err)
				return
			}
			if got.ID != key.ID || got.AccountID != acct.ID {
				t.Errorf("key %+v, want %s of %s", got, key.ID, acct.ID)
			}
			if ok {
				allowed.Add(1)
			}
		}()
	}
	wg.Wait()
	if allowed.Load() != 120 {
		t.Fatalf("%d of 150 writes allowed, want 120", allowed.Load())
	}
	_, ok, remaining, reset, err := ns[1].AuthenticateWrite(secret, 120, time.Minute)
	if err != nil || ok || remaining != 0 || reset <= 0 || reset > time.Minute {
		t.Fatalf("121st write: allowed %v, remaining %d, reset %v, %v; want refused with a reset within the window", ok, remaining, reset, err)
	}

	if _, _, _, _, err := ns[0].AuthenticateWrite(store.NewKeySecret(), 120, time.Minute); !errors.Is(err, store.ErrUnauthorized) {
		t.Fatalf("unknown key: %v, want ErrUnauthorized", err)
	}

	// A second key: revoked on node 0, refused on node 2 at once, and its window untouched.
	key2, secret2, err := ns[0].CreateKey(acct.ID)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok, remaining, _, err := ns[2].AuthenticateWrite(secret2, 120, time.Minute); err != nil || !ok || remaining != 119 {
		t.Fatalf("new key: allowed %v, remaining %d, %v", ok, remaining, err)
	}
	if _, err := ns[0].RevokeKey(key2.ID); err != nil {
		t.Fatal(err)
	}
	if _, _, _, _, err := ns[2].AuthenticateWrite(secret2, 120, time.Minute); !errors.Is(err, store.ErrUnauthorized) {
		t.Fatalf("revoked key on another node: %v, want ErrUnauthorized", err)
	}
	if _, remaining, _, err := ns[1].AllowWrite(key2.ID, 120, time.Minute); err != nil || remaining != 118 {
		t.Fatalf("the revoked key's window: remaining %d after one more write, %v; want 118 (the refused write counted nothing)", remaining, err)
	}
}
