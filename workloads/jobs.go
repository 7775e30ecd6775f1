package workloads

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/lockharness/lockharness/history"
	"github.com/lockharness/lockharness/resource"
)

// Jobs processes jobs from a PostgreSQL table, one lock key per queue: a
// holder reads the next job waiting behind its key and records it done.
// What it measures is duplicate work: a job done twice because two
// clients held its key at once.
var Jobs = Workload{
	Name:       "jobs",
	Summary:    "process the next job behind one of --keys lock keys; reports the duplicate-work rate",
	Resources:  []string{resource.Postgres},
	Keys:       20,
	Idempotent: true,
	Audits:     []string{history.AuditDuplicates},
	Tables:     &Tables{Table: "done", Prepare: prepareJobs, Read: nextJob, Write: doJob, Final: finalJobs},
}

// JobsPerKey is how many jobs wait behind each lock key: more than a run
// processes, so no key runs dry.
const JobsPerKey = 1000

const jobsSchema = `
CREATE TABLE jobs (id bigint PRIMARY KEY, lock_key text NOT NULL);
CREATE INDEX jobs_by_key ON jobs (lock_key, id);
CREATE TABLE done (seq bigserial PRIMARY KEY, job bigint NOT NULL REFERENCES jobs, client int, token text,
	at timestamptz NOT NULL DEFAULT clock_timestamp());
CREATE INDEX done_by_job ON done (job);
`

func prepareJobs(ctx context.Context, conn *pgx.Conn, s Setup) error {
	if _, err := conn.Exec(ctx, jobsSchema); err != nil {
		return fmt.Errorf("creating the jobs tables: %w", err)
	}
	if s.Idempotent {
		if _, err := conn.Exec(ctx, "CREATE UNIQUE INDEX done_job ON done (job)"); err != nil {
			return err
		}
	}
	// Job k*JobsPerKey+i+1 waits behind key k.
	_, err := conn.Exec(ctx, `INSERT INTO jobs (id, lock_key)
		SELECT (k.n - 1) * $2 + g, k.key FROM unnest($1::text[]) WITH ORDINALITY AS k(key, n), generate_series(1, $2) AS g`,
		s.Keys, JobsPerKey)
	return err
}

// nextJob is the first job behind key not yet done (0 when none is left).
func nextJob(ctx context.Context, conn *pgx.Conn, key string) (int64, error) {
	var job int64
	err := conn.QueryRow(ctx, `SELECT coalesce(min(j.id), 0) FROM jobs j
		WHERE j.lock_key = $1 AND NOT EXISTS (SELECT 1 FROM done d WHERE d.job = j.id)`, key).Scan(&job)
	return job, err
}

// doJob records the job the holder read as done; it stores the rows it
// inserted, 0 when an idempotent insert found the job done.
func doJob(ctx context.Context, tx pgx.Tx, cfg resource.WriterConfig, a resource.Write) (resource.Outcome, error) {
	insert := "INSERT INTO done (job, client, token) VALUES ($1, $2, $3)"
	if cfg.Idempotent {
		insert += " ON CONFLICT (job) DO NOTHING"
	}
	tag, err := tx.Exec(ctx, insert, a.Job, a.Client, a.Token)
	return resource.Outcome{Stored: tag.RowsAffected()}, err
}

func finalJobs(ctx context.Context, conn *pgx.Conn, s Setup, t *history.Tables) error {
	t.Idempotent = s.Idempotent
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM jobs").Scan(&t.Jobs); err != nil {
		return err
	}
	rows, _ := conn.Query(ctx, `SELECT d.seq, d.job, j.lock_key, coalesce(d.client, -1), coalesce(d.token, ''), d.at
		FROM done d JOIN jobs j ON j.id = d.job ORDER BY d.seq`)
	var err error
	t.Done, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (history.DoneRow, error) {
		var x history.DoneRow
		var at time.Time
		err := r.Scan(&x.Seq, &x.Job, &x.Key, &x.Client, &x.Token, &at)
		x.At = at.UTC().Format(time.RFC3339Nano)
		return x, err
	})
	return err
}
