package client_test

import (
	"log"
	"net/http"
	"os"
	"sync"

	"github.com/convsvc/convsvc/client"
)

// A receiver of convsvc's webhooks: verify the raw body, de-duplicate on the event id,
// answer 2xx quickly. docs/webhooks.md shows this function's body verbatim.
func ExampleReadWebhook() {
	secret := os.Getenv("CONVSVC_WEBHOOK_SECRET") // whsec_..., shown once when the endpoint was added
	var mu sync.Mutex
	seen := map[string]bool{} // use your database: deliveries are at least once

	http.HandleFunc("POST /convsvc-webhook", func(w http.ResponseWriter, r *http.Request) {
		// ReadWebhook reads the raw body, checks Convsvc-Signature (HMAC-SHA256, 5 min
		// tolerance) with client.VerifyWebhook, then decodes the event.
		ev, err := client.ReadWebhook(r, secret)
		if err != nil {
			http.Error(w, "bad signature", http.StatusBadRequest)
			return
		}
		mu.Lock()
		dup := seen[ev.ID]
		seen[ev.ID] = true
		mu.Unlock()
		if !dup {
			job := ev.Data.Job
			log.Printf("%s: job %s is %s", ev.Type, job.ID, job.Status)
		}
		w.WriteHeader(http.StatusNoContent) // any 2xx; anything else is retried
	})
}
