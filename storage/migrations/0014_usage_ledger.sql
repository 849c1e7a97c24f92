-- 0014: the usage ledger's index (ARCHITECTURE.md, The usage ledger). Each
-- usage.reported entry gets a row in usage_ledger (its tokens and cost, the
-- session's harness, and when the usage happened: the payload's "at" when
-- a transcript says, else when the entry was recorded), and its sums are
-- added to the row of its UTC day, session and model in usage_daily, and
-- to the row of its day, harness and model in usage_days (what a query of
-- every session reads: a few rows a day, whatever the number of sessions). A
-- trigger maintains both in the transaction that inserts the entry,
-- whatever writes it (a live turn, an import, a restore), so session/usage
-- sums a few rows per day instead of scanning entries.
CREATE TABLE usage_ledger (
    entry_rowid        INTEGER PRIMARY KEY,
    session_id         TEXT    NOT NULL,
    harness            TEXT    NOT NULL,
    model              TEXT    NOT NULL,
    at                 INTEGER NOT NULL, -- unix nanoseconds
    input_tokens       INTEGER NOT NULL,
    output_tokens      INTEGER NOT NULL,
    cache_read_tokens  INTEGER NOT NULL,
    cache_write_tokens INTEGER NOT NULL,
    cost_usd           REAL,             -- NULL: no cost known
    estimated          INTEGER NOT NULL
);
CREATE INDEX usage_ledger_at ON usage_ledger (at);
CREATE INDEX usage_ledger_session ON usage_ledger (session_id, at);

CREATE TABLE usage_daily (
    day                INTEGER NOT NULL, -- days since 1970-01-01, UTC
    session_id         TEXT    NOT NULL,
    model              TEXT    NOT NULL,
    harness            TEXT    NOT NULL,
    reports            INTEGER NOT NULL,
    input_tokens       INTEGER NOT NULL,
    output_tokens      INTEGER NOT NULL,
    cache_read_tokens  INTEGER NOT NULL,
    cache_write_tokens INTEGER NOT NULL,
    cost_usd           REAL    NOT NULL, -- the costs known, reported and estimated
    estimated_usd      REAL    NOT NULL, -- the estimated part
    unpriced           INTEGER NOT NULL, -- reports with no cost known
    PRIMARY KEY (day, session_id, model)
) WITHOUT ROWID;
CREATE INDEX usage_daily_session ON usage_daily (session_id, day);

CREATE TABLE usage_days (
    day                INTEGER NOT NULL,
    harness            TEXT    NOT NULL,
    model              TEXT    NOT NULL,
    reports            INTEGER NOT NULL,
    input_tokens       INTEGER NOT NULL,
    output_tokens      INTEGER NOT NULL,
    cache_read_tokens  INTEGER NOT NULL,
    cache_write_tokens INTEGER NOT NULL,
    cost_usd           REAL    NOT NULL,
    estimated_usd      REAL    NOT NULL,
    unpriced           INTEGER NOT NULL,
    PRIMARY KEY (day, harness, model)
) WITHOUT ROWID;

CREATE TRIGGER usage_ledger_add AFTER INSERT ON entries
WHEN new.kind = 'usage.reported' AND json_valid(new.payload)
BEGIN
    INSERT OR IGNORE INTO usage_ledger (entry_rowid, session_id, harness, model, at, input_tokens, output_tokens,
        cache_read_tokens, cache_write_tokens, cost_usd, estimated)
    VALUES (new.rowid, new.session_id,
        coalesce((SELECT harness FROM sessions WHERE id = new.session_id), ''),
        coalesce(CAST(json_extract(new.payload, '$.model') AS TEXT), ''),
        coalesce(CAST(unixepoch(json_extract(new.payload, '$.at'), 'subsec') * 1000000000 AS INTEGER), new.created_at),
        max(coalesce(CAST(json_extract(new.payload, '$.inputTokens') AS INTEGER), 0), 0),
        max(coalesce(CAST(json_extract(new.payload, '$.outputTokens') AS INTEGER), 0), 0),
        max(coalesce(CAST(json_extract(new.payload, '$.cacheReadTokens') AS INTEGER), 0), 0),
        max(coalesce(CAST(json_extract(new.payload, '$.cacheWriteTokens') AS INTEGER), 0), 0),
        CAST(json_extract(new.payload, '$.costUsd') AS REAL),
        coalesce(json_extract(new.payload, '$.costEstimated'), 0) = 1);
    INSERT INTO usage_daily (day, session_id, model, harness, reports, input_tokens, output_tokens,
        cache_read_tokens, cache_write_tokens, cost_usd, estimated_usd, unpriced)
    SELECT at / 86400000000000, session_id, model, harness, 1, input_tokens, output_tokens,
        cache_read_tokens, cache_write_tokens, coalesce(cost_usd, 0), CASE WHEN estimated THEN coalesce(cost_usd, 0) ELSE 0 END,
        cost_usd IS NULL
    FROM usage_ledger WHERE entry_rowid = new.rowid
    ON CONFLICT (day, session_id, model) DO UPDATE SET
        reports = reports + 1,
        input_tokens = input_tokens + excluded.input_tokens,
        output_tokens = output_tokens + excluded.output_tokens,
        cache_read_tokens = cache_read_tokens + excluded.cache_read_tokens,
        cache_write_tokens = cache_write_tokens + excluded.cache_write_tokens,
        cost_usd = cost_usd + excluded.cost_usd,
        estimated_usd = estimated_usd + excluded.estimated_usd,
        unpriced = unpriced + excluded.unpriced;
    INSERT INTO usage_days (day, harness, model, reports, input_tokens, output_tokens,
        cache_read_tokens, cache_write_tokens, cost_usd, estimated_usd, unpriced)
    SELECT at / 86400000000000, harness, model, 1, input_tokens, output_tokens,
        cache_read_tokens, cache_write_tokens, coalesce(cost_usd, 0), CASE WHEN estimated THEN coalesce(cost_usd, 0) ELSE 0 END,
        cost_usd IS NULL
    FROM usage_ledger WHERE entry_rowid = new.rowid
    ON CONFLICT (day, harness, model) DO UPDATE SET
        reports = reports + 1,
        input_tokens = input_tokens + excluded.input_tokens,
        output_tokens = output_tokens + excluded.output_tokens,
        cache_read_tokens = cache_read_tokens + excluded.cache_read_tokens,
        cache_write_tokens = cache_write_tokens + excluded.cache_write_tokens,
        cost_usd = cost_usd + excluded.cost_usd,
        estimated_usd = estimated_usd + excluded.estimated_usd,
        unpriced = unpriced + excluded.unpriced;
END;
