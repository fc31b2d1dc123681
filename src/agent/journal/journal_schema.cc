#include "journal/journal_schema.h"

#include <fmt/format.h>

namespace recur::agent {

namespace {

constexpr std::string_view kSchema = R"sql(
CREATE TABLE IF NOT EXISTS runs (
  id          INTEGER PRIMARY KEY,
  name        TEXT NOT NULL UNIQUE,
  episode     TEXT NOT NULL DEFAULT '',
  base_config TEXT NOT NULL DEFAULT '{}',
  state       TEXT NOT NULL DEFAULT 'running' CHECK (state IN ('running', 'done', 'failed')),
  outcome     TEXT NOT NULL DEFAULT '',
  created_at  REAL NOT NULL,
  ended_at    REAL
);
CREATE TABLE IF NOT EXISTS experiments (
  id          INTEGER PRIMARY KEY,
  run_id      INTEGER NOT NULL REFERENCES runs(id),
  step        INTEGER NOT NULL CHECK (step >= 0),
  state       TEXT NOT NULL CHECK (state IN ('planned', 'running', 'done')),
  attempts    INTEGER NOT NULL DEFAULT 0 CHECK (attempts >= 0),
  hypothesis  TEXT NOT NULL,
  probe       TEXT NOT NULL,
  tier        INTEGER NOT NULL CHECK (tier BETWEEN 0 AND 4),
  config_diff TEXT NOT NULL DEFAULT '{}',
  feedback    TEXT,
  verdict     TEXT CHECK (verdict IN ('confirmed', 'refuted', 'inconclusive', 'failed')),
  decision    TEXT CHECK (decision IN ('keep', 'revert', 'none')),
  cost_s      REAL NOT NULL DEFAULT 0,
  planned_at  REAL NOT NULL,
  started_at  REAL,
  ended_at    REAL,
  UNIQUE (run_id, step),
  CHECK ((state = 'done') = (feedback IS NOT NULL AND verdict IS NOT NULL AND decision IS NOT NULL
                             AND ended_at IS NOT NULL)),
  CHECK (state = 'planned' OR (attempts >= 1 AND started_at IS NOT NULL))
);
)sql";

}  // namespace

Status prepare_journal_db(SqliteDb& db, bool synchronous_full) {
  RECUR_ASSIGN_OR_RETURN(std::string mode, db.query_text("PRAGMA journal_mode=WAL", "set journal_mode=WAL"));
  if (mode != "wal")
    return unsupported("journal {}: set journal_mode=WAL: SQLite kept '{}' (WAL needs a local file system with shared "
                       "memory)",
                       db.path(), mode);
  RECUR_RETURN_IF_ERROR(db.exec(synchronous_full ? "PRAGMA synchronous=FULL" : "PRAGMA synchronous=NORMAL",
                                "set synchronous"));
  RECUR_RETURN_IF_ERROR(db.exec("PRAGMA foreign_keys=ON", "set foreign_keys"));
  RECUR_ASSIGN_OR_RETURN(std::string version, db.query_text("PRAGMA user_version", "read the schema version"));
  if (version == "0") {
    RECUR_ASSIGN_OR_RETURN(Transaction tx, Transaction::begin(db, "create the schema"));
    // Another process may have created it between our read and BEGIN IMMEDIATE.
    RECUR_ASSIGN_OR_RETURN(version, db.query_text("PRAGMA user_version", "read the schema version"));
    if (version == "0") {
      RECUR_RETURN_IF_ERROR(db.exec(kSchema, "create the schema"));
      RECUR_RETURN_IF_ERROR(db.exec(fmt::format("PRAGMA user_version={}", kJournalSchemaVersion), "set the schema version"));
    }
    RECUR_RETURN_IF_ERROR(tx.commit());
    RECUR_ASSIGN_OR_RETURN(version, db.query_text("PRAGMA user_version", "read the schema version"));
  }
  return check_journal_schema(db);
}

Status check_journal_schema(SqliteDb& db) {
  RECUR_ASSIGN_OR_RETURN(std::string version, db.query_text("PRAGMA user_version", "read the schema version"));
  if (version != fmt::format("{}", kJournalSchemaVersion))
    return unsupported("journal {}: schema version {}; this recur reads version {}", db.path(), version,
                       kJournalSchemaVersion);
  return ok_status();
}

}  // namespace recur::agent
