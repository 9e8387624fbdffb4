package service

import (
	"io"
	"log/slog"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	bolt "go.etcd.io/bbolt"

	"github.com/convsvc/convsvc/convert"
	"github.com/convsvc/convsvc/httpapi"
	"github.com/convsvc/convsvc/store"
	"github.com/convsvc/convsvc/worker"
)

// metrics are the service's Prometheus collectors, in a registry of its own (so several
// services in one process, as in tests, never collide). docs/metrics.md lists them.
type metrics struct {
	reg         *prometheus.Registry
	http        *httpapi.Metrics
	conversions *prometheus.CounterVec
	convSeconds *prometheus.HistogramVec
	blobBytes   *prometheus.CounterVec
	// storageErrors counts faults of the blob store's disk, by operation (output).
	storageErrors *prometheus.CounterVec
	// strayOverrun observes how long each abandoned conversion ran past its abandon.
	strayOverrun prometheus.Histogram
	// outputChecks counts the re-read checks of outputs, by output format and result.
	outputChecks *prometheus.CounterVec
}

// Outcomes of a conversion, the values of the outcome label.
const (
	outcomeSucceeded = "succeeded"
	outcomeCancelled = "cancelled" // the job was cancelled while converting; the result is dropped
	outcomeExpired   = "expired"   // the job expired while converting; the result is dropped
	outcomeError     = "error"     // the outcome could not be recorded (database error)
)

func newMetrics(st JobStore, workers int, running, strays func() int) *metrics {
	reg := prometheus.NewRegistry()
	m := &metrics{
		reg:  reg,
		http: httpapi.NewMetrics(reg),
		conversions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "convsvc_conversions_total",
			Help: "Conversions that ended, by input format, target format and outcome (succeeded, conversion_failed, worker_shutdown, storage_error, worker_crashed, cancelled, expired, error).",
		}, []string{"input", "target", "outcome"}),
		convSeconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "convsvc_conversion_duration_seconds",
			Help:    "Time from a worker's claim of a job to its outcome being recorded, by input, target and outcome.",
			Buckets: []float64{.01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600},
		}, []string{"input", "target", "outcome"}),
		blobBytes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "convsvc_storage_bytes_total",
			Help: "Bytes moved by object storage: direction upload (PUT bodies read) or download (GET bodies sent).",
		}, []string{"direction"}),
	}
	m.storageErrors = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "convsvc_storage_errors_total",
		Help: "Faults of the blob store's disk (full, read-only) while storing a conversion's output, by operation; the job went back to the queue.",
	}, []string{"op"})
	m.strayOverrun = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "convsvc_conversions_abandoned_overrun_seconds",
		Help:    "How long each abandoned conversion (cancelled, timed out or stopped by shutdown) kept running after it was given up, until its converter returned; its worker stayed busy meanwhile.",
		Buckets: []float64{.001, .005, .01, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 300},
	})
	m.outputChecks = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "convsvc_output_checks_total",
		Help: "Outputs of ended conversions by target format and the result of their re-read check: verified (passed), invalid (failed: the job failed with error_reason output_invalid) or unchecked (the format has no check).",
	}, []string{"target", "result"})
	m.storageErrors.WithLabelValues("output")
	m.blobBytes.WithLabelValues("upload")
	m.blobBytes.WithLabelValues("download")
	reg.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		collectors.NewBuildInfoCollector(),
		m.conversions, m.convSeconds, m.blobBytes, m.storageErrors, m.strayOverrun, m.outputChecks,
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "convsvc_conversions_abandoned_running",
			Help: "Abandoned conversions (cancelled, timed out or stopped by shutdown) whose converter has not returned yet; each holds its worker and its memory share.",
		}, func() float64 { return float64(strays()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "convsvc_workers",
			Help: "Conversion workers configured (--workers).",
		}, func() float64 { return float64(workers) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "convsvc_workers_busy",
			Help: "Conversions running now.",
		}, func() float64 { return float64(running()) }),
		&storeCollector{store: st},
	)
	return m
}

// handler serves the registry in the Prometheus text (or OpenMetrics) format; an error while
// gathering is logged and the metrics that could be gathered are still served.
func (m *metrics) handler(log *slog.Logger) http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{
		ErrorLog:          slogPrinter{log},
		ErrorHandling:     promhttp.ContinueOnError,
		EnableOpenMetrics: true,
	})
}

// slogPrinter adapts a slog.Logger to promhttp's Println logger.
type slogPrinter struct{ log *slog.Logger }

// Println logs a promhttp error.
func (p slogPrinter) Println(v ...any) {
	args := make([]any, 0, len(v))
	args = append(args, v...)
	p.log.Error("metrics", "error", args)
}

// countRefused exports a listener's refused and open connections (nothing when it has no cap).
func (m *metrics) countRefused(listener string, l *connLimiter) {
	if l == nil {
		return
	}
	m.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name:        "convsvc_connections_open",
		Help:        "Connections the listener holds open now (--max-connections caps them).",
		ConstLabels: prometheus.Labels{"listener": listener},
	}, func() float64 { return float64(l.Open()) }))
	m.reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{
		Name:        "convsvc_connections_refused_total",
		Help:        "Connections answered 503 and closed because the listener or the client's address was at its cap (--max-connections, --max-connections-per-address).",
		ConstLabels: prometheus.Labels{"listener": listener},
	}, func() float64 { return float64(l.Refused()) }))
}

// countLongPolls exports how many long polls the API holds now.
func (m *metrics) countLongPolls(held func() int) {
	m.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "convsvc_long_polls",
		Help: "GET /v1/jobs/{id}?wait= requests held open now, waiting for the job to change (each key holds at most 100).",
	}, func() float64 { return float64(held()) }))
}

// countStreams exports how many event streams the API holds open now.
func (m *metrics) countStreams(held func() int) {
	m.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "convsvc_event_streams",
		Help: "GET /v1/events and /v1/jobs/{id}/events streams open now (each key holds at most 100).",
	}, func() float64 { return float64(held()) }))
}

// strayReturned records an abandoned conversion that returned d after it was given up.
func (m *metrics) strayReturned(d time.Duration) { m.strayOverrun.Observe(d.Seconds()) }

// conversion records one ended conversion.
func (m *metrics) conversion(input, target, outcome string, d time.Duration) {
	m.conversions.WithLabelValues(input, target, outcome).Inc()
	m.convSeconds.WithLabelValues(input, target, outcome).Observe(d.Seconds())
}

// outputCheck records the result of one output's re-read check: "verified", "invalid" or
// "unchecked".
func (m *metrics) outputCheck(target, result string) {
	m.outputChecks.WithLabelValues(target, result).Inc()
}

// storeCollector reads jobs by state, the queue, the ledger and bbolt's counters at scrape
// time: one read transaction (store.Counts) plus db.Stats, about 1 ms with 10,000 jobs stored.
type storeCollector struct{ store JobStore }

// boltStats is a store with bbolt's counters (the embedded store); other stores report the
// job, queue and ledger figures only.
type boltStats interface {
	WriteStats() store.WriteStats
	DBStats() bolt.Stats
}

var _ boltStats = (*store.Store)(nil)

var (
	descJobs        = prometheus.NewDesc("convsvc_jobs", "Jobs stored, by status (expired jobs the sweeper has not deleted yet included).", []string{"status"}, nil)
	descQueueDepth  = prometheus.NewDesc("convsvc_queue_depth", "Jobs queued for a worker.", nil, nil)
	descQueueAge    = prometheus.NewDesc("convsvc_queue_oldest_age_seconds", "Seconds since the job at the head of the queue was started (0 when the queue is empty).", nil, nil)
	descAccounts    = prometheus.NewDesc("convsvc_accounts", "Accounts.", nil, nil)
	descReserved    = prometheus.NewDesc("convsvc_ledger_reserved_cents", "Cents reserved by unfinished jobs, all accounts.", nil, nil)
	descSpentMonth  = prometheus.NewDesc("convsvc_ledger_spent_month_cents", "Cents spent in the current calendar month (UTC), all accounts.", nil, nil)
	descSpentTotal  = prometheus.NewDesc("convsvc_ledger_spent_cents_total", "Cents spent over every month on record, all accounts.", nil, nil)
	descDBSize      = prometheus.NewDesc("convsvc_db_size_bytes", "Size of the database (what a backup copies).", nil, nil)
	descScrapeError = prometheus.NewDesc("convsvc_db_scrape_error", "1 when the last scrape could not read the database, else 0.", nil, nil)

	descWaiters       = prometheus.NewDesc("convsvc_long_polls_waiting", "GET /v1/jobs/{id}?wait requests parked until their job changes.", nil, nil)
	descStoreWrites   = prometheus.NewDesc("convsvc_store_writes_total", "Store writes (every job, account and key change is one).", nil, nil)
	descStoreWriteTx  = prometheus.NewDesc("convsvc_store_write_transactions_total", "bbolt write transactions carrying them; writes per transaction is the group commit's size.", nil, nil)
	descBoltTx        = prometheus.NewDesc("convsvc_bolt_read_tx_total", "bbolt read transactions started.", nil, nil)
	descBoltOpenTx    = prometheus.NewDesc("convsvc_bolt_open_read_tx", "bbolt read transactions open now.", nil, nil)
	descBoltFree      = prometheus.NewDesc("convsvc_bolt_freelist_free_pages", "Free pages on bbolt's freelist.", nil, nil)
	descBoltPending   = prometheus.NewDesc("convsvc_bolt_freelist_pending_pages", "Pages freed by writes that open read transactions may still see.", nil, nil)
	descBoltFreeAlloc = prometheus.NewDesc("convsvc_bolt_freelist_free_bytes", "Bytes in free pages.", nil, nil)
	descBoltFreeInuse = prometheus.NewDesc("convsvc_bolt_freelist_inuse_bytes", "Bytes the freelist itself takes.", nil, nil)
	descBoltPages     = prometheus.NewDesc("convsvc_bolt_page_allocations_total", "Pages allocated by write transactions.", nil, nil)
	descBoltPageBytes = prometheus.NewDesc("convsvc_bolt_page_alloc_bytes_total", "Bytes allocated for pages by write transactions.", nil, nil)
	descBoltWrites    = prometheus.NewDesc("convsvc_bolt_writes_total", "Page writes to the file.", nil, nil)
	descBoltWriteSecs = prometheus.NewDesc("convsvc_bolt_write_seconds_total", "Time spent writing pages to the file.", nil, nil)
	descBoltSplits    = prometheus.NewDesc("convsvc_bolt_node_splits_total", "B+tree node splits.", nil, nil)
	descBoltSpills    = prometheus.NewDesc("convsvc_bolt_node_spills_total", "B+tree node spills.", nil, nil)
	descBoltRebalance = prometheus.NewDesc("convsvc_bolt_node_rebalances_total", "B+tree node rebalances.", nil, nil)

	// jobStatuses are the statuses convsvc_jobs always reports, 0 included ("uploaded" is never used).
	jobStatuses = []string{store.StatusCreated, store.StatusQueued, store.StatusRunning, store.StatusSucceeded, store.StatusFailed, store.StatusCancelled}
)

// Describe sends every descriptor the collector may emit.
func (c *storeCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descJobs, descQueueDepth, descQueueAge, descAccounts, descReserved,
		descSpentMonth, descSpentTotal, descDBSize, descScrapeError, descBoltTx, descBoltOpenTx, descBoltFree,
		descBoltPending, descBoltFreeAlloc, descBoltFreeInuse, descBoltPages, descBoltPageBytes, descBoltWrites,
		descBoltWriteSecs, descBoltSplits, descBoltSpills, descBoltRebalance, descStoreWrites, descStoreWriteTx, descWaiters} {
		ch <- d
	}
}

// Collect reads the database and bbolt's counters.
func (c *storeCollector) Collect(ch chan<- prometheus.Metric) {
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	counter := func(d *prometheus.Desc, v float64) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, v)
	}
	counts, err := c.store.Counts()
	if err != nil {
		gauge(descScrapeError, 1)
	} else {
		gauge(descScrapeError, 0)
		for _, s := range jobStatuses {
			gauge(descJobs, float64(counts.Jobs[s]), s)
		}
		gauge(descQueueDepth, float64(counts.QueueDepth))
		age := 0.0
		if !counts.OldestQueued.IsZero() {
			age = max(0, time.Since(counts.OldestQueued).Seconds())
		}
		gauge(descQueueAge, age)
		gauge(descAccounts, float64(counts.Accounts))
		gauge(descReserved, float64(counts.ReservedCents))
		gauge(descSpentMonth, float64(counts.SpentCentsMonth))
		counter(descSpentTotal, float64(counts.SpentCentsAllTime))
		gauge(descDBSize, float64(counts.DBBytes))
	}
	gauge(descWaiters, float64(c.store.Waiters()))
	bs, ok := c.store.(boltStats)
	if !ok {
		return
	}
	ws := bs.WriteStats()
	counter(descStoreWrites, float64(ws.Writes))
	counter(descStoreWriteTx, float64(ws.Transactions))
	st := bs.DBStats()
	counter(descBoltTx, float64(st.TxN))
	gauge(descBoltOpenTx, float64(st.OpenTxN))
	gauge(descBoltFree, float64(st.FreePageN))
	gauge(descBoltPending, float64(st.PendingPageN))
	gauge(descBoltFreeAlloc, float64(st.FreeAlloc))
	gauge(descBoltFreeInuse, float64(st.FreelistInuse))
	tx := &st.TxStats
	counter(descBoltPages, float64(tx.GetPageCount()))
	counter(descBoltPageBytes, float64(tx.GetPageAlloc()))
	counter(descBoltWrites, float64(tx.GetWrite()))
	counter(descBoltWriteSecs, tx.GetWriteTime().Seconds())
	counter(descBoltSplits, float64(tx.GetSplit()))
	counter(descBoltSpills, float64(tx.GetSpill()))
	counter(descBoltRebalance, float64(tx.GetRebalance()))
}

// countBytes counts object storage's traffic by method: the bytes of PUT bodies read (upload)
// and of GET bodies sent (download). HEAD sends no body.
func countBytes(h http.Handler, up, down prometheus.Counter) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.Method {
		case http.MethodPut:
			r.Body = &countingBody{ReadCloser: r.Body, c: up}
		case http.MethodGet:
			w = &countingWriter{ResponseWriter: w, c: down}
		}
		h.ServeHTTP(w, r)
	})
}

type countingBody struct {
	io.ReadCloser
	c prometheus.Counter
}

// Read counts the bytes read.
func (b *countingBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if n > 0 {
		b.c.Add(float64(n))
	}
	return n, err
}

type countingWriter struct {
	http.ResponseWriter
	c prometheus.Counter
}

// Write counts the bytes written.
func (w *countingWriter) Write(p []byte) (int, error) {
	n, err := w.ResponseWriter.Write(p)
	if n > 0 {
		w.c.Add(float64(n))
	}
	return n, err
}

// ReadFrom keeps sendfile working for downloads.
func (w *countingWriter) ReadFrom(src io.Reader) (int64, error) {
	var n int64
	var err error
	if rf, ok := w.ResponseWriter.(io.ReaderFrom); ok {
		n, err = rf.ReadFrom(src)
	} else {
		n, err = io.Copy(struct{ io.Writer }{w.ResponseWriter}, src)
	}
	if n > 0 {
		w.c.Add(float64(n))
	}
	return n, err
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (w *countingWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// countMemoryBudget exports the conversion memory budget (--max-conversion-memory) that every
// conversion reserves from, in the server's process or in a worker process alike.
func (m *metrics) countMemoryBudget(c *convert.Catalog) {
	m.reg.MustRegister(
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "convsvc_conversion_memory_budget_bytes",
			Help: "The conversion memory budget (--max-conversion-memory) that running conversions share, across every worker process.",
		}, func() float64 { return float64(c.Limits().MaxConversionMemory) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "convsvc_conversion_memory_reserved_bytes",
			Help: "Bytes of the conversion memory budget that running conversions hold now (it may pass the budget for a moment while embedded images are decoded).",
		}, func() float64 { held, _ := c.MemoryUse(); return float64(held) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "convsvc_conversion_memory_waiting",
			Help: "Conversions waiting for their share of the conversion memory budget.",
		}, func() float64 { _, waiting := c.MemoryUse(); return float64(waiting) }),
	)
}

// countWorkers exports the worker processes' counters (nothing with --isolation none).
func (m *metrics) countWorkers(w *worker.Pool) {
	if w == nil {
		return
	}
	m.reg.MustRegister(
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "convsvc_worker_starts_total",
			Help: "Conversion worker processes started (--isolation process).",
		}, func() float64 { return float64(w.Stats().Starts) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "convsvc_worker_start_seconds_total",
			Help: "Time worker processes took from exec to ready, summed; divided by convsvc_worker_starts_total, the mean start time.",
		}, func() float64 { return w.Stats().StartSeconds }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "convsvc_worker_crashes_total",
			Help: "Worker processes that died on their own (a fatal runtime error, os.Exit, a signal from outside); a job running in one goes back to the queue until --max-attempts.",
		}, func() float64 { return float64(w.Stats().Crashes) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "convsvc_worker_processes",
			Help: "Worker processes alive now.",
		}, func() float64 { return float64(w.Stats().Live) }),
	)
	for _, cause := range []string{worker.CauseMemory, worker.CauseCancel, worker.CauseTimeout, worker.CauseShutdown, worker.CauseRecycle} {
		m.reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name:        "convsvc_worker_kills_total",
			Help:        "Worker processes the server killed (SIGKILL), by cause: memory (past the memory cap), cancel (job cancelled or expired), timeout (--conversion-timeout), shutdown, recycle (after its job or memory-growth bound).",
			ConstLabels: prometheus.Labels{"cause": cause},
		}, func() float64 { return float64(w.Stats().Kills[cause]) }))
	}
}
